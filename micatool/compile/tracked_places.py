"""Canonical paths: every tracked place of a program, named as LANGUAGE.md §5 names them.

Takes the analyzed program's global variables, gives one entry per tracked
leaf: the variable's name plus index and field steps (`blocks[1].w`), its type
and its element count. `micatool explain` prints them; checkpoints store
tensors under these names.
"""

from __future__ import annotations

from dataclasses import dataclass

from .analyzer import Analysis
from .types import Array, Record, Tensor, Tracked, Type, has_tracked


@dataclass(frozen=True)
class Place:
    path: str
    type: Type
    count: int


def leaves(path: str, t: Type):
    """The tracked leaves inside a value of type t stored at path."""
    if isinstance(t, Tracked):
        inner = t.inner
        yield Place(path, t, inner.count if isinstance(inner, Tensor) else 1)
    elif isinstance(t, Record):
        for name, field_type in t.fields:
            yield from leaves(f"{path}.{name}", field_type)
    elif isinstance(t, Array) and not t.is_dynamic and has_tracked(t.element):
        for i in range(t.low, t.high + 1):
            yield from leaves(f"{path}[{i}]", t.element)


def tracked_places(analysis: Analysis) -> list[Place]:
    return [p for var in analysis.global_vars for p in leaves(var.name, var.type)]


def explain_table(analysis: Analysis) -> str:
    places = tracked_places(analysis)
    if not places:
        return "no tracked places\n"
    rows = [("path", "type", "elements")] + [(p.path, str(p.type), str(p.count)) for p in places]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}" for r in rows]
    total = sum(p.count for p in places)
    # Every tracked value counts, a loss or an activation as much as a weight: the
    # line says elements, not parameters, which a reader would take for weights only.
    noun = "place" if len(places) == 1 else "places"
    lines.append(f"{len(places)} tracked {noun} holding {total} {'element' if total == 1 else 'elements'} in all")
    return "\n".join(lines) + "\n"
