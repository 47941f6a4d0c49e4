"""Checkpoints: Save writes places to a safetensors file, atomically, with a
checksum and a description of the program; Load reads them back and refuses a
file that does not match."""

from __future__ import annotations

import json
import math

from .. import ast, residency
from ..c_types import c_name, c_string_literal
from ..cvalue import CValue
from ..types import BOOLEAN, ERROR, VOID, Array, ErrorType, Record, Scalar, Tensor, Tracked, Type, plain
from .registry import define
from .checking import arity, host_only, wrong
from .lowering import NOTHING


def saveable(t: Type) -> str | None:
    """Why a value of type t cannot go into a checkpoint, or None when it can."""

    p = plain(t)
    if isinstance(p, Scalar):
        return None if p.is_numeric or p == BOOLEAN else f"'{p}' is not a number"
    if isinstance(p, Tensor):
        return None
    if isinstance(p, Record):
        for name, field_type in p.fields:
            why = saveable(field_type)
            if why:
                return f"field '{name}': {why}"
        return None
    if isinstance(p, Array) and not p.is_dynamic:
        return saveable(p.element)
    return f"'{p}' has no fixed layout to store"


def place_path(e: ast.Expr) -> str | None:
    """The canonical path a place expression names, when its indices are constants."""
    if isinstance(e, ast.Name):
        return e.ident
    if isinstance(e, ast.Field):
        base = place_path(e.base)
        return f"{base}.{e.name}" if base else None
    if isinstance(e, ast.Index) and all(i.folded is not None for i in e.indices):
        base = place_path(e.base)
        return f"{base}[{', '.join(str(i.folded) for i in e.indices)}]" if base else None
    return None


def check_checkpoint(a, call, expected):
    """Save(path, place, ...) and Load(path, place, ...): one tensor per leaf, named by its canonical path."""
    name = call.callee.ident
    if len(call.args) < 2:
        return arity(a, call, 2) and ERROR
    path = a.expr(call.args[0])
    if not isinstance(path, ErrorType) and plain(path) != Scalar("string"):
        wrong(a, call, call.args[0], path, "a file name first")
    paths: dict[str, ast.Expr] = {}
    for arg in call.args[1:]:
        t = a.place(arg, "load into") if name == "Load" else a.expr(arg)
        if isinstance(t, ErrorType):
            continue
        where = place_path(arg)
        if where is None:
            a.error(arg, 5113, f"'{name}' stores places by their canonical path: pass a variable, a field or an "
                               "element with constant indices")
            continue
        if not host_only(a, call, [(arg, t)]):
            continue
        if residency.holds_device(t):
            a.error(arg, 7005, f"'{name}' runs on the host; '{where}' holds values on the GPU: save and load host "
                               f"copies, moved with ToHost and ToDevice")
            continue
        why = saveable(t)
        if why:
            a.error(arg, 4037, f"cannot {name.lower()} '{where}': {why}")
            continue
        for other in paths:
            if where == other or where.startswith(other + ".") or where.startswith(other + "[") \
                    or other.startswith(where + ".") or other.startswith(where + "["):
                a.error(arg, 5114, f"'{where}' and '{other}' overlap in one checkpoint")
        paths[where] = arg
    return BOOLEAN if name == "Load" else VOID


# Each element type's tag in the runtime's checkpoint tables (mica.h).
DTYPES = {"float32": "MICA_F32", "float64": "MICA_F64", "integer": "MICA_I64", "int32": "MICA_I32",
          "int8": "MICA_I8", "uint8": "MICA_U8", "boolean": "MICA_BOOL"}


def checkpoint_entries(f, path: str, place: str, t: Type, tag: str = "NULL") -> list[tuple[str, Type, str]]:
    """(canonical path, type, C initializer of mica_entry) for every leaf inside the place."""
    if isinstance(t, Tracked):
        return [(p, t, init) for p, _, init in checkpoint_entries(f, path, f"{place}.v", t.inner, f"&{place}.tag")]
    name = f'"{path}"'
    if isinstance(t, Scalar):
        return [(path, t, f"{{{name}, {DTYPES[t.name]}, 0, {{0}}, &{place}, NULL, NULL, NULL, {tag}}}")]
    if isinstance(t, Tensor) and t.is_dynamic:
        return [(path, t, f"{{{name}, {DTYPES[t.element.name]}, {t.rank}, {{0}}, NULL, &{place}.rows, &{place}.cols, "
                          f"(void **)&{place}.e, {tag}}}")]
    if isinstance(t, Tensor):
        dims = ", ".join(str(d) for d in t.shape)
        return [(path, t, f"{{{name}, {DTYPES[t.element.name]}, {t.rank}, {{{dims}}}, {place}.e, "
                          f"NULL, NULL, NULL, {tag}}}")]
    if isinstance(t, Record):
        return [e for field, ft in t.fields
                for e in checkpoint_entries(f, f"{path}.{field}", f"{place}.{c_name(field)}", ft)]
    return [e for i in range(t.low, t.high + 1)
            for e in checkpoint_entries(f, f"{path}[{i}]", f"{place}.e[{i - t.low}]", t.element)]


def compact_json(value) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def checkpoint_description(analysis, leaves: list[tuple[str, Type, str]]) -> str:
    """The metadata members Save writes after the format and the checksum, as JSON
    text: the program's name, its constants (those its units' interfaces declare,
    then its own const section, which wins a name both hold) and each tensor's
    Mica type, the last two JSON encoded once more, since safetensors metadata
    values are strings."""
    declared = [c for unit in analysis.units for c in unit.interface_consts] + analysis.global_consts
    consts = {c.name: c.value if not isinstance(c.value, float) or math.isfinite(c.value) else repr(c.value)
              for c in declared}
    tensors = {path: {"type": str(plain(t)), "tracked": isinstance(t, Tracked)} for path, t, _ in leaves}
    members = compact_json({"program": analysis.program.name, "consts": compact_json(consts),
                            "tensors": compact_json(tensors)})
    return members[1:-1]


def lower_checkpoint(f, call: ast.Call) -> CValue:
    path = f.borrow(f.value(call.args[0])).text
    leaves = []
    for arg in call.args[1:]:
        leaves += checkpoint_entries(f, place_path(arg), f.place(arg).text, f.concrete(arg.ty))
    table = f.declare_array("mica_entry", [entry for _, _, entry in leaves])
    count, line = len(leaves), call.pos.line
    if call.callee.ident == "Save":
        description = c_string_literal(checkpoint_description(f.analysis, leaves))
        f.line(f"mica_save({path}, {table}, {count}, {description}, {line});")
        return NOTHING
    must = "true" if f.result_unused(call) else "false"
    return CValue(f"mica_load({path}, {table}, {count}, {must}, {line})", Scalar("boolean"))


define("Save", check=check_checkpoint, lower=lower_checkpoint, signature="Save(path : string; places...)",
       doc="Writes the places' tensors to a safetensors file at path, atomically, each named by its canonical path.")
define("Load", check=check_checkpoint, lower=lower_checkpoint, signature="Load(path : string; places...) : boolean",
       doc="Reads the places back from a safetensors file, checking the whole file before it changes any.")
