"""Regular expressions (LANGUAGE.md section 11): Compile, IsMatch, Find, FindAll
and ReplaceAll on `regex` values, each one call of the engine in
runtime_c/mica_regex.c (RE2 syntax, a Pike VM: linear in the text).

Compile answers false for a malformed pattern and leaves the reason for
LastError. Find and FindAll hand the runtime the length and the elements of
an `array of string`, which it fills with fresh strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, ERROR, REGEX, STRING, Array, ErrorType, Type, plain
from . import define
from .checking import arity, plain_only, wrong
from .lowering import plain_arg

STRINGS = Array(STRING, None, None)


@dataclass(frozen=True)
class Lent:
    """A parameter the call writes: the argument is `address <place>` of this type."""

    type: Type


# name: (parameters, result, the runtime function)
SIGNATURES = {
    "Compile": ([STRING, Lent(REGEX)], BOOLEAN, "mica_regex_compile"),
    "IsMatch": ([REGEX, STRING], BOOLEAN, "mica_regex_is_match"),
    "Find": ([REGEX, STRING, Lent(STRINGS)], BOOLEAN, "mica_regex_find"),
    "FindAll": ([REGEX, STRING], STRINGS, "mica_regex_find_all"),
    "ReplaceAll": ([REGEX, STRING, STRING], STRING, "mica_regex_replace_all"),
}

WANTED = {STRING: "a 'string'", REGEX: "a 'regex'", STRINGS: "an 'array of string' to receive the groups"}


def check_regex_call(a, call: ast.Call, expected) -> Type:
    name = call.callee.ident
    params, result, _ = SIGNATURES[name]
    if not arity(a, call, len(params)):
        return ERROR
    types = []
    for i, (arg, param) in enumerate(zip(call.args, params)):
        if isinstance(param, Lent):
            types.append(a.address_arg(arg, f"argument {i + 1} of {name}"))
        else:
            types.append(a.expr(arg))
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    plain_only(a, call, types)
    for arg, param, t in zip(call.args, params, types):
        wanted = param.type if isinstance(param, Lent) else param
        if plain(t) != wanted:
            return wrong(a, call, arg, t, WANTED[wanted])
    return result


def lower_regex_call(f, call: ast.Call) -> CValue:
    params, result, function = SIGNATURES[call.callee.ident]
    args = []
    for arg, param in zip(call.args, params):
        if isinstance(param, Lent):
            place = f.exprs.place(arg.place).text
            args += [f"&{place}"] if param.type == REGEX else [f"&{place}.len", f"&{place}.e"]
        else:
            args.append(f.exprs.borrow(plain_arg(f, arg)).text)
    line = [] if call.callee.ident == "Compile" else [str(call.pos.line)]
    if result == STRINGS:  # the runtime fills a fresh array
        out = f.emit.declare(STRINGS)
        f.emit.line(f"{function}({', '.join(args[:2])}, &{out}.len, &{out}.e, {call.pos.line});")
        return CValue(out, STRINGS, owned=True, lvalue=True)
    return CValue(f"{function}({', '.join(args + line)})", result, owned=result == STRING)


for _name in SIGNATURES:
    define(_name, check=check_regex_call, lower=lower_regex_call)
