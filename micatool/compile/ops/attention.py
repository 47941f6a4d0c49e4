"""Attention on the host tape as one node: Softmax(CausalMask(q * Transpose(k) * s)) * v.

Written as the GPT writes it, one head's attention records six nodes, and the
tape keeps four (m, n) tensors of it until the backward: the scores, scaled,
masked and softmaxed; at 256 positions those are most of a training step's
memory. Recognized here, the expression records one node
(mica_t_attention_*, runtime_c/mica_ops.inc) that keeps only its result and
computes the weights again in its backward, one matrix at a time: the unfused
ops' kernels on the same numbers, so the same bits.

The mask and the scale are each optional; the scale is a plain scalar, on
either side. v must be a read of a variable or a place (no node of its own with
a backward): unfused, v's gradient arrives before the nodes an expression for
v records would run their backwards, and q's and k's after them; one node
gives all three at once, which would reorder the sums if those nodes shared an
input with q or k. Tensors on the GPU keep the unfused form.
"""

from __future__ import annotations

from .. import ast
from ..cvalue import dims_literal
from ..residency import on_gpu
from ..symbols import RoutineSymbol
from ..types import Scalar, Tensor, Tracked, Type, plain


def is_builtin(e: ast.Expr, name: str) -> bool:
    """A call of the predeclared `name` (not a routine of the program's of that name)."""
    return (isinstance(e, ast.Call) and isinstance(e.callee, ast.Name) and e.callee.ident == name
            and not isinstance(e.target, RoutineSymbol) and len(e.args) == 1)


def reads_a_place(f, e: ast.Expr) -> bool:
    """e is a variable, or a field or array element of one: it records no node with a backward."""
    while isinstance(e, (ast.Field, ast.Index)):
        if isinstance(e, ast.Index) and isinstance(plain(f.concrete(e.base.ty)), Tensor):
            return False  # part of a tracked tensor: a node that selects it
        e = e.base
    return isinstance(e, ast.Name)


def attention_parts(f, e: ast.Binary, t: Type):
    """(q, k, scale or None, causal, v) when e is the attention this module fuses, else None."""
    if on_gpu(t) or e.op != "*" or not is_builtin(e.left, "Softmax") or not reads_a_place(f, e.right):
        return None
    x = e.left.args[0]
    causal = is_builtin(x, "CausalMask")
    x = x.args[0] if causal else x
    scale = None
    if isinstance(x, ast.Binary) and x.op == "*":
        for product, s in ((x.left, x.right), (x.right, x.left)):
            st = f.concrete(s.ty)
            if isinstance(product, ast.Binary) and isinstance(st, Scalar) and not isinstance(st, Tracked):
                x, scale = product, s
                break
    if not (isinstance(x, ast.Binary) and x.op == "*" and is_builtin(x.right, "Transpose")):
        return None
    q, k, v = x.left, x.right.args[0], e.right
    tq, tk, tv = (plain(f.concrete(a.ty)) for a in (q, k, v))
    if not all(isinstance(a, Tensor) and not a.is_dynamic and a.rank >= 2 and a.rank == tq.rank for a in (tq, tk, tv)):
        return None
    if (tq.element != tk.element or tk.element != tv.element or tq.shape[:-2] != tk.shape[:-2]
            or tk.shape[:-2] != tv.shape[:-2] or tq.shape[-1] != tk.shape[-1] or tk.shape[-2] != tv.shape[-2]):
        return None
    return q, k, scale, causal, v


def record_attention(tape, parts, t: Type, line: int) -> str:
    """The fused node, its operands evaluated in the unfused order: q, k, the scale, v."""
    q, k, scale, causal, v = parts
    qn, kn = tape.node(q), tape.node(k)
    s = tape.f.exprs.convert(tape.f.exprs.value(scale), plain(t).element, line).text if scale else "1"
    vn = tape.node(v)
    rank, dims = dims_literal(t)
    flag = {True: "true", False: "false"}
    return tape.record("attention", t, [qn, kn, vn, flag[scale is not None], s, flag[causal], rank, dims], line)
