"""Conversions: a type's name called on a value, float32(x), integer(n)... (looked
up by the type, not by a name in the registry)."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue, dtype_of
from ..types import ERROR, ErrorType, Scalar, Tensor, Tracked, Type, is_tracked, plain
from .checking import one_argument, op_name
from .lowering import args_of


def check_conversion(a, call: ast.Call, target: Type) -> Type:
    """float32(x), float64(x), integer(x)...: a type name called on a value."""
    name = op_name(call)
    t = one_argument(a, call)
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
        if isinstance(p, Tensor) and p.element.is_float:
            return a.error(call, 4036, f"{name}(...) does not convert a float tensor: turning floats into "
                                       f"'{target}' is quantizing, an explicit rounding step with a scale")
    return a.error(call, 4036, f"cannot convert '{t}' to '{target}'")


def lower_conversion(f, call: ast.Call) -> CValue:
    result = f.concrete(call.ty)
    if f.in_window and isinstance(result, Tracked):  # the gradient converts back
        return CValue(f.node(call.args[0], dtype_of(result)), result, node=True)
    (v,) = args_of(f, call)
    return f.convert(v, result, call.pos.line)


def device_conversion(f, call: ast.Call) -> CValue:
    x = f.untracked(f.value(call.args[0]))
    return f.as_element(x, plain(f.concrete(call.ty)).element, call.pos.line)
