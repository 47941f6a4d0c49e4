"""Randomness from the program's one seeded generator: Seed, Normal and Uniform
fills, RandomInt."""

from __future__ import annotations

from .. import ast
from ..ctypes import SUFFIX
from ..cvalue import CValue
from ..types import ERROR, FLOAT64, INTEGER, VOID, ErrorType, Scalar, element_of
from . import define
from .checking import arity, check_signature, conformant, host_only, number_args
from .lowering import NOTHING, numbers, storage


def check_fill_random(a, call, expected):
    """Normal(address x, mean, std), Uniform(address x, low, high)."""
    if not arity(a, call, 3):
        return ERROR
    first = conformant(a, call, [0], [])
    if isinstance(first, ErrorType) or not host_only(a, call, [(call.args[0], call.args[0].ty)]):
        return VOID
    number_args(a, call, [1, 2])
    return VOID


def lower_fill_random(f, call: ast.Call) -> CValue:
    place = f.exprs.place(call.args[0].place)
    e = element_of(place.type)
    data, count = storage(f, place)
    a, b = numbers(f, call, [1, 2], FLOAT64)
    f.emit.line(f"mica_{call.callee.ident.lower()}_{SUFFIX[e]}({data}, {count}, {a}, {b});")
    return NOTHING


define("Normal", check=check_fill_random, lower=lower_fill_random)
define("Uniform", check=check_fill_random, lower=lower_fill_random)


def lower_seed(f, call: ast.Call) -> CValue:
    f.emit.line(f"mica_seed({f.exprs.value(call.args[0]).text});")
    return NOTHING


def lower_random_int(f, call: ast.Call) -> CValue:
    return CValue(f"mica_random_int({f.exprs.value(call.args[0]).text}, {call.pos.line})", Scalar("integer"))


define("Seed", check=check_signature([INTEGER], VOID), lower=lower_seed)
define("RandomInt", check=check_signature([INTEGER], INTEGER), lower=lower_random_int)
