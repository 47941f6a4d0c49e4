"""Regular expressions (LANGUAGE.md section 11; docs/language.md, "Regular expressions").

The engine (runtime_c/mica_regex.c) is checked against Python's re on
thousands of generated pattern/text pairs, through one harness binary
(tests/c/regex_check.c) built once and fed every case on stdin. The ops are
checked in Mica programs with their exact output.

Where Python and RE2 part, the generated cases keep out of the way (and
docs/language.md says which Mica follows):
- a repetition of something that can match the empty string (`(a*)*`,
  `(b?)+`): Python's backtracker lets one more iteration match empty, RE2's
  Pike VM stops it, so the groups (and at times the whole match) differ; for
  such patterns only whether there is a match is compared;
- `\\B` in an empty text: Python (before 3.14) says no match, RE2 says a match;
- repeated anchors (`^*`) are refused by Python, and are not generated;
- the texts hold no newline, where Python's `$` also matches before a final one.
Python's re is given bytes, so \\w, \\d, \\s and \\b are ASCII, as in RE2.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from helpers import build_harness, build_text, run

HARNESS = ["tests/c/regex_check.c", "runtime_c/mica_core.c", "runtime_c/mica_output.c", "runtime_c/mica_print.c",
           "runtime_c/mica_string.c", "runtime_c/mica_regex.c", "-lpthread"]


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> dict[str, Path]:
    """tests/c/regex_check.c with the engine, for x86_64 and aarch64: warning-free at -O2."""
    out = tmp_path_factory.mktemp("regex")
    return {arch: build_harness(out, "regex_check", HARNESS, arch, "-std=gnu11") for arch in ("x86_64", "aarch64")}


def escape(field: str) -> str:
    return field.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def ask(exe: Path, commands: list[tuple], qemu: str | None = None) -> list[str]:
    """One line of the harness per command (a tuple of its letter and fields)."""
    text = "".join("\t".join([c[0], *map(escape, c[1:])]) + "\n" for c in commands)
    command = [qemu, str(exe)] if qemu else [str(exe)]
    proc = subprocess.run(command, input=text, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(commands)
    return lines


# ------------------------------------------------------------ generated cases

ATOMS = ["a", "b", "a", "b", "c", ".", "[ab]", "[^a]", "[a-c]", "[]a]", "[^]b]", r"\d", r"\w", r"\s", r"\W",
         r"\D", r"\.", r"\x61", "[\\d_]", "[^\\w ]", "a{", "{"]
ANCHORS = ["^", "$", r"\b", r"\B", r"\A", r"\z"]
OPERATORS = ["*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}", "{2,}", "{0}", "{0,1}"]
CAN_BE_EMPTY = {"*", "?", "{0,2}", "{0}", "{0,1}"}


class Generator:
    """Random patterns from the syntax Python and RE2 share; each rule gives
    (pattern, whether it can match empty, whether it repeats something that can)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def atom(self, depth: int):
        r = self.rng.random()
        if depth <= 0 or r < 0.5:
            return self.rng.choice(ATOMS), False, False
        if r < 0.6:
            return self.rng.choice(ANCHORS), True, False
        pattern, empty, repeats_empty = self.alternation(depth - 1)
        return self.rng.choice(["(", "(", "(?:", "(?i:"]) + pattern + ")", empty, repeats_empty

    def repetition(self, depth: int):
        pattern, empty, repeats_empty = self.atom(depth)
        if self.rng.random() < 0.5 or pattern in ANCHORS:
            return pattern, empty, repeats_empty
        op = self.rng.choice(OPERATORS)
        lazy = "?" if self.rng.random() < 0.3 else ""
        return pattern + op + lazy, empty or op in CAN_BE_EMPTY, repeats_empty or (empty and op not in ("?", "{0,1}"))

    def concatenation(self, depth: int):
        parts = [self.repetition(depth) for _ in range(self.rng.randint(1, 3))]
        return "".join(p for p, _, _ in parts), all(e for _, e, _ in parts), any(r for _, _, r in parts)

    def alternation(self, depth: int):
        parts = [self.concatenation(depth) for _ in range(self.rng.choice([1, 1, 2, 3]))]
        return "|".join(p for p, _, _ in parts), any(e for _, e, _ in parts), any(r for _, _, r in parts)

    def text(self) -> str:
        return "".join(self.rng.choice("aab b1_c{AB") for _ in range(self.rng.randint(0, 9)))


def cases(seed: int, count: int) -> list[tuple[str, str, bool]]:
    """(pattern, text, whether only IsMatch is comparable) for `count` generated pairs.
    Python's backtracking takes exponential time on a few generated patterns (one
    of seed 16's nested repetitions takes a minute on a 9-byte text); the seeds
    the tests use have none that take more than a fraction of a second."""
    g = Generator(seed)
    out = []
    while len(out) < count:
        pattern, _, repeats_empty = g.alternation(2)
        text = g.text()
        if text == "" and r"\B" in pattern:
            continue
        out.append((pattern, text, repeats_empty))
    return out


def python_re(pattern: str) -> re.Pattern:
    """The pattern in Python's spelling: RE2's \\z (end of text) is Python's \\Z. The
    generated patterns hold no escaped backslash, so the replacement is safe."""
    return re.compile(pattern.replace(r"\z", r"\Z").encode())


def python_search(pattern: str, text: str) -> str:
    """What the harness's S command should print, by Python's re."""
    m = python_re(pattern).search(text.encode())
    if m is None:
        return "none"
    return "match " + " ".join(f"{a} {b}" for g in range(m.re.groups + 1) for a, b in [m.span(g)])


def python_find_all(pattern: str, text: str) -> str:
    return "all" + "".join(f" {m.start()} {m.end()}" for m in python_re(pattern).finditer(text.encode()))


def python_replace_all(pattern: str, text: str) -> str:
    """re.sub with the template '<$1|$0$$>' (no $1 without a group 1)."""
    compiled = python_re(pattern)

    def template(m):
        first = (m.group(1) or b"") if compiled.groups else b""
        return b"<" + first + b"|" + m.group(0) + b"$>"

    return "text " + compiled.sub(template, text.encode()).decode()


TEMPLATE = "<$1|$0$$>"


def test_the_leftmost_first_match_and_every_group_agree_with_python(harness):
    generated = cases(seed=2, count=4000)
    answers = ask(harness["x86_64"], [("S", p, t) for p, t, _ in generated])
    compared_whole = 0
    mismatches = []
    for (pattern, text, only_whether), got in zip(generated, answers):
        want = python_search(pattern, text)
        if only_whether:
            want, got = want.split()[0], got.split()[0]
        else:
            compared_whole += 1
        if got != want:
            mismatches.append((pattern, text, want, got))
    assert not mismatches, mismatches[:5]
    assert compared_whole >= 3000
    assert sum(a != "none" for a in answers) > 1000  # the cases are not all misses


def test_find_all_and_replace_all_agree_with_python(harness):
    generated = [(p, t) for p, t, only_whether in cases(seed=3, count=4000) if not only_whether]
    commands = [c for p, t in generated for c in (("A", p, t), ("R", p, t, TEMPLATE))]
    answers = ask(harness["x86_64"], commands)
    mismatches = []
    for i, (pattern, text) in enumerate(generated):
        want = (python_find_all(pattern, text), python_replace_all(pattern, text))
        got = (answers[2 * i], answers[2 * i + 1])
        if got != want:
            mismatches.append((pattern, text, want, got))
    assert not mismatches, mismatches[:5]
    assert len(generated) >= 3000


@pytest.mark.qemu
def test_aarch64_answers_as_x86_64(harness, aarch64):
    commands = [("S", p, t) for p, t, _ in cases(seed=18, count=500)]
    assert ask(harness["aarch64"], commands, aarch64) == ask(harness["x86_64"], commands)


def test_the_syntax_beyond_python_s(harness):
    """RE2's forms that Python lacks or spells otherwise: \\z, POSIX classes, named groups,
    flags that hold to the end of their group."""
    answers = ask(harness["x86_64"], [
        ("S", r"b\z", "abb"),
        ("S", "[[:alpha:]]+", "12ab3"),
        ("S", "[[:^digit:][:space:]]+", "12 ab3"),
        ("S", "(?P<year>[0-9]{4})-(?P<month>[0-9]{2})", "on 2026-12-02"),
        ("S", r"\Aab|b$", "abab"),
        ("S", "x*", ""),
        ("S", "é.", "café au lait"),
        ("S", "a(?i)b|c", "AC"),
        ("S", "(a(?i)b)c", "aBc aBC"),
        ("S", "(?i)[^a]", "aAb"),
    ])
    assert answers == ["match 2 3", "match 2 4", "match 2 5", "match 3 10 3 7 8 10", "match 0 2", "match 0 0",
                       "match 3 6", "match 1 2", "match 0 3 0 2", "match 2 3"]


def test_replace_all_templates(harness):
    answers = ask(harness["x86_64"], [
        ("R", "(a)(b)?", "xaabx", "[${1}1|$2|$12|$$|$x|$]"),
        ("R", "", "ab", "-"),
        ("R", "b+", "abbcb", "$0$0"),
    ])
    assert answers == ["text x[a1|||$|$x|$][a1|b||$|$x|$]x", "text -a-b-", "text abbbbcbb"]


def test_pathological_patterns_finish_on_100000_bytes(harness):
    """Python's re takes exponential time on (a*)*b over a's; the Pike VM takes one pass."""
    a = "a" * 100_000
    answers = ask(harness["x86_64"], [("S", "(a*)*b", a), ("S", "(a|aa)+$", a), ("S", "(a*)*b", a + "b"),
                                      ("S", "(x+x+)+y", "x" * 100_000)])
    # (a|aa)+$: leftmost-first takes 'a' at every iteration, so the last one is the last byte.
    # (a*)*b: the group is the one iteration that took every a (RE2's answer; Python's
    # backtracker adds an empty last iteration, 100000 100000)
    assert answers == ["none", "match 0 100000 99999 100000", "match 0 100001 0 100000", "none"]


MALFORMED = {
    "a(b": "pattern 'a(b': missing ')' for the '(' at position 2",
    "a)": "pattern 'a)': unmatched ')' at position 2",
    "[ab": "pattern '[ab': missing ']' for the '[' at position 1",
    "[z-a]": "pattern '[z-a]': invalid range 'z-a' at position 2",
    "*a": "pattern '*a': missing argument to repetition operator '*' at position 1",
    "a|+": "pattern 'a|+': missing argument to repetition operator '+' at position 3",
    "a**": "pattern 'a**': repetition operator '*' follows another at position 3",
    "a{2}{3}": "pattern 'a{2}{3}': repetition operator '{3}' follows another at position 5",
    "a{3,2}": "pattern 'a{3,2}': repetition count {3,2} has its minimum above its maximum at position 2",
    "a{1001}": "pattern 'a{1001}': repetition count above 1000 at position 2",
    "(a)\\1": "pattern '(a)\\1': backreferences are not supported (matching stays linear in the text) "
              "at position 4",
    "(?=a)": "pattern '(?=a)': lookaround '(?=' is not supported (matching stays linear in the text) at position 1",
    "(?<!a)b": "pattern '(?<!a)b': lookaround '(?<!' is not supported (matching stays linear in the text) "
               "at position 1",
    "(?x)a": "pattern '(?x)a': unknown group flag 'x' at position 3",
    "(?i": "pattern '(?i': missing ')' for the '(' at position 1",
    "a\\": "pattern 'a\\': trailing '\\' at position 2",
    "\\q": "pattern '\\q': invalid escape '\\q' at position 1",
    "[\\b]": "pattern '[\\b]': invalid escape '\\b' inside a class at position 2",
    "\\x4": "pattern '\\x4': '\\x' needs two hex digits at position 1",
    "[[:alfa:]]": "pattern '[[:alfa:]]': unknown class '[:alfa:]' at position 2",
    "[a-\\d]": "pattern '[a-\\d]': a range cannot end in a class like '\\d' at position 2",
    "(a{1000}){1000}": "pattern '(a{1000}){1000}': too large: more than 10000 instructions",
    "(" * 1001 + ")" * 1001: f"pattern '{'(' * 60}...': groups nested more than 1000 deep at position 1001",
    "(a)" * 101: f"pattern '{'(a)' * 20}...': more than 100 groups",
    "(?:)" * 40001: f"pattern '{'(?:)' * 15}...': too large: more than 40000 parts at position 160004",
}


def test_a_malformed_pattern_is_refused_with_its_position(harness):
    answers = ask(harness["x86_64"], [("S", p, "a") for p in MALFORMED])
    assert answers == [f"error {reason}" for reason in MALFORMED.values()]


def test_the_size_caps_leave_room_for_what_fits(harness):
    assert ask(harness["x86_64"], [("S", "(a{100}){90}", "a" * 9000), ("S", "(a)" * 100, "a" * 100)]) == [
        "match 0 9000 8900 9000", "match " + " ".join(["0 100"] + [f"{i} {i + 1}" for i in range(100)])]


# ------------------------------------------------------------ the ops in Mica programs

OPS_PROGRAM = """program Regexes;
var
    re, other : regex;
    groups, words : array of string;
    i : integer;
begin
    if not Compile('a(b', address re) then
        WriteLn(LastError);
    if Compile('(\\w+)@(\\w+)\\.com', address re) then
        WriteLn('compiled');
    WriteLn(IsMatch(re, 'mail bob@example.com now'), ' ', IsMatch(re, 'no mail'));
    if Find(re, 'mail bob@example.com now', address groups) then
        for i := 0 to Length(groups) - 1 do
            WriteLn(i, ': ', groups[i]);
    other := re;
    WriteLn(ReplaceAll(other, 'a@b.com, c@d.com', '$2 at $1 ($$)'));
    if not Find(re, 'nobody', address groups) then
        WriteLn('no match, ', Length(groups), ' groups');
    if Compile('x(y)?|(z)', address re) and Find(re, 'x', address groups) then
        WriteLn(Length(groups), ' [', groups[1], '] [', groups[2], ']');
    if Compile('a*', address re) then
        words := FindAll(re, 'baaca');
    Write(Length(words), ':');
    for i := 0 to Length(words) - 1 do
        Write(' [', words[i], ']');
    WriteLn;
    if Compile('é.', address re) then
        WriteLn(FindAll(re, 'café au lait, éa')[1], ' ', ReplaceAll(re, 'été', '<$0>'));
    if Compile('^(a|aa)+$', address re) then
        WriteLn(IsMatch(re, 'aaa'), ' ', IsMatch(re, 'aab'));
end.
"""

OPS_OUTPUT = """pattern 'a(b': missing ')' for the '(' at position 2
compiled
true false
0: bob@example.com
1: bob
2: example
b at a ($), d at c ($)
no match, 0 groups
3 [] []
5: [] [aa] [] [a] []
éa <ét>é
true false
"""


def test_each_op_in_a_program(tmp_path):
    proc = run(build_text(tmp_path, OPS_PROGRAM))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == OPS_OUTPUT


# ------------------------------------------------------------ what a binary carries

def regex_symbols(binary: Path) -> set[str]:
    with binary.open("rb") as f:
        symbols = ELFFile(f).get_section_by_name(".symtab")
        return {s.name for s in symbols.iter_symbols() if s.name.startswith("mica_regex")}


def test_only_a_program_that_uses_regex_carries_the_engine(tmp_path):
    """The runtime is an archive linked with --gc-sections: mica_regex.o comes in only when called.
    At the debug tier the binary keeps its symbol table to look in."""
    without = build_text(tmp_path, "program Plain;\nbegin\n    WriteLn(Pos('b', 'abc'));\nend.\n", name="plain.mica",
                         tier="debug")
    with_regex = build_text(tmp_path, "program Uses;\nvar\n    re : regex;\nbegin\n"
                                      "    WriteLn(Compile('b+', address re) and IsMatch(re, 'abc'));\nend.\n",
                            name="uses.mica", tier="debug")
    assert run(with_regex).stdout == "true\n"
    assert regex_symbols(without) == set()
    assert {"mica_regex_compile", "mica_regex_is_match", "mica_regex_drop"} <= regex_symbols(with_regex)


PATHOLOGICAL_PROGRAM = """program Pathological;
var
    re : regex;
    s : string;
    groups : array of string;
    k : integer;
begin
    s := 'a';
    for k := 1 to 17 do
        s := s + s;
    s := Copy(s, 1, 100000);
    if Compile('(a*)*b', address re) then
        WriteLn(IsMatch(re, s), ' ', Length(FindAll(re, s)));
    if Compile('(a|aa)+$', address re) and Find(re, s, address groups) then
        WriteLn(Length(groups[0]), ' ', groups[1]);
    if Compile('a', address re) then
        WriteLn(Length(ReplaceAll(re, s, '<$0>')));
end.
"""


def test_pathological_patterns_in_a_program(tmp_path):
    proc = run(build_text(tmp_path, PATHOLOGICAL_PROGRAM))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "false 0\n100000 a\n300000\n"


SHARING_PROGRAM = """program Shared;
type
    Rule = record
        name : string;
        pattern : regex;
    end;
var
    rules : array of Rule;
    kept : array[0..1] of regex;
    re : regex;
    groups : array of string;
    i, k : integer;

function Digits : regex;
var
    local : regex;
begin
    if Compile('[0-9]+', address local) then
        result := local;
end;

function Count(pattern : regex; text : string) : integer;
var
    copy : regex;
begin
    copy := pattern;
    result := Length(FindAll(copy, text));
end;

procedure Recompile(address target : regex; pattern : string);
begin
    if not Compile(pattern, address target) then
        WriteLn('refused: ', LastError);
end;

begin
    SetLength(rules, 2);
    rules[0].name := 'digits';
    rules[0].pattern := Digits;
    rules[1].name := 'words';
    Recompile(address rules[1].pattern, '[a-z]+');
    for k := 1 to 2 do
        for i := 0 to 1 do
        begin
            kept[i] := rules[i].pattern;
            WriteLn(rules[i].name, ' ', Count(kept[i], 'ab 12 cd 345 e'));
        end;
    Recompile(address rules[1].pattern, '(?=x)');
    rules[0].pattern := rules[1].pattern;
    SetLength(rules, 1);
    WriteLn(ReplaceAll(rules[0].pattern, 'ab 12 cd', '<$0>'));
    groups := FindAll(kept[0], 'x 12 y 345');
    if Find(kept[0], groups[1], address groups) then
        WriteLn(Length(groups), ' ', groups[0]);
    WriteLn(IsMatch(re, 'x'));
end.
"""


def test_copies_share_a_regex_and_the_last_one_frees_it(tmp_path):
    """Records, arrays, results, value and address parameters; Find reading the array it
    writes; a regex never compiled traps at its line."""
    proc = run(build_text(tmp_path, SHARING_PROGRAM))
    assert proc.stdout == ("digits 2\nwords 3\ndigits 2\nwords 3\n"
                           "refused: pattern '(?=x)': lookaround '(?=' is not supported (matching stays linear in "
                           "the text) at position 1\n<ab> 12 <cd>\n1 345\n")
    assert proc.stderr == "prog.mica:55: a regex used before Compile gave it a pattern\n"
    assert proc.returncode == 1
