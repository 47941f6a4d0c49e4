"""Run-time traps: each names the Mica source line, flushes what was printed, exits 1."""

from __future__ import annotations

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
    "recursion": ("function F(n : integer) : integer;\nbegin\n  if n = 0 then result := 0 else result := F(n - 1) + 1;\n"
                  "end;\nbegin\n  WriteLn(F(1000000000));\nend.", 1,
                  "stack overflow: recursion too deep, or static tensors too large for the 1 GiB stack"),
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


def test_a_frame_larger_than_the_stack_faults_into_a_message(tmp_path):
    """At the debug tier the C compiler probes a huge frame page by page before the routine's
    own check runs: the fault handler says what happened, naming the file (it knows no line)."""
    result = run(build_text(tmp_path, _program(HUGE_FRAME), name="trap.mica", tier="debug"))
    assert (result.returncode, result.stdout) == (1, "before\n")
    assert result.stderr == f"trap.mica: {STACK_OVERFLOW}\n"
