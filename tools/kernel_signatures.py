"""Writes runtime_c/mica_kernel_signatures.h: every kernel's launch signature, read
from its PTX parameters (micatool.compile.ptx.signatures_header), for the C
runtime's device tape. Run it after changing a kernel's parameters in
ptx/*.ptx.j2 (tests/test_ptx.py fails until then): python tools/kernel_signatures.py
"""

from __future__ import annotations

from pathlib import Path

from micatool.compile import ptx

OUT = Path(__file__).resolve().parents[1] / "runtime_c" / "mica_kernel_signatures.h"

if __name__ == "__main__":
    OUT.write_text(ptx.signatures_header())
    print(f"wrote {OUT} ({len(ptx.KERNELS)} kernels)")
