"""Randomness from the program's one seeded generator: Seed, Normal and Uniform
fills, RandomInt, and Dropout, whose mask it draws."""

from __future__ import annotations

from .. import ast
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..residency import on_gpu
from ..types import ERROR, FLOAT64, INTEGER, VOID, ErrorType, Scalar, element_count, element_of, is_tracked, plain
from .registry import TapeRecord, define
from .checking import (arity, check_signature, conformant, host_only, is_numeric, number_args, tensor_arg, touch,
                       values, wrong)
from .lowering import (NOTHING, c_product, device_operand, extents, fresh_tensor, node_result, numbers, plain_arg,
                       records, storage)


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
    place = f.place(call.args[0].place)
    e = element_of(place.type)
    data, count = storage(f, place)
    a, b = numbers(f, call, [1, 2], FLOAT64)
    f.line(f"mica_{call.callee.ident.lower()}_{SUFFIX[e]}({data}, {count}, {a}, {b});")
    return NOTHING


define("Normal", check=check_fill_random, lower=lower_fill_random, signature="Normal(address x, mean, std)",
       doc="Fills x, a number or a whole tensor, with normal draws of that mean and standard deviation.")
define("Uniform", check=check_fill_random, lower=lower_fill_random, signature="Uniform(address x, low, high)",
       doc="Fills x, a number or a whole tensor, with uniform draws between low and high.")


def lower_seed(f, call: ast.Call) -> CValue:
    f.line(f"mica_seed({f.value(call.args[0]).text});")
    return NOTHING


def lower_random_int(f, call: ast.Call) -> CValue:
    return CValue(f"mica_random_int({f.value(call.args[0]).text}, {call.pos.line})", Scalar("integer"))


define("Seed", check=check_signature([INTEGER], VOID), lower=lower_seed,
       signature="Seed(n : integer)",
       doc="Seeds this task's random generator, so the draws that follow repeat on every machine.")
define("RandomInt", check=check_signature([INTEGER], INTEGER), lower=lower_random_int,
       signature="RandomInt(n : integer) : integer", doc="A uniform random integer in 0..n-1.")


def check_dropout(a, call, expected):
    """Dropout(x, p): x a float tensor, p a plain number in [0, 1), the chance an element is dropped."""
    if not arity(a, call, 2):
        return ERROR
    x, p = values(a, call)
    if isinstance(x, ErrorType) or isinstance(p, ErrorType) or not tensor_arg(a, call, call.args[0], x):
        return ERROR
    if not is_numeric(p) or is_tracked(p):  # the mask has no gradient in p, so p is never tracked
        return wrong(a, call, call.args[1], p, "a plain number p, the chance an element is dropped")
    known = call.args[1].folded
    if isinstance(known, (int, float)) and not 0 <= known < 1:
        return a.error(call.args[1], 4041, f"Dropout drops an element with chance p in [0, 1), not {known}")
    touch(a, x)
    return x


def lower_dropout(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s, line = SUFFIX[t.element], call.pos.line
    if records(f, call):
        node = f.node(call.args[0])
        (p,) = numbers(f, call, [1], FLOAT64)
        if on_gpu(t):
            return node_result(f, call, f.record("dropout", f.concrete(call.ty), [node, p], line))
        return node_result(f, call, f"mica_t_dropout_{s}({node}, {p}, {line})")
    x = plain_arg(f, call.args[0])
    (p,) = numbers(f, call, [1], FLOAT64)
    out = fresh_tensor(f, t, x, line)
    f.line(f"mica_dropout_{s}({out.text}.e, {f.data(x)}, {c_product(extents(f, x))}, {p}, {line});")
    return out


def device_dropout(f, call: ast.Call) -> CValue:
    t, x, out = device_operand(f, call)
    (p,) = numbers(f, call, [1], FLOAT64)
    n, line = element_count(t), call.pos.line
    mask = f.declare_c("mica_dropout_mask ", f"mica_dropout_mask_new({n}, {p}, {line})")
    f.launch(f"mica_dropout_{SUFFIX[t.element]}", line, out=f"{out.text}.ptr", x=f.device_data(x, line),
                    key=f"{mask}.key", first=f"{mask}.first", threshold=f"{mask}.threshold", s=f"{mask}.scale", n=n)
    return out


define("Dropout", records=True, check=check_dropout, lower=lower_dropout, device=device_dropout, kernels=["dropout"],
       tape={"dropout": TapeRecord(["dropout"], ["dropout_back"])},
       signature="Dropout(x : float tensor; p : number) : same shape",
       doc="Zeroes each element with chance p and scales the others by 1 / (1 - p), a mask from the seeded generator.")
