"""What the vocabulary's lowerings share: the context they lower in, extents as C
expressions, result storage, and tape nodes.

A lowering takes a LowerContext (`f`) and the call, and gives a CValue; a
procedure's gives NOTHING, having emitted its C statement itself. Extents are
C expressions: numbers for static shapes, `.rows`/`.cols` for dynamic ones.
"""

from __future__ import annotations

from .. import ast, shapes
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import BOOLEAN, STRING, Scalar, Tensor, Tracked, Type, plain


class LowerContext:
    """The function lowering as an op's lowering sees it: the values of its
    arguments, the lines and temporaries of its C, its tape nodes and its
    device launches, and nothing of the statements, scopes, loops or routines
    around the call, as CheckContext is the analyzer to a checker. Built once
    per function lowering (lower/function.py), which it asks through its parts."""

    def __init__(self, f):
        self._f = f
        self._exprs, self._emit, self._tape, self._device = f.exprs, f.emit, f.tape, f.device

    # ------------------------------------------------------------ types

    def concrete(self, t: Type) -> Type:
        """t under the function's shape binding."""
        return self._f.concrete(t)

    def ctype(self, t: Type) -> str:
        return self._f.ctype(t)

    @property
    def types(self):
        """The program's C types (names, copies, moves, drops of values that own storage)."""
        return self._f.types

    # ------------------------------------------------------------ values

    def value(self, e: ast.Expr, expected: Type | None = None) -> CValue:
        """An argument's value (its C expression, type, ownership)."""
        return self._exprs.value(e, expected)

    def place(self, e: ast.Expr) -> CValue:
        """An argument that names a place (lent by `address`, or written)."""
        return self._exprs.place(e)

    def untracked(self, v: CValue) -> CValue:
        """A tracked value's plain value."""
        return self._exprs.untracked(v)

    def convert(self, v: CValue, t: Type, line: int) -> CValue:
        return self._exprs.convert(v, t, line)

    def materialize(self, v: CValue) -> CValue:
        """v in a C variable, so that its text may be used twice."""
        return self._exprs.materialize(v)

    def borrow(self, v: CValue) -> CValue:
        """v held until the statement's end, when it owns storage."""
        return self._exprs.borrow(v)

    def data(self, v: CValue) -> str:
        """A pointer to a tensor value's elements."""
        return self._exprs.data(v)

    def count(self, v: CValue) -> str:
        """A tensor value's element count."""
        return self._exprs.count(v)

    # ------------------------------------------------------------ lines

    def line(self, text: str) -> None:
        self._emit.line(text)

    def declare(self, t: Type, init: str | None = None) -> str:
        """A temporary of Mica type t, initialised or zeroed, for the statement."""
        return self._emit.declare(t, init)

    def declare_uninitialized(self, t: Type) -> str:
        """A temporary a kernel is about to fill completely."""
        return self._emit.declare_uninitialized(t)

    def declare_c(self, ctype: str, init: str) -> str:
        """A temporary of a C type no Mica type names."""
        return self._emit.declare_c(ctype, init)

    def declare_array(self, ctype: str, entries: list[str]) -> str:
        """A temporary C array of ctype holding entries, one line each."""
        name = self._emit.fresh()
        self._emit.line(f"{ctype} {name}[] = {{")
        for entry in entries:
            self._emit.line(f"    {entry},")
        self._emit.line("};")
        self._emit.declared = True
        return name

    def result_unused(self, call: ast.Call) -> bool:
        """The call is a statement whose answer nobody reads."""
        return self._f.discarded is call

    @property
    def analysis(self):
        """The whole program's analysis (the paths of its tracked places)."""
        return self._f.lowering.analysis

    # ------------------------------------------------------------ the tape

    @property
    def in_window(self) -> bool:
        """Tracked operations record on the tape here."""
        return self._tape.in_window

    def node(self, e: ast.Expr, dtype: str | None = None) -> str:
        """e as a node of the tape (a tracked place read, a recorded result, or a constant)."""
        return self._tape.node(e, dtype)

    def record(self, op: str, t: Type, args: list, line: int | None = None) -> str:
        """A node recording op (mica_t_OP_S on the host, mica_gt_OP and its kernels on the device)."""
        return self._tape.record(op, t, args, line)

    def new_node(self, init: str) -> str:
        """A node variable holding init."""
        return self._tape.new_node(init)

    def backward(self, call: ast.Call) -> None:
        self._tape.backward(call)

    def gradient(self, call: ast.Call) -> CValue:
        return self._tape.gradient(call)

    # ------------------------------------------------------------ the device

    def launch(self, kernel: str, line: int, grid_y: int = 1, **args) -> None:
        """One kernel launch, its arguments C expressions by the kernel's parameter names."""
        self._device.launch(kernel, line, grid_y, **args)

    def uses_kernel(self, *kernels: str) -> None:
        """The binary embeds these kernels, which the runtime launches by name."""
        self._f.lowering.kernels.update(kernels)

    def device_temp(self, t: Type, line: int) -> CValue:
        """A fresh device value of type t."""
        return self._device.temp(t, line)

    def device_data(self, v: CValue, line: int) -> str:
        """The device address of an operand."""
        return self._device.data(v, line)

    def device_ids(self, e: ast.Expr, line: int) -> str:
        """Ids or targets for a device kernel."""
        return self._device.ids(e, line)

    def as_element(self, x: CValue, element: Scalar, line: int) -> CValue:
        """A device scalar converted to element's type."""
        return self._device.as_element(x, element, line)

    def to_device(self, call: ast.Call) -> CValue:
        return self._device.to_device(call)

    def to_host(self, call: ast.Call) -> CValue:
        return self._device.to_host(call)


NOTHING = CValue("", BOOLEAN)


def records(f, call: ast.Call) -> bool:
    """Does this call record on the tape (a tracked result inside a window)?"""
    return f.in_window and isinstance(f.concrete(call.ty), Tracked)


def extents(f, v: CValue) -> list[str]:
    """Per-dimension extents of a tensor value, as C expressions."""
    t = plain(v.type)
    if not t.is_dynamic:
        return [str(d) for d in t.shape]
    v = f.borrow(v)
    return [f"{v.text}.rows"] if t.rank == 1 else [f"{v.text}.rows", f"{v.text}.cols"]


def c_product(items: list[str]) -> str:
    """The C expression of the product of C integer expressions (a count of elements, of rows), folded when all
    are literals; shapes.product_type is the Mica type of a product of tensors."""
    if all(i.isdigit() for i in items):
        n = 1
        for i in items:
            n *= int(i)
        return str(n)
    return " * ".join(f"({i})" for i in items) or "1"


def rows_cols(f, v: CValue) -> tuple[str, str]:
    """A tensor seen as rows of its last extent."""
    e = extents(f, v)
    return c_product(e[:-1]), e[-1]


def batch_of_matrices(t: Tensor) -> tuple[int, int, int]:
    """A static tensor seen as matrices of its last two extents: how many, their rows, their columns."""
    rows, cols = t.shape[-2:]
    return t.count // (rows * cols), rows, cols


def fresh_tensor(f, t: Tensor, like: CValue | None, line: int, dims: list[str] | None = None) -> CValue:
    """Storage for a result: a temporary struct, or a new dynamic tensor."""
    if not t.is_dynamic:
        return CValue(f.declare_uninitialized(t), t, lvalue=True)
    e = dims if dims is not None else extents(f, like)
    rows, cols = (e[0], "1") if len(e) == 1 else (e[0], e[1])
    name = f.declare(t, f"mica_dyn_new_{SUFFIX[t.element]}({rows}, {cols}, {line})")
    return CValue(name, t, owned=True, lvalue=True)


def node_result(f, call: ast.Call, init: str) -> CValue:
    return CValue(f.new_node(init), f.concrete(call.ty), node=True)


def recorded(f, call: ast.Call, record: str) -> CValue:
    """The call inside a window: its node on the tape, recording `record` of its
    arguments' nodes."""
    nodes = [f.node(arg) for arg in call.args]
    return node_result(f, call, f.record(record, f.concrete(call.ty), nodes, call.pos.line))


def recorded_or(record: str, plain_lower):
    """The host lowering of an op that, inside a window, records `record` of its
    arguments' nodes (recorded) and outside one is `plain_lower`."""
    def lower(f, call: ast.Call) -> CValue:
        return recorded(f, call, record) if records(f, call) else plain_lower(f, call)
    return lower


def device_operand(f, call: ast.Call) -> tuple[Tensor, CValue, CValue]:
    """A device op of one operand: its result type, the operand, and the fresh
    device value the result goes to."""
    t = plain(f.concrete(call.ty))
    x = f.untracked(f.value(call.args[0]))
    return t, x, f.device_temp(t, call.pos.line)


def device_over_matrices(kernel: str, operand: str):
    """The device lowering of an op of one tensor whose kernel runs over its matrices (its
    last two extents), with the parameters out, `operand`, batch, rows and cols."""
    def device(f, call: ast.Call) -> CValue:
        t, x, out = device_operand(f, call)
        batch, rows, cols = batch_of_matrices(plain(x.type))
        f.launch(f"mica_{kernel}_{SUFFIX[t.element]}", call.pos.line, out=f"{out.text}.ptr",
                 **{operand: f.device_data(x, call.pos.line)}, batch=batch, rows=rows, cols=cols)
        return out
    return device


def host_operand(f, call: ast.Call) -> tuple[Tensor, str, CValue]:
    """A host op of one tensor operand: its result type, the C suffix of its
    element, and the operand's plain value."""
    t = plain(f.concrete(call.ty))
    return t, SUFFIX[t.element], plain_arg(f, call.args[0])


def plain_arg(f, arg: ast.Expr, t: Type | None = None) -> CValue:
    v = f.untracked(f.value(arg))
    return f.convert(v, t, arg.pos.line) if t is not None else v


def args_of(f, call: ast.Call) -> list[CValue]:
    return [f.untracked(f.value(arg)) for arg in call.args]


def borrowed_arg(f, arg: ast.Expr) -> str:
    v = f.untracked(f.value(arg))
    return f.borrow(v).text if plain(v.type) == STRING or v.owned else v.text


def storage(f, place: CValue) -> tuple[str, str]:
    """Pointer to a lent place's elements, and how many."""
    t = plain(place.type)
    if isinstance(t, Scalar):
        return f"&{place.text}", "1"
    return f"{place.text}.e", c_product(extents(f, place))


def numbers(f, call: ast.Call, indices, t: Scalar) -> list[str]:
    return [f.convert(f.value(call.args[i]), t, call.pos.line).text for i in indices]


def too_deep(k: int, line: int) -> str:
    """The trap of an integer product of depth k past what int32 sums exactly, on the host or the
    device: a routine's shape variable bound too deep, where a number would be error 4022."""
    return (f'mica_trap({line}, "an integer product sums at most {shapes.INTEGER_PRODUCT_DEPTH} '
            f'products exactly in int32; this one sums {k}");')
