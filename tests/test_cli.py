"""The command line: what it writes, where, and what the program it runs is given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HELLO = "program Hello;\nbegin\n    WriteLn('hello');\nend.\n"
ARGUMENTS = """program Arguments;
var i : integer;
begin
    for i := 1 to ParamCount do
        Write('[', ParamStr(i), ']');
    WriteLn(' ', ParamCount, ' [', ParamStr(ParamCount + 1), ']');
end.
"""


def micatool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "micatool", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.fixture
def hello(tmp_path) -> Path:
    path = tmp_path / "hello.mica"
    path.write_text(HELLO)
    return path


def test_build_follows_a_symlink_and_keeps_it(hello, tmp_path):
    (tmp_path / "app").symlink_to("real-app")
    assert micatool("build", str(hello), "-o", str(tmp_path / "app")).returncode == 0
    assert (tmp_path / "app").is_symlink() and (tmp_path / "real-app").is_file()
    assert subprocess.run([str(tmp_path / "app")], capture_output=True, text=True).stdout == "hello\n"


def test_build_writes_through_a_device_instead_of_replacing_it(hello):
    if not os.path.exists("/dev/null") or os.path.isfile("/dev/null"):
        pytest.skip("no /dev/null device here")
    assert micatool("build", str(hello), "-o", "/dev/null").returncode == 0
    assert not os.path.isfile("/dev/null")


def test_an_output_that_is_a_directory_is_one_plain_message(hello, tmp_path):
    (tmp_path / "out").mkdir()
    done = micatool("build", str(hello), "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr == f"micatool: error: {tmp_path / 'out'}: Is a directory\n"


def test_a_source_must_be_named_mica_and_is_never_overwritten(hello, tmp_path):
    plain = tmp_path / "prog"
    plain.write_text(HELLO)
    done = micatool("build", str(plain), cwd=tmp_path)
    assert (done.returncode, plain.read_text()) == (1, HELLO)
    done = micatool("check", str(plain))
    assert (done.returncode, done.stderr) == (1, f"micatool: error: '{plain}' is not a Mica source file: its name "
                                                 f"must end in .mica\n")
    done = micatool("build", str(hello), "-o", str(hello))
    assert (done.returncode, hello.read_text()) == (1, HELLO)
    assert "would overwrite its own source" in done.stderr


def test_debug_binaries_are_the_same_bytes_every_build(hello, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        assert micatool("build", "--tier", "debug", str(hello), "-o", str(out)).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    assert b"mica-build-" not in first.read_bytes()


def test_run_gives_the_program_only_what_follows_the_separator(tmp_path):
    program = tmp_path / "arguments.mica"
    program.write_text(ARGUMENTS)
    done = micatool("run", str(program), "--tier", "debug", "--", "z", "--tier")
    assert (done.returncode, done.stdout) == (0, "[z][--tier] 2 []\n")
    done = micatool("run", str(program), "stray")
    assert done.returncode == 2 and "unrecognized arguments: stray" in done.stderr


def test_a_file_name_that_is_not_utf8_builds(tmp_path):
    program = Path(os.fsdecode(bytes(tmp_path) + b"/h\xffx.mica"))
    program.write_text(HELLO)
    done = micatool("run", str(program))
    assert (done.returncode, done.stdout) == (0, "hello\n")


def test_size_names_a_program_by_its_folder_from_inside_it(tmp_path):
    folder = tmp_path / "hello"
    folder.mkdir()
    (folder / "hello.mica").write_text(HELLO)
    (tmp_path / "budgets.toml").write_text("[examples.hello]\nx86_64 = 100\n")
    done = micatool("size", "hello.mica", "--target", "x86_64-linux", "--check", "../budgets.toml", cwd=folder)
    assert done.returncode == 1 and "OVER" in done.stdout
