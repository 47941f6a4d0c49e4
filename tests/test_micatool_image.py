"""`micatool image` and `micatool size` on real Mica programs.

The images run under a real Docker daemon (tests/docker_env.py starts one
when it can, else these skip saying why) and must print exactly what the
program prints when it runs directly, on amd64 and on arm64 through qemu.
"""

from __future__ import annotations

import os

import pytest

from docker_env import arm64_emulation, docker, docker_daemon, docker_held, holding  # noqa: F401 (fixtures)
from helpers import EXAMPLES, build, example_programs, run
from micatool.cli import main

PROGRAM = EXAMPLES / "words" / "words.mica"
TAG = f"mica-test-words:{os.getpid()}"


@pytest.fixture(scope="module")
def image_tar(tmp_path_factory):
    out = tmp_path_factory.mktemp("image") / "words.tar"
    assert main(["image", str(PROGRAM), "--tag", TAG, "-o", str(out)]) == 0
    return out


def test_two_builds_give_the_same_digest(image_tar, tmp_path, capsys):
    capsys.readouterr()
    again = tmp_path / "again.tar"
    assert main(["image", str(PROGRAM), "--tag", TAG, "-o", str(again)]) == 0
    assert again.read_bytes() == image_tar.read_bytes()


@pytest.fixture(scope="module")
def loaded(docker_daemon, image_tar):
    with holding() as held:
        done = held.load(image_tar)
        assert done.returncode == 0, done.stderr
        yield


@pytest.mark.docker
def test_the_amd64_container_prints_what_the_program_prints(loaded, docker_held):
    expected = run(build(PROGRAM, tier="fast")).stdout
    done = docker_held.run(TAG + "-amd64", "--platform", "linux/amd64")
    assert (done.returncode, done.stdout) == (0, expected)


@pytest.mark.docker
def test_the_arm64_container_prints_the_same(loaded, arm64_emulation, docker_held):
    expected = run(build(PROGRAM, tier="fast")).stdout
    done = docker_held.run(TAG + "-arm64", "--platform", "linux/arm64")
    assert (done.returncode, done.stdout) == (0, expected)


@pytest.mark.docker
def test_the_container_runs_as_nobody_without_a_shell(loaded, docker_held):
    user = docker("image", "inspect", "--format", "{{.Config.User}}", TAG + "-amd64").stdout.strip()
    assert user == "65534:65534"
    assert docker_held.run(TAG + "-amd64", "--entrypoint", "/bin/sh").returncode != 0


def test_size_check_fails_past_a_budget(tmp_path, capsys):
    budgets = tmp_path / "budgets.toml"
    budgets.write_text("[examples.words]\nx86_64 = 1000\n")
    assert main(["size", str(PROGRAM), "--target", "x86_64-linux", "--check", str(budgets)]) == 1
    assert "OVER" in capsys.readouterr().out
    budgets.write_text("[examples.words]\nx86_64 = 10000000\n")
    assert main(["size", str(PROGRAM), "--target", "x86_64-linux", "--check", str(budgets)]) == 0


def test_the_shipped_examples_fit_their_budgets(capsys):
    programs = [str(p) for p in example_programs()]
    assert main(["size", *programs, "--check", str(EXAMPLES.parent / "images" / "budgets.toml")]) == 0
    assert "no budget" not in capsys.readouterr().out  # every shipped example has one
