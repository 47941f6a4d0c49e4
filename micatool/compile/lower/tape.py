"""Tape lowering: tracked values inside `tape ... end` become recorded nodes.

Inside a window (and in the `__tape` instance of a routine that runs inside
one) an expression of tracked type lowers to a `mica_node *`: reading a
tracked place enrolls it (mica_tape_read), a plain operand becomes a constant
node, and each operation calls its mica_t_ node function. Assigning a node to
a tracked place stores its value and remembers the node (mica_tape_write).
Outside windows tracked places are plain values beside their tags.

Tracked values on the GPU record on the device tape instead (mica_gt_*,
runtime_c/mica_gpu_tape.c): the same operations, whose nodes hold device
buffers and launch the kernels ops.TAPE lists for each record, forward and backward.
"""

from __future__ import annotations

from ...diagnostics import InternalError
from .. import ast, ops, shapes
from ..ops.fusions import attention_parts, product_plus_parts, record_attention, record_product_plus
from ..c_types import SUFFIX
from ..cvalue import CValue, dims_literal, dtype_of
from ..residency import on_gpu
from ..symbols import VarSymbol
from ..types import Array, Scalar, Tensor, Tracked, Type, plain


class Tape:
    """One function's tape: its windows, the nodes tracked values become, Backward and Gradient."""

    def __init__(self, f):
        self.f = f
        self.emit = f.emit
        self.in_window = f.recording  # tracked operations record on the tape
        self.window_here = False  # inside a window this function opened

    # ============================================================ windows

    def tape_window(self, s: ast.Tape) -> None:
        self.emit.line(f"mica_tape_begin({s.pos.line});")
        outer = (self.in_window, self.window_here)
        self.in_window = self.window_here = True
        self.f.statements.stmts(s.body)
        self.in_window, self.window_here = outer
        self.emit.line("mica_tape_end();")

    def leave_window(self) -> None:
        """break, continue or exit out of this function's own window closes it first."""
        if self.window_here:
            self.emit.line("mica_tape_end();")

    def recording_call(self, routine) -> bool:
        return self.in_window and routine in self.f.lowering.analysis.tape_routines

    # ============================================================ nodes

    def suffix(self, t: Type) -> str:
        p = plain(t)
        return SUFFIX[p if isinstance(p, Scalar) else p.element]

    def new_node(self, init: str) -> str:
        name = self.emit.fresh()
        self.emit.line(f"mica_node *{name} = {init};")
        self.emit.declared = True
        return name

    def record(self, op: str, t: Type, args: list, line: int | None = None) -> str:
        """A node recording op with result type t: on the host tape mica_t_OP_S(args),
        on the device tape mica_gt_OP(args, line) and the kernels it launches."""
        args = ", ".join(str(a) for a in args)
        if not on_gpu(t):
            return self.new_node(f"mica_t_{op}_{self.suffix(t)}({args})")
        if op not in ops.TAPE:
            raise InternalError(f"'{op}' has no kernels on the device tape")
        s, record = self.suffix(t), ops.TAPE[op]
        self.f.lowering.kernels.update(f"mica_{k}_{s}" for k in record.kernels)
        line = line or self.f.line_now
        if record.each:
            (forward,), (backward,) = record.forward, record.backward
            return self.new_node(f'mica_gt_each("mica_{forward}", "mica_{backward}", {args}, {line})')
        return self.new_node(f"mica_gt_{op}({args}, {line})")

    def node(self, e: ast.Expr, dtype: str | None = None) -> str:
        """e as a node (a tracked place read, a recorded result, or a constant)."""
        return self.as_node(self.f.exprs.value(e), dtype)

    def as_node(self, v: CValue, dtype: str | None = None) -> str:
        if v.node:
            text = v.text
        elif isinstance(v.type, Tracked):
            text = self.read_node(v)
        else:
            text = self.const_node(v, dtype or dtype_of(v.type))
        wanted = dtype or dtype_of(v.type)
        if wanted != dtype_of(v.type) and on_gpu(v.type):
            self.f.lowering.kernels.update(["mica_convert_f32_f64", "mica_convert_f64_f32",
                                            f"mica_accumulate_{self.suffix(v.type)}"])
            text = self.new_node(f"mica_gt_convert({text}, {wanted}, {self.f.line_now})")
        elif wanted != dtype_of(v.type):
            text = self.new_node(f"mica_t_convert({text}, {wanted})")
        return text

    def read_node(self, place: CValue) -> str:
        t = plain(place.type)
        rank, dims = dims_literal(t)
        if on_gpu(t):
            return self.new_node(f"mica_gt_read(&{place.text}.tag, {dtype_of(t)}, &{place.text}.v, {rank}, {dims}, "
                                 f"{self.f.line_now})")
        data = f"{place.text}.v.e" if isinstance(t, Tensor) else f"&{place.text}.v"
        return self.new_node(f"mica_tape_read(&{place.text}.tag, {dtype_of(t)}, {data}, {rank}, {dims})")

    def const_node(self, v: CValue, dtype: str, device: bool = False) -> str:
        """A plain operand as a node; a host scalar beside device values goes to the device."""
        t = plain(v.type)
        if isinstance(t, Scalar):
            where = f"mica_gt_scalar({dtype}, (double)({v.text}), {self.f.line_now})" if device else \
                f"mica_tape_scalar({dtype}, (double)({v.text}))"
            return self.new_node(where)
        rank, dims = dims_literal(t)
        if on_gpu(t):
            return self.new_node(f"mica_gt_const({dtype}, {self.f.exprs.materialize(self.f.exprs.borrow(v)).text}, "
                                 f"{rank}, {dims}, {self.f.line_now})")
        return self.new_node(f"mica_tape_const({dtype}, {self.f.exprs.data(v)}, {rank}, {dims})")

    def node_value(self, text: str, t: Type) -> CValue:
        return CValue(text, t, node=True)

    def untracked_node(self, v: CValue) -> CValue:
        """The plain value a node holds."""
        t = plain(v.type)
        if on_gpu(t):
            out = self.emit.declare(t)
            self.emit.line(f"mica_gt_value(&{out}, {v.text}, {self.f.line_now});")
            return CValue(out, t, owned=True, lvalue=True)
        if isinstance(t, Scalar):
            return CValue(f"(({self.f.types.name(t)} *){v.text}->value)[0]", t)
        out = self.emit.declare_uninitialized(t)
        self.emit.line(f"mica_tape_value({out}.e, {v.text});")
        return CValue(out, t, lvalue=True)

    # ============================================================ assignments

    def record_assign(self, s: ast.Assign) -> None:
        """target := value inside a window, with a tracked target."""
        target_type = self.f.concrete(s.target.ty)
        symbol = s.target.symbol if isinstance(s.target, ast.Name) else None
        if isinstance(symbol, VarSymbol) and self.holds_node(symbol):
            self.emit.line(f"{self.f.exprs.var_text(symbol)} = {self.node(s.value, dtype_of(target_type))};")
            return
        if not isinstance(self.f.concrete(s.value.ty), Tracked):
            self.f.statements.store(self.f.exprs.place(s.target), self.f.exprs.value(s.value, plain(target_type)),
                                    s.pos.line)
            return
        node = self.node(s.value, dtype_of(target_type))
        place = self.f.exprs.place(s.target)
        if on_gpu(target_type):
            self.emit.line(f"mica_gt_write(&{place.text}.tag, &{place.text}.v, {node}, {s.pos.line});")
            return
        data = f"{place.text}.v.e" if isinstance(plain(target_type), Tensor) else f"&{place.text}.v"
        self.emit.line(f"mica_tape_write(&{place.text}.tag, {data}, {node});")

    def holds_node(self, symbol: VarSymbol) -> bool:
        """In a __tape instance, tracked parameters and the tracked result are nodes."""
        return self.f.recording and isinstance(symbol.type, Tracked) and symbol.role in ("param", "result")

    # ============================================================ operators

    def record_unary(self, e: ast.Unary) -> CValue:
        t = self.f.concrete(e.ty)
        operand = self.node(e.operand, dtype_of(t))
        if e.op == "+":
            return self.node_value(operand, t)
        return self.node_value(self.record("neg", t, [operand], e.pos.line), t)

    def record_binary(self, e: ast.Binary) -> CValue:
        t = self.f.concrete(e.ty)
        dtype, line, device = dtype_of(t), e.pos.line, on_gpu(t)
        lt, rt = plain(self.f.concrete(e.left.ty)), plain(self.f.concrete(e.right.ty))
        left_tracked = isinstance(self.f.concrete(e.left.ty), Tracked)
        right_tracked = isinstance(self.f.concrete(e.right.ty), Tracked)
        op = e.op
        attention = attention_parts(self.f.op_context, e, t)
        if attention:
            return self.node_value(record_attention(self.f.op_context, attention, t, line), t)
        plus = product_plus_parts(self.f.op_context, e, t)
        if plus:
            return self.node_value(record_product_plus(self.f.op_context, plus, t, line), t)
        if isinstance(lt, Tensor) and isinstance(rt, Tensor) and lt.rank and rt.rank:
            return self.node_value(self.record_tensor_pair(op, e, lt, rt, t), t)
        if _scalar_like(lt) and _scalar_like(rt) and left_tracked and right_tracked:
            kernel = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[op]
            nodes = [self.node(e.left, dtype), self.node(e.right, dtype)]
            return self.node_value(self.record(kernel, t, nodes, line), t)
        # one side is a scalar; the other is the tracked value, or a tensor it scales
        tensor_left = _tensor_first(lt, rt, left_tracked)
        main, other = (e.left, e.right) if tensor_left else (e.right, e.left)
        other_tracked = right_tracked if tensor_left else left_tracked
        a = self.node(main, dtype)
        if other_tracked:  # a tensor with a tracked scalar (host tape only: the analyzer says so)
            k = self.node(other, dtype)
            if op == "-" and not tensor_left:
                a = self.record("neg", t, [a], line)
            kernel = {"*": "scale_by", "/": "divide_by", "+": "shift_by", "-": "shift_by"}[op]
            if op == "-" and tensor_left:
                k = self.record("neg", t, [k], line)
            return self.node_value(self.record(kernel, t, [a, k], line), t)
        element = plain(t) if isinstance(plain(t), Scalar) else plain(t).element
        k = self.f.exprs.convert(self.f.exprs.value(other), element, line).text
        if op == "*":
            return self.node_value(self.record("scale", t, [a, k], line), t)
        if op == "+":
            return self.node_value(self.record("shift", t, [a, k], line), t)
        if op == "-" and tensor_left:
            return self.node_value(self.record("shift", t, [a, f"-({k})"], line), t)
        if op == "-":
            return self.node_value(self.record("shift", t, [self.record("neg", t, [a], line), k], line), t)
        if tensor_left:
            return self.node_value(self.record("divide", t, [a, k], line), t)
        numerator = self.const_node(CValue(k, element), dtype, device)
        return self.node_value(self.record("div", t, [numerator, a], line), t)

    def takes_left_first(self, e: ast.Binary) -> bool:
        """Whether lowering e lowers its left operand, whole, before anything else: all
        do but what record_binary makes of a fused node, which takes its operands apart,
        and of a scalar on the left of a tensor or tracked value, which comes second."""
        t = self.f.concrete(e.ty)
        if not (self.in_window and isinstance(t, Tracked)):
            return True
        if attention_parts(self.f.op_context, e, t) or product_plus_parts(self.f.op_context, e, t):
            return False
        left = self.f.concrete(e.left.ty)
        return _tensor_first(plain(left), plain(self.f.concrete(e.right.ty)), isinstance(left, Tracked))

    def record_tensor_pair(self, op: str, e: ast.Binary, lt: Tensor, rt: Tensor, t: Type) -> str:
        a, b = self.node(e.left), self.node(e.right)
        if op == "*":
            return self.product_node(a, b, lt, rt, t, e.pos.line)
        kernel = "add" if op == "+" else "sub"
        return self.record(kernel if lt.shape == rt.shape else kernel + "_rows", t, [a, b], e.pos.line)

    def product_node(self, a: str, b: str, lt: Tensor, rt: Tensor, t: Type, line: int) -> str:
        rank, dims = dims_literal(t)
        batch, m, k, n = shapes.product_extents(lt, rt)
        if batch:
            return self.record("bmm", t, [a, b, batch, m, k, n, rank, dims], line)
        return self.record("matmul", t, [a, b, m, k, n, rank, dims], line)

    def record_part(self, base: CValue, t: Tensor, offset: str, part: Type) -> CValue:
        """h[i] of a tracked tensor inside a window: a recorded selection of that block."""
        rank, dims = dims_literal(part)
        source = base.text if base.node else self.read_node(base)
        node = self.new_node(f"mica_t_part_{SUFFIX[t.element]}({source}, {offset}, {rank}, {dims})")
        return self.node_value(node, Tracked(part))

    # ============================================================ Backward and Gradient

    def tensor_part(self, e: ast.Expr) -> tuple[ast.Expr, list[ast.Expr]] | None:
        """v[i] or m[i, j] of a tracked tensor: the tensor's place and the indices into it."""
        if not isinstance(e, ast.Index):
            return None
        t, taken = self.f.concrete(e.base.ty), 0
        while taken < len(e.indices) and isinstance(plain(t), Array):
            t, taken = plain(t).element, taken + 1
        if taken == len(e.indices) or not (isinstance(t, Tracked) and isinstance(t.inner, Tensor)):
            return None
        return (e.base if taken == 0 else ast.Index(e.line, e.col, e.base, e.indices[:taken])), e.indices[taken:]

    def backward(self, call: ast.Call) -> None:
        name, line = ast.place_text(call.args[0]), call.pos.line
        part = self.tensor_part(call.args[0])
        if part is not None:  # Backward(v[i]): from one element of the tensor
            place = self.f.exprs.place(part[0])
            indices = [self.f.exprs.value(i).text for i in part[1]]
            element = self.f.exprs.tensor_offset("", plain(place.type), indices, line)
            self.emit.line(f'mica_tape_backward(&{place.text}.tag, {element}, "{name}", {line});')
        elif on_gpu(self.f.concrete(call.args[0].ty)):
            self.emit.line(f'mica_gt_backward(&{self.f.exprs.place(call.args[0]).text}.tag, "{name}", {line});')
        else:
            self.emit.line(f'mica_tape_backward(&{self.f.exprs.place(call.args[0]).text}.tag, 0, "{name}", {line});')

    def gradient(self, call: ast.Call) -> CValue:
        name, line = ast.place_text(call.args[0]), call.pos.line
        part = self.tensor_part(call.args[0])
        if part is None:
            return self.whole_gradient(call.args[0], name, line)
        whole = self.whole_gradient(part[0], name, line)  # Gradient(v[i]): that part of the tensor's
        return self.f.exprs.tensor_index(whole, plain(whole.type), [self.f.exprs.value(i).text for i in part[1]], line)

    def whole_gradient(self, e: ast.Expr, name: str, line: int) -> CValue:
        place = self.f.exprs.place(e)
        t = plain(place.type)
        if on_gpu(t):
            out = self.emit.declare(t)
            self.emit.line(f'mica_gt_gradient(&{out}, &{place.text}.tag, {dtype_of(t)}, {t.count}, "{name}", {line});')
            return CValue(out, t, owned=True, lvalue=True)
        out = self.emit.declare_uninitialized(t)
        data = f"{out}.e" if isinstance(t, Tensor) else f"&{out}"
        count = t.count if isinstance(t, Tensor) else 1
        self.emit.line(f'mica_tape_gradient({data}, &{place.text}.tag, {dtype_of(t)}, {count}, "{name}", {line});')
        return CValue(out, t, lvalue=True)


def _tensor_first(lt: Type, rt: Type, left_tracked: bool) -> bool:
    """Whether record_binary records its left operand first: all but a scalar on the left
    of a tensor or of a tracked value (two tensors and two tracked scalars pass too)."""
    return (isinstance(lt, Tensor) and lt.rank > 0) or (_scalar_like(rt) and left_tracked)


def _scalar_like(t: Type) -> bool:
    """A scalar, or a rank-0 device tensor (a device scalar)."""
    return isinstance(t, Scalar) or (isinstance(t, Tensor) and t.rank == 0)
