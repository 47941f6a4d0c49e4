"""Tape lowering: tracked values inside `tape ... end` become recorded nodes.

Inside a window (and in the `__tape` instance of a routine that runs inside
one) an expression of tracked type lowers to a `mica_node *`: reading a
tracked place enrolls it (mica_tape_read), a plain operand becomes a constant
node, and each operation calls its mica_t_ node function. Assigning a node to
a tracked place stores its value and remembers the node (mica_tape_write).
Outside windows tracked places are plain values beside their tags.
"""

from __future__ import annotations

from . import ast
from .ctypes import SUFFIX
from .cvalue import CValue, dims_literal, dtype_of
from .symbols import VarSymbol
from .types import Scalar, Tensor, Tracked, Type, plain


class TapeLowering:
    """Mixed into FunctionLowering: windows, nodes, Backward and Gradient."""

    # ============================================================ windows

    def tape_window(self, s: ast.Tape) -> None:
        self.line(f"mica_tape_begin({s.pos.line});")
        outer = (self.in_window, self.window_here)
        self.in_window = self.window_here = True
        self.stmts(s.body)
        self.in_window, self.window_here = outer
        self.line("mica_tape_end();")

    def leave_window(self) -> None:
        """break, continue or exit out of this function's own window closes it first."""
        if self.window_here:
            self.line("mica_tape_end();")

    def recording_call(self, routine) -> bool:
        return self.in_window and routine in self.lowering.analysis.tape_routines

    # ============================================================ nodes

    def suffix(self, t: Type) -> str:
        p = plain(t)
        return SUFFIX[p if isinstance(p, Scalar) else p.element]

    def new_node(self, init: str) -> str:
        name = self.fresh()
        self.line(f"mica_node *{name} = {init};")
        self.declared = True
        return name

    def node(self, e: ast.Expr, dtype: str | None = None) -> str:
        """e as a node (a tracked place read, a recorded result, or a constant)."""
        return self.as_node(self.value(e), dtype)

    def as_node(self, v: CValue, dtype: str | None = None) -> str:
        if v.node:
            text = v.text
        elif isinstance(v.type, Tracked):
            text = self.read_node(v)
        else:
            text = self.const_node(v, dtype or dtype_of(v.type))
        wanted = dtype or dtype_of(v.type)
        if wanted != dtype_of(v.type):
            text = self.new_node(f"mica_t_convert({text}, {wanted})")
        return text

    def read_node(self, place: CValue) -> str:
        t = plain(place.type)
        rank, dims = dims_literal(t)
        data = f"{place.text}.v.e" if isinstance(t, Tensor) else f"&{place.text}.v"
        return self.new_node(f"mica_tape_read(&{place.text}.tag, {dtype_of(t)}, {data}, {rank}, {dims})")

    def const_node(self, v: CValue, dtype: str) -> str:
        t = plain(v.type)
        if isinstance(t, Scalar):
            return self.new_node(f"mica_tape_scalar({dtype}, (double)({v.text}))")
        rank, dims = dims_literal(t)
        return self.new_node(f"mica_tape_const({dtype}, {self.data(v)}, {rank}, {dims})")

    def node_value(self, text: str, t: Type) -> CValue:
        return CValue(text, t, node=True)

    def untracked_node(self, v: CValue) -> CValue:
        """The plain value a node holds."""
        t = plain(v.type)
        if isinstance(t, Scalar):
            return CValue(f"(({self.types.name(t)} *){v.text}->value)[0]", t)
        out = self.declare_uninitialized(t)
        self.line(f"mica_tape_value({out}.e, {v.text});")
        return CValue(out, t, lvalue=True)

    # ============================================================ assignments

    def record_assign(self, s: ast.Assign) -> None:
        """target := value inside a window, with a tracked target."""
        target_type = self.concrete(s.target.ty)
        symbol = s.target.symbol if isinstance(s.target, ast.Name) else None
        if isinstance(symbol, VarSymbol) and self.holds_node(symbol):
            self.line(f"{self.var_text(symbol)} = {self.node(s.value, dtype_of(target_type))};")
            return
        if not isinstance(self.concrete(s.value.ty), Tracked):
            self.store(self.place(s.target), self.value(s.value, plain(target_type)), s.pos.line)
            return
        node = self.node(s.value, dtype_of(target_type))
        place = self.place(s.target)
        data = f"{place.text}.v.e" if isinstance(plain(target_type), Tensor) else f"&{place.text}.v"
        self.line(f"mica_tape_write(&{place.text}.tag, {data}, {node});")

    def holds_node(self, symbol: VarSymbol) -> bool:
        """In a __tape instance, tracked parameters and the tracked result are nodes."""
        return self.recording and isinstance(symbol.type, Tracked) and symbol.role in ("param", "result")

    # ============================================================ operators

    def record_unary(self, e: ast.Unary) -> CValue:
        t = self.concrete(e.ty)
        operand = self.node(e.operand, dtype_of(t))
        if e.op == "+":
            return self.node_value(operand, t)
        return self.node_value(self.new_node(f"mica_t_neg_{self.suffix(t)}({operand})"), t)

    def record_binary(self, e: ast.Binary) -> CValue:
        t = self.concrete(e.ty)
        s = self.suffix(t)
        dtype = dtype_of(t)
        lt, rt = plain(self.concrete(e.left.ty)), plain(self.concrete(e.right.ty))
        left_tracked = isinstance(self.concrete(e.left.ty), Tracked)
        right_tracked = isinstance(self.concrete(e.right.ty), Tracked)
        op = e.op
        if isinstance(lt, Tensor) and isinstance(rt, Tensor):
            return self.node_value(self.record_tensor_pair(op, e, lt, rt, t), t)
        if isinstance(lt, Scalar) and isinstance(rt, Scalar) and left_tracked and right_tracked:
            kernel = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[op]
            a, b = self.node(e.left, dtype), self.node(e.right, dtype)
            return self.node_value(self.new_node(f"mica_t_{kernel}_{s}({a}, {b})"), t)
        # one side is a scalar; the other is the tracked value, or a tensor it scales
        tensor_left = isinstance(lt, Tensor) or (isinstance(rt, Scalar) and left_tracked)
        main, other = (e.left, e.right) if tensor_left else (e.right, e.left)
        other_tracked = right_tracked if tensor_left else left_tracked
        a = self.node(main, dtype)
        if other_tracked:  # a tensor with a tracked scalar
            k = self.node(other, dtype)
            if op == "-" and not tensor_left:
                a = self.new_node(f"mica_t_neg_{s}({a})")
            kernel = {"*": "scale_by", "/": "divide_by", "+": "shift_by", "-": "shift_by"}[op]
            if op == "-" and tensor_left:
                k = self.new_node(f"mica_t_neg_{s}({k})")
            return self.node_value(self.new_node(f"mica_t_{kernel}_{s}({a}, {k})"), t)
        k = self.convert(self.value(other), plain(t) if isinstance(plain(t), Scalar) else plain(t).element, e.pos.line).text
        if op == "*":
            return self.node_value(self.new_node(f"mica_t_scale_{s}({a}, {k})"), t)
        if op == "+":
            return self.node_value(self.new_node(f"mica_t_shift_{s}({a}, {k})"), t)
        if op == "-" and tensor_left:
            return self.node_value(self.new_node(f"mica_t_shift_{s}({a}, -({k}))"), t)
        if op == "-":
            negated = self.new_node(f"mica_t_neg_{s}({a})")
            return self.node_value(self.new_node(f"mica_t_shift_{s}({negated}, {k})"), t)
        if tensor_left:
            return self.node_value(self.new_node(f"mica_t_divide_{s}({a}, {k})"), t)
        numerator = self.new_node(f"mica_tape_scalar({dtype}, (double)({k}))")
        return self.node_value(self.new_node(f"mica_t_div_{s}({numerator}, {a})"), t)

    def record_tensor_pair(self, op: str, e: ast.Binary, lt: Tensor, rt: Tensor, t: Type) -> str:
        s = self.suffix(t)
        a, b = self.node(e.left), self.node(e.right)
        if op == "*":
            return self.new_node(self.product_node(s, a, b, lt, rt, plain(t)))
        kernel = "add" if op == "+" else "sub"
        if lt.shape == rt.shape:
            return self.new_node(f"mica_t_{kernel}_{s}({a}, {b})")
        return self.new_node(f"mica_t_{kernel}_rows_{s}({a}, {b})")

    def product_node(self, s: str, a: str, b: str, lt: Tensor, rt: Tensor, out: Tensor) -> str:
        rank, dims = dims_literal(out)
        if lt.rank == 1:
            m, k, n = 1, rt.shape[0], rt.shape[1]
        elif rt.rank <= 2:
            k = lt.shape[-1]
            m, n = lt.count // k, (1 if rt.rank == 1 else rt.shape[1])
        else:
            k = lt.shape[-1]
            batch = lt.count // (lt.shape[-2] * k)
            return f"mica_t_bmm_{s}({a}, {b}, {batch}, {lt.shape[-2]}, {k}, {rt.shape[-1]}, {rank}, {dims})"
        return f"mica_t_matmul_{s}({a}, {b}, {m}, {k}, {n}, {rank}, {dims})"

    def record_part(self, base: CValue, t: Tensor, offset: str, part: Type) -> CValue:
        """h[i] of a tracked tensor inside a window: a recorded selection of that block."""
        rank, dims = dims_literal(part)
        source = base.text if base.node else self.read_node(base)
        node = self.new_node(f"mica_t_part_{SUFFIX[t.element]}({source}, {offset}, {rank}, {dims})")
        return self.node_value(node, Tracked(part))

    # ============================================================ Backward and Gradient

    def backward(self, call: ast.Call) -> CValue:
        place = self.place(call.args[0])
        name = _place_name(call.args[0])
        self.line(f'mica_tape_backward(&{place.text}.tag, "{name}", {call.pos.line});')
        return CValue("", plain(place.type))

    def gradient(self, call: ast.Call) -> CValue:
        place = self.place(call.args[0])
        t = plain(place.type)
        out = self.declare_uninitialized(t)
        data = f"{out}.e" if isinstance(t, Tensor) else f"&{out}"
        count = t.count if isinstance(t, Tensor) else 1
        name = _place_name(call.args[0])
        self.line(f'mica_tape_gradient({data}, &{place.text}.tag, {dtype_of(t)}, {count}, "{name}", {call.pos.line});')
        return CValue(out, t, lvalue=True)


def _place_name(e: ast.Expr) -> str:
    """The place as the program wrote it, for run-time messages."""
    if isinstance(e, ast.Name):
        return e.ident
    if isinstance(e, ast.Field):
        return f"{_place_name(e.base)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{_place_name(e.base)}[...]"
    return "value"
