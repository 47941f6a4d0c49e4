"""The C for each builtin of the vocabulary (builtins.py holds their signatures).

Each lowerer takes the function lowering and the call, and gives a CValue
(an empty text for a procedure, whose C statement it emitted itself).
"""

from __future__ import annotations

from . import ast
from .ctypes import SUFFIX
from .cvalue import CValue, dtype_of
from .types import BOOLEAN, FLOAT32, FLOAT64, INTEGER, STRING, Array, Scalar, Tensor, Tracked, Type, plain

LOWERERS = {}


def lowerer(*names):
    def register(function):
        for name in names:
            LOWERERS[name] = function
        return function

    return register


NOTHING = CValue("", BOOLEAN)


def _args(f, call: ast.Call) -> list[CValue]:
    return [f.untracked(f.value(arg)) for arg in call.args]


def _borrowed(f, call: ast.Call) -> list[str]:
    return [f.borrow(v).text if plain(v.type) == STRING or v.owned else v.text for v in _args(f, call)]


# ---------------------------------------------------------------- output


@lowerer("Write", "WriteLn")
def lower_write(f, call: ast.Call) -> CValue:
    for arg in call.args:
        width, decimals = "0", "-1"
        if isinstance(arg, ast.FormatArg):
            width = f.value(arg.width).text
            if arg.decimals is not None:
                decimals = f.value(arg.decimals).text
            arg = arg.value
        value = f.untracked(f.value(arg))
        f.line(_write_statement(f, value, width, decimals) + ";")
    if call.callee.ident == "WriteLn":
        f.line("mica_writeln();")
    return NOTHING


def _write_statement(f, value: CValue, width: str, decimals: str) -> str:
    t = plain(value.type)
    if t == STRING:
        return f"mica_write_str({f.borrow(value).text}, {width})"
    if t == BOOLEAN:
        return f"mica_write_bool({value.text}, {width})"
    if isinstance(t, Scalar) and t.is_integer:
        return f"mica_write_int({value.text}, {width})"
    if isinstance(t, Scalar):
        return f"mica_write_{SUFFIX[t]}({value.text}, {width}, {decimals})"
    suffix = SUFFIX[t.element]
    data, count = f.data(value), f.count(f.borrow(value))
    if t.element.is_integer:
        plural = {"i64": "ints"}.get(suffix, suffix + "s")
        return f"mica_write_{plural}({data}, {count}, {width})"
    return f"mica_write_{suffix}s({data}, {count}, {width}, {decimals})"


# ---------------------------------------------------------------- sizes


def static_extent(f, call: ast.Call, axis: int) -> CValue | None:
    """An extent known once a routine's shape variables are bound (Length(x) of x : vector[K])."""
    t = plain(f.concrete(call.args[0].ty))
    if isinstance(t, Tensor) and not t.is_dynamic:
        return CValue(str(t.shape[axis]), INTEGER)
    return None


@lowerer("Length")
def lower_length(f, call: ast.Call) -> CValue:
    if (known := static_extent(f, call, 0)) is not None:
        return known
    (v,) = _args(f, call)
    t = plain(v.type)
    v = f.borrow(v)
    if t == STRING or isinstance(t, Array):
        return CValue(f"{v.text}.len", INTEGER)
    return CValue(f"{v.text}.rows", INTEGER)


@lowerer("Rows", "Cols")
def lower_rows(f, call: ast.Call) -> CValue:
    axis = 0 if call.callee.ident == "Rows" else 1
    if (known := static_extent(f, call, axis)) is not None:
        return known
    (v,) = _args(f, call)
    return CValue(f"{f.borrow(v).text}.{('rows', 'cols')[axis]}", INTEGER)


@lowerer("SetLength")
def lower_set_length(f, call: ast.Call) -> CValue:
    target = call.args[0].place if isinstance(call.args[0], ast.AddressArg) else call.args[0]
    place = f.place(target)
    n = f.value(call.args[1]).text
    f.line(f"{f.types.name(plain(place.type))}__resize(&{place.text}, {n}, {call.pos.line});")
    return NOTHING


@lowerer("SetShape")
def lower_set_shape(f, call: ast.Call) -> CValue:
    place = f.place(call.args[0].place)
    extents = [f.value(arg).text for arg in call.args[1:]]
    if len(extents) == 1:
        extents.append("1")
    t = plain(place.type)
    f.line(f"mica_dyn_set_shape_{SUFFIX[t.element]}(&{place.text}, {extents[0]}, {extents[1]}, {call.pos.line});")
    return NOTHING


# ---------------------------------------------------------------- strings and files


def _runtime_call(function: str, result: Type, with_line: bool = False):
    """A builtin that is one runtime call on its (borrowed) arguments."""

    def lower(f, call: ast.Call) -> CValue:
        args = _borrowed(f, call)
        if with_line:
            args.append(str(call.pos.line))
        text = f"{function}({', '.join(args)})"
        if result is None:
            f.line(text + ";")
            return NOTHING
        return CValue(text, result, owned=result == STRING)

    return lower


LOWERERS.update(
    {
        "Copy": _runtime_call("mica_str_sub", STRING),
        "Pos": _runtime_call("mica_str_pos", INTEGER),
        "Ord": _runtime_call("mica_str_ord", INTEGER, with_line=True),
        "Chr": _runtime_call("mica_str_chr", STRING, with_line=True),
        "IntToStr": _runtime_call("mica_str_of_int", STRING),
        "StrToInt": _runtime_call("mica_str_to_int", INTEGER, with_line=True),
        "StrToFloat": _runtime_call("mica_str_to_f64", FLOAT64, with_line=True),
        "UpperCase": _runtime_call("mica_str_upper", STRING),
        "LowerCase": _runtime_call("mica_str_lower", STRING),
        "Trim": _runtime_call("mica_str_trim", STRING),
        "ParamCount": _runtime_call("mica_param_count", INTEGER),
        "ParamStr": _runtime_call("mica_param_str", STRING),
        "Halt": _runtime_call("mica_halt", None, with_line=True),
        "Clock": _runtime_call("mica_clock", FLOAT64),
        "ReadFile": _runtime_call("mica_read_file", STRING, with_line=True),
        "WriteFile": _runtime_call("mica_write_file", None, with_line=True),
        "FileExists": _runtime_call("mica_file_exists", BOOLEAN),
    }
)


@lowerer("FloatToStr")
def lower_float_to_str(f, call: ast.Call) -> CValue:
    (v,) = _args(f, call)
    if plain(v.type) == FLOAT32:
        return CValue(f"mica_str_of_f32({v.text})", STRING, owned=True)
    return CValue(f"mica_str_of_f64({f.convert(v, FLOAT64, call.pos.line).text})", STRING, owned=True)


# ---------------------------------------------------------------- scalar arithmetic


@lowerer("Trunc", "Round", "Floor", "Ceil")
def lower_round(f, call: ast.Call) -> CValue:
    (v,) = _args(f, call)
    x = f.convert(v, FLOAT64, call.pos.line).text
    return CValue(f"mica_{call.callee.ident.lower()}({x}, {call.pos.line})", INTEGER)


@lowerer("Min", "Max")
def lower_min_max(f, call: ast.Call) -> CValue:
    if len(call.args) == 1:
        return LOWERERS["Max:reduce"](f, call)
    t = plain(f.concrete(call.ty))
    a, b = (f.convert(v, t, call.pos.line) for v in _args(f, call))
    left, right = f.materialize(a), f.materialize(b)
    compare = "<" if call.callee.ident == "Min" else ">"
    return CValue(f"({left.text} {compare} {right.text} ? {left.text} : {right.text})", t)


@lowerer("Abs")
def lower_abs(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    if not (isinstance(t, Scalar) and t.is_integer):
        return LOWERERS["Abs:tensor"](f, call)  # floats, tensors and tracked values
    x = f.materialize(_args(f, call)[0]).text
    return CValue(f"({x} < 0 ? mica_neg({x}, {call.pos.line}) : {x})", INTEGER)


@lowerer("Odd")
def lower_odd(f, call: ast.Call) -> CValue:
    (v,) = _args(f, call)
    return CValue(f"(({v.text}) % 2 != 0)", BOOLEAN)


def lower_conversion(f, call: ast.Call, target: Type) -> CValue:
    result = f.concrete(call.ty)
    if f.in_window and isinstance(result, Tracked):  # the gradient converts back
        return CValue(f.node(call.args[0], dtype_of(result)), result, node=True)
    (v,) = _args(f, call)
    return f.convert(v, result, call.pos.line)


# ---------------------------------------------------------------- tensors


@lowerer("Transpose")
def lower_transpose(f, call: ast.Call) -> CValue:
    (v,) = _args(f, call)
    t = plain(f.concrete(call.ty))
    suffix = SUFFIX[t.element]
    if t.is_dynamic:
        return CValue(f"mica_dyn_transpose_{suffix}({f.borrow(v).text}, {call.pos.line})", t, owned=True)
    source = plain(v.type)
    rows, cols = source.shape[-2:]
    out = f.declare_uninitialized(t)
    f.line(f"mica_transpose_{suffix}({out}.e, {f.data(v)}, {source.count // (rows * cols)}, {rows}, {cols});")
    return CValue(out, t, lvalue=True)


@lowerer("Mul")
def lower_mul(f, call: ast.Call) -> CValue:
    left, right = _args(f, call)
    t = plain(f.concrete(call.ty))
    suffix = SUFFIX[t.element]
    if t.is_dynamic:
        a = f.borrow(f.convert(left, t, call.pos.line)).text
        b = f.borrow(f.convert(right, t, call.pos.line)).text
        return CValue(f"mica_dyn_mul_{suffix}({a}, {b}, {call.pos.line})", t, owned=True)
    out = f.declare_uninitialized(t)
    f.line(f"mica_mul_{suffix}({out}.e, {f.data(left)}, {f.data(right)}, {t.count});")
    return CValue(out, t, lvalue=True)
