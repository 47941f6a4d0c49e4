"""Products of vectors and matrices: Dot, Outer and Transpose. The `*` operator's
matrix products lower with the operators (lower/expressions.py, lower/device.py); their
device-tape records are in operators.py."""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import ERROR, ErrorType, Tensor, Tracked, element_count, element_of, is_tracked, plain
from .registry import TapeRecord, define
from .checking import (
    argument_types,
    last_dim,
    matrix_argument,
    mixes_dynamic_with_tracked,
    records_on_gpu,
    same_extent,
    tensor_arg,
    touch,
    tracked_if,
)
from .lowering import (args_of, batch_of_matrices, device_over_matrices, extents, fresh_tensor, node_result,
                       plain_arg, recorded_or, records)


def check_dot(a, call, expected):
    types = argument_types(a, call, 2)
    if types is None:
        return ERROR
    for arg, t in zip(call.args, types):
        if not tensor_arg(a, call, arg, t, 1):
            return ERROR
    left, right = (plain(t) for t in types)
    if not residency.check_together(a, call, f"'{call.callee.ident}'", call.args, types):
        return ERROR
    if left.element != right.element:
        return a.error(call, 4021, f"'{call.callee.ident}' needs one element type, found '{types[0]}' and '{types[1]}'")
    if mixes_dynamic_with_tracked(a, call, types):
        return ERROR
    touch(a, *types)
    if call.callee.ident == "Dot":
        if not same_extent(last_dim(left), last_dim(right)):
            return a.error(call, 6014, f"Dot needs vectors of one length, found '{types[0]}' and '{types[1]}'")
        return records_on_gpu(a, call, tracked_if(residency.scalar_of(left), *types))
    if left.is_dynamic or right.is_dynamic:
        return Tensor(left.element, None, 2)
    return records_on_gpu(a, call, tracked_if(left.with_shape((left.shape[0], right.shape[0])), *types))


def lower_dot(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call):
        return node_result(f, call, f"mica_t_dot_{s}({f.node(call.args[0])}, {f.node(call.args[1])})")
    a, b = plain_arg(f, call.args[0]), plain_arg(f, call.args[1])
    n = extents(f, a)[0]
    if plain(a.type).is_dynamic or plain(b.type).is_dynamic:
        f.line(f'mica_check_shape({extents(f, b)[0]}, {n}, {call.pos.line}, "elements");')
    return CValue(f"mica_dot_{s}({f.data(a)}, {f.data(b)}, {n})", t)


def device_dot(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    a, b = (f.untracked(f.value(x)) for x in call.args)
    out = f.device_temp(t, call.pos.line)
    f.launch(f"mica_dot_{SUFFIX[element_of(t)]}", call.pos.line, out=f"{out.text}.ptr",
                a=f.device_data(a, call.pos.line), b=f.device_data(b, call.pos.line), n=element_count(a.type))
    return out


define("Dot", records=True, check=check_dot, lower=lower_dot, device=device_dot, kernels=["dot"],
       signature="Dot(a, b : vector[N]) : scalar", doc="The dot product of two vectors.")


def lower_outer(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        return node_result(f, call, f"mica_t_outer_{s}({f.node(call.args[0])}, {f.node(call.args[1])})")
    a, b = plain_arg(f, call.args[0]), plain_arg(f, call.args[1])
    m, n = extents(f, a)[0], extents(f, b)[0]
    out = fresh_tensor(f, t, None, call.pos.line, [m, n])
    f.line(f"mica_outer_{s}({out.text}.e, {f.data(a)}, {f.data(b)}, {m}, {n});")
    return out


def device_outer(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    a, b = (f.untracked(f.value(x)) for x in call.args)
    out = f.device_temp(t, call.pos.line)
    f.launch(f"mica_outer_{SUFFIX[t.element]}", call.pos.line, out=f"{out.text}.ptr",
                a=f.device_data(a, call.pos.line), b=f.device_data(b, call.pos.line), m=t.shape[0], n=t.shape[1])
    return out


define("Outer", records=True, check=check_dot, lower=lower_outer, device=device_outer, kernels=["outer"],
       signature="Outer(a : vector[M]; b : vector[N]) : matrix[M, N]",
       doc="The outer product: element [i, j] is a[i] * b[j].")


def check_transpose(a, call, expected):
    t = matrix_argument(a, call, "a matrix, or a tensor whose last two dimensions swap")
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    a.note_tracked_op(t)
    if p.is_dynamic:
        return Tensor(p.element, None, 2, p.on_gpu)
    result = p.with_shape(p.shape[:-2] + (p.shape[-1], p.shape[-2]))
    return Tracked(result) if is_tracked(t) else result


def plain_transpose(f, call: ast.Call) -> CValue:
    (v,) = args_of(f, call)
    t = plain(f.concrete(call.ty))
    suffix = SUFFIX[t.element]
    if t.is_dynamic:
        return CValue(f"mica_dyn_transpose_{suffix}({f.borrow(v).text}, {call.pos.line})", t, owned=True)
    batch, rows, cols = batch_of_matrices(plain(v.type))
    out = f.declare_uninitialized(t)
    f.line(f"mica_transpose_{suffix}({out}.e, {f.data(v)}, {batch}, {rows}, {cols});")
    return CValue(out, t, lvalue=True)


define("Transpose", records=True, check=check_transpose, lower=recorded_or("transpose", plain_transpose),
       device=device_over_matrices("transpose", "a"), kernels=["transpose"],
       tape={"transpose": TapeRecord(["transpose"], ["transpose_back"])},
       signature="Transpose(m : matrix[R, C]) : matrix[C, R]", doc="The matrix with its rows and columns swapped.")
