"""The vocabulary: every predeclared procedure and function, one entry each.

The registry (registry.py) holds the entries, OPS, and the device tape's
records, TAPE; each family module defines its ops into it, the code of each
op side by side (its checker, its host and device lowering, its kernels and
tape records), and this package imports every family so that all are
defined. Every stage asks OPS by name; tests/test_ops.py walks it.

Adding an op: write its checker, its lowering and (for the GPU) its device
lowering in the family module it belongs to, define() it there, and give its
kernels their templates in ptx/ (docs/architecture.md walks through one).
"""

from __future__ import annotations

from .registry import OPS, TAPE, Op, TapeRecord, define, record_on_tape

# The families, each of which defines its ops as it is imported.
from . import (
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
           "products", "quantized", "randomness", "reductions", "regexes", "rows", "sorting", "streams", "strings",
           "tape", "transfers"]
