"""`micatool help CODE`: every code micatool can emit has a page (micatool/help/),
and each page's programs really give and clear it.

The codes are found in micatool's source the way a reader finds them: the
numbers passed to the calls that report a diagnostic, directly or through a
variable. A new code without a page fails here, and so does a page whose
wrong program stops giving its code or whose fixed program gets any.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import micatool
from micatool import help
from micatool.cli import main
from micatool.diagnostics import CompileError, SourceFile
from micatool.fmt import format_source

SOURCE = Path(micatool.__file__).parent

# The calls that report a diagnostic, with its code among their arguments.
REPORTING = {"error", "note_tape_loss", "Diagnostic", "LexicalError"}

# Codes whose page shows no program, and why: a page is a short UTF-8 text.
NOT_SHOWN = {
    1007: "a file that is not UTF-8 cannot be written in a page",
    2010: "2001 levels of nesting are too long for a page",
    3023: "128 files, or a unit of 16,777,216 lines, are too large for a page",
}


def emitted_codes() -> set[int]:
    codes = set()
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            assigned = {target.id: node.value for node in ast.walk(scope) if isinstance(node, ast.Assign)
                        for target in node.targets if isinstance(target, ast.Name)}
            for call in ast.walk(scope):
                if isinstance(call, ast.Call) and _name(call.func) in REPORTING:
                    codes |= {c for arg in call.args for c in _numbers(arg, assigned) if 1000 <= c < 8000}
    return codes


def _name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _numbers(node: ast.expr, assigned: dict[str, ast.expr]):
    """The integers an argument may be: a literal, either side of a choice, or what a variable was given."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _numbers(node.body, assigned)
        yield from _numbers(node.orelse, assigned)
    elif isinstance(node, ast.Name) and node.id in assigned:
        yield from _numbers(assigned[node.id], {})


def test_every_code_micatool_emits_has_a_page_and_every_page_a_code():
    emitted = emitted_codes()
    assert len(emitted) >= 140  # the extraction still finds them
    assert set(help.codes()) == emitted


@pytest.mark.parametrize("code", help.codes())
def test_the_wrong_program_gives_the_code_and_the_fixed_one_nothing(code):
    page = help.page(code)
    assert 0 < len(page.title) <= 70 and page.prose
    if code in NOT_SHOWN:
        assert page.wrong == page.fixed == {}
        return
    wrong = help.diagnose(page.wrong)
    assert [d.code for d in wrong] == [code] * len(wrong) != [], [d.render() for d in wrong]
    fixed = help.diagnose(page.fixed)
    assert fixed == [], [d.render() for d in fixed]


def test_every_program_of_the_pages_is_in_the_canonical_layout():
    """Those that parse: the wrong programs of the 1xxx and 2xxx pages do not."""
    untidy = []
    for code in help.codes():
        page = help.page(code)
        for name, text in {**page.wrong, **page.fixed}.items():
            try:
                if format_source(SourceFile(name, text)) != text:
                    untidy.append(f"{code}: {name}")
            except CompileError:
                assert code < 3000
    assert untidy == []


def test_help_shows_a_page_with_what_micatool_says_of_its_program(capsys):
    assert main(["help", "5119"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["5119: a tracked place is never lent with 'address'", "=" * 50]
    said = out.index("micatool says:")
    assert out[said + 2] == ("    fit.mica:15:18: analyzer error 5119: data type 'tracked float64' cannot be used in "
                             "memory operation 'address of' (requires addressable)")
    fixed = out.index("Fixed:")
    assert said < fixed and out[fixed + 2] == "    program Fit;"
    assert "            AdamStep(address plainW, Gradient(w), address m, address v, t, 0.1, 0.9, 0.999, 1e-8);" in out
    assert out[-2:] == ["        WriteLn(w);", "    end."]


def test_help_shows_the_units_beside_a_program(capsys):
    assert main(["help", "3012"]) == 0
    out = capsys.readouterr().out
    assert "\nwith tokens.mica beside it:\n\n    unit Token;\n" in out
    assert "    tokens.mica:1:6: analyzer error 3012: this unit is named 'Token', but its file is 'tokens.mica'" in out


def test_help_codes_lists_every_code_by_range(capsys):
    assert main(["help", "codes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Every diagnostic code; `micatool help CODE` shows its page."
    assert [line for line in out if line[:1].isdigit()] == [
        "1xxx lexical", "2xxx syntax", "3xxx names and units", "4xxx types",
        "5xxx places, borrows and tracked values", "6xxx shapes", "7xxx GPU residency"]
    assert "    5119  a tracked place is never lent with 'address'" in out
    assert len([line for line in out if line.startswith("    ")]) == len(help.codes())


def test_help_of_an_unknown_code_is_a_malformed_command_line(capsys):
    assert main(["help", "5118"]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "micatool: error: no diagnostic code 5118; "
                                                "`micatool help codes` lists them\n")
