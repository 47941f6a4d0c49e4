"""The string functions of LANGUAGE.md section 11 against Python's str methods on
random inputs (where the two agree by definition), and their documented edges."""

from __future__ import annotations

import random

from helpers import run_text

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
