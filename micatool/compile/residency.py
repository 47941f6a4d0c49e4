"""Residency: which values live on the GPU, and the rule that they cross only
at ToDevice and ToHost (docs/gpu.md).

A device tensor is a static tensor whose type says `on gpu`; a device scalar
is a rank-0 device tensor. Host scalars and constants may join device values:
they travel as kernel arguments, not as storage.
"""

from __future__ import annotations

from . import ast
from .types import Scalar, Tensor, Type, plain


def on_gpu(t: Type) -> bool:
    p = plain(t)
    return isinstance(p, Tensor) and p.on_gpu


def place_word(t: Type) -> str:
    return "on the GPU" if on_gpu(t) else "on the host"


def describe(e: ast.Expr) -> str:
    """How a diagnostic names an operand: its name when it has one."""
    if isinstance(e, ast.Name):
        return f"'{e.ident}'"
    if isinstance(e, ast.Field):
        return f"'{describe(e.base).strip(chr(39))}.{e.name}'"
    return "a value"


def suggestion(device: ast.Expr, host: ast.Expr) -> str:
    return f"move one across with ToDevice({describe(host).strip(chr(39))}) or ToHost({describe(device).strip(chr(39))})"


def mixes(types: list[Type]) -> bool:
    """Do these operands live in different places? Host scalars go anywhere."""
    places = {on_gpu(t) for t in types if not isinstance(plain(t), Scalar)}
    return len(places) > 1


def check_together(a, node: ast.Node, what: str, exprs: list[ast.Expr], types: list[Type]) -> bool:
    """Report 7001 when one operation's operands live on both sides."""
    if not mixes(types):
        return True
    device = next(e for e, t in zip(exprs, types) if on_gpu(t))
    host = next(e for e, t in zip(exprs, types) if not on_gpu(t) and not isinstance(plain(t), Scalar))
    a.error(node, 7001, f"{what} mixes {describe(device)} on the GPU with {describe(host)} on the host, a hidden "
                        f"transfer; {suggestion(device, host)}")
    return False


def scalar_of(p: Tensor) -> Type:
    """The scalar a reduction of p gives: a device scalar when p is on the GPU."""
    return Tensor(p.element, (), 0, True) if p.on_gpu else p.element
