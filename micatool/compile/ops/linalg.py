"""Linear algebra on dynamic float matrices: Solve, Invert, Cholesky and Qr, each
answering false for a matrix it cannot take (singular, not positive definite)."""

from __future__ import annotations

from .. import ast
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import BOOLEAN, ERROR, ErrorType, Scalar, Tensor, plain
from .registry import define
from .checking import arity, host_only, plain_only, wrong
from .lowering import plain_arg


def _dynamic_float(a, call, i, t, rank: int | None, lent: bool) -> bool:
    p = plain(t)
    ok = isinstance(p, Tensor) and p.element.is_float and (rank is None or p.rank == rank)
    if ok and lent and not p.is_dynamic:
        return wrong(a, call, call.args[i], t, "a dynamic matrix or vector to receive the answer") and False
    if not ok:
        wanted = {1: "a float vector", 2: "a float matrix"}.get(rank, "a float vector or matrix")
        wrong(a, call, call.args[i], t, wanted)
    return ok


def check_linear_algebra(a, call, expected):
    """Solve(a, b, address x), Invert(a, address inverse), Cholesky(a, address l),
    Qr(a, address q, address r): each answers false for a singular (or, for
    Cholesky, not positive-definite) matrix instead of failing."""
    name = call.callee.ident
    lent = {"Solve": [2], "Invert": [1], "Cholesky": [1], "Qr": [1, 2]}[name]
    if not arity(a, call, 1 + len(lent) + (name == "Solve")):
        return ERROR
    types = {}
    for i, arg in enumerate(call.args):
        types[i] = a.address_arg(arg, f"argument {i + 1} of {name}") if i in lent else a.expr(arg)
    if any(isinstance(t, ErrorType) for t in types.values()):
        return BOOLEAN
    plain_only(a, call, list(types.values()))
    if not host_only(a, call, [(call.args[i], t) for i, t in types.items()]):
        return BOOLEAN
    if not _dynamic_float(a, call, 0, types[0], 2, lent=False):
        return BOOLEAN
    element = plain(types[0]).element
    for i in range(1, len(call.args)):
        rank = None if name == "Solve" else 2
        if not _dynamic_float(a, call, i, types[i], rank, lent=i in lent):
            return BOOLEAN
        if plain(types[i]).element != element:
            return a.error(call.args[i], 4021, f"'{name}' needs one element type, found '{types[0]}' and '{types[i]}'")
    if name == "Solve" and plain(types[1]).rank != plain(types[2]).rank:
        a.error(call.args[2], 6018, f"Solve's answer has the right-hand side's shape: '{types[1]}', found '{types[2]}'")
    return BOOLEAN


def lower_linear_algebra(f, call: ast.Call) -> CValue:
    name = call.callee.ident.lower()
    args = []
    element_type = plain(f.concrete(call.args[0].ty)).element
    for arg in call.args:
        if isinstance(arg, ast.AddressArg):
            args.append(f"&{f.place(arg.place).text}")
        else:
            v = plain_arg(f, arg)
            dynamic = Tensor(element_type, None, plain(v.type).rank)
            args.append(f.borrow(f.convert(v, dynamic, call.pos.line)).text)
    ranks = ""
    if name == "solve":
        ranks = f", {plain(f.concrete(call.args[1].ty)).rank}"
    return CValue(f"mica_{name}_{SUFFIX[element_type]}({', '.join(args)}{ranks}, {call.pos.line})", Scalar("boolean"))


for _name, _signature, _doc in (
    ("Solve", "Solve(a : matrix; b : vector or matrix; address x) : boolean",
     "Solves a * x = b by Gaussian elimination with partial pivoting; false when a is singular."),
    ("Invert", "Invert(a : matrix; address inverse) : boolean",
     "a's inverse into inverse, by Gauss-Jordan with partial pivoting; false when a is singular."),
    ("Cholesky", "Cholesky(a : matrix; address l) : boolean",
     "The lower-triangular l with l * Transpose(l) = a; false when a is not positive definite."),
    ("Qr", "Qr(a : matrix; address q, address r) : boolean",
     "Orthogonal q and upper-triangular r with q * r = a, by Householder reflections."),
):
    define(_name, check=check_linear_algebra, lower=lower_linear_algebra, signature=_signature, doc=_doc)
