"""Expressions: every one gets its type (Expr.ty), and constants their values
(Expr.folded)."""

from __future__ import annotations

import difflib

from .. import ast, residency, shapes
from ..symbols import BuiltinSymbol, ConstSymbol, RoutineSymbol, ShapeVarSymbol, TypeSymbol, VarSymbol
from ..types import (
    BOOLEAN,
    ERROR,
    FLOAT32,
    FLOAT64,
    INT8,
    INT32,
    INTEGER,
    INTEGER_RANGES,
    STRING,
    UINT8,
    Array,
    ErrorType,
    Record,
    Scalar,
    Tensor,
    Tracked,
    Type,
    element_of,
    has_tracked,
    is_tracked,
    plain,
)
from .rules import COMPARISONS, FLOAT32_OVERFLOW, LOGICAL, device_scalar, to_float32


class Expressions:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts

    def expr(self, e: ast.Expr, expected: Type | None = None, statement: bool = False) -> Type:
        if e.__class__ is ast.Call:
            t = self.a.calls.expr_Call(e, expected, statement)
        else:
            t = _EXPR_CHECKS[e.__class__](self, e, expected)
        e.ty = t
        return t

    def literal(self, e: ast.IntLit | ast.FloatLit | ast.StrLit | ast.BoolLit, expected):
        """A literal is its own folded value, of its kind's type."""
        e.folded = e.value
        return LITERAL_TYPES[e.__class__]

    def expr_AddressArg(self, e: ast.AddressArg, expected):
        self.expr(e.place)
        return self.a.error(e, 5007, "'address' lends a place to a parameter declared 'address T'; this one is not")

    def expr_FormatArg(self, e: ast.FormatArg, expected):
        self.expr(e.value)
        return self.a.error(e, 4008, "':width:decimals' formats belong in Write and WriteLn arguments")

    def expr_Name(self, e: ast.Name, expected):
        symbol = self.a.resolve(e)
        e.symbol = symbol
        if symbol is None:
            return ERROR
        if isinstance(symbol, ConstSymbol):
            e.folded = symbol.value
            return symbol.type
        if isinstance(symbol, ShapeVarSymbol):
            return INTEGER
        if isinstance(symbol, VarSymbol):
            self.note_use(symbol, reading=self.a.writing is not e)
            if symbol.role == "global" and self.a.routine is not None and symbol not in self.a.routine.global_uses:
                self.a.routine.global_uses = self.a.routine.global_uses | {symbol}
            return symbol.type
        if isinstance(symbol, RoutineSymbol | BuiltinSymbol):  # named without parentheses: checked as the call it is
            call = ast.Call(e.line, e.col, ast.Name(e.line, e.col, e.ident, unit=e.unit), [])
            self.a.bare_values.append((e, call))
            return self.expr(call, expected)
        if isinstance(symbol, TypeSymbol):
            return self.a.error(e, 4009, f"'{e.ident}' is a type, not a value")
        raise AssertionError(symbol)

    def note_use(self, symbol: VarSymbol, reading: bool) -> None:
        """Remember which tracked places windows read: Gradient of any other is an error."""
        if not has_tracked(symbol.type):
            return
        if self.a.routine is not None:
            self.a.routine.touches_tracked = True
            if reading:
                self.a.routine_reads.setdefault(self.a.routine, set()).add(symbol)
        if self.a.tape_depth > 0 and reading:
            self.a.window_reads.add(symbol)

    def expr_Field(self, e: ast.Field, expected):
        base = self.expr(e.base)
        if isinstance(base, ErrorType):
            return ERROR
        if not isinstance(base, Record):
            return self.a.error(e, 4010, f"'{base}' has no fields; '.{e.name}' needs a record")
        t = base.field(e.name)
        if t is None:
            names = [n for n, _ in base.fields]
            hint = difflib.get_close_matches(e.name, names, 1)
            extra = f"; did you mean '{hint[0]}'?" if hint else ""
            which = f"the {base}" if base.anonymous else f"record '{base}'"
            return self.a.error(e, 3005, f"{which} has no field '{e.name}'{extra}")
        return t

    def expr_Index(self, e: ast.Index, expected):
        base = self.expr(e.base)
        for index in e.indices:
            t = self.expr(index)
            if not isinstance(t, ErrorType) and not residency.needs_host(self.a, "indexing", index, t):
                return ERROR
            if not isinstance(t, ErrorType) and not (isinstance(plain(t), Scalar) and plain(t).is_integer):
                self.a.error(index, 4011, f"an index must be an integer, found '{t}'")
                return ERROR
        if isinstance(base, ErrorType):
            return ERROR
        t = base
        remaining = list(e.indices)
        while remaining:
            tracked = is_tracked(t)
            inner = plain(t)
            if isinstance(inner, Array):
                index = remaining.pop(0)
                if index.folded is not None and not inner.is_dynamic and not inner.low <= index.folded <= inner.high:
                    return self.a.error(index, 6005, f"index {index.folded} is outside "
                                                     f"the bounds {inner.low}..{inner.high}")
                t = inner.element
            elif isinstance(inner, Tensor) and inner.on_gpu:
                return self.a.error(e, 7007, "indexing a GPU tensor would read it piece by piece from the host; "
                                           "compute on the device, or index ToHost of it")
            elif isinstance(inner, Tensor):
                count = min(len(remaining), inner.rank)
                taken, remaining = remaining[:count], remaining[count:]
                if not inner.is_dynamic:
                    for index, extent in zip(taken, inner.shape):
                        if index.folded is not None and isinstance(extent, int) and not 0 <= index.folded < extent:
                            return self.a.error(index, 6005, f"index {index.folded} is outside 0..{extent - 1}")
                if count == inner.rank:
                    t = inner.element
                elif inner.is_dynamic:
                    t = Tensor(inner.element, None, inner.rank - count, inner.on_gpu)
                else:
                    t = inner.with_shape(inner.shape[count:])
                if tracked:
                    t = Tracked(t)
            elif inner == STRING:
                if len(remaining) > 1:
                    return self.a.error(e, 4012, "a string takes one index")
                remaining.pop()
                t = STRING
            else:
                return self.a.error(e, 4012, f"a value of type '{t}' cannot be indexed")
        return t

    def expr_TensorLit(self, e: ast.TensorLit, expected):
        element = None
        if isinstance(expected, Tensor):
            element = expected.element
        shape, items = self.literal_shape(e)
        if shape is None:
            return ERROR
        types = [self.expr(item, element) for item in items]
        if any(isinstance(t, ErrorType) for t in types):
            return ERROR
        if element is None:
            element = FLOAT64 if any(plain(t).is_float for t in types if isinstance(plain(t), Scalar)) else INTEGER
        for item, t in zip(items, types):
            if not (isinstance(plain(t), Scalar) and plain(t).is_numeric):
                return self.a.error(item, 4013, f"a tensor literal holds numbers, found '{t}'")
            self.a.places.check_assignable(plain(t), element, item)
        if all(item.folded is not None for item in items):
            e.folded = [item.folded for item in items]
        return Tensor(element, shape)

    def literal_shape(self, e: ast.TensorLit):
        """The shape of a nested literal and its scalar items in row-major order."""
        if all(isinstance(item, ast.TensorLit) for item in e.items):
            inner = [self.literal_shape(item) for item in e.items]
            if any(shape is None for shape, _ in inner):
                return None, []
            first = inner[0][0]
            for item, (shape, _) in zip(e.items, inner):
                if shape != first:
                    self.a.error(item, 6006, f"the rows of a tensor literal differ in shape: "
                                             f"{list(first)} and {list(shape)}")
                    return None, []
            return (len(e.items),) + first, [x for _, items in inner for x in items]
        if any(isinstance(item, ast.TensorLit) for item in e.items):
            self.a.error(e, 6006, "a tensor literal mixes numbers and rows")
            return None, []
        return (len(e.items),), list(e.items)

    def expr_Unary(self, e: ast.Unary, expected):
        t = self.expr(e.operand, expected)
        if isinstance(t, ErrorType):
            return ERROR
        if e.op == "not":
            if t != BOOLEAN:
                return self.a.error(e, 4014, f"'not' needs a boolean, found '{t}'")
            if e.operand.folded is not None:
                e.folded = not e.operand.folded
            return BOOLEAN
        inner = plain(t)
        numeric = ((isinstance(inner, Scalar) and inner.is_numeric)
                   or (isinstance(inner, Tensor) and inner.element.is_float))
        if not numeric:
            return self.a.error(e, 4014, f"'{e.op}' needs a number or a float tensor, found '{t}'")
        if e.operand.folded is not None and isinstance(inner, Scalar):
            e.folded = -e.operand.folded if e.op == "-" else e.operand.folded
            if inner.is_integer and e.folded > INTEGER_RANGES["integer"][1]:
                e.folded = None
                return self.a.error(e, 4023, f"the constant expression overflows "
                                             f"a 64-bit integer ({-e.operand.folded})")
        self.note_tracked_op(t)
        return INTEGER if isinstance(inner, Scalar) and inner.is_integer else t

    def note_tracked_op(self, t: Type) -> None:
        if is_tracked(t) and self.a.routine is not None:
            self.a.routine.touches_tracked = True

    def expr_Binary(self, e: ast.Binary, expected):
        """`a + b + c` is +(+(a, b), c): a chain's nodes are checked innermost first in a loop,
        not in a Python frame each, so a chain may be as long as a program likes."""
        chain = ast.left_chain(e)
        expects = [expected]
        for node in chain[:-1]:
            expects.append(operand_expected(node.op, expects[-1]))
        innermost = chain[-1]
        self.expr(innermost.left, operand_expected(innermost.op, expects[-1]))
        for node, node_expected in zip(reversed(chain), reversed(expects)):
            node.ty = self.binary(node, node_expected)
        return e.ty

    def binary(self, e: ast.Binary, expected) -> Type:
        """The type of `left op right`, its left operand checked already."""
        op = e.op
        lt = e.left.ty
        rt = self.expr(e.right, operand_expected(op, expected))
        if isinstance(lt, ErrorType) or isinstance(rt, ErrorType):
            return ERROR
        result = self.binary_type(e, op, lt, rt)
        if not isinstance(result, ErrorType) and e.left.folded is not None and e.right.folded is not None:
            e.folded = self.fold(e, op, e.left.folded, e.right.folded, result)
        if not isinstance(result, ErrorType):
            self.note_tracked_op(result)
        return result

    def binary_type(self, e: ast.Binary, op: str, lt: Type, rt: Type) -> Type:
        """The type of `left op right`, or ERROR once a diagnostic says why not."""
        if lt.__class__ is not Scalar or rt.__class__ is not Scalar:  # two host scalars live nowhere in particular
            placed = self.placed_binary_type(e, op, lt, rt)
            if placed is not None:
                return placed
        lp, rp = plain(lt), plain(rt)
        if isinstance(lp, Tensor) and lp.rank == 0 and isinstance(rp, Tensor) and rp.rank > 0:
            lp = lp.element  # a device scalar scales a device tensor
        if isinstance(rp, Tensor) and rp.rank == 0 and isinstance(lp, Tensor) and lp.rank > 0:
            rp = rp.element
        if op in LOGICAL:
            if lp != BOOLEAN or rp != BOOLEAN:
                return self.a.error(e, 4015, f"'{op}' needs booleans, found '{lt}' and '{rt}'")
            return BOOLEAN
        if op in COMPARISONS:
            return self.comparison_type(e, op, lt, rt, lp, rp)
        if op in ("div", "mod"):
            if not (isinstance(lp, Scalar) and lp.is_integer and isinstance(rp, Scalar) and rp.is_integer):
                return self.a.error(e, 4017, f"'{op}' needs integers, found '{lt}' and '{rt}'; '/' divides floats")
            if e.right.folded == 0:
                return self.a.error(e.right, 4018, "division by zero")
            return INTEGER
        tracked = is_tracked(lt) or is_tracked(rt)
        if tracked and any(isinstance(p, Tensor) and p.is_dynamic for p in (lp, rp)):
            return self.a.error(e, 5109, f"'{op}' cannot join a tracked value with the dynamic tensor "
                                         f"'{lp if lp.is_dynamic else rp}'; give it a static shape")
        if isinstance(lp, Scalar) and isinstance(rp, Scalar):
            return self.scalar_arithmetic_type(e, op, lt, rt, lp, rp, tracked)
        if isinstance(lp, Tensor) and isinstance(rp, Scalar) or isinstance(lp, Scalar) and isinstance(rp, Tensor):
            tensor, scalar = (lp, rp) if isinstance(lp, Tensor) else (rp, lp)
            if not scalar.is_numeric or not tensor.element.is_float:
                return self.a.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")
            if op == "/" and isinstance(lp, Scalar):
                return self.a.error(e, 4020, "a scalar cannot be divided by a tensor; scale by the reciprocal instead")
            if not self.constants_fit(e, tensor.element):
                return ERROR
            return Tracked(tensor) if tracked else tensor
        if isinstance(lp, Tensor) and isinstance(rp, Tensor):
            return self.tensor_arithmetic_type(e, op, lt, rt, lp, rp, tracked)
        return self.a.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")

    def placed_binary_type(self, e: ast.Binary, op: str, lt: Type, rt: Type) -> Type | None:
        """What residency decides about `left op right`: ERROR, the type of arithmetic
        between GPU scalars, or None to go on as on the host."""
        if not residency.check_together(self.a, e, f"'{op}'", [e.left, e.right], [lt, rt]):
            return ERROR
        if (op in COMPARISONS or op in LOGICAL) and (residency.on_gpu(lt) or residency.on_gpu(rt)):
            return self.a.error(e, 7010, f"'{op}' decides on the host; bring the GPU value there first with ToHost")
        integer_product = op == "*" and element_of(lt) in (INT8, UINT8) and element_of(rt) == INT8
        for operand, t in ((e.left, lt), (e.right, rt)):
            if residency.on_gpu(t) and not element_of(t).is_float and not integer_product:
                return self.a.error(operand, 7012, f"{residency.describe(operand)} holds integers on the GPU, where "
                                                 f"they are storage (ids, targets), not numbers to compute with; "
                                                 f"compute on the host and move the result with ToDevice")
        lp, rp = plain(lt), plain(rt)
        if op in "+-*/" and (device_scalar(lp) or device_scalar(rp)) and \
                all(isinstance(x, Scalar) or device_scalar(x) for x in (lp, rp)):
            return self.device_scalar_type(e, op, lt, rt)
        device_scalar_with_tensor = any(device_scalar(x) for x in (lp, rp)) and \
            any(isinstance(x, Tensor) and x.rank > 0 for x in (lp, rp))
        if device_scalar_with_tensor and (is_tracked(lt) or is_tracked(rt)):
            return self.a.error(e, 7011, f"'{op}' between a GPU scalar and a GPU tensor does not record on the GPU's "
                                       f"tape yet; use a host number, or compute it outside the window")
        return None

    def comparison_type(self, e: ast.Binary, op: str, lt: Type, rt: Type, lp: Type, rp: Type) -> Type:
        both_numbers = isinstance(lp, Scalar) and isinstance(rp, Scalar) and lp.is_numeric and rp.is_numeric
        both_strings = lp == STRING and rp == STRING
        both_booleans = lp == BOOLEAN and rp == BOOLEAN and op in ("=", "<>")
        if not (both_numbers or both_strings or both_booleans):
            return self.a.error(e, 4016, f"cannot compare '{lt}' with '{rt}'")
        if both_numbers:  # compared as arithmetic would join them: f = 0.1 with f a float32 is 0.1f
            e.compared_as = self.promote(lp, rp, e.left, e.right)
        return BOOLEAN

    def scalar_arithmetic_type(self, e: ast.Binary, op: str, lt: Type, rt: Type, lp: Scalar, rp: Scalar,
                               tracked: bool) -> Type:
        if op == "+" and lp == STRING and rp == STRING:
            return STRING
        if not (lp.is_numeric and rp.is_numeric):
            return self.a.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")
        if op == "/" and e.right.folded == 0 and lp.is_integer and rp.is_integer:
            return self.a.error(e.right, 4018, "division by zero")
        result = self.promote(lp, rp, e.left, e.right)
        if op == "/" and result.is_integer:
            result = FLOAT64
        if not self.constants_fit(e, result):
            return ERROR
        return Tracked(result) if tracked and result.is_float else result

    def tensor_arithmetic_type(self, e: ast.Binary, op: str, lt: Type, rt: Type, lp: Tensor, rp: Tensor,
                               tracked: bool) -> Type:
        if op == "*" and lp.element in (INT8, UINT8) and rp.element == INT8:
            return self.integer_product_type(e, lt, rt, lp, rp)
        if lp.element != rp.element:
            return self.a.error(e, 4021, f"cannot apply '{op}' to '{lt}' and '{rt}': the element types differ; "
                                         f"convert one with {rp.element.name}(...) or {lp.element.name}(...)")
        if not lp.element.is_float:
            return self.a.error(e, 4022, f"arithmetic on tensors needs float elements, found '{lt}'")
        repeated_left = op in ("+", "-") and 0 < len(shapes.dims(lp)) < len(shapes.dims(rp))
        try:
            if repeated_left:  # the shapes meet with the repeated operand on the right
                result = shapes.elementwise(rp, lp, op)
                self.a.repeated_first.append(e)
                return Tracked(result) if tracked else result
            if op == "*":
                result = shapes.product_type(lp, rp)
            elif op == "/":
                return self.a.error(e, 4020, "'/' between two tensors is not defined; scale by a scalar or use Mul")
            else:
                result = shapes.elementwise(lp, rp, op)
        except shapes.ShapeMismatch as why:
            declared = self.a.declared(e.left, e.right)
            if op == "-":
                return self.a.error(e, 6007, f"cannot subtract '{rt}' from '{lt}': {why}", *declared)
            verb = "multiply" if op == "*" else "add"
            joiner = "by" if op == "*" else "and"
            return self.a.error(e, 6007, f"cannot {verb} '{lt}' {joiner} '{rt}': {why}", *declared)
        return Tracked(result) if tracked else result

    def integer_product_type(self, e: ast.Binary, lt: Type, rt: Type, lp: Tensor, rp: Tensor) -> Type:
        """An int8 or uint8 matrix times an int8 matrix or vector: exact, in int32 (LANGUAGE.md section 10)."""
        if lp.rank != 2 or rp.rank not in (1, 2) or lp.is_dynamic or rp.is_dynamic:
            return self.a.error(e, 4022, f"an integer product takes a static int8 or uint8 matrix times an int8 "
                                         f"matrix or vector, found '{lt}' and '{rt}'")
        try:
            result = shapes.product_type(lp, rp)
        except shapes.ShapeMismatch as why:
            return self.a.error(e, 6007, f"cannot multiply '{lt}' by '{rt}': {why}", *self.a.declared(e.left, e.right))
        depth = lp.shape[-1]  # a shape variable's binding is checked where the routine is lowered
        if isinstance(depth, int) and depth > shapes.INTEGER_PRODUCT_DEPTH:
            return self.a.error(e, 4022, f"an integer product sums at most {shapes.INTEGER_PRODUCT_DEPTH} "
                                         f"products exactly in int32; this one sums {depth}")
        return Tensor(INT32, result.shape, 0, lp.on_gpu)

    def constants_fit(self, e: ast.Binary, element: Scalar) -> bool:
        """A constant computed in float32 must not round to infinity there (4030)."""
        for side in (e.left, e.right):
            if element == FLOAT32 and isinstance(side.folded, float) and abs(side.folded) >= FLOAT32_OVERFLOW \
                    and side.folded != float("inf") and side.folded != float("-inf"):
                self.a.error(side, 4030, f"the value {side.folded} does not fit in 'float32'")
                return False
        return True

    def device_scalar_type(self, e: ast.Binary, op: str, lt: Type, rt: Type) -> Type:
        """Numbers on the GPU join as host numbers do: float32 with float64 gives float64,
        and a constant takes the other side's type."""
        left, right = (element_of(t) for t in (lt, rt))
        if not left.is_numeric or not right.is_numeric:
            return self.a.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")
        element = self.promote(left, right, e.left, e.right)
        if element.is_integer:
            element = FLOAT64
        result = Tensor(element, (), 0, True)
        return Tracked(result) if is_tracked(lt) or is_tracked(rt) else result

    def promote(self, a: Scalar, b: Scalar, ea: ast.Expr, eb: ast.Expr) -> Scalar:
        """Mixed arithmetic: integers become floats; a constant takes the other side's float type."""
        if a.is_integer and b.is_integer:
            return INTEGER
        if a.is_float and b.is_float:
            if a == b:
                return a
            if ea.folded is not None and a == FLOAT64:  # a float64 constant adapts to float32
                return b
            if eb.folded is not None and b == FLOAT64:
                return a
            return FLOAT64
        return a if a.is_float else b

    def fold(self, e, op, a, b, result):
        if not isinstance(result, Scalar):  # tensor constants are literals: their arithmetic runs in the program
            return None
        if result == FLOAT32 and op in "+-*/":  # float32 arithmetic: its operands and its result are float32
            a, b = to_float32(a), to_float32(b)
        try:
            if op == "+":
                value = a + b
            elif op == "-":
                value = a - b
            elif op == "*":
                value = a * b
            elif op == "/":
                value = a / b
            elif op == "div":
                value = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            elif op == "mod":
                value = a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1))
            elif op == "and":
                value = a and b
            elif op == "or":
                value = a or b
            else:
                value = {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        except (ZeroDivisionError, TypeError, OverflowError):
            return None
        if result == FLOAT32 and isinstance(value, float):
            value = to_float32(value)
        if isinstance(result, Scalar) and result.is_integer and isinstance(value, int):
            low, high = INTEGER_RANGES["integer"]
            if not low <= value <= high:
                self.a.error(e, 4023, f"the constant expression overflows a 64-bit integer ({value})")
                return None
        return value


def operand_expected(op: str, expected: Type | None) -> Type | None:
    """The type an operand of `op` is expected to have: arithmetic hands on a scalar's."""
    return expected if op in "+-*/" and not isinstance(expected, Tensor) else None


# The method that checks each kind of node: expr_Name checks an ast.Name.
LITERAL_TYPES = {ast.IntLit: INTEGER, ast.FloatLit: FLOAT64, ast.StrLit: STRING, ast.BoolLit: BOOLEAN}
_EXPR_CHECKS = {getattr(ast, name[5:]): method for name, method in vars(Expressions).items()
                if name.startswith("expr_")} | dict.fromkeys(LITERAL_TYPES, Expressions.literal)
