"""Reductions: Sum, Mean and Max of a tensor to one number, and SumRows, which adds
the rows of a matrix (or of a tensor's last dimension) together."""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import ERROR, ErrorType, Tensor, element_count, element_of, plain
from .registry import TapeRecord, define
from .checking import matrix_argument, one_argument, tensor_arg, touch, tracked_if
from .lowering import (c_product, device_operand, extents, fresh_tensor, host_operand, plain_arg, recorded, recorded_or,
                       records, rows_cols)


def check_reduce(a, call, expected):
    t = one_argument(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    touch(a, t)
    return tracked_if(residency.scalar_of(plain(t)), t)


def lower_reduce(f, call: ast.Call) -> CValue:
    kernel = call.callee.ident.lower()
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call):
        return recorded(f, call, kernel)
    x = plain_arg(f, call.args[0])
    return CValue(f"mica_{kernel}_{s}({f.data(x)}, {c_product(extents(f, x))})", t)


def device_reduce(f, call: ast.Call) -> CValue:
    t, x, out = device_operand(f, call)
    name = call.callee.ident.lower()
    extra = {"where": 0} if name == "max" else {}  # Max's position matters only to its backward
    f.launch(f"mica_{name}_{SUFFIX[element_of(t)]}", call.pos.line, out=f"{out.text}.ptr",
                x=f.device_data(x, call.pos.line), n=element_count(x.type), **extra)
    return out


for _name, _what in (("Sum", "sum"), ("Mean", "mean")):
    define(_name, records=True, check=check_reduce, lower=lower_reduce, device=device_reduce, kernels=[_name.lower()],
           tape={_name.lower(): TapeRecord([_name.lower()], [f"{_name.lower()}_back"])},
           signature=f"{_name}(t : tensor) : scalar of t's element type",
           doc=f"The {_what} of all the tensor's elements.")
# Max of one tensor; Max of two numbers is numbers.py's, which hands a tensor here.
define("Max:reduce", records=True, check=check_reduce, lower=lower_reduce, device=device_reduce, kernels=["max"],
       tape={"max": TapeRecord(["max"], ["max_back"])})


def check_sum_rows(a, call, expected):
    t = matrix_argument(a, call, "a matrix (it adds the rows together)")
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    touch(a, t)
    result = Tensor(p.element, None, 1) if p.is_dynamic else p.with_shape((p.shape[-1],))
    return tracked_if(result, t)


def plain_sum_rows(f, call: ast.Call) -> CValue:
    t, s, x = host_operand(f, call)
    rows, cols = rows_cols(f, x)
    out = fresh_tensor(f, t, None, call.pos.line, [cols])
    f.line(f"mica_sum_rows_{s}({out.text}.e, {f.data(x)}, {rows}, {cols});")
    return out


def device_sum_rows(f, call: ast.Call) -> CValue:
    t, x, out = device_operand(f, call)
    cols = t.shape[0]
    f.launch(f"mica_sum_rows_{SUFFIX[t.element]}", call.pos.line, out=f"{out.text}.ptr",
                x=f.device_data(x, call.pos.line), rows=element_count(x.type) // cols, cols=cols)
    return out


define("SumRows", records=True, check=check_sum_rows, lower=recorded_or("sum_rows", plain_sum_rows),
       device=device_sum_rows, kernels=["sum_rows"], tape={"sum_rows": TapeRecord(["sum_rows"], ["sum_rows_back"])},
       signature="SumRows(m : [..., C]) : vector[C]", doc="The rows of a tensor of rank 2 or more added together.")
