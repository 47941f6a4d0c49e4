"""The registry of the vocabulary: one entry (Op) per predeclared procedure and
function, and the device tape's records (TapeRecord), by name.

The family modules define their ops into it as they are imported
(micatool/compile/ops/__init__.py imports them all); every stage asks OPS and
TAPE by name. It imports nothing of the families, so they import it freely.
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
    """All the compiler knows of one operation: how the analyzer checks a call
    (check), how the call lowers to C on the host (lower) and with GPU operands
    (device, None for an op the GPU does not run), the kernels its device form
    launches (named as in ptx/ without the mica_ prefix and the _f32/_f64
    suffix), whether it records on the tape, and the device-tape records it
    makes with their forward and backward kernels."""

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
