"""The predeclared vocabulary's signatures: how the analyzer types each builtin call.

Each checker takes the analyzer, the call and the expected type, analyzes the
arguments and gives the result type (VOID for procedures), reporting misuse.
lower_builtins.py holds the matching C for each name.
"""

from __future__ import annotations

from . import ast, residency
from .types import (
    BOOLEAN,
    ERROR,
    FLOAT64,
    INTEGER,
    STRING,
    VOID,
    Array,
    ErrorType,
    Scalar,
    Tensor,
    Tracked,
    Type,
    is_tracked,
    plain,
)

CHECKERS = {}


def checker(*names):
    def register(function):
        for name in names:
            CHECKERS[name] = function
        return function

    return register


def _name(call: ast.Call) -> str:
    return call.callee.ident


def arity(a, call: ast.Call, *counts: int) -> bool:
    if len(call.args) in counts:
        return True
    for arg in call.args:
        a.expr(arg.place if isinstance(arg, ast.AddressArg) else arg)
    wanted = " or ".join(str(c) for c in counts)
    noun = "argument" if counts == (1,) else "arguments"
    a.error(call, 4027, f"'{_name(call)}' takes {wanted} {noun}, found {len(call.args)}")
    return False


def values(a, call: ast.Call) -> list[Type]:
    return [a.expr(arg) for arg in call.args]


def wrong(a, call: ast.Call, arg: ast.Expr, t: Type, wanted: str) -> Type:
    number_wanted = not any(word in wanted for word in ("tensor", "vector", "matrix"))
    if number_wanted and isinstance(plain(t), Tensor) and plain(t).rank == 0:  # a device scalar for a host number
        residency.needs_host(a, f"'{_name(call)}'", arg, t)
        return ERROR
    return a.error(arg, 4032, f"'{_name(call)}' needs {wanted}, found '{t}'")


def is_integer(t: Type) -> bool:
    return isinstance(plain(t), Scalar) and plain(t).is_integer


def is_number(t: Type) -> bool:
    return isinstance(plain(t), Scalar) and plain(t).is_numeric


def is_float(t: Type) -> bool:
    return isinstance(plain(t), Scalar) and plain(t).is_float


def plain_only(a, call: ast.Call, types: list[Type]) -> None:
    """Inside a tape window, a builtin that does not record must not read tracked values."""
    if a.tape_depth == 0:
        return
    for arg, t in zip(call.args, types):
        if is_tracked(t):
            a.error(arg, 5108, f"'{_name(call)}' does not record on the tape, so its result would carry no gradient; "
                               f"read '{t}' outside the window")


# ---------------------------------------------------------------- output


def printable(t: Type) -> bool:
    p = plain(t)
    return (isinstance(p, Scalar)) or isinstance(p, Tensor)


@checker("Write", "WriteLn")
def check_write(a, call: ast.Call, expected) -> Type:
    for arg in call.args:
        if isinstance(arg, ast.FormatArg):
            t = a.expr(arg.value)
            arg.ty = t
            for part in (arg.width, arg.decimals):
                if part is not None:
                    pt = a.expr(part)
                    if not isinstance(pt, ErrorType) and not is_integer(pt):
                        a.error(part, 4033, f"a width or decimal count must be an integer, found '{pt}'")
            if isinstance(t, ErrorType):
                continue
            element = plain(t).element if isinstance(plain(t), Tensor) else plain(t)
            if arg.decimals is not None and not (isinstance(element, Scalar) and element.is_float):
                a.error(arg.decimals, 4034, f"decimals apply to floats; '{t}' takes only a width")
        else:
            if isinstance(arg, ast.AddressArg):
                a.expr(arg.place)
                a.error(arg, 5007, "Write prints values; remove 'address'")
                continue
            t = a.expr(arg)
        if not isinstance(t, ErrorType) and residency.on_gpu(t):
            a.error(arg, 7002, f"Write prints host values; {residency.describe(arg.value if isinstance(arg, ast.FormatArg) else arg)} "
                               "lives on the GPU: print ToHost(...) of it")
        elif not isinstance(t, ErrorType) and not printable(t):
            a.error(arg, 4035, f"cannot print a value of type '{t}'; print its fields or elements")
    return VOID


# ---------------------------------------------------------------- sizes


@checker("Length")
def check_length(a, call, expected) -> Type:
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    p = plain(t)
    if isinstance(t, ErrorType):
        return ERROR
    if p == STRING or isinstance(p, Array) or (isinstance(p, Tensor) and p.rank == 1):
        if isinstance(p, Array) and not p.is_dynamic:
            call.folded = p.length
        elif isinstance(p, Tensor) and p.is_concrete:
            call.folded = p.shape[0]
        return INTEGER
    return wrong(a, call, call.args[0], t, "a string, an array or a vector")


@checker("Rows", "Cols")
def check_rows(a, call, expected) -> Type:
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    p = plain(t)
    if isinstance(t, ErrorType):
        return ERROR
    if not (isinstance(p, Tensor) and p.rank == 2):
        return wrong(a, call, call.args[0], t, "a matrix")
    if p.is_concrete:
        call.folded = p.shape[0] if _name(call) == "Rows" else p.shape[1]
    return INTEGER


@checker("SetLength")
def check_set_length(a, call, expected) -> Type:
    if not arity(a, call, 2):
        return ERROR
    target = call.args[0]
    t = a.address_arg(target, "SetLength's first argument") if isinstance(target, ast.AddressArg) else a.place(target, "resize")
    n = a.expr(call.args[1])
    if not isinstance(n, ErrorType) and not is_integer(n):
        wrong(a, call, call.args[1], n, "an integer length")
    if isinstance(t, ErrorType):
        return VOID
    if not (isinstance(t, Array) and t.is_dynamic):
        wrong(a, call, target, t, "a dynamic array")
    return VOID


@checker("SetShape")
def check_set_shape(a, call, expected) -> Type:
    if not call.args:
        return arity(a, call, 2, 3) and ERROR
    t = a.address_arg(call.args[0], "SetShape's first argument")
    extents = [a.expr(arg) for arg in call.args[1:]]
    for arg, et in zip(call.args[1:], extents):
        if not isinstance(et, ErrorType) and not is_integer(et):
            wrong(a, call, arg, et, "integer extents")
    if isinstance(t, ErrorType):
        return VOID
    if not (isinstance(t, Tensor) and t.is_dynamic):
        return wrong(a, call, call.args[0], t, "a dynamic vector or matrix") and VOID
    if len(extents) != t.rank:
        a.error(call, 4027, f"SetShape of a {'vector' if t.rank == 1 else 'matrix'} takes {t.rank} extent(s), found {len(extents)}")
    return VOID


# ---------------------------------------------------------------- plain signatures

# Builtins whose arguments and result are plain scalars: (parameter types, result type).
SIGNATURES = {
    "Copy": ([STRING, INTEGER, INTEGER], STRING),
    "Pos": ([STRING, STRING], INTEGER),
    "Ord": ([STRING], INTEGER),
    "Chr": ([INTEGER], STRING),
    "IntToStr": ([INTEGER], STRING),
    "FloatToStr": ([FLOAT64], STRING),
    "StrToInt": ([STRING], INTEGER),
    "StrToFloat": ([STRING], FLOAT64),
    "UpperCase": ([STRING], STRING),
    "LowerCase": ([STRING], STRING),
    "Trim": ([STRING], STRING),
    "ParamCount": ([], INTEGER),
    "ParamStr": ([INTEGER], STRING),
    "Halt": ([INTEGER], VOID),
    "Clock": ([], FLOAT64),
    "ReadFile": ([STRING], STRING),
    "WriteFile": ([STRING, STRING], VOID),
    "FileExists": ([STRING], BOOLEAN),
    "Trunc": ([FLOAT64], INTEGER),
    "Round": ([FLOAT64], INTEGER),
    "Floor": ([FLOAT64], INTEGER),
    "Ceil": ([FLOAT64], INTEGER),
    "Odd": ([INTEGER], BOOLEAN),
    "Seed": ([INTEGER], VOID),
    "RandomInt": ([INTEGER], INTEGER),
}


def check_signature(a, call, expected):
    params, result = SIGNATURES[_name(call)]
    if not arity(a, call, len(params)):
        return ERROR
    types = values(a, call)
    for arg, t, wanted in zip(call.args, types, params):
        if isinstance(t, ErrorType):
            return ERROR
        if wanted == INTEGER and not is_integer(t) or wanted == STRING and plain(t) != STRING \
                or wanted == FLOAT64 and not is_number(t):
            return wrong(a, call, arg, t, f"'{wanted}'")
    plain_only(a, call, types)
    return result


for _builtin in SIGNATURES:
    CHECKERS[_builtin] = check_signature


# ---------------------------------------------------------------- scalar arithmetic


@checker("Min", "Max")
def check_min_max(a, call, expected):
    if len(call.args) == 1 and _name(call) == "Max":
        return CHECKERS["Max:reduce"](a, call, expected)
    if not arity(a, call, 2):
        return ERROR
    types = values(a, call)
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    for arg, t in zip(call.args, types):
        if not is_number(t):
            return wrong(a, call, arg, t, "two numbers")
    plain_only(a, call, types)
    left, right = (plain(t) for t in types)
    return a.promote(left, right, *call.args)


@checker("Abs")
def check_abs(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if isinstance(p, Scalar) and p.is_integer:
        return INTEGER
    if isinstance(p, Scalar) and p.is_float or isinstance(p, Tensor) and p.element.is_float:
        a.note_tracked_op(t)
        return t
    return wrong(a, call, call.args[0], t, "a number or a float tensor")


# ---------------------------------------------------------------- conversions


def conversion(a, call: ast.Call, target: Type) -> Type:
    """float32(x), float64(x), integer(x)...: a type name called on a value."""
    name = _name(call)
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if isinstance(target, Scalar) and target.is_float:
        if isinstance(p, Scalar) and p.is_numeric:
            return Tracked(target) if is_tracked(t) else target
        if isinstance(p, Tensor) and p.on_gpu and not p.element.is_float:
            return a.error(call, 7012, f"the GPU converts between float32 and float64 only, not from '{p.element}'; "
                                       f"convert on the host before ToDevice")
        if isinstance(p, Tensor) and not p.is_dynamic:
            result = Tensor(target, p.shape, 0, p.on_gpu)
            return Tracked(result) if is_tracked(t) else result
        if isinstance(p, Tensor):
            return Tensor(target, None, p.rank, p.on_gpu)
    if isinstance(target, Scalar) and target.is_integer:
        if isinstance(p, Scalar) and p.is_integer:
            return target
        if isinstance(p, Scalar) and p.is_float:
            return a.error(call, 4036, f"{name}(...) does not convert floats; use Trunc or Round")
    return a.error(call, 4036, f"cannot convert '{t}' to '{target}'")


# ---------------------------------------------------------------- tensors


def tensor_arg(a, call: ast.Call, arg: ast.Expr, t: Type, rank: int | None = None, dynamic_ok: bool = True) -> bool:
    p = plain(t)
    ok = isinstance(p, Tensor) and p.element.is_float and (rank is None or p.rank == rank) and \
        (dynamic_ok or not p.is_dynamic) and p.rank != 0  # a device scalar is a scalar here, as on the host
    if not ok:
        shape = {1: "a float vector", 2: "a float matrix"}.get(rank, "a float tensor")
        wrong(a, call, arg, t, shape + ("" if dynamic_ok else " with a static shape"))
    return ok


@checker("Transpose")
def check_transpose(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    p = plain(t)
    if p.rank < 2:
        return wrong(a, call, call.args[0], t, "a matrix, or a tensor whose last two dimensions swap")
    a.note_tracked_op(t)
    if p.is_dynamic:
        return Tensor(p.element, None, 2, p.on_gpu)
    result = p.with_shape(p.shape[:-2] + (p.shape[-1], p.shape[-2]))
    return Tracked(result) if is_tracked(t) else result


# ---------------------------------------------------------------- crossing to and from the GPU


@checker("ToDevice", "ToHost")
def check_transfer(a, call, expected):
    """ToDevice(h) and ToHost(d): the only places a value crosses."""
    if not arity(a, call, 1):
        return ERROR
    to_device = _name(call) == "ToDevice"
    wanted = plain(expected) if isinstance(plain(expected), Tensor) else None
    if to_device and wanted is not None and wanted.on_gpu:  # a literal takes the target's element type
        wanted = wanted.element if wanted.rank == 0 else Tensor(wanted.element, wanted.shape)
    t = a.expr(call.args[0], wanted if to_device else None)
    if isinstance(t, ErrorType):
        return ERROR
    if is_tracked(t):
        a.note_tape_loss(call, 7011, f"'{_name(call)}' does not record on the tape, so a tracked value crossing "
                                     f"inside a window would lose its gradient; cross before the window, or after it")
    p = plain(t)
    if to_device:
        if isinstance(p, Scalar) and p.is_numeric:
            # a host number takes the device scalar's type as `s := x` would: converted on the host
            adopts = isinstance(wanted, Scalar) and (wanted.is_float or p.is_integer and wanted.is_integer)
            return Tensor(wanted if adopts else p, (), 0, True)
        if isinstance(p, Tensor) and not p.on_gpu and not p.is_dynamic:
            return Tensor(p.element, p.shape, 0, True)
        return wrong(a, call, call.args[0], t, "a host number or a host tensor of static shape")
    if isinstance(p, Tensor) and p.on_gpu:
        return p.element if p.rank == 0 else Tensor(p.element, p.shape)
    return wrong(a, call, call.args[0], t, "a value on the GPU")
