"""ptx: Mica's GPU kernels, rendered from the jinja2 templates in ptx/.

Takes kernel names (`mica_<op>_<f32|f64>`, docs/gpu.md) and gives one PTX
module: the header once, then the device functions of math.ptx.j2 that the
kernels call, then the kernels. `KERNELS` lists every kernel the templates
can render, with its parameters and launch shape.

Each family template is rendered once per element type and cut at its
`// mica-kernel NAME` (or `// mica-function NAME`) markers, so a kernel's text
is exactly what its template wrote. Rendering checks the rules of
ptx/common.ptx.j2 on every kernel (rounding named on every float operation;
fma only in a dot product's kernel, marked fused=yes; no .ftz, .approx, mad or
atomics): a kernel that breaks one, a template that
cannot render (`fail(...)`, an undefined name) and an unknown kernel name
are errors that name the kernel.
"""

from __future__ import annotations

import ast as python_ast
import functools
import itertools
import operator
import re
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterable

import jinja2

from ..diagnostics import InternalError
from .ops import element_functions, formulas

FAMILIES = ("elementwise", "reductions", "rows", "products", "gather", "images", "optimizers", "quantized")
DTYPES = ("f32", "f64")
# Families of integer kernels, rendered once: their kernels keep the C names
# (mica_matmul_i32_i8_i8), and their type is the result's.
INTEGER_FAMILIES = {"integer_products": "i32"}
# Every binary's PTX and `micatool emit-ptx` open with these bytes, so they still
# name the module where the renderer was first written (micatool.link.ptx).
HEADER = (
    "//\n// Mica kernels (micatool.link.ptx; templates in ptx/*.ptx.j2)\n//\n"
    ".version 7.0\n.target sm_70\n.address_size 64\n"
)


class PtxError(InternalError):
    """A kernel that cannot be rendered, or a name that is no kernel."""


@dataclass(frozen=True)
class Param:
    name: str
    ptx: str  # u64 (device pointer), s64 (extent), u32 (flag), f32 / f64 (scalar)
    kind: str  # ptr, int, flag, scalar


_ARITHMETIC = {python_ast.Add: operator.add, python_ast.Sub: operator.sub, python_ast.Mult: operator.mul,
               python_ast.FloorDiv: operator.floordiv}


@dataclass(frozen=True)
class Extent:
    """A launch extent a kernel's marker gives (`threads=rows * cols`): integers and
    the names of the kernel's extents and flags (and `batch`, the grid's height),
    joined by + - * // and parentheses. Read once with the templates; computed
    at each launch from that launch's extents, all known at compile time."""

    text: str
    tree: python_ast.expr = field(compare=False, repr=False)

    def of(self, extents: dict[str, int]) -> int:
        return self._compute(self.tree, extents)

    def _compute(self, node: python_ast.expr, extents: dict[str, int]) -> int:
        if isinstance(node, python_ast.Constant):
            return node.value
        if isinstance(node, python_ast.Name):
            value = extents[node.id]
            if not isinstance(value, int):
                raise PtxError(f"the launch extent {self.text!r} needs {node.id} as a number, found {value!r}")
            return value
        return _ARITHMETIC[type(node.op)](self._compute(node.left, extents), self._compute(node.right, extents))


def parse_extent(text: str, names: set[str]) -> Extent:
    """The marker's `text` as an Extent over `names`; a PtxError when it is anything else."""
    try:
        tree = python_ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        tree = None
    if tree is None or not _arithmetic(tree, names):
        raise PtxError(f"the launch extent {text!r} is not integer arithmetic (+ - * //) over "
                       f"{', '.join(sorted(names))}")
    return Extent(text.strip(), tree)


def _arithmetic(node: python_ast.expr, names: set[str]) -> bool:
    if isinstance(node, python_ast.BinOp):
        return type(node.op) in _ARITHMETIC and _arithmetic(node.left, names) and _arithmetic(node.right, names)
    if isinstance(node, python_ast.Constant):
        return type(node.value) is int
    return isinstance(node, python_ast.Name) and node.id in names


@dataclass(frozen=True)
class Kernel:
    name: str
    family: str
    dtype: str
    params: tuple[Param, ...]
    threads: Extent  # how many threads to launch
    grid_y: Extent | None  # the grid's y extent when not 1 (gemm: the batch)
    calls: tuple[str, ...]  # device functions it needs
    text: str


# ------------------------------------------------------------ literals


_HEX = re.compile(r"([+-]?)0x([0-9a-f]+)(?:\.([0-9a-f]*))?p([+-]?\d+)$", re.I)


def _exact(text: str) -> Fraction:
    """The exact value of a C literal (decimal or hex float), without rounding."""
    m = _HEX.match(text)
    if not m:
        return Fraction(text)
    sign, whole, frac, exp = m.groups()
    frac = frac or ""
    value = Fraction(int(whole + frac, 16), 16 ** len(frac)) * Fraction(2) ** int(exp)
    return -value if sign == "-" else value


def _f32_bits(x: float) -> int:
    """The bits of x rounded to float32 as a C cast rounds it (struct rounds so)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _round_f32(q: Fraction) -> int:
    """The bits of q rounded once to float32, ties to even (as the C compiler reads `1.5e-3f`):
    the float32 nearest float(q) or one of its neighbours of the same sign."""
    near = _f32_bits(float(q))
    sign = near & 0x80000000
    around = [b for b in (near - 1, near, near + 1) if b & 0x80000000 == sign and b & 0x7FFFFFFF < 0x7F800000]
    return min(around, key=lambda b: (abs(Fraction(_f32_value(b)) - q), b & 1))


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


_SPECIAL = {
    "f32": {"inf": "0f7F800000", "-inf": "0fFF800000", "nan": "0f7FC00000", "-0": "0f80000000"},
    "f64": {"inf": "0d7FF0000000000000", "-inf": "0dFFF0000000000000", "nan": "0d7FF8000000000000",
            "-0": "0d8000000000000000"},
}


def literal(dtype: str, text: str) -> str:
    """The PTX literal of type dtype for the C literal `text` written in that type
    (`0.55f` for f32, `0.55` for f64): rounded once from its exact value."""
    text = str(text)
    if text in _SPECIAL[dtype]:
        return _SPECIAL[dtype][text]
    q = _exact(text)
    if dtype == "f32":
        return f"0f{_round_f32(q):08X}"
    return f"0d{_f64_bits(float(q)):016X}"


def cast_literal(dtype: str, text: str) -> str:
    """`(T)1e-5`: the double literal, then converted to T (rounded twice for f32)."""
    x = float(_exact(str(text)))
    return f"0f{_f32_bits(x):08X}" if dtype == "f32" else f"0d{_f64_bits(x):016X}"


# ------------------------------------------------------------ templates


_KINDS = {"": ("ptr", "u64"), "i": ("int", "s64"), "u": ("flag", "u32")}


def parse_params(dtype: str, spec: str) -> list[Param]:
    """'out a s:T n:i' -> parameters: a bare name is a device pointer, `:i` an
    s64 extent, `:u` a u32 flag, `:T` a scalar of the element type."""
    out = []
    for word in spec.split():
        name, _, kind = word.partition(":")
        if kind == "T":
            out.append(Param(name, dtype, "scalar"))
        elif kind in _KINDS:
            out.append(Param(name, _KINDS[kind][1], _KINDS[kind][0]))
        else:
            raise PtxError(f"parameter {word!r}: unknown kind {kind!r}")
    return out


def _fail(message: str):
    raise PtxError(f"cannot render: {message}")


def template_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "ptx", here.parents[1] / "ptx"):  # installed, then a checkout
        if (candidate / "common.ptx.j2").is_file():
            return candidate
    raise PtxError(f"no PTX templates beside {here}")


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def render_template(family: str, dtype: str) -> str:
    """A whole family template (or math) rendered for one element type."""
    counter = itertools.count(1)
    current = {"kernel": None}  # the kernel being rendered, for errors
    context = {
        "begin": lambda name: current.update(kernel=name) or "",
        "T": dtype,
        "B": "b32" if dtype == "f32" else "b64",
        "SIZE": 4 if dtype == "f32" else 8,
        "LOG2": 2 if dtype == "f32" else 3,
        "c": functools.partial(literal, dtype),
        "cd": functools.partial(cast_literal, dtype),
        "uid": lambda: next(counter),
        "params": functools.partial(parse_params, dtype),
        "fail": _fail,
        "functions": element_functions.FUNCTIONS,
        "formula_code": functools.partial(_formula_code, dtype),
        "c_formula": _c_formula,
        "ROW_K": _row_constants(dtype),
    }
    try:
        text = _environment().get_template(f"{family}.ptx.j2").render(context)
    except (jinja2.TemplateError, PtxError) as e:
        where = f", in {current['kernel']}" if current["kernel"] else ""
        raise PtxError(f"{family}.ptx.j2 ({dtype}){where}: {e}") from e
    return re.sub(r"\n[ \t]*(?=\n)", "", text)  # no blank lines inside a kernel


def _formula_code(dtype: str, text: str, dst: str, x: str, y: str | None) -> formulas.Code:
    """The formula's PTX steps (common.ptx.j2's `formula`), its constants literals of dtype."""
    names = {"x": x} if y is None else {"x": x, "y": y}
    return formulas.to_ptx(text, dst, names, lambda n: literal(dtype, str(n)))


def _c_formula(text: str) -> str:
    """The formula as C, for a kernel's comment."""
    return formulas.to_c(text, {"x": "x", "y": "y"}, str)


def _row_constants(dtype: str) -> dict[str, str]:
    """Each elementwise function's own constants (its row of the table), as the
    C literals of dtype's width, for math.ptx.j2's K."""
    return {name: f64 if dtype == "f64" else f32
            for f in element_functions.FUNCTIONS for name, (f64, f32) in f.constants.items()}


_MARK = re.compile(r"^// mica-(kernel|function) (\w+)(.*)$", re.M)
_CALL = re.compile(r"\bcall(?:\.uni)?\s+\([^)]*\),\s*(\w+)")


def _chunks(text: str) -> list[tuple[str, str, str, str]]:
    """(kind, name, attributes, text) for every marked kernel or function."""
    marks = list(_MARK.finditer(text))
    return [
        (m.group(1), m.group(2), m.group(3), text[m.start() : marks[k + 1].start() if k + 1 < len(marks) else len(text)])
        for k, m in enumerate(marks)
    ]


# The rules of ptx/common.ptx.j2 (docs/gpu.md), checked on every rendered kernel and function.
_NO_FMA = (re.compile(r"^\s*(@!?%\w+\s+)?(fma|mad)\.\S*f(32|64)", re.M), "uses a fused multiply-add")
_RULES = [
    (re.compile(r"\.(ftz|approx)\b"), "uses .ftz or .approx"),
    (re.compile(r"^\s*(@!?%\w+\s+)?mad\.\S*f(32|64)", re.M), "uses mad (a dot product's step is fma.rn)"),
    (re.compile(r"^\s*(@!?%\w+\s+)?(atom|red)\.", re.M), "uses an atomic"),
    (re.compile(r"^\s*(@!?%\w+\s+)?(add|sub|mul|div|sqrt)\.f(32|64)\b", re.M), "has a float operation without .rn"),
    (re.compile(r"^\s*(@!?%\w+\s+)?(rcp|rsqrt|ex2|lg2|sin|cos|tanh)\.", re.M), "uses an approximate function"),
    (re.compile(r"^\s*(@!?%\w+\s+)?cvt\.f32\.f64\b", re.M), "narrows f64 to f32 without .rn"),
    (re.compile(r"^\s*(@!?%\w+\s+)?cvt\.f(32|64)\.[su](32|64)\b", re.M), "converts an integer without .rn"),
]


def _check(name: str, text: str, fused: bool = False) -> None:
    """Raise PtxError where the text breaks a rule. fused: the kernel is a dot
    product's loop, whose step is fma.rn as on the host (mica_gemm.c)."""
    code = re.sub(r"//[^\n]*", "", text)
    for rule, why in _RULES if fused else [*_RULES, _NO_FMA]:
        if m := rule.search(code):
            raise PtxError(f"{name} {why}: {m.group(0).strip()!r}")


@functools.cache
def _functions(dtype: str) -> dict[str, str]:
    """Device functions of math.ptx.j2, in template order (callees first)."""
    out = {}
    for kind, name, _, text in _chunks(render_template("math", dtype)):
        if kind != "function":
            raise PtxError(f"math.ptx.j2 marks {name} as a kernel")
        _check(name, text)
        out[name] = text
    return out


_PARAM_KINDS = {"u64": "ptr", "s64": "int", "u32": "flag", "f32": "scalar", "f64": "scalar"}


def _kernel(family: str, dtype: str, name: str, attributes: str, text: str) -> Kernel:
    """A kernel's entry in KERNELS, read from its rendered text and its marker's attributes."""
    where = f"{family}.ptx.j2 ({dtype}): {name}"
    signature = re.search(r"\.entry\s+\w+\((.*?)\)", text, re.S)
    if signature is None:
        raise PtxError(f"{where} has no entry")
    params = tuple(Param(p, t, _PARAM_KINDS[t]) for t, p in re.findall(r"\.param\s+\.(\w+)\s+(\w+)", signature.group(1)))
    calls = tuple(dict.fromkeys(_CALL.findall(text)))
    attrs = dict(part.strip().split("=", 1) for part in attributes.split(";"))
    if "threads" not in attrs or not attrs.keys() <= {"threads", "grid_y", "fused"}:
        raise PtxError(f"{where}: the marker says {attributes.strip()!r}, not threads=... and maybe grid_y=..., fused=yes")
    _check(name, text, fused=attrs.get("fused") == "yes")
    names = {p.name for p in params if p.kind in ("int", "flag")} | {"batch"}
    try:
        threads = parse_extent(attrs["threads"], names)
        grid_y = parse_extent(attrs["grid_y"], names) if "grid_y" in attrs else None
    except PtxError as e:
        raise PtxError(f"{where}: {e}") from None
    return Kernel(name, family, dtype, params, threads, grid_y, calls, text)


def _index() -> dict[str, Kernel]:
    kernels: dict[str, Kernel] = {}
    for family in FAMILIES:
        for dtype in DTYPES:
            for kind, name, attributes, text in _chunks(render_template(family, dtype)):
                if kind != "kernel" or name in kernels:
                    raise PtxError(f"{family}.ptx.j2 ({dtype}): {name} is marked twice or is no kernel")
                kernels[name] = _kernel(family, dtype, name, attributes, text)
    for family, dtype in INTEGER_FAMILIES.items():
        for kind, name, attributes, text in _chunks(render_template(family, dtype)):
            if kind != "kernel" or name in kernels:
                raise PtxError(f"{family}.ptx.j2: {name} is marked twice or is no kernel")
            kernels[name] = _kernel(family, dtype, name, attributes, text)
    return kernels


KERNELS: dict[str, Kernel] = _index()


def _needed(names: list[str]) -> list[str]:
    """The device functions the kernels call, transitively, in definition order."""
    wanted: set[str] = set()
    todo = [call for name in names for call in KERNELS[name].calls]
    functions = {name: text for dtype in DTYPES for name, text in _functions(dtype).items()}
    while todo:
        fn = todo.pop()
        if fn in wanted:
            continue
        if fn not in functions:
            raise PtxError(f"no device function {fn}")
        wanted.add(fn)
        todo.extend(_CALL.findall(functions[fn]))
    return [fn for fn in functions if fn in wanted]


def render(kernels: Iterable[str]) -> str:
    """One PTX module holding the named kernels (each once, in the order given)."""
    names = list(dict.fromkeys(kernels))
    unknown = [name for name in names if name not in KERNELS]
    if unknown:
        raise PtxError(f"no PTX kernel named {', '.join(unknown)}")
    functions = {name: text for dtype in DTYPES for name, text in _functions(dtype).items()}
    parts = [HEADER]
    parts += [functions[fn] for fn in _needed(names)]
    parts += [KERNELS[name].text for name in names]
    return "\n".join(part.strip("\n") + "\n" for part in parts)


# ------------------------------------------------------------ the C runtime's launch signatures


# The letters mica_gpu_launch (runtime_c/mica_gpu.c) reads a launch's arguments
# by, one per PTX parameter: a device pointer, an int64 extent, a 32-bit flag,
# a float or a double scalar.
LETTERS = {"u64": "p", "s64": "i", "u32": "u", "f32": "f", "f64": "d"}
SIGNATURES_COMMAND = "python tools/kernel_signatures.py"


def signature(kernel: Kernel) -> str:
    """The kernel's launch signature: 'ppfi' for (u64, u64, f32, s64)."""
    return "".join(LETTERS[p.ptx] for p in kernel.params)


def _c_string(text: str | None) -> str:
    return "NULL" if text is None else f'"{text}"'


def _each_signatures() -> tuple[str, str]:
    """The signatures every elementwise function's kernels share, forward and backward
    (the table's rows have no parameters of their own), checked on every one."""
    shared = {}
    for f in element_functions.FUNCTIONS:
        for base in (f"mica_each_{f.c}", f"mica_{f.c}_back"):
            kind = "forward" if base.startswith("mica_each_") else "backward"
            found = tuple(signature(KERNELS[f"{base}_{t}"]) for t in DTYPES)
            if shared.setdefault(kind, found) != found:
                raise PtxError(f"{base} takes {found}, not the {kind} signature {shared[kind]} of the others")
    return shared["forward"], shared["backward"]


def signatures_header() -> str:
    """runtime_c/mica_kernel_signatures.h: every kernel's launch signature, by the
    base name the device tape launches it by (mica_gpu_tape.c's K: the name less
    its last `_f32`/`_f64`) and that suffix, so the C never types a signature.
    The elementwise functions' kernels come from the table's list
    (mica_element_functions.h), all with the signatures they share."""
    each = {f"mica_{k}" for f in element_functions.FUNCTIONS for k in (f"each_{f.c}", f"{f.c}_back")}
    table: dict[str, dict[str, str]] = {}
    for name, kernel in KERNELS.items():
        if kernel.family in INTEGER_FAMILIES:  # the tape records float operations only
            continue
        base, _, suffix = name.rpartition("_")
        if suffix not in DTYPES:
            raise PtxError(f"{name}: a kernel's name ends in _f32 or _f64, for mica_gpu_tape.c's K")
        if base not in each:
            table.setdefault(base, {})[suffix] = signature(kernel)
    width = max(map(len, table)) + 3  # the signatures in one column
    rows = "".join(f"    {{{_c_string(base) + ',':<{width}} {', '.join(_c_string(s.get(t)) for t in DTYPES)}}},\n"
                   for base, s in table.items())
    forward, backward = (", ".join(_c_string(s) for s in pair) for pair in _each_signatures())
    return f"""/* mica_kernel_signatures.h: generated by `{SIGNATURES_COMMAND}` from the
 * kernels' parameters (the templates in ptx/, read by
 * micatool.compile.ptx.signatures_header). Do not edit: change the template,
 * then run that command (tests/test_ptx.py fails until then).
 *
 * Each kernel's launch signature for mica_gpu_launch, one letter per PTX
 * parameter (p a device pointer, i an int64_t extent, u a 32-bit flag, f a
 * float scalar, d a double), by base name and element type: the kernel
 * named base_f32 or base_f64, NULL where there is none. mica_gpu_tape.c
 * launches by these, so a launch's signature is its kernel's.
 */
#ifndef MICA_KERNEL_SIGNATURES_H
#define MICA_KERNEL_SIGNATURES_H

#include "mica_element_functions.h"

static const struct {{
    const char *base, *f32, *f64;
}} mica_kernel_signatures[] = {{
{rows}/* every elementwise function's forward and backward kernels */
#define MICA_EACH_SIGNATURES(F) {{"mica_each_" #F, {forward}}}, {{"mica_" #F "_back", {backward}}},
    MICA_ELEMENT_FUNCTIONS(MICA_EACH_SIGNATURES)
#undef MICA_EACH_SIGNATURES
}};

#endif
"""
