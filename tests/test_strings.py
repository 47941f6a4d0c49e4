"""The string functions of LANGUAGE.md section 11 against Python's str methods on
random inputs (where the two agree by definition), and their documented edges."""

from __future__ import annotations

import random

from helpers import run_text
from micatool.compile import compile_program, load_source

ALPHABET = ["a", "b", ",", ";", "é", " "]


def random_text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, most)))


def test_split_join_replace_starts_and_ends_agree_with_python(tmp_path):
    rng = random.Random(16)
    cases = [(random_text(rng, 12), random_text(rng, 2) or ",", random_text(rng, 3)) for _ in range(150)]
    body, expected = [], []
    for s, sep, new in cases:
        body.append(f"    parts := Split('{s}', '{sep}');")
        body.append("    Write(Length(parts));")
        body.append("    for i := 0 to Length(parts) - 1 do Write('<', parts[i], '>');")
        body.append(f"    WriteLn(' ', Join(parts, '{new}'), '|', Replace('{s}', '{sep}', '{new}'), '|', "
                    f"StartsWith('{s}', '{sep}'), ' ', EndsWith('{s}', '{sep}'));")
        parts = s.split(sep)
        expected.append(f"{len(parts)}" + "".join(f"<{p}>" for p in parts) +
                        f" {new.join(parts)}|{s.replace(sep, new)}|{str(s.startswith(sep)).lower()} "
                        f"{str(s.endswith(sep)).lower()}")
    text = "program S;\nvar parts : array of string; i : integer;\nbegin\n" + "\n".join(body) + "\nend.\n"
    result = run_text(tmp_path, text)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == expected


def test_the_edges_python_does_not_decide(tmp_path):
    text = """program S;
var parts, none : array of string;
begin
    parts := Split('', ',');
    WriteLn(Length(parts), ' <', parts[0], '>');
    parts := Split('a,b', '');
    WriteLn(Length(parts), ' <', parts[0], '>');
    WriteLn('<', Replace('abc', '', 'X'), '>');
    WriteLn('<', Join(none, ','), '> ', StartsWith('abc', ''), ' ', EndsWith('', ''), ' ', StartsWith('', 'a'));
    WriteLn(Replace('aaaa', 'aa', 'a'), ' ', Replace('ééé', 'é', 'e'), ' ', Join(Split('x--y--', '--'), '+'));
end.
"""
    assert run_text(tmp_path, text).stdout == "1 <>\n1 <a,b>\n<abc>\n<> true true false\naa eee x+y+\n"


def test_try_conversions_answer_false_naming_the_text(tmp_path):
    text = """program S;
var n : integer; x : float64;
begin
    n := 7;
    x := 0.5;
    WriteLn(TryStrToInt('-42', address n), ' ', n);
    WriteLn(TryStrToInt('12x', address n), ' ', n, ' ', LastError);
    WriteLn(TryStrToInt(' 1', address n), ' ', LastError);
    WriteLn(TryStrToInt('', address n), ' ', LastError);
    WriteLn(TryStrToInt('99999999999999999999', address n), ' ', LastError);
    WriteLn(TryStrToFloat('2.5e3', address x), ' ', x);
    WriteLn(TryStrToFloat('2.5.3', address x), ' ', x, ' ', LastError);
    WriteLn(StrToInt('123') + 1, ' ', StrToFloat('-0.25'));
end.
"""
    assert run_text(tmp_path, text).stdout.splitlines() == [
        "true -42", "false -42 '12x' is not an integer", "false ' 1' is not an integer", "false '' is not an integer",
        "false '99999999999999999999' is not an integer", "true 2500.0", "false 2500.0 '2.5.3' is not a number",
        "124 -0.25",
    ]


def test_the_trapping_conversions_keep_their_message(tmp_path):
    result = run_text(tmp_path, "program S;\nbegin\n    WriteLn(StrToInt('4 '));\nend.\n")
    assert result.returncode == 1 and result.stderr == "prog.mica:3: '4 ' is not an integer\n"


APPENDS = """program A;
type Named = record name : string; n : integer; end;
var s, t, u : string; i, j : integer; r : Named; a : array[1..3] of string; d : array of string;

procedure Extend(address x : string; y : string);
begin
    x := x + y + '.';
end;

procedure Twice(address x : string; y : string);
begin
    x := x + y;
end;

function Grown(y : string) : string;
begin
    for i := 1 to 3 do result := result + y;
    y := y + '?';
    result := result + y;
end;

function Marked : string;
begin
    s := s + '!';
    result := '#';
end;

begin
    s := 'ab';
    s := s + s;
    WriteLn(s);
    s := s + s + s;
    WriteLn(s);
    s := s + 'c' + s;
    WriteLn(s);
    t := 'xy';
    s := t + s;
    WriteLn(s);
    s := s + Copy(s, 2, 3) + '';
    WriteLn(s);
    u := s;
    s := s + 'z';
    WriteLn(u, ' ', s);
    s := s + Marked();
    WriteLn(s);
    r.name := r.name + 'q';
    r.name := r.name + r.name;
    a[2] := 'e';
    j := 2;
    a[2] := a[2] + a[j] + a[1];
    a[3] := a[3] + a[2];
    SetLength(address d, 2);
    d[1] := d[1] + 'w';
    d[1] := d[1] + d[1];
    WriteLn(r.name, ' ', a[2], ' ', a[3], ' ', d[0], '<', d[1]);
    t := 'k';
    Extend(address t, t);
    Twice(address t, t);
    Extend(address a[1], a[2]);
    WriteLn(t, ' ', a[1], ' ', Grown('m'));
    s := '';
    for i := 1 to 1000000 do s := s + Chr(97 + i mod 26);
    WriteLn(Length(s), ' ', Copy(s, 1, 3), ' ', Copy(s, 999998, 3));
end.
"""


def test_appending_keeps_what_concatenation_gives_whatever_aliases_the_piece(tmp_path):
    """s := s + ... grows s in place: a piece that is s itself, or holds s, or was copied
    out of it, reads what s was; strings in records and arrays, lent by address, a
    function's result and a routine's copy of a value parameter grow alike."""
    s = "ab" * 2
    lines = [s]
    s = s * 3
    lines.append(s)
    s = s + "c" + s
    lines.append(s)
    s = "xy" + s
    lines.append(s)
    s = s + s[1:4]
    lines.append(s)
    lines.append(f"{s} {s}z")
    s = s + "z!#"
    lines.append(s)
    built = "".join(chr(97 + i % 26) for i in range(1, 1000001))
    lines += ["qq ee ee <ww", "kk.kk. ee. mmmm?", f"{len(built)} {built[:3]} {built[-3:]}"]
    result = run_text(tmp_path, APPENDS)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == lines


def test_appending_is_lowered_only_where_the_place_appends_to_itself(tmp_path):
    """Only `s := s + ...` changes its C; `s := t + s` and a place whose path calls a
    function keep the concatenation."""
    path = tmp_path / "a.mica"
    path.write_text("program A;\nvar s, t : string; a : array[1..2] of string;\n"
                    "function One : integer;\nbegin\n    result := 1;\nend;\n"
                    "begin\n    s := s + t;\n    s := s + t + 'x';\n    s := t + s;\n"
                    "    a[One()] := a[One()] + t;\nend.\n")
    c = compile_program(load_source(str(path))).c
    body = c[c.index("void mica_program(void)"):]
    calls = [line.strip() for line in body.splitlines() if "mica_str_" in line]
    assert calls == [
        "mica_str_append(&s, t);",
        "mica_string mica_t1 = mica_str_concat(t, (mica_string){1, (char *)\"x\"});",
        "mica_str_append(&s, mica_t1);",
        "mica_str_drop(&mica_t1);",
        "mica_str_move(&s, mica_str_concat(t, s));",
        "mica_str_move(&a.e[mica_index(One(), 1, 2, 11)], mica_str_concat(a.e[mica_index(One(), 1, 2, 11)], t));",
    ]
