"""facts.py: docs/facts.md, what is in Mica today, every figure taken from this checkout.

Takes nothing; writes docs/facts.md (atomically, and only when it changed):

- the vocabulary: every op of the registry (micatool/compile/ops/) with its
  family, its signature, whether it runs on the GPU and whether it records on
  the tape. A signature is the checker's own when the op is checked by
  check_signature (exact types); otherwise it is the op's row in
  docs/language.md's tables, or the first call form of it written there.
- the diagnostic codes: every code the compiler's source passes as a literal
  to a call (found by walking each module's syntax tree), its range, and the
  message of its golden program in tests/diagnostics/ (or tests/units/errors/) when it has one.
- the example programs: lines, and the bytes of the fast-tier binary for each
  target (built through the cache, so a second run is quick).
- the course: each chapter of docs/course/ with its cells, the programs it
  ships under examples/course/ (tools/course.py) and its plots.
- the test count: the test cases pytest collects in tests/ (parametrized
  cases each count), by running `pytest --collect-only -q`.

    python tools/facts.py

tests/test_facts.py regenerates the whole page and fails while the committed
one differs, so a change that adds an op, a diagnostic, an example or a test
is one command away from a current page.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import course  # noqa: E402  (tools/course.py, beside this file)
from micatool import notebook, targets  # noqa: E402
from micatool.cache import write_atomically  # noqa: E402
from micatool.compile import compile_program, load_source, parse  # noqa: E402
from micatool.compile.ast import Unit  # noqa: E402
from micatool.compile.ops import OPS  # noqa: E402
from micatool.compile.ops.checking import Lent  # noqa: E402
from micatool.compile.ops.element_functions import FUNCTIONS as ELEMENT_FUNCTIONS  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402

PAGE = ROOT / "docs" / "facts.md"
RANGES = {"1": "lexical", "2": "syntax", "3": "names", "4": "types", "5": "places, borrows and tracked values",
          "6": "shapes", "7": "GPU residency"}


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def documented_forms() -> dict[str, str]:
    """Each op's description in docs/language.md: its table row (form: shapes -> result)
    or, for an op no table lists, the first call form of it in backticks."""
    text = (ROOT / "docs" / "language.md").read_text()
    forms: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        columns = [c.strip() for c in re.split(r"\|(?=(?:[^`]*`[^`]*`)*[^`]*$)", line.strip())[1:-1]]
        described = " → ".join(columns[1:])
        for code in re.findall(r"`([^`]*)`", columns[0]):
            for name in re.findall(r"[A-Z][A-Za-z0-9]*", code):
                form = code if "(" in code else name  # a list of names: each its own
                forms.setdefault(name, f"`{form}`: {described}")
    for call, name in re.findall(r"`(([A-Z][A-Za-z0-9]*)\([^`]*\))`", text):
        forms.setdefault(name, "`" + " ".join(call.split()) + "`")
    return forms


def signature(name: str, check, forms: dict[str, str]) -> str:
    exact = getattr(check, "signature", None)
    if exact is not None:
        params, result = exact
        shown = ", ".join(f"address {p.type}" if isinstance(p, Lent) else str(p) for p in params)
        return f"`{name}({shown})" + ("`" if str(result) == "no value" else f" : {result}`")
    return forms.get(name, "not documented in docs/language.md")


def families() -> dict[str, str]:
    """The family module of each op: the module with a literal `define("Name", ...)`, or
    elementwise for the rest of the table of elementwise functions (which it defines
    in a loop over the rows), or else the one module that names it in a string (a
    table or loop of definitions)."""
    defined, named = {}, {}
    for path in sorted((ROOT / "micatool" / "compile" / "ops").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "define" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                defined[node.args[0].value] = path.stem
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in OPS:
                named.setdefault(node.value, set()).add(path.stem)
    table = {f.name: "elementwise" for f in ELEMENT_FUNCTIONS}
    return {name: defined.get(name) or table.get(name) or "/".join(sorted(named.get(name, {"?"}))) for name in OPS}


def vocabulary() -> list[str]:
    forms, family = documented_forms(), families()
    lines = ["| op | family | signature | on the GPU | records on the tape |", "|---|---|---|---|---|"]
    spelled = sorted(name for name in OPS if ":" not in name)  # 'Max:reduce' is a form another op hands on
    for name in spelled:
        op = OPS[name]
        device = f"yes ({', '.join(op.kernels)})" if op.device is not None and op.kernels else \
            "yes" if op.device is not None else "no"
        lines.append(f"| `{name}` | {family[name]} | {cell(signature(name, op.check, forms))} | {cell(device)} | "
                     f"{'yes' if op.records else 'no'} |")
    on_gpu = sum(OPS[name].device is not None for name in spelled)
    return [f"{len(spelled)} predeclared procedures and functions; {on_gpu} of them run on the GPU when their "
            "operands live there.", "", *lines]


def diagnostic_codes() -> set[int]:
    """Every code the compiler passes as a literal argument of a call (an `error(...)`,
    a `Diagnostic(...)`): the codes it can report."""
    codes = set()
    for path in sorted((ROOT / "micatool").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                codes.update(a.value for a in node.args if isinstance(a, ast.Constant) and type(a.value) is int
                             and 1000 <= a.value <= 7999)
    return codes


def diagnostics() -> list[str]:
    golden: dict[int, list[Path]] = {}
    for path in sorted((ROOT / "tests" / "diagnostics").glob("[0-9][0-9][0-9][0-9]_*.err")):
        golden.setdefault(int(path.name[:4]), []).append(path)
    for path in sorted((ROOT / "tests" / "units" / "errors").glob("[0-9][0-9][0-9][0-9]_*/expected.err")):
        golden.setdefault(int(path.parent.name[:4]), []).append(path)
    codes = sorted(diagnostic_codes() | set(golden))
    lines = ["| code | kind | golden programs | the first one's message |", "|---|---|---|---|"]
    for code in codes:
        files = golden.get(code, [])
        message = files[0].read_text().splitlines()[0].split(f"error {code}: ", 1)[-1] if files else ""
        lines.append(f"| {code} | {RANGES[str(code)[0]]} | {len(files)} | {cell(message)} |")
    untested = [c for c in codes if c not in golden]
    return [f"{len(codes)} codes; {len(codes) - len(untested)} have a golden program in `tests/diagnostics/` "
            f"or `tests/units/errors/` "
            f"({sum(len(f) for f in golden.values())} programs in all), {len(untested)} have none yet.", "",
            *lines]


def examples() -> list[str]:
    names = [target.name for target in targets.TARGETS.values()]
    lines = ["| program | lines | " + " | ".join(f"{n} bytes" for n in names) + " |",
             "|---|---|" + "---|" * len(names)]
    for path in sorted((ROOT / "examples").glob("*/*.mica")):
        if isinstance(parse(load_source(str(path))), Unit):
            continue  # built into the programs that use it
        program = compile_program(load_source(str(path)))
        sizes = [cached_build(program, target, "fast").stat().st_size for target in targets.TARGETS.values()]
        flavour = " (GPU: the glibc flavour)" if program.uses_gpu else ""
        lines.append(f"| `{path.relative_to(ROOT).as_posix()}`{flavour} | {len(path.read_text().splitlines())} | "
                     + " | ".join(f"{size:,}" for size in sizes) + " |")
    return ["Each built at the fast tier, stripped, as `micatool size` measures them.", "", *lines]


def course_chapters() -> list[str]:
    """The course's chapters: each one's title, cells, the programs it ships as files, and its plots."""
    lines = ["| chapter | cells | programs in `examples/course/` | plots |", "|---|---|---|---|"]
    cells = programs = plots = 0
    for chapter in course.chapters():
        found = notebook.cells(chapter, chapter.read_text().splitlines())
        shipped = len(course.programs(chapter))
        drawn = sum(1 for each in found if each.options.plot)
        title = chapter.read_text().splitlines()[0].removeprefix("# ")
        lines.append(f"| [{cell(title)}](course/{chapter.name}) | {len(found)} | {shipped} | {drawn} |")
        cells, programs, plots = cells + len(found), programs + shipped, plots + drawn
    return [f"{len(course.chapters())} chapters in `docs/course/`, {cells} cells, each verified by "
            f"`micatool notebook verify docs/course`; {programs} programs, each also a file under "
            f"`examples/course/`; {plots} plots.", "", *lines]


def test_count() -> int:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "tests"], cwd=ROOT,
                          capture_output=True, text=True)
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.M)
    if found is None:
        raise SystemExit(f"pytest did not collect the tests:\n{done.stdout}{done.stderr}")
    return int(found.group(1))


def page(tests: int) -> str:
    """The whole page, given the number of test cases."""
    return "\n".join([
        "# Facts",
        "",
        "What is in Mica today. `python tools/facts.py` writes this page from the",
        "checkout (the op registry, the compiler's source, `tests/diagnostics/`,",
        "`examples/`, the test suite); do not edit it by hand. `tests/test_facts.py`",
        "fails while it differs from what the script writes.",
        "",
        "## The vocabulary",
        "",
        *vocabulary(),
        "",
        "## Diagnostic codes",
        "",
        *diagnostics(),
        "",
        "## Example programs",
        "",
        *examples(),
        "",
        "## The course",
        "",
        *course_chapters(),
        "",
        "## Tests",
        "",
        f"The test suite holds {tests} test cases (`pytest --collect-only -q tests`).",
        "",
    ])


def main() -> None:
    text = page(test_count())
    if not PAGE.is_file() or PAGE.read_text() != text:
        write_atomically(PAGE, text.encode())
        print(f"wrote {PAGE.relative_to(ROOT)}")
    else:
        print(f"{PAGE.relative_to(ROOT)} is up to date")


if __name__ == "__main__":
    main()
