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
With a base (`bases.py`: the glibc runtime a GPU binary needs, docs/gpu.md),
the base's layers come first, exactly as the base has them (same digests),
and the binary's layer last; the base's config is not used. Each config
carries labels and each manifest and the index annotations: the conventional
org.opencontainers.image.* keys (created, title, and from git, source and
revision) and the user's own.

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
import subprocess
import tarfile
import urllib.parse
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
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"
CREATED = "org.opencontainers.image.created"
SOURCE = "org.opencontainers.image.source"
REVISION = "org.opencontainers.image.revision"
TITLE = "org.opencontainers.image.title"
BASE_NAME = "org.opencontainers.image.base.name"
BASE_DIGEST = "org.opencontainers.image.base.digest"
CONTAINERD_NAME = "io.containerd.image.name"

USER = "65534:65534"  # nobody:nogroup; the binary never needs root
DEFAULT_TAG_PLATFORM = "linux/amd64"


@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None
    elf_machine: int  # e_machine the binary must carry
    multiarch: str  # Debian's library folder name, where glibc's loader looks


PLATFORMS = {
    "linux/amd64": Platform("linux", "amd64", None, 62, "x86_64-linux-gnu"),
    "linux/arm64": Platform("linux", "arm64", "v8", 183, "aarch64-linux-gnu"),
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
    layer_digest: str  # the binary's layer
    layer_size: int
    repo_tags: tuple[str, ...]
    layers: tuple[str, ...]  # every layer's digest, the base's first
    image_size: int  # bytes of the manifest, the config and every layer


@dataclass(frozen=True)
class BaseLayers:
    """What one platform of a base image gives: its layers as they are."""
    name: str  # how the user named the base, for messages
    reference: str | None  # its registry reference, when it came from one
    manifest_digest: str
    layers: tuple[dict, ...]  # OCI descriptors
    diff_ids: tuple[str, ...]
    history: tuple[dict, ...]
    blobs: dict  # digest -> bytes of every layer
    files: dict  # path -> symlink target ('' for a plain entry): the merged file system


@dataclass(frozen=True)
class Image:
    """Every blob of an image and the index that ties them, in memory."""
    tag: str
    blobs: dict[str, bytes]
    index_desc: dict
    platforms: dict[str, PlatformImage]
    annotations: dict[str, str]

    @property
    def index_digest(self) -> str:
        return self.index_desc["digest"]


@dataclass(frozen=True)
class ImageInfo:
    path: pathlib.Path
    tag: str
    index_digest: str
    platforms: dict[str, PlatformImage]
    tarball_size: int


# ---------------------------------------------------------------- writing


def write_image(binaries: dict[str, bytes], tag: str, out: pathlib.Path,
                epoch: int | None = None, binary_name: str = "app",
                base: dict[str, BaseLayers] | None = None, labels: dict[str, str] | None = None,
                annotations: dict[str, str] | None = None) -> ImageInfo:
    """Write the image tarball for `binaries` at `out`, atomically."""
    built = build_image(binaries, tag, epoch, binary_name, base, labels, annotations)
    return write_layout(built, out, resolve_epoch(epoch))


def build_image(binaries: dict[str, bytes], tag: str, epoch: int | None = None,
                binary_name: str = "app", base: dict[str, BaseLayers] | None = None,
                labels: dict[str, str] | None = None,
                annotations: dict[str, str] | None = None) -> Image:
    """The image's blobs for `binaries`, on `base` when given (one BaseLayers
    per platform), with `labels` in each config and `annotations` on each
    manifest and the index."""
    tag = normalize_tag(tag)
    epoch = resolve_epoch(epoch)
    check_binary_name(binary_name)
    platforms = {canonical_platform(p): data for p, data in binaries.items()}
    if not platforms:
        raise ImageError("an image needs at least one platform's binary")
    base = base or {}
    for name, data in platforms.items():
        check_binary(name, data, base.get(name))
    annotations = {**default_annotations(epoch, base), **(annotations or {})}
    labels = {**default_annotations(epoch, {}), **(labels or {})}

    blobs: dict[str, bytes] = {}
    images = {}
    descriptors = []
    tags = repo_tags(tag, sorted(platforms))
    for name in sorted(platforms):
        image, manifest_desc = add_platform(blobs, name, platforms[name], binary_name, epoch,
                                            tags[name], base.get(name), labels, annotations)
        images[name] = image
        descriptors.append(manifest_desc)
    index = image_index(descriptors)
    if annotations:
        index["annotations"] = annotations
    index_desc = add_blob(blobs, OCI_INDEX, dumps(index))
    return Image(tag, blobs, index_desc, images, annotations)


def write_layout(built: Image, out: pathlib.Path, epoch: int) -> ImageInfo:
    """The tarball of `built`: an OCI layout and a docker-load archive at once."""
    files = layout_files(built.blobs, built.index_desc, built.tag, built.platforms)
    out = pathlib.Path(out)
    write_atomically(out, lambda f: write_tar(f, files, epoch))
    return ImageInfo(out, built.tag, built.index_digest, built.platforms, out.stat().st_size)


def default_annotations(epoch: int, base: dict[str, BaseLayers]) -> dict[str, str]:
    """The conventional keys micatool always sets: when, and on which base."""
    notes = {CREATED: rfc3339(epoch)}
    references = {layers.reference for layers in base.values()}
    if len(references) == 1 and None not in references:  # a local path would mean nothing elsewhere
        notes[BASE_NAME] = references.pop()
    return notes


def add_platform(blobs, name, binary, binary_name, epoch, tags, base, labels, annotations):
    """The layer, config and manifest blobs of one platform, on its base if any."""
    platform = PLATFORMS[name]
    layer = layer_tar(binary, binary_name, epoch)
    layer_desc = add_blob(blobs, OCI_LAYER_TAR, layer)
    below = base.layers if base else ()
    for desc in below:
        blobs[desc["digest"]] = base.blobs[desc["digest"]]
    diff_ids = [*(base.diff_ids if base else ()), layer_desc["digest"]]
    history = list(base.history) if base else []
    config = image_config(platform, binary_name, diff_ids, history, epoch, labels)
    config_desc = add_blob(blobs, OCI_CONFIG, dumps(config))
    layers = [*below, layer_desc]
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config_desc,
        "layers": layers,
    }
    notes = dict(annotations)
    if base:
        notes[BASE_DIGEST] = base.manifest_digest
    if notes:
        manifest["annotations"] = notes
    manifest_desc = add_blob(blobs, OCI_MANIFEST, dumps(manifest))
    manifest_desc["platform"] = platform_field(platform)
    size = manifest_desc["size"] + config_desc["size"] + sum(d["size"] for d in layers)
    image = PlatformImage(name, manifest_desc["digest"], config_desc["digest"],
                          layer_desc["digest"], layer_desc["size"], tuple(tags),
                          tuple(d["digest"] for d in layers), size)
    return image, manifest_desc


def layer_tar(binary: bytes, binary_name: str, epoch: int) -> bytes:
    """A tar with exactly one entry: the binary, 0755, owned by 0:0."""
    buf = io.BytesIO()
    write_tar(buf, [(binary_name, binary, 0o755)], epoch)
    return buf.getvalue()


def image_config(platform: Platform, binary_name: str, diff_ids: list[str], history: list[dict],
                 epoch: int, labels: dict[str, str]) -> dict:
    """The OCI image config: what runs, as whom, on which platform. Nothing of
    a base's config is kept but its layers' history: its user, environment
    and entrypoint are not Mica's."""
    created = rfc3339(epoch)
    config = {
        "created": created,
        "architecture": platform.architecture,
        "os": platform.os,
        "config": {
            "Entrypoint": ["/" + binary_name],
            "User": USER,
            "Env": [],
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [*history, {"created": created, "created_by": "micatool image"}],
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
        "Layers": [blob_path(d) for d in img.layers],
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


# ---------------------------------------------------------------- metadata


def source_metadata(program: pathlib.Path) -> dict[str, str]:
    """The conventional keys that describe where the program came from: its
    title, and, when it is in a git repository, the commit and the remote."""
    notes = {TITLE: program.stem}
    folder = str(program.resolve().parent)
    revision = git(folder, "rev-parse", "HEAD")
    if revision:
        notes[REVISION] = revision
        remote = git(folder, "remote", "get-url", "origin")
        if remote:
            notes[SOURCE] = without_password(remote)
    return notes


def git(folder: str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None  # no git here: the image simply says less
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def without_password(url: str) -> str:
    """A remote URL as it may be published: no user or token in it."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme and "@" in parts.netloc:
        return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return url


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


def check_binary(platform: str, data: bytes, base: BaseLayers | None = None) -> None:
    """A 64-bit little-endian ELF for the platform's machine: static, or dynamic
    on a base that holds its loader and libraries; else a loud no.

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
        interpreter = next((segment.get_interp_name() for segment in elf.iter_segments()
                            if segment["p_type"] == "PT_INTERP"), None)  # asks for a loader
        needed = [tag.needed for section in elf.iter_sections() if section["sh_type"] == "SHT_DYNAMIC"
                  for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]
    except (ELFError, ValueError):
        raise ImageError("the binary's program headers run past its end") from None
    if interpreter is None:
        return
    if base is None:
        raise ImageError(f"the {platform} binary is dynamically linked; a scratch image needs "
                         "a static one, or a --base that brings its C library")
    missing = [] if resolve_in(base.files, interpreter) else [interpreter]
    search = [f"/lib/{PLATFORMS[platform].multiarch}", f"/usr/lib/{PLATFORMS[platform].multiarch}",
              "/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    missing += [lib for lib in needed if not any(resolve_in(base.files, f"{d}/{lib}") for d in search)]
    if missing:
        raise ImageError(f"the base {base.name} has no {', '.join(missing)} for {platform}; "
                         "a GPU binary needs a glibc base (docs/images.md)")


def resolve_in(files: dict[str, str], path: str, hops: int = 40) -> bool:
    """Whether `path` names a file in `files` (path -> symlink target, '' when
    none), following symlinks in every component as the kernel does."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    while parts:
        part = parts.pop(0)
        if part == "..":
            done = done[:-1]
            continue
        here = "/".join([*done, part])
        if here not in files:
            return False
        target = files[here]
        if not target:
            done.append(part)
            continue
        hops -= 1
        if hops < 0:
            return False
        if target.startswith("/"):
            done = []
        parts = [p for p in target.split("/") if p not in ("", ".")] + parts
    return True


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
    if len(path) > 1 and is_registry_host(path[0]):
        path = path[1:]  # a registry host may carry dots, a port and capitals
    ok = TAG_RE.fullmatch(label) and all(NAME_RE.fullmatch(p) for p in path)
    if not ok or len(arch_tag(label, "amd64")) > 128:
        raise ImageError(f"{tag!r} is not a tag Docker accepts (lower-case name, "
                         "short tag of letters, digits, '.', '_', '-')")
    return f"{name}:{label}"


def is_registry_host(first: str) -> bool:
    """Whether a name's first part names a registry (as Docker decides), not a path on Docker Hub."""
    return "." in first or ":" in first or first == "localhost"


def full_reference(tag: str) -> str:
    """The fully spelled reference containerd stores: docker.io/library/x:tag."""
    name, label = split_tag(tag)
    first, _, rest = name.partition("/")
    if rest and is_registry_host(first):
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
