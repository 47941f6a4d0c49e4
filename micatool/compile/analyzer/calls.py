"""Calls: of the vocabulary (through its registry, ops/), of routines, with their
shape bindings and lent arguments."""

from __future__ import annotations

from ...diagnostics import Hint
from .. import ast, ops, residency, shapes
from ..ops.conversions import check_conversion
from ..symbols import BuiltinSymbol, RoutineSymbol, TypeSymbol
from ..types import ERROR, VOID, ErrorType, Scalar, Tensor, Type, plain, substitute
from .rules import count, shapes_free


class Calls:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts

    def expr_Call(self, e: ast.Call, expected, statement: bool) -> Type:
        if not isinstance(e.callee, ast.Name):
            self.a.expressions.expr(e.callee)
            return self.a.error(e, 4024, "only a named procedure or function can be called")
        name = e.callee.ident
        symbol = self.a.resolve(e.callee)
        e.callee.symbol = symbol
        e.target = symbol
        if symbol is None:
            for arg in e.args:
                self.a.expressions.expr(arg.value if isinstance(arg, ast.FormatArg) else arg)
            return ERROR
        outer, self.a.call = self.a.call, e
        try:
            if isinstance(symbol, BuiltinSymbol):
                t = self.builtin_call(e, ops.OPS[name], expected)
            elif isinstance(symbol, RoutineSymbol):
                t = self.routine_call(e, symbol)
            elif isinstance(symbol, TypeSymbol):
                t = check_conversion(self.a.check_context, e, symbol.type)
            else:
                for arg in e.args:
                    self.a.expressions.expr(arg)
                return self.a.error(e.callee, 4025, f"'{name}' is not a procedure or function")
        finally:
            self.a.call = outer
        if t is VOID and not statement:
            return self.a.error(e, 4026, f"'{name}' is a procedure and gives no value")
        return t

    def builtin_call(self, e: ast.Call, op: ops.Op, expected) -> Type:
        """The op's own check, then the rule the registry keeps for every op: one the GPU
        does not run takes no GPU operand (7005), so no call passes here that cannot lower."""
        reported = len(self.a.reporter.diagnostics)
        t = op.check(self.a.check_context, e, expected)
        if op.device is None and len(self.a.reporter.diagnostics) == reported:  # the op's own refusal comes first
            for arg in e.args:
                place = arg.place if isinstance(arg, ast.AddressArg) else arg
                if place.ty is not None and not residency.needs_host(self.a, f"'{op.name}'", place, place.ty):
                    return ERROR
        return t

    def hiding(self, routine: RoutineSymbol) -> tuple[Hint, ...]:
        """A call that does not fit a routine named like an op of the vocabulary was most
        likely meant for the op, which the program's declaration hides."""
        if routine.name not in ops.OPS:
            return ()
        return (Hint.note(f"'{routine.name}' here is the routine declared at {self.a.reporter.line_of(routine.pos)}, "
                          f"which hides the predeclared '{routine.name}'"),
                Hint.help(f"rename that routine to call the predeclared '{routine.name}' here"))

    def routine_call(self, e: ast.Call, routine: RoutineSymbol) -> Type:
        if self.a.routine is not None:
            self.a.routine.calls = self.a.routine.calls | {routine}
            if routine.touches_tracked or routine.has_tape:
                self.a.routine.touches_tracked = True
        if self.a.tape_depth > 0:
            self.a.window_calls.append((routine, e.pos))
        self.a.tasks.note_call(e, routine)
        if len(e.args) != len(routine.params):
            for arg in e.args:
                self.a.expressions.expr(arg.place if isinstance(arg, ast.AddressArg) else arg)
            return self.a.error(e, 4027, f"'{routine.name}' takes {count(len(routine.params), 'argument')}, "
                                         f"found {len(e.args)}", *self.hiding(routine))
        if any(p.by_address for p in routine.params):
            self.a.calls_lending.append((e, routine))
        binding: dict[str, object] = {}
        ok = True
        for arg, param in zip(e.args, routine.params):
            if isinstance(param.type, ErrorType):  # reported at the declaration already
                self.a.expressions.expr(arg.place if isinstance(arg, ast.AddressArg) else arg)
                ok = False
                continue
            if param.by_address:
                t = self.a.places.address_arg(arg, f"parameter '{param.name}'")
            else:
                if isinstance(arg, ast.AddressArg):
                    self.a.expressions.expr(arg.place)
                    self.a.error(arg, 5007, f"parameter '{param.name}' takes a value; remove 'address'")
                    ok = False
                    continue
                t = self.a.expressions.expr(arg, plain(shapes_free(param.type)))
            if isinstance(t, ErrorType):
                ok = False
                continue
            try:
                fits = shapes.unify(param.type, t, binding)
            except shapes.ShapeMismatch as why:
                self.a.error(arg, 6008, f"argument '{param.name}' of '{routine.name}' has type '{t}': {why}",
                             *self.hiding(routine))
                ok = False
                continue
            concrete = substitute(param.type, binding)
            if param.by_address:
                if residency.on_gpu(t) != residency.on_gpu(concrete):
                    self.a.error(arg, 7003, f"parameter '{param.name}' of '{routine.name}' lends a place "
                                          f"{residency.place_word(concrete)}, found one {residency.place_word(t)}")
                    ok = False
                elif not fits or plain(concrete) != plain(t):
                    self.a.error(arg, 4028, f"parameter '{param.name}' of '{routine.name}' lends '{concrete}', "
                                            f"found '{t}'")
                    ok = False
            elif not (fits and self.a.places.assignable(t, concrete, arg)):
                if residency.on_gpu(t) != residency.on_gpu(concrete) and not isinstance(plain(t), Scalar):
                    self.a.error(arg, 7003, f"argument '{param.name}' of '{routine.name}' is "
                                            f"{residency.place_word(concrete)}, found '{t}' {residency.place_word(t)}")
                    ok = False
                    continue
                code = 6010 if isinstance(plain(t), Tensor) and isinstance(plain(concrete), Tensor) else 4028
                self.a.error(arg, code, f"argument '{param.name}' of '{routine.name}' must be '{concrete}', "
                                        f"found '{t}'", *self.hiding(routine))
                ok = False
            else:
                self.a.declarations.note_untracking(arg, t, concrete, f"parameter '{param.name}' of '{routine.name}'")
        e.binding = binding
        if routine.result is None:
            return VOID
        return substitute(routine.result, binding) if ok else ERROR
