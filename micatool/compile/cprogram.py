"""The C program: what compilation gives the link stage.

Lowering makes one; the driver, the builder (link/build.py) and notebooks
read its fields. Nothing after lowering reads the generated C to learn
something about the program.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CProgram:
    c: str  # the C source; it includes runtime_c/mica.h and embeds the PTX
    debug_c: str  # the same with #line directives naming the Mica lines, for a build that keeps line tables
    ptx: str  # the PTX module of the kernels it launches; empty when it launches none
    uses_gpu: bool  # it names GPU values, so it is built as the glibc flavour (docs/gpu.md)
    kernels: tuple[str, ...]  # the kernels it launches, sorted
