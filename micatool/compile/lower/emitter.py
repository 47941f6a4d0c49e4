"""The emitter: the C lines of one function, its indentation, fresh names, and the
temporaries each statement declares and drops.

Every part of a function's lowering writes through it; it is the only one that
knows how the lines are kept.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..types import STREAM, Scalar, Type, storage_bytes
from .lines import Line


class Emitter:
    def __init__(self, ctype):
        self.ctype = ctype  # Mica type -> C type name, under the function's shape binding
        self.lines: list[Line] = []
        self.depth = 1
        self.at: int | None = None  # the Mica line being lowered, which each line records
        self.drops: list[str] = []  # what the current statement must release at its end
        self.declared = False  # the current statement declared a temporary
        self.counter = 0
        self.frame_bytes = 0  # the temporaries' storage, for the routine's stack check

    def line(self, text: str) -> None:
        self.lines.append(Line(self.depth, text, self.at))

    def nest(self, lines: list[Line]) -> None:
        """Lines lowered apart, written one level deeper: the inside of a block."""
        self.lines.extend(line._replace(depth=line.depth + 1) for line in lines)

    def fresh(self, prefix: str = "mica_t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def declare(self, t: Type, init: str | None = None) -> str:
        """A temporary C variable of Mica type t, initialised or zeroed."""
        name = self.fresh()
        self.line(f"{self.ctype(t)} {name} = {init if init is not None else self.zero(t)};")
        self.declared = True
        self.frame_bytes += storage_bytes(t)
        return name

    def declare_c(self, ctype: str, init: str) -> str:
        """A temporary of a C type no Mica type names (a pointer to a task's arguments)."""
        name = self.fresh()
        self.line(f"{ctype}{name} = {init};")
        self.declared = True
        return name

    def declare_uninitialized(self, t: Type) -> str:
        """A temporary that a kernel is about to fill completely."""
        name = self.fresh()
        self.line(f"{self.ctype(t)} {name};")
        self.declared = True
        self.frame_bytes += storage_bytes(t)
        return name

    def zero(self, t: Type) -> str:
        """C initializer of a zero value: scalars are numbers, a stream no stream, the rest (tracked
        scalars too) structs."""
        if t == STREAM:
            return "NULL"
        return "0" if isinstance(t, Scalar) and t.name != "string" else "{0}"

    @contextmanager
    def statement_scope(self):
        """Temporaries of one statement live in a C block and are dropped at its end."""
        outer = (self.lines, self.drops, self.declared)
        self.lines, self.drops, self.declared = [], [], False
        try:
            yield
        finally:
            inner, drops, declared = self.lines, self.drops, self.declared
            self.lines, self.drops, self.declared = outer
            if declared or drops:
                self.line("{")
                self.nest(inner)
                with self.indented():
                    for drop in drops:
                        self.line(drop)
                self.line("}")
            else:
                self.lines.extend(inner)

    @contextmanager
    def indented(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def hoisted(self, compute) -> str:
        """The C text compute() gives, computed with its temporaries released before
        the line that uses it (a condition: no exit or break can skip their drops)."""
        outer = (self.lines, self.drops, self.declared)
        self.lines, self.drops, self.declared = [], [], False
        text = compute()
        inner, drops, declared = self.lines, self.drops, self.declared
        self.lines, self.drops, self.declared = outer
        if not (declared or drops):
            self.lines.extend(inner)
            return text
        flag = self.fresh()
        self.line(f"bool {flag};")
        self.line("{")
        self.nest(inner)
        with self.indented():
            for line in [f"{flag} = {text};", *drops]:
                self.line(line)
        self.line("}")
        return flag
