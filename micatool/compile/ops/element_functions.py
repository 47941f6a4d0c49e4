"""The elementwise functions of one float: one row each, and everything that
lists them is made from this table.

A row holds what the project knows of one function as data: its Mica name,
its C name, its derivative, whether it runs as an array form, and, for a
function of runtime_c/mica_math.h, the domain tests/test_math.py measures it
over and the error bound docs/math.md documents and the test asserts. From
the rows come:

- the ops (elementwise.py; numbers.py for Abs, which takes integers too), each
  recording the device-tape record `<c>`: kernels each_<c> and <c>_back;
- runtime_c/mica_element_functions.h (header() below, written by `python
  tools/element_functions.py`; tests/test_ops.py fails while it is stale): the
  X-macro lists of mica_math.h, mica_math_array.{h,c}, mica_ops.h, mica_ops.inc
  and mica_kernel_signatures.h, and the inline scalar forms of the functions
  that are one instruction;
- the PTX kernels each_<c> and <c>_back (micatool.compile.ptx hands the rows to
  ptx/elementwise.ptx.j2, which writes them from the formulas);
- the tests' lists: test_math, test_math_array, test_ptx, test_gradcheck,
  device_programs, and the C harnesses through the header.

What is code stays in one place each: a function of mica_math.h has its
scalar C in runtime_c/mica_math.inc, its array form in mica_math_array.inc
and its PTX device function in ptx/math.ptx.j2 (docs/architecture.md, "Adding
an op"). Derivatives and one-instruction functions are formulas (formulas.py),
rendered to C and to PTX from the same text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import formulas

HEADER_COMMAND = "python tools/element_functions.py"


@dataclass(frozen=True)
class MathFunction:
    """A function of runtime_c/mica_math.h: mica_<c>_f64 and mica_<c>_f32
    (mica_math.inc), the PTX device function mica_<c>_<T> (ptx/math.ptx.j2)
    and, when `array`, the array form mica_<c>_array_<S> (mica_math_array.inc),
    bit for bit the scalar function. `bound`: its documented error bound in
    ulps, float64 then float32 (docs/math.md §11), which tests/test_math.py
    asserts on inputs spread over `domain`: per width, (share, generator,
    arguments...) with the generators of tests/test_math.py."""

    c: str
    bound: tuple[float, float]
    domain: dict[int, tuple[tuple, ...]]
    array: bool = False


@dataclass(frozen=True)
class ElementFunction:
    """An elementwise function, an op of Mica's vocabulary.

    c: its C name. The scalar function is mica_<c>_<S>, the tensor kernel
       mica_each_<c>_<S> and the tape node mica_t_<c>_<S> (mica_ops.inc), the
       PTX kernels mica_each_<c>_<T> and mica_<c>_back_<T>.
    math: its scalar function, a function of mica_math.h; or
    formula: for a function that is one instruction or a select, its formula
       of x, from which the header writes the scalar function as an inline.
    derivative: a formula of x (the input) and y (the output). The backward
       computes g * derivative; one that calls a function with an array form
       on x runs as that array form, a stretch at a time.
    helpers: the functions of mica_math.h its derivative has of its own (gelu_grad).
    saves_derivative: the forward keeps the derivative beside the value for
       the backward, both from one array form mica_<c>_both_array_<S>.
    constants: the constants its scalar C, its array form and its PTX share that
       no other function uses (those shared are in runtime_c/mica_math_consts.h):
       name -> (float64 literal, float32 literal), each the value's exact C text;
       the C names them NAME_F64 and NAME_F32 (K(NAME) in code written for T).
    checked_at: the inputs tests/test_gradcheck.py checks its gradient at:
       normal, positive (the domain of Log and Sqrt) or away (|x| >= 0.1, off a kink).
    doc: the line an editor shows for the op (Op.doc), under its signature.
    """

    name: str
    c: str
    derivative: str
    math: MathFunction | None = None
    formula: str | None = None
    helpers: tuple[MathFunction, ...] = ()
    saves_derivative: bool = False
    constants: dict[str, tuple[str, str]] = field(default_factory=dict)
    checked_at: str = "normal"
    doc: str = ""

    @property
    def signature(self) -> str:
        """How a call reads (Op.signature): a number or a float tensor in, the same shape out."""
        return f"{self.name}(x : number or tensor) : same shape"

    @property
    def array(self) -> bool:
        """The forward runs as the array form of its function."""
        return self.math is not None and self.math.array


# Test domains: (share of the inputs, generator, arguments) per width.
SIGMOID_DOMAIN = {
    64: ((0.4, "uniform", -745, 40), (0.4, "uniform", -20, 20), (0.2, "logmag", 1e-20, 1)),
    32: ((0.4, "uniform", -103, 20), (0.4, "uniform", -20, 20), (0.2, "logmag", 1e-10, 1)),
}
GELU_DOMAIN = {
    64: ((0.4, "uniform", -21.5, 10), (0.4, "uniform", -6, 6), (0.2, "logmag", 1e-20, 1)),
    32: ((0.4, "uniform", -12, 10), (0.4, "uniform", -6, 6), (0.2, "logmag", 1e-10, 1)),
}
SILU_DOMAIN = {
    64: ((0.4, "uniform", -740, 50), (0.4, "uniform", -20, 20), (0.2, "logmag", 1e-20, 1)),
    32: ((0.4, "uniform", -100, 25), (0.4, "uniform", -20, 20), (0.2, "logmag", 1e-10, 1)),
}
# sin and cos: tiny and small |x| (no reduction), the Cody-Waite range
# (|x| < 2^20 f64, 2^15 f32), arguments next to multiples of pi/2 (the
# hardest reductions) and to the seams between quadrants, the switch to
# Payne-Hanek, and the whole range above it up to the largest finite value.
TRIG_DOMAIN = {
    64: ((0.10, "logmag", 1e-300, 0.785), (0.20, "uniform", -8, 8), (0.20, "logmag", 0.785, 2.0**20),
         (0.10, "near_pio2", 2.0**20 / 1.5707963, 0.0), (0.05, "near_pio2", 2.0**20 / 1.5707963, 0.5),
         (0.05, "near_pio2", 1e300, 0.0), (0.05, "logmag", 2.0**19, 2.0**21), (0.25, "logmag", 2.0**20, 1.7e308)),
    32: ((0.10, "logmag", 1e-30, 0.785), (0.20, "uniform", -8, 8), (0.20, "logmag", 0.785, 2.0**15),
         (0.10, "near_pio2", 2.0**15 / 1.5707963, 0.0), (0.05, "near_pio2", 2.0**15 / 1.5707963, 0.5),
         (0.05, "near_pio2", 1e30, 0.0), (0.05, "logmag", 2.0**14, 2.0**16), (0.25, "logmag", 2.0**15, 3.4e38)),
}

FUNCTIONS: tuple[ElementFunction, ...] = (
    ElementFunction("Tanh", "tanh", "1 - y * y", MathFunction("tanh", (1.5, 1.5), {
        64: ((0.4, "logmag", 1e-12, 25), (0.2, "uniform", -1, 1), (0.1, "uniform", 0.5, 0.6),
             (0.3, "uniform", -22, 22)),
        32: ((0.4, "logmag", 1e-6, 12), (0.2, "uniform", -1, 1), (0.1, "uniform", 0.5, 0.6),
             (0.3, "uniform", -10, 10)),
    }, array=True), constants={
        # |x| below TINY: tanh x = x; below SMALL: the polynomial; above ONE: +-1
        "TANH_TINY": ("0x1p-27", "0x1p-12"), "TANH_SMALL": ("0.55", "0.55"), "TANH_ONE": ("22.0", "10.0"),
    }, doc="The hyperbolic tangent of x, element by element."),
    ElementFunction("Exp", "exp", "y", MathFunction("exp", (1.0, 1.0), {
        64: ((0.4, "uniform", -745.1, 709.78), (0.2, "uniform", -1, 1), (0.2, "logmag", 1e-30, 1),
             (0.1, "uniform", -745.1, -708.4), (0.1, "uniform", 700, 709.78)),
        32: ((0.4, "uniform", -103.9, 88.72), (0.2, "uniform", -1, 1), (0.2, "logmag", 1e-20, 1),
             (0.1, "uniform", -103.9, -87.4), (0.1, "uniform", 80, 88.72)),
    }, array=True), constants={
        # exp(x) is +inf above OVERFLOW (exp(709.79) is past DBL_MAX) and +0 below
        # UNDERFLOW (half the least subnormal)
        "EXP_OVERFLOW": ("710.0", "89.0"), "EXP_UNDERFLOW": ("-746.0", "-104.0"),
    }, doc="e to the power x, element by element."),
    ElementFunction("Log", "log", "1 / x", MathFunction("log", (1.0, 1.0), {
        64: ((0.4, "positive_bits"), (0.25, "uniform", 0.7, 1.42), (0.25, "near_one", 1e-17, 0.3),
             (0.1, "subnormals")),
        32: ((0.4, "positive_bits"), (0.25, "uniform", 0.7, 1.42), (0.25, "near_one", 1e-8, 0.3),
             (0.1, "subnormals")),
    }, array=True), checked_at="positive", doc="The natural logarithm of x, element by element."),
    ElementFunction("Sqrt", "sqrt", "1 / (y + y)", formula="sqrt(x)", checked_at="positive",
                    doc="The square root of x, element by element."),
    ElementFunction("Relu", "relu", "1 if x > 0 else 0", formula="x if x > 0 else 0", checked_at="away",
                    doc="x where it is positive, else 0, element by element."),
    ElementFunction("Gelu", "gelu", "gelu_grad(x)", MathFunction("gelu", (2.5, 2.5), GELU_DOMAIN, array=True),
                    helpers=(MathFunction("gelu_grad", (4.5, 5.0), GELU_DOMAIN, array=True),),
                    saves_derivative=True, constants={
        # gelu(x) = x*sigmoid(v), v = K*(x + C*x^3), each constant as hi + lo; K3 = 3*K*C
        "GELU_K_HI": ("0x1.9884533d43651p+0", "0x1.988454p+0"),
        "GELU_K_LO": ("-0x1.cbc0d30ebfd15p-54", "-0x1.857936p-25"),
        "GELU_C_HI": ("0x1.6e4e26d4801f7p-5", "0x1.6e4e26p-5"),
        "GELU_C_LO": ("0x1.441355475a31ap-59", "0x1.a9003ep-30"),
        "GELU_K3": ("0x1.b6676bf7450fp-3", "0x1.b6676cp-3"),
        # x above ONE answers x (gelu_grad 1); below ZERO -0 (gelu_grad +0)
        "GELU_ONE": ("10.0", "10.0"), "GELU_ZERO": ("-25.0", "-12.0"),
        # below this |x| the array forms keep gelu's exact products on Dekker's path: C*x^3's
        # exponent, -5 + 3*log2|x|, must be at least EMIN + 23 (float) or EMIN + 52 (double)
        # for an fma to give Dekker's error; the bound leaves a wide margin (-95 > -103 and
        # -905 > -970)
        "GELU_FUSED_TINY": ("0x1p-300", "0x1p-30"),
    }, doc="The GELU activation of x in its tanh form, element by element."),
    ElementFunction("Silu", "silu", "silu_grad(x)", MathFunction("silu", (2.5, 2.5), SILU_DOMAIN, array=True),
                    helpers=(MathFunction("silu_grad", (3.5, 3.5), SILU_DOMAIN, array=True),), constants={
        # below ZERO -0; silu_grad above GRAD_ONE answers 1
        "SILU_ZERO": ("-800.0", "-110.0"), "SILU_GRAD_ONE": ("50.0", "25.0"),
    }, doc="x * Sigmoid(x), element by element."),
    ElementFunction("Sigmoid", "sigmoid", "y * (1 - y)", MathFunction("sigmoid", (1.5, 1.5), SIGMOID_DOMAIN,
                                                                     array=True),
                    doc="1 / (1 + exp(-x)), element by element."),
    ElementFunction("Softplus", "softplus", "sigmoid(x)", MathFunction("softplus", (1.5, 1.5), {
        64: ((0.3, "uniform", -800, 60), (0.3, "uniform", -20, 20), (0.2, "uniform", -2, 2),
             (0.2, "logmag", 1e-20, 1)),
        32: ((0.3, "uniform", -125, 30), (0.3, "uniform", -20, 20), (0.2, "uniform", -2, 2),
             (0.2, "logmag", 1e-10, 1)),
    }, array=True), constants={
        # past ONE exp(-x) is under half an ulp of x, and softplus(x) = x
        "SOFTPLUS_ONE": ("40.0", "20.0"),
    }, doc="log(1 + exp(x)), element by element, computed so that it never overflows."),
    ElementFunction("Abs", "abs", "1 if x > 0 else -1 if x < 0 else 0", formula="abs(x)", checked_at="away",
                    doc="The absolute value of x, element by element; of an integer, an integer."),
    ElementFunction("Sin", "sin", "cos(x)", MathFunction("sin", (1.0, 1.0), TRIG_DOMAIN),
                    doc="The sine of x in radians, element by element."),
    ElementFunction("Cos", "cos", "-sin(x)", MathFunction("cos", (1.0, 1.0), TRIG_DOMAIN),
                    doc="The cosine of x in radians, element by element."),
)

BY_NAME = {f.name: f for f in FUNCTIONS}


def math_functions() -> list[MathFunction]:
    """Every function of mica_math.h the table names: each op's own, then its helpers."""
    return [m for f in FUNCTIONS if f.math is not None for m in (f.math, *f.helpers)]


def array_functions() -> list[str]:
    return [m.c for m in math_functions() if m.array]


# ------------------------------------------------------------ the runtime's header


def _c_call(function: str) -> str:
    """A call in a formula, in code written once for T (FN(name) is mica_name_S)."""
    return f"FN({function})"


_INLINE_CALLS = {"f64": {"sqrt": "__builtin_sqrt", "abs": "__builtin_fabs"},
                 "f32": {"sqrt": "__builtin_sqrtf", "abs": "__builtin_fabsf"}}


def _kernel_lines(f: ElementFunction) -> str:
    """mica_ops.inc's forward, backward and tape node of one function."""
    forward = f"EACH_ARRAY({f.c})" if f.array else f"EACH_MAP({f.c})"
    if f.saves_derivative:
        return f"{forward} TAPE_SAVING({f.c}, \"{f.name}\")"
    called = formulas.calls(f.derivative)
    if len(called) == 1 and f.derivative == f"{called[0]}(x)" and called[0] in array_functions():
        backward = f"BACK_ARRAY({f.c}, {called[0]})"
    else:
        backward = f"BACK_FROM({f.c}, ({formulas.to_c(f.derivative, {'x': 'x[i]', 'y': 'y[i]'}, _c_call)}))"
    return f"{forward} {backward} TAPE_NODE({f.c}, \"{f.name}\")"


def _inline(f: ElementFunction, s: str) -> str:
    t = "double" if s == "f64" else "float"
    body = formulas.to_c(f.formula, {"x": "x"}, _INLINE_CALLS[s].__getitem__)
    return f"static inline {t} mica_{f.c}_{s}({t} x) {{ return {body}; }}"


def _xmacro(name: str, items: list[str]) -> str:
    return f"#define {name}(X) " + " ".join(f"X({i})" for i in items)


def _constants() -> str:
    return "\n".join(f"#define {name}_F64 {f64}\n#define {name}_F32 {f32}f"
                     for f in FUNCTIONS for name, (f64, f32) in f.constants.items())


def header() -> str:
    """runtime_c/mica_element_functions.h, as the table gives it now."""
    math = [m.c for m in math_functions()]
    kernels = " \\\n    ".join(_kernel_lines(f) for f in FUNCTIONS)
    inlines = "\n".join(_inline(f, s) for f in FUNCTIONS if f.formula is not None for s in ("f64", "f32"))
    return f"""/* mica_element_functions.h: generated by `{HEADER_COMMAND}` from the
 * table of elementwise functions (micatool/compile/ops/element_functions.py).
 * Do not edit: change the table, then run that command (tests/test_ops.py
 * fails until then).
 *
 * Each list takes a macro X and applies it to every function's C name.
 */
#ifndef MICA_ELEMENT_FUNCTIONS_H
#define MICA_ELEMENT_FUNCTIONS_H

/* The functions of mica_math.h: mica_c_f64 and mica_c_f32. */
{_xmacro("MICA_MATH_FUNCTIONS", math)}

/* Those with an array form, mica_c_array_S (mica_math_array.h). */
{_xmacro("MICA_MATH_ARRAY_FUNCTIONS", array_functions())}

/* Those whose value and derivative come from one array form, mica_c_both_array_S. */
{_xmacro("MICA_MATH_BOTH_FUNCTIONS", [f.c for f in FUNCTIONS if f.saves_derivative])}

/* The elementwise functions of Mica's vocabulary: mica_each_c_S and the tape
 * node mica_t_c_S (mica_ops.h), the PTX kernels mica_each_c_T and mica_c_back_T. */
{_xmacro("MICA_ELEMENT_FUNCTIONS", [f.c for f in FUNCTIONS])}

/* mica_ops.inc's forward kernel, backward and tape node of each, written
 * with the macros it defines (EACH_ARRAY, EACH_MAP, BACK_FROM, BACK_ARRAY,
 * TAPE_NODE, TAPE_SAVING); a derivative sees the input x[i] and the output y[i]. */
#define MICA_ELEMENTWISE_KERNELS \\
    {kernels}

/* The scalar forms that are one instruction or a select. */
{inlines}

#endif /* MICA_ELEMENT_FUNCTIONS_H */

/* Each function's own constants, for mica_math_consts.h alone, which includes
 * this file again with MICA_MATH_CONSTANTS defined (the shared ones are there). */
#if defined(MICA_MATH_CONSTANTS) && !defined(MICA_ELEMENT_CONSTANTS)
#define MICA_ELEMENT_CONSTANTS
{_constants()}
#endif
"""
