"""The tape's verbs: Backward runs the recorded window backward from one tracked
number; Gradient reads what reached a tracked place. Both work on device places
as on host ones (lower/tape.py)."""

from __future__ import annotations

from ...diagnostics import Hint
from .. import ast
from ..cvalue import CValue
from ..symbols import VarSymbol
from ..types import ERROR, VOID, ErrorType, Scalar, Tensor, Type, is_tracked, plain, trackable
from .registry import define
from .checking import arity
from .lowering import NOTHING


def _tracked_place(a, call, arg) -> tuple[Type, object]:
    """The argument of Backward and Gradient: a tracked place rooted in a variable."""
    t = a.expr(arg)
    if isinstance(t, ErrorType):
        return ERROR, None
    root = ast.root_name(arg)
    symbol = root.symbol if root is not None else None
    if not is_tracked(t) or not isinstance(symbol, VarSymbol):
        untracked = isinstance(arg, ast.Name) and isinstance(symbol, VarSymbol) and symbol.role != "param" \
            and trackable(t)  # a variable declared without the 'tracked' it needs
        a.error(arg, 5110, f"'{call.callee.ident}' needs a tracked place (a variable, field or element), found '{t}'",
                *([Hint.help(f"declare '{arg.ident}' tracked: '{arg.ident} : tracked {t}'")] if untracked else []))
        return ERROR, None
    if symbol.role == "param":
        a.error(arg, 5110, f"'{call.callee.ident}' needs a tracked place of a variable; '{root.ident}' is a parameter")
        return ERROR, None
    return t, symbol


def check_backward(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    t, _ = _tracked_place(a, call, call.args[0])
    if isinstance(t, ErrorType):
        return VOID
    if not (isinstance(plain(t), Scalar) or isinstance(plain(t), Tensor) and plain(t).rank == 0):
        a.error(call.args[0], 5111, f"Backward starts from a tracked scalar, found '{t}'; "
                                    "reduce it with Sum or Mean first")
    if a.in_window:
        a.error(call, 5112, "Backward inside its tape window; call it after the window's 'end'")
    a.note_tape_verb()
    return VOID


def lower_backward(f, call: ast.Call) -> CValue:
    f.backward(call)
    return NOTHING


define("Backward", check=check_backward, lower=lower_backward, device=lower_backward,
       signature="Backward(l : tracked scalar)",
       doc="Walks the tape back from the tracked scalar l after its window, computing the gradients.")


def check_gradient(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    t, symbol = _tracked_place(a, call, call.args[0])
    if isinstance(t, ErrorType):
        return ERROR
    if a.in_window:
        a.error(call, 5112, "Gradient inside a tape window; the gradients exist after Backward")
    a.note_gradient_read(call.args[0], symbol)
    a.note_tape_verb()
    return plain(t)


def lower_gradient(f, call: ast.Call) -> CValue:
    return f.gradient(call)


define("Gradient", check=check_gradient, lower=lower_gradient, device=lower_gradient,
       signature="Gradient(place) : the place's plain type",
       doc="The gradient of the value the place held when the window first read it.")
