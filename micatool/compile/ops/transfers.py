"""ToDevice and ToHost: the only places a value crosses between the host and the GPU."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import ERROR, ErrorType, Scalar, Tensor, is_tracked, plain
from .registry import define
from .checking import arity, op_name, wrong


def check_transfer(a, call, expected):
    """ToDevice(h) and ToHost(d): the only places a value crosses."""
    if not arity(a, call, 1):
        return ERROR
    to_device = op_name(call) == "ToDevice"
    wanted = plain(expected) if isinstance(plain(expected), Tensor) else None
    if to_device and wanted is not None and wanted.on_gpu:  # a literal takes the target's element type
        wanted = wanted.element if wanted.rank == 0 else Tensor(wanted.element, wanted.shape)
    t = a.expr(call.args[0], wanted if to_device else None)
    if isinstance(t, ErrorType):
        return ERROR
    if is_tracked(t):
        a.note_tape_loss(call, 7011, f"'{op_name(call)}' does not record on the tape, so a tracked value crossing "
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


def lower_to_device(f, call: ast.Call) -> CValue:
    return f.to_device(call)


def lower_to_host(f, call: ast.Call) -> CValue:
    return f.to_host(call)


# Both always have a GPU side, so they always lower through `device`.
define("ToDevice", check=check_transfer, lower=lower_to_device, device=lower_to_device,
       signature="ToDevice(h : host value) : device value", doc="The same value, on the GPU.")
define("ToHost", check=check_transfer, lower=lower_to_host, device=lower_to_host,
       signature="ToHost(a : device value) : host value", doc="The same value, on the host.")
