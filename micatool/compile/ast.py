"""The Mica syntax tree: one dataclass per grammar form, each carrying its position.

parser.py builds these from lark's tree; nothing after the parser sees lark.
The analyzer fills the annotation fields (ty, symbol, ...) declared with
compare=False, so two trees compare equal by their syntax alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..diagnostics import Pos


@dataclass
class Node:
    pos: Pos = field(compare=False)


# ---------------------------------------------------------------- type syntax


@dataclass
class NamedType(Node):
    name: str


@dataclass
class ShapedType(Node):
    """vector[N] of T, matrix[R, C] of T, tensor[A, B, ...] of T."""

    constructor: str
    dims: list[Expr]
    element: TypeExpr


@dataclass
class DynamicShapedType(Node):
    """vector of T, matrix of T: the extents live in the value."""

    constructor: str
    element: TypeExpr


@dataclass
class StaticArrayType(Node):
    low: Expr
    high: Expr
    element: TypeExpr


@dataclass
class DynamicArrayType(Node):
    element: TypeExpr


@dataclass
class FieldDecl(Node):
    names: list[str]
    type: TypeExpr


@dataclass
class RecordType(Node):
    fields: list[FieldDecl]


@dataclass
class TrackedType(Node):
    inner: TypeExpr


@dataclass
class AddressType(Node):
    inner: TypeExpr


@dataclass
class OnGpuType(Node):
    inner: TypeExpr


TypeExpr = Any  # one of the classes above


# ---------------------------------------------------------------- expressions


@dataclass
class Expr(Node):
    ty: Any = field(default=None, compare=False, kw_only=True)
    folded: Any = field(default=None, compare=False, kw_only=True)  # value known at compile time


@dataclass
class IntLit(Expr):
    value: int


@dataclass
class FloatLit(Expr):
    text: str
    value: float


@dataclass
class StrLit(Expr):
    value: str


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class Name(Expr):
    ident: str
    symbol: Any = field(default=None, compare=False, kw_only=True)


@dataclass
class Index(Expr):
    base: Expr
    indices: list[Expr]


@dataclass
class Field(Expr):
    base: Expr
    name: str


@dataclass
class Call(Expr):
    callee: Expr
    args: list[Expr]
    # what the analyzer resolved the callee to, and the shape binding of a
    # shape-generic routine at this call
    target: Any = field(default=None, compare=False, kw_only=True)
    binding: Any = field(default=None, compare=False, kw_only=True)


@dataclass
class Unary(Expr):
    op: str
    operand: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr
    compared_as: Any = field(default=None, compare=False, kw_only=True)  # a numeric comparison's common type


@dataclass
class TensorLit(Expr):
    items: list[Expr]


@dataclass
class AddressArg(Expr):
    place: Expr


@dataclass
class FormatArg(Expr):
    value: Expr
    width: Expr
    decimals: Optional[Expr]


# ---------------------------------------------------------------- statements


@dataclass
class Stmt(Node):
    pass


@dataclass
class Assign(Stmt):
    target: Expr
    value: Expr


@dataclass
class CallStmt(Stmt):
    call: Expr  # a Call, or a bare Name of a procedure


@dataclass
class Compound(Stmt):
    body: list[Stmt]


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Optional[Stmt]


@dataclass
class For(Stmt):
    var: Name
    start: Expr
    stop: Expr
    downward: bool
    body: Stmt


@dataclass
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass
class Repeat(Stmt):
    body: list[Stmt]
    cond: Expr


@dataclass
class Tape(Stmt):
    body: list[Stmt]
    end_pos: Pos = field(compare=False)


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Empty(Stmt):
    pass


# ---------------------------------------------------------------- declarations


@dataclass
class ConstDecl(Node):
    name: str
    type: Optional[TypeExpr]
    value: Expr


@dataclass
class TypeDecl(Node):
    name: str
    type: TypeExpr


@dataclass
class VarDecl(Node):
    names: list[str]
    type: TypeExpr
    init: Optional[Expr]


@dataclass
class Param(Node):
    name: str
    type: TypeExpr
    by_address: bool


@dataclass
class Routine(Node):
    kind: str  # 'procedure' or 'function'
    name: str
    params: list[Param]
    result: Optional[TypeExpr]
    decls: list[Node]
    body: list[Stmt]


@dataclass
class Program(Node):
    name: str
    decls: list[Node]
    body: list[Stmt]


def place_text(e: Expr) -> str:
    """A place as messages name it: `blocks[...].w`."""
    if isinstance(e, Name):
        return e.ident
    if isinstance(e, Field):
        return f"{place_text(e.base)}.{e.name}"
    if isinstance(e, Index):
        return f"{place_text(e.base)}[...]"
    return "value"
