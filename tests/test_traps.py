"""Run-time traps: each names the Mica source line, flushes what was printed, exits 1.

And what was printed is never lost: a terminal gets it line by line, and a
pipe gets all of it when the program dies of SIGTERM, SIGINT or SIGHUP.
"""

from __future__ import annotations

import os
import pty
import resource
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import build_text, run

TRAPS = {
    "overflow": ("var i : integer;\nbegin\n  i := MaxInt;\n  WriteLn('before');\n  i := i + 1;\nend.",
                 5, "integer overflow"),
    "multiply": ("var i : integer;\nbegin\n  i := 3037000500;\n  i := i * i;\nend.", 4, "integer overflow"),
    "negate": ("var i : integer;\nbegin\n  i := -MaxInt - 1;\n  i := -i;\nend.", 4, "integer overflow"),
    "index": ("var a : array[1..3] of integer; k : integer;\nbegin\n  k := 4;\n  a[k] := 1;\nend.",
              4, "index 4 out of range 1..3"),
    "negative_index": ("var a : array[-2..-1] of integer; k : integer;\nbegin\n  k := 0;\n  a[k] := 1;\nend.",
                       4, "index 0 out of range -2..-1"),
    "tensor_index": ("var v : vector[2] of float64; k : integer;\nbegin\n  k := -1;\n  WriteLn(v[k]);\nend.",
                     4, "index -1 out of range 0..1"),
    "dynamic_index": ("var a : array of integer;\nbegin\n  SetLength(address a, 2);\n  a[2] := 5;\nend.",
                      4, "index 2 out of range 0..1"),
    "narrow": ("var b : int8; k : integer;\nbegin\n  k := 200;\n  b := k;\nend.", 4, "value 200 out of range -128..127"),
    "loop_bound": ("var b : int8;\nbegin\n  for b := 120 to 130 do Write(b, ' ');\nend.", 3,
                   "value 130 out of range -128..127"),
    "string_index": ("var s : string;\nbegin\n  s := 'abc';\n  WriteLn(s[4]);\nend.", 4,
                     "string index 4 out of range 1..3"),
    "str_to_int": ("begin\n  WriteLn(StrToInt('12x'));\nend.", 2, "'12x' is not an integer"),
    "shape": ("var m : matrix of float64; s : matrix[2, 2] of float64;\nbegin\n  SetShape(address m, 3, 2);\n  s := m;\nend.",
              4, "shape mismatch: 3 rows where 2 are needed"),
    "dynamic_row": ("var m : matrix of float64; d : vector of float64;\nbegin\n  SetShape(address m, 2, 2);\n"
                    "  d := [1.0, 2.0, 3.0];\n  m[1] := d;\nend.", 5, "shape mismatch: 3 elements where 2 are needed"),
    "dynamic_row_index": ("var m : matrix of float64;\nbegin\n  SetShape(address m, 2, 2);\n  m[2] := [1.0, 2.0];\nend.",
                          4, "index 2 out of range 0..1"),
}

EVERY_TIER = {
    "division": ("var i, j : integer;\nbegin\n  j := 0;\n  i := 7 div j;\nend.", 4, "division by zero"),
    "modulo": ("var i, j : integer;\nbegin\n  j := 0;\n  i := 7 mod j;\nend.", 4, "division by zero"),
    "trunc": ("var x : float64;\nbegin\n  x := 1e300;\n  WriteLn(Trunc(x));\nend.", 4,
              "Trunc of 1e+300 does not fit in an integer"),
    "halt": ("begin\n  WriteLn('printed');\n  Halt(256);\nend.", 3, "Halt(256): an exit status is 0 to 255"),
    "huge_length": ("var d : array of integer;\nbegin\n  SetLength(d, 4611686018427387904);\nend.", 3,
                    "out of memory: 4611686018427387904 elements of 8 bytes"),
    "huge_shape": ("var m : matrix of float64;\nbegin\n  SetShape(address m, 4294967296, 4294967296);\nend.", 3,
                   "out of memory: [4294967296, 4294967296] elements"),
    "read_file": ("begin\n  WriteLn(ReadFile('/no/such/file'));\nend.", 2,
                  "cannot read '/no/such/file': No such file or directory"),
    # the call that found no room names its line: at the checked tiers mica_enter
    # traps, at the fast tier the fault handler does, with the same words
    "recursion": ("function F(n : integer) : integer;\nbegin\n  if n = 0 then result := 0 else result := F(n - 1) + 1;\n"
                  "end;\nbegin\n  WriteLn(F(1000000000));\nend.", 3,
                  "stack overflow: recursion too deep, or static tensors too large for the 1 GiB stack"),
    # traps deep in the runtime that are given no line name the running statement's
    "huge_decimals": ("begin\n  WriteLn('x');\n  WriteLn(1.5:0:2147483647);\nend.", 3,
                      "2147483647 decimals are more than a number can print"),
}


def _program(body: str) -> str:
    return "program Trap;\n" + body + "\n"


@pytest.mark.parametrize("tier", ["debug", "checked"])
@pytest.mark.parametrize("name", sorted(TRAPS))
def test_checked_tiers_trap_with_the_line(tmp_path, name, tier):
    body, line, message = TRAPS[name]
    result = run(build_text(tmp_path, _program(body), name="trap.mica", tier=tier))
    assert result.returncode == 1
    assert result.stderr == f"trap.mica:{line + 1}: {message}\n"


@pytest.mark.parametrize("tier", ["debug", "checked", "fast"])
@pytest.mark.parametrize("name", sorted(EVERY_TIER))
def test_some_traps_stay_at_every_tier(tmp_path, name, tier):
    body, line, message = EVERY_TIER[name]
    result = run(build_text(tmp_path, _program(body), name="trap.mica", tier=tier))
    assert (result.returncode, result.stderr) == (1, f"trap.mica:{line + 1}: {message}\n")


def test_output_before_a_trap_is_flushed(tmp_path):
    result = run(build_text(tmp_path, _program(TRAPS["overflow"][0]), name="trap.mica"))
    assert result.stdout == "before\n"


def test_fast_tier_wraps_instead(tmp_path):
    body = "var i : integer;\nbegin\n  i := MaxInt;\n  i := i + 1;\n  WriteLn(i);\nend."
    result = run(build_text(tmp_path, _program(body), tier="fast"))
    assert (result.returncode, result.stdout) == (0, "-9223372036854775808\n")


def test_halt_sets_the_exit_status(tmp_path):
    result = run(build_text(tmp_path, _program("begin\n  WriteLn('bye');\n  Halt(3);\n  WriteLn('no');\nend.")))
    assert (result.returncode, result.stdout) == (3, "bye\n")


STACK_OVERFLOW = "stack overflow: recursion too deep, or static tensors too large for the 1 GiB stack"
HUGE_FRAME = ("procedure P;\nvar m : matrix[20000, 20000] of float64;\nbegin\n  m[1, 1] := 1.5;\n  WriteLn(m[1, 1]);\n"
              "end;\nbegin\n  WriteLn('before');\n  P;\nend.")


@pytest.mark.parametrize("tier", ["debug", "checked"])
def test_a_frame_larger_than_the_stack_faults_into_a_message(tmp_path, tier):
    """At the debug tier the C compiler probes a huge frame page by page before the routine's
    own check runs: the fault handler says what happened, naming the line of the call, as
    the checked tier's own check does. (The fast tier drops the unused frame and runs.)"""
    result = run(build_text(tmp_path, _program(HUGE_FRAME), name="trap.mica", tier=tier))
    assert (result.returncode, result.stdout) == (1, "before\n")
    assert result.stderr == f"trap.mica:10: {STACK_OVERFLOW}\n"


# ---------------------------------------------------------------- out of memory names the line

def _run_in(binary, megabytes: int) -> subprocess.CompletedProcess:
    """binary run with its address space held to `megabytes` (the 1 GiB program stack counts)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, preexec_fn=limit)


@pytest.mark.parametrize("tier", ["debug", "checked", "fast"])
def test_a_string_outgrowing_memory_names_its_line(tmp_path, tier):
    """s + s, where the runtime's concatenation allocates: 1 GiB of text (and its terminator) does
    not fit beside the 512 MiB it doubles and the stack."""
    body = "var s : string;\nbegin\n  s := 'ab';\n  WriteLn('doubling');\n  while true do\n    s := s + s;\nend."
    result = _run_in(build_text(tmp_path, _program(body), name="trap.mica", tier=tier), 2048)
    assert (result.returncode, result.stdout) == (1, "doubling\n")
    assert result.stderr == "trap.mica:7: out of memory allocating 1073741825 bytes\n"


def test_load_from_an_endless_file_names_its_line(tmp_path):
    """/dev/zero's first eight bytes say its header is empty, which the reader refuses
    before reading on; the trap names Load's line."""
    body = "var w : vector[2] of float64;\nbegin\n  WriteLn('loading');\n  Load('/dev/zero', w);\nend."
    result = _run_in(build_text(tmp_path, _program(body), name="trap.mica"), 2048)
    assert (result.returncode, result.stdout) == (1, "loading\n")
    assert result.stderr == "trap.mica:5: cannot load '/dev/zero': not a safetensors file: the header is not valid JSON\n"


def test_a_trap_after_a_routine_returns_names_the_callers_line(tmp_path):
    """The routine ran statements of its own; the caller's statement traps after it returned."""
    body = ("function Half(n : integer) : integer;\nbegin\n  result := n div 2;\nend;\n"
            "begin\n  WriteLn(1.5:0:Half(4294967294));\nend.")
    result = run(build_text(tmp_path, _program(body), name="trap.mica"))
    assert (result.returncode, result.stderr) == (1, "trap.mica:7: 2147483647 decimals are more than a number can print\n")


# ---------------------------------------------------------------- output reaches its reader

STOPPABLE = "begin\n{lines}  WriteFile(ParamStr(1), 'ready');\n  while Clock() >= 0.0 do\n    ;\nend."


def _default_stops():
    """The child starts with the stop signals' default actions, whatever the test runner's are."""
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(stop, signal.SIG_DFL)


def _wait_for(ready, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        assert process.poll() is None, "the program ended before it was ready"
        assert time.monotonic() < deadline, "the program never got ready"
        time.sleep(0.01)


def _stopped(tmp_path, lines: list[str], stop: int, setup=_default_stops, before=()) -> tuple[int, str, str]:
    """The program prints lines, says it is ready, spins; the test stops it with `stop`."""
    printing = "".join(f"  WriteLn('{line}');\n" for line in lines)
    binary = build_text(tmp_path, _program(STOPPABLE.format(lines=printing)), name="stop.mica")
    ready = tmp_path / "ready"
    with subprocess.Popen([str(binary), str(ready)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=setup) as process:
        got = []  # read as it comes, so a full pipe never holds the program back
        reader = threading.Thread(target=lambda: got.append(process.stdout.read()))
        reader.start()
        _wait_for(ready.exists, process)
        for signal_first in before:
            process.send_signal(signal_first)
        process.send_signal(stop)
        process.wait(timeout=60)
        reader.join(timeout=60)
        err = process.stderr.read()
    return process.returncode, got[0].decode(), err.decode()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stopped_program_still_delivers_its_output(tmp_path, stop):
    """The lines sit in the buffer (a pipe is written in 64 KiB blocks) when the signal comes."""
    assert _stopped(tmp_path, ["one", "two"], stop) == (-stop, "one\ntwo\n", "")


def test_a_stop_after_a_full_block_sends_the_rest_once(tmp_path):
    """The first 64 KiB went out when the buffer filled; the handler sends what came after, no more."""
    lines = [f"line {i:5d} of the log, padded to forty bytes" [:39] for i in range(2000)]
    assert _stopped(tmp_path, lines, signal.SIGTERM) == (-signal.SIGTERM, "".join(f"{line}\n" for line in lines), "")


def test_an_ignored_hangup_stays_ignored(tmp_path):
    """Started under nohup, SIGHUP does nothing; SIGTERM still stops it, output kept."""
    def ignore_hangups():
        _default_stops()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    result = _stopped(tmp_path, ["one"], signal.SIGTERM, setup=ignore_hangups, before=[signal.SIGHUP])
    assert result == (-signal.SIGTERM, "one\n", "")


def test_a_terminal_gets_each_line_while_the_program_runs(tmp_path):
    """Under a pty, the first line arrives while the program is still spinning after it."""
    binary = build_text(tmp_path, _program(STOPPABLE.format(lines="  WriteLn('first');\n")), name="tty.mica")
    leader, follower = pty.openpty()
    with subprocess.Popen([str(binary), str(tmp_path / "ready")], stdout=follower, stderr=subprocess.PIPE,
                          preexec_fn=_default_stops) as process:
        os.close(follower)
        seen = b""
        deadline = time.monotonic() + 60
        while b"\n" not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 1)[0]:
                seen += os.read(leader, 1024)
        still_running = process.poll() is None
        process.terminate()
        process.wait(timeout=60)
    os.close(leader)
    assert (seen, still_running, process.returncode) == (b"first\r\n", True, -signal.SIGTERM)


# ---------------------------------------------------------------- a stdout that refuses its output

FULL = "cannot write standard output: No space left on device"


def _to_dev_full(binary, setup=None) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([str(binary)], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
                              preexec_fn=setup)


@pytest.mark.parametrize("body, line", [
    # the whole output fits the buffer: the program's last flush finds the disk full
    ("begin\n  WriteLn('one');\n  WriteLn('two');\nend.", 4),
    # the buffer fills at the WriteLn of the loop, which stops the program there
    ("var i : integer;\nbegin\n  for i := 1 to 100000 do\n    WriteLn('line ', i);\n"
     "  WriteLn(ErrOutput, 'not reached');\nend.", 5),
    # Halt(0) flushes, and a lost output does not end in status 0
    ("begin\n  WriteLn('bye');\n  Halt(0);\nend.", 4),
    ("begin\n  WriteLn('bye');\n  if Flush(Output) then WriteLn(ErrOutput, 'flushed');\nend.", 4),
    # a task flushes as it ends, and finds the failure at its spawn's line
    ("procedure Say(n : integer);\nbegin\n  WriteLn('task ', n);\nend;\nbegin\n  tasks\n    spawn Say(1);\n"
     "  end;\n  WriteLn(ErrOutput, 'not reached');\nend.", 8),
], ids=["at_the_end", "when_the_buffer_fills", "halt", "flush", "task"])
def test_a_full_stdout_ends_the_program_with_the_reason(tmp_path, body, line):
    """As cat does: a message on stderr and status 1, never 0 with the output gone."""
    result = _to_dev_full(build_text(tmp_path, _program(body), name="full.mica"))
    assert (result.returncode, result.stderr) == (1, f"full.mica:{line}: {FULL}\n")


def test_a_trap_with_a_full_stdout_says_its_own_reason(tmp_path):
    result = _to_dev_full(build_text(tmp_path, _program(TRAPS["overflow"][0]), name="trap.mica"))
    assert (result.returncode, result.stderr) == (1, "trap.mica:6: integer overflow\n")


LONG_OUTPUT = "var i : integer;\nbegin\n  for i := 1 to 100000 do\n    WriteLn('line ', i);\nend."


def _into_closed_pipe(binary, setup) -> subprocess.CompletedProcess:
    """binary writing into a pipe whose reader has gone."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run([str(binary)], stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120,
                              preexec_fn=setup)
    finally:
        os.close(writer)


def test_a_closed_pipe_ends_the_program_by_sigpipe(tmp_path):
    def default_sigpipe():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    result = _into_closed_pipe(build_text(tmp_path, _program(LONG_OUTPUT), name="pipe.mica"), default_sigpipe)
    assert (result.returncode, result.stderr) == (-signal.SIGPIPE, "")


def test_a_closed_pipe_with_sigpipe_ignored_ends_the_program_with_the_reason(tmp_path):
    def ignore_sigpipe():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    result = _into_closed_pipe(build_text(tmp_path, _program(LONG_OUTPUT), name="pipe.mica"), ignore_sigpipe)
    assert (result.returncode, result.stderr) == (1, "pipe.mica:5: cannot write standard output: Broken pipe\n")


# ---------------------------------------------------------------- through micatool run

@pytest.mark.parametrize("name", ["recursion", "huge_decimals", "division"])
def test_micatool_run_traps_alike_at_every_tier(tmp_path, name):
    """What the binary says is what `micatool run` passes on, word for word, at each tier."""
    body, line, message = EVERY_TIER[name]
    (tmp_path / "trap.mica").write_text(_program(body))
    said = {tier: subprocess.run([sys.executable, "-m", "micatool", "run", "--tier", tier, "trap.mica"], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=300)
            for tier in ("debug", "checked", "fast")}
    assert {tier: (r.returncode, r.stderr) for tier, r in said.items()} == \
        {tier: (1, f"trap.mica:{line + 1}: {message}\n") for tier in said}
