"""Expression lowering: each Mica expression becomes a C expression (CValue).

Scalars nest as C expressions (checked integer arithmetic goes through
mica_add and friends, which trap at the checked tier). Tensor operations write
into named temporaries declared just before the statement that needs them.
A CValue is `owned` when it is a fresh value of a type holding heap storage:
whoever receives it takes it (a move) or it is dropped at statement end.
"""

from __future__ import annotations

from dataclasses import replace

from ...diagnostics import InternalError
from .. import ast, ops, shapes
from ..c_types import SUFFIX, c_name, c_string_literal, c_symbol
from ..cvalue import CValue, dtype_of
from ..ops.conversions import device_conversion, lower_conversion
from ..ops.lowering import too_deep
from ..symbols import ConstSymbol, RoutineSymbol, ShapeVarSymbol, TypeSymbol, VarSymbol
from ..types import (BOOLEAN, FLOAT32, FLOAT64, INTEGER, INTEGER_RANGES, STRING, Array, Record, Scalar, Tensor, Tracked,
                     Type, needs_drop, plain, substitute)
from .device import uses_device

# How many terms of a chain (a + b + c ...) a scalar's C text nests before it gets
# a name: the C compiler refuses more than 2048 nested parentheses.
CHAIN_SPAN = 500

NON_FINITE = {"inf": "__builtin_inf()", "-inf": "(-__builtin_inf())", "nan": '__builtin_nan("")'}


def float_literal(value: float, t: Scalar) -> str:
    text = repr(float(value))
    if text in NON_FINITE:  # a folded constant that overflowed, as IEEE arithmetic gives
        return f"(float){NON_FINITE[text]}" if t == FLOAT32 else NON_FINITE[text]
    if "." not in text and "e" not in text:
        text += ".0"
    return f"(float){text}" if t == FLOAT32 else text


def int_literal(value: int) -> str:
    if value == -(2**63):
        return "(-9223372036854775807LL - 1)"
    if -(2**31) <= value < 2**31:
        return str(value)
    return f"{value}LL"


def constant_text(value, t: Type) -> str:
    t = plain(t)
    if t == BOOLEAN:
        return "true" if value else "false"
    if isinstance(t, Scalar) and t.is_float:
        return float_literal(value, t)
    if isinstance(t, Scalar) and t.is_integer:
        return int_literal(int(value))
    raise InternalError(f"no literal for {t}")


class Expressions:
    """Expressions of one function: each becomes a C expression (CValue)."""

    def __init__(self, f):
        self.f = f  # the function being lowered, and through it the other parts
        self.emit = f.emit
        self.ready: dict[int, CValue] = {}  # chain nodes lowered ahead (lower_chain), by id, until taken

    # ============================================================ helpers

    def materialize(self, v: CValue) -> CValue:
        """Give v a name, so its address and elements can be taken."""
        if v.lvalue:
            return v
        name = self.emit.declare(v.type, v.text)
        return CValue(name, v.type, owned=v.owned, lvalue=True)

    def borrow(self, v: CValue) -> CValue:
        """A value to read from; a fresh one gets a name and is dropped when the statement ends."""
        if not v.owned:
            return v
        v = self.materialize(v)
        self.emit.drops.append(self.f.types.drop(v.type, v.text))
        return replace(v, owned=False)

    def data(self, v: CValue) -> str:
        """Pointer to a tensor's first element."""
        return f"{self.materialize(self.borrow(v)).text}.e"

    def count(self, v: CValue) -> str:
        t = plain(v.type)
        if t.is_dynamic:
            return f"({v.text}.rows * {v.text}.cols)"
        return str(t.count)

    def untracked(self, v: CValue) -> CValue:
        """The plain value of a tracked place or result."""
        if v.node:
            return self.f.tape.untracked_node(v)
        if isinstance(v.type, Tracked):
            return CValue(f"{v.text}.v", v.type.inner, lvalue=v.lvalue)
        return v

    def convert(self, v: CValue, target: Type, line: int) -> CValue:
        """v as a value of type target (numeric promotions, narrowing checks, tensor storage changes)."""
        target = plain(self.f.concrete(target))
        v = self.untracked(v)
        source = plain(v.type)
        if source == target:
            return v
        if isinstance(source, Scalar) and isinstance(target, Scalar):
            if target.is_integer:
                low, high = INTEGER_RANGES[target.name]
                if (source.is_integer and INTEGER_RANGES[source.name][0] >= low
                        and INTEGER_RANGES[source.name][1] <= high):
                    return CValue(v.text, target)
                return CValue(f"({self.f.types.name(target)})mica_narrow({v.text}, {low}, {high}, {line})", target)
            return CValue(f"({self.f.types.name(target)})({v.text})", target)
        if isinstance(source, Tensor) and isinstance(target, Tensor):
            return self.convert_tensor(v, source, target, line)
        raise InternalError(f"no conversion from {source} to {target}")

    def convert_tensor(self, v: CValue, source: Tensor, target: Tensor, line: int) -> CValue:
        suffix = SUFFIX[target.element]
        if source.element != target.element:
            v = self.retype_elements(v, source, target.element, line)
            source = plain(v.type)
            if source == target:
                return v
        if target.is_dynamic and not source.is_dynamic:
            rows, cols = ((source.shape[0], 1) if source.rank == 1
                          else (source.count // source.shape[-1], source.shape[-1]))
            return CValue(f"mica_dyn_from_{suffix}({self.data(v)}, {rows}, {cols}, {line})", target, owned=True)
        if source.is_dynamic and not target.is_dynamic:
            dyn = self.borrow(v)
            out = self.emit.declare_uninitialized(target)
            rows, cols = (target.shape[0], 1) if target.rank == 1 else (target.shape[0], target.shape[1])
            self.emit.line(f"mica_dyn_to_static_{suffix}({out}.e, {dyn.text}, {rows}, {cols}, {line});")
            return CValue(out, target, lvalue=True)
        raise InternalError(f"no tensor conversion from {source} to {target}")

    def retype_elements(self, v: CValue, source: Tensor, element: Scalar, line: int) -> CValue:
        """float32(m) / float64(m): the same shape with float elements of that type,
        from the other float type or from integers."""
        if not element.is_float:
            raise InternalError(f"cannot retype {source} to {element}")
        to, frm = SUFFIX[element], SUFFIX[source.element]
        if source.is_dynamic:
            dyn = self.borrow(v)
            out = self.emit.declare(Tensor(element, None, source.rank),
                                    f"mica_dyn_new_{to}({dyn.text}.rows, {dyn.text}.cols, {line})")
            self.emit.line(f"mica_convert_{to}_{frm}({out}.e, {dyn.text}.e, {dyn.text}.rows * {dyn.text}.cols);")
            return CValue(out, Tensor(element, None, source.rank), owned=True, lvalue=True)
        result = Tensor(element, source.shape, 0, source.on_gpu)
        out = self.emit.declare_uninitialized(result)
        self.emit.line(f"mica_convert_{to}_{frm}({out}.e, {self.data(v)}, {source.count});")
        return CValue(out, result, lvalue=True)

    # ============================================================ entry points

    def value(self, e: ast.Expr, expected: Type | None = None) -> CValue:
        """Lower e for reading."""
        ready = self.ready.pop(id(e), None)
        if ready is not None:
            return ready
        t = self.f.concrete(e.ty)
        if e.folded is not None and plain(t) == STRING:
            return self.expr_StrLit(ast.StrLit(e.line, e.col, e.folded), expected)
        if e.folded is not None and isinstance(plain(t), Scalar):
            return CValue(constant_text(e.folded, t), t)
        if e.__class__ is ast.Binary and e.left.__class__ is ast.Binary and id(e.left) not in self.ready:
            self.lower_chain(e)
        return getattr(self, "expr_" + type(e).__name__)(e, expected)

    def lower_chain(self, e: ast.Binary) -> None:
        """`a + b + c` is +(+(a, b), c): lower the binary nodes down e's left operands
        innermost first, in a loop, each kept for the node above to take as it lowers
        its left operand first, so a chain may be as long as a program likes. A node
        that does otherwise (the tape's fused nodes and scaled tensors) lowers its left
        operand itself. Every CHAIN_SPAN terms a scalar's C text gets a name."""
        chain = [e]
        while chain[-1].left.__class__ is ast.Binary and id(chain[-1].left) not in self.ready:
            chain.append(chain[-1].left)
        for depth, node in enumerate(reversed(chain[:-1]), 1):
            if self.f.tape.takes_left_first(node):
                v = self.value(node.left)
                if depth % CHAIN_SPAN == 0 and v.type.__class__ is Scalar and not v.lvalue:
                    v = self.materialize(v)
                self.ready[id(node.left)] = v

    def place(self, e: ast.Expr) -> CValue:
        """Lower e as storage to write."""
        v = getattr(self, "expr_" + type(e).__name__)(e, None)
        if not v.lvalue:
            raise InternalError(f"not a place: {e}")
        return v

    # ============================================================ leaves

    def expr_StrLit(self, e: ast.StrLit, expected) -> CValue:
        data = e.value.encode("utf-8")
        return CValue(f"(mica_string){{{len(data)}, (char *){c_string_literal(e.value)}}}", STRING)

    def expr_IntLit(self, e, expected):
        return CValue(int_literal(e.value), INTEGER)

    def expr_FloatLit(self, e, expected):
        return CValue(float_literal(e.value, FLOAT64), FLOAT64)

    def expr_BoolLit(self, e, expected):
        return CValue("true" if e.value else "false", BOOLEAN)

    def expr_Name(self, e: ast.Name, expected) -> CValue:
        symbol = e.symbol
        if isinstance(symbol, ShapeVarSymbol):
            return CValue(int_literal(self.f.binding[symbol.name]), INTEGER)
        if isinstance(symbol, ConstSymbol):
            if symbol.type == STRING:
                return self.expr_StrLit(ast.StrLit(e.line, e.col, symbol.value), expected)
            if isinstance(plain(symbol.type), Tensor):
                return self.tensor_constant(symbol.value, self.f.concrete(symbol.type))
            return CValue(constant_text(symbol.value, symbol.type), symbol.type)
        if isinstance(symbol, VarSymbol):
            t = self.f.concrete(symbol.type)
            if self.f.tape.holds_node(symbol):
                return CValue(self.var_text(symbol), t, node=True)
            return CValue(self.var_text(symbol), t, lvalue=True)
        raise InternalError(f"cannot lower name {e.ident} -> {symbol}")

    def var_text(self, symbol: VarSymbol) -> str:
        name = c_symbol(symbol)
        if symbol.role == "param" and symbol not in self.f.copied_params and not self.f.tape.holds_node(symbol):
            if symbol.by_address or (passed_by_pointer(symbol.type)):
                return f"(*{name})"
        return name

    def tensor_constant(self, values, t: Tensor) -> CValue:
        flat = _flatten(values)
        items = ", ".join(constant_text(x, t.element) for x in flat)
        return CValue(f"(({self.f.types.name(t)}){{{{{items}}}}})", t)

    def expr_TensorLit(self, e: ast.TensorLit, expected) -> CValue:
        t = self.f.concrete(e.ty)
        items = []
        for item in _literal_items(e):
            items.append(self.convert(self.value(item), t.element, item.pos.line).text)
        return CValue(f"(({self.f.types.name(t)}){{{{{', '.join(items)}}}}})", t)

    # ============================================================ places

    def expr_Field(self, e: ast.Field, expected) -> CValue:
        base = self.value(e.base)
        if base.owned:
            base = self.borrow(base)
        return CValue(f"{base.text}.{c_name(e.name)}", self.f.concrete(e.ty), lvalue=base.lvalue)

    def expr_Index(self, e: ast.Index, expected) -> CValue:
        base = self.value(e.base)
        line = e.pos.line
        remaining = list(e.indices)
        while remaining:
            base_type = plain(base.type)
            if base.owned or (not base.lvalue and not isinstance(base_type, Scalar)):
                base = self.borrow(base)
            if isinstance(base_type, Array):
                index = self.value(remaining.pop(0)).text
                if base_type.is_dynamic:
                    position = f"mica_index({index}, 0, {base.text}.len - 1, {line})"
                else:
                    position = f"mica_index({index}, {base_type.low}, {base_type.high}, {line})"
                base = CValue(f"{base.text}.e[{position}]", base_type.element, lvalue=base.lvalue)
            elif isinstance(base_type, Tensor):
                taken = remaining[: base_type.rank]
                remaining = remaining[base_type.rank :]
                base = self.tensor_index(base, base_type, [self.value(i).text for i in taken], line)
            elif base_type == STRING:
                index = self.value(remaining.pop(0)).text
                base = CValue(f"mica_str_at({base.text}, {index}, {line})", STRING, owned=True)
            else:
                raise InternalError(f"cannot index {base_type}")
        return base

    def tensor_offset(self, values: str, t: Tensor, indices: list[str], line: int) -> str:
        """Row-major offset of m[i, j, ...], each index bounds-checked."""
        extents = [f"{values}.rows", f"{values}.cols"][: t.rank] if t.is_dynamic else [str(d) for d in t.shape]
        offset = ""
        for k, index in enumerate(indices):
            checked = f"mica_index({index}, 0, {extents[k]} - 1, {line})"
            stride = "*".join(extents[k + 1:])
            term = f"{checked} * {stride}" if stride else checked
            offset = term if not offset else f"{offset} + {term}"
        return offset

    def tensor_index(self, base: CValue, t: Tensor, indices: list[str], line: int) -> CValue:
        """m[i, j] (an element) or m[i] (a row)."""
        tracked = isinstance(base.type, Tracked)
        part = t.element if len(indices) == t.rank else (
            Tensor(t.element, None, t.rank - len(indices)) if t.is_dynamic else t.with_shape(t.shape[len(indices):]))
        if tracked and self.f.tape.in_window:
            return self.f.tape.record_part(base, t, self.tensor_offset("", t, indices, line), part)
        values = f"{base.text}.v" if tracked else base.text
        element = f"{values}.e[{self.tensor_offset(values, t, indices, line)}]"
        if len(indices) == t.rank:
            return CValue(element, part, lvalue=base.lvalue)
        if t.is_dynamic:
            return CValue(f"mica_dyn_from_{SUFFIX[t.element]}(&{element}, {values}.cols, 1, {line})", part, owned=True)
        return CValue(f"(*({self.f.types.name(part)} *)&{element})", part, lvalue=base.lvalue)

    # ============================================================ operators

    def expr_Unary(self, e: ast.Unary, expected) -> CValue:
        t = self.f.concrete(e.ty)
        if self.f.tape.in_window and isinstance(t, Tracked):
            return self.f.tape.record_unary(e)
        if uses_device(e):
            return self.f.device.unary(e)
        operand = self.untracked(self.value(e.operand))
        p = plain(t)
        if e.op == "not":
            return CValue(f"!{_paren(operand.text)}", BOOLEAN)
        if e.op == "+":
            return CValue(operand.text, p)
        if isinstance(p, Scalar):
            if p.is_integer:
                return CValue(f"mica_neg({operand.text}, {e.pos.line})", INTEGER)
            return CValue(f"-{_paren(operand.text)}", p)
        return self.tensor_unary(operand, p, e.pos.line)

    def tensor_unary(self, operand: CValue, t: Tensor, line: int) -> CValue:
        suffix = SUFFIX[t.element]
        if t.is_dynamic:
            return CValue(f"mica_dyn_neg_{suffix}({self.borrow(operand).text}, {line})", t, owned=True)
        out = self.emit.declare_uninitialized(t)
        self.emit.line(f"mica_neg_{suffix}({out}.e, {self.data(operand)}, {t.count});")
        return CValue(out, t, lvalue=True)

    def expr_Binary(self, e: ast.Binary, expected) -> CValue:
        t = self.f.concrete(e.ty)
        if self.f.tape.in_window and isinstance(t, Tracked):
            return self.f.tape.record_binary(e)
        if uses_device(e):
            return self.f.device.binary(e)
        op = e.op
        if op in ("and", "or"):
            return self.logical(e)
        left = self.untracked(self.value(e.left))
        right = self.untracked(self.value(e.right))
        line = e.pos.line
        lt, rt = plain(left.type), plain(right.type)
        if op in ("=", "<>", "<", "<=", ">", ">="):
            return self.comparison(op, left, right, e.compared_as, line)
        p = plain(t)
        if isinstance(p, Scalar):
            return self.scalar_binary(op, left, right, p, line)
        if isinstance(lt, Tensor) and isinstance(rt, Tensor):
            return self.tensor_binary(op, left, right, p, line)
        return self.scaled(op, left, right, p, line)

    def logical(self, e: ast.Binary) -> CValue:
        """and/or short-circuit: a right side that needs temporaries runs only when reached."""
        left = self.value(e.left).text
        outer = (self.emit.lines, self.emit.drops, self.emit.declared)
        self.emit.lines, self.emit.drops, self.emit.declared = [], [], False
        right = self.value(e.right).text
        inner, drops, declared = self.emit.lines, self.emit.drops, self.emit.declared
        self.emit.lines, self.emit.drops, self.emit.declared = outer
        c_op = "&&" if e.op == "and" else "||"
        if not (declared or drops):
            self.emit.lines.extend(inner)
            return CValue(f"({_paren(left)} {c_op} {_paren(right)})", BOOLEAN)
        flag = self.emit.declare(BOOLEAN, left)
        test = flag if e.op == "and" else f"!{flag}"
        self.emit.line(f"if ({test}) {{")
        self.emit.nest(inner)
        with self.emit.indented():
            for line in [f"{flag} = {right};", *drops]:
                self.emit.line(line)
        self.emit.line("}")
        return CValue(flag, BOOLEAN, lvalue=True)

    def comparison(self, op: str, left: CValue, right: CValue, common: Scalar | None, line: int) -> CValue:
        c_op = {"=": "==", "<>": "!="}.get(op, op)
        if plain(left.type) == STRING:
            l, r = self.borrow(left), self.borrow(right)
            return CValue(f"(mica_str_compare({l.text}, {r.text}) {c_op} 0)", BOOLEAN)
        if common is not None:
            left, right = self.convert(left, common, line), self.convert(right, common, line)
        return CValue(f"({_paren(left.text)} {c_op} {_paren(right.text)})", BOOLEAN)

    def scalar_binary(self, op: str, left: CValue, right: CValue, t: Scalar, line: int) -> CValue:
        if t == STRING:
            l, r = self.borrow(left), self.borrow(right)
            return CValue(f"mica_str_concat({l.text}, {r.text})", STRING, owned=True)
        if t.is_integer:
            function = {"+": "mica_add", "-": "mica_sub", "*": "mica_mul", "div": "mica_div", "mod": "mica_mod"}[op]
            return CValue(f"{function}({left.text}, {right.text}, {line})", INTEGER)
        left, right = self.convert(left, t, line), self.convert(right, t, line)
        return CValue(f"({_paren(left.text)} {op} {_paren(right.text)})", t)

    def tensor_binary(self, op: str, left: CValue, right: CValue, t: Tensor, line: int) -> CValue:
        lt, rt = plain(left.type), plain(right.type)
        suffix = SUFFIX[t.element]
        if lt.is_dynamic or rt.is_dynamic:
            dyn_l = self.borrow(self.convert(left, Tensor(lt.element, None, lt.rank), line))
            dyn_r = self.borrow(self.convert(right, Tensor(rt.element, None, rt.rank), line))
            if op == "*":
                call = f"mica_dyn_matmul_{suffix}({dyn_l.text}, {lt.rank}, {dyn_r.text}, {rt.rank}, {line})"
            elif lt.rank == rt.rank:
                call = f"mica_dyn_{'add' if op == '+' else 'sub'}_{suffix}({dyn_l.text}, {dyn_r.text}, {line})"
            else:
                call = f"mica_dyn_{'add' if op == '+' else 'sub'}_rows_{suffix}({dyn_l.text}, {dyn_r.text}, {line})"
            return CValue(call, t, owned=True)
        a, b = self.data(left), self.data(right)
        out = self.emit.declare_uninitialized(t)
        if op == "*":
            self.emit.line(self.product_call(t, out, a, b, lt, rt, line))
        elif lt.shape == rt.shape:
            self.emit.line(f"mica_{'add' if op == '+' else 'sub'}_{suffix}({out}.e, {a}, {b}, {t.count});")
        else:  # b repeats at every leading index of a
            cols = rt.count
            self.emit.line(f"mica_{'add' if op == '+' else 'sub'}_rows_{suffix}({out}.e, {a}, {b}, "
                           f"{lt.count // cols}, {cols});")
        return CValue(out, t, lvalue=True)

    def product_call(self, t: Tensor, out: str, a: str, b: str, lt: Tensor, rt: Tensor, line: int) -> str:
        """The kernel call for a static product (shapes.product_type's cases)."""
        batch, m, k, n = shapes.product_extents(lt, rt)
        suffix = SUFFIX[t.element]
        if t.element.is_integer:  # int8 or uint8 times int8, exactly in int32
            if k > shapes.INTEGER_PRODUCT_DEPTH:  # a routine's shape variable bound too deep (a number is 4022)
                return too_deep(k, line)
            return f"mica_matmul_i32_{SUFFIX[lt.element]}_i8({out}.e, {a}, {b}, {m}, {k}, {n});"
        if batch:
            return f"mica_bmm_{suffix}({out}.e, {a}, {b}, {batch}, {m}, {k}, {n});"
        return f"mica_matmul_{suffix}({out}.e, {a}, {b}, {m}, {k}, {n});"

    def scaled(self, op: str, left: CValue, right: CValue, t: Tensor, line: int) -> CValue:
        """A tensor with a scalar: s * t, t * s, t / s, t + s, s + t, t - s, s - t."""
        tensor_left = isinstance(plain(left.type), Tensor)
        tensor, scalar = (left, right) if tensor_left else (right, left)
        s = self.convert(scalar, t.element, line).text
        if op == "*":
            kernel, args = "scale", s
        elif op == "/":
            kernel, args = "divide", s
        elif op == "+":
            kernel, args = "shift", s
        elif tensor_left:  # t - s: adding -s is exact
            kernel, args = "shift", f"-{_paren(s)}"
        else:
            kernel, args = "rsub", s
        suffix = SUFFIX[t.element]
        if t.is_dynamic:
            dyn = self.borrow(tensor).text
            call = (f"mica_dyn_rsub_{suffix}({args}, {dyn}, {line})" if kernel == "rsub"
                    else f"mica_dyn_{kernel}_{suffix}({dyn}, {args}, {line})")
            return CValue(call, t, owned=True)
        a = self.data(tensor)
        out = self.emit.declare_uninitialized(t)
        if kernel == "rsub":
            self.emit.line(f"mica_rsub_{suffix}({out}.e, {args}, {a}, {t.count});")
        else:
            self.emit.line(f"mica_{kernel}_{suffix}({out}.e, {a}, {args}, {t.count});")
        return CValue(out, t, lvalue=True)

    # ============================================================ calls

    def expr_Call(self, e: ast.Call, expected) -> CValue:
        return self.call(e)

    def call(self, e: ast.Call) -> CValue:
        target = e.target
        if isinstance(target, RoutineSymbol):
            return self.routine_call(e, target)
        records = self.f.tape.in_window and isinstance(self.f.concrete(e.ty), Tracked)
        if isinstance(target, TypeSymbol):
            if uses_device(e) and not records:
                return device_conversion(self.f.op_context, e)
            return lower_conversion(self.f.op_context, e)
        op = ops.OPS[e.callee.ident]
        if uses_device(e) and not records:
            return op.device(self.f.op_context, e)  # the analyzer admits GPU operands only where there is one
        return op.lower(self.f.op_context, e)

    def routine_call(self, e: ast.Call, routine: RoutineSymbol) -> CValue:
        binding = {k: (self.f.binding[v] if isinstance(v, str) else v) for k, v in (e.binding or {}).items()}
        recording = self.f.tape.recording_call(routine)
        name = self.f.lowering.instance(routine, binding, recording)
        # a by-pointer argument must not change under the callee's writes: copy it if they may
        written = {_root(arg.place) for arg in e.args if isinstance(arg, ast.AddressArg)} | routine.global_writes
        args = []
        for arg, param in zip(e.args, routine.params):
            param_type = self.f.concrete(_bind(param.type, binding))
            if param.by_address:
                args.append(f"&{self.place(arg.place).text}")
                continue
            if recording and isinstance(param_type, Tracked):
                args.append(self.f.tape.node(arg, dtype_of(param_type)))
                continue
            value = self.argument(arg, param_type)
            aliased = _root(arg) in written and not value.owned
            if passed_by_pointer(param_type):
                if aliased and needs_drop(value.type):  # a deep copy: strings and dynamic parts too
                    value = self.borrow(CValue(self.f.types.copy(value.type, value.text), value.type, owned=True))
                elif aliased:
                    value = CValue(self.emit.declare(value.type, value.text), value.type, lvalue=True)
                args.append(f"&{self.materialize(value).text}")
            elif needs_drop(param_type):
                if aliased:  # a shallow string or dynamic tensor must not share the lent storage
                    value = CValue(self.f.types.copy(value.type, value.text), value.type, owned=True)
                args.append(self.borrow(value).text)
            else:
                args.append(value.text)
        result = _bind(routine.result, binding) if routine.result is not None else None
        text = f"{name}({', '.join(args)})"
        if result is None:
            self.emit.line(f"{text};")
            return CValue("", BOOLEAN)
        result = self.f.concrete(result)
        if recording and isinstance(result, Tracked):
            return CValue(self.f.tape.new_node(text), result, node=True)
        return CValue(text, result, owned=needs_drop(result))

    def argument(self, arg: ast.Expr, param_type: Type) -> CValue:
        """A value argument, converted to its parameter's type."""
        value = self.value(arg, plain(param_type))
        if isinstance(param_type, Tracked):
            return self.tracked_argument(value, param_type, arg.pos.line)
        return self.convert(value, param_type, arg.pos.line)

    def tracked_argument(self, value: CValue, param_type: Tracked, line: int) -> CValue:
        """Outside a window a tracked parameter receives the plain value, re-adopted."""
        v = self.convert(self.untracked(value), param_type.inner, line)
        holder = self.emit.declare(param_type)
        self.emit.line(f"{holder}.v = {v.text};")
        return CValue(holder, param_type, lvalue=True)


# builtins whose own lowering handles device operands (they lend places or pass values through)
def _root(e: ast.Expr):
    """The variable a place expression starts from."""
    while isinstance(e, ast.Field | ast.Index):
        e = e.base
    return e.symbol if isinstance(e, ast.Name) else None


def _bind(t: Type, binding: dict) -> Type:
    return substitute(t, binding) if t is not None else None


def passed_by_pointer(t: Type) -> bool:
    t = plain(t)
    if isinstance(t, Tensor | Array):
        return not t.is_dynamic
    return isinstance(t, Record)


def _paren(text: str) -> str:
    simple = (text.replace("_", "").replace(".", "").isalnum()
              or (text.startswith("(") and text.endswith(")") and balanced(text[1:-1])))
    return text if simple else f"({text})"


def balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


def _flatten(values) -> list:
    if isinstance(values, list):
        return [x for v in values for x in _flatten(v)]
    return [values]


def _literal_items(e: ast.TensorLit) -> list:
    items = []
    for item in e.items:
        if isinstance(item, ast.TensorLit):
            items.extend(_literal_items(item))
        else:
            items.append(item)
    return items
