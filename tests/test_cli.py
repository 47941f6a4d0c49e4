"""The command line: what it writes, where, and what the program it runs is given."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
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


@pytest.fixture(scope="session")
def runtime_built():
    """This machine's runtime at the checked tier, so that a test's build of hello is
    quick and says nothing, whichever test runs first on an empty cache."""
    from micatool import targets
    from micatool.link.build import runtime_library

    runtime_library(targets.native(), "checked")


@pytest.fixture
def hello(tmp_path, runtime_built) -> Path:
    path = tmp_path / "hello.mica"
    path.write_text(HELLO)
    return path


def test_build_follows_a_symlink_and_keeps_it(hello, tmp_path):
    (tmp_path / "app").symlink_to("real-app")
    assert micatool("build", str(hello), "-o", str(tmp_path / "app")).returncode == 0
    assert (tmp_path / "app").is_symlink() and (tmp_path / "real-app").is_file()
    assert subprocess.run([str(tmp_path / "app")], capture_output=True, text=True).stdout == "hello\n"


def test_build_symbols_keeps_what_a_profiler_reads_and_the_same_output(hello, tmp_path):
    """--symbols keeps the symbol table (the program's and the runtime's functions) and
    line tables at the fast tier, which strips them otherwise; the program runs the same."""
    from elftools.elf.elffile import ELFFile

    def functions(binary: Path) -> set[str]:
        with binary.open("rb") as f:
            table = ELFFile(f).get_section_by_name(".symtab")
            return {s.name for s in table.iter_symbols()} if table else set()

    def has_lines(binary: Path) -> bool:
        with binary.open("rb") as f:
            return ELFFile(f).get_section_by_name(".debug_line") is not None

    plain, profiled = tmp_path / "plain", tmp_path / "profiled"
    assert micatool("build", "--tier", "fast", str(hello), "-o", str(plain)).returncode == 0
    assert micatool("build", "--tier", "fast", "--symbols", str(hello), "-o", str(profiled)).returncode == 0
    assert functions(plain) == set() and not has_lines(plain)
    assert {"mica_program", "mica_writeln", "mica_trap"} <= functions(profiled) and has_lines(profiled)
    for binary in (plain, profiled):
        assert subprocess.run([str(binary)], capture_output=True, text=True).stdout == "hello\n"


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
    for wrong in (tmp_path / "missing", tmp_path):  # the program's own trouble comes first
        done = micatool("build", str(wrong), cwd=tmp_path)
        assert (done.returncode, done.stderr) == (1, f"micatool: error: '{wrong}' is not a Mica source file: its "
                                                     f"name must end in .mica\n")


def test_run_gives_the_program_only_what_follows_the_separator(tmp_path):
    program = tmp_path / "arguments.mica"
    program.write_text(ARGUMENTS)
    done = micatool("run", str(program), "--tier", "debug", "--", "z", "--tier")
    assert (done.returncode, done.stdout) == (0, "[z][--tier] 2 []\n")
    done = micatool("run", str(program), "stray")
    assert done.returncode == 2 and "unrecognized arguments: stray" in done.stderr


def test_a_cross_build_is_named_for_its_machine_beside_the_native_one(hello):
    """Without -o, a build for another machine cannot replace this machine's binary."""
    from micatool.targets import TARGETS, native

    other = next(t for t in TARGETS.values() if t != native())
    assert micatool("build", "hello.mica", cwd=hello.parent).returncode == 0
    done = micatool("build", "--target", other.name, "hello.mica", cwd=hello.parent)
    machine = other.name.split("-")[0]
    assert (done.returncode, done.stderr.splitlines()[-1]) == (0, f"wrote hello-{machine} (for {other.name})")
    with (hello.parent / "hello").open("rb") as native_binary, (hello.parent / f"hello-{machine}").open("rb") as cross:
        assert native_binary.read(20)[18] != cross.read(20)[18]  # e_machine: two machines, two files


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


# ---------------------------------------------------------------- behaving like cargo, zig and go

HALT = "program Stop;\nbegin\n    WriteLn('stopping');\n    Halt(7);\nend.\n"
BROKEN = "program Broken;\nbegin\n    x := 1;\nend.\n"


@pytest.mark.parametrize("words", [["-V"], ["--version"], ["version"]])
def test_the_version_is_asked_three_ways(words):
    from micatool import __version__

    done = micatool(*words)
    assert (done.returncode, done.stdout) == (0, f"micatool {__version__} (zig 0.17.1)\n")


def test_help_shows_the_commands_and_each_commands_options():
    done = micatool("help")
    assert done.returncode == 0 and "notebook" in done.stdout and "exit status: 0 done" in done.stdout
    done = micatool("help", "run")
    assert done.returncode == 0 and done.stdout.startswith("usage: micatool run ") and "--tier" in done.stdout
    done = micatool("help", "fly")
    assert done.returncode == 2 and done.stderr.startswith("micatool: error: no command 'fly'; the commands are check,")


def test_run_hands_back_the_programs_status_and_fails_with_its_own(tmp_path):
    (tmp_path / "stop.mica").write_text(HALT)
    done = micatool("run", "stop.mica", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (7, "stopping\n")
    (tmp_path / "broken.mica").write_text(BROKEN)
    done = micatool("run", "broken.mica", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (101, "")
    assert done.stderr.startswith("broken.mica:3:5: analyzer error 3001: unknown name 'x'\n")
    assert micatool("run", "missing.mica", cwd=tmp_path).returncode == 101


def test_a_program_argument_before_the_separator_gets_a_hint(hello):
    done = micatool("run", str(hello), "--steps", "5")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-2:] == [
        "micatool: error: unrecognized arguments: --steps 5",
        f"hint: a program's arguments go after --: micatool run {hello} -- --steps 5"]


KNOWN_TARGETS = "aarch64-linux, x86_64-linux, aarch64, amd64, arm64, linux/amd64, linux/arm64, x86_64, native"


@pytest.mark.parametrize("words, argument, word", [
    (["build", "--target", "riscv64"], "--target", "riscv64"),
    (["image", "--tag", "b:1", "--platform", "linux/amd64,linux/riscv64"], "--platform", "linux/riscv64"),
    (["size", "--target", "x86_64-linux,arm"], "--target", "arm"),
    (["notebook", "run", "--target", "riscv64"], "--target", "riscv64"),
])
def test_an_unknown_target_is_a_malformed_command_line(tmp_path, words, argument, word):
    """Status 2 with the usage, as argparse gives any word it cannot take, and before
    anything is compiled: the program here would not compile."""
    (tmp_path / "broken.mica").write_text(BROKEN)
    done = micatool(*words, "broken.mica", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"usage: micatool {words[0]} ")
    assert done.stderr.endswith(f"micatool {words[0]}: error: argument {argument}: unknown target '{word}'; "
                                f"choose one of: {KNOWN_TARGETS}\n")


def test_a_closed_standard_output_ends_quietly_as_cat_does(hello):
    """emit-c writes far more than a pipe holds; head takes one line and leaves."""
    done = subprocess.run(f"{sys.executable} -m micatool emit-c {hello} | head -1", shell=True,
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.count("\n") == 1


def test_check_json_is_one_object_per_diagnostic(tmp_path):
    (tmp_path / "broken.mica").write_text("program Broken;\nbegin\n    x := 1;\n    y := 2;\nend.\n")
    done = micatool("check", "--json", "broken.mica", cwd=tmp_path)
    assert done.returncode == 1
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"file": "broken.mica", "line": 3, "column": 5, "code": 3001, "message": "unknown name 'x'", "hints": []},
        {"file": "broken.mica", "line": 4, "column": 5, "code": 3001, "message": "unknown name 'y'", "hints": []}]
    assert done.stderr == ""
    (tmp_path / "untracked.mica").write_text("program P;\nvar w : float64;\nbegin\n    WriteLn(Gradient(w));\nend.\n")
    done = micatool("check", "--json", "untracked.mica", cwd=tmp_path)
    assert json.loads(done.stdout)["hints"] == [{"kind": "help", "text": "declare 'w' tracked: 'w : tracked float64'"}]
    (tmp_path / "fine.mica").write_text(HELLO)
    done = micatool("check", "--json", "fine.mica", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_size_json_gives_the_sizes_and_the_budgets(tmp_path):
    (tmp_path / "hello").mkdir()
    (tmp_path / "hello" / "hello.mica").write_text(HELLO)
    budgets = tmp_path / "budgets.toml"
    budgets.write_text("[examples.hello]\nx86_64 = 1\n")
    done = micatool("size", "--json", "--target", "x86_64-linux", "--check", str(budgets), "hello/hello.mica",
                    cwd=tmp_path)
    row, budget = map(json.loads, done.stdout.splitlines())  # one object per size row, then per budget row
    assert (row["program"], row["target"]) == ("hello", "x86_64") and row["file"] > row["text"] > 0
    assert budget == {"example": "hello", "target": "x86_64", "base": 1, "now": row["file"],
                      "delta": f"{row['file'] - 1:+,}", "verdict": "OVER"}
    assert done.returncode == 1


def test_an_output_in_a_missing_folder_is_an_error_as_ccs_is(hello, tmp_path):
    done = micatool("build", str(hello), "-o", str(tmp_path / "no" / "such" / "app"))
    assert done.returncode == 1 and not (tmp_path / "no").exists()
    assert done.stderr == (f"micatool: error: cannot write '{tmp_path / 'no' / 'such' / 'app'}': "
                           f"the folder '{tmp_path / 'no' / 'such'}' does not exist\n")


def in_a_terminal(args: list[str], env: dict, stop_at: str | None = None) -> tuple[int, str]:
    """Run micatool with standard error on a pseudo-terminal; what it showed there.
    Once it has shown `stop_at`, it is sent SIGTERM."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "micatool", *args], stdout=subprocess.DEVNULL,
                               stderr=follower, env=env)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal's last writer is gone
            break
        if not chunk:
            break
        shown += chunk
        if stop_at is not None and stop_at.encode() in shown:
            process.send_signal(signal.SIGTERM)
            stop_at = None
    os.close(leader)
    return process.wait(timeout=300), shown.decode(errors="replace")


def screen_lines(shown: str) -> set[str]:
    """The lines a terminal showed, without the escapes that drew and erased them."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", re.sub(r"\x1b\[[0-9;]*m", "", shown))  # colours, then moves
    return {line.rstrip() for line in re.split(r"[\r\n]", plain) if line.strip()}


def test_a_spinner_shows_on_a_terminal_only(hello, tmp_path):
    """Not with --quiet, not under CI, not on a pipe, where a quick build says nothing."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    code, shown = in_a_terminal(["build", str(hello), "-o", str(tmp_path / "app")], env)
    assert code == 0 and "compiling for x86_64-linux (checked)" in shown
    code, shown = in_a_terminal(["build", "--quiet", str(hello), "-o", str(tmp_path / "app")], env)
    assert (code, shown) == (0, "")
    code, shown = in_a_terminal(["build", str(hello), "-o", str(tmp_path / "app")], dict(env, CI="true"))
    assert (code, shown) == (0, "")
    done = micatool("build", str(hello), "-o", str(tmp_path / "app"))
    assert (done.returncode, done.stderr) == (0, "")


def test_on_a_pipe_a_long_step_says_when_it_starts_and_how_long_it_took(capsys, monkeypatch):
    """A quick step (no `done`) says nothing there; --quiet silences a long one too."""
    from micatool import progress
    from micatool.cli import main

    with progress.step("fetching the base b", done="fetched the base b"), progress.step("writing b.tar"):
        pass
    assert re.fullmatch(r"micatool: fetching the base b\nmicatool: fetched the base b in [0-9]+\.[0-9] s\n",
                        capsys.readouterr().err)
    monkeypatch.setattr(progress, "_quiet", False)
    progress.quiet(True)
    with progress.step("fetching the base b", done="fetched the base b"):
        pass
    assert capsys.readouterr().err == ""
    assert main(["version"]) == 0  # a command without -q speaks again, whatever ran before it in this process
    assert not progress._quiet


def test_a_first_builds_hint_is_whole_on_an_80_column_terminal(hello, tmp_path):
    """An empty cache: the runtime's step and its hint on a terminal 80 columns wide
    (rich's width, from COLUMNS), each whole on a line that fits; stopped once shown."""
    from micatool import targets

    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(COLUMNS="80", MICA_CACHE_DIR=str(tmp_path / "cache"))
    hint = "a target's first build takes about a minute"
    code, shown = in_a_terminal(["build", str(hello), "-o", str(tmp_path / "app")], env, stop_at=hint)
    assert code == 128 + signal.SIGTERM
    lines = screen_lines(shown)
    assert hint in {line.strip() for line in lines}
    step = f"building the runtime for {targets.native().name} (checked)"
    assert any(re.fullmatch(rf". {re.escape(step)} +0:00:\d\d", line) for line in lines), lines
    assert max(map(len, lines)) <= 80 and "\u2026" not in shown


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_build_leaves_nothing_in_the_temporary_folder(hello, tmp_path, stop):
    """SIGTERM or Ctrl-C during a cold build (its own cache: the runtime takes seconds),
    which has said, on a pipe, what it started and no more."""
    from micatool import targets

    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp), MICA_CACHE_DIR=str(tmp_path / "cache"))
    build = subprocess.Popen([sys.executable, "-m", "micatool", "build", str(hello), "-o", str(tmp_path / "app")],
                             env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(temp.glob("mica-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(temp.glob("mica-*")), "the build made no folder to stop it in"
    build.send_signal(stop)
    assert build.wait(timeout=120) == 128 + stop
    assert build.stderr.read() == (f"micatool: building the runtime for {targets.native().name} (checked); "
                                   "a target's first build takes about a minute\n")
    assert list(temp.iterdir()) == [] and not (tmp_path / "app").exists()


def test_a_build_sweeps_folders_a_killed_build_left_a_day_ago(hello, tmp_path):
    temp = tmp_path / "tmp"
    stale, fresh = temp / "mica-build-stale", temp / "mica-build-fresh"
    for folder in (stale, fresh):
        (folder / "inner").mkdir(parents=True)
    two_days_ago = time.time() - 2 * 86400
    os.utime(stale, (two_days_ago, two_days_ago))
    done = subprocess.run([sys.executable, "-m", "micatool", "build", str(hello), "-o", str(tmp_path / "app")],
                          env=dict(os.environ, TMPDIR=str(temp)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in temp.iterdir()) == ["mica-build-fresh"]


def _interrupted_while_importing(command: list[str], delay: float, cwd: Path) -> tuple[int, list[str]]:
    """`command` (a Python script and its arguments) run under -X importtime, which
    names each module on stderr as its import ends; SIGINT `delay` seconds after
    micatool.start's. The status, and stderr without the import times."""
    process = subprocess.Popen([sys.executable, "-X", "importtime", *command], cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    said = []
    for line in process.stderr:
        said.append(line)
        if line.rstrip().endswith("| micatool.start"):
            break
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    said += process.stderr.readlines()
    process.wait(timeout=60)
    return process.returncode, [line for line in said if not line.startswith("import time:")]


@pytest.mark.parametrize("delay", [0.01, 0.05, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("way", ["script", "module"])
def test_a_ctrl_c_at_any_moment_ends_quietly_with_130(tmp_path, way, delay):
    """From the moment micatool's first module is in, whether cli.py (a third of a
    second) is still importing or `check` is already waiting to read its source, a
    FIFO that no one writes: the status of an interrupt, and not a word."""
    os.mkfifo(tmp_path / "waits.mica")
    script = str(Path(sys.executable).with_name("micatool")) if way == "script" else "-m micatool"
    status, said = _interrupted_while_importing([*script.split(), "check", "waits.mica"], delay, tmp_path)
    assert (status, said) == (130, [])


def test_an_interrupt_python_wrapped_is_still_an_interrupt():
    """Python 3.11 wraps a KeyboardInterrupt raised in a class's __set_name__ (a lazy
    import during a command) in a RuntimeError: it ends micatool as the interrupt would."""
    from micatool.cli import report

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise RuntimeError("Error calling __set_name__") from e
    except RuntimeError as wrapped:
        assert report(wrapped) == 130


def test_the_version_to_a_closed_or_full_standard_output():
    """Closed: nothing to write to, nothing said. Full: said, status 1, no traceback."""
    closed = subprocess.run([sys.executable, "-m", "micatool", "--version"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, timeout=300, preexec_fn=lambda: os.close(1))
    assert (closed.returncode, closed.stderr) == (0, "")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "micatool", "--version"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300)
    assert done.returncode == 1 and done.stderr.startswith("micatool: error: ")
    assert done.stderr.endswith(": No space left on device\n") and done.stderr.count("\n") == 1


def test_run_hands_a_stop_signal_to_its_program_which_keeps_its_output(tmp_path):
    """SIGTERM to `micatool run` reaches the program, whose handler flushes what it
    printed to the pipe before it dies; micatool ends as the program did."""
    (tmp_path / "spin.mica").write_text("program Spin;\nbegin\n    WriteLn('trained a step');\n"
                                        "    WriteFile(ParamStr(1), 'ready');\n    while Clock() >= 0.0 do\n"
                                        "        ;\nend.\n")
    ready = tmp_path / "ready"
    done = micatool("build", "spin.mica", cwd=tmp_path)  # built and cached before the clock starts
    assert done.returncode == 0, done.stderr
    process = subprocess.Popen([sys.executable, "-m", "micatool", "run", "spin.mica", "--", str(ready)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the program never got ready"
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert (process.returncode, out, err) == (128 + signal.SIGTERM, "trained a step\n", "")


def test_a_cache_lock_the_file_system_refuses_still_lets_the_build_run(tmp_path, monkeypatch):
    """cache.held_alone guards a runtime's build; where flock fails (some NFS), the build
    goes on unguarded rather than failing."""
    import fcntl

    from micatool.cache import held_alone

    def refuse(fd, operation):
        raise OSError(37, "No locks available")

    ran = []
    monkeypatch.setattr(fcntl, "flock", refuse)
    with held_alone(tmp_path / "cache" / "building.lock"):
        ran.append(True)
    assert ran == [True] and (tmp_path / "cache" / "building.lock").exists()
