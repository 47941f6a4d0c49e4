"""The extents of arrays and dynamic tensors: Length, Rows and Cols read them;
SetLength and SetShape change them."""

from __future__ import annotations

from .. import ast
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import ERROR, INTEGER, STRING, VOID, Array, ErrorType, Tensor, Type, plain
from .registry import define
from .checking import arity, is_integer, one_argument, op_name, wrong
from .lowering import NOTHING, args_of


def check_length(a, call, expected) -> Type:
    t = one_argument(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if p == STRING or isinstance(p, Array) or (isinstance(p, Tensor) and p.rank == 1):
        if isinstance(p, Array) and not p.is_dynamic:
            call.folded = p.length
        elif isinstance(p, Tensor) and p.is_concrete:
            call.folded = p.shape[0]
        return INTEGER
    return wrong(a, call, call.args[0], t, "a string, an array or a vector")


def static_extent(f, call: ast.Call, axis: int) -> CValue | None:
    """An extent known once a routine's shape variables are bound (Length(x) of x : vector[K])."""
    t = plain(f.concrete(call.args[0].ty))
    if isinstance(t, Tensor) and not t.is_dynamic:
        return CValue(str(t.shape[axis]), INTEGER)
    return None


def lower_length(f, call: ast.Call) -> CValue:
    if (known := static_extent(f, call, 0)) is not None:
        return known
    (v,) = args_of(f, call)
    t = plain(v.type)
    v = f.borrow(v)
    if t == STRING or isinstance(t, Array):
        return CValue(f"{v.text}.len", INTEGER)
    return CValue(f"{v.text}.rows", INTEGER)


define("Length", check=check_length, lower=lower_length,
       signature="Length(x : string or array or vector) : integer",
       doc="The number of bytes of a string, or of elements of an array or a vector.")


def check_extent(a, call, expected) -> Type:
    t = one_argument(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if not (isinstance(p, Tensor) and p.rank == 2):
        return wrong(a, call, call.args[0], t, "a matrix")
    if p.is_concrete:
        call.folded = p.shape[0] if op_name(call) == "Rows" else p.shape[1]
    return INTEGER


def lower_extent(f, call: ast.Call) -> CValue:
    axis = 0 if call.callee.ident == "Rows" else 1
    if (known := static_extent(f, call, axis)) is not None:
        return known
    (v,) = args_of(f, call)
    return CValue(f"{f.borrow(v).text}.{('rows', 'cols')[axis]}", INTEGER)


define("Rows", check=check_extent, lower=lower_extent,
       signature="Rows(m : matrix) : integer", doc="The number of rows of a matrix, static or dynamic.")
define("Cols", check=check_extent, lower=lower_extent,
       signature="Cols(m : matrix) : integer", doc="The number of columns of a matrix, static or dynamic.")


def check_set_length(a, call, expected) -> Type:
    if not arity(a, call, 2):
        return ERROR
    target = call.args[0]
    t = (a.address_arg(target, "SetLength's first argument") if isinstance(target, ast.AddressArg)
         else a.place(target, "resize"))
    n = a.expr(call.args[1])
    if not isinstance(n, ErrorType) and not is_integer(n):
        wrong(a, call, call.args[1], n, "an integer length")
    if isinstance(t, ErrorType):
        return VOID
    if not (isinstance(t, Array) and t.is_dynamic):
        wrong(a, call, target, t, "a dynamic array")
    return VOID


def lower_set_length(f, call: ast.Call) -> CValue:
    target = call.args[0].place if isinstance(call.args[0], ast.AddressArg) else call.args[0]
    place = f.place(target)
    n = f.value(call.args[1]).text
    f.line(f"{f.types.name(plain(place.type))}__resize(&{place.text}, {n}, {call.pos.line});")
    return NOTHING


define("SetLength", check=check_set_length, lower=lower_set_length,
       signature="SetLength(address a : array of T; n : integer)",
       doc="Gives a dynamic array n elements: those it keeps keep their values, new ones start at zero.")


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
        a.error(call, 4027, f"SetShape of a {'vector' if t.rank == 1 else 'matrix'} takes {t.rank} extent(s), "
                            f"found {len(extents)}")
    return VOID


def lower_set_shape(f, call: ast.Call) -> CValue:
    place = f.place(call.args[0].place)
    extents = [f.value(arg).text for arg in call.args[1:]]
    if len(extents) == 1:
        extents.append("1")
    t = plain(place.type)
    f.line(f"mica_dyn_set_shape_{SUFFIX[t.element]}(&{place.text}, {extents[0]}, {extents[1]}, {call.pos.line});")
    return NOTHING


define("SetShape", check=check_set_shape, lower=lower_set_shape,
       signature="SetShape(address t : dynamic tensor; extents : integer...)",
       doc="Gives a dynamic tensor these extents, one per axis; row-major, elements keep their values, new ones are 0.")
