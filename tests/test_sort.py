"""Sort (LANGUAGE.md section 11): both forms, each element type, stable,
strings in byte order, NaNs last; against Python's sorted() on random
arrays, carrying each element's first place along to show stability; its
refusals, and its trap, named exactly."""

from __future__ import annotations

import math
import random

import pytest

from helpers import build_text, run

DEMO = """program SortDemo;
var
    a : array of integer;
    f : array[0..6] of float64;
    g : array[0..3] of float32;
    b : array[0..4] of uint8;
    s : array[0..5] of string;
    w : array of string;
    c : array of integer;
    i : integer;
begin
    SetLength(address a, 8);
    a[0] := 5; a[1] := -3; a[2] := 9; a[3] := 0; a[4] := -3; a[5] := 7; a[6] := 5; a[7] := 1;
    Sort(address a);
    for i := 0 to 7 do Write(a[i], ' ');
    WriteLn;
    f[0] := 2.5; f[1] := 0.0 / 0.0; f[2] := -1.0; f[3] := 1e300 * 1e300;
    f[4] := -0.0; f[5] := 0.0; f[6] := -1e300 * 1e300;
    Sort(address f);
    WriteLn(f[0], ' ', f[1], ' ', f[2], ' ', f[3], ' ', f[4], ' ', f[5], ' ', f[6]);
    g[0] := 0.5; g[1] := -0.25; g[2] := 0.125; g[3] := -2.0;
    Sort(address g);
    WriteLn(g[0], ' ', g[1], ' ', g[2], ' ', g[3]);
    b[0] := 200; b[1] := 7; b[2] := 255; b[3] := 0; b[4] := 7;
    Sort(address b);
    WriteLn(b[0], ' ', b[1], ' ', b[2], ' ', b[3], ' ', b[4]);
    s[0] := 'pear'; s[1] := 'apple'; s[2] := 'Zebra'; s[3] := 'app'; s[4] := 'apple'; s[5] := '';
    Sort(address s);
    WriteLn('[', s[0], '] ', s[1], ' ', s[2], ' ', s[3], ' ', s[4], ' ', s[5]);
    SetLength(address w, 5);
    SetLength(address c, 5);
    w[0] := 'the'; w[1] := 'cat'; w[2] := 'sat'; w[3] := 'on'; w[4] := 'mat';
    c[0] := 3; c[1] := 1; c[2] := 2; c[3] := 1; c[4] := 2;
    Sort(address c, address w);
    for i := 0 to 4 do Write(c[i], ':', w[i], ' ');
    WriteLn;
    SetLength(address a, 0);
    Sort(address a);
    WriteLn(Length(a));
end.
"""
DEMO_OUTPUT = """-3 -3 0 1 5 5 7 9 \n-inf -1.0 -0.0 0.0 2.5 inf nan
-2.0 -0.25 0.125 0.5
0 7 7 200 255
[] Zebra app apple apple pear
1:cat 1:on 2:sat 2:mat 3:the \n0
"""


@pytest.mark.parametrize("target", ["x86_64-linux", "aarch64-linux"])
def test_sort_orders_each_type_as_the_contract_says(tmp_path, target, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    result = run(build_text(tmp_path, DEMO, target=target), target=target)
    assert (result.returncode, result.stdout, result.stderr) == (0, DEMO_OUTPUT, "")


CHECK = """program SortCheck;
{ sort.txt holds blocks: a kind (ints, floats or strings) and a count on one
  line, then that many keys, one a line. Each block is sorted with every
  key's first place carried along, and printed as key and place. }
var
    lines, words : array of string;
    ints : array of integer;
    floats : array of float64;
    strings : array of string;
    places : array of integer;
    at, n, i : integer;
begin
    lines := Split(ReadFile('sort.txt'), Chr(10));
    at := 0;
    while at < Length(lines) - 1 do
    begin
        words := Split(lines[at], ' ');
        n := StrToInt(words[1]);
        SetLength(address places, n);
        SetLength(address ints, n);
        SetLength(address floats, n);
        SetLength(address strings, n);
        for i := 0 to n - 1 do
        begin
            places[i] := i;
            if words[0] = 'ints' then ints[i] := StrToInt(lines[at + 1 + i])
            else if words[0] = 'floats' then floats[i] := StrToFloat(lines[at + 1 + i])
            else strings[i] := lines[at + 1 + i];
        end;
        if words[0] = 'ints' then Sort(address ints, address places)
        else if words[0] = 'floats' then Sort(address floats, address places)
        else Sort(address strings, address places);
        WriteLn(words[0], ' ', n);
        for i := 0 to n - 1 do
            if words[0] = 'ints' then WriteLn(ints[i], ' ', places[i])
            else if words[0] = 'floats' then WriteLn(floats[i], ' ', places[i])
            else WriteLn(places[i], ' ', strings[i]);
        at := at + 1 + n;
    end;
end.
"""


def float_text(x: float) -> str:
    return "nan" if math.isnan(x) else repr(x)


def float_key(x: float):
    """Python's twin of the contract's order: numbers by <, every NaN after them."""
    return (1, 0.0) if math.isnan(x) else (0, x)


def blocks(seed: int) -> list[tuple[str, list]]:
    r = random.Random(seed)
    made = []
    for n in (0, 1, 2, 3, 17, 64, 257, 1000):
        made.append(("ints", [r.randint(-5, 5) if r.random() < 0.5 else r.randint(-2**62, 2**62) for _ in range(n)]))
        floats = [r.choice([0.0, -0.0, math.inf, -math.inf, math.nan, 1.5, -1.5, r.uniform(-1e6, 1e6)])
                  for _ in range(n)]
        made.append(("floats", floats))
        alphabet = "abAB\u00e9z0 "
        made.append(("strings", ["".join(r.choice(alphabet) for _ in range(r.randint(0, 4))) for _ in range(n)]))
    return made


def test_sort_agrees_with_sorted_on_random_arrays_and_is_stable(tmp_path):
    data = blocks(7)
    text = "".join(f"{kind} {len(keys)}\n" + "".join(
        (float_text(k) if kind == "floats" else str(k)) + "\n" for k in keys) for kind, keys in data)
    (tmp_path / "sort.txt").write_bytes(text.encode("utf-8"))
    result = run(build_text(tmp_path, CHECK), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = []
    for kind, keys in data:
        expected.append(f"{kind} {len(keys)}")
        if kind == "strings":  # byte order: of the UTF-8 bytes, a prefix first
            order = sorted(range(len(keys)), key=lambda i: keys[i].encode("utf-8"))
            expected += [f"{i} {keys[i]}" for i in order]
        elif kind == "floats":
            order = sorted(range(len(keys)), key=lambda i: float_key(keys[i]))
            expected += [f"{float_text(keys[i])} {i}" for i in order]
        else:
            order = sorted(range(len(keys)), key=lambda i: keys[i])
            expected += [f"{keys[i]} {i}" for i in order]
    assert comparable(result.stdout.splitlines()) == comparable(expected)


def comparable(lines: list[str]) -> list[str]:
    """The lines, each float key as its value's repr: Mica prints the shortest text that reads
    back, as Python's repr does, but spells an exponent its own way (1e300, not 1e+300)."""
    kind, out = None, []
    for line in lines:
        head, _, rest = line.partition(" ")
        if head in ("ints", "floats", "strings"):
            kind = head
        elif kind == "floats":
            line = f"{float_text(float(head))} {rest}"
        out.append(line)
    return out


REFUSED = """program SortBad;
type
    P = record x : integer; end;
var
    a : array[0..3] of integer;
    b : array[0..2] of string;
    flags : array[0..1] of boolean;
    ps : array[0..1] of P;
    v : vector[3] of float64;
begin
    Sort(address a, address b);
    Sort(address flags);
    Sort(address ps);
    Sort(address v);
    Sort(a);
    Sort(address a, address b, address b);
    Sort(address a, address unknown);
    Sort(address a, address unknown[0]);
end.
"""


def test_what_sort_refuses_is_named(tmp_path, capsys):
    from micatool.cli import main

    (tmp_path / "bad.mica").write_text(REFUSED)
    assert main(["check", str(tmp_path / "bad.mica")]) == 1
    heads = [line.split(": ", 1)[1] for line in capsys.readouterr().err.splitlines() if "analyzer error" in line]
    assert heads == [
        "analyzer error 6013: Sort moves the second array's elements with the first's, so both hold as many: "
        "found 4 and 3",
        "analyzer error 4032: 'Sort' needs an array of integers, floats or strings, found 'array[0..1] of boolean'",
        "analyzer error 4032: 'Sort' needs an array of integers, floats or strings, found 'array[0..1] of P'",
        "analyzer error 4032: 'Sort' needs an array of integers, floats or strings, found 'vector[3] of float64'",
        "analyzer error 5006: Sort's first argument writes the caller's storage: pass it as 'address <place>'",
        "analyzer error 4027: 'Sort' takes 1 or 2 arguments, found 3",
        "analyzer error 3001: unknown name 'unknown'",  # a second argument in error is that error alone
        "analyzer error 3001: unknown name 'unknown'"]


def test_dynamic_arrays_of_two_lengths_trap_at_the_line(tmp_path):
    text = ("program SortTrap;\nvar\n    a : array of integer;\n    b : array of string;\nbegin\n"
            "    SetLength(address a, 3);\n    SetLength(address b, 2);\n    Sort(address a, address b);\nend.\n")
    result = run(build_text(tmp_path, text, "trap.mica"))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "trap.mica:8: Sort's arrays differ in length: "
                                                                        "3 and 2\n")


def test_an_array_sorted_with_itself_is_sorted(tmp_path):
    """Sort(address a, address a): a's elements move with a's, which is sorting a."""
    text = ("program SortAlias;\nvar\n    a : array[0..4] of integer;\n    s : array of string;\n    i : integer;\n"
            "begin\n    a[0] := 3; a[1] := 1; a[2] := 4; a[3] := 1; a[4] := 5;\n    Sort(address a, address a);\n"
            "    for i := 0 to 4 do Write(a[i], ' ');\n    WriteLn;\n    s := Split('pear fig apple fig', ' ');\n"
            "    Sort(address s, address s);\n    WriteLn(Join(s, ','));\nend.\n")
    result = run(build_text(tmp_path, text, "alias.mica"))
    assert (result.returncode, result.stdout) == (0, "1 1 3 4 5 \napple,fig,fig,pear\n"), result.stderr
