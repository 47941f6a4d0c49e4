"""The registry of ops (micatool/compile/ops/) is whole: what one entry promises,
the rest of the project has.

- every kernel an op's device lowering or a device-tape record names renders
  from ptx/ for float32 and float64;
- every device-tape record has a backward;
- every op that records on the tape has a gradient-check case (test_gradcheck.py);
- every op with a device lowering runs in a device program (device_programs.py),
  and one without refuses GPU operands with 7005 at check time, so no program
  that checks can fail to lower on the device.
"""

from __future__ import annotations

import re

import pytest
import device_programs
from test_gradcheck import CASES

from micatool.compile import front_end, ops
from micatool.diagnostics import CompileError, SourceFile
from micatool.compile.ptx import KERNELS

TYPES = ("f32", "f64")
# Ops with a device side that launch no kernel of their own: the crossings, and
# the tape's verbs, whose launches are the records' backward kernels.
NO_KERNELS_OF_THEIR_OWN = {"ToDevice", "ToHost", "Backward", "Gradient"}


def test_every_device_kernel_renders_for_both_types():
    missing = [f"{op.name}: mica_{kernel}_{t}" for op in ops.OPS.values() for kernel in op.kernels for t in TYPES
               if f"mica_{kernel}_{t}" not in KERNELS]
    assert missing == []


def test_an_op_with_a_device_lowering_names_its_kernels():
    for op in ops.OPS.values():
        if op.device is not None and op.name not in NO_KERNELS_OF_THEIR_OWN:
            assert op.kernels, op.name
        if op.device is None:
            assert not op.kernels and not op.tape, op.name


def test_every_device_tape_record_has_a_backward_and_its_kernels():
    for name, record in ops.TAPE.items():
        assert record.forward and record.backward, name
        if record.each:  # the runtime's generic node takes exactly one of each
            assert len(record.forward) == len(record.backward) == 1, name
        missing = [f"mica_{k}_{t}" for k in record.kernels for t in TYPES if f"mica_{k}_{t}" not in KERNELS]
        assert missing == [], name


def test_every_recorded_op_has_a_gradient_check_case():
    ids = {case.id for case in CASES}
    recorded = {op.name.split(":")[0] for op in ops.OPS.values() if op.records}
    unchecked = sorted(name for name in recorded if not any(i == name or i.startswith(name + "-") for i in ids))
    assert unchecked == []


def test_every_op_with_a_device_lowering_runs_in_a_device_program():
    sources = "\n".join(text for text in vars(device_programs).values() if isinstance(text, str) and "begin" in text)
    unexercised = sorted(op.name for op in ops.OPS.values()
                         if op.device is not None and ":" not in op.name and not re.search(rf"\b{op.name}\(", sources))
    assert unexercised == []


HOST_ONLY_CALLS = [
    ("Normal", "Normal(address d, 0.0, 1.0)"),
    ("WriteLn", "WriteLn(d)"),
    ("Save", "Save('w.safetensors', d)"),
    ("SetShape", "SetShape(address d, 4)"),
    ("Copy", "Copy(d, 1, 2)"),
]


@pytest.mark.parametrize("name, call", HOST_ONLY_CALLS, ids=[name for name, _ in HOST_ONLY_CALLS])
def test_an_op_the_gpu_does_not_run_refuses_gpu_operands(name, call):
    assert ops.OPS[name].device is None
    text = f"program P;\nvar d : vector[4] of float32 on gpu;\nbegin\n    {call};\nend.\n"
    with pytest.raises(CompileError) as error:
        front_end(SourceFile("p.mica", text))
    codes = [d.code for d in error.value.diagnostics]
    assert len(codes) == 1 and codes[0] // 1000 in (4, 7), codes
