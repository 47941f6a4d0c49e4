"""Residency: which values live on the GPU, and the rule that they cross only
at ToDevice and ToHost (docs/gpu.md).

A device tensor is a static tensor whose type says `on gpu`; a device scalar
is a rank-0 device tensor. Host scalars and constants may join device values:
they travel as kernel arguments, not as storage.
"""

from __future__ import annotations

from . import ast
from .types import Array, Record, Scalar, Tensor, Type, plain


def on_gpu(t: Type) -> bool:
    p = plain(t)
    return isinstance(p, Tensor) and p.on_gpu


def holds_device(t: Type) -> bool:
    """Does a value of t live on the GPU, or hold parts that do?"""
    p = plain(t)
    if isinstance(p, Record):
        return any(holds_device(f) for _, f in p.fields)
    if isinstance(p, Array):
        return holds_device(p.element)
    return on_gpu(p)


def place_word(t: Type) -> str:
    return "on the GPU" if on_gpu(t) else "on the host"


def describe(e: ast.Expr) -> str:
    """How a diagnostic names an operand: its name when it has one."""
    if isinstance(e, ast.AddressArg):
        return describe(e.place)
    if isinstance(e, ast.Name | ast.Field | ast.Index):
        return f"'{ast.place_text(e)}'"
    if isinstance(e, ast.Call) and isinstance(e.callee, ast.Name):
        return f"the result of '{e.callee.ident}'"
    return "a value"


def needs_host(a, what: str, arg: ast.Expr, t: Type, remedy: str = "") -> bool:
    """What only the host does (a loop's count, an index, a host-only verb) takes host values (7005)."""
    if not on_gpu(t):
        return True
    name = describe(arg)
    remedy = remedy or f"bring it across with ToHost({argument_text(arg)}) first"
    a.error(arg, 7005, f"{what} runs on the host; {name} lives on the GPU: {remedy}")
    return False


def suggestion(device: ast.Expr, host: ast.Expr) -> str:
    return f"move one across with ToDevice({argument_text(host)}) or ToHost({argument_text(device)})"


def argument_text(e: ast.Expr) -> str:
    """The operand as it would stand inside ToDevice(...) or ToHost(...)."""
    name = describe(e)
    return name.strip("'") if name.startswith("'") else "..."


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
