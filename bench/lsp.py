"""What micatool lsp spends on each answer (issue 34: diagnostics for a 1,000-line
file well under 300 ms). Times, best of --repeat:

  - the check behind every diagnostics notification (parse with recovery,
    units, analysis, the names' places) of a generated 1,000-line program,
    clean and with a slip on every 100th line;
  - each request the server answers, on examples/gpt/gpt.mica (which uses the
    units model.mica and quantized.mica beside it).

    python bench/lsp.py [--lines 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from gpt_sizes import cpu_model
from micatool.lsp import answers
from micatool.lsp.document import check

ROOT = Path(__file__).resolve().parents[1]
GPT = ROOT / "examples" / "gpt" / "gpt.mica"

ROUTINE = """
function Layer{i}(w : matrix[M, N] of float64; x : vector[N] of float64) : vector[M] of float64;
var
    h : vector[M] of float64;
    k : integer;
begin
    h := Tanh(w * x);
    for k := 0 to M - 1 do
        if h[k] < 0.0 then
            h[k] := 0.5 * h[k];
    result := h;
end;
"""


def program(lines: int) -> str:
    """A program of shape-generic routines, each called once, about `lines` lines long."""
    routines, calls, i = [], [], 0
    while len("".join(routines).split("\n")) + 2 * i + 12 < lines:
        routines.append(ROUTINE.format(i=i))
        calls.append(f"    x := Layer{i}(w, x);\n    WriteLn(Sum(x));\n")
        i += 1
    return ("program Big;\nvar\n    w : matrix[8, 8] of float64;\n    x : vector[8] of float64;\n"
            + "".join(routines) + "\nbegin\n    Seed(1);\n    Normal(address w, 0.0, 0.5);\n"
            + "    Normal(address x, 0.0, 1.0);\n" + "".join(calls) + "end.\n")


def with_slips(text: str) -> str:
    """A ';' left out on every 100th line that has one."""
    lines = text.split("\n")
    for n in range(99, len(lines), 100):
        lines[n] = lines[n].replace(";", "", 1)
    return "\n".join(lines)


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--lines", type=int, default=1000)
    options.add_argument("--repeat", type=int, default=7)
    args = options.parse_args()
    print(f"cpu: {cpu_model()}, {platform.machine()}")
    text = program(args.lines)
    slipped = with_slips(text)
    clean = check("big.mica", text)
    assert not clean.diagnostics, clean.diagnostics[:3]
    print(f"{len(text.splitlines())}-line program, clean:      "
          f"{best(args.repeat, lambda: check('big.mica', text)):7.1f} ms")
    errors = len(check("big.mica", slipped).diagnostics)
    print(f"{len(text.splitlines())}-line program, {errors} slips:   "
          f"{best(args.repeat, lambda: check('big.mica', slipped)):7.1f} ms")

    source = GPT.read_text()
    document = check(str(GPT), source)
    line = next(n for n, l in enumerate(source.split("\n"), 1) if "SampleText(" in l)
    col = source.split("\n")[line - 1].index("SampleText(") + 1
    requests = {
        "check (diagnostics)": lambda: check(str(GPT), source),
        "hover": lambda: answers.hover(document, line, col),
        "definition": lambda: answers.definition(document, line, col),
        "references": lambda: answers.references(document, line, col),
        "rename": lambda: answers.rename(document, line, col, "Generate"),
        "completion": lambda: answers.completion(document, line, col),
        "signature help": lambda: answers.signature_help(document, line, col + 11),
        "document symbols": lambda: answers.outline(document),
        "semantic tokens": lambda: answers.semantic_tokens(document),
        "inlay hints": lambda: answers.inlay_hints(document, 1, len(source.split("\n"))),
        "formatting": lambda: answers.formatted(document),
    }
    print(f"\nexamples/gpt/gpt.mica ({len(source.splitlines())} lines, and its units), each request:")
    for name, work in requests.items():
        print(f"  {name:20} {best(args.repeat, work):7.2f} ms")


if __name__ == "__main__":
    main()
