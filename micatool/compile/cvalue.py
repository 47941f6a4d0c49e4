"""CValue: what lowering an expression gives, and the dtype and shape words of the tape."""

from __future__ import annotations

from dataclasses import dataclass

from .types import Scalar, Type, plain


@dataclass
class CValue:
    text: str
    type: Type
    owned: bool = False  # a fresh heap-owning value: take it or drop it
    lvalue: bool = False  # names storage: & and .e apply
    node: bool = False  # a mica_node * recorded on the tape (inside a window)


def dtype_of(t: Type) -> str:
    element = plain(t) if isinstance(plain(t), Scalar) else plain(t).element
    return "MICA_F64" if element.name == "float64" else "MICA_F32"


def dims_literal(t: Type) -> tuple[int, str]:
    """(rank, C array of extents) of a static shape; a scalar has rank 0."""
    p = plain(t)
    if isinstance(p, Scalar):
        return 0, "NULL"
    return p.rank, "(int64_t[]){" + ", ".join(str(d) for d in p.shape) + "}"
