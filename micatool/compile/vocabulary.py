"""Signatures of the numeric vocabulary (LANGUAGE.md §6): tensors, the tape,
optimizers, randomness and linear algebra.

Each checker analyzes its call's arguments and gives the result type, or
reports why the call cannot be. A result is tracked when a tracked argument
flows into it. lower_vocabulary.py holds the C for each name.
"""

from __future__ import annotations

from . import ast, residency
from .builtins import arity, checker, is_integer, is_number, plain_only, tensor_arg, values, wrong
from .types import BOOLEAN, ERROR, INTEGER, VOID, ErrorType, Scalar, Tensor, Tracked, Type, is_tracked, plain

ELEMENTWISE = ("Tanh", "Exp", "Log", "Sqrt", "Relu", "Gelu", "Silu", "Sigmoid", "Sin", "Cos")


def tracked_if(result: Type, *inputs: Type) -> Type:
    return Tracked(result) if any(is_tracked(t) for t in inputs) else result


def static_if_tracked(a, call, arg, t) -> bool:
    """A tracked value needs a static shape; so does anything it is combined with."""
    if isinstance(plain(t), Tensor) and plain(t).is_dynamic:
        a.error(arg, 5109, f"'{call.callee.ident}' of a dynamic tensor cannot join tracked values; give it a static shape")
        return False
    return True


def mixes_dynamic_with_tracked(a, call, types) -> bool:
    if any(is_tracked(t) for t in types):
        return not all(static_if_tracked(a, call, arg, t) for arg, t in zip(call.args, types))
    return False


def records_on_gpu(a, call, result: Type) -> Type:
    """Dot, Outer and the image verbs run on the GPU, but do not record there yet."""
    if is_tracked(result) and residency.on_gpu(result):
        return a.error(call, 7011, f"'{call.callee.ident}' does not record on the GPU's tape yet; compute it on the "
                                   "host, or outside the window")
    return result


def last_dim(t: Type):
    return t.shape[-1] if t.shape is not None else None


def same_extent(x, y) -> bool:
    return x is None or y is None or x == y


def touch(a, *types: Type) -> None:
    for t in types:
        a.note_tracked_op(t)


# ---------------------------------------------------------------- elementwise


@checker(*ELEMENTWISE)
def check_elementwise(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType):
        return ERROR
    p = plain(t)
    if isinstance(p, Scalar) and p.is_integer:
        return tracked_if(Scalar("float64"), t)
    if isinstance(p, Scalar) and p.is_float or isinstance(p, Tensor) and p.rank == 0 and p.element.is_float:
        touch(a, t)  # a number, on the host or the device
        return t
    if not tensor_arg(a, call, call.args[0], t):
        return ERROR
    touch(a, t)
    return t


@checker("Mul")
def check_mul(a, call, expected):
    """Mul(a, b): the elementwise product of two tensors of one shape."""
    if not arity(a, call, 2):
        return ERROR
    left, right = values(a, call)
    if isinstance(left, ErrorType) or isinstance(right, ErrorType):
        return ERROR
    if not (tensor_arg(a, call, call.args[0], left) and tensor_arg(a, call, call.args[1], right)):
        return ERROR
    if mixes_dynamic_with_tracked(a, call, [left, right]):
        return ERROR
    if not residency.check_together(a, call, "'Mul'", call.args, [left, right]):
        return ERROR
    lp, rp = plain(left), plain(right)
    if lp.element != rp.element or lp.rank != rp.rank or (lp.shape and rp.shape and lp.shape != rp.shape):
        return a.error(call, 6011, f"Mul needs two tensors of one shape, found '{left}' and '{right}'")
    touch(a, left, right)
    return tracked_if(lp if not rp.is_dynamic else rp, left, right)


# ---------------------------------------------------------------- reductions


@checker("Sum", "Mean", "Max:reduce")
def check_reduce(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    touch(a, t)
    return tracked_if(residency.scalar_of(plain(t)), t)


@checker("SumRows")
def check_sum_rows(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    p = plain(t)
    if p.rank < 2:
        return wrong(a, call, call.args[0], t, "a matrix (it adds the rows together)")
    touch(a, t)
    result = Tensor(p.element, None, 1) if p.is_dynamic else p.with_shape((p.shape[-1],))
    return tracked_if(result, t)


# ---------------------------------------------------------------- rows


@checker("Softmax", "CausalMask")
def check_rows(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    (t,) = values(a, call)
    if isinstance(t, ErrorType) or not tensor_arg(a, call, call.args[0], t):
        return ERROR
    if call.callee.ident == "CausalMask" and plain(t).rank < 2:
        return wrong(a, call, call.args[0], t, "a matrix (rows attend to earlier columns)")
    touch(a, t)
    return t


@checker("LayerNorm", "RmsNorm")
def check_norm(a, call, expected):
    name = call.callee.ident
    if not arity(a, call, 3 if name == "LayerNorm" else 2):
        return ERROR
    types = values(a, call)
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    x, *params = types
    if not tensor_arg(a, call, call.args[0], x) or not residency.check_together(a, call, name, call.args, types):
        return ERROR
    cols = last_dim(plain(x))
    for arg, t in zip(call.args[1:], params):
        if not tensor_arg(a, call, arg, t, 1):
            return ERROR
        if plain(t).element != plain(x).element or not same_extent(last_dim(plain(t)), cols):
            return a.error(arg, 6012, f"{name}'s gain and bias must be vectors of the rows' length {cols} "
                                      f"and element type, found '{t}'")
    if mixes_dynamic_with_tracked(a, call, types):
        return ERROR
    touch(a, *types)
    return tracked_if(plain(x), *types)


@checker("CrossEntropy")
def check_cross_entropy(a, call, expected):
    if not arity(a, call, 2):
        return ERROR
    logits, targets = values(a, call)
    if isinstance(logits, ErrorType) or isinstance(targets, ErrorType):
        return ERROR
    if not tensor_arg(a, call, call.args[0], logits, dynamic_ok=not is_tracked(logits)):
        return ERROR
    lp, tp = plain(logits), plain(targets)
    wanted_rank = lp.rank - 1
    if is_tracked(targets):
        return wrong(a, call, call.args[1], targets, "integer targets")
    if wanted_rank == 0:
        if tp != INTEGER:
            return wrong(a, call, call.args[1], targets, "an integer target")
    elif not (isinstance(tp, Tensor) and tp.element == INTEGER and tp.rank == wanted_rank):
        return wrong(a, call, call.args[1], targets, f"integer targets of rank {wanted_rank}")
    elif lp.shape is not None and tp.shape is not None and tp.shape != lp.shape[:-1]:
        return a.error(call.args[1], 6013, f"CrossEntropy needs one target per row: logits '{logits}' take targets of "
                                           f"shape {list(lp.shape[:-1])}, found '{targets}'")
    if not residency.check_together(a, call, "CrossEntropy", call.args, [logits, targets]):
        return ERROR
    touch(a, logits)
    return tracked_if(residency.scalar_of(lp), logits)


# ---------------------------------------------------------------- embedding and products


@checker("Gather")
def check_gather(a, call, expected):
    if not arity(a, call, 2):
        return ERROR
    table, ids = values(a, call)
    if isinstance(table, ErrorType) or isinstance(ids, ErrorType):
        return ERROR
    if not tensor_arg(a, call, call.args[0], table, 2, dynamic_ok=not is_tracked(table)):
        return ERROR
    ip = plain(ids)
    if ip == INTEGER:
        shape = ()
    elif isinstance(ip, Tensor) and ip.element == INTEGER and not ip.is_dynamic:
        shape = ip.shape
    else:
        return wrong(a, call, call.args[1], ids, "an integer id or a static tensor of integer ids")
    if not residency.check_together(a, call, "Gather", call.args, [table, ids]):
        return ERROR
    tp = plain(table)
    touch(a, table)
    if tp.is_dynamic:
        return Tensor(tp.element, None, 1 if not shape else 2)
    return tracked_if(tp.with_shape(shape + (tp.shape[1],)), table)


@checker("Dot", "Outer")
def check_dot(a, call, expected):
    if not arity(a, call, 2):
        return ERROR
    types = values(a, call)
    if any(isinstance(t, ErrorType) for t in types):
        return ERROR
    for arg, t in zip(call.args, types):
        if not tensor_arg(a, call, arg, t, 1):
            return ERROR
    left, right = (plain(t) for t in types)
    if not residency.check_together(a, call, f"'{call.callee.ident}'", call.args, types):
        return ERROR
    if left.element != right.element:
        return a.error(call, 4021, f"'{call.callee.ident}' needs one element type, found '{types[0]}' and '{types[1]}'")
    if mixes_dynamic_with_tracked(a, call, types):
        return ERROR
    touch(a, *types)
    if call.callee.ident == "Dot":
        if not same_extent(last_dim(left), last_dim(right)):
            return a.error(call, 6014, f"Dot needs vectors of one length, found '{types[0]}' and '{types[1]}'")
        return records_on_gpu(a, call, tracked_if(residency.scalar_of(left), *types))
    if left.is_dynamic or right.is_dynamic:
        return Tensor(left.element, None, 2)
    return records_on_gpu(a, call, tracked_if(left.with_shape((left.shape[0], right.shape[0])), *types))


# ---------------------------------------------------------------- images


def _static_image(a, call, arg, t, ranks) -> bool:
    p = plain(t)
    if not (isinstance(p, Tensor) and p.element.is_float and not p.is_dynamic and p.rank in ranks):
        wrong(a, call, arg, t, " or ".join(f"a static float tensor of rank {r}" for r in ranks))
        return False
    return True


@checker("Conv2d")
def check_conv2d(a, call, expected):
    """Conv2d(x : [C, H, W] or [B, C, H, W], k : [O, C, KH, KW]): valid, stride 1."""
    if not arity(a, call, 2):
        return ERROR
    x, k = values(a, call)
    if isinstance(x, ErrorType) or isinstance(k, ErrorType):
        return ERROR
    if not (_static_image(a, call, call.args[0], x, (3, 4)) and _static_image(a, call, call.args[1], k, (4,))):
        return ERROR
    if not residency.check_together(a, call, "Conv2d", call.args, [x, k]):
        return ERROR
    xs, ks = plain(x).shape, plain(k).shape
    channels, h, w = xs[-3:]
    if plain(x).element != plain(k).element:
        return a.error(call, 4021, f"Conv2d needs one element type, found '{x}' and '{k}'")
    if ks[1] != channels or ks[2] > h or ks[3] > w:
        return a.error(call, 6015, f"Conv2d kernel '{k}' does not fit input '{x}': the kernel reads {ks[1]} channels "
                                   f"through a {ks[2]}x{ks[3]} window; the input has {channels} of {h}x{w}")
    touch(a, x, k)
    shape = xs[:-3] + (ks[0], h - ks[2] + 1, w - ks[3] + 1)
    return records_on_gpu(a, call, tracked_if(plain(x).with_shape(shape), x, k))


@checker("MaxPool2d", "AvgPool2d")
def check_pool(a, call, expected):
    """Pool(x : [..., H, W], size): non-overlapping size x size windows."""
    if not arity(a, call, 2):
        return ERROR
    x = a.expr(call.args[0])
    size = a.const_int(call.args[1])
    if isinstance(x, ErrorType) or size is None or not _static_image(a, call, call.args[0], x, (3, 4)):
        return ERROR
    shape = plain(x).shape
    if size <= 0 or size > shape[-1] or size > shape[-2]:
        return a.error(call.args[1], 6016, f"a pooling window of {size} does not fit '{x}'")
    touch(a, x)
    return records_on_gpu(a, call, tracked_if(plain(x).with_shape(shape[:-2] + (shape[-2] // size, shape[-1] // size)), x))


# ---------------------------------------------------------------- the tape


def _tracked_place(a, call, arg) -> tuple[Type, object]:
    """The argument of Backward and Gradient: a tracked place rooted in a variable."""
    from .analyzer import root_name
    from .symbols import VarSymbol

    t = a.expr(arg)
    if isinstance(t, ErrorType):
        return ERROR, None
    root = root_name(arg)
    symbol = root.symbol if root is not None else None
    if not is_tracked(t) or not isinstance(symbol, VarSymbol):
        a.error(arg, 5110, f"'{call.callee.ident}' needs a tracked place (a variable, field or element), found '{t}'")
        return ERROR, None
    if symbol.role == "param":
        a.error(arg, 5110, f"'{call.callee.ident}' needs a tracked place of a variable; '{root.ident}' is a parameter")
        return ERROR, None
    return t, symbol


@checker("Backward")
def check_backward(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    t, _ = _tracked_place(a, call, call.args[0])
    if isinstance(t, ErrorType):
        return VOID
    if not (isinstance(plain(t), Scalar) or isinstance(plain(t), Tensor) and plain(t).rank == 0):
        a.error(call.args[0], 5111, f"Backward starts from a tracked scalar, found '{t}'; reduce it with Sum or Mean first")
    if a.tape_depth > 0:
        a.error(call, 5112, "Backward inside its tape window; call it after the window's 'end'")
    return VOID


@checker("Gradient")
def check_gradient(a, call, expected):
    if not arity(a, call, 1):
        return ERROR
    t, symbol = _tracked_place(a, call, call.args[0])
    if isinstance(t, ErrorType):
        return ERROR
    if a.tape_depth > 0:
        a.error(call, 5112, "Gradient inside a tape window; the gradients exist after Backward")
    a.gradient_uses.append((symbol, call.args[0].pos, ast.place_text(call.args[0])))
    return plain(t)


# ---------------------------------------------------------------- optimizers


def _conformant(a, call, places: list[int], values_at: list[int]) -> Type:
    """The arguments at `places` lend, those at `values_at` read, one float value type."""
    first = None
    types = {}
    for i in places:
        types[i] = a.address_arg(call.args[i], f"argument {i + 1} of {call.callee.ident}")
    for i in values_at:
        types[i] = a.expr(call.args[i])
    if any(isinstance(t, ErrorType) for t in types.values()):
        return ERROR
    if not residency.check_together(a, call, f"'{call.callee.ident}'", [call.args[i] for i in sorted(types)],
                                    [types[i] for i in sorted(types)]):
        return ERROR
    for i in sorted(types):
        p = plain(types[i])
        ok = isinstance(p, Scalar) and p.is_float or isinstance(p, Tensor) and p.element.is_float
        if not ok:
            return wrong(a, call, call.args[i], types[i], "a float scalar or float tensor")
        if first is None:
            first = p
        elif p != first and not (isinstance(p, Tensor) and isinstance(first, Tensor) and p.element == first.element
                                 and (p.is_dynamic or first.is_dynamic) and p.rank == first.rank):
            return a.error(call.args[i], 6017, f"'{call.callee.ident}' needs one shape throughout: '{first}' and '{p}'")
    plain_only(a, call, [types.get(i) for i in range(len(call.args))])
    return first


def _numbers(a, call, indices: list[int], integer_first: bool = False) -> bool:
    ok = True
    for n, i in enumerate(indices):
        t = a.expr(call.args[i])
        if isinstance(t, ErrorType):
            ok = False
        elif integer_first and n == 0 and not is_integer(t):
            wrong(a, call, call.args[i], t, "an integer step count")
            ok = False
        elif not is_number(t):
            wrong(a, call, call.args[i], t, "numbers after the tensors")
            ok = False
    return ok


@checker("AdamStep")
def check_adam(a, call, expected):
    """AdamStep(address w, g, address m, address v, t, lr, beta1, beta2, eps)."""
    if not arity(a, call, 9):
        return ERROR
    if isinstance(_conformant(a, call, [0, 2, 3], [1]), ErrorType):
        return VOID
    _numbers(a, call, [4, 5, 6, 7, 8], integer_first=True)
    return VOID


@checker("SgdStep")
def check_sgd(a, call, expected):
    """SgdStep(address w, g, address velocity, lr, momentum)."""
    if not arity(a, call, 5):
        return ERROR
    if isinstance(_conformant(a, call, [0, 2], [1]), ErrorType):
        return VOID
    _numbers(a, call, [3, 4])
    return VOID


# ---------------------------------------------------------------- randomness


def host_only(a, call, pairs) -> bool:
    """Operations the GPU does not run: their (argument, type) pairs must live on the host."""
    return all(residency.needs_host(a, f"'{call.callee.ident}'", arg, t,
                                   "work on a host copy and move it with ToDevice") for arg, t in pairs)


@checker("Normal", "Uniform")
def check_fill_random(a, call, expected):
    """Normal(address x, mean, std), Uniform(address x, low, high)."""
    if not arity(a, call, 3):
        return ERROR
    first = _conformant(a, call, [0], [])
    if isinstance(first, ErrorType) or not host_only(a, call, [(call.args[0], call.args[0].ty)]):
        return VOID
    _numbers(a, call, [1, 2])
    return VOID


# ---------------------------------------------------------------- linear algebra


def _dynamic_float(a, call, i, t, rank: int | None, lent: bool) -> bool:
    p = plain(t)
    ok = isinstance(p, Tensor) and p.element.is_float and (rank is None or p.rank == rank)
    if ok and lent and not p.is_dynamic:
        return wrong(a, call, call.args[i], t, "a dynamic matrix or vector to receive the answer") and False
    if not ok:
        wanted = {1: "a float vector", 2: "a float matrix"}.get(rank, "a float vector or matrix")
        wrong(a, call, call.args[i], t, wanted)
    return ok


@checker("Solve", "Invert", "Cholesky", "Qr")
def check_linear_algebra(a, call, expected):
    """Solve(a, b, address x), Invert(a, address inverse), Cholesky(a, address l),
    Qr(a, address q, address r): each answers false for a singular (or, for
    Cholesky, not positive-definite) matrix instead of failing."""
    name = call.callee.ident
    lent = {"Solve": [2], "Invert": [1], "Cholesky": [1], "Qr": [1, 2]}[name]
    if not arity(a, call, 1 + len(lent) + (name == "Solve")):
        return ERROR
    types = {}
    for i, arg in enumerate(call.args):
        types[i] = a.address_arg(arg, f"argument {i + 1} of {name}") if i in lent else a.expr(arg)
    if any(isinstance(t, ErrorType) for t in types.values()):
        return BOOLEAN
    plain_only(a, call, list(types.values()))
    if not host_only(a, call, [(call.args[i], t) for i, t in types.items()]):
        return BOOLEAN
    if not _dynamic_float(a, call, 0, types[0], 2, lent=False):
        return BOOLEAN
    element = plain(types[0]).element
    for i in range(1, len(call.args)):
        rank = None if name == "Solve" else 2
        if not _dynamic_float(a, call, i, types[i], rank, lent=i in lent):
            return BOOLEAN
        if plain(types[i]).element != element:
            return a.error(call.args[i], 4021, f"'{name}' needs one element type, found '{types[0]}' and '{types[i]}'")
    if name == "Solve" and plain(types[1]).rank != plain(types[2]).rank:
        a.error(call.args[2], 6018, f"Solve's answer has the right-hand side's shape: '{types[1]}', found '{types[2]}'")
    return BOOLEAN


# ---------------------------------------------------------------- checkpoints


def saveable(t: Type) -> str | None:
    """Why a value of type t cannot go into a checkpoint, or None when it can."""
    from .types import Array, Record

    p = plain(t)
    if isinstance(p, Scalar):
        return None if p.is_numeric or p == BOOLEAN else f"'{p}' is not a number"
    if isinstance(p, Tensor):
        return None
    if isinstance(p, Record):
        for name, field_type in p.fields:
            why = saveable(field_type)
            if why:
                return f"field '{name}': {why}"
        return None
    if isinstance(p, Array) and not p.is_dynamic:
        return saveable(p.element)
    return f"'{p}' has no fixed layout to store"


def place_path(e: ast.Expr) -> str | None:
    """The canonical path a place expression names, when its indices are constants."""
    if isinstance(e, ast.Name):
        return e.ident
    if isinstance(e, ast.Field):
        base = place_path(e.base)
        return f"{base}.{e.name}" if base else None
    if isinstance(e, ast.Index) and all(i.folded is not None for i in e.indices):
        base = place_path(e.base)
        return f"{base}[{', '.join(str(i.folded) for i in e.indices)}]" if base else None
    return None


@checker("Save", "Load")
def check_checkpoint(a, call, expected):
    """Save(path, place, ...) and Load(path, place, ...): one tensor per leaf, named by its canonical path."""
    name = call.callee.ident
    if len(call.args) < 2:
        return arity(a, call, 2) and ERROR
    path = a.expr(call.args[0])
    if not isinstance(path, ErrorType) and plain(path) != Scalar("string"):
        wrong(a, call, call.args[0], path, "a file name first")
    paths: dict[str, ast.Expr] = {}
    for arg in call.args[1:]:
        t = a.place(arg, "load into") if name == "Load" else a.expr(arg)
        if isinstance(t, ErrorType):
            continue
        where = place_path(arg)
        if where is None:
            a.error(arg, 5113, f"'{name}' stores places by their canonical path: pass a variable, a field or an "
                               "element with constant indices")
            continue
        if not host_only(a, call, [(arg, t)]):
            continue
        if residency.holds_device(t):
            a.error(arg, 7005, f"'{name}' runs on the host; '{where}' holds values on the GPU: save and load host "
                               f"copies, moved with ToHost and ToDevice")
            continue
        why = saveable(t)
        if why:
            a.error(arg, 4037, f"cannot {name.lower()} '{where}': {why}")
            continue
        for other in paths:
            if where == other or where.startswith(other + ".") or where.startswith(other + "[") \
                    or other.startswith(where + ".") or other.startswith(where + "["):
                a.error(arg, 5114, f"'{where}' and '{other}' overlap in one checkpoint")
        paths[where] = arg
    return BOOLEAN if name == "Load" else VOID
