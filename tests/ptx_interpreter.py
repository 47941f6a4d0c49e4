"""ptx_interpreter.py: runs Mica's PTX kernels thread by thread, without a GPU.

Takes the PTX text micatool.compile.ptx renders and a kernel's arguments; gives
what the kernel wrote to memory. It knows the subset of PTX that ptx/*.ptx.j2
writes and nothing more: a directive, an instruction, a type or a modifier
outside that subset is an InterpreterError naming it, never a guess.

The model:
  - registers hold bits (Python ints of their declared width; predicates 0/1);
    an instruction reads them as its type says, as the hardware does;
  - float arithmetic is numpy float32/float64 scalar arithmetic, so every
    add/sub/mul/div/sqrt (which must name .rn) rounds as IEEE round-to-nearest;
    fma.rn is computed exactly (fractions) and rounded once; no flush-to-zero;
  - `{ }` blocks scope their declarations (a name declared in an inner block
    hides the outer one), resolved once when the text is parsed;
  - global memory is a set of numpy-backed buffers, each at its own 4 GiB
    window of addresses; each thread has its own local memory; `.param`
    space carries kernel arguments and the arguments and results of calls;
    `.const` space holds the module's initialized integer arrays (read-only,
    addressed from 0 in declaration order, as `mov` of their name gives);
  - threads run one after another, to completion (the kernels never
    synchronize or share a value between threads).

`executed` counts every opcode the interpreter has run, for the test's report.
"""

from __future__ import annotations

import math
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np


class InterpreterError(Exception):
    """PTX outside the subset, or a kernel that does something undefined."""


executed: Counter = Counter()

WIDTH = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16,
         "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64}
INT_TYPES = {"b32", "u32", "s32", "b64", "u64", "s64"}
FLOAT_TYPES = {"f32", "f64"}
SPECIAL = {f"%{r}.{d}" for r in ("tid", "ntid", "ctaid", "nctaid") for d in "xyz"}
_PACK = {32: struct.Struct("<I"), 64: struct.Struct("<Q"), 8: struct.Struct("<B"), 16: struct.Struct("<H")}
RET = -1


def _mask(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def _signed(v: int, bits: int) -> int:
    v = _mask(v, bits)
    return v - (1 << bits) if v >> (bits - 1) else v


def to_float(bits: int, t: str):
    return np.uint32(bits).view(np.float32) if t == "f32" else np.uint64(bits).view(np.float64)


def from_float(x, t: str) -> int:
    return int(np.float32(x).view(np.uint32)) if t == "f32" else int(np.float64(x).view(np.uint64))


def _round_to_odd(x: Fraction) -> float:
    """The float64 next to x whose last bit is odd, or x itself when it is a
    float64: rounding that to float32 rounds x correctly (53 >= 2*24 + 2 bits)."""
    d = float(x)
    if Fraction(d) == x:
        return d
    if abs(Fraction(d)) > abs(x):  # rounded away from zero: truncate instead
        d = math.nextafter(d, 0.0)
    return struct.unpack("<d", struct.pack("<Q", struct.unpack("<Q", struct.pack("<d", d))[0] | 1))[0]


def fused_multiply_add(a, b, c, t: str):
    """IEEE fma of numpy scalars of type t: a*b + c rounded once, to nearest even."""
    kind = np.float32 if t == "f32" else np.float64
    if not (np.isfinite(a) and np.isfinite(b)) or a == 0 or b == 0:
        return kind(np.float64(a) * np.float64(b) + np.float64(c))  # the product is exact: one rounding, the add's
    if not np.isfinite(c):
        return c
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:
        return kind(0.0)  # a nonzero product cancelled exactly: +0
    try:
        near = _round_to_odd(exact) if t == "f32" else float(exact)
    except OverflowError:
        near = math.inf if exact > 0 else -math.inf
    with np.errstate(over="ignore"):
        return kind(near)


def _bits(x, t: str) -> int:
    if t in FLOAT_TYPES:
        return from_float(x, t)
    return _mask(int(x), WIDTH[t])


def _float_tests() -> dict:
    """setp's float comparisons: the plain ones are false when either side is nan
    (ordered), the ones ending in u are true then (unordered)."""
    plain = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal}
    tests = {}
    for name, op in plain.items():
        tests[name] = lambda x, y, op=op: bool(op(x, y)) and not (np.isnan(x) or np.isnan(y))
        tests[name + "u"] = lambda x, y, op=op: bool(op(x, y)) or bool(np.isnan(x) or np.isnan(y))
    tests["nan"] = lambda x, y: bool(np.isnan(x) or np.isnan(y))
    tests["num"] = lambda x, y: not (np.isnan(x) or np.isnan(y))
    return tests


_FLOAT_TESTS = _float_tests()


# ------------------------------------------------------------ memory


class Memory:
    """Global memory: buffer k lives at addresses (k+1) << 32 onward."""

    def __init__(self):
        self.buffers: list[bytearray] = []

    def alloc(self, data) -> int:
        self.buffers.append(bytearray(np.ascontiguousarray(data).tobytes()))
        return len(self.buffers) << 32

    def array(self, address: int, dtype) -> np.ndarray:
        return np.frombuffer(bytes(self.buffers[(address >> 32) - 1]), dtype=dtype).copy()

    def _where(self, address: int, size: int) -> tuple[bytearray, int]:
        k, offset = (address >> 32) - 1, address & 0xFFFFFFFF
        if not 0 <= k < len(self.buffers) or offset + size > len(self.buffers[k]) or offset % size:
            raise InterpreterError(f"global access of {size} bytes at {address:#x} is outside every buffer (or unaligned)")
        return self.buffers[k], offset

    def load(self, address: int, bits: int) -> int:
        buf, offset = self._where(address, bits // 8)
        return _PACK[bits].unpack_from(buf, offset)[0]

    def store(self, address: int, bits: int, value: int) -> None:
        buf, offset = self._where(address, bits // 8)
        _PACK[bits].pack_into(buf, offset, _mask(value, bits))


class Thread:
    def __init__(self, module: "Module", memory: Memory, ids: dict[str, int]):
        self.module, self.memory, self.ids = module, memory, ids
        self.local = bytearray()

    def local_load(self, address: int, bits: int) -> int:
        if address < 0 or address + bits // 8 > len(self.local) or address % (bits // 8):
            raise InterpreterError(f"local access at {address} is outside the frame")
        return _PACK[bits].unpack_from(self.local, address)[0]

    def local_store(self, address: int, bits: int, value: int) -> None:
        if address < 0 or address + bits // 8 > len(self.local) or address % (bits // 8):
            raise InterpreterError(f"local access at {address} is outside the frame")
        _PACK[bits].pack_into(self.local, address, _mask(value, bits))


class Frame:
    __slots__ = ("r", "p", "local_base", "thread")

    def __init__(self, thread: Thread, params: dict, local_size: int):
        self.r: dict = {}
        self.p: dict = params
        self.thread = thread
        self.local_base = len(thread.local)
        thread.local.extend(bytes(local_size))


# ------------------------------------------------------------ parsing


@dataclass
class Symbol:
    key: str
    kind: str  # reg, param, local, const
    type: str
    offset: int = 0  # local symbols: offset in the frame; const symbols: address in .const space


@dataclass
class Function:
    name: str
    entry: bool
    params: list[Symbol]
    result: Symbol | None
    code: list = field(default_factory=list)
    text: list = field(default_factory=list)  # the source of each instruction, for errors
    local_size: int = 0


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_HEAD = re.compile(
    r"(?P<vis>\.visible\s+)?\.(?P<kind>entry|func)\s*(?:\((?P<ret>[^)]*)\))?\s*(?P<name>\w+)\s*\((?P<params>[^)]*)\)\s*\{"
)
_ITEM = re.compile(r"\s*(?:(\{)|(\})|([$\w]+):|([^;{}]+);)")
_PARAM = re.compile(r"\.param\s+\.(\w+)\s+([%\w]+)$")
# A module-scope constant array: `.const .align A .u64 name[N] = { v0, ..., vN-1 };`
_CONST = re.compile(r"\.const\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(\w+)\s*\[(\d+)\]\s*=\s*\{([^}]*)\}\s*;")


class Module:
    def __init__(self, text: str):
        text = _COMMENTS.sub("", text)
        self.functions: dict[str, Function] = {}
        self.consts: dict[str, Symbol] = {}
        self.const_memory = bytearray()
        pos = 0
        while True:
            m = _HEAD.search(text, pos)
            head = text[pos : m.start() if m else len(text)]
            self._directives(_CONST.sub(self._const, head))
            if not m:
                break
            end = self._matching(text, m.end())
            self._function(m, text[m.end() : end])
            pos = end + 1

    @staticmethod
    def _directives(text: str) -> None:
        for line in text.strip().splitlines():
            words = line.split()
            if not words:
                continue
            if words[0] not in (".version", ".target", ".address_size"):
                raise InterpreterError(f"unknown module directive: {line.strip()!r}")

    def _const(self, m: re.Match) -> str:
        """Lays out one .const array (every element initialized, integers only) and
        declares its name for the functions after it; leaves nothing behind."""
        align, type_, name, count, values = m.groups()
        words = [v.strip() for v in values.split(",") if v.strip()]
        if type_ not in INT_TYPES or len(words) != int(count) or name in self.consts:
            raise InterpreterError(f"unsupported .const declaration: {m.group(0)[:80]!r}")
        if not all(re.fullmatch(r"-?(0[xX][0-9A-Fa-f]+|\d+)", w) for w in words):
            raise InterpreterError(f".const {name}: initializers must be integer literals")
        size, align = WIDTH[type_] // 8, int(align or WIDTH[type_] // 8)
        offset = (len(self.const_memory) + align - 1) // align * align
        self.const_memory.extend(bytes(offset - len(self.const_memory)))
        for w in words:
            self.const_memory.extend(_PACK[size * 8].pack(_mask(int(w, 0), size * 8)))
        self.consts[name] = Symbol(name, "const", type_, offset)
        return ""

    def const_load(self, address: int, bits: int) -> int:
        if address < 0 or address + bits // 8 > len(self.const_memory) or address % (bits // 8):
            raise InterpreterError(f".const access of {bits // 8} bytes at {address} is outside every .const array")
        return _PACK[bits].unpack_from(self.const_memory, address)[0]

    @staticmethod
    def _matching(text: str, start: int) -> int:
        depth = 1
        for k in range(start, len(text)):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    return k
        raise InterpreterError("unbalanced braces")

    def _function(self, m: re.Match, body: str) -> None:
        def param(text: str) -> Symbol:
            pm = _PARAM.match(text.strip())
            if not pm:
                raise InterpreterError(f"cannot read parameter {text.strip()!r}")
            return Symbol(pm.group(2), "param", pm.group(1))

        params = [param(p) for p in m.group("params").split(",") if p.strip()]
        result = param(m.group("ret")) if m.group("ret") else None
        fn = Function(m.group("name"), m.group("kind") == "entry", params, result)
        self.functions[fn.name] = fn
        _Compiler(self, fn).compile(body)


class _Operands:
    """A function body's names, in nested scopes (its registers, locals and
    parameters, and the module's constants), and its operands as getters of
    their bits and keys of the registers they write."""

    def __init__(self, module: Module, fn: Function):
        self.module, self.fn = module, fn
        outer = {p.key: p for p in fn.params}
        if fn.result:
            outer[fn.result.key] = fn.result
        self.scopes: list[dict[str, Symbol]] = [module.consts, outer]
        self.count = 0
        self.labels: dict[str, int] = {}
        self.pending: list[tuple[int, str]] = []

    # -------- scopes

    def declare(self, name: str, kind: str, type_: str, size: int = 0) -> Symbol:
        if name in self.scopes[-1]:
            raise InterpreterError(f"{self.fn.name}: {name} declared twice in one block")
        self.count += 1
        sym = Symbol(f"{name}#{self.count}", kind, type_)
        if kind == "local":
            align = 8
            sym.offset = (self.fn.local_size + align - 1) // align * align
            self.fn.local_size = sym.offset + size
        self.scopes[-1][name] = sym
        return sym

    def lookup(self, name: str) -> Symbol:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise InterpreterError(f"{self.fn.name}: {name} is not declared")

    @staticmethod
    def split_operands(rest: str) -> list[str]:
        out, depth, cur = [], 0, ""
        for ch in rest:
            if ch in "[(":
                depth += 1
            elif ch in "])":
                depth -= 1
            if ch == "," and depth == 0:
                out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        if cur.strip():
            out.append(cur.strip())
        return out

    def declaration(self, text: str) -> None:
        words = text.replace(",", " , ").split()
        if words[0] == ".reg":
            type_ = words[1][1:]
            if type_ not in WIDTH:
                raise InterpreterError(f"{self.fn.name}: unknown register type in {text!r}")
            for name in " ".join(words[2:]).split(","):
                name = name.strip()
                if not re.fullmatch(r"%?[A-Za-z_$][\w$]*", name):
                    raise InterpreterError(f"{self.fn.name}: cannot declare {name!r} ({text!r})")
                self.declare(name, "reg", type_)
        elif words[0] == ".local":
            m = re.fullmatch(r"\.local (?:\.align \d+ )?\.b8 ([%\w]+)\[(\d+)\]", text)
            if not m:
                raise InterpreterError(f"{self.fn.name}: cannot read {text!r}")
            self.declare(m.group(1), "local", "b8", int(m.group(2)))
        elif words[0] == ".param":
            m = re.fullmatch(r"\.param \.(\w+) ([%\w]+)", text)
            if not m:
                raise InterpreterError(f"{self.fn.name}: cannot read {text!r}")
            self.declare(m.group(2), "param", m.group(1))
        else:
            raise InterpreterError(f"{self.fn.name}: unknown directive {text!r}")

    # -------- operands

    def reg(self, text: str) -> str:
        sym = self.lookup(text)
        if sym.kind != "reg":
            raise InterpreterError(f"{self.fn.name}: {text} is not a register")
        return sym.key

    def source(self, text: str, t: str):
        """A getter f -> bits for a source operand read as type t."""
        if text in SPECIAL:
            kind, dim = text[1:].split(".")
            return lambda f, name=text[1:]: f.thread.ids[name]
        if re.fullmatch(r"0[fF][0-9A-Fa-f]{8}", text):
            if t != "f32" and t != "b32":
                raise InterpreterError(f"{self.fn.name}: f32 literal {text} used as {t}")
            v = int(text[2:], 16)
            return lambda f: v
        if re.fullmatch(r"0[dD][0-9A-Fa-f]{16}", text):
            if t != "f64" and t != "b64":
                raise InterpreterError(f"{self.fn.name}: f64 literal {text} used as {t}")
            v = int(text[2:], 16)
            return lambda f: v
        if re.fullmatch(r"-?(0[xX][0-9A-Fa-f]+|\d+)", text):
            if t in FLOAT_TYPES:
                raise InterpreterError(f"{self.fn.name}: integer literal {text} used as {t}")
            v = _mask(int(text, 0), WIDTH[t])
            return lambda f: v
        sym = self.lookup(text)
        if sym.kind == "reg":
            if (t == "pred") != (sym.type == "pred") or WIDTH[sym.type] != WIDTH[t]:
                raise InterpreterError(f"{self.fn.name}: {text} (.{sym.type}) used as .{t}")
            key = sym.key
            return lambda f: f.r[key]
        if sym.kind == "local":
            offset = sym.offset
            return lambda f: f.local_base + offset
        if sym.kind == "const":  # its address in .const space
            offset = sym.offset
            return lambda f: offset
        raise InterpreterError(f"{self.fn.name}: cannot use {text} as a value")

    def dest(self, text: str, t: str) -> str:
        sym = self.lookup(text)
        if sym.kind != "reg":
            raise InterpreterError(f"{self.fn.name}: {text} is not a register")
        if WIDTH[sym.type] != WIDTH[t]:
            raise InterpreterError(f"{self.fn.name}: {text} (.{sym.type}) written as .{t}")
        return sym.key

    def address(self, text: str):
        """[base] or [base+offset] -> (symbol or None, getter of the address)."""
        m = re.fullmatch(r"\[\s*([%$\w]+)\s*(?:\+\s*(-?\d+))?\s*\]", text)
        if not m:
            raise InterpreterError(f"{self.fn.name}: cannot read address {text!r}")
        sym = self.lookup(m.group(1))
        offset = int(m.group(2) or 0)
        if sym.kind == "reg":
            key = sym.key
            return None, (lambda f: f.r[key] + offset)
        if sym.kind == "local":
            at = sym.offset + offset
            return sym, (lambda f: f.local_base + at)
        if sym.kind == "const":
            at = sym.offset + offset
            return sym, (lambda f: at)
        if offset:
            raise InterpreterError(f"{self.fn.name}: offset into a parameter: {text}")
        return sym, None

    def expect(self, mods: list[str], allowed: list[set], text: str) -> None:
        if len(mods) != len(allowed) or any(m not in a for m, a in zip(mods, allowed)):
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")

    def arity(self, ops: list[str], n: int, text: str) -> None:
        if len(ops) != n:
            raise InterpreterError(f"{self.fn.name}: {text!r} needs {n} operands")


class _Instructions(_Operands):
    """The instructions, one method each: op_NAME(mods, operands, text, guard)
    gives a closure f -> the next pc (None: the one after), or a branch to
    resolve once the labels are known."""

    def _arith(self, name, mods, ops, text):
        """add sub mul div rem min max and or xor shl shr, integer or float."""
        t = mods[-1]
        self.arity(ops, 3, text)
        if t in FLOAT_TYPES:
            if name not in ("add", "sub", "mul", "div") or mods != ["rn", t]:
                raise InterpreterError(f"{self.fn.name}: {text!r}: float arithmetic must be add/sub/mul/div.rn")
            fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[name]
            d, a, b = self.dest(ops[0], t), self.source(ops[1], t), self.source(ops[2], t)
            conv = to_float
            back = from_float

            def run(f):
                f.r[d] = back(fn(conv(a(f), t), conv(b(f), t)), t)

            return run
        # integer forms
        wide = high = False
        if name == "mul":
            if mods[0] == "wide" and t in ("u32", "s32"):
                wide = True
            elif mods[0] == "hi" and t in ("u32", "s32", "u64", "s64"):
                high = True  # the upper half of the double-width product
            elif mods[0] != "lo":
                raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
            mods = mods[1:]
        if mods != [t] or t not in INT_TYPES:
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
        w = WIDTH[t]
        signed = t[0] == "s"
        out_t = ("s64" if signed else "u64") if wide else t
        d = self.dest(ops[0], out_t)
        a = self.source(ops[1], t)
        b = self.source(ops[2], "u32" if name in ("shl", "shr") else t)
        read = (lambda v: _signed(v, w)) if signed else (lambda v: _mask(v, w))
        ow = WIDTH[out_t]

        def trunc_div(x, y):
            if y == 0:
                raise InterpreterError(f"integer division by zero in {text!r}")
            q = abs(x) // abs(y)
            return q if (x >= 0) == (y >= 0) else -q

        ops_int = {
            "add": lambda x, y: x + y,
            "sub": lambda x, y: x - y,
            "mul": (lambda x, y: (x * y) >> w) if high else (lambda x, y: x * y),
            "div": trunc_div,
            "rem": lambda x, y: x - y * trunc_div(x, y),
            "min": min,
            "max": max,
            "shl": lambda x, y: x << min(y, w),
            "shr": lambda x, y: x >> min(y, w),
        }
        if name not in ops_int:
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
        op = ops_int[name]
        if name in ("shl", "shr"):
            read_b = lambda v: _mask(v, 32)  # noqa: E731
            read_a = (lambda v: _signed(v, w)) if (name == "shr" and t[0] == "s") else (lambda v: _mask(v, w))
        else:
            read_a = read_b = read

        def run(f):
            f.r[d] = _mask(op(read_a(a(f)), read_b(b(f))), ow)

        return run

    def op_add(self, mods, ops, text, guard):
        return self._arith("add", mods, ops, text)

    def op_sub(self, mods, ops, text, guard):
        return self._arith("sub", mods, ops, text)

    def op_mul(self, mods, ops, text, guard):
        return self._arith("mul", mods, ops, text)

    def op_div(self, mods, ops, text, guard):
        return self._arith("div", mods, ops, text)

    def op_fma(self, mods, ops, text, guard):
        self.expect(mods, [{"rn"}, FLOAT_TYPES], text)
        t = mods[1]
        self.arity(ops, 4, text)
        d, a, b, c = self.dest(ops[0], t), self.source(ops[1], t), self.source(ops[2], t), self.source(ops[3], t)

        def run(f):
            f.r[d] = from_float(fused_multiply_add(to_float(a(f), t), to_float(b(f), t), to_float(c(f), t), t), t)

        return run

    def op_rem(self, mods, ops, text, guard):
        return self._arith("rem", mods, ops, text)

    def op_min(self, mods, ops, text, guard):
        self.expect(mods, [{"s64", "s32", "u64", "u32"}], text)
        return self._arith("min", mods, ops, text)

    def op_max(self, mods, ops, text, guard):
        self.expect(mods, [{"s64", "s32", "u64", "u32"}], text)
        return self._arith("max", mods, ops, text)

    def op_shl(self, mods, ops, text, guard):
        self.expect(mods, [{"b32", "b64"}], text)
        return self._arith("shl", mods, ops, text)

    def op_shr(self, mods, ops, text, guard):
        self.expect(mods, [{"b32", "b64", "u32", "u64", "s32", "s64"}], text)
        return self._arith("shr", mods, ops, text)

    def op_and(self, mods, ops, text, guard):
        return self._logic("and", mods, ops, text)

    def op_or(self, mods, ops, text, guard):
        return self._logic("or", mods, ops, text)

    def op_xor(self, mods, ops, text, guard):
        return self._logic("xor", mods, ops, text)

    def _logic(self, name, mods, ops, text):
        self.expect(mods, [{"b32", "b64", "pred"}], text)
        t = mods[0]
        self.arity(ops, 3, text)
        d, a, b = self.dest(ops[0], t), self.source(ops[1], t), self.source(ops[2], t)
        if name == "and":
            return lambda f: f.r.__setitem__(d, a(f) & b(f))
        if name == "xor":
            return lambda f: f.r.__setitem__(d, a(f) ^ b(f))
        return lambda f: f.r.__setitem__(d, a(f) | b(f))

    def op_not(self, mods, ops, text, guard):
        """Every bit inverted (a predicate: its negation)."""
        self.expect(mods, [{"b32", "b64", "pred"}], text)
        t = mods[0]
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], t), self.source(ops[1], t)
        ones = (1 << WIDTH[t]) - 1
        return lambda f: f.r.__setitem__(d, a(f) ^ ones)

    def op_clz(self, mods, ops, text, guard):
        """The number of leading zero bits (the width for 0), into a .u32."""
        self.expect(mods, [{"b32", "b64"}], text)
        w = WIDTH[mods[0]]
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], "u32"), self.source(ops[1], mods[0])
        return lambda f: f.r.__setitem__(d, w - _mask(a(f), w).bit_length())

    def op_neg(self, mods, ops, text, guard):
        return self._sign("neg", mods, ops, text)

    def op_abs(self, mods, ops, text, guard):
        return self._sign("abs", mods, ops, text)

    def _sign(self, name, mods, ops, text):
        """neg/abs of a float flip/clear the sign bit (exact); no .ftz."""
        self.expect(mods, [{"f32", "f64", "s64", "s32"}], text)
        t = mods[0]
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], t), self.source(ops[1], t)
        w = WIDTH[t]
        if t in FLOAT_TYPES:
            sign = 1 << (w - 1)
            if name == "neg":
                return lambda f: f.r.__setitem__(d, a(f) ^ sign)
            return lambda f: f.r.__setitem__(d, a(f) & ~sign & ((1 << w) - 1))
        if name == "neg":
            return lambda f: f.r.__setitem__(d, _mask(-_signed(a(f), w), w))
        return lambda f: f.r.__setitem__(d, _mask(abs(_signed(a(f), w)), w))

    def op_sqrt(self, mods, ops, text, guard):
        self.expect(mods, [{"rn"}, {"f32", "f64"}], text)
        t = mods[1]
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], t), self.source(ops[1], t)
        return lambda f: f.r.__setitem__(d, from_float(np.sqrt(to_float(a(f), t)), t))

    def op_setp(self, mods, ops, text, guard):
        if len(mods) != 2:
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
        cmp, t = mods
        self.arity(ops, 3, text)
        d = self.dest(ops[0], "pred")
        a, b = self.source(ops[1], t), self.source(ops[2], t)
        if t in FLOAT_TYPES:
            test = _FLOAT_TESTS.get(cmp)
            if test is None:
                raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
            return lambda f: f.r.__setitem__(d, int(test(to_float(a(f), t), to_float(b(f), t))))
        if t not in INT_TYPES:
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
        w = WIDTH[t]
        read = (lambda v: _signed(v, w)) if t[0] == "s" else (lambda v: _mask(v, w))
        compare = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
                   "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
        if cmp not in compare or (t[0] == "b" and cmp not in ("eq", "ne")):
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
        c = compare[cmp]
        return lambda f: f.r.__setitem__(d, int(c(read(a(f)), read(b(f)))))

    def op_selp(self, mods, ops, text, guard):
        self.expect(mods, [{"f32", "f64", "s64", "u64", "s32", "u32", "b32", "b64"}], text)
        t = mods[0]
        self.arity(ops, 4, text)
        d, a, b, p = self.dest(ops[0], t), self.source(ops[1], t), self.source(ops[2], t), self.source(ops[3], "pred")
        return lambda f: f.r.__setitem__(d, a(f) if p(f) else b(f))

    def op_mov(self, mods, ops, text, guard):
        self.expect(mods, [{"f32", "f64", "s64", "u64", "s32", "u32", "b32", "b64", "pred"}], text)
        t = mods[0]
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], t), self.source(ops[1], t)
        w = WIDTH[t]
        return lambda f: f.r.__setitem__(d, _mask(a(f), w))

    def op_cvta(self, mods, ops, text, guard):
        self.expect(mods, [{"to"}, {"global"}, {"u64"}], text)
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], "u64"), self.source(ops[1], "u64")
        return lambda f: f.r.__setitem__(d, a(f))

    def op_cvt(self, mods, ops, text, guard):
        rnd = None
        if mods and mods[0] in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"):
            rnd, mods = mods[0], mods[1:]
        if len(mods) != 2:
            raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")
        dt, st = mods
        self.arity(ops, 2, text)
        d, a = self.dest(ops[0], dt), self.source(ops[1], st)
        if dt in FLOAT_TYPES and st in FLOAT_TYPES:
            if dt == "f32" and st == "f64" and rnd == "rn":
                return lambda f: f.r.__setitem__(d, from_float(np.float32(to_float(a(f), "f64")), "f32"))
            if dt == "f64" and st == "f32" and rnd is None:
                return lambda f: f.r.__setitem__(d, from_float(np.float64(to_float(a(f), "f32")), "f64"))
        elif dt in FLOAT_TYPES and st in INT_TYPES and st[0] in "su" and rnd == "rn":
            # numpy converts a 64-bit integer to float32 directly, rounding once
            w = WIDTH[st]
            integer = (lambda v: np.int64(_signed(v, w))) if st[0] == "s" else (lambda v: np.uint64(_mask(v, w)))
            make = np.float32 if dt == "f32" else np.float64
            return lambda f: f.r.__setitem__(d, from_float(make(integer(a(f))), dt))
        elif dt == "s64" and st == "f64" and rnd == "rni":
            # to the nearest integer, halves to even (np.rint), saturating; nan gives 0
            lo, hi = -(1 << 63), (1 << 63) - 1

            def run(f):
                x = to_float(a(f), st)
                v = 0 if np.isnan(x) else max(lo, min(hi, int(np.rint(x)) if np.isfinite(x) else (hi if x > 0 else lo)))
                f.r[d] = _mask(v, 64)

            return run
        elif dt in INT_TYPES and st in FLOAT_TYPES and rnd == "rzi" and dt[0] == "s":
            w = WIDTH[dt]
            lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1

            def run(f):
                x = to_float(a(f), st)
                v = 0 if np.isnan(x) else max(lo, min(hi, int(np.trunc(x)) if np.isfinite(x) else (hi if x > 0 else lo)))
                f.r[d] = _mask(v, w)

            return run
        elif dt in INT_TYPES and st in INT_TYPES and rnd is None:
            ws, wd = WIDTH[st], WIDTH[dt]
            read = (lambda v: _signed(v, ws)) if st[0] == "s" else (lambda v: _mask(v, ws))
            return lambda f: f.r.__setitem__(d, _mask(read(a(f)), wd))
        raise InterpreterError(f"{self.fn.name}: unsupported form {text!r}")

    def op_ld(self, mods, ops, text, guard):
        self.expect(mods, [{"global", "local", "param", "const"},
                           {"f32", "f64", "s64", "u64", "s32", "u32", "b32", "b64", "s8", "u8"}], text)
        space, t = mods
        self.arity(ops, 2, text)
        sym, at = self.address(ops[1])
        bits = WIDTH[t]
        if bits == 8:  # a byte into a 32-bit register, sign- or zero-extended by its type
            if space != "global" or sym is not None:
                raise InterpreterError(f"{self.fn.name}: {text!r}: bytes are loaded from global memory only")
            d = self.dest(ops[0], "u32")
            extend = (lambda v: _mask(_signed(v, 8), 32)) if t == "s8" else (lambda v: v)
            return lambda f: f.r.__setitem__(d, extend(f.thread.memory.load(at(f), 8)))
        d = self.dest(ops[0], t)
        if space == "global":
            if sym is not None:
                raise InterpreterError(f"{self.fn.name}: {text!r}: global address from a symbol")
            return lambda f: f.r.__setitem__(d, f.thread.memory.load(at(f), bits))
        if space == "const":
            if sym is not None and sym.kind != "const":
                raise InterpreterError(f"{self.fn.name}: {text!r}: not a .const address")
            module = self.module
            return lambda f: f.r.__setitem__(d, module.const_load(at(f), bits))
        if space == "local":
            if sym is not None and sym.kind != "local":
                raise InterpreterError(f"{self.fn.name}: {text!r}: not a local address")
            return lambda f: f.r.__setitem__(d, f.thread.local_load(at(f), bits))
        if sym is None or sym.kind != "param" or WIDTH[sym.type] != bits:
            raise InterpreterError(f"{self.fn.name}: {text!r}: not a parameter of that width")
        key = sym.key

        def run(f):
            if key not in f.p:
                raise InterpreterError(f"{text!r}: parameter read before it was written")
            f.r[d] = f.p[key]

        return run

    def op_st(self, mods, ops, text, guard):
        self.expect(mods, [{"global", "local", "param"},
                           {"f32", "f64", "s64", "u64", "s32", "u32", "b32", "b64", "u8"}], text)
        space, t = mods
        self.arity(ops, 2, text)
        sym, at = self.address(ops[0])
        bits = WIDTH[t]
        if bits == 8:  # the low byte of a 32-bit register
            if space != "global" or sym is not None:
                raise InterpreterError(f"{self.fn.name}: {text!r}: bytes are stored to global memory only")
            byte = self.source(ops[1], "u32")
            return lambda f: f.thread.memory.store(at(f), 8, byte(f))
        v = self.source(ops[1], t)
        if space == "global":
            if sym is not None:
                raise InterpreterError(f"{self.fn.name}: {text!r}: global address from a symbol")
            return lambda f: f.thread.memory.store(at(f), bits, v(f))
        if space == "local":
            if sym is not None and sym.kind != "local":
                raise InterpreterError(f"{self.fn.name}: {text!r}: not a local address")
            return lambda f: f.thread.local_store(at(f), bits, v(f))
        if sym is None or sym.kind != "param" or WIDTH[sym.type] != bits:
            raise InterpreterError(f"{self.fn.name}: {text!r}: not a parameter of that width")
        key = sym.key
        return lambda f: f.p.__setitem__(key, _mask(v(f), bits))

    def op_dp4a(self, mods, ops, text, guard):
        """d = c + the sum of the four byte products of a and b, each byte signed
        or unsigned by its operand's type, in 32 bits (wrapping, as the hardware)."""
        self.expect(mods, [{"s32", "u32"}, {"s32"}], text)
        self.arity(ops, 4, text)
        d, a, b, c = self.dest(ops[0], "s32"), self.source(ops[1], "u32"), self.source(ops[2], "u32"), \
            self.source(ops[3], "s32")
        byte_a = (lambda v: _signed(v, 8)) if mods[0] == "s32" else (lambda v: _mask(v, 8))

        def run(f):
            x, y = a(f), b(f)
            total = sum(byte_a(x >> (8 * t)) * _signed(y >> (8 * t), 8) for t in range(4))
            f.r[d] = _mask(_signed(c(f), 32) + total, 32)

        return run

    def op_bra(self, mods, ops, text, guard):
        self.expect(mods, [{"uni"}] if mods else [], text)
        self.arity(ops, 1, text)
        self.pending.append((len(self.fn.code), ops[0]))
        return ("branch", guard, ops[0])

    def op_ret(self, mods, ops, text, guard):
        self.expect(mods, [], text)
        self.arity(ops, 0, text)
        return lambda f: RET

    op_exit = op_ret

    def op_call(self, mods, ops, text, guard):
        self.expect(mods, [{"uni"}] if mods else [], text)
        m = re.fullmatch(r"\(\s*([%\w]+)\s*\)", ops[0]) if len(ops) == 3 else None
        a = re.fullmatch(r"\(\s*([%\w]+(?:\s*,\s*[%\w]+)*)\s*\)", ops[2]) if m else None
        if not (m and a):
            raise InterpreterError(f"{self.fn.name}: unsupported call {text!r}")
        result = self.lookup(m.group(1))
        args = [self.lookup(x.strip()) for x in a.group(1).split(",")]
        if result.kind != "param" or any(x.kind != "param" for x in args):
            raise InterpreterError(f"{self.fn.name}: call operands must be .param: {text!r}")
        callee_name = ops[1]
        module = self.module

        def run(f):
            callee = module.functions.get(callee_name)
            if callee is None or callee.entry:
                raise InterpreterError(f"call of {callee_name}, which is no function here")
            if len(callee.params) != len(args) or callee.result is None:
                raise InterpreterError(f"call of {callee_name} with the wrong parameters")
            frame = Frame(f.thread, {p.key: f.p[x.key] for p, x in zip(callee.params, args)}, callee.local_size)
            execute(callee, frame)
            f.p[result.key] = frame.p[callee.result.key]

        return run


class _Compiler(_Instructions):
    """Turns a function body into closures, one per instruction."""

    def compile(self, body: str) -> None:
        pos = 0
        body = body.rstrip()
        while pos < len(body):
            m = _ITEM.match(body, pos)
            if not m or m.end() == pos:
                raise InterpreterError(f"{self.fn.name}: cannot read {body[pos:pos + 60]!r}")
            pos = m.end()
            open_, close, label, stmt = m.groups()
            if open_:
                self.scopes.append({})
            elif close:
                self.scopes.pop()
                if len(self.scopes) < 2:
                    raise InterpreterError(f"{self.fn.name}: unbalanced braces")
            elif label:
                if label in self.labels:
                    raise InterpreterError(f"{self.fn.name}: label {label} defined twice")
                self.labels[label] = len(self.fn.code)
            else:
                self.statement(" ".join(stmt.split()))
        for at, label in self.pending:
            if label not in self.labels:
                raise InterpreterError(f"{self.fn.name}: no label {label}")
        self.fn.code = [self._resolve(op) for op in self.fn.code]

    def _resolve(self, op):
        if isinstance(op, tuple) and op[0] == "branch":
            _, guard, label = op
            target = self.labels[label]
            if guard is None:
                return lambda f: (executed.update(("bra",)), target)[1]
            key, skip = guard
            return lambda f: (executed.update(("bra",)), None if f.r[key] == skip else target)[1]
        return op

    def statement(self, text: str) -> None:
        if text.startswith("."):
            self.declaration(text)
            return
        guard = None
        if text.startswith("@"):
            g, text = text.split(None, 1)
            negate = g.startswith("@!")
            sym = self.lookup(g[2:] if negate else g[1:])
            guard = (sym.key, 1 if negate else 0)  # skip when the predicate equals this
        opcode, _, rest = text.partition(" ")
        operands = self.split_operands(rest)
        base = opcode.split(".")[0]
        handler = getattr(self, "op_" + base, None)
        if handler is None:
            raise InterpreterError(f"{self.fn.name}: unknown instruction {opcode!r} in {text!r}")
        run = handler(opcode.split(".")[1:], operands, text, guard)
        if isinstance(run, tuple):  # a branch, resolved once labels are known
            self.fn.code.append(run)
            self.fn.text.append(text)
            return
        executed_key = opcode

        def counted(f, run=run, key=executed_key):
            executed[key] += 1
            return run(f)

        if guard is not None:
            gkey, skip = guard

            def guarded(f, run=counted, gkey=gkey, skip=skip):
                if f.r[gkey] == skip:
                    return None
                return run(f)

            self.fn.code.append(guarded)
        else:
            self.fn.code.append(counted)
        self.fn.text.append(text)


# ------------------------------------------------------------ running

STEP_LIMIT = 10_000_000


def execute(fn: Function, frame: Frame) -> None:
    code = fn.code
    pc, steps = 0, 0
    try:
        while True:
            nxt = code[pc](frame)
            steps += 1
            if nxt is None:
                pc += 1
            elif nxt == RET:
                return
            else:
                pc = nxt
            if steps > STEP_LIMIT:
                raise InterpreterError(f"{fn.name}: more than {STEP_LIMIT} steps")
    except IndexError:
        raise InterpreterError(f"{fn.name}: ran past its last instruction (pc {pc})") from None
    except InterpreterError as e:
        raise InterpreterError(f"{fn.name}, at {fn.text[pc] if pc < len(fn.text) else pc!r}: {e}") from None


def launch(module: Module, name: str, args: list, memory: Memory, grid=(1, 1), block: int = 32) -> None:
    """Runs kernel `name` over grid (x, y) blocks of `block` threads.
    args, in parameter order: ints for pointers, extents and flags; floats for scalars."""
    fn = module.functions.get(name)
    if fn is None or not fn.entry:
        raise InterpreterError(f"no kernel {name}")
    if len(args) != len(fn.params):
        raise InterpreterError(f"{name} takes {len(fn.params)} arguments, got {len(args)}")
    params = {p.key: _bits(v, p.type) for p, v in zip(fn.params, args)}
    with np.errstate(all="ignore"):
        for cy in range(grid[1]):
            for cx in range(grid[0]):
                for tx in range(block):
                    ids = {"tid.x": tx, "tid.y": 0, "tid.z": 0, "ntid.x": block, "ntid.y": 1, "ntid.z": 1,
                           "ctaid.x": cx, "ctaid.y": cy, "ctaid.z": 0, "nctaid.x": grid[0], "nctaid.y": grid[1],
                           "nctaid.z": 1}
                    thread = Thread(module, memory, ids)
                    execute(fn, Frame(thread, dict(params), fn.local_size))
