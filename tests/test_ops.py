"""The registry of ops (micatool/compile/ops/) is whole: what one entry promises,
the rest of the project has.

- every kernel an op's device lowering or a device-tape record names renders
  from ptx/ for float32 and float64;
- every device-tape record has a backward;
- every op that records on the tape has a gradient-check case (test_gradcheck.py);
- every op with a device lowering runs in a device program (device_programs.py),
  and one without refuses GPU operands with 7005 at check time, so no program
  that checks can fail to lower on the device;
- the table of elementwise functions (micatool/compile/ops/element_functions.py)
  is whole: runtime_c/mica_element_functions.h is what it gives now, and every
  row has each piece that is code or a reference, not data: the op, its scalar
  C, array form and PTX device function, its formulas, its mathematical
  references and special cases in test_math.py, its gradient check's
  tolerance, and its line in docs/language.md.
"""

from __future__ import annotations

import re

from pathlib import Path

import pytest
import device_programs
import test_math
from test_gradcheck import CASES, TOLERANCES

from micatool.compile import front_end, ops, ptx
from micatool.compile.ops import element_functions, formulas
from micatool.diagnostics import CompileError, SourceFile
from micatool.compile.ptx import KERNELS

ROOT = Path(__file__).resolve().parents[1]

TYPES = ("f32", "f64")
# Ops with a device side that launch no kernel of their own: the crossings, and
# the tape's verbs, whose launches are the records' backward kernels.
NO_KERNELS_OF_THEIR_OWN = {"ToDevice", "ToHost", "Backward", "Gradient"}


def test_every_device_kernel_renders_for_both_types():
    missing = [f"{op.name}: mica_{kernel}_{t}" for op in ops.OPS.values() for kernel in op.kernels for t in TYPES
               if f"mica_{kernel}_{t}" not in KERNELS]
    assert missing == []


def test_an_op_with_a_device_lowering_names_its_kernels():
    for op in ops.OPS.values():
        if op.device is not None and op.name not in NO_KERNELS_OF_THEIR_OWN:
            assert op.kernels, op.name
        if op.device is None:
            assert not op.kernels and not op.tape, op.name


def test_every_device_tape_record_has_a_backward_and_its_kernels():
    for name, record in ops.TAPE.items():
        assert record.forward and record.backward, name
        if record.each:  # the runtime's generic node takes exactly one of each
            assert len(record.forward) == len(record.backward) == 1, name
        missing = [f"mica_{k}_{t}" for k in record.kernels for t in TYPES if f"mica_{k}_{t}" not in KERNELS]
        assert missing == [], name


def test_every_recorded_op_has_a_gradient_check_case():
    ids = {case.id for case in CASES}
    recorded = {op.name.split(":")[0] for op in ops.OPS.values() if op.records}
    unchecked = sorted(name for name in recorded if not any(i == name or i.startswith(name + "-") for i in ids))
    assert unchecked == []


def test_every_op_with_a_device_lowering_runs_in_a_device_program():
    sources = "\n".join(text for text in vars(device_programs).values() if isinstance(text, str) and "begin" in text)
    unexercised = sorted(op.name for op in ops.OPS.values()
                         if op.device is not None and ":" not in op.name and not re.search(rf"\b{op.name}\(", sources))
    assert unexercised == []


def test_every_op_a_program_spells_has_its_signature_and_one_line_of_documentation():
    """What the language server shows on hover, completion and signature help: the
    signature reads as a call of the op (`Sum(t : tensor) : ...`, or the bare name
    and its result for one called without parentheses, `Clock : float64`), the doc
    one sentence; the internal forms (a ':' in the name) have neither."""
    for op in ops.OPS.values():
        if ":" in op.name:
            assert op.signature == "" and op.doc == "", op.name
            continue
        assert op.signature == op.name or op.signature.startswith((op.name + "(", op.name + " : ")), op.name
        assert "\n" not in op.signature and op.signature.count("(") == op.signature.count(")"), op.name
        assert op.doc.strip() == op.doc and op.doc.endswith(".") and "\n" not in op.doc, op.name


HOST_ONLY_CALLS = [
    ("Normal", "Normal(address d, 0.0, 1.0)"),
    ("WriteLn", "WriteLn(d)"),
    ("Save", "Save('w.safetensors', d)"),
    ("SetShape", "SetShape(address d, 4)"),
    ("Copy", "Copy(d, 1, 2)"),
]


@pytest.mark.parametrize("name, call", HOST_ONLY_CALLS, ids=[name for name, _ in HOST_ONLY_CALLS])
def test_an_op_the_gpu_does_not_run_refuses_gpu_operands(name, call):
    assert ops.OPS[name].device is None
    text = f"program P;\nvar d : vector[4] of float32 on gpu;\nbegin\n    {call};\nend.\n"
    with pytest.raises(CompileError) as error:
        front_end(SourceFile("p.mica", text))
    codes = [d.code for d in error.value.diagnostics]
    assert len(codes) == 1 and codes[0] // 1000 in (4, 7), codes


# ------------------------------------------------------------ the table of elementwise functions

FUNCTIONS = element_functions.FUNCTIONS
MATH = element_functions.math_functions()


def test_the_runtime_header_of_elementwise_functions_is_generated():
    header = ROOT / "runtime_c" / "mica_element_functions.h"
    if header.read_text() != element_functions.header():
        pytest.fail(f"runtime_c/mica_element_functions.h is stale: run `{element_functions.HEADER_COMMAND}`")


def test_every_function_of_the_table_is_an_op_recording_its_kernels():
    for f in FUNCTIONS:
        op = ops.OPS[f.name]
        assert op.records and op.device is not None and op.kernels == [f"each_{f.c}"], f.name
        assert ops.TAPE[f.c] == ops.TapeRecord([f"each_{f.c}"], [f"{f.c}_back"], each=True), f.name
        assert (f.math is None) != (f.formula is None), f"{f.name}: a function of mica_math.h or a formula"


def test_every_formula_is_one_the_renderers_take():
    known = {m.c for m in MATH}
    for f in FUNCTIONS:
        for text in filter(None, (f.derivative, f.formula)):
            assert set(formulas.calls(text)) <= known, f"{f.name}: {text} calls a function not in the table"
            assert formulas.to_c(text, {"x": "x", "y": "y"}, str)
        if f.formula is not None:
            assert "y" not in formulas.to_c(f.formula, {"x": "x", "y": "<y>"}, str), f"{f.name}: a value of x alone"


@pytest.mark.parametrize("bad", ["x ** 2", "x and y", "z", "1.5 * x", "f(x, y)", "x if x else y", "y[0]"])
def test_a_formula_outside_the_language_is_refused(bad):
    with pytest.raises(formulas.FormulaError, match="formula"):
        formulas.parse(bad)


def test_a_formula_renders_to_c_and_ptx_in_the_same_order():
    assert formulas.to_c("1 - y * y", {"y": "y[i]"}, str) == "1 - y[i] * y[i]"
    assert formulas.to_c("1 / (y + y)", {"y": "y"}, str) == "1 / (y + y)"
    assert formulas.to_c("x - (x - y)", {"x": "x", "y": "y"}, str) == "x - (x - y)"
    assert formulas.to_c("-sin(x)", {"x": "x"}, lambda f: f"FN({f})") == "-FN(sin)(x)"
    assert formulas.to_c("1 if x > 0 else -1 if x < 0 else 0", {"x": "x"}, str) == "x > 0 ? 1 : x < 0 ? -1 : 0"
    code = formulas.to_ptx("1 - y * y", "%d", {"y": "%y"}, lambda n: f"#{n}")
    assert [(s.op, s.dst, s.args) for s in code.steps] == [("mul", "%fm_1", ("%y", "%y")),
                                                           ("sub", "%d", ("#1", "%fm_1"))]
    code = formulas.to_ptx("x if x > 0 else -1", "%d", {"x": "%x"}, lambda n: f"#{n}")
    assert [(s.op, s.dst, s.args) for s in code.steps] == [("setp", "%fm_p1", ("gt", "%x", "#0")),
                                                           ("selp", "%d", ("%x", "#-1", "%fm_p1"))]


def runtime(name: str) -> str:
    return (ROOT / "runtime_c" / name).read_text()


def test_every_function_of_mica_math_has_its_code():
    scalar, array = runtime("mica_math.inc"), runtime("mica_math_array.inc")
    for m in MATH:
        assert f"T FN(mica_{m.c})(T x)" in scalar, f"{m.c}: no scalar C in runtime_c/mica_math.inc"
        assert (f"static VT VN({m.c})(VT x)" in array) == m.array, f"{m.c}: the array form in mica_math_array.inc"
        for t in ptx.DTYPES:
            assert f"mica_{m.c}_{t}" in ptx._functions(t), f"{m.c}: no PTX device function in ptx/math.ptx.j2"
    for f in FUNCTIONS:
        assert (f"VN({f.c}_both)(VT x, VT *grad)" in array) == f.saves_derivative, f"{f.name}: the both form"


def test_every_function_of_mica_math_has_its_references_and_special_cases():
    specials = {name for name, *_ in test_math.SPECIALS}
    for m in MATH:
        assert m.c in test_math.REF_MP or m.c in test_math.TERMS_MP, f"{m.c}: no mpmath reference in test_math.py"
        assert m.c in test_math.REF_NP or m.c in test_math.TERMS_NP, f"{m.c}: no float64 reference in test_math.py"
        assert m.c in specials, f"{m.c}: no special cases in test_math.py"


def test_every_function_has_a_gradient_tolerance_and_its_documentation():
    vocabulary = next(line for line in (ROOT / "docs" / "language.md").read_text().splitlines()
                      if line.startswith("| `Tanh "))
    for f in FUNCTIONS:
        assert f.name in TOLERANCES, f"{f.name}: no tolerance in test_gradcheck.py"
        assert re.search(rf"\b{f.name}\b", vocabulary), f"{f.name}: not in docs/language.md's vocabulary"
