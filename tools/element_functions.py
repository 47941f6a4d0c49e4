"""Writes runtime_c/mica_element_functions.h: the runtime's lists of the
elementwise functions, made from their table
(micatool/compile/ops/element_functions.py). Run it after changing the table
(tests/test_ops.py fails until then):

    python tools/element_functions.py
"""

from __future__ import annotations

from pathlib import Path

from micatool.compile.ops import element_functions

OUT = Path(__file__).resolve().parents[1] / "runtime_c" / "mica_element_functions.h"

if __name__ == "__main__":
    OUT.write_text(element_functions.header())
    print(f"wrote {OUT} ({len(element_functions.FUNCTIONS)} functions)")
