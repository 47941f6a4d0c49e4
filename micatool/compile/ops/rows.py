"""Row-wise operations, each row of the last dimension on its own: Softmax,
CausalMask, LayerNorm, RmsNorm, CrossEntropy, and Gather, which takes rows of a
table by id."""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue, dims_literal, dtype_of
from ..residency import on_gpu
from ..types import ERROR, INTEGER, ErrorType, Scalar, Tensor, element_count, element_of, is_tracked, plain
from .registry import TapeRecord, define
from .checking import (
    argument_types,
    arity,
    last_dim,
    mixes_dynamic_with_tracked,
    one_argument,
    same_extent,
    tensor_arg,
    touch,
    tracked_if,
    values,
    wrong,
)
from .lowering import (
    c_product,
    device_over_matrices,
    extents,
    fresh_tensor,
    host_operand,
    node_result,
    plain_arg,
    recorded,
    recorded_or,
    records,
    rows_cols,
)


def vector_rows(f, x: CValue) -> tuple[str, str]:
    """Rows and columns a row-wise operation sees: a vector is one row."""
    t = plain(x.type)
    if t.rank == 1:
        return "1", extents(f, x)[0]
    return rows_cols(f, x)


def check_row_op(a, call, expected):
    t = one_argument(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    if call.callee.ident == "CausalMask" and plain(t).rank < 2:
        return wrong(a, call, call.args[0], t, "a matrix (rows attend to earlier columns)")
    touch(a, t)
    return t


def plain_softmax(f, call: ast.Call) -> CValue:
    t, s, x = host_operand(f, call)
    out = fresh_tensor(f, t, x, call.pos.line)
    rows, cols = vector_rows(f, x)
    f.line(f"mica_softmax_{s}({out.text}.e, {f.data(x)}, {rows}, {cols});")
    return out


def device_rows(f, call: ast.Call) -> CValue:
    """Softmax, LayerNorm and RmsNorm: one thread per row."""
    t = plain(f.concrete(call.ty))
    s, line = SUFFIX[t.element], call.pos.line
    args = [f.untracked(f.value(a)) for a in call.args]
    cols = t.shape[-1]
    out = f.device_temp(t, line)
    data = [f.device_data(a, line) for a in args]
    name = call.callee.ident.lower()
    kwargs = {"out": f"{out.text}.ptr", "x": data[0], "rows": t.count // cols, "cols": cols}
    if name == "layernorm":
        kwargs.update(mean=0, rstd=0, gain=data[1], bias=data[2])
    elif name == "rmsnorm":
        kwargs.update(rstd=0, gain=data[1])
    f.launch(f"mica_{name}_rows_{s}", line, **kwargs)
    return out


define("Softmax", records=True, check=check_row_op, lower=recorded_or("softmax", plain_softmax), device=device_rows,
       kernels=["softmax_rows"], tape={"softmax": TapeRecord(["softmax_rows"], ["softmax_back_rows"])},
       signature="Softmax(x : tensor) : same shape", doc="The softmax of each row, its maximum subtracted first.")


def plain_causal_mask(f, call: ast.Call) -> CValue:
    t, s, x = host_operand(f, call)
    out = fresh_tensor(f, t, x, call.pos.line)
    e = extents(f, x)
    f.line(f"mica_causal_mask_{s}({out.text}.e, {f.data(x)}, {c_product(e[:-2])}, {e[-2]}, {e[-1]});")
    return out


define("CausalMask", records=True, check=check_row_op, lower=recorded_or("causal_mask", plain_causal_mask),
       device=device_over_matrices("causal_mask", "x"), kernels=["causal_mask"],
       tape={"causal_mask": TapeRecord(["causal_mask"], ["causal_mask_back"])},
       signature="CausalMask(m : [..., R, C]) : same shape",
       doc="m with the entries above each matrix's diagonal set to -infinity.")


def check_norm(a, call, expected):
    name = call.callee.ident
    if not arity(a, call, 3 if name == "LayerNorm" else 2):
        return ERROR
    types = values(a, call)
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    x, *params = types
    if not tensor_arg(a, call, call.args[0], x) or not residency.check_together(a, call, name, call.args, types):
        return ERROR
    cols = last_dim(plain(x))
    for arg, t in zip(call.args[1:], params):
        if not tensor_arg(a, call, arg, t, 1):
            return ERROR
        if plain(t).element != plain(x).element or not same_extent(last_dim(plain(t)), cols):
            return a.error(arg, 6012, f"{name}'s gain and bias must be vectors of the rows' length {cols} "
                                      f"and element type, found '{t}'")
    if mixes_dynamic_with_tracked(a, call, types):
        return ERROR
    touch(a, *types)
    return tracked_if(plain(x), *types)


def lower_norm(f, call: ast.Call) -> CValue:
    kernel = call.callee.ident.lower()
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        return recorded(f, call, kernel)
    x, *params = (plain_arg(f, arg) for arg in call.args)
    rows, cols = vector_rows(f, x)
    for p in params:
        if plain(p.type).is_dynamic or plain(x.type).is_dynamic:
            f.line(f'mica_check_shape({c_product(extents(f, p))}, {cols}, {call.pos.line}, '
                        '"gain and bias elements");')
    out = fresh_tensor(f, t, x, call.pos.line)
    stats = "NULL, NULL" if kernel == "layernorm" else "NULL"
    data = ", ".join(f.data(v) for v in [x, *params])
    f.line(f"mica_{kernel}_{s}({out.text}.e, {stats}, {data}, {rows}, {cols});")
    return out


define("LayerNorm", records=True, check=check_norm, lower=lower_norm, device=device_rows, kernels=["layernorm_rows"],
       tape={"layernorm": TapeRecord(["layernorm_rows"], ["layernorm_params_back", "layernorm_back_rows"])},
       signature="LayerNorm(x : rows of C; gain, bias : vector[C]) : same shape",
       doc="Each row as (x - mean) / sqrt(var + 1e-5), times gain, plus bias.")
define("RmsNorm", records=True, check=check_norm, lower=lower_norm, device=device_rows, kernels=["rmsnorm_rows"],
       tape={"rmsnorm": TapeRecord(["rmsnorm_rows"], ["rmsnorm_gain_back", "rmsnorm_back_rows"])},
       signature="RmsNorm(x : rows of C; gain : vector[C]) : same shape",
       doc="Each row as x / sqrt(mean(x*x) + 1e-5), times gain.")


def integer_data(f, arg: ast.Expr) -> tuple[str, str]:
    """Pointer to integer targets or ids, and how many there are."""
    v = f.value(arg)
    t = plain(v.type)
    if isinstance(t, Scalar):
        return f"&{f.materialize(v).text}", "1"
    if t.is_dynamic:
        v = f.materialize(f.borrow(v))
        return f.data(v), f.count(v)
    return f.data(v), str(t.count)


def check_cross_entropy(a, call, expected):
    types = argument_types(a, call, 2)
    if types is None:
        return ERROR
    logits, targets = types
    if not tensor_arg(a, call, call.args[0], logits, dynamic_ok=not is_tracked(logits)):
        return ERROR
    lp, tp = plain(logits), plain(targets)
    wanted_rank = lp.rank - 1
    if is_tracked(targets):
        return wrong(a, call, call.args[1], targets, "integer targets")
    if wanted_rank == 0:
        if tp != INTEGER:
            return wrong(a, call, call.args[1], targets, "an integer target")
    elif not (isinstance(tp, Tensor) and tp.element == INTEGER and tp.rank == wanted_rank):
        return wrong(a, call, call.args[1], targets, f"integer targets of rank {wanted_rank}")
    elif lp.shape is not None and tp.shape is not None and tp.shape != lp.shape[:-1]:
        return a.error(call.args[1], 6013, f"CrossEntropy needs one target per row: logits '{logits}' take targets of "
                                           f"shape {list(lp.shape[:-1])}, found '{targets}'")
    if not residency.check_together(a, call, "CrossEntropy", call.args, [logits, targets]):
        return ERROR
    touch(a, logits)
    return tracked_if(residency.scalar_of(lp), logits)


def lower_cross_entropy(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call) and on_gpu(call.ty):
        targets = f.device_ids(call.args[1], call.pos.line)
        return node_result(f, call, f.record("cross_entropy", f.concrete(call.ty),
                                                  [f.node(call.args[0]), targets], call.pos.line))
    targets, count = integer_data(f, call.args[1])
    dynamic_targets = plain(f.concrete(call.args[1].ty)).is_dynamic if isinstance(
        plain(call.args[1].ty), Tensor) else False
    if records(f, call):
        logits_type = plain(f.concrete(call.args[0].ty))
        if dynamic_targets:
            rows = logits_type.count // logits_type.shape[-1]
            f.line(f'mica_check_shape({count}, {rows}, {call.pos.line}, "targets");')
        return node_result(f, call, f"mica_t_cross_entropy_{s}({f.node(call.args[0])}, "
                                    f"{targets}, {call.pos.line})")
    logits = plain_arg(f, call.args[0])
    rows, cols = vector_rows(f, logits)
    if plain(logits.type).is_dynamic or dynamic_targets:
        f.line(f'mica_check_shape({count}, {rows}, {call.pos.line}, "targets");')
    return CValue(f"mica_cross_entropy_{s}(NULL, {f.data(logits)}, {targets}, {rows}, {cols}, "
                  f"{call.pos.line})", t)


def device_cross_entropy(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    logits = f.untracked(f.value(call.args[0]))
    targets = f.device_ids(call.args[1], call.pos.line)
    cols = plain(logits.type).shape[-1]
    rows = element_count(logits.type) // cols
    f.uses_kernel(f"mica_cross_entropy_rows_{SUFFIX[element_of(t)]}", f"mica_mean_{SUFFIX[element_of(t)]}")
    out = f.declare(t)
    f.line(f"mica_gpu_cross_entropy(&{out}, {dtype_of(t)}, {f.materialize(f.borrow(logits)).text}, "
              f"{targets}, {rows}, {cols}, {call.pos.line});")
    return CValue(out, t, owned=True, lvalue=True)


define("CrossEntropy", records=True, check=check_cross_entropy, lower=lower_cross_entropy, device=device_cross_entropy,
       kernels=["cross_entropy_rows", "mean"],
       tape={"cross_entropy": TapeRecord(["cross_entropy_rows", "mean"], ["cross_entropy_back_rows"])},
       signature="CrossEntropy(logits : [..., V]; targets : integer [...]) : scalar",
       doc="The mean over the rows of logsumexp(row) - row[target].")


def check_gather(a, call, expected):
    types = argument_types(a, call, 2)
    if types is None:
        return ERROR
    table, ids = types
    if not tensor_arg(a, call, call.args[0], table, 2, dynamic_ok=not is_tracked(table)):
        return ERROR
    ip = plain(ids)
    if ip == INTEGER:
        shape = ()
    elif isinstance(ip, Tensor) and ip.element == INTEGER and not ip.is_dynamic:
        shape = ip.shape
    else:
        return wrong(a, call, call.args[1], ids, "an integer id or a static tensor of integer ids")
    if not residency.check_together(a, call, "Gather", call.args, [table, ids]):
        return ERROR
    tp = plain(table)
    touch(a, table)
    if tp.is_dynamic:
        return Tensor(tp.element, None, 1 if not shape else 2)
    return tracked_if(tp.with_shape(shape + (tp.shape[1],)), table)


def lower_gather(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    line = call.pos.line
    if records(f, call) and on_gpu(call.ty):
        rank, dims = dims_literal(t)
        ids = f.device_ids(call.args[1], line)
        n = plain(f.concrete(call.args[1].ty)).count if isinstance(plain(f.concrete(call.args[1].ty)), Tensor) else 1
        return node_result(f, call, f.record("gather", f.concrete(call.ty),
                                                  [f.node(call.args[0]), ids, n, rank, dims], line))
    ids, n = integer_data(f, call.args[1])
    if records(f, call):
        rank, dims = dims_literal(t)
        return node_result(f, call, f"mica_t_gather_{s}({f.node(call.args[0])}, "
                                    f"{ids}, {n}, {rank}, {dims}, {line})")
    table = plain_arg(f, call.args[0])
    rows, cols = extents(f, table)
    out = fresh_tensor(f, t, None, line,
                       [n, cols] if plain(f.concrete(call.args[1].ty)) != Scalar("integer") else [cols])
    f.line(f"mica_gather_{s}({out.text}.e, {f.data(table)}, {ids}, {n}, {rows}, {cols}, {line});")
    return out


def device_gather(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    table = f.untracked(f.value(call.args[0]))
    ids = f.device_ids(call.args[1], call.pos.line)
    rows, cols = plain(table.type).shape
    f.uses_kernel(f"mica_gather_{SUFFIX[t.element]}")
    out = f.declare(t)
    f.line(f"mica_gpu_gather(&{out}, {dtype_of(t)}, {f.materialize(f.borrow(table)).text}, "
              f"{ids}, {element_count(f.concrete(call.args[1].ty))}, {rows}, {cols}, {call.pos.line});")
    return CValue(out, t, owned=True, lvalue=True)


define("Gather", records=True, check=check_gather, lower=lower_gather, device=device_gather, kernels=["gather"],
       tape={"gather": TapeRecord(["gather"], ["gather_back"])},
       signature="Gather(table : matrix[V, D]; ids : integer or [...] of integers) : [..., D]",
       doc="Row ids[i] of the table for each id.")
