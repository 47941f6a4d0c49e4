"""Expressions the host tape records as one node, with the unfused ops' bits.

Every tape node keeps its value until the backward. Where an op's result only
feeds the next op, a fused node keeps what the backward needs and no more; its
forward and backward run the unfused kernels on the same numbers, and its
gradients arrive in the order the unfused walk gives them
(tests/test_fusions.py checks both). Tensors on the GPU keep the unfused form.

Attention, Softmax([CausalMask(]q * Transpose(k)[ * s][)]) * v
(mica_t_attention_*): one head of the GPT records six nodes and four (m, n)
tensors, the scores scaled, masked and softmaxed; at 256 positions those are
most of a training step's memory. The fused node keeps only its result and
computes the weights again in its backward, one matrix at a time. The scale is
a plain scalar on either side. v must read a variable or a place: unfused,
v's gradient arrives before the backwards of any nodes an expression for v
records, and q's and k's after them; one node gives all three at once.

A sum with a product, r + a * b, a * b + r, or a bias row added to a product
(mica_t_product_plus_*): the product's result, kept only to be added, is not
kept; the GEMM accumulates onto r. With the product on the left, r must read a
place, for the same reason as v.
"""

from __future__ import annotations

from .. import ast, shapes
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


def static_tensor(f, e: ast.Expr) -> Tensor | None:
    t = plain(f.concrete(e.ty))
    return t if isinstance(t, Tensor) and not t.is_dynamic else None


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
    tq, tk, tv = (static_tensor(f, a) for a in (q, k, v))
    if not all(a is not None and a.rank >= 2 and a.rank == tq.rank for a in (tq, tk, tv)):
        return None
    if (tq.element != tk.element or tk.element != tv.element or tq.shape[:-2] != tk.shape[:-2]
            or tk.shape[:-2] != tv.shape[:-2] or tq.shape[-1] != tk.shape[-1] or tk.shape[-2] != tv.shape[-2]):
        return None
    return q, k, scale, causal, v


def record_attention(f, parts, t: Type, line: int) -> str:
    """The fused node, its operands evaluated in the unfused order: q, k, the scale, v."""
    q, k, scale, causal, v = parts
    qn, kn = f.node(q), f.node(k)
    s = f.convert(f.value(scale), plain(t).element, line).text if scale else "1"
    vn = f.node(v)
    rank, dims = dims_literal(t)
    flag = {True: "true", False: "false"}
    return f.record("attention", t, [qn, kn, vn, flag[scale is not None], s, flag[causal], rank, dims], line)


def product_plus_parts(f, e: ast.Binary, t: Type):
    """(r, a, b, r_first) when e adds r to the matrix product a * b as this module fuses, else None."""
    if on_gpu(t) or e.op != "+" or static_tensor(f, e) is None:
        return None
    for product, r, r_first in ((e.right, e.left, True), (e.left, e.right, False)):
        if not (isinstance(product, ast.Binary) and product.op == "*") or (not r_first and not reads_a_place(f, r)):
            continue
        ta, tb, tr, out = static_tensor(f, product.left), static_tensor(f, product.right), static_tensor(f, r), plain(t)
        if ta is None or tb is None or tr is None or ta.rank < 2 or tb.rank != 2:
            continue
        if len({ta.element, tb.element, tr.element, out.element}) == 1 and \
                (tr.shape == out.shape or (not r_first and tr.shape == out.shape[-1:])):
            return r, product.left, product.right, r_first
    return None


def record_product_plus(f, parts, t: Type, line: int) -> str:
    """The fused node, its operands evaluated in the source's order."""
    r, a, b, r_first = parts
    rn = f.node(r) if r_first else None
    an, bn = f.node(a), f.node(b)
    rn = rn or f.node(r)
    ta, tb = (static_tensor(f, x) for x in (a, b))
    batch, m, k, n = shapes.product_extents(ta, tb)
    rank, dims = dims_literal(t)
    return f.record("product_plus", t, [an, bn, rn, m, k, n, rank, dims], line)
