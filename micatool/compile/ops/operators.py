"""The operators' records on the device tape: `+ - * /` and unary minus between
tracked GPU values. The operators' checking and lowering belong to the
expressions (analyzer/expressions.py, lower/expressions.py, lower/device.py, lower/tape.py), which
record under these names; `*` of two tensors elementwise is Mul's record.
"""

from __future__ import annotations

from .registry import TapeRecord, record_on_tape

record_on_tape({
    "add": TapeRecord(["add"], ["accumulate"]),
    "sub": TapeRecord(["sub"], ["accumulate", "deduct"]),
    "div": TapeRecord(["div"], ["div_back_a", "div_back_b"]),
    "add_rows": TapeRecord(["add_rows"], ["accumulate", "sum_rows"]),
    "sub_rows": TapeRecord(["sub_rows"], ["accumulate", "deduct", "sum_rows"]),
    "scale": TapeRecord(["scale"], ["scale_back"]),
    "divide": TapeRecord(["divide"], ["divide_back"]),
    "shift": TapeRecord(["shift"], ["accumulate"]),
    "neg": TapeRecord(["neg"], ["deduct"]),
    "matmul": TapeRecord(["gemm"], ["gemm"]),  # a product's gradients are products too
    "bmm": TapeRecord(["gemm"], ["gemm"]),
})
