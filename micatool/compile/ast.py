"""The Mica syntax tree: one dataclass per grammar form, each carrying its position.

descent.py builds these as it parses (and lark_parser.py, from lark, when it
must explain an error); nothing after the parser sees how.
The analyzer fills the annotation fields (ty, symbol, ...) declared with
compare=False, so two trees compare equal by their syntax alone.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from ..diagnostics import Pos


@dataclass(slots=True)  # a large program holds millions of nodes: no __dict__ each
class Node:
    # Where the node starts. Plain fields rather than a Pos: a Pos object per node
    # was a third of a large program's tree.
    line: int = field(compare=False)
    col: int = field(compare=False)

    @property
    def pos(self) -> Pos:
        return Pos(self.line, self.col)


# ---------------------------------------------------------------- type syntax


@dataclass(slots=True)
class NamedType(Node):
    name: str
    unit: Optional[str] = field(default=None, kw_only=True)  # `Tokens.Alphabet`: the unit that declares it


@dataclass(slots=True)
class ShapedType(Node):
    """vector[N] of T, matrix[R, C] of T, tensor[A, B, ...] of T."""

    constructor: str
    dims: list[Expr]
    element: TypeExpr


@dataclass(slots=True)
class DynamicShapedType(Node):
    """vector of T, matrix of T: the extents live in the value."""

    constructor: str
    element: TypeExpr


@dataclass(slots=True)
class StaticArrayType(Node):
    low: Expr
    high: Expr
    element: TypeExpr


@dataclass(slots=True)
class DynamicArrayType(Node):
    element: TypeExpr


@dataclass(slots=True)
class FieldDecl(Node):
    names: list[str]
    type: TypeExpr


@dataclass(slots=True)
class RecordType(Node):
    fields: list[FieldDecl]


@dataclass(slots=True)
class TrackedType(Node):
    inner: TypeExpr


@dataclass(slots=True)
class AddressType(Node):
    inner: TypeExpr


@dataclass(slots=True)
class OnGpuType(Node):
    inner: TypeExpr


TypeExpr = Any  # one of the classes above


# ---------------------------------------------------------------- expressions


@dataclass(slots=True)
class Expr(Node):
    ty: Any = field(default=None, compare=False, kw_only=True)
    folded: Any = field(default=None, compare=False, kw_only=True)  # value known at compile time


@dataclass(slots=True)
class IntLit(Expr):
    value: int


@dataclass(slots=True)
class FloatLit(Expr):
    text: str
    value: float


@dataclass(slots=True)
class StrLit(Expr):
    value: str


@dataclass(slots=True)
class BoolLit(Expr):
    value: bool


@dataclass(slots=True)
class Name(Expr):
    ident: str
    # `Tokens.Encode`: the unit that declares the name. The parser makes a unit's
    # qualified names Names, since it knows the file's uses clauses.
    unit: Optional[str] = field(default=None, kw_only=True)
    symbol: Any = field(default=None, compare=False, kw_only=True)


@dataclass(slots=True)
class Index(Expr):
    base: Expr
    indices: list[Expr]


@dataclass(slots=True)
class Field(Expr):
    base: Expr
    name: str


@dataclass(slots=True)
class Call(Expr):
    callee: Expr
    args: list[Expr]
    # what the analyzer resolved the callee to, and the shape binding of a
    # shape-generic routine at this call
    target: Any = field(default=None, compare=False, kw_only=True)
    binding: Any = field(default=None, compare=False, kw_only=True)


@dataclass(slots=True)
class Unary(Expr):
    op: str
    operand: Expr


@dataclass(slots=True)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr
    compared_as: Any = field(default=None, compare=False, kw_only=True)  # a numeric comparison's common type


@dataclass(slots=True)
class TensorLit(Expr):
    items: list[Expr]


@dataclass(slots=True)
class AddressArg(Expr):
    place: Expr


@dataclass(slots=True)
class FormatArg(Expr):
    value: Expr
    width: Expr
    decimals: Optional[Expr]


# ---------------------------------------------------------------- statements


@dataclass(slots=True)
class Stmt(Node):
    pass


@dataclass(slots=True)
class Assign(Stmt):
    target: Expr
    value: Expr


@dataclass(slots=True)
class CallStmt(Stmt):
    call: Expr  # a Call, or a bare Name of a procedure


@dataclass(slots=True)
class Compound(Stmt):
    body: list[Stmt]


@dataclass(slots=True)
class If(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Optional[Stmt]


@dataclass(slots=True)
class For(Stmt):
    var: Name
    start: Expr
    stop: Expr
    downward: bool
    body: Stmt


@dataclass(slots=True)
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass(slots=True)
class Repeat(Stmt):
    body: list[Stmt]
    cond: Expr


@dataclass(slots=True)
class Tape(Stmt):
    body: list[Stmt]
    end_pos: Pos = field(compare=False)


@dataclass(slots=True)
class Tasks(Stmt):
    body: list[Stmt]


@dataclass(slots=True)
class Spawn(Stmt):
    call: Expr  # a Call of a procedure, or a bare Name of one


@dataclass(slots=True)
class Break(Stmt):
    pass


@dataclass(slots=True)
class Continue(Stmt):
    pass


@dataclass(slots=True)
class Exit(Stmt):
    pass


@dataclass(slots=True)
class Empty(Stmt):
    pass


# ---------------------------------------------------------------- declarations


@dataclass(slots=True)
class ConstDecl(Node):
    name: str
    type: Optional[TypeExpr]
    value: Expr


@dataclass(slots=True)
class TypeDecl(Node):
    name: str
    type: TypeExpr


@dataclass(slots=True)
class VarDecl(Node):
    names: list[str]
    type: TypeExpr
    init: Optional[Expr]


@dataclass(slots=True)
class Param(Node):
    name: str
    type: TypeExpr
    by_address: bool


@dataclass(slots=True)
class Routine(Node):
    kind: str  # 'procedure' or 'function'
    name: str
    params: list[Param]
    result: Optional[TypeExpr]
    decls: list[Node]
    body: list[Stmt]


@dataclass(slots=True)
class Heading(Node):
    """A procedure's or function's heading in a unit's interface; its body is in the implementation."""

    kind: str  # 'procedure' or 'function'
    name: str
    params: list[Param]
    result: Optional[TypeExpr]


@dataclass(slots=True)
class Use(Node):
    """One name of a uses clause: a unit, where the file that uses it names it."""

    name: str


@dataclass(slots=True)
class Program(Node):
    name: str
    decls: list[Node]
    body: list[Stmt]
    uses: list[Use] = field(default_factory=list, kw_only=True)


@dataclass(slots=True)
class Unit(Node):
    """A unit (LANGUAGE.md §12): what its interface declares for other files, the
    implementation's bodies and private declarations, and its initialization."""

    name: str
    interface_uses: list[Use]
    interface: list[Node]  # constants, types, variables and Headings
    implementation_uses: list[Use]
    implementation: list[Node]
    initialization: list[Stmt]
    end_line: int = field(default=0, compare=False, kw_only=True)  # where its final `end.` stands

    @property
    def uses(self) -> list[Use]:
        return self.interface_uses + self.implementation_uses


def shift_lines(node: Node, lines: int) -> None:
    """Add `lines` to the line of every node under `node`, itself included (units.py
    gives each file of a program its own range of lines). A node two others share
    (the type of `m, v : matrix[M, N]`, one for both parameters) moves once."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        node.line += lines
        if isinstance(node, Tape):
            node.end_pos = Pos(node.end_pos.line + lines, node.end_pos.col)
        elif isinstance(node, Unit):
            node.end_line += lines
        for name in syntax_fields(type(node)):
            value = getattr(node, name)
            stack.extend(item for item in (value if isinstance(value, list) else [value]) if isinstance(item, Node))


def walk(node: Node) -> Iterator[Node]:
    """node and every node under it, in the order of the text (each before its parts),
    with a stack rather than recursion: a chain `a + b + c ...` nests as deep as it is
    long. A node's parts are looked at once it has been handed out, so a caller may
    replace them first."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        parts = []
        for name in syntax_fields(type(node)):
            value = getattr(node, name)
            parts.extend(item for item in (value if isinstance(value, list) else [value]) if isinstance(item, Node))
        stack.extend(reversed(parts))


@functools.cache
def syntax_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that hold syntax: annotations and positions compare=False."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.compare)


def left_chain(e: Binary) -> list[Binary]:
    """e and the binary nodes down its left operands, e first: `a + b * c - d` is
    -(+(a, *(b, c)), d), whose chain is the - and the +. A chain grows a level
    with every term, so a stage walks it with a loop, never a Python frame a level."""
    chain = [e]
    while chain[-1].left.__class__ is Binary:
        chain.append(chain[-1].left)
    return chain


def root_name(e: Expr) -> Name | None:
    """The variable a place is part of: `blocks` of `blocks[i].w`; None for a value."""
    while isinstance(e, Field | Index):
        e = e.base
    return e if isinstance(e, Name) else None


def place_text(e: Expr) -> str:
    """A place as messages name it: `blocks[...].w`."""
    if isinstance(e, Name):
        return e.ident
    if isinstance(e, Field):
        return f"{place_text(e.base)}.{e.name}"
    if isinstance(e, Index):
        return f"{place_text(e.base)}[...]"
    return "value"
