"""What the vocabulary's lowerings share: extents as C expressions, result storage,
and tape nodes.

A lowering takes the function lowering (the emitter: f.emit.line, f.exprs.value, f.emit.declare,
f.tape.node, f.tape.record, ...) and the call, and gives a CValue; a procedure's gives
NOTHING, having emitted its C statement itself. Extents are C expressions:
numbers for static shapes, `.rows`/`.cols` for dynamic ones.
"""

from __future__ import annotations

from .. import ast, shapes
from ..ctypes import SUFFIX
from ..cvalue import CValue
from ..types import BOOLEAN, STRING, Scalar, Tensor, Tracked, Type, plain

NOTHING = CValue("", BOOLEAN)


def records(f, call: ast.Call) -> bool:
    """Does this call record on the tape (a tracked result inside a window)?"""
    return f.tape.in_window and isinstance(f.concrete(call.ty), Tracked)


def extents(f, v: CValue) -> list[str]:
    """Per-dimension extents of a tensor value, as C expressions."""
    t = plain(v.type)
    if not t.is_dynamic:
        return [str(d) for d in t.shape]
    v = f.exprs.borrow(v)
    return [f"{v.text}.rows"] if t.rank == 1 else [f"{v.text}.rows", f"{v.text}.cols"]


def product(items: list[str]) -> str:
    if all(i.isdigit() for i in items):
        n = 1
        for i in items:
            n *= int(i)
        return str(n)
    return " * ".join(f"({i})" for i in items) or "1"


def rows_cols(f, v: CValue) -> tuple[str, str]:
    """A tensor seen as rows of its last extent."""
    e = extents(f, v)
    return product(e[:-1]), e[-1]


def fresh_tensor(f, t: Tensor, like: CValue | None, line: int, dims: list[str] | None = None) -> CValue:
    """Storage for a result: a temporary struct, or a new dynamic tensor."""
    if not t.is_dynamic:
        return CValue(f.emit.declare_uninitialized(t), t, lvalue=True)
    e = dims if dims is not None else extents(f, like)
    rows, cols = (e[0], "1") if len(e) == 1 else (e[0], e[1])
    name = f.emit.declare(t, f"mica_dyn_new_{SUFFIX[t.element]}({rows}, {cols}, {line})")
    return CValue(name, t, owned=True, lvalue=True)


def node_result(f, call: ast.Call, init: str) -> CValue:
    return CValue(f.tape.new_node(init), f.concrete(call.ty), node=True)


def recorded(f, call: ast.Call, record: str) -> CValue:
    """The call inside a window: its node on the tape, recording `record` of its
    arguments' nodes."""
    nodes = [f.tape.node(arg) for arg in call.args]
    return node_result(f, call, f.tape.record(record, f.concrete(call.ty), nodes, call.pos.line))


def device_operand(f, call: ast.Call) -> tuple[Tensor, CValue, CValue]:
    """A device op of one operand: its result type, the operand, and the fresh
    device value the result goes to."""
    t = plain(f.concrete(call.ty))
    x = f.exprs.untracked(f.exprs.value(call.args[0]))
    return t, x, f.device.temp(t, call.pos.line)


def plain_arg(f, arg: ast.Expr, t: Type | None = None) -> CValue:
    v = f.exprs.untracked(f.exprs.value(arg))
    return f.exprs.convert(v, t, arg.pos.line) if t is not None else v


def args_of(f, call: ast.Call) -> list[CValue]:
    return [f.exprs.untracked(f.exprs.value(arg)) for arg in call.args]


def borrowed_arg(f, arg: ast.Expr) -> str:
    v = f.exprs.untracked(f.exprs.value(arg))
    return f.exprs.borrow(v).text if plain(v.type) == STRING or v.owned else v.text


def storage(f, place: CValue) -> tuple[str, str]:
    """Pointer to a lent place's elements, and how many."""
    t = plain(place.type)
    if isinstance(t, Scalar):
        return f"&{place.text}", "1"
    return f"{place.text}.e", product(extents(f, place))


def numbers(f, call: ast.Call, indices, t: Scalar) -> list[str]:
    return [f.exprs.convert(f.exprs.value(call.args[i]), t, call.pos.line).text for i in indices]


def too_deep(k: int, line: int) -> str:
    """The trap of an integer product of depth k past what int32 sums exactly, on the host or the
    device: a routine's shape variable bound too deep, where a number would be error 4022."""
    return (f'mica_trap({line}, "an integer product sums at most {shapes.INTEGER_PRODUCT_DEPTH} '
            f'products exactly in int32; this one sums {k}");')
