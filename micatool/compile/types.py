"""Mica's types, as the analyzer resolves them from type syntax.

A static tensor's shape is a tuple of dimensions; a dimension is an int, or
the name of a shape variable inside a shape-generic routine. str() of a type
is the text diagnostics quote ('tracked matrix[2, 2] of float64').
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

Dim = Union[int, str]


class Type:
    pass


INTEGER_RANGES = {
    "integer": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int8": (-128, 127),
    "uint8": (0, 255),
}


@dataclass(frozen=True)
class Scalar(Type):
    name: str
    # What the name says, worked out once: the analyzer asks for every operand.
    is_integer: bool = field(init=False, compare=False, repr=False)
    is_float: bool = field(init=False, compare=False, repr=False)
    is_numeric: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        integer, float_ = self.name in INTEGER_RANGES, self.name in ("float32", "float64")
        object.__setattr__(self, "is_integer", integer)
        object.__setattr__(self, "is_float", float_)
        object.__setattr__(self, "is_numeric", integer or float_)

    def __str__(self) -> str:
        return self.name


INTEGER = Scalar("integer")
INT32 = Scalar("int32")
INT8 = Scalar("int8")
UINT8 = Scalar("uint8")
FLOAT32 = Scalar("float32")
FLOAT64 = Scalar("float64")
BOOLEAN = Scalar("boolean")
STRING = Scalar("string")

SCALARS = {t.name: t for t in (INTEGER, INT32, INT8, UINT8, FLOAT32, FLOAT64, BOOLEAN, STRING)}
SCALARS["int64"] = INTEGER


def format_dim(dim: Dim) -> str:
    return str(dim)


@dataclass(frozen=True)
class Tensor(Type):
    """A tensor whose shape is in the type (shape set) or in the value (shape None)."""

    element: Scalar
    shape: tuple[Dim, ...] | None
    dynamic_rank: int = 0  # rank of a dynamic tensor: 1 vector, 2 matrix
    on_gpu: bool = False

    @property
    def rank(self) -> int:
        return self.dynamic_rank if self.shape is None else len(self.shape)

    @property
    def is_dynamic(self) -> bool:
        return self.shape is None

    @property
    def is_concrete(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_shape(self, shape) -> Tensor:
        return Tensor(self.element, tuple(shape), 0, self.on_gpu)

    def __str__(self) -> str:
        place = " on gpu" if self.on_gpu else ""
        if self.shape is None:
            kind = "vector" if self.dynamic_rank == 1 else "matrix"
            return f"{kind} of {self.element}{place}"
        if not self.shape:
            return f"{self.element}{place}"  # a device scalar
        kind = {1: "vector", 2: "matrix"}.get(len(self.shape), "tensor")
        dims = ", ".join(format_dim(d) for d in self.shape)
        return f"{kind}[{dims}] of {self.element}{place}"


@dataclass(frozen=True)
class Array(Type):
    """array[low..high] of T, or a dynamic array (low and high None)."""

    element: Type
    low: int | None
    high: int | None

    @property
    def is_dynamic(self) -> bool:
        return self.low is None

    @property
    def length(self) -> int:
        return self.high - self.low + 1

    def __str__(self) -> str:
        if self.is_dynamic:
            return f"array of {self.element}"
        return f"array[{self.low}..{self.high}] of {self.element}"


@dataclass(frozen=True, eq=False)
class Record(Type):
    """Records are nominal: each declaration is its own type."""

    name: str
    fields: tuple[tuple[str, Type], ...]
    anonymous: bool = False  # `var r : record ... end`: named in C, not in messages

    def field(self, name: str) -> Type | None:
        for field_name, field_type in self.fields:
            if field_name == name:
                return field_type
        return None

    def __str__(self) -> str:
        if self.anonymous:
            return f"record ({', '.join(name for name, _ in self.fields)})"
        return self.name


@dataclass(frozen=True)
class Channel(Type):
    """A handle on a queue between tasks: copying it shares the one channel."""

    element: Type

    def __str__(self) -> str:
        return f"channel of {self.element}"


@dataclass(frozen=True)
class Tracked(Type):
    """A tracked place's type: the plain value plus the id of the node that made it."""

    inner: Type

    def __str__(self) -> str:
        return f"tracked {self.inner}"


@dataclass(frozen=True)
class Stream(Type):
    """An open file or a standard stream. It owns an OS resource, so it is never
    copied: it lives in a variable and is lent by `address`."""

    def __str__(self) -> str:
        return "stream"


STREAM = Stream()


@dataclass(frozen=True)
class Regex(Type):
    """A compiled pattern. It never changes, so copies share it: the runtime
    counts the places holding it, and the last one frees it."""

    def __str__(self) -> str:
        return "regex"


REGEX = Regex()


@dataclass(frozen=True)
class ErrorType(Type):
    """Stands for an expression that already has an error; silences follow-on errors."""

    def __str__(self) -> str:
        return "<error>"


@dataclass(frozen=True)
class VoidType(Type):
    """What a procedure call gives."""

    def __str__(self) -> str:
        return "no value"


ERROR = ErrorType()
VOID = VoidType()


SCALAR_BYTES = {"integer": 8, "int32": 4, "int8": 1, "uint8": 1, "float32": 4, "float64": 8, "boolean": 1, "string": 16}
HANDLE_BYTES = 8  # a stream, a regex or a channel is a pointer to what the runtime holds


def storage_bytes(t: Type) -> int:
    """About how many bytes a value of t holds in place (a dynamic value: its handle)."""
    t = plain(t)
    if isinstance(t, Scalar):
        return SCALAR_BYTES[t.name]
    if isinstance(t, Tensor):
        return t.count * SCALAR_BYTES[t.element.name] if t.is_concrete and not t.on_gpu else 24
    if isinstance(t, Array):
        return 16 if t.is_dynamic else t.length * storage_bytes(t.element)
    if isinstance(t, Record):
        return sum(storage_bytes(f) for _, f in t.fields)
    if t in (STREAM, REGEX) or isinstance(t, Channel):
        return HANDLE_BYTES
    return 0


def element_count(t: Type) -> int:
    """How many numbers a value of t holds: a tensor's elements, or 1."""
    p = plain(t)
    return p.count if isinstance(p, Tensor) else 1


def plain(t: Type) -> Type:
    """The type without its tracked wrapper."""
    return t.inner if isinstance(t, Tracked) else t


def is_tracked(t: Type) -> bool:
    return isinstance(t, Tracked)


def trackable(t: Type) -> bool:
    """May `tracked` hold a value of this type: a float scalar, or a static-shaped float tensor?"""
    return isinstance(t, Scalar) and t.is_float or isinstance(t, Tensor) and t.element.is_float and not t.is_dynamic


def has_tracked(t: Type) -> bool:
    """Does a value of this type hold tracked places somewhere inside?"""
    if isinstance(t, Tracked):
        return True
    if isinstance(t, Array):
        return has_tracked(t.element)
    if isinstance(t, Record):
        return any(has_tracked(ft) for _, ft in t.fields)
    return False


def holds_dynamic(t: Type) -> bool:
    """Does a value of t own storage that an assignment or a resize may replace?"""
    t = plain(t)
    if isinstance(t, Array):
        return t.is_dynamic or holds_dynamic(t.element)
    if isinstance(t, Tensor):
        return t.is_dynamic
    if isinstance(t, Record):
        return any(holds_dynamic(f) for _, f in t.fields)
    return False


def needs_drop(t: Type) -> bool:
    """Does a value of this type own heap storage (strings, dynamic arrays and tensors,
    compiled regexes) or an open stream?"""
    if t in (STRING, STREAM, REGEX):
        return True
    if isinstance(t, Tensor):
        return t.is_dynamic or t.on_gpu  # heap storage, or device storage
    if isinstance(t, Array):
        return t.is_dynamic or needs_drop(t.element)
    if isinstance(t, Record):
        return any(needs_drop(ft) for _, ft in t.fields)
    if isinstance(t, Tracked):
        return needs_drop(t.inner)
    return False


def element_of(t: Type) -> Scalar | None:
    """The scalar a value is made of: itself for scalars, the element for tensors."""
    t = plain(t)
    if isinstance(t, Scalar):
        return t
    if isinstance(t, Tensor):
        return t.element
    return None


def substitute(t: Type, binding: dict[str, int]) -> Type:
    """Replace shape variables by the sizes one call bound them to."""
    if isinstance(t, Tensor) and t.shape is not None:
        return t.with_shape(binding.get(d, d) if isinstance(d, str) else d for d in t.shape)
    if isinstance(t, Tracked):
        return Tracked(substitute(t.inner, binding))
    if isinstance(t, Array):
        return Array(substitute(t.element, binding), t.low, t.high)
    return t
