"""C names and C types for Mica's names and types.

Takes Mica types, gives C type names, the struct definitions a program needs
(in dependency order) and the copy/drop helpers of types that own heap storage.

Naming keeps the generated C readable and collision-free:
- a user name appears as itself, unless it is reserved in C, starts with
  '_', 'mica_' or 'MICA_', holds '__' or ends with '_': then '_' is appended.
  So every changed name ends with '_' and no unchanged one holds '__'.
- the runtime and the temporaries use 'mica_...' names that never end with '_';
- generated names built from a user name are '<name>__<suffix>' and never end with '_'.
"""

from __future__ import annotations

import itertools
import re

from .types import (
    BOOLEAN,
    FLOAT32,
    FLOAT64,
    INT8,
    INT32,
    INTEGER,
    REGEX,
    STREAM,
    STRING,
    UINT8,
    Array,
    Channel,
    Record,
    Scalar,
    Tensor,
    Tracked,
    Type,
    needs_drop,
)

C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "_Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local "
    "bool true false main NULL offsetof errno asm typeof".split()
)
_STDINT_MACROS = re.compile(
    r"^(U?INT(8|16|32|64|PTR|MAX)_(MIN|MAX|C)|U?INT_(FAST|LEAST)(8|16|32|64)_(MIN|MAX)|SIZE_MAX|PTRDIFF_(MIN|MAX)"
    r"|WCHAR_(MIN|MAX)|WINT_(MIN|MAX)|SIG_ATOMIC_(MIN|MAX)|.*_t)$"
)


def c_name(name: str) -> str:
    """The C spelling of a user's identifier."""
    if (
        name in C_KEYWORDS
        or _STDINT_MACROS.match(name)
        or name.startswith(("_", "mica_", "MICA_"))
        or "__" in name
        or name.endswith("_")
    ):
        return name + "_"
    return name


def c_symbol(symbol) -> str:
    """The C name of a variable or routine: a unit's own carry its unit's name
    (Tokens__Encode), so that two files' names never meet in C."""
    name = c_name(symbol.name)
    return name if symbol.unit is None else f"{c_name(symbol.unit)}__{name}"


SCALAR_C = {
    INTEGER: "int64_t",
    INT32: "int32_t",
    INT8: "int8_t",
    UINT8: "uint8_t",
    FLOAT32: "float",
    FLOAT64: "double",
    BOOLEAN: "bool",
    STRING: "mica_string",
}

SUFFIX = {INTEGER: "i64", INT32: "i32", INT8: "i8", UINT8: "u8", FLOAT32: "f32", FLOAT64: "f64"}


class CTypes:
    """Registry of the C types one program uses, with their definitions in order."""

    def __init__(self):
        self.definitions: list[str] = []
        self.helpers: list[str] = []
        self.names: dict[Type, str] = {}
        self.record_names: dict[int, str] = {}
        self.record_c_names: set[str] = set()  # distinct, though records of two scopes may share a name
        self.uses_gpu = False  # a device type appeared: the program is built as the GPU flavour

    def name(self, t: Type) -> str:
        if isinstance(t, Scalar):
            return SCALAR_C[t]
        if t == STREAM:
            return "mica_stream *"
        if t == REGEX:
            return "mica_regex"
        if isinstance(t, Record):
            key = id(t)
            if key not in self.record_names:
                self.record_names[key] = self.define_record(t)
            return self.record_names[key]
        if t not in self.names:
            self.names[t] = self.define(t)
        return self.names[t]

    def define(self, t: Type) -> str:
        if isinstance(t, Tensor):
            return self.define_tensor(t)
        if isinstance(t, Array):
            return self.define_array(t)
        if isinstance(t, Tracked):
            return self.define_tracked(t)
        if isinstance(t, Channel):
            return "mica_channel *"
        raise AssertionError(f"no C type for {t}")

    def define_tensor(self, t: Tensor) -> str:
        if t.on_gpu:
            self.uses_gpu = True
            return "mica_dev"  # the shape and element type are the compiler's to know
        suffix = SUFFIX[t.element]
        if t.is_dynamic:
            return f"mica_dyn_{suffix}"
        dims = "x".join(str(d) for d in t.shape)
        name = f"mica_{suffix}_{dims}"
        self.definitions.append(f"typedef struct {{ {SCALAR_C[t.element]} e[{t.count}]; }} {name};")
        return name

    def define_array(self, t: Array) -> str:
        element = self.name(t.element)
        stem = element.replace(" *", "_ptr")  # a channel's C type is a pointer: 'mica_channel *'
        if t.is_dynamic:
            name = f"{stem}__dynarr"
            definition = f"typedef struct {{ int64_t len; {element} *e; }} {name};"
        else:
            low, high = (str(bound).replace("-", "m") for bound in (t.low, t.high))
            name = f"{stem}__arr_{low}_{high}"
            definition = f"typedef struct {{ {element} e[{t.length}]; }} {name};"
        if definition in self.definitions:
            return name  # arrays of device tensors of different shapes share their C type
        self.definitions.append(definition)
        if needs_drop(t):
            self.helpers.append(_array_helpers(name, element, t, self))
        return name

    def define_record(self, t: Record) -> str:
        fields = [(c_name(field), self.name(ft)) for field, ft in t.fields]
        name = c_name(t.name)
        if name in self.record_c_names:  # another record of that name: a routine's own, or a unit's
            name = next(f"{name}__{k}" for k in itertools.count(2) if f"{name}__{k}" not in self.record_c_names)
        self.record_c_names.add(name)
        body = " ".join(f"{ctype} {field};" for field, ctype in fields)
        self.definitions.append(f"typedef struct {{ {body} }} {name};")
        if needs_drop(t):
            self.helpers.append(_record_helpers(name, t, self))
        return name

    def define_tracked(self, t: Tracked) -> str:
        inner = self.name(t.inner)
        name = f"{inner}_tracked" if isinstance(t.inner, Tensor) else f"mica_tracked_{SUFFIX[t.inner]}"
        definition = f"typedef struct {{ {inner} v; mica_tag tag; }} {name};"
        if definition in self.definitions:
            return name  # every tracked device tensor shares mica_dev_tracked
        self.definitions.append(definition)
        if needs_drop(t):  # a tracked device value: its storage is in .v
            self.helpers.append(f"""static void {name}__drop({name} *a) {{
    mica_dev_drop(&a->v);
}}
static {name} {name}__copy({name} a) {{
    {name} out = a;
    out.v = mica_dev_copy(a.v);
    return out;
}}
{_assign_move(name)}""")
        return name

    # ---- value semantics of types that own heap storage

    def helper(self, t: Type, op: str) -> str:
        """The C function doing op (drop, copy, assign, move) for values of type t."""
        if t == STRING:
            return f"mica_str_{op}"
        if t == STREAM:  # never copied (the analyzer refuses it): only dropped
            return f"mica_stream_{op}"
        if t == REGEX:
            return f"mica_regex_{op}"
        if isinstance(t, Tensor) and t.on_gpu:
            return f"mica_dev_{op}"
        if isinstance(t, Tracked) and not isinstance(t.inner, Tensor | Scalar):
            return self.helper(t.inner, op)
        if isinstance(t, Tensor):
            return f"mica_dyn_{op}_{SUFFIX[t.element]}"
        return f"{self.name(t)}__{op}"

    def drop(self, t: Type, place: str) -> str:
        """C statement releasing what the place owns."""
        return f"{self.helper(t, 'drop')}(&{place});"

    def assign(self, t: Type, place: str, value: str) -> str:
        """C statement storing a copy of value (which stays owned by its place)."""
        return f"{self.helper(t, 'assign')}(&{place}, {value});"

    def move(self, t: Type, place: str, value: str) -> str:
        """C statement storing a fresh value, whose ownership passes to the place."""
        return f"{self.helper(t, 'move')}(&{place}, {value});"

    def copy(self, t: Type, value: str) -> str:
        """C expression for a fresh copy of value."""
        return f"{self.helper(t, 'copy')}({value})"


def _array_helpers(name: str, element: str, t: Array, types: CTypes) -> str:
    e = t.element
    item_drop = types.drop(e, "a->e[i]") if needs_drop(e) else ""
    item_copy = f"out.e[i] = {types.copy(e, 'a.e[i]')};" if needs_drop(e) else ""
    if t.is_dynamic:
        return f"""static void {name}__drop({name} *a) {{
    for (int64_t i = 0; i < a->len; i++) {{ {item_drop} }}
    mica_free(a->e);
    a->e = NULL;
    a->len = 0;
}}
static {name} {name}__copy({name} a) {{
    {name} out = {{a.len, mica_alloc((size_t)a.len * sizeof(*a.e), 0)}};
    for (int64_t i = 0; i < a.len; i++) {{ {item_copy or 'out.e[i] = a.e[i];'} }}
    return out;
}}
static void {name}__resize({name} *a, int64_t n, int line) {{
    if (n < 0) mica_trapf(line, "SetLength to a negative length %lld", (long long)n);
    for (int64_t i = n; i < a->len; i++) {{ {item_drop} }}
    a->e = mica_resize(a->e, a->len, n, sizeof(*a->e), line);
    a->len = n;
}}
{_assign_move(name)}"""
    return f"""static void {name}__drop({name} *a) {{
    for (int64_t i = 0; i < {t.length}; i++) {{ {item_drop} }}
}}
static {name} {name}__copy({name} a) {{
    {name} out = a;
    for (int64_t i = 0; i < {t.length}; i++) {{ {item_copy} }}
    return out;
}}
{_assign_move(name)}"""


def _record_helpers(name: str, t: Record, types: CTypes) -> str:
    drops = "\n    ".join(types.drop(ft, f"a->{c_name(f)}") for f, ft in t.fields if needs_drop(ft))
    copies = "\n    ".join(f"out.{c_name(f)} = {types.copy(ft, f'a.{c_name(f)}')};"
                           for f, ft in t.fields if needs_drop(ft))
    return f"""static void {name}__drop({name} *a) {{
    {drops}
}}
static {name} {name}__copy({name} a) {{
    {name} out = a;
    {copies}
    return out;
}}
{_assign_move(name)}"""


def _assign_move(name: str) -> str:
    return f"""static void {name}__assign({name} *dst, {name} src) {{
    {name} copy = {name}__copy(src); /* copy first: src may be dst */
    {name}__drop(dst);
    *dst = copy;
}}
static void {name}__move({name} *dst, {name} src) {{
    {name}__drop(dst);
    *dst = src;
}}"""


def c_string_literal(text: str) -> str:
    out = []
    for byte in text.encode("utf-8", "surrogateescape"):  # a file name's bytes, whatever they are
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127 and char != "?":
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
