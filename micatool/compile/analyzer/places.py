"""Places: what may be written, lent by `address` or assigned from what."""

from __future__ import annotations

from .. import ast, residency
from ..symbols import ConstSymbol, ShapeVarSymbol, VarSymbol
from ..types import ERROR, FLOAT32, INTEGER_RANGES, STREAM, ErrorType, Scalar, Tensor, Type, has_tracked, holds_dynamic, plain
from .rules import (FLOAT32_OVERFLOW, STREAM_COPIED, dynamic_storage_roots, indexes_string, is_dynamic_row,
                    not_addressable, plain_twin)


class Places:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts

    def place(self, e: ast.Expr, action: str) -> Type:
        """Type-check e as a place to write; report why when it is not one."""
        if isinstance(e, ast.Name) and self.a.routine is not None and e.ident == self.a.routine.name \
                and self.a.routine.is_function:
            e.symbol = self.a.routine.result_var
            e.ty = self.a.routine.result
            return e.ty
        root = ast.root_name(e)
        if root is None:
            self.a.expressions.expr(e)
            return self.a.error(e, 5001, f"cannot {action} this expression: it is not a variable, field or element")
        self.a.writing = root  # writing a place is not reading it (see note_use)
        t = self.a.expressions.expr(e)
        self.a.writing = None
        if isinstance(t, ErrorType):
            return ERROR
        symbol = root.symbol
        if isinstance(symbol, ConstSymbol):
            return self.a.error(e, 5002, f"cannot {action} constant '{root.ident}'")
        if isinstance(symbol, ShapeVarSymbol):
            return self.a.error(e, 5002, f"cannot {action} shape variable '{root.ident}'")
        if not isinstance(symbol, VarSymbol):
            return self.a.error(e, 5001, f"cannot {action} '{root.ident}': it is not a variable")
        if symbol.is_loop_var and e is root:
            return self.a.error(e, 5003, f"cannot {action} '{root.ident}' while a for loop counts with it")
        if indexes_string(e):
            return self.a.error(e, 5005, "strings are values: build a new one with Copy and '+' "
                                         "instead of writing a character")
        if symbol.role == "param" and not symbol.by_address:
            symbol.assigned = True
        self.note_write(e, symbol)
        if symbol.role == "global" and self.a.routine is not None and holds_dynamic(t):
            self.a.routine.global_resizes = self.a.routine.global_resizes | {symbol}
        return t

    def note_write(self, e: ast.Expr, symbol: VarSymbol) -> None:
        """The routine writes e, rooted in symbol: a global it writes, or an address parameter
        it changes (tasks may share a lent stream only when none of them changes it)."""
        if symbol.role == "global" and self.a.routine is not None:
            self.a.routine.global_writes = self.a.routine.global_writes | {symbol}
        if symbol.by_address and symbol.changed_at is None:
            symbol.changed_at = e

    def change_stream(self, e: ast.Expr) -> None:
        """A stream operation other than Accept, AwaitHead and LocalPort changes the stream (its buffers,
        its position, its timeout, its state): for sharing, a write of the variable holding it."""
        root = ast.root_name(e)
        if root is not None and isinstance(root.symbol, VarSymbol):
            self.note_write(e, root.symbol)

    def address_arg(self, arg: ast.Expr, what: str = "") -> Type:
        """An `address place` argument: the place must be plain and writable."""
        if not isinstance(arg, ast.AddressArg):
            t = self.a.expressions.expr(arg)
            if isinstance(t, ErrorType):
                return ERROR
            return self.a.error(arg, 5006, f"{what or 'this parameter'} writes the caller's storage: "
                                           "pass it as 'address <place>'")
        t = self.place(arg.place, "take the address of")
        arg.ty = t
        if isinstance(t, ErrorType):
            return ERROR
        if has_tracked(t):
            arg.ty = self.a.error(arg, 5119, not_addressable(t), *plain_twin(arg.place, t, self.a.call))
        elif is_dynamic_row(arg.place):
            arg.ty = self.a.error(arg, 5008, "a row of a dynamic matrix has no storage of its own to lend; "
                                             "copy it into a vector variable, or lend the whole matrix")
        return arg.ty

    def check_lent_elements(self) -> None:
        """An element of dynamic storage lent to a routine that may resize that storage
        would be written after it moved (5009)."""
        for call, routine in self.a.calls_lending:
            lent = [a for a, p in zip(call.args, routine.params)
                    if p.by_address and isinstance(a, ast.AddressArg) and not isinstance(a.ty, ErrorType)]
            whole = {ast.root_name(a.place).symbol for a in lent if holds_dynamic(a.place.ty)}
            for arg in lent:
                inside = dynamic_storage_roots(arg.place)
                if inside and (inside & (routine.global_resizes | whole)):
                    place = ast.place_text(arg.place)
                    self.a.error(arg, 5009, f"'{routine.name}' may resize the storage that '{place}' "
                                            f"lives in, and would then write where it used to be; lend a variable "
                                            f"holding the element, and store it back after the call")

    def assignable(self, source: Type, target: Type, e: ast.Expr) -> bool:
        s, t = plain(source), plain(target)
        if s == t:
            return True
        if isinstance(s, Scalar) and isinstance(t, Scalar):
            if t == FLOAT32 and isinstance(e.folded, int | float) and not isinstance(e.folded, bool):
                return abs(e.folded) < FLOAT32_OVERFLOW  # a constant that would round to infinity does not fit
            if t.is_float and s.is_numeric:
                return True
            if t.is_integer and s.is_integer:
                if e.folded is not None and isinstance(e.folded, int):
                    low, high = INTEGER_RANGES[t.name]
                    return low <= e.folded <= high
                return True
            return False
        if isinstance(s, Tensor) and isinstance(t, Tensor):
            if s.on_gpu != t.on_gpu:
                return False
            if s.element != t.element and not (e.folded is not None and isinstance(e, ast.TensorLit)):
                return False
            if s.rank != t.rank:
                return False
            if s.is_dynamic or t.is_dynamic:
                return True
            return s.shape == t.shape
        return False

    def check_assignable(self, source: Type, target: Type, e: ast.Expr, place: ast.Expr | None = None) -> None:
        """Report why e, of type source, cannot be stored where target is (at `place`, where
        a statement names it)."""
        if isinstance(source, ErrorType) or isinstance(target, ErrorType):
            return
        if target == STREAM:
            self.a.error(e, 5020, STREAM_COPIED.format("open one into this variable with OpenRead, OpenWrite or "
                                                       "OpenAppend, or lend it with 'address'"))
            return
        if self.assignable(source, target, e):
            return
        s, t = plain(source), plain(target)
        if residency.on_gpu(source) != residency.on_gpu(target):
            verb = "ToDevice" if residency.on_gpu(target) else "ToHost"
            self.a.error(e, 7004, f"'{source}' lives {residency.place_word(source)} and '{target}' "
                                f"{residency.place_word(target)}; cross with {verb}({residency.argument_text(e)})")
        elif isinstance(s, Tensor) and isinstance(t, Tensor) and s.element == t.element and s.rank == t.rank:
            self.a.error(e, 6010, f"cannot assign '{source}' to '{target}': the shapes differ",
                         *self.a.declared(*([place] if place is not None else []), e))
        elif isinstance(s, Scalar) and s.is_float and isinstance(t, Scalar) and t.is_integer:
            self.a.error(e, 4029, f"cannot assign '{source}' to '{target}': convert with Trunc or Round")
        elif isinstance(s, Scalar) and s.is_numeric and isinstance(t, Scalar) and t.is_numeric:
            self.a.error(e, 4030, f"the value {e.folded} does not fit in '{t}'")
        else:
            self.a.error(e, 4031, f"cannot assign '{source}' to '{target}'")
