"""Targets and tiers: the names users type, and what each means to zig.

Takes a --target or --tier word, gives a Target (the zig triple, the Docker
platform) or the tier's compiler flags.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str  # x86_64-linux, aarch64-linux
    triple: str  # what zig calls it
    platform: str  # what Docker and OCI call it
    elf_machine: str  # what pyelftools and `file` call it
    link_flags: tuple = ("-static",)  # a fully static binary, unless the GPU flavour


TARGETS = {
    "x86_64-linux": Target("x86_64-linux", "x86_64-linux-musl", "linux/amd64", "EM_X86_64"),
    "aarch64-linux": Target("aarch64-linux", "aarch64-linux-musl", "linux/arm64", "EM_AARCH64"),
}


def gpu_flavour(target: Target) -> Target:
    """The same machine, linked against glibc (2.28 or newer) so it can dlopen libcuda."""
    triple = target.triple.replace("-musl", "-gnu.2.28")
    return Target(target.name + "-gpu", triple, target.platform, target.elf_machine, ("-ldl",))
ALIASES = {"amd64": "x86_64-linux", "x86_64": "x86_64-linux", "arm64": "aarch64-linux", "aarch64": "aarch64-linux",
           "linux/amd64": "x86_64-linux", "linux/arm64": "aarch64-linux"}


class TargetError(ValueError):
    pass


def native() -> Target:
    machine = platform.machine().lower()
    name = ALIASES.get(machine)
    if name is None:
        raise TargetError(f"this machine ({machine}) is not a Mica target; build with --target x86_64-linux or aarch64-linux")
    return TARGETS[name]


def resolve(word: str) -> Target:
    if word == "native":
        return native()
    name = ALIASES.get(word, word)
    if name not in TARGETS:
        known = ", ".join(sorted(TARGETS) + sorted(ALIASES) + ["native"])
        raise TargetError(f"unknown target '{word}'; choose one of: {known}")
    return TARGETS[name]


def resolve_all(words: str) -> list[Target]:
    """Comma-separated target words: `linux/amd64,linux/arm64`."""
    return [resolve(word.strip()) for word in words.split(",")]


TIERS = ("debug", "checked", "fast")

# Every tier: no contraction into fused multiply-adds, no fast-math, static musl,
# and no UBSan traps (a trap must name a Mica line, which UBSan cannot).
COMMON_FLAGS = [
    "-std=gnu11",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-fno-sanitize=undefined",
    "-fno-strict-aliasing",
    "-ffunction-sections",
    "-fdata-sections",
    "-fno-ident",
]

TIER_FLAGS = {
    "debug": ["-O0", "-DMICA_CHECKS=1"],
    "checked": ["-O2", "-DMICA_CHECKS=1"],
    "fast": ["-O2", "-DMICA_CHECKS=0", "-fwrapv", "-DNDEBUG"],
}

TIER_LINK_FLAGS = {
    "debug": [],
    "checked": ["-s"],
    "fast": ["-s"],
}


# `build --symbols`: a binary to profile, at any tier: its symbols and line
# tables kept, and frame pointers, so that perf and callgrind can walk its stack.
SYMBOL_FLAGS = ["-g", "-fno-omit-frame-pointer"]


def tier_flags(tier: str, symbols: bool = False) -> list[str]:
    if tier not in TIERS:
        raise TargetError(f"unknown tier '{tier}'; choose one of: {', '.join(TIERS)}")
    return COMMON_FLAGS + TIER_FLAGS[tier] + (SYMBOL_FLAGS if symbols else [])


def link_flags(tier: str, symbols: bool = False) -> list[str]:
    return [] if symbols else TIER_LINK_FLAGS[tier]
