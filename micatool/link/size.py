"""Size report: a static binary in, its size by kind of section out.

Takes ELF files (read with pyelftools) and gives byte counts per kind:
`file` (the whole file), `text` (code), `rodata` (constants, unwind tables),
`data` (initialised writable data), `bss` (zeroed memory, no file bytes),
`mica_ptx` (the embedded PTX section `.mica_ptx`, 0 when absent) and `other`
(headers, section names, padding: file bytes no other column counts).

Budgets live in a TOML file (images/budgets.toml), bytes of the whole file
per example and target:

    [examples.hello]
    x86_64 = 20480
    aarch64 = 28672

`check_budgets` holds measured sizes against it and gives a table with the
budget (base), the size now and the delta; it fails when a size is over.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

PTX_SECTION = ".mica_ptx"
SIZE_KEYS = ("file", "text", "rodata", "data", "bss", "mica_ptx", "other")
TARGETS = ("x86_64", "aarch64")
TARGET_ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "x64": "x86_64", "AArch64": "aarch64"}
# lld reserves this to round RELRO up to a page; it is address space, not data
IGNORED_SECTIONS = {".relro_padding"}


class BudgetError(ValueError):
    """A budgets file that cannot be read, worded with its path."""


# ---------------------------------------------------------------- measuring


def section_sizes(path) -> dict:
    """Bytes per kind of section of the ELF file at `path` (see SIZE_KEYS)."""
    sizes = dict.fromkeys(SIZE_KEYS, 0)
    sizes["file"] = os.path.getsize(path)
    with open(path, "rb") as f:
        for section in ELFFile(f).iter_sections():
            kind = section_kind(section)
            if kind:
                sizes[kind] += section["sh_size"]
    in_file = sum(sizes[k] for k in ("text", "rodata", "data", "mica_ptx"))
    sizes["other"] = max(sizes["file"] - in_file, 0)
    return sizes


def section_kind(section) -> str | None:
    """Which column a section counts in; None for what is not loaded."""
    flags = section["sh_flags"]
    if section.name == PTX_SECTION:
        return "mica_ptx"
    if not flags & SH_FLAGS.SHF_ALLOC or section.name in IGNORED_SECTIONS:
        return None  # symbols, comments, debug info: "other" counts their bytes
    if section["sh_type"] == "SHT_NOBITS":
        return "bss"
    if flags & SH_FLAGS.SHF_EXECINSTR:
        return "text"
    if flags & SH_FLAGS.SHF_WRITE:
        return "data"
    return "rodata"


def machine(path) -> str:
    """The target name of an ELF file: 'x86_64' or 'aarch64'."""
    with open(path, "rb") as f:
        arch = ELFFile(f).get_machine_arch()
    return canonical_target(arch)


def canonical_target(name: str) -> str:
    name = TARGET_ALIASES.get(name, name)
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(TARGETS)}")
    return name


# ---------------------------------------------------------------- tables


def format_table(rows: list[dict]) -> str:
    """Rows of equal keys as aligned text; numbers right-aligned with commas."""
    if not rows:
        return ""
    columns = list(rows[0])
    cells = [[render(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    right = [all(aligns_right(row.get(c)) for row in rows) for c in columns]
    lines = [fit(columns, widths, right), fit(["-" * w for w in widths], widths, right)]
    lines += [fit(r, widths, right) for r in cells]
    return "\n".join(lines) + "\n"


def render(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def aligns_right(value) -> bool:
    """A count (an int, nothing, or digits with commas) stands right-aligned in its column."""
    if value is None or isinstance(value, int):
        return True
    return bool(re.fullmatch(r"[+-]?[\d,]+", str(value)))


def fit(cells, widths, right) -> str:
    parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
    return "  ".join(parts).rstrip()


# ---------------------------------------------------------------- budgets


def program_name(path: Path) -> str:
    """How tables and budgets name a program: its folder's name when the two agree
    (examples/gpt/gpt.mica is `gpt`), else folder/stem (examples/gpu/gpt.mica is `gpu/gpt`)."""
    folder = path.resolve().parent.name
    return path.stem if folder == path.stem else f"{folder}/{path.stem}"


def read_budgets(path, section: str = "examples") -> dict[tuple[str, str], int]:
    """{(example, target): bytes} from a budgets TOML file's `section`
    ("examples": binaries; "images": the GPU images' binary layer and whole image)."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise BudgetError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise BudgetError(f"{path}: {e}") from None
    budgets = {}
    for example, targets in doc.get(section, {}).items():
        if not isinstance(targets, dict):
            raise BudgetError(f"{path}: {section}.{example} must be a table of targets")
        for target, limit in targets.items():
            if target not in TARGETS or not isinstance(limit, int) or limit <= 0:
                raise BudgetError(f"{path}: {section}.{example}.{target} must be one of "
                                  f"{', '.join(TARGETS)} = a positive byte count")
            budgets[(example, target)] = limit
    return budgets


def check_budgets(measured: dict, budgets_path) -> tuple[bool, str]:
    """Hold {example: {target: bytes or section_sizes(...)}} against the budgets.

    Gives (every size within its budget, the table)."""
    rows = budget_rows(measured, budgets_path)
    return all(row["verdict"] != "OVER" for row in rows), format_table(rows)


def budget_rows(measured: dict, budgets_path, section: str = "examples") -> list[dict]:
    """One row per measured size: its budget, the size now, the delta and the
    verdict. A size with no budget is listed and does not fail; a budget with
    nothing measured is left out."""
    budgets = read_budgets(budgets_path, section)
    rows = []
    for example in sorted(measured):
        for target, size in sorted(measured[example].items()):
            target = canonical_target(target)
            now = size["file"] if isinstance(size, dict) else size
            rows.append(budget_row(example, target, budgets.get((example, target)), now))
    return rows


def budget_row(example: str, target: str, base: int | None, now: int) -> dict:
    if base is None:
        return {"example": example, "target": target, "base": None, "now": now,
                "delta": None, "verdict": "no budget"}
    delta = now - base
    return {"example": example, "target": target, "base": base, "now": now,
            "delta": f"{delta:+,}" if delta else "0",
            "verdict": "OVER" if delta > 0 else "ok"}
