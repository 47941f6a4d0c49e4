"""Image writer: static binaries in, one container image tarball out, no daemon.

Takes one static ELF binary per platform ("linux/amd64", "linux/arm64"; checked
with pyelftools) and a tag, gives a single uncompressed tarball that is at the
same time

  * an OCI image layout: `oci-layout`, `index.json`, `blobs/sha256/<hex>`;
    index.json names one image index (annotated with the tag), and that index
    lists one manifest per platform; and
  * a `docker load` archive: a top-level `manifest.json` whose Config and
    Layers point at the same blobs.

Each image holds one layer with one file, `/<binary_name>`, and a config whose
entrypoint is that file, run as user 65534 with no shell and no environment.

Tags in manifest.json (Docker keeps one platform per tag): every platform is
tagged `<tag>-<arch>` (`hello:1.0-amd64`, `hello:1.0-arm64`), and the plain
`<tag>` goes to linux/amd64 when present, else to the first platform.
`load_image` then moves the plain tag to the platform of the daemon it loads
into, when the tarball has it. The bytes never depend on the writing host.

Same inputs, same bytes: timestamps come from `epoch` (default
SOURCE_DATE_EPOCH, else 0), every tar entry is owned by 0:0 with fixed modes,
entries are sorted, JSON is written with sorted keys and no spaces.

Layers are stored uncompressed (media type ...layer.v1.tar) on purpose: the
layer digest then equals its diff_id and depends only on our bytes, whereas a
gzip stream's bytes depend on the zlib build that made it, so the same
binary could give different digests on two machines.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import re
import tarfile
from dataclasses import dataclass
from datetime import datetime, timezone

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_E_MACHINE

from ..cache import write_atomically

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
REF_NAME = "org.opencontainers.image.ref.name"
CONTAINERD_NAME = "io.containerd.image.name"

USER = "65534:65534"  # nobody:nogroup; the binary never needs root
DEFAULT_TAG_PLATFORM = "linux/amd64"


@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None
    elf_machine: int  # e_machine the binary must carry


PLATFORMS = {
    "linux/amd64": Platform("linux", "amd64", None, 62),
    "linux/arm64": Platform("linux", "arm64", "v8", 183),
}
PLATFORM_ALIASES = {"linux/arm64/v8": "linux/arm64"}
DAEMON_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class ImageError(Exception):
    """A reason the image cannot be written or loaded, worded for the user."""


@dataclass(frozen=True)
class PlatformImage:
    platform: str
    manifest_digest: str
    config_digest: str
    layer_digest: str
    layer_size: int
    repo_tags: tuple[str, ...]


@dataclass(frozen=True)
class ImageInfo:
    path: pathlib.Path
    tag: str
    index_digest: str
    platforms: dict[str, PlatformImage]
    tarball_size: int


# ---------------------------------------------------------------- writing


def write_image(binaries: dict[str, bytes], tag: str, out: pathlib.Path,
                epoch: int | None = None, binary_name: str = "app") -> ImageInfo:
    """Write the image tarball for `binaries` at `out`, atomically."""
    tag = normalize_tag(tag)
    epoch = resolve_epoch(epoch)
    check_binary_name(binary_name)
    platforms = {canonical_platform(p): data for p, data in binaries.items()}
    if not platforms:
        raise ImageError("an image needs at least one platform's binary")
    for name, data in platforms.items():
        check_binary(name, data)

    blobs: dict[str, bytes] = {}
    images = {}
    descriptors = []
    tags = repo_tags(tag, sorted(platforms))
    for name in sorted(platforms):
        image, manifest_desc = add_platform(blobs, name, platforms[name],
                                            binary_name, epoch, tags[name])
        images[name] = image
        descriptors.append(manifest_desc)
    index_desc = add_blob(blobs, OCI_INDEX, dumps(image_index(descriptors)))
    files = layout_files(blobs, index_desc, tag, images)
    out = pathlib.Path(out)
    write_atomically(out, lambda f: write_tar(f, files, epoch))
    return ImageInfo(out, tag, index_desc["digest"], images, out.stat().st_size)


def add_platform(blobs, name, binary, binary_name, epoch, tags):
    """The layer, config and manifest blobs of one platform."""
    platform = PLATFORMS[name]
    layer = layer_tar(binary, binary_name, epoch)
    layer_desc = add_blob(blobs, OCI_LAYER_TAR, layer)
    config = image_config(platform, binary_name, layer_desc["digest"], epoch)
    config_desc = add_blob(blobs, OCI_CONFIG, dumps(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config_desc,
        "layers": [layer_desc],
    }
    manifest_desc = add_blob(blobs, OCI_MANIFEST, dumps(manifest))
    manifest_desc["platform"] = platform_field(platform)
    image = PlatformImage(name, manifest_desc["digest"], config_desc["digest"],
                          layer_desc["digest"], layer_desc["size"], tuple(tags))
    return image, manifest_desc


def layer_tar(binary: bytes, binary_name: str, epoch: int) -> bytes:
    """A tar with exactly one entry: the binary, 0755, owned by 0:0."""
    buf = io.BytesIO()
    write_tar(buf, [(binary_name, binary, 0o755)], epoch)
    return buf.getvalue()


def image_config(platform: Platform, binary_name: str, diff_id: str, epoch: int) -> dict:
    """The OCI image config: what runs, as whom, on which platform."""
    created = rfc3339(epoch)
    config = {
        "created": created,
        "architecture": platform.architecture,
        "os": platform.os,
        "config": {
            "Entrypoint": ["/" + binary_name],
            "User": USER,
            "Env": [],
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "micatool image"}],
    }
    if platform.variant:
        config["variant"] = platform.variant
    return config


def image_index(manifest_descriptors: list[dict]) -> dict:
    return {"schemaVersion": 2, "mediaType": OCI_INDEX,
            "manifests": manifest_descriptors}


def platform_field(platform: Platform) -> dict:
    field = {"architecture": platform.architecture, "os": platform.os}
    if platform.variant:
        field["variant"] = platform.variant
    return field


def add_blob(blobs: dict[str, bytes], media_type: str, data: bytes) -> dict:
    """Store `data` by digest and give its descriptor."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def dumps(obj) -> bytes:
    """JSON with one spelling per value, so digests are stable."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def blob_path(digest: str) -> str:
    algorithm, hexpart = digest.split(":", 1)
    return f"blobs/{algorithm}/{hexpart}"


# ---------------------------------------------------------------- the two views


def layout_files(blobs, index_desc, tag, images) -> list[tuple[str, bytes | None, int]]:
    """Every entry of the outer tarball as (path, data or None for a dir, mode)."""
    top = dict(index_desc)
    top["annotations"] = {REF_NAME: tag, CONTAINERD_NAME: full_reference(tag)}
    files = [("blobs", None, 0o755), ("blobs/sha256", None, 0o755)]
    files += [(blob_path(d), data, 0o644) for d, data in blobs.items()]
    files.append(("oci-layout", dumps({"imageLayoutVersion": "1.0.0"}), 0o644))
    files.append(("index.json", dumps(image_index([top])), 0o644))
    files.append(("manifest.json", dumps(docker_manifest(images)), 0o644))
    return sorted(files)


def docker_manifest(images: dict[str, PlatformImage]) -> list[dict]:
    """The list `docker load` reads: one entry per platform."""
    return [{
        "Config": blob_path(img.config_digest),
        "RepoTags": list(img.repo_tags),
        "Layers": [blob_path(img.layer_digest)],
    } for _, img in sorted(images.items())]


def repo_tags(tag: str, platforms: list[str]) -> dict[str, list[str]]:
    """Docker tags per platform: `<tag>-<arch>` each, plain `<tag>` for one."""
    default = DEFAULT_TAG_PLATFORM if DEFAULT_TAG_PLATFORM in platforms else platforms[0]
    tags = {}
    for name in platforms:
        own = arch_tag(tag, PLATFORMS[name].architecture)
        tags[name] = [tag, own] if name == default else [own]
    return tags


def arch_tag(tag: str, arch: str) -> str:
    return f"{tag}-{arch}"


# ---------------------------------------------------------------- tar and files


def write_tar(fileobj, entries, epoch: int) -> None:
    """A plain ustar stream; every header field is fixed, so bytes repeat."""
    with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data, mode in entries:
            info = tarfile.TarInfo(path)
            info.mode = mode
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = epoch
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


# ---------------------------------------------------------------- checking inputs


def resolve_epoch(epoch: int | None) -> int:
    if epoch is None:
        text = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
        if not text:
            return 0
        if not text.isdigit():
            raise ImageError(f"SOURCE_DATE_EPOCH must be whole seconds, not {text!r}")
        epoch = int(text)
    if not 0 <= epoch < 8**11:  # what an 11-digit octal ustar mtime holds
        raise ImageError(f"epoch {epoch} is outside 0 .. {8**11 - 1}")
    return epoch


def rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_platform(name: str) -> str:
    name = PLATFORM_ALIASES.get(name, name)
    if name not in PLATFORMS:
        known = ", ".join(sorted(PLATFORMS))
        raise ImageError(f"unknown platform {name!r}; known: {known}")
    return name


def check_binary_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", name) or name in (".", ".."):
        raise ImageError(f"binary name {name!r} must be one plain file name")


def check_binary(platform: str, data: bytes) -> None:
    """A static 64-bit little-endian ELF for the platform's machine, or a loud no.

    A dynamic binary would fail in a scratch image with a bare 'no such file'."""
    try:
        elf = ELFFile(io.BytesIO(data))
    except ELFError:
        elf = None
    if elf is None or elf.elfclass != 64 or not elf.little_endian:
        raise ImageError(f"the {platform} binary is not a 64-bit little-endian ELF file")
    machine = ENUM_E_MACHINE.get(elf["e_machine"], elf["e_machine"])  # a machine pyelftools does not know stays a number
    if machine != PLATFORMS[platform].elf_machine:
        raise ImageError(f"the {platform} binary is built for ELF machine {machine}, "
                         f"not {PLATFORMS[platform].elf_machine}")
    try:
        dynamic = any(segment["p_type"] == "PT_INTERP" for segment in elf.iter_segments())  # asks for a loader
    except ELFError:
        raise ImageError("the binary's program headers run past its end") from None
    if dynamic:
        raise ImageError(f"the {platform} binary is dynamically linked; "
                         "a scratch image needs a static one")


# ---------------------------------------------------------------- tags

TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
NAME_RE = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")


def split_tag(tag: str) -> tuple[str, str]:
    """'repo/name:tag' -> ('repo/name', 'tag'); a colon before the last '/' is a port."""
    name, sep, label = tag.rpartition(":")
    if not sep or "/" in label:
        return tag, "latest"
    return name, label


def normalize_tag(tag: str) -> str:
    """The tag with ':latest' made explicit, or ImageError if Docker would refuse it."""
    if "@" in tag:
        raise ImageError(f"tag {tag!r} names a digest; give name:tag")
    name, label = split_tag(tag)
    path = name.split("/")
    if len(path) > 1 and ("." in path[0] or ":" in path[0] or path[0] == "localhost"):
        path = path[1:]  # a registry host may carry dots, a port and capitals
    ok = TAG_RE.fullmatch(label) and all(NAME_RE.fullmatch(p) for p in path)
    if not ok or len(arch_tag(label, "amd64")) > 128:
        raise ImageError(f"{tag!r} is not a tag Docker accepts (lower-case name, "
                         "short tag of letters, digits, '.', '_', '-')")
    return f"{name}:{label}"


def full_reference(tag: str) -> str:
    """The fully spelled reference containerd stores: docker.io/library/x:tag."""
    name, label = split_tag(tag)
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"{name}:{label}"
    if not rest:
        name = "library/" + name
    return f"docker.io/{name}:{label}"


# ---------------------------------------------------------------- loading


def load_image(path) -> list[str]:
    """Hand the tarball to the Docker daemon; give the tags it now holds."""
    client = docker_client()
    plan = read_tag_plan(pathlib.Path(path))
    import docker.errors

    try:
        with open(path, "rb") as f:
            client.images.load(f)
        retag_for_daemon(client, plan)
    except docker.errors.DockerException as e:
        raise ImageError(f"docker could not load {path}: {e}") from None
    return sorted(plan["arch_tags"].values()) + [plan["tag"]]


def docker_client():
    """A client for the daemon at DOCKER_HOST (default: the local socket)."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        import docker
        import requests
    except ImportError:
        raise ImageError("the 'docker' Python package is missing; pip install docker") from None
    try:
        client = docker.from_env(timeout=300)  # loading a large image takes a while
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        # docker-py wraps most refusals; a daemon dying mid-ping surfaces as requests'
        raise ImageError(f"no Docker daemon answers at {host}; start dockerd "
                         "(as root: dockerd &) or point DOCKER_HOST at one") from None
    return client


def read_tag_plan(path: pathlib.Path) -> dict:
    """The plain tag and each architecture's own tag, read from the tarball."""
    try:
        with tarfile.open(path) as tar:
            top = json.load(tar.extractfile("index.json"))["manifests"][0]
            index = json.load(tar.extractfile(blob_path(top["digest"])))
    except (OSError, KeyError, tarfile.TarError, ValueError) as e:
        raise ImageError(f"{path} is not an image tarball micatool wrote: {e}") from None
    tag = top["annotations"][REF_NAME]
    arches = [m["platform"]["architecture"] for m in index["manifests"]]
    return {"tag": tag, "arch_tags": {a: arch_tag(tag, a) for a in arches}}


def retag_for_daemon(client, plan: dict) -> None:
    """Point the plain tag at the daemon's own architecture, when we have it."""
    arch = DAEMON_ARCH.get(client.info().get("Architecture", ""))
    own = plan["arch_tags"].get(arch)
    if own:
        name, label = split_tag(plan["tag"])
        client.images.get(own).tag(name, label)
