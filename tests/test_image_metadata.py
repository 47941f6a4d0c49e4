"""The conventional OCI metadata of `micatool image`: created (from
SOURCE_DATE_EPOCH), source and revision (from git), title; `--label` into
each config, `--annotation` onto each manifest and the index; and the same
digest for every build of one commit. skopeo reads each image written.
"""

from __future__ import annotations

import json
import subprocess
import tarfile

import pytest

from docker_env import skopeo  # noqa: F401 (fixture)
from helpers import EXAMPLES
from micatool.cli import main
from micatool.link import image

EPOCH = "1700000000"
TAG = "mica/words:1"


def git(folder, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin"}).stdout.strip()


@pytest.fixture()
def repository(tmp_path):
    """words.mica committed in a fresh repository whose origin carries a token."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "words.mica").write_bytes((EXAMPLES / "words" / "words.mica").read_bytes())
    git(folder, "init", "-q")
    git(folder, "remote", "add", "origin", "https://user:token@git.example.org/team/words.git")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "words")
    return folder


def build(program, out, monkeypatch, *extra: str) -> dict:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    assert main(["image", str(program), "--tag", TAG, "--platform", "linux/amd64", "-o", str(out), *extra]) == 0
    with tarfile.open(out) as tar:
        read = lambda digest: json.load(tar.extractfile(image.blob_path(digest)))  # noqa: E731
        top = json.load(tar.extractfile("index.json"))["manifests"][0]
        index = read(top["digest"])
        manifest = read(index["manifests"][0]["digest"])
        config = read(manifest["config"]["digest"])
    return {"digest": top["digest"], "index": index.get("annotations"), "manifest": manifest.get("annotations"),
            "labels": config["config"]["Labels"]}


def test_git_gives_source_and_revision(repository, tmp_path, monkeypatch, skopeo):
    out = tmp_path / "words.tar"
    seen = build(repository / "words.mica", out, monkeypatch, "--label", "team=ml", "--annotation", "purpose=demo")
    conventional = {image.CREATED: "2023-11-14T22:13:20Z", image.TITLE: "words",
                    image.REVISION: git(repository, "rev-parse", "HEAD"),
                    image.SOURCE: "https://git.example.org/team/words.git"}
    assert seen["labels"] == {**conventional, "team": "ml"}
    assert seen["manifest"] == seen["index"] == {**conventional, "purpose": "demo"}
    done = subprocess.run([skopeo, "inspect", f"oci-archive:{out}:{TAG}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Labels"]["team"] == "ml"


def test_one_commit_gives_one_digest(repository, tmp_path, monkeypatch):
    first = build(repository / "words.mica", tmp_path / "a.tar", monkeypatch)
    assert build(repository / "words.mica", tmp_path / "b.tar", monkeypatch)["digest"] == first["digest"]
    (repository / "README").write_text("another commit\n")
    git(repository, "add", ".")
    git(repository, "commit", "-qm", "readme")
    assert build(repository / "words.mica", tmp_path / "c.tar", monkeypatch)["digest"] != first["digest"]


def test_outside_git_only_title_and_created(tmp_path, monkeypatch):
    program = tmp_path / "words.mica"
    program.write_bytes((EXAMPLES / "words" / "words.mica").read_bytes())
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    seen = build(program, tmp_path / "w.tar", monkeypatch)
    assert seen["labels"] == {image.CREATED: "2023-11-14T22:13:20Z", image.TITLE: "words"}


def test_a_label_without_a_value_is_a_malformed_command_line(tmp_path, capsys):
    assert main(["image", str(EXAMPLES / "words" / "words.mica"), "--tag", TAG, "--label", "team",
                 "-o", str(tmp_path / "w.tar")]) == 2
    assert capsys.readouterr().err == "micatool: error: --label 'team': give KEY=VALUE\n"
