"""Image tarballs: their structure without Docker, then real Docker runs.

The `docker` tests use a real daemon (tests/docker_env.py starts one when it
can, else they skip saying why) and the static hello binaries zig builds.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

from docker_env import arm64_emulation, docker, docker_daemon, docker_held, holding, skopeo  # noqa: F401 (fixtures)
from micatool.link import image
from micatool.link.image import ImageError, load_image, write_image
from static_hello import HELLO_LINE, hello_binaries  # noqa: F401 (fixtures)

REPO = pathlib.Path(__file__).resolve().parents[1]
TAG = f"mica-test-hello:{os.getpid()}"
EPOCH = 1700000000
NOBODY = HELLO_LINE + "65534\n"


def read_binaries(paths) -> dict[str, bytes]:
    return {platform: path.read_bytes() for platform, path in paths.items()}


@pytest.fixture(scope="module")
def tarball(hello_binaries, tmp_path_factory):
    """(path, ImageInfo) of the two-platform hello image."""
    out = tmp_path_factory.mktemp("image") / "hello.tar"
    info = write_image(read_binaries(hello_binaries), TAG, out, epoch=EPOCH)
    return out, info


def members(path) -> dict[str, bytes | None]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() if m.isfile() else None
                for m in tar.getmembers()}


def blob(files, digest) -> bytes:
    return files[image.blob_path(digest)]


# ---------------------------------------------------------------- without Docker


def test_same_inputs_give_same_bytes(hello_binaries, tmp_path):
    binaries = read_binaries(hello_binaries)
    first = write_image(binaries, TAG, tmp_path / "a.tar", epoch=EPOCH)
    second = write_image(dict(reversed(binaries.items())), TAG, tmp_path / "b.tar",
                         epoch=EPOCH)
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    assert first.index_digest == second.index_digest
    assert first.platforms == second.platforms


def test_epoch_comes_from_source_date_epoch(hello_binaries, tmp_path, monkeypatch):
    binaries = read_binaries(hello_binaries)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    from_env = write_image(binaries, TAG, tmp_path / "env.tar")
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    zero = write_image(binaries, TAG, tmp_path / "zero.tar")
    given = write_image(binaries, TAG, tmp_path / "given.tar", epoch=EPOCH)
    assert from_env.index_digest == given.index_digest != zero.index_digest


def test_every_blob_matches_its_digest(tarball):
    path, info = tarball
    files = members(path)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, data in files.items():
        if name.startswith("blobs/sha256/") and data is not None:
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    (top,) = json.loads(files["index.json"])["manifests"]
    assert top["annotations"][image.REF_NAME] == TAG
    assert top["digest"] == info.index_digest
    assert len(blob(files, top["digest"])) == top["size"]


def test_index_lists_one_manifest_per_platform(tarball):
    path, info = tarball
    files = members(path)
    index = json.loads(blob(files, info.index_digest))
    platforms = {(m["platform"]["os"], m["platform"]["architecture"],
                  m["platform"].get("variant")): m["digest"] for m in index["manifests"]}
    assert platforms == {
        ("linux", "amd64", None): info.platforms["linux/amd64"].manifest_digest,
        ("linux", "arm64", "v8"): info.platforms["linux/arm64"].manifest_digest,
    }


def test_config_runs_the_binary_as_nobody_without_shell(tarball):
    path, info = tarball
    files = members(path)
    for name, arch, variant in [("linux/amd64", "amd64", None), ("linux/arm64", "arm64", "v8")]:
        plat = info.platforms[name]
        manifest = json.loads(blob(files, plat.manifest_digest))
        assert manifest["config"]["digest"] == plat.config_digest
        config = json.loads(blob(files, plat.config_digest))
        assert config["config"] == {"Entrypoint": ["/app"], "User": "65534:65534", "Env": [],
                                    "Labels": {image.CREATED: "2023-11-14T22:13:20Z"}}
        assert (config["architecture"], config["os"], config.get("variant")) == \
            (arch, "linux", variant)
        assert config["created"] == "2023-11-14T22:13:20Z"
        assert config["rootfs"] == {"type": "layers", "diff_ids": [plat.layer_digest]}
        assert len(config["history"]) == 1


def test_layer_holds_only_the_binary(tarball, hello_binaries):
    path, info = tarball
    files = members(path)
    for name, binary in hello_binaries.items():
        layer = blob(files, info.platforms[name].layer_digest)
        assert len(layer) == info.platforms[name].layer_size
        with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
            (entry,) = tar.getmembers()
            assert (entry.name, entry.mode, entry.uid, entry.gid, entry.mtime) == \
                ("app", 0o755, 0, 0, EPOCH)
            assert tar.extractfile(entry).read() == binary.read_bytes()


def test_outer_tarball_is_sorted_and_owned_by_root(tarball):
    path, info = tarball
    with tarfile.open(path) as tar:
        entries = tar.getmembers()
    names = [e.name for e in entries]
    assert names == sorted(names)
    assert {(e.uid, e.gid, e.mtime, e.uname) for e in entries} == {(0, 0, EPOCH, "")}
    assert info.tarball_size == path.stat().st_size


def test_docker_manifest_tags_each_platform(tarball):
    path, info = tarball
    files = members(path)
    entries = json.loads(files["manifest.json"])
    assert [e["RepoTags"] for e in entries] == [[TAG, TAG + "-amd64"], [TAG + "-arm64"]]
    for entry in entries:
        for ref in [entry["Config"], *entry["Layers"]]:
            assert files[ref] is not None


def test_bare_name_gets_latest():
    assert image.normalize_tag("hello") == "hello:latest"
    assert image.normalize_tag("localhost:5000/team/hello") == "localhost:5000/team/hello:latest"
    assert image.full_reference("hello:1") == "docker.io/library/hello:1"
    with pytest.raises(ImageError):
        image.normalize_tag("Hello:1")


def test_a_bad_tag_is_a_malformed_command_line_told_before_compiling(tmp_path, capsys):
    """Status 2 with the usage; the program would not even compile, so nothing was built."""
    from micatool.cli import main

    (tmp_path / "broken.mica").write_text("program Broken;\nbegin\n    x := 1;\nend.\n")
    with pytest.raises(SystemExit) as stopped:
        main(["image", str(tmp_path / "broken.mica"), "--tag", "Bad Tag!", "-o", str(tmp_path / "b.tar")])
    assert stopped.value.code == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.startswith("usage: micatool image ")
    assert said.err.endswith("micatool image: error: argument --tag: 'Bad Tag!' is not a tag Docker accepts "
                             "(lower-case name, short tag of letters, digits, '.', '_', '-')\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.mica"]


def test_wrong_or_foreign_binaries_are_refused(hello_binaries, tmp_path):
    binaries = read_binaries(hello_binaries)
    swapped = {"linux/amd64": binaries["linux/arm64"]}
    with pytest.raises(ImageError, match="ELF machine 183"):
        write_image(swapped, TAG, tmp_path / "x.tar")
    with pytest.raises(ImageError, match="not a 64-bit"):
        write_image({"linux/amd64": b"#!/bin/sh\n"}, TAG, tmp_path / "x.tar")
    with pytest.raises(ImageError, match="unknown platform"):
        write_image({"linux/riscv64": binaries["linux/amd64"]}, TAG, tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists()


def test_failed_write_leaves_old_file_and_no_temp(hello_binaries, tmp_path, monkeypatch):
    out = tmp_path / "img.tar"
    out.write_bytes(b"old")

    def broken_fsync(fd):
        raise OSError("disk gone")
    monkeypatch.setattr(image.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk gone"):
        write_image(read_binaries(hello_binaries), TAG, out)
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["img.tar"]


def test_load_without_daemon_says_so(tarball, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(ImageError, match="no Docker daemon answers at unix:///nonexistent"):
        load_image(tarball[0])


def test_skopeo_reads_the_layout_and_keeps_digests(tarball, skopeo, tmp_path):
    path, info = tarball
    raw = subprocess.run([skopeo, "inspect", "--raw", f"oci-archive:{path}:{TAG}"],
                         capture_output=True, check=True).stdout
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == info.index_digest
    copy = f"oci:{tmp_path / 'copy'}:{TAG}"
    # --preserve-digests: skopeo would otherwise gzip our uncompressed layers
    subprocess.run([skopeo, "copy", "--all", "--preserve-digests",
                    f"oci-archive:{path}:{TAG}", copy], capture_output=True, check=True)
    raw = subprocess.run([skopeo, "inspect", "--raw", copy],
                         capture_output=True, check=True).stdout
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == info.index_digest


# ---------------------------------------------------------------- with Docker


@pytest.fixture(scope="module")
def loaded(docker_daemon, tarball):
    """The hello tarball after `docker load`; its tags are removed afterwards."""
    with holding() as held:
        done = held.load(tarball[0])
        assert done.returncode == 0, done.stderr
        yield done.stdout


@pytest.mark.docker
def test_docker_load_names_every_platform(loaded, tarball):
    for ref in (TAG, TAG + "-amd64", TAG + "-arm64"):
        assert f"Loaded image: {ref}" in loaded
    inspect = docker("image", "inspect", "--format", "{{.Id}} {{.Architecture}}",
                     TAG + "-arm64").stdout.split()
    plat = tarball[1].platforms["linux/arm64"]
    assert inspect[1] == "arm64"
    assert inspect[0] in (plat.config_digest, plat.manifest_digest)


@pytest.mark.docker
def test_amd64_container_prints_as_nobody(loaded, docker_held):
    done = docker_held.run(TAG + "-amd64", "--platform", "linux/amd64")
    assert done.returncode == 0, done.stderr
    assert done.stdout == NOBODY


@pytest.mark.docker
def test_arm64_container_prints_through_qemu(loaded, arm64_emulation, docker_held):
    done = docker_held.run(TAG + "-arm64", "--platform", "linux/arm64")
    assert done.returncode == 0, done.stderr
    assert done.stdout == NOBODY


@pytest.mark.docker
def test_image_has_no_shell(loaded, docker_held):
    done = docker_held.run(TAG, "--entrypoint", "/bin/sh")
    assert done.returncode != 0
    assert "no such file" in done.stderr.lower()


@pytest.mark.docker
def test_load_image_gives_tags_and_host_default(docker_held, hello_binaries, tmp_path):
    tag = f"mica-test-sdk:{os.getpid()}"  # its own tag: removing it spares `loaded`
    write_image(read_binaries(hello_binaries), tag, tmp_path / "sdk.tar")
    for ref in (tag, tag + "-amd64", tag + "-arm64"):
        docker_held.image(ref)
    tags = load_image(tmp_path / "sdk.tar")
    assert sorted(tags) == sorted([tag, tag + "-amd64", tag + "-arm64"])
    host = image.DAEMON_ARCH[docker("info", "--format", "{{.Architecture}}").stdout.strip()]
    assert docker("image", "inspect", "--format", "{{.Architecture}}", tag).stdout.strip() == host


def scratch_context(tmp_path, hello_binaries) -> pathlib.Path:
    """A build context laid out as Dockerfile.scratch expects."""
    shutil.copy(REPO / "Dockerfile.scratch", tmp_path)
    for platform, path in hello_binaries.items():
        arch = platform.split("/")[1]
        (tmp_path / "build" / arch).mkdir(parents=True)
        shutil.copy(path, tmp_path / "build" / arch / "app")
    return tmp_path


@pytest.mark.docker
def test_dockerfile_scratch_builds_and_runs(docker_held, hello_binaries, tmp_path):
    context = scratch_context(tmp_path, hello_binaries)
    ref = docker_held.image(TAG + "-dockerfile")
    done = docker("build", "--force-rm", "-f", "Dockerfile.scratch", "--build-arg", "TARGETARCH=amd64",
                  "-t", ref, str(context))
    assert done.returncode == 0, done.stdout + done.stderr
    assert docker_held.run(ref).stdout == NOBODY
    user = docker("image", "inspect", "--format", "{{.Config.User}}", ref).stdout
    assert user.strip() == "65534:65534"


def buildkit_command() -> list[str] | None:
    """A docker build that runs BuildKit (which sets TARGETARCH), if any here does."""
    if docker("buildx", "version").returncode == 0:
        return ["docker", "buildx", "build", "--load"]
    for cli in dict.fromkeys([shutil.which("docker"), "/usr/bin/docker"]):
        if cli and os.path.exists(cli):
            version = subprocess.run([cli, "version", "--format", "{{.Client.Version}}"],
                                     capture_output=True, text=True).stdout
            if version.startswith(("20.", "19.", "18.09")):  # BuildKit built in
                return [cli, "build"]
    return None


@pytest.mark.docker
def test_dockerfile_scratch_arm64_with_buildkit(docker_held, arm64_emulation, hello_binaries, tmp_path):
    command = buildkit_command()
    if command is None:
        pytest.skip("no BuildKit client here: the docker CLI has no buildx plugin and "
                    "is too new to carry BuildKit itself (legacy builder cannot build "
                    "FROM scratch for another platform)")
    context = scratch_context(tmp_path, hello_binaries)
    ref = docker_held.image(TAG + "-dockerfile-arm64")
    env = dict(os.environ, DOCKER_BUILDKIT="1")
    done = subprocess.run([*command, "--platform", "linux/arm64", "-f", "Dockerfile.scratch",
                           "-t", ref, str(context)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert docker_held.run(ref, "--platform", "linux/arm64").stdout == NOBODY
