"""Base images: where a GPU image's glibc runtime comes from (`--base`).

Takes what the user names and gives, per platform, the base's layers exactly
as they are (image.BaseLayers: descriptors, bytes, diff_ids, history, and
the file system the layers make, to check the binary's loader against):

  * a folder holding an OCI image layout (`oci-layout`, `index.json`);
  * a tarball of one: an OCI archive, or a `docker save` archive
    (`manifest.json`), which is what `micatool image` writes too;
  * otherwise a registry reference (`gcr.io/distroless/base-debian12`,
    `127.0.0.1:5000/base:1`, `name@sha256:...`), pulled with registry.py.

A layout or archive may hold one image or a multi-platform index; each
platform the build asks for must be in it.
"""

from __future__ import annotations

import hashlib
import io
import json
import pathlib
import tarfile
from collections.abc import Callable

from .. import progress
from . import registry
from .image import (OCI_CONFIG, OCI_INDEX, OCI_LAYER_GZIP, OCI_LAYER_TAR, OCI_MANIFEST,
                    BaseLayers, ImageError, blob_path)

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
# Docker's names for the same bytes: the layer is kept, only its descriptor
# speaks OCI, so its digest does not change.
LAYER_TYPES = {
    OCI_LAYER_TAR: OCI_LAYER_TAR,
    OCI_LAYER_GZIP: OCI_LAYER_GZIP,
    "application/vnd.docker.image.rootfs.diff.tar": OCI_LAYER_TAR,
    "application/vnd.docker.image.rootfs.diff.tar.gzip": OCI_LAYER_GZIP,
}
# A suitable public base: glibc and nothing to run but what it is given.
SUGGESTED_BASE = "gcr.io/distroless/base-nossl-debian12"

Fetch = Callable[[str], bytes]  # digest -> verified bytes


def load_base(name: str, platforms: list[str]) -> dict[str, BaseLayers]:
    """The base `name` (a folder, a tarball or a registry reference), one
    BaseLayers per platform in `platforms`."""
    path = pathlib.Path(name)
    if path.is_dir() or path.is_file():
        with progress.step(f"reading the base {name}"):
            if path.is_dir():
                return from_layout(name, folder_reader(path), platforms)
            return from_tarball(name, path, platforms)
    if name.startswith((".", "/")) or not registry.looks_like_reference(name):
        raise ImageError(f"the base {name} is neither a folder, a file nor a registry reference")
    with progress.step(f"fetching the base {name}", done=f"fetched the base {name}"):
        return from_registry(name, platforms)


# ---------------------------------------------------------------- local sources


def folder_reader(root: pathlib.Path) -> Callable[[str], bytes | None]:
    def read(member: str) -> bytes | None:
        try:
            return (root / member).read_bytes()
        except OSError:
            return None
    return read


def from_tarball(name: str, path: pathlib.Path, platforms: list[str]) -> dict[str, BaseLayers]:
    try:
        with tarfile.open(path) as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            contents = {n: tar.extractfile(m).read() for n, m in members.items()}
    except (OSError, tarfile.TarError) as e:
        raise ImageError(f"cannot read the base {name}: {e}") from None
    if "index.json" in contents:
        return from_layout(name, contents.get, platforms)
    if "manifest.json" in contents:
        return from_docker_archive(name, contents, platforms)
    raise ImageError(f"the base {name} is a tarball with neither index.json (OCI) nor manifest.json (docker save)")


def from_layout(name: str, read: Callable[[str], bytes | None], platforms: list[str]) -> dict[str, BaseLayers]:
    """An OCI layout whose index.json names one image (an index or a manifest)."""
    top = parse_json(name, "index.json", read("index.json"))
    entries = top.get("manifests") or []
    if len(entries) != 1:
        raise ImageError(f"the base {name} holds {len(entries)} images; give a layout or archive with one")

    def fetch(digest: str) -> bytes:
        data = read(blob_path(digest))
        if data is None:
            raise ImageError(f"the base {name} lacks the blob {digest}")
        return verified(name, digest, data)
    return select_platforms(name, None, entries[0], fetch, platforms)


def from_docker_archive(name: str, contents: dict[str, bytes], platforms: list[str]) -> dict[str, BaseLayers]:
    """A `docker save` archive: each entry a config and uncompressed layers by path."""
    found = {}
    for entry in parse_json(name, "manifest.json", contents["manifest.json"]):
        config_bytes = contents.get(entry.get("Config", ""))
        if config_bytes is None:
            raise ImageError(f"the base {name} lacks its config {entry.get('Config')}")
        config = parse_json(name, entry["Config"], config_bytes)
        platform = f"{config.get('os')}/{config.get('architecture')}"
        layers, blobs = [], {}
        for layer_path in entry.get("Layers", []):
            data = contents.get(layer_path)
            if data is None:
                raise ImageError(f"the base {name} lacks its layer {layer_path}")
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            blobs[digest] = data
            kind = OCI_LAYER_GZIP if data[:2] == b"\x1f\x8b" else OCI_LAYER_TAR  # docker save leaves them as pulled
            layers.append({"mediaType": kind, "digest": digest, "size": len(data)})
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "layers": layers,
                    "config": {"mediaType": OCI_CONFIG, "size": len(config_bytes),
                               "digest": "sha256:" + hashlib.sha256(config_bytes).hexdigest()}}
        manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        found.setdefault(platform, base_layers(name, None, "sha256:" + hashlib.sha256(manifest_bytes).hexdigest(),
                                               manifest, config, blobs.__getitem__))
    return pick(name, found, platforms)


# ---------------------------------------------------------------- a registry


def from_registry(name: str, platforms: list[str]) -> dict[str, BaseLayers]:
    """registry.py speaks the API; the documents and blobs it brings are read here, each checked
    against its digest."""
    pulled = registry.pull_base(name)
    top = parse_json(name, pulled.reference, pulled.body)
    platform_manifests = {m.get("digest") for m in top.get("manifests", [])}  # an index's; a manifest has none

    def fetch(digest: str) -> bytes:
        if digest == pulled.digest:
            return pulled.body
        return verified(name, digest, pulled.fetch("manifests" if digest in platform_manifests else "blobs", digest))

    return select_platforms(name, pulled.reference, {"digest": pulled.digest, "mediaType": top.get("mediaType")},
                            fetch, platforms)


# ---------------------------------------------------------------- manifests to layers


def select_platforms(name: str, reference: str | None, descriptor: dict, fetch: Fetch,
                     platforms: list[str]) -> dict[str, BaseLayers]:
    """From the descriptor of an index or a manifest, each wanted platform's layers."""
    document = parse_json(name, descriptor["digest"], fetch(descriptor["digest"]))
    kind = document.get("mediaType") or descriptor.get("mediaType")
    if kind in INDEX_TYPES or "manifests" in document:
        found = {}
        for entry in document.get("manifests", []):
            field = entry.get("platform", {})
            platform = f"{field.get('os')}/{field.get('architecture')}"
            if platform in platforms and platform not in found:
                found[platform] = manifest_layers(name, reference, entry["digest"], fetch)[1]
        return pick(name, found, platforms)
    platform, layers = manifest_layers(name, reference, descriptor["digest"], fetch)
    return pick(name, {platform: layers}, platforms)


def manifest_layers(name: str, reference: str | None, digest: str, fetch: Fetch) -> tuple[str, BaseLayers]:
    manifest = parse_json(name, digest, fetch(digest))
    if manifest.get("mediaType", OCI_MANIFEST) not in MANIFEST_TYPES:
        raise ImageError(f"the base {name} has a manifest of type {manifest.get('mediaType')}, "
                         "neither OCI's nor Docker's v2")
    config = parse_json(name, manifest["config"]["digest"], fetch(manifest["config"]["digest"]))
    platform = f"{config.get('os')}/{config.get('architecture')}"
    return platform, base_layers(name, reference, digest, manifest, config, fetch)


def base_layers(name: str, reference: str | None, digest: str, manifest: dict, config: dict,
                fetch: Fetch) -> BaseLayers:
    layers, blobs = [], {}
    for desc in manifest.get("layers", []):
        kind = LAYER_TYPES.get(desc.get("mediaType"))
        if kind is None:
            raise ImageError(f"the base {name} has a layer of type {desc.get('mediaType')}; "
                             "micatool reads tar and tar+gzip layers")
        layers.append({"mediaType": kind, "digest": desc["digest"], "size": desc["size"]})
        blobs[desc["digest"]] = fetch(desc["digest"])
    diff_ids = tuple(config.get("rootfs", {}).get("diff_ids", []))
    if len(diff_ids) != len(layers):
        raise ImageError(f"the base {name} lists {len(diff_ids)} diff_ids for {len(layers)} layers")
    history = tuple(h for h in config.get("history", []) if isinstance(h, dict))
    files = merged_files(name, [blobs[d["digest"]] for d in layers])
    return BaseLayers(name, reference, digest, tuple(layers), diff_ids, history, blobs, files)


def pick(name: str, found: dict, platforms: list[str]) -> dict[str, BaseLayers]:
    missing = [p for p in platforms if p not in found]
    if missing:
        have = ", ".join(sorted(found)) or "none"
        raise ImageError(f"the base {name} has no {', '.join(missing)} image (it has: {have})")
    return {p: found[p] for p in platforms}


def merged_files(name: str, layers: list[bytes]) -> dict[str, str]:
    """The file system the layers make, bottom first: path -> symlink target
    ('' for anything else), with OCI whiteouts applied."""
    files: dict[str, str] = {}
    for data in layers:
        try:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for member in tar.getmembers():
                    path = member.name.removeprefix("./").strip("/")
                    folder, _, leaf = path.rpartition("/")
                    if leaf == ".wh..wh..opq":
                        prefix = folder + "/"
                        files = {p: t for p, t in files.items() if not p.startswith(prefix)}
                    elif leaf.startswith(".wh."):
                        gone = "/".join(filter(None, [folder, leaf[4:]]))
                        files = {p: t for p, t in files.items() if p != gone and not p.startswith(gone + "/")}
                    elif path:
                        files[path] = member.linkname if member.issym() else ""
                        while "/" in path:  # a tar need not list the folders it fills; unpacking makes them
                            path = path.rpartition("/")[0]
                            files.setdefault(path, "")
        except tarfile.TarError as e:
            raise ImageError(f"the base {name} has a layer that is not a tar: {e}") from None
    return files


def parse_json(name: str, what: str, data: bytes | None):
    if data is None:
        raise ImageError(f"the base {name} lacks {what}")
    try:
        return json.loads(data)
    except ValueError:
        raise ImageError(f"the base {name} has {what} that is not JSON") from None


def verified(name: str, digest: str, data: bytes) -> bytes:
    algorithm, _, expected = digest.partition(":")
    if algorithm != "sha256" or hashlib.sha256(data).hexdigest() != expected:
        raise ImageError(f"the base {name} has a blob whose bytes do not match its digest {digest}")
    return data
