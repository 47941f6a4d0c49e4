"""Functions of numbers: Min and Max of two, Abs, Odd, and Trunc, Round, Floor,
Ceil and FloatToStr of a float."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, ERROR, FLOAT32, FLOAT64, INTEGER, STRING, ErrorType, Scalar, Tensor, plain
from .registry import define
from .checking import argument_types, check_signature, is_numeric, one_argument, op_name, plain_only, wrong
from .element_functions import BY_NAME
from .elementwise import device_elementwise, each_record, lower_elementwise
from .lowering import args_of
from .reductions import check_reduce, device_reduce, lower_reduce


def check_min_max(a, call, expected):
    if len(call.args) == 1 and op_name(call) == "Max":
        return check_reduce(a, call, expected)
    types = argument_types(a, call, 2)
    if types is None:
        return ERROR
    for arg, t in zip(call.args, types):
        if not is_numeric(t):
            return wrong(a, call, arg, t, "two numbers")
    plain_only(a, call, types)
    left, right = (plain(t) for t in types)
    return a.promote(left, right, *call.args)


def lower_min_max(f, call: ast.Call) -> CValue:
    if len(call.args) == 1:
        return lower_reduce(f, call)
    t = plain(f.concrete(call.ty))
    a, b = (f.convert(v, t, call.pos.line) for v in args_of(f, call))
    left, right = f.materialize(a), f.materialize(b)
    compare = "<" if call.callee.ident == "Min" else ">"
    return CValue(f"({left.text} {compare} {right.text} ? {left.text} : {right.text})", t)


define("Min", check=check_min_max, lower=lower_min_max,
       signature="Min(a, b : number) : number", doc="The smaller of two numbers.")
# Max of one device tensor reduces it on the device (reductions.py)
define("Max", records=True, check=check_min_max, lower=lower_min_max, device=device_reduce, kernels=["max"],
       signature="Max(a, b : number) : number",
       doc="The larger of two numbers; Max(t) of one tensor is its largest element.")


def check_abs(a, call, expected):
    t = one_argument(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if isinstance(p, Scalar) and p.is_integer:
        return INTEGER
    if isinstance(p, Scalar) and p.is_float or isinstance(p, Tensor) and p.element.is_float:
        a.note_tracked_op(t)
        return t
    return wrong(a, call, call.args[0], t, "a number or a float tensor")


def lower_abs(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    if not (isinstance(t, Scalar) and t.is_integer):
        return lower_elementwise(f, call)  # floats, tensors and tracked values
    x = f.materialize(args_of(f, call)[0]).text
    return CValue(f"({x} < 0 ? mica_neg({x}, {call.pos.line}) : {x})", INTEGER)


define("Abs", records=True, check=check_abs, lower=lower_abs, device=device_elementwise, kernels=["each_abs"],
       tape=each_record(BY_NAME["Abs"]), signature=BY_NAME["Abs"].signature, doc=BY_NAME["Abs"].doc)


def lower_odd(f, call: ast.Call) -> CValue:
    (v,) = args_of(f, call)
    return CValue(f"(({v.text}) % 2 != 0)", BOOLEAN)


define("Odd", check=check_signature([INTEGER], BOOLEAN), lower=lower_odd,
       signature="Odd(n : integer) : boolean", doc="Whether n is odd.")


def lower_round(f, call: ast.Call) -> CValue:
    (v,) = args_of(f, call)
    x = f.convert(v, FLOAT64, call.pos.line).text
    return CValue(f"mica_{call.callee.ident.lower()}({x}, {call.pos.line})", INTEGER)


for _name, _how in (("Trunc", "toward zero"), ("Round", "to the nearest integer, halves away from zero"),
                   ("Floor", "down"), ("Ceil", "up")):
    define(_name, check=check_signature([FLOAT64], INTEGER), lower=lower_round,
           signature=f"{_name}(x : float) : integer", doc=f"x rounded {_how}; traps when that does not fit an integer.")


def lower_float_to_str(f, call: ast.Call) -> CValue:
    (v,) = args_of(f, call)
    if plain(v.type) == FLOAT32:
        return CValue(f"mica_str_of_f32({v.text})", STRING, owned=True)
    return CValue(f"mica_str_of_f64({f.convert(v, FLOAT64, call.pos.line).text})", STRING, owned=True)


define("FloatToStr", check=check_signature([FLOAT64], STRING), lower=lower_float_to_str,
       signature="FloatToStr(x : float) : string", doc="The shortest decimal that reads back to x's bits.")
