"""`micatool image` of a GPU program: a FROM scratch image of a glibc base's
layers and the binary, proven without a GPU.

The base is Debian's libc6 runtime (tests/glibc_base.py). Each platform's
layers are unpacked into an empty folder, the suite's fake libcuda.so.1 is
put where the NVIDIA container toolkit puts the driver's, and the image's
entrypoint runs as its user with that folder as its whole file system
(chroot): it must print the host's digits, on amd64 and on arm64 (qemu).
"""

from __future__ import annotations

import io
import os
import json
import shutil
import subprocess
import tarfile

import pytest

from docker_env import arm64_emulation, docker_daemon, docker_held, skopeo  # noqa: F401 (fixtures)
from fake_driver import build_fake_driver
from glibc_base import BASE_ENV, BASE_USER, glibc_base, run_in_root, unpack_layers  # noqa: F401 (fixture)
from helpers import EXAMPLES
from static_hello import hello_binaries  # noqa: F401 (fixture)
from micatool.cli import _build_binary, main
from micatool import targets
from micatool.compile import compile_program, load_source
from micatool.link import bases, image, size

PROGRAM = EXAMPLES / "gpu" / "gpu.mica"
TAG = f"mica-test/gpu:{os.getpid()}"  # its own: another session (or xdist worker) loads its own
EPOCH = "1700000000"
MULTIARCH = {"linux/amd64": "x86_64-linux-gnu", "linux/arm64": "aarch64-linux-gnu"}
ZIG_GNU = {"linux/amd64": "x86_64-linux-gnu.2.28", "linux/arm64": "aarch64-linux-gnu.2.28"}


@pytest.fixture(scope="module")
def gpu_image(glibc_base, tmp_path_factory):
    """(tarball, printed lines) of examples/gpu on the libc6 base, both platforms."""
    out = tmp_path_factory.mktemp("gpu-image") / "gpu.tar"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SOURCE_DATE_EPOCH", EPOCH)
        assert main(["image", str(PROGRAM), "--tag", TAG, "--base", str(glibc_base.layout), "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def fake_drivers(tmp_path_factory):
    """The fake libcuda.so.1 per platform."""
    folder = tmp_path_factory.mktemp("drivers")
    drivers = {}
    for platform, triple in ZIG_GNU.items():
        (folder / triple).mkdir()
        drivers[platform] = build_fake_driver(folder / triple, triple)
    return drivers


def build_binaries(program) -> dict[str, bytes]:
    """The program's binary per platform, as `image` builds them."""
    compiled = compile_program(load_source(str(program)))
    return {platform: _build_binary(compiled, targets.resolve(platform), "fast", None).read_bytes()
            for platform in ("linux/amd64", "linux/arm64")}


@pytest.fixture(scope="module")
def gpu_binaries() -> dict[str, bytes]:
    """examples/gpu's binaries, built before a test that reads what `image` says, which
    would otherwise begin with a first build's lines."""
    return build_binaries(PROGRAM)


def members(path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def manifests(path) -> dict[str, dict]:
    files = members(path)
    top = json.loads(files["index.json"])["manifests"][0]
    index = json.loads(files[image.blob_path(top["digest"])])
    return {f"linux/{m['platform']['architecture']}": json.loads(files[image.blob_path(m["digest"])])
            for m in index["manifests"]}


def layout_index(layout) -> dict:
    """The image index an OCI layout's index.json points at."""
    top = json.loads((layout / "index.json").read_text())["manifests"][0]
    return json.loads((layout / image.blob_path(top["digest"])).read_text())


def run_platform(tarball, platform, driver, tmp_path) -> subprocess.CompletedProcess:
    root = tmp_path / platform.replace("/", "-")
    root.mkdir()
    config = unpack_layers(tarball, platform, root)
    where = root / "usr" / "lib" / MULTIARCH[platform]  # where the container toolkit mounts libcuda.so.1
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(driver, where / "libcuda.so.1")
    return run_in_root(root, config)


def host_digits(out: str) -> None:
    host, device, same = out.splitlines()
    assert host.startswith("host   y[0..3] = ") and device.startswith("device y[0..3] = ")
    assert host.split("=", 1)[1] == device.split("=", 1)[1]
    assert same == "64 of 64 elements identical to the bit"


def test_the_layers_are_the_base_then_the_binary(gpu_image, glibc_base):
    for platform, manifest in manifests(gpu_image).items():
        layers = manifest["layers"]
        assert len(layers) == 2
        assert layers[0] == {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                             "digest": glibc_base.layer_digests[platform],
                             "size": layers[0]["size"]}
        files = members(gpu_image)
        with tarfile.open(fileobj=io.BytesIO(files[image.blob_path(layers[1]["digest"])])) as tar:
            assert tar.getnames() == ["app"]
        assert manifest["annotations"][image.BASE_DIGEST].startswith("sha256:")


def test_the_config_is_micas_not_the_bases(gpu_image):
    files = members(gpu_image)
    for manifest in manifests(gpu_image).values():
        config = json.loads(files[image.blob_path(manifest["config"]["digest"])])["config"]
        assert (config["User"], config["Env"], config["Entrypoint"]) == ("65534:65534", [], ["/app"])
        assert BASE_USER != config["User"] and BASE_ENV != config["Env"]
        assert config["Labels"][image.TITLE] == "gpu"
        assert config["Labels"][image.CREATED] == "2023-11-14T22:13:20Z"


def test_amd64_runs_in_an_empty_root_with_the_fake_driver(gpu_image, fake_drivers, tmp_path):
    done = run_platform(gpu_image, "linux/amd64", fake_drivers["linux/amd64"], tmp_path)
    assert done.returncode == 0, done.stderr
    host_digits(done.stdout)


@pytest.mark.qemu
def test_arm64_runs_the_same_under_qemu(gpu_image, fake_drivers, arm64_emulation, tmp_path):
    amd64 = run_platform(gpu_image, "linux/amd64", fake_drivers["linux/amd64"], tmp_path)
    done = run_platform(gpu_image, "linux/arm64", fake_drivers["linux/arm64"], tmp_path)
    assert done.returncode == 0, done.stderr
    host_digits(done.stdout)
    assert done.stdout == amd64.stdout


def test_without_the_driver_it_stops_at_its_line(gpu_image, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    done = run_in_root(root, unpack_layers(gpu_image, "linux/amd64", root))
    assert done.returncode == 1
    assert done.stderr == ("gpu.mica:25: no CUDA device "  # wd := ToDevice(w), the first device operation
                           "(libcuda.so.1: cannot open shared object file: No such file or directory)\n")


@pytest.mark.parametrize("kind", ["layout", "oci_tar", "docker"])
def test_every_local_base_kind_gives_the_same_layers(kind, glibc_base):
    loaded = bases.load_base(str(getattr(glibc_base, kind)), ["linux/amd64", "linux/arm64"])
    for platform, layers in loaded.items():
        if kind == "docker":  # docker save keeps layers uncompressed: the same files, another blob
            assert layers.layers[0]["mediaType"] == "application/vnd.oci.image.layer.v1.tar"
            assert layers.diff_ids == (layers.layers[0]["digest"],)
        else:
            assert layers.layers[0]["digest"] == glibc_base.layer_digests[platform]
        assert image.resolve_in(layers.files, "/lib/" + MULTIARCH[platform] + "/libc.so.6")


def test_a_gpu_program_without_a_base_is_told_which_to_pass(tmp_path, capsys):
    assert main(["image", str(PROGRAM), "--tag", TAG, "-o", str(tmp_path / "x.tar")]) == 1
    err = capsys.readouterr().err
    assert err == (f"micatool: error: {PROGRAM} uses the GPU, so its binary needs glibc (docs/gpu.md): "
                   f"pass --base with a glibc image, such as --base {bases.SUGGESTED_BASE}\n")
    assert not (tmp_path / "x.tar").exists()


def test_a_base_without_the_platform_is_refused(tmp_path, capsys, glibc_base, gpu_binaries):
    """An OCI layout whose index.json names only the amd64 manifest: the arm64 build has nothing to stand on."""
    partial = tmp_path / "partial"
    shutil.copytree(glibc_base.layout, partial)
    amd64 = next(m for m in layout_index(partial)["manifests"] if m["platform"]["architecture"] == "amd64")
    (partial / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [amd64]}))
    assert main(["image", str(PROGRAM), "--tag", TAG, "--base", str(partial), "-o", str(tmp_path / "x.tar")]) == 1
    assert capsys.readouterr().err == (f"micatool: error: the base {partial} has no linux/arm64 image "
                                       "(it has: linux/amd64)\n")


def test_a_base_without_libc_lacks_the_loader(tmp_path, capsys, hello_binaries, gpu_binaries):
    """A FROM scratch image of a static binary has no C library to lend."""
    scratch = tmp_path / "scratch.tar"
    image.write_image({"linux/amd64": hello_binaries["linux/amd64"].read_bytes()}, "scratch:1", scratch)
    assert main(["image", str(PROGRAM), "--tag", TAG, "--platform", "linux/amd64", "--base", str(scratch),
                 "-o", str(tmp_path / "x.tar")]) == 1
    assert capsys.readouterr().err == (f"micatool: error: the base {scratch} has no /lib64/ld-linux-x86-64.so.2, "
                                       "libc.so.6, ld-linux-x86-64.so.2, libpthread.so.0, libdl.so.2 "
                                       "for linux/amd64; "
                                       "a GPU binary needs a glibc base (docs/images.md)\n")


def test_skopeo_inspects_the_gpu_image(gpu_image, skopeo):
    done = subprocess.run([skopeo, "inspect", "--raw", f"oci-archive:{gpu_image}:{TAG}"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["manifests"]) == 2
    for arch in ("amd64", "arm64"):
        done = subprocess.run([skopeo, "--override-arch", arch, "inspect", f"oci-archive:{gpu_image}:{TAG}"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["Labels"][image.TITLE] == "gpu"


def test_the_gpu_images_fit_their_budgets(gpu_image, glibc_base, tmp_path, capsys):
    """images/budgets.toml's [images] section: each GPU example's binary layer and whole image."""
    measured = {}
    for program in (PROGRAM, EXAMPLES / "gpu" / "gpt.mica"):
        name = size.program_name(program)
        built = image.build_image(build_binaries(program), "mica/budget:1", 0,
                                  base=bases.load_base(str(glibc_base.layout), ["linux/amd64", "linux/arm64"]))
        for platform, part in built.platforms.items():
            target = size.canonical_target(platform.split("/")[1])
            measured.setdefault(f"{name} layer", {})[target] = part.layer_size
            measured.setdefault(f"{name} image", {})[target] = part.image_size
    rows = size.budget_rows(measured, EXAMPLES.parent / "images" / "budgets.toml", "images")
    assert len(rows) == 8
    assert [row["example"] for row in rows if row["verdict"] != "ok"] == [], size.format_table(rows)


@pytest.mark.docker
def test_docker_loads_and_runs_the_gpu_tarball(gpu_image, fake_drivers, docker_held):
    """The tarball's docker-load view with the base's gzip layers; the driver mounted as the toolkit would."""
    done = docker_held.load(gpu_image)
    assert done.returncode == 0, done.stderr
    done = docker_held.run(TAG + "-amd64", "--platform", "linux/amd64",
                           "-v", f"{fake_drivers['linux/amd64']}:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro")
    assert done.returncode == 0, done.stderr
    host_digits(done.stdout)
