"""The vocabulary: every predeclared procedure and function, one entry each.

An entry (Op) holds all the compiler knows of one operation, and the family
module that defines it holds the code, side by side: how the analyzer checks a
call (check), how the call lowers to C on the host (lower) and with GPU
operands (device, None for an op the GPU does not run), the kernels its device
form launches, whether it records on the tape, and the device-tape records it
makes with their forward and backward kernels. Kernels are named as in ptx/ without the mica_ prefix and the
_f32/_f64 suffix. Every stage asks OPS by name; tests/test_ops.py walks it.

Adding an op: write its checker, its lowering and (for the GPU) its device
lowering in the family module it belongs to, define() it there, and give its
kernels their templates in ptx/ (docs/architecture.md walks through one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class TapeRecord:
    """A node of the device tape: the kernels that compute it and those that take
    its gradient back. `each` records through the runtime's one generic
    elementwise node (mica_gt_each), handed the two kernels by name."""

    forward: list[str]
    backward: list[str]
    each: bool = False

    @property
    def kernels(self) -> list[str]:
        return self.forward + self.backward


@dataclass(frozen=True)
class Op:
    name: str
    check: Callable
    lower: Callable
    device: Callable | None = None
    kernels: list[str] = field(default_factory=list)
    tape: dict[str, TapeRecord] = field(default_factory=dict)
    records: bool = False  # inside a window its tracked result is a node of the tape, with a backward
    signature: str = ""  # how a call reads, `Sum(t) : scalar`: what an editor shows
    doc: str = ""  # one line on what it does


OPS: dict[str, Op] = {}
# Every device-tape record by the name lowering records it under: the ops', and the
# operators' (operators.py).
TAPE: dict[str, TapeRecord] = {}


def define(name: str, *, check, lower, device=None, kernels=(), tape=None, records=False, signature="",
           doc="") -> None:
    """Enter one op. A name with a ':' is a form another entry hands its call to
    (Max of one tensor is 'Max:reduce'); no program can spell it."""
    if name in OPS:
        raise ValueError(f"{name} is defined twice")
    OPS[name] = Op(name, check, lower, device, list(kernels), dict(tape or {}), records, signature, doc)
    record_on_tape(tape or {})


def record_on_tape(records: dict[str, TapeRecord]) -> None:
    for name, record in records.items():
        if name in TAPE:
            raise ValueError(f"the device-tape record {name} is defined twice")
        TAPE[name] = record


# The families, each of which defines its ops as it is imported.
from . import (  # noqa: E402
    channels,
    checkpoints,
    elementwise,
    extents,
    images,
    library,
    linalg,
    network,
    numbers,
    operators,
    optimizers,
    output,
    products,
    quantized,
    randomness,
    reductions,
    regexes,
    rows,
    sorting,
    streams,
    strings,
    tape,
    transfers,
)

__all__ = ["OPS", "TAPE", "Op", "TapeRecord", "define", "record_on_tape", "channels", "checkpoints", "elementwise",
           "extents", "images", "library", "linalg", "network", "numbers", "operators", "optimizers", "output",
           "products", "quantized", "randomness", "reductions", "regexes", "rows", "sorting", "streams", "strings", "tape",
           "transfers"]
