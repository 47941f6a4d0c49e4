"""A glibc base image for the GPU image tests, made from Debian's libc6.

The session fixture `glibc_base` downloads `libc6` for amd64 and arm64
(`dpkg --add-architecture arm64`, `apt-get download`), keeps exactly the
runtime a GPU binary and the NVIDIA driver libraries need (the dynamic
loader, libc, libm, libdl, libpthread, librt, and the loader's link where
the ELF interpreter path names it), and writes it three ways:

  layout    an OCI layout folder: one index, a gzip layer per platform, and
            a config whose user and environment micatool must not keep;
  oci_tar   the same folder as a tarball (an OCI archive);
  docker    a `docker save` archive of the same layers, uncompressed.

Each layer is a deterministic tar (sorted, 0:0, fixed times), gzipped with
mtime 0, so the base's digests are the same on every run.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import tarfile
from dataclasses import dataclass

import pytest

from system import Unavailable, apt_update, sh, tail

ARCHES = {"linux/amd64": ("amd64", "x86_64-linux-gnu", "lib64/ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2"),
          "linux/arm64": ("arm64", "aarch64-linux-gnu", "lib/ld-linux-aarch64.so.1", "ld-linux-aarch64.so.1")}
LIBRARIES = ("libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1")
BASE_USER = "0:0"  # the base's own settings, which a Mica image must replace
BASE_ENV = ["PATH=/usr/bin:/bin", "FROM_THE_BASE=1"]


@dataclass(frozen=True)
class GlibcBase:
    layout: pathlib.Path
    oci_tar: pathlib.Path
    docker: pathlib.Path
    layer_digests: dict[str, str]  # platform -> its one layer's digest


def blob(layout: pathlib.Path, data: bytes) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = layout / "blobs" / "sha256" / digest.split(":")[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"digest": digest, "size": len(data)}


def dumps(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def runtime_tar(unpacked: pathlib.Path, multiarch: str, loader_link: str, loader: str) -> bytes:
    """The runtime's files out of the unpacked package, as one tar."""
    keep = [f"lib/{multiarch}/{name}" for name in (*LIBRARIES, loader)] + [loader_link]
    folders = sorted({str(pathlib.PurePosixPath(p).parent) for p in keep})
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for path in sorted(keep):
            source = unpacked / path
            info = tarfile.TarInfo(path)
            info.mtime = 0
            if source.is_symlink():
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(source.readlink()), 0o777
                tar.addfile(info)
            else:
                data = source.read_bytes()
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def download_libc6(folder: pathlib.Path) -> dict[str, pathlib.Path]:
    """libc6 of each architecture, unpacked: {platform: folder}."""
    rc, foreign = sh(["dpkg", "--print-foreign-architectures"])
    if "arm64" not in foreign.split():
        rc, out = sh(["dpkg", "--add-architecture", "arm64"])
        if rc != 0:
            raise Unavailable(f"dpkg --add-architecture arm64: {tail(out)}")
        apt_update(force=True)
    else:
        apt_update()
    debs = folder / "debs"
    debs.mkdir()
    rc, out = sh(["apt-get", "download", "libc6:amd64", "libc6:arm64"], timeout=300, cwd=debs)
    if rc != 0:
        raise Unavailable(f"apt-get download libc6:amd64 libc6:arm64: {tail(out)}")
    unpacked = {}
    for platform, (arch, *_rest) in ARCHES.items():
        (deb,) = debs.glob(f"libc6_*_{arch}.deb")
        unpacked[platform] = folder / arch
        rc, out = sh(["dpkg-deb", "-x", str(deb), str(unpacked[platform])])
        if rc != 0:
            raise Unavailable(f"dpkg-deb -x {deb.name}: {tail(out)}")
    return unpacked


def write_bases(folder: pathlib.Path, unpacked: dict[str, pathlib.Path]) -> GlibcBase:
    layout = folder / "layout"
    manifests, digests, saved = [], {}, []
    docker_files: dict[str, bytes] = {}
    for platform, (arch, multiarch, loader_link, loader) in ARCHES.items():
        layer = runtime_tar(unpacked[platform], multiarch, loader_link, loader)
        packed = gzip.compress(layer, mtime=0)
        layer_desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **blob(layout, packed)}
        digests[platform] = layer_desc["digest"]
        diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
        config = {"architecture": arch, "os": "linux", "config": {"User": BASE_USER, "Env": BASE_ENV,
                                                                 "Entrypoint": ["/bin/sh"]},
                  "rootfs": {"type": "layers", "diff_ids": [diff_id]},
                  "history": [{"created_by": f"libc6 {arch}: the loader and five libraries"}]}
        if arch == "arm64":
            config["variant"] = "v8"
        config_bytes = dumps(config)
        config_desc = {"mediaType": "application/vnd.oci.image.config.v1+json", **blob(layout, config_bytes)}
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": config_desc, "layers": [layer_desc]}
        field = {"os": "linux", "architecture": arch, **({"variant": "v8"} if arch == "arm64" else {})}
        manifests.append({"mediaType": manifest["mediaType"], **blob(layout, dumps(manifest)), "platform": field})
        docker_files[f"{arch}/layer.tar"] = layer
        docker_files[f"{arch}.json"] = config_bytes
        saved.append({"Config": f"{arch}.json", "RepoTags": [f"glibc-base:{arch}"], "Layers": [f"{arch}/layer.tar"]})
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}
    index_desc = {"mediaType": index["mediaType"], **blob(layout, dumps(index)),
                  "annotations": {"org.opencontainers.image.ref.name": "latest"}}
    (layout / "oci-layout").write_bytes(dumps({"imageLayoutVersion": "1.0.0"}))
    (layout / "index.json").write_bytes(dumps({"schemaVersion": 2, "manifests": [index_desc]}))
    oci_tar = folder / "glibc-base-oci.tar"
    with tarfile.open(oci_tar, "w") as tar:
        for path in sorted(layout.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(layout)), recursive=False)
    docker_files["manifest.json"] = dumps(saved)
    docker = folder / "glibc-base-docker.tar"
    with tarfile.open(docker, "w") as tar:
        for name, data in sorted(docker_files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return GlibcBase(layout, oci_tar, docker, digests)


@pytest.fixture(scope="session")
def glibc_base(tmp_path_factory) -> GlibcBase:
    folder = tmp_path_factory.mktemp("glibc-base")
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        pytest.skip("the glibc test base comes from Debian's libc6 packages: no apt-get or dpkg-deb here")
    try:
        unpacked = download_libc6(folder)
    except Unavailable as e:
        pytest.skip(f"glibc test base: {e}")
    return write_bases(folder, unpacked)


def unpack_layers(image_tar: pathlib.Path, platform: str, root: pathlib.Path) -> dict:
    """Unpack one platform's layers of a micatool tarball into the empty folder
    `root`, bottom first, as a container runtime does; give its config."""
    with tarfile.open(image_tar) as outer:
        def read(digest: str) -> bytes:
            return outer.extractfile("blobs/sha256/" + digest.split(":")[1]).read()
        top = json.loads(outer.extractfile("index.json").read())["manifests"][0]
        index = json.loads(read(top["digest"]))
        (entry,) = [m for m in index["manifests"]
                    if f"{m['platform']['os']}/{m['platform']['architecture']}" == platform]
        manifest = json.loads(read(entry["digest"]))
        for layer in manifest["layers"]:
            with tarfile.open(fileobj=io.BytesIO(read(layer["digest"]))) as tar:
                tar.extractall(root, filter="fully_trusted")  # absolute symlinks are the loader's own
        return json.loads(read(manifest["config"]["digest"]))


def run_in_root(root: pathlib.Path, config: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    """The image's entrypoint as its user, with `root` as the whole file system
    and no environment (as the config's empty Env gives)."""
    chroot = shutil.which("chroot")
    if chroot is None or os.geteuid() != 0:
        pytest.skip("running an image's layers in an empty root needs chroot, as root")
    return subprocess.run([chroot, f"--userspec={config['config']['User']}", str(root),
                           *config["config"]["Entrypoint"]], capture_output=True, text=True, timeout=120,
                          env=env or {})
