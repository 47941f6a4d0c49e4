"""How micatool reads registry references and Docker's credentials, without a registry."""

from __future__ import annotations

import base64
import json

import pytest

from micatool.link import registry
from micatool.link.image import ImageError


@pytest.mark.parametrize("text, parts", [
    ("gcr.io/distroless/base-nossl-debian12", ("gcr.io", "distroless/base-nossl-debian12", "latest", None)),
    ("ubuntu", ("docker.io", "library/ubuntu", "latest", None)),
    ("team/app:2", ("docker.io", "team/app", "2", None)),
    ("127.0.0.1:5000/ml/gpt:1", ("127.0.0.1:5000", "ml/gpt", "1", None)),
    ("localhost/app@sha256:" + "a" * 64, ("localhost", "app", None, "sha256:" + "a" * 64)),
])
def test_references(text, parts):
    ref = registry.parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == parts


def test_bad_references_are_refused():
    with pytest.raises(ImageError, match="a digest is sha256: and 64 hex digits"):
        registry.parse_reference("app@sha256:abc")
    with pytest.raises(ImageError, match="give a tag to push to, not a digest"):
        registry.push_target("127.0.0.1:5000/app@sha256:" + "0" * 64)


@pytest.mark.parametrize("host, plain_http", [
    ("127.0.0.1:5000", True), ("127.8.0.3", True), ("[::1]:5000", True), ("localhost:80", True),
    ("gcr.io", False), ("10.0.0.1:5000", False), ("registry.example.org:443", False),
])
def test_only_the_loopback_is_spoken_to_over_plain_http(host, plain_http):
    assert registry.is_loopback(host) is plain_http


def test_credentials_come_from_docker_config(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    auth = base64.b64encode(b"ana:pass:with:colons").decode()
    (tmp_path / "config.json").write_text(json.dumps({"auths": {
        "https://registry.example.org": {"auth": auth},
        registry.DOCKER_HUB_AUTH_KEY: {"username": "hub", "password": "pw"}}}))
    assert registry.credentials("registry.example.org") == ("ana", "pass:with:colons")
    assert registry.credentials("docker.io") == ("hub", "pw")
    assert registry.credentials("gcr.io") is None
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(registry.RegistryError, match=r"cannot read the credentials in .*config.json"):
        registry.credentials("gcr.io")


def test_push_flags_that_do_not_fit_are_told_before_building(tmp_path, capsys):
    from helpers import EXAMPLES
    from micatool.cli import main

    words = str(EXAMPLES / "words" / "words.mica")
    # a malformed command line, status 2, as for a word argparse refuses
    assert main(["image", words, "--tag", "w:1", "--overwrite", "-o", str(tmp_path / "w.tar")]) == 2
    assert capsys.readouterr().err == "micatool: error: --overwrite moves a registry tag: it goes with --push\n"
    assert main(["image", words, "--tag", "w:1", "--push", "127.0.0.1:5000/w:1", "--load"]) == 2
    assert capsys.readouterr().err == "micatool: error: --load hands Docker the tarball: give -o as well as --push\n"
    assert main(["image", words, "--tag", "w:1", "--push", "127.0.0.1:5000/W:1"]) == 2
    assert "is not a tag Docker accepts" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
