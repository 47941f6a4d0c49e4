"""What the vocabulary's checkers share: the context they check in, argument
counts and kinds, and the rules for tracked and device values.

A checker takes a CheckContext, the call and the type the context expects, and
gives the call's type, or ERROR once it has said why.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...diagnostics import Hint
from .. import ast, residency
from ..types import ERROR, FLOAT64, INTEGER, STREAM, STRING, ErrorType, Scalar, Tensor, Tracked, Type, is_tracked, plain


class CheckContext:
    """The analyzer as a checker sees it: the few questions LANGUAGE.md's checks
    ask of it, and nothing of its scopes, routines or bookkeeping."""

    def __init__(self, analyzer):
        self._analyzer = analyzer

    def expr(self, e: ast.Expr, expected: Type | None = None) -> Type:
        """Check an argument: its type (ERROR after a diagnostic)."""
        return self._analyzer.expressions.expr(e, expected)

    def place(self, e: ast.Expr, action: str) -> Type:
        """Check an argument that is written, as `action` names the writing."""
        return self._analyzer.places.place(e, action)

    def address_arg(self, arg: ast.Expr, what: str = "") -> Type:
        """Check an `address` argument: a place the call may write."""
        return self._analyzer.places.address_arg(arg, what)

    def change_stream(self, e: ast.Expr) -> None:
        """The call changes the stream e names (any use but Accept's server and LocalPort's)."""
        self._analyzer.places.change_stream(e)

    def note_tape_verb(self) -> None:
        """Backward or Gradient: the routine works the program's tape, so no task may call it."""
        if self._analyzer.routine is not None:
            self._analyzer.routine.tape_verbs = True

    def check_assignable(self, source: Type, target: Type, e: ast.Expr) -> None:
        """Report why a value of type source cannot be stored where target is, if it cannot."""
        self._analyzer.places.check_assignable(source, target, e)

    def const_int(self, e: ast.Expr) -> int | None:
        """The value of an integer known at compile time, or None."""
        return self._analyzer.type_syntax.const_int(e)

    def promote(self, a: Scalar, b: Scalar, ea: ast.Expr, eb: ast.Expr) -> Scalar:
        """The type two numbers join to, as arithmetic joins them."""
        return self._analyzer.expressions.promote(a, b, ea, eb)

    def error(self, where, code: int, message: str, *hints: Hint) -> Type:
        return self._analyzer.error(where, code, message, *hints)

    @property
    def in_window(self) -> bool:
        """Is the call inside a `tape ... end` window (or a routine that runs inside one)?"""
        return self._analyzer.tape_depth > 0

    def note_tracked_op(self, t: Type) -> None:
        """An operation on t happened: its routine computes with tracked values when t is tracked."""
        self._analyzer.expressions.note_tracked_op(t)

    def note_tape_loss(self, where: ast.Node, code: int, message: str) -> None:
        """A tracked value stops recording here: an error if this is inside a window."""
        self._analyzer.declarations.note_tape_loss(where, code, message)

    def note_gradient_read(self, place: ast.Expr, root) -> None:
        """Gradient(place) of the variable root: checked once the windows are known."""
        self._analyzer.gradient_uses.append((root, place.pos, ast.place_text(place)))


def op_name(call: ast.Call) -> str:
    return call.callee.ident


def arity(a, call: ast.Call, *counts: int) -> bool:
    if len(call.args) in counts:
        return True
    for arg in call.args:
        a.expr(arg.place if isinstance(arg, ast.AddressArg) else arg)
    wanted = " or ".join(str(c) for c in counts)
    noun = "argument" if counts == (1,) else "arguments"
    a.error(call, 4027, f"'{op_name(call)}' takes {wanted} {noun}, found {len(call.args)}")
    return False


def one_argument(a, call: ast.Call) -> Type:
    """The type of the call's one argument, or ERROR once a diagnostic says why not."""
    if not arity(a, call, 1):
        return ERROR
    return a.expr(call.args[0])


def matrix_argument(a, call: ast.Call, wanted: str) -> Type:
    """The type of the call's one argument, a float tensor of two dimensions or
    more, or ERROR once a diagnostic says why not (`wanted` as wrong() says it)."""
    t = one_argument(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    if plain(t).rank < 2:
        return wrong(a, call, call.args[0], t, wanted)
    return t


def argument_types(a, call: ast.Call, count: int) -> list[Type] | None:
    """The types of the call's `count` arguments, or None once a diagnostic says why
    not (a wrong count, or an argument in error)."""
    if not arity(a, call, count):
        return None
    types = values(a, call)
    return None if any(isinstance(t, ErrorType) for t in types) else types


def values(a, call: ast.Call) -> list[Type]:
    return [a.expr(arg) for arg in call.args]


def wrong(a, call: ast.Call, arg: ast.Expr, t: Type, wanted: str) -> Type:
    number_wanted = not any(word in wanted for word in ("tensor", "vector", "matrix"))
    if number_wanted and isinstance(plain(t), Tensor) and plain(t).rank == 0:  # a device scalar for a host number
        residency.needs_host(a, f"'{op_name(call)}'", arg, t)
        return ERROR
    return a.error(arg, 4032, f"'{op_name(call)}' needs {wanted}, found '{t}'")


def is_integer(t: Type) -> bool:
    return isinstance(plain(t), Scalar) and plain(t).is_integer


def is_numeric(t: Type) -> bool:
    return isinstance(plain(t), Scalar) and plain(t).is_numeric


def is_float(t: Type) -> bool:
    return isinstance(plain(t), Scalar) and plain(t).is_float


def plain_only(a, call: ast.Call, types: list[Type]) -> None:
    """Inside a tape window, a builtin that does not record must not read tracked values."""
    if not a.in_window:
        return
    for arg, t in zip(call.args, types):
        if is_tracked(t):
            a.error(arg, 5108, f"'{op_name(call)}' does not record on the tape, so its result would carry no gradient; "
                               f"read '{t}' outside the window")


def tensor_arg(a, call: ast.Call, arg: ast.Expr, t: Type, rank: int | None = None, dynamic_ok: bool = True) -> bool:
    p = plain(t)
    ok = isinstance(p, Tensor) and p.element.is_float and (rank is None or p.rank == rank) and \
        (dynamic_ok or not p.is_dynamic) and p.rank != 0  # a device scalar is a scalar here, as on the host
    if not ok:
        shape = {1: "a float vector", 2: "a float matrix"}.get(rank, "a float tensor")
        wrong(a, call, arg, t, shape + ("" if dynamic_ok else " with a static shape"))
    return ok


def tracked_if(result: Type, *inputs: Type) -> Type:
    return Tracked(result) if any(is_tracked(t) for t in inputs) else result


def static_if_tracked(a, call, arg, t) -> bool:
    """A tracked value needs a static shape; so does anything it is combined with."""
    if isinstance(plain(t), Tensor) and plain(t).is_dynamic:
        a.error(arg, 5109, f"'{call.callee.ident}' of a dynamic tensor cannot join tracked values; "
                           "give it a static shape")
        return False
    return True


def mixes_dynamic_with_tracked(a, call, types) -> bool:
    if any(is_tracked(t) for t in types):
        return not all(static_if_tracked(a, call, arg, t) for arg, t in zip(call.args, types))
    return False


def records_on_gpu(a, call, result: Type) -> Type:
    """Dot, Outer and the image verbs run on the GPU, but do not record there yet."""
    if is_tracked(result) and residency.on_gpu(result):
        return a.error(call, 7011, f"'{call.callee.ident}' does not record on the GPU's tape yet; compute it on the "
                                   "host, or outside the window")
    return result


def last_dim(t: Type):
    return t.shape[-1] if t.shape is not None else None


def same_extent(x, y) -> bool:
    return x is None or y is None or x == y


def touch(a, *types: Type) -> None:
    for t in types:
        a.note_tracked_op(t)


def host_only(a, call, pairs) -> bool:
    """Operations the GPU does not run: their (argument, type) pairs must live on the host."""
    return all(residency.needs_host(a, f"'{call.callee.ident}'", arg, t,
                                   "work on a host copy and move it with ToDevice") for arg, t in pairs)


def conformant(a, call, places: list[int], values_at: list[int]) -> Type:
    """The arguments at `places` lend, those at `values_at` read, one float value type."""
    first = None
    types = {}
    for i in places:
        types[i] = a.address_arg(call.args[i], f"argument {i + 1} of {call.callee.ident}")
    for i in values_at:
        types[i] = a.expr(call.args[i])
    if any(isinstance(t, ErrorType) for t in types.values()):
        return ERROR
    if not residency.check_together(a, call, f"'{call.callee.ident}'", [call.args[i] for i in sorted(types)],
                                    [types[i] for i in sorted(types)]):
        return ERROR
    for i in sorted(types):
        p = plain(types[i])
        ok = isinstance(p, Scalar) and p.is_float or isinstance(p, Tensor) and p.element.is_float
        if not ok:
            return wrong(a, call, call.args[i], types[i], "a float scalar or float tensor")
        if first is None:
            first = p
        elif p != first and not (isinstance(p, Tensor) and isinstance(first, Tensor) and p.element == first.element
                                 and (p.is_dynamic or first.is_dynamic) and p.rank == first.rank):
            return a.error(call.args[i], 6017, f"'{call.callee.ident}' needs one shape throughout: '{first}' and '{p}'")
    plain_only(a, call, [types.get(i) for i in range(len(call.args))])
    return first


def number_args(a, call, indices: list[int], integer_first: bool = False) -> bool:
    ok = True
    for n, i in enumerate(indices):
        t = a.expr(call.args[i])
        if isinstance(t, ErrorType):
            ok = False
        elif integer_first and n == 0 and not is_integer(t):
            wrong(a, call, call.args[i], t, "an integer step count")
            ok = False
        elif not is_numeric(t):
            wrong(a, call, call.args[i], t, "numbers after the tensors")
            ok = False
    return ok


@dataclass(frozen=True)
class Lent:
    """A parameter the call writes: the caller lends `address place` of exactly this type."""

    type: Type


@dataclass(frozen=True)
class Shared:
    """A stream the call only listens on (Accept's and AwaitHead's server, LocalPort's socket),
    so tasks may share it; a call changes every other stream it is given (its buffers,
    position or timeout)."""

    type: Type

    def __str__(self) -> str:
        return str(self.type)


def check_signature(params: list, result: Type):
    """The checker of a function of plain values (an integer, a string, a number, or a value of
    exactly the type named), of lent places (Lent) and of shared streams (Shared)."""

    def check(a, call, expected):
        if not arity(a, call, len(params)):
            return ERROR
        types = [a.address_arg(arg, f"argument {i + 1} of {op_name(call)}") if isinstance(wanted, Lent)
                 else a.expr(arg) for i, (arg, wanted) in enumerate(zip(call.args, params))]
        for arg, t, wanted in zip(call.args, types, params):
            if isinstance(t, ErrorType):
                return ERROR
            if wanted == STREAM:
                a.change_stream(arg)
            if isinstance(wanted, Shared):
                wanted = wanted.type
            if isinstance(wanted, Lent):
                if plain(t) != wanted.type:
                    return wrong(a, call, arg, t, f"a place of type '{wanted.type}' lent by 'address'")
            elif wanted == INTEGER and not is_integer(t) or wanted == FLOAT64 and not is_numeric(t) \
                    or wanted not in (INTEGER, FLOAT64) and plain(t) != wanted:
                return wrong(a, call, arg, t, f"'{wanted}'")
        plain_only(a, call, types)
        return result

    check.signature = (params, result)  # what tools/facts.py lists for the op
    return check
