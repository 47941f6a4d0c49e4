"""The C for the numeric vocabulary (vocabulary.py holds the signatures).

Each operation lowers two ways: outside a window (or on plain values) to its
plain kernel over static or dynamic storage, and inside a window, when its
result is tracked, to the mica_t_ node that records it. Extents are C
expressions: numbers for static shapes, `.rows`/`.cols` for dynamic ones.
"""

from __future__ import annotations

import json
import math

from . import ast
from .ctypes import SUFFIX, c_name
from .cvalue import CValue, dims_literal, dtype_of
from .lower_builtins import LOWERERS, NOTHING, lowerer
from .lower_device import device_type
from .types import FLOAT64, Record, Scalar, Tensor, Tracked, Type, element_of, plain
from .vocabulary import ELEMENTWISE


def records(f, call: ast.Call) -> bool:
    """Does this call record on the tape (a tracked result inside a window)?"""
    return f.in_window and isinstance(f.concrete(call.ty), Tracked)


def extents(f, v: CValue) -> list[str]:
    """Per-dimension extents of a tensor value, as C expressions."""
    t = plain(v.type)
    if not t.is_dynamic:
        return [str(d) for d in t.shape]
    v = f.borrow(v)
    return [f"{v.text}.rows"] if t.rank == 1 else [f"{v.text}.rows", f"{v.text}.cols"]


def product(items: list[str]) -> str:
    if all(i.isdigit() for i in items):
        n = 1
        for i in items:
            n *= int(i)
        return str(n)
    return " * ".join(f"({i})" for i in items) or "1"


def rows_cols(f, v: CValue) -> tuple[str, str]:
    """A tensor seen as rows of its last extent."""
    e = extents(f, v)
    return product(e[:-1]), e[-1]


def fresh_tensor(f, t: Tensor, like: CValue | None, line: int, dims: list[str] | None = None) -> CValue:
    """Storage for a result: a temporary struct, or a new dynamic tensor."""
    if not t.is_dynamic:
        return CValue(f.declare_uninitialized(t), t, lvalue=True)
    e = dims if dims is not None else extents(f, like)
    rows, cols = (e[0], "1") if len(e) == 1 else (e[0], e[1])
    name = f.declare(t, f"mica_dyn_new_{SUFFIX[t.element]}({rows}, {cols}, {line})")
    return CValue(name, t, owned=True, lvalue=True)


def node_result(f, call: ast.Call, init: str) -> CValue:
    return CValue(f.new_node(init), f.concrete(call.ty), node=True)


def plain_arg(f, arg: ast.Expr, t: Type | None = None) -> CValue:
    v = f.untracked(f.value(arg))
    return f.convert(v, t, arg.pos.line) if t is not None else v


# ---------------------------------------------------------------- elementwise

SCALAR_FUNCTIONS = {"Tanh": "mica_tanh", "Exp": "mica_exp", "Log": "mica_log", "Sqrt": "mica_sqrt",
                    "Relu": "mica_relu", "Gelu": "mica_gelu", "Silu": "mica_silu", "Sigmoid": "mica_sigmoid",
                    "Abs": "mica_abs", "Sin": "mica_sin", "Cos": "mica_cos"}


def lower_elementwise(f, call: ast.Call) -> CValue:
    name = call.callee.ident
    kernel = name.lower()
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call):
        return node_result(f, call, f.record(kernel, f.concrete(call.ty), [f.node(call.args[0], dtype_of(t))], call.pos.line))
    if isinstance(t, Scalar):
        x = plain_arg(f, call.args[0], t)
        return CValue(f"{SCALAR_FUNCTIONS[name]}_{s}({x.text})", t)
    x = plain_arg(f, call.args[0])
    out = fresh_tensor(f, t, x, call.pos.line)
    f.line(f"mica_each_{kernel}_{s}({out.text}.e, {f.data(x)}, {product(extents(f, x))});")
    return out


for _name in ELEMENTWISE:
    LOWERERS[_name] = lower_elementwise
LOWERERS["Abs:tensor"] = lower_elementwise


# ---------------------------------------------------------------- reductions


@lowerer("Sum", "Mean", "Max:reduce")
def lower_reduce(f, call: ast.Call) -> CValue:
    kernel = call.callee.ident.lower()
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call):
        return node_result(f, call, f.record(kernel, f.concrete(call.ty), [f.node(call.args[0])], call.pos.line))
    x = plain_arg(f, call.args[0])
    return CValue(f"mica_{kernel}_{s}({f.data(x)}, {product(extents(f, x))})", t)


LOWERERS["Max:reduce"] = lower_reduce


@lowerer("SumRows")
def lower_sum_rows(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        return node_result(f, call, f.record("sum_rows", f.concrete(call.ty), [f.node(call.args[0])], call.pos.line))
    x = plain_arg(f, call.args[0])
    rows, cols = rows_cols(f, x)
    out = fresh_tensor(f, t, None, call.pos.line, [cols])
    f.line(f"mica_sum_rows_{s}({out.text}.e, {f.data(x)}, {rows}, {cols});")
    return out


# ---------------------------------------------------------------- rows


def vector_rows(f, x: CValue) -> tuple[str, str]:
    """Rows and columns a row-wise operation sees: a vector is one row."""
    t = plain(x.type)
    if t.rank == 1:
        return "1", extents(f, x)[0]
    return rows_cols(f, x)


@lowerer("Softmax")
def lower_softmax(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        return node_result(f, call, f.record("softmax", f.concrete(call.ty), [f.node(call.args[0])], call.pos.line))
    x = plain_arg(f, call.args[0])
    out = fresh_tensor(f, t, x, call.pos.line)
    rows, cols = vector_rows(f, x)
    f.line(f"mica_softmax_{s}({out.text}.e, {f.data(x)}, {rows}, {cols});")
    return out


@lowerer("CausalMask")
def lower_causal_mask(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        return node_result(f, call, f.record("causal_mask", f.concrete(call.ty), [f.node(call.args[0])], call.pos.line))
    x = plain_arg(f, call.args[0])
    out = fresh_tensor(f, t, x, call.pos.line)
    e = extents(f, x)
    f.line(f"mica_causal_mask_{s}({out.text}.e, {f.data(x)}, {product(e[:-2])}, {e[-2]}, {e[-1]});")
    return out


@lowerer("LayerNorm", "RmsNorm")
def lower_norm(f, call: ast.Call) -> CValue:
    kernel = call.callee.ident.lower()
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        nodes = [f.node(arg) for arg in call.args]
        return node_result(f, call, f.record(kernel, f.concrete(call.ty), nodes, call.pos.line))
    x, *params = (plain_arg(f, arg) for arg in call.args)
    rows, cols = vector_rows(f, x)
    for p in params:
        if plain(p.type).is_dynamic or plain(x.type).is_dynamic:
            f.line(f'mica_check_shape({product(extents(f, p))}, {cols}, {call.pos.line}, "gain and bias elements");')
    out = fresh_tensor(f, t, x, call.pos.line)
    stats = "NULL, NULL" if kernel == "layernorm" else "NULL"
    data = ", ".join(f.data(v) for v in [x, *params])
    f.line(f"mica_{kernel}_{s}({out.text}.e, {stats}, {data}, {rows}, {cols});")
    return out


def integer_data(f, arg: ast.Expr) -> tuple[str, str]:
    """Pointer to integer targets or ids, and how many there are."""
    v = f.value(arg)
    t = plain(v.type)
    if isinstance(t, Scalar):
        return f"&{f.materialize(v).text}", "1"
    if t.is_dynamic:
        v = f.materialize(f.borrow(v))
        return f.data(v), f.count(v)
    return f.data(v), str(t.count)


@lowerer("CrossEntropy")
def lower_cross_entropy(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call) and device_type(call.ty):
        targets = f.device_ids(call.args[1], call.pos.line)
        return node_result(f, call, f.record("cross_entropy", f.concrete(call.ty), [f.node(call.args[0]), targets], call.pos.line))
    targets, count = integer_data(f, call.args[1])
    dynamic_targets = plain(f.concrete(call.args[1].ty)).is_dynamic if isinstance(
        plain(call.args[1].ty), Tensor) else False
    if records(f, call):
        logits_type = plain(f.concrete(call.args[0].ty))
        if dynamic_targets:
            rows = logits_type.count // logits_type.shape[-1]
            f.line(f'mica_check_shape({count}, {rows}, {call.pos.line}, "targets");')
        return node_result(f, call, f"mica_t_cross_entropy_{s}({f.node(call.args[0])}, {targets}, {call.pos.line})")
    logits = plain_arg(f, call.args[0])
    rows, cols = vector_rows(f, logits)
    if plain(logits.type).is_dynamic or dynamic_targets:
        f.line(f'mica_check_shape({count}, {rows}, {call.pos.line}, "targets");')
    return CValue(f"mica_cross_entropy_{s}(NULL, {f.data(logits)}, {targets}, {rows}, {cols}, {call.pos.line})", t)


# ---------------------------------------------------------------- embedding and products


@lowerer("Gather")
def lower_gather(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    line = call.pos.line
    if records(f, call) and device_type(call.ty):
        rank, dims = dims_literal(t)
        ids = f.device_ids(call.args[1], line)
        n = plain(f.concrete(call.args[1].ty)).count if isinstance(plain(f.concrete(call.args[1].ty)), Tensor) else 1
        return node_result(f, call, f.record("gather", f.concrete(call.ty), [f.node(call.args[0]), ids, n, rank, dims], line))
    ids, n = integer_data(f, call.args[1])
    if records(f, call):
        rank, dims = dims_literal(t)
        return node_result(f, call, f"mica_t_gather_{s}({f.node(call.args[0])}, {ids}, {n}, {rank}, {dims}, {line})")
    table = plain_arg(f, call.args[0])
    rows, cols = extents(f, table)
    out = fresh_tensor(f, t, None, line, [n, cols] if plain(f.concrete(call.args[1].ty)) != Scalar("integer") else [cols])
    f.line(f"mica_gather_{s}({out.text}.e, {f.data(table)}, {ids}, {n}, {rows}, {cols}, {line});")
    return out


@lowerer("Dot")
def lower_dot(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[element_of(t)]
    if records(f, call):
        return node_result(f, call, f"mica_t_dot_{s}({f.node(call.args[0])}, {f.node(call.args[1])})")
    a, b = plain_arg(f, call.args[0]), plain_arg(f, call.args[1])
    n = extents(f, a)[0]
    if plain(a.type).is_dynamic or plain(b.type).is_dynamic:
        f.line(f'mica_check_shape({extents(f, b)[0]}, {n}, {call.pos.line}, "elements");')
    return CValue(f"mica_dot_{s}({f.data(a)}, {f.data(b)}, {n})", t)


@lowerer("Outer")
def lower_outer(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    if records(f, call):
        return node_result(f, call, f"mica_t_outer_{s}({f.node(call.args[0])}, {f.node(call.args[1])})")
    a, b = plain_arg(f, call.args[0]), plain_arg(f, call.args[1])
    m, n = extents(f, a)[0], extents(f, b)[0]
    out = fresh_tensor(f, t, None, call.pos.line, [m, n])
    f.line(f"mica_outer_{s}({out.text}.e, {f.data(a)}, {f.data(b)}, {m}, {n});")
    return out


def lower_transpose_or_mul(plain_lowerer, kernel: str):
    """Transpose and Mul have plain lowerings in lower_builtins; these add their tape nodes."""

    def lower(f, call: ast.Call) -> CValue:
        if not records(f, call):
            return plain_lowerer(f, call)
        nodes = [f.node(arg) for arg in call.args]
        return node_result(f, call, f.record(kernel, f.concrete(call.ty), nodes, call.pos.line))

    return lower


LOWERERS["Transpose"] = lower_transpose_or_mul(LOWERERS["Transpose"], "transpose")
LOWERERS["Mul"] = lower_transpose_or_mul(LOWERERS["Mul"], "mul")


# ---------------------------------------------------------------- images


@lowerer("Conv2d")
def lower_conv2d(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    xt, kt = plain(f.concrete(call.args[0].ty)), plain(f.concrete(call.args[1].ty))
    batch = xt.shape[0] if xt.rank == 4 else 1
    if records(f, call):
        rank, dims = dims_literal(t)
        return node_result(f, call, f"mica_t_conv2d_{s}({f.node(call.args[0])}, {f.node(call.args[1])}, {batch}, {rank}, {dims})")
    x, k = plain_arg(f, call.args[0]), plain_arg(f, call.args[1])
    out = fresh_tensor(f, t, None, call.pos.line)
    cin, h, w = xt.shape[-3:]
    cout, _, kh, kw = kt.shape
    f.line(f"mica_conv2d_{s}({out.text}.e, {f.data(x)}, {f.data(k)}, {batch}, {cin}, {h}, {w}, {cout}, {kh}, {kw});")
    return out


@lowerer("MaxPool2d", "AvgPool2d")
def lower_pool(f, call: ast.Call) -> CValue:
    kernel = call.callee.ident.lower()
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    size = call.args[1].folded
    if records(f, call):
        rank, dims = dims_literal(t)
        return node_result(f, call, f"mica_t_{kernel}_{s}({f.node(call.args[0])}, {size}, {rank}, {dims})")
    x = plain_arg(f, call.args[0])
    xt = plain(x.type)
    h, w = xt.shape[-2:]
    out = fresh_tensor(f, t, None, call.pos.line)
    where = "NULL, " if kernel == "maxpool2d" else ""
    f.line(f"mica_{kernel}_{s}({out.text}.e, {where}{f.data(x)}, {xt.count // (h * w)}, {h}, {w}, {size});")
    return out


# ---------------------------------------------------------------- the tape


@lowerer("Backward")
def lower_backward(f, call: ast.Call) -> CValue:
    f.backward(call)
    return NOTHING


@lowerer("Gradient")
def lower_gradient(f, call: ast.Call) -> CValue:
    return f.gradient(call)


# ---------------------------------------------------------------- optimizers and randomness


def storage(f, place: CValue) -> tuple[str, str]:
    """Pointer to a lent float place's elements, and how many."""
    t = plain(place.type)
    if isinstance(t, Scalar):
        return f"&{place.text}", "1"
    return f"{place.text}.e", product(extents(f, place))


def numbers(f, call: ast.Call, indices, t: Scalar) -> list[str]:
    return [f.convert(f.value(call.args[i]), t, call.pos.line).text for i in indices]


@lowerer("AdamStep", "SgdStep")
def lower_optimizer(f, call: ast.Call) -> CValue:
    adam = call.callee.ident == "AdamStep"
    lent = [0, 2, 3] if adam else [0, 2]
    places = [f.place(call.args[i].place) for i in lent]
    e = element_of(places[0].type)
    if device_type(places[0].type):
        return lower_device_optimizer(f, call, adam, places, e)
    g = plain_arg(f, call.args[1])
    w, count = storage(f, places[0])
    gradient, g_count = (f"&{f.materialize(f.convert(g, e, call.pos.line)).text}", "1") if isinstance(plain(g.type), Scalar) else (f.data(g), product(extents(f, g)))
    others = [storage(f, p) for p in places[1:]]
    line = call.pos.line
    if any(plain(p.type).is_dynamic for p in places if isinstance(plain(p.type), Tensor)) or (
            isinstance(plain(g.type), Tensor) and plain(g.type).is_dynamic):
        for _, n in [(gradient, g_count)] + others:
            f.line(f'mica_check_shape({n}, {count}, {line}, "elements");')
    state = ", ".join(p for p, _ in others)
    s = SUFFIX[e]
    if adam:
        step = f.value(call.args[4]).text
        rest = ", ".join(numbers(f, call, [5, 6, 7, 8], e))
        f.line(f"mica_adam_step_{s}({w}, {gradient}, {state}, {count}, {step}, {rest});")
    else:
        rest = ", ".join(numbers(f, call, [3, 4], e))
        f.line(f"mica_sgd_step_{s}({w}, {gradient}, {state}, {count}, {rest});")
    return NOTHING


def lower_device_optimizer(f, call: ast.Call, adam: bool, places: list, e: Scalar) -> CValue:
    """AdamStep and SgdStep on device storage: one launch, its powers of beta taken on the host."""
    g = f.materialize(f.borrow(f.untracked(f.value(call.args[1])))).text
    dtype, n, line = dtype_of(e), plain(places[0].type).count, call.pos.line
    f.lowering.kernels.add(f"mica_{'adam' if adam else 'sgd'}_step_{SUFFIX[e]}")
    lent = ", ".join(f"&{p.text}" for p in places[1:])
    if adam:
        rest = ", ".join(numbers(f, call, [5, 6, 7, 8], FLOAT64))
        f.line(f"mica_gpu_adam_step({dtype}, &{places[0].text}, {g}, {lent}, {n}, {f.value(call.args[4]).text}, {rest}, {line});")
    else:
        rest = ", ".join(numbers(f, call, [3, 4], FLOAT64))
        f.line(f"mica_gpu_sgd_step({dtype}, &{places[0].text}, {g}, {lent}, {n}, {rest}, {line});")
    return NOTHING


@lowerer("Seed")
def lower_seed(f, call: ast.Call) -> CValue:
    f.line(f"mica_seed({f.value(call.args[0]).text});")
    return NOTHING


@lowerer("Normal", "Uniform")
def lower_fill_random(f, call: ast.Call) -> CValue:
    place = f.place(call.args[0].place)
    e = element_of(place.type)
    data, count = storage(f, place)
    a, b = numbers(f, call, [1, 2], FLOAT64)
    f.line(f"mica_{call.callee.ident.lower()}_{SUFFIX[e]}({data}, {count}, {a}, {b});")
    return NOTHING


@lowerer("RandomInt")
def lower_random_int(f, call: ast.Call) -> CValue:
    return CValue(f"mica_random_int({f.value(call.args[0]).text}, {call.pos.line})", Scalar("integer"))


# ---------------------------------------------------------------- linear algebra


@lowerer("Solve", "Invert", "Cholesky", "Qr")
def lower_linear_algebra(f, call: ast.Call) -> CValue:
    name = call.callee.ident.lower()
    args = []
    element_type = plain(f.concrete(call.args[0].ty)).element
    for arg in call.args:
        if isinstance(arg, ast.AddressArg):
            args.append(f"&{f.place(arg.place).text}")
        else:
            v = plain_arg(f, arg)
            dynamic = Tensor(element_type, None, plain(v.type).rank)
            args.append(f.borrow(f.convert(v, dynamic, call.pos.line)).text)
    ranks = ""
    if name == "solve":
        ranks = f", {plain(f.concrete(call.args[1].ty)).rank}"
    return CValue(f"mica_{name}_{SUFFIX[element_type]}({', '.join(args)}{ranks}, {call.pos.line})", Scalar("boolean"))


# ---------------------------------------------------------------- checkpoints

DTYPES = {"float32": "MICA_F32", "float64": "MICA_F64", "integer": "MICA_I64", "int32": "MICA_I32",
          "int8": "MICA_I8", "uint8": "MICA_U8", "boolean": "MICA_BOOL"}


def checkpoint_entries(f, path: str, place: str, t: Type, tag: str = "NULL") -> list[tuple[str, Type, str]]:
    """(canonical path, type, C initializer of mica_entry) for every leaf inside the place."""
    if isinstance(t, Tracked):
        return [(p, t, init) for p, _, init in checkpoint_entries(f, path, f"{place}.v", t.inner, f"&{place}.tag")]
    name = f'"{path}"'
    if isinstance(t, Scalar):
        return [(path, t, f"{{{name}, {DTYPES[t.name]}, 0, {{0}}, &{place}, NULL, NULL, NULL, {tag}}}")]
    if isinstance(t, Tensor) and t.is_dynamic:
        return [(path, t, f"{{{name}, {DTYPES[t.element.name]}, {t.rank}, {{0}}, NULL, &{place}.rows, &{place}.cols, "
                          f"(void **)&{place}.e, {tag}}}")]
    if isinstance(t, Tensor):
        dims = ", ".join(str(d) for d in t.shape)
        return [(path, t, f"{{{name}, {DTYPES[t.element.name]}, {t.rank}, {{{dims}}}, {place}.e, NULL, NULL, NULL, {tag}}}")]
    if isinstance(t, Record):
        return [e for field, ft in t.fields for e in checkpoint_entries(f, f"{path}.{field}", f"{place}.{c_name(field)}", ft)]
    return [e for i in range(t.low, t.high + 1)
            for e in checkpoint_entries(f, f"{path}[{i}]", f"{place}.e[{i - t.low}]", t.element)]


def compact_json(value) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def checkpoint_description(analysis, leaves: list[tuple[str, Type, str]]) -> str:
    """The metadata members Save writes after the format and the checksum, as JSON
    text: the program's name, its const section and each tensor's Mica type, the
    last two JSON encoded once more, since safetensors metadata values are strings."""
    consts = {c.name: c.value if not isinstance(c.value, float) or math.isfinite(c.value) else repr(c.value)
              for c in analysis.global_consts}
    tensors = {path: {"type": str(plain(t)), "tracked": isinstance(t, Tracked)} for path, t, _ in leaves}
    members = compact_json({"program": analysis.program.name, "consts": compact_json(consts),
                            "tensors": compact_json(tensors)})
    return members[1:-1]


@lowerer("Save", "Load")
def lower_checkpoint(f, call: ast.Call) -> CValue:
    from .lower import c_string_literal
    from .vocabulary import place_path

    path = f.borrow(f.value(call.args[0])).text
    leaves = []
    for arg in call.args[1:]:
        leaves += checkpoint_entries(f, place_path(arg), f.place(arg).text, f.concrete(arg.ty))
    table = f.fresh()
    f.line(f"mica_entry {table}[] = {{")
    for _, _, entry in leaves:
        f.line(f"    {entry},")
    f.line("};")
    f.declared = True
    count, line = len(leaves), call.pos.line
    if call.callee.ident == "Save":
        description = c_string_literal(checkpoint_description(f.lowering.analysis, leaves))
        f.line(f"mica_save({path}, {table}, {count}, {description}, {line});")
        return NOTHING
    must = "true" if f.discarded is call else "false"
    return CValue(f"mica_load({path}, {table}, {count}, {must}, {line})", Scalar("boolean"))
