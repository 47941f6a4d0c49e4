"""Elementwise functions of numbers and float tensors, one op for each row of
the table of elementwise functions (element_functions.py; Abs, which takes
integers too, is numbers.py's), and Mul, the elementwise product of two
tensors of one shape."""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue, dtype_of
from ..symbols import RoutineSymbol, TypeSymbol
from ..types import ERROR, INT32, ErrorType, Scalar, Tensor, element_count, element_of, plain
from .registry import TapeRecord, define
from .element_functions import BY_NAME, FUNCTIONS
from .checking import argument_types, mixes_dynamic_with_tracked, one_argument, tensor_arg, touch, tracked_if
from .lowering import (args_of, c_product, device_operand, extents, fresh_tensor, node_result, plain_arg, recorded_or,
                       records)

def check_elementwise(a, call, expected):
    t = one_argument(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if isinstance(p, Scalar) and p.is_integer:
        return tracked_if(Scalar("float64"), t)
    if isinstance(p, Scalar) and p.is_float or isinstance(p, Tensor) and p.rank == 0 and p.element.is_float:
        touch(a, t)  # a number, on the host or the device
        return t
    if not tensor_arg(a, call, call.args[0], t):
        return ERROR
    touch(a, t)
    return t


def lower_elementwise(f, call: ast.Call) -> CValue:
    kernel = BY_NAME[call.callee.ident].c
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call):
        return node_result(f, call, f.record(kernel, f.concrete(call.ty),
                                                  [f.node(call.args[0], dtype_of(t))], call.pos.line))
    if isinstance(t, Scalar):
        x = plain_arg(f, call.args[0], t)
        return CValue(f"mica_{kernel}_{s}({x.text})", t)
    x = plain_arg(f, call.args[0])
    out = fresh_tensor(f, t, x, call.pos.line)
    f.line(f"mica_each_{kernel}_{s}({out.text}.e, {f.data(x)}, {c_product(extents(f, x))});")
    return out


def device_elementwise(f, call: ast.Call) -> CValue:
    t, x, out = device_operand(f, call)
    kernel = f"mica_each_{BY_NAME[call.callee.ident].c}_{SUFFIX[element_of(t)]}"
    f.launch(kernel, call.pos.line, out=f"{out.text}.ptr", x=f.device_data(x, call.pos.line), n=element_count(t))
    return out


def each_record(function) -> dict[str, TapeRecord]:
    """The device-tape record of an elementwise function: the runtime's generic node
    (mica_gt_each) with the function's two kernels."""
    return {function.c: TapeRecord([f"each_{function.c}"], [f"{function.c}_back"], each=True)}


for _function in FUNCTIONS:
    if _function.name != "Abs":  # Abs of an integer is a number's (numbers.py)
        define(_function.name, records=True, check=check_elementwise, lower=lower_elementwise,
               device=device_elementwise, kernels=[f"each_{_function.c}"], tape=each_record(_function),
               signature=_function.signature, doc=_function.doc)


def check_mul(a, call, expected):
    """Mul(a, b): the elementwise product of two tensors of one shape."""
    types = argument_types(a, call, 2)
    if types is None:
        return ERROR
    left, right = types
    if not (tensor_arg(a, call, call.args[0], left) and tensor_arg(a, call, call.args[1], right)):
        return ERROR
    if mixes_dynamic_with_tracked(a, call, [left, right]):
        return ERROR
    if not residency.check_together(a, call, "'Mul'", call.args, [left, right]):
        return ERROR
    lp, rp = plain(left), plain(right)
    if lp.element != rp.element or lp.rank != rp.rank or (lp.shape and rp.shape and lp.shape != rp.shape):
        return a.error(call, 6011, f"Mul needs two tensors of one shape, found '{left}' and '{right}'")
    touch(a, left, right)
    return tracked_if(lp if not rp.is_dynamic else rp, left, right)


def rescale_operands(f, call: ast.Call) -> tuple[ast.Expr, ast.Call] | None:
    """Mul(float32(p), Outer(r, c)), in either order, for a static int32 matrix p: the
    rescaling of an exact integer product (examples/gpt's Rescaled), which lowers to one
    pass. Returns p and the Outer call, or None."""
    for conversion, outer in (call.args, call.args[::-1]):
        if not (isinstance(conversion, ast.Call) and isinstance(conversion.target, TypeSymbol)
                and isinstance(outer, ast.Call) and outer.callee.ident == "Outer"
                and not isinstance(outer.target, RoutineSymbol)):
            continue
        p = plain(f.concrete(conversion.args[0].ty))
        if isinstance(p, Tensor) and not p.is_dynamic and p.rank == 2 and p.element == INT32:
            return conversion.args[0], outer
    return None


def plain_mul(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    suffix = SUFFIX[t.element]
    fused = None if t.is_dynamic else rescale_operands(f, call)
    if fused:
        product, outer = fused
        p = plain_arg(f, product) if call.args[0] is not outer else None
        r, c = args_of(f, outer)
        if p is None:  # the operands in the source's order
            p = plain_arg(f, product)
        out = f.declare_uninitialized(t)
        f.line(f"mica_rescale_i32_{suffix}({out}.e, {f.data(p)}, {f.data(r)}, {f.data(c)}, "
                    f"{t.shape[0]}, {t.shape[1]});")
        return CValue(out, t, lvalue=True)
    left, right = args_of(f, call)
    if t.is_dynamic:
        a = f.borrow(f.convert(left, t, call.pos.line)).text
        b = f.borrow(f.convert(right, t, call.pos.line)).text
        return CValue(f"mica_dyn_mul_{suffix}({a}, {b}, {call.pos.line})", t, owned=True)
    out = f.declare_uninitialized(t)
    f.line(f"mica_mul_{suffix}({out}.e, {f.data(left)}, {f.data(right)}, {t.count});")
    return CValue(out, t, lvalue=True)


def device_mul(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    a, b = (f.untracked(f.value(x)) for x in call.args)
    out = f.device_temp(t, call.pos.line)
    f.launch(f"mica_mul_{SUFFIX[t.element]}", call.pos.line, out=f"{out.text}.ptr",
                a=f.device_data(a, call.pos.line), b=f.device_data(b, call.pos.line), n=t.count)
    return out


define("Mul", records=True, check=check_mul, lower=recorded_or("mul", plain_mul), device=device_mul,
       kernels=["mul"], tape={"mul": TapeRecord(["mul"], ["mul_back"])},
       signature="Mul(a, b : tensor) : same shape", doc="The elementwise product of two tensors of one shape.")
