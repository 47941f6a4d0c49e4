"""Registries: push an image and pull a base over the OCI distribution API,
with Python's standard library and no daemon, as ko does.

Push (`push_image`): every blob the registry lacks (a HEAD per blob says which
it has; a base's layers are mounted from the base's repository when it is on
the same registry), then each platform's manifest by digest, and the index under the
tag last. An interrupted push therefore leaves blobs and untagged manifests
behind, never a tag naming a partial image. A tag that already names another
image is refused unless `overwrite`; the same image again is a no-op.

Pull (`pull_base`): the manifest by tag or digest, and a way to fetch each
wanted platform's manifest, config and layers, which bases.py reads and
checks against their digests (it knows the formats; this module the API).

Credentials come from Docker's config (`$DOCKER_CONFIG/config.json`, else
`~/.docker/config.json`, its `auths` entries). A registry that answers 401
says how it wants them (WWW-Authenticate): Basic, or Bearer with a token
service, which is asked for a token for the repository's scope. Hosts on the
loopback (localhost, 127.0.0.0/8, ::1) are spoken to over plain HTTP, as
Docker does; every other host over HTTPS.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import ipaddress
import json
import os
import pathlib
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from .image import (BASE_NAME, OCI_INDEX, OCI_MANIFEST, Image, ImageError,
                    is_registry_host, normalize_tag, split_tag)

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
DOCKER_HUB_AUTH_KEY = "https://index.docker.io/v1/"
ACCEPT = ", ".join([OCI_INDEX, OCI_MANIFEST, "application/vnd.docker.distribution.manifest.list.v2+json",
                    "application/vnd.docker.distribution.manifest.v2+json"])
TIMEOUT_S = 60
CHALLENGE_RE = re.compile(r'(\w+)="([^"]*)"')


class RegistryError(ImageError):
    """A registry that cannot be reached or refuses; one line for the user."""


@dataclass(frozen=True)
class Reference:
    registry: str  # host[:port] as the user wrote it (docker.io for Docker Hub)
    repository: str
    tag: str | None
    digest: str | None

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}" + (f"@{self.digest}" if self.digest else f":{self.tag}")


def looks_like_reference(text: str) -> bool:
    try:
        parse_reference(text)
    except ImageError:
        return False
    return True


def parse_reference(text: str) -> Reference:
    """'host:5000/team/app:1', 'app@sha256:...', 'ubuntu' (Docker Hub's library/ubuntu:latest)."""
    name, at, digest = text.partition("@")
    if at and not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise ImageError(f"{text!r}: a digest is sha256: and 64 hex digits")
    named = normalize_tag(name)
    repository, tag = split_tag(named)
    first, slash, rest = repository.partition("/")
    if slash and is_registry_host(first):
        registry, repository = first, rest
    else:
        registry = DOCKER_HUB
        repository = repository if slash else "library/" + repository
    return Reference(registry, repository, None if at else tag, digest or None)


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1, with or without a port ('[::1]:5000')."""
    if host.startswith("["):
        name = host[1:host.find("]")]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------- credentials


def docker_config_path() -> pathlib.Path:
    folder = os.environ.get("DOCKER_CONFIG")
    return pathlib.Path(folder) / "config.json" if folder else pathlib.Path.home() / ".docker" / "config.json"


def credentials(registry: str) -> tuple[str, str] | None:
    """(user, password) for the registry from Docker's config, or None."""
    path = docker_config_path()
    try:
        auths = json.loads(path.read_text()).get("auths", {})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError) as e:
        raise RegistryError(f"cannot read the credentials in {path}: {e}") from None
    keys = [registry, f"https://{registry}", f"http://{registry}", f"https://{registry}/v1/", f"https://{registry}/v2/"]
    if registry == DOCKER_HUB:
        keys.insert(0, DOCKER_HUB_AUTH_KEY)
    for key in keys:
        entry = auths.get(key)
        if not isinstance(entry, dict):
            continue
        if entry.get("auth"):
            try:
                user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                raise RegistryError(f"{path}: the auth of {key} is not base64 of user:password") from None
            return user, password
        if entry.get("username"):
            return entry["username"], entry.get("password", "")
    return None


# ---------------------------------------------------------------- talking to a registry


class Session:
    """Requests to one repository of one registry, authenticated as it asks."""

    def __init__(self, ref: Reference, actions: str):
        self.ref = ref
        self.scope = f"repository:{ref.repository}:{actions}"
        self.base = ("http://" if is_loopback(ref.api_host) else "https://") + ref.api_host
        self.login = credentials(ref.registry)
        self.authorization: str | None = None
        self.answered = False  # a failure before any answer is an unreachable registry, after one a dying one

    def url(self, path: str) -> str:
        return f"{self.base}/v2/{self.ref.repository}/{path}"

    def request(self, method: str, url: str, data: bytes | None = None, headers: dict | None = None,
                doing: str = "") -> tuple[int, http.client.HTTPMessage, bytes]:
        """(status, headers, body); a 401 is answered once with the credentials it asks for."""
        answer = self.send(method, url, data, headers, doing)
        if answer[0] == 401 and self.authenticate(answer[1].get("WWW-Authenticate", "")):
            answer = self.send(method, url, data, headers, doing)
        return answer

    def send(self, method, url, data, headers, doing) -> tuple[int, http.client.HTTPMessage, bytes]:
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        if self.authorization:
            # not carried over a redirect: blob stores that registries redirect to refuse a second login
            request.add_unredirected_header("Authorization", self.authorization)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                self.answered = True
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            self.answered = True
            return e.code, e.headers, e.read()
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise self.unreachable(e, doing) from None

    def unreachable(self, e: Exception, doing: str) -> RegistryError:
        reason = getattr(e, "reason", None) or e
        if isinstance(reason, socket.timeout):
            reason = f"no answer within {TIMEOUT_S} s"
        if isinstance(reason, ConnectionRefusedError) or not self.answered:
            return RegistryError(f"cannot reach the registry {self.ref.registry} ({reason})")
        return RegistryError(f"the registry {self.ref.registry} stopped answering while {doing} ({reason})")

    def authenticate(self, challenge: str) -> bool:
        """Set the Authorization the challenge asks for; False when none can be given."""
        scheme, _, params = challenge.partition(" ")
        fields = dict(CHALLENGE_RE.findall(params))
        if scheme.lower() == "basic":
            if self.login is None:
                return False
            self.authorization = "Basic " + base64.b64encode(":".join(self.login).encode()).decode()
            return True
        if scheme.lower() == "bearer" and "realm" in fields:
            self.authorization = "Bearer " + self.token(fields)
            return True
        return False

    def token(self, fields: dict[str, str]) -> str:
        query = {"scope": fields.get("scope") or self.scope}
        if "service" in fields:
            query["service"] = fields["service"]
        url = fields["realm"] + ("&" if "?" in fields["realm"] else "?") + urllib.parse.urlencode(query)
        request = urllib.request.Request(url)
        if self.login:
            request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(":".join(self.login).encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as e:
            raise self.refused(e.code) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
            raise RegistryError(f"the token service of {self.ref.registry} at {fields['realm']} "
                                f"gave no token ({getattr(e, 'reason', e)})") from None
        token = answer.get("token") or answer.get("access_token")
        if not token:
            raise RegistryError(f"the token service of {self.ref.registry} answered without a token")
        return token

    def refused(self, status: int) -> RegistryError:
        if status == 401 and self.login:
            return RegistryError(f"the registry {self.ref.registry} refused the login of {self.login[0]!r} "
                                 f"(from {docker_config_path()})")
        if status == 401:
            return RegistryError(f"the registry {self.ref.registry} needs a login; "
                                 f"run: docker login {self.ref.registry}")
        return RegistryError(f"the registry {self.ref.registry} denied access to {self.ref.repository} "
                             f"(HTTP {status})")

    def expect(self, answer, wanted: tuple[int, ...], doing: str):
        status, headers, body = answer
        if status in wanted:
            return answer
        if status in (401, 403):
            raise self.refused(status)
        raise RegistryError(f"the registry {self.ref.registry} answered HTTP {status} while {doing}: "
                            f"{error_text(body)}")


def error_text(body: bytes) -> str:
    """The registry's own error message, on one line."""
    try:
        errors = json.loads(body).get("errors") or []
        text = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors)
    except (ValueError, AttributeError):
        text = body.decode(errors="replace")
    return " ".join(text.split())[:300] or "no reason given"


# ---------------------------------------------------------------- push


@dataclass(frozen=True)
class Pushed:
    reference: str  # registry/repository@digest: what a cluster should pull
    uploaded: int  # blobs sent
    present: int  # blobs the registry already had
    unchanged: bool  # the tag already named this very image


def push_target(target: str) -> Reference:
    """The reference a push goes to: a tag, never a digest (the index's digest is not known to the user)."""
    ref = parse_reference(target)
    if ref.digest:
        raise ImageError(f"--push {target}: give a tag to push to, not a digest")
    return ref


def push_image(image: Image, target: str, overwrite: bool = False) -> Pushed:
    """Upload `image` and tag it `target` (registry/name:tag)."""
    ref = push_target(target)
    session = Session(ref, "pull,push")
    index_digest = image.index_digest
    current = tagged_digest(session)
    pinned = f"{ref.registry}/{ref.repository}@{index_digest}"
    if current == index_digest:
        return Pushed(pinned, 0, 0, True)
    if current is not None and not overwrite:
        raise RegistryError(f"{ref} already names another image ({current}); pass --overwrite to move the tag")
    manifests = {p.manifest_digest for p in image.platforms.values()} | {index_digest}
    base = image.annotations.get(BASE_NAME)
    mount_from = None
    if base and parse_reference(base).registry == ref.registry:
        mount_from = parse_reference(base).repository
    uploaded = present = 0
    for digest, data in sorted(image.blobs.items()):
        if digest in manifests:
            continue
        if upload_blob(session, digest, data, mount_from):
            uploaded += 1
        else:
            present += 1
    for platform in sorted(image.platforms.values(), key=lambda p: p.platform):
        put_manifest(session, platform.manifest_digest, image.blobs[platform.manifest_digest], OCI_MANIFEST)
    put_manifest(session, ref.tag, image.blobs[index_digest], OCI_INDEX)
    return Pushed(pinned, uploaded, present, False)


def tagged_digest(session: Session) -> str | None:
    """The digest the tag names now, or None when it names nothing."""
    doing = f"looking up {session.ref}"
    status, headers, _ = session.expect(
        session.request("HEAD", session.url(f"manifests/{session.ref.tag}"), headers={"Accept": ACCEPT}, doing=doing),
        (200, 404), doing)
    return headers.get("Docker-Content-Digest") if status == 200 else None


def upload_blob(session: Session, digest: str, data: bytes, mount_from: str | None) -> bool:
    """Send one blob unless the registry has it in this repository, or can
    link it from `mount_from` (the base's repository); True when it was sent."""
    doing = f"uploading {digest[:19]}"
    status, _, _ = session.expect(session.request("HEAD", session.url(f"blobs/{digest}"), doing=doing),
                                  (200, 404), doing)
    if status == 200:
        return False
    query = "?" + urllib.parse.urlencode({"mount": digest, "from": mount_from}) if mount_from else ""
    status, headers, _ = session.expect(
        session.request("POST", session.url("blobs/uploads/" + query), data=b"", doing=doing), (201, 202), doing)
    if status == 201:  # mounted: the registry had it in the base's repository
        return False
    location = urllib.parse.urljoin(session.base, headers.get("Location", ""))
    location += ("&" if "?" in location else "?") + urllib.parse.urlencode({"digest": digest})
    session.expect(session.request("PUT", location, data=data, doing=doing,
                                   headers={"Content-Type": "application/octet-stream"}), (201,), doing)
    return True


def put_manifest(session: Session, reference: str, data: bytes, media_type: str) -> None:
    doing = f"storing the manifest {reference[:19]}"
    session.expect(session.request("PUT", session.url(f"manifests/{reference}"), data=data, doing=doing,
                                   headers={"Content-Type": media_type}), (201,), doing)


# ---------------------------------------------------------------- pull


@dataclass(frozen=True)
class Pulled:
    """A base's top manifest (an index or a manifest) as its registry sent it,
    checked against the reference's digest when it names one, and the way to
    the rest: fetch(kind, digest), kind "manifests" or "blobs", the bytes as
    sent (bases.py reads them and checks each against its digest)."""

    reference: str
    digest: str
    body: bytes
    fetch: Callable[[str, str], bytes]


def pull_base(name: str) -> Pulled:
    """The base image `name` from its registry: its top manifest, and a fetcher for the rest."""
    ref = parse_reference(name)
    session = Session(ref, "pull")
    body = get(session, f"manifests/{ref.digest or ref.tag}", f"reading {ref}")
    top_digest = "sha256:" + hashlib.sha256(body).hexdigest()
    if ref.digest and top_digest != ref.digest:
        raise RegistryError(f"the registry {ref.registry} sent a manifest for {ref} whose digest is {top_digest}")
    return Pulled(str(ref), top_digest, body,
                  lambda kind, digest: get(session, f"{kind}/{digest}", f"reading {digest[:19]} of {ref}"))


def get(session: Session, path: str, doing: str) -> bytes:
    _, _, body = session.expect(session.request("GET", session.url(path), headers={"Accept": ACCEPT}, doing=doing),
                                (200,), doing)
    return body
