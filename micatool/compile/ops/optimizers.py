"""Optimizer steps: AdamStep and SgdStep update parameters in place from their
gradients, on the host or, for device places, with one launch."""

from __future__ import annotations

from .. import ast
from ..c_types import SUFFIX
from ..cvalue import CValue, dtype_of
from ..residency import on_gpu
from ..types import ERROR, FLOAT64, VOID, ErrorType, Scalar, Tensor, element_of, plain
from .registry import define
from .checking import arity, conformant, number_args
from .lowering import NOTHING, c_product, extents, numbers, plain_arg, storage


def check_adam(a, call, expected):
    """AdamStep(address w, g, address m, address v, t, lr, beta1, beta2, eps)."""
    if not arity(a, call, 9):
        return ERROR
    if isinstance(conformant(a, call, [0, 2, 3], [1]), ErrorType):
        return VOID
    number_args(a, call, [4, 5, 6, 7, 8], integer_first=True)
    return VOID


def check_sgd(a, call, expected):
    """SgdStep(address w, g, address velocity, lr, momentum)."""
    if not arity(a, call, 5):
        return ERROR
    if isinstance(conformant(a, call, [0, 2], [1]), ErrorType):
        return VOID
    number_args(a, call, [3, 4])
    return VOID


def lower_optimizer(f, call: ast.Call) -> CValue:
    adam = call.callee.ident == "AdamStep"
    lent = [0, 2, 3] if adam else [0, 2]
    places = [f.place(call.args[i].place) for i in lent]
    e = element_of(places[0].type)
    if on_gpu(places[0].type):
        return lower_device_optimizer(f, call, adam, places, e)
    g = plain_arg(f, call.args[1])
    w, count = storage(f, places[0])
    gradient, g_count = ((f"&{f.materialize(f.convert(g, e, call.pos.line)).text}", "1")
                         if isinstance(plain(g.type), Scalar) else (f.data(g), c_product(extents(f, g))))
    others = [storage(f, p) for p in places[1:]]
    line = call.pos.line
    if any(plain(p.type).is_dynamic for p in places if isinstance(plain(p.type), Tensor)) or (
            isinstance(plain(g.type), Tensor) and plain(g.type).is_dynamic):
        for _, n in [(gradient, g_count)] + others:
            f.line(f'mica_check_shape({n}, {count}, {line}, "elements");')
    state = ", ".join(p for p, _ in others)
    s = SUFFIX[e]
    if adam:
        step = f.value(call.args[4]).text
        rest = ", ".join(numbers(f, call, [5, 6, 7, 8], e))
        f.line(f"mica_adam_step_{s}({w}, {gradient}, {state}, {count}, {step}, {rest});")
    else:
        rest = ", ".join(numbers(f, call, [3, 4], e))
        f.line(f"mica_sgd_step_{s}({w}, {gradient}, {state}, {count}, {rest});")
    return NOTHING


def lower_device_optimizer(f, call: ast.Call, adam: bool, places: list, e: Scalar) -> CValue:
    """AdamStep and SgdStep on device storage: one launch, its powers of beta taken on the host."""
    g = f.materialize(f.borrow(f.untracked(f.value(call.args[1])))).text
    dtype, n, line = dtype_of(e), plain(places[0].type).count, call.pos.line
    f.uses_kernel(f"mica_{'adam' if adam else 'sgd'}_step_{SUFFIX[e]}")
    lent = ", ".join(f"&{p.text}" for p in places[1:])
    if adam:
        rest = ", ".join(numbers(f, call, [5, 6, 7, 8], FLOAT64))
        f.line(f"mica_gpu_adam_step({dtype}, &{places[0].text}, {g}, {lent}, {n}, "
                    f"{f.value(call.args[4]).text}, {rest}, {line});")
    else:
        rest = ", ".join(numbers(f, call, [3, 4], FLOAT64))
        f.line(f"mica_gpu_sgd_step({dtype}, &{places[0].text}, {g}, {lent}, {n}, {rest}, {line});")
    return NOTHING


define("AdamStep", check=check_adam, lower=lower_optimizer, device=lower_optimizer, kernels=["adam_step"],
       signature="AdamStep(address w, g, address m, address v, t : integer, lr, beta1, beta2, eps)",
       doc="One Adam step at step t: updates w and its moments m and v from the gradient g.")
define("SgdStep", check=check_sgd, lower=lower_optimizer, device=lower_optimizer, kernels=["sgd_step"],
       signature="SgdStep(address w, g, address velocity, lr, momentum)",
       doc="One step of SGD with momentum: updates w and velocity from the gradient g.")
