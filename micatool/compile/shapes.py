"""Shape rules: products, broadcasts and the unification of shape variables.

Takes tensor types, gives the result type or a sentence saying why the shapes
cannot meet. The analyzer turns that sentence into a 6xxx diagnostic.
"""

from __future__ import annotations

from .types import Array, Dim, Tensor, Tracked, Type


# An int8 product is at most 255 * 128 < 2^15: 2^16 of them sum exactly in int32.
INTEGER_PRODUCT_DEPTH = 1 << 16


class ShapeMismatch(Exception):
    pass


def same_dim(a: Dim | None, b: Dim | None) -> bool:
    """Dimensions meet if equal, or if either is only known at run time (None)."""
    return a is None or b is None or a == b


def dims(t: Tensor) -> tuple:
    """A tensor's extents; a dynamic tensor's are unknown (None) until run time."""
    return t.shape if t.shape is not None else (None,) * t.rank


def result_tensor(template: Tensor, shape: tuple, dynamic: bool) -> Tensor:
    if dynamic:
        return Tensor(template.element, None, len(shape), template.on_gpu)
    return template.with_shape(shape)


def product_type(a: Tensor, b: Tensor) -> Tensor:
    """The type of the algebraic product a * b (LANGUAGE.md §4)."""
    sa, sb = dims(a), dims(b)
    dynamic = a.is_dynamic or b.is_dynamic
    if len(sa) == 1 and len(sb) == 1:
        raise ShapeMismatch("'*' between two vectors is not defined; use Dot for the inner product or Mul elementwise")
    if len(sa) == 1:  # row vector times matrix
        if len(sb) != 2:
            raise ShapeMismatch("a vector can only multiply a matrix")
        if not same_dim(sa[0], sb[0]):
            raise ShapeMismatch(f"the vector's length {sa[0]} differs from the matrix's rows {sb[0]}")
        return result_tensor(b, (sb[1],), dynamic)
    if len(sb) == 1:  # matrix (or batch of matrices) times vector
        if not same_dim(sa[-1], sb[0]):
            raise ShapeMismatch(f"inner dimensions {sa[-1]} and {sb[0]} differ")
        return result_tensor(a, sa[:-1], dynamic)
    if len(sb) == 2:  # matrix, or a batch of matrices, times one matrix
        if not same_dim(sa[-1], sb[0]):
            raise ShapeMismatch(f"inner dimensions {sa[-1]} and {sb[0]} differ")
        return result_tensor(a, sa[:-1] + (sb[1],), dynamic)
    if len(sa) != len(sb) or any(not same_dim(x, y) for x, y in zip(sa[:-2], sb[:-2])):
        raise ShapeMismatch("batched products need the same leading dimensions")
    if not same_dim(sa[-1], sb[-2]):
        raise ShapeMismatch(f"inner dimensions {sa[-1]} and {sb[-2]} differ")
    return result_tensor(a, sa[:-1] + (sb[-1],), dynamic)


def elementwise(a: Tensor, b: Tensor, op: str) -> Tensor:
    """a + b and a - b: equal shapes, or b's shape ending a's, added at every leading index
    (a vector to every row of a matrix, a matrix[T, C] to every matrix of a tensor[B, T, C])."""
    sa, sb = dims(a), dims(b)
    dynamic = a.is_dynamic or b.is_dynamic
    if len(sa) == len(sb):
        if all(same_dim(x, y) for x, y in zip(sa, sb)):
            return result_tensor(a, sa, dynamic)
        raise ShapeMismatch("the shapes differ")
    if len(sb) < len(sa) and (len(sb) == 1 or not dynamic):
        if all(same_dim(x, y) for x, y in zip(sa[-len(sb):], sb)):
            return result_tensor(a, sa, dynamic)
        if len(sb) == 1:
            raise ShapeMismatch(f"a vector of length {sb[0]} cannot be added to rows of length {sa[-1]}")
        raise ShapeMismatch(f"the right side's shape {list(sb)} does not end the left side's {list(sa)}")
    raise ShapeMismatch("the shapes differ")


def unify(param: Type, arg: Type, binding: dict[str, Dim]) -> bool:
    """Bind the shape variables of a parameter type so that arg fits it.

    Returns False when the structure differs; raises ShapeMismatch when a
    variable would need two sizes at once.
    """
    if isinstance(param, Tracked):
        return unify(param.inner, arg.inner if isinstance(arg, Tracked) else arg, binding)
    if isinstance(arg, Tracked):
        arg = arg.inner
    if isinstance(param, Array):
        if not isinstance(arg, Array) or (param.low, param.high) != (arg.low, arg.high):
            return False
        return unify(param.element, arg.element, binding)
    if not isinstance(param, Tensor) or param.is_dynamic:
        return True  # nothing to bind; assignability is checked afterwards
    if not isinstance(arg, Tensor) or arg.is_dynamic or len(arg.shape) != len(param.shape):
        return False
    for p, a in zip(param.shape, arg.shape):
        if isinstance(p, str):
            bound = binding.setdefault(p, a)
            if bound != a:
                raise ShapeMismatch(f"shape variable {p} would be both {bound} and {a}")
        elif p != a:
            return False
    return True


def product_extents(left: Tensor, right: Tensor) -> tuple[int, int, int, int]:
    """(batch, m, k, n) of a static product's matrix products, (m, k) by (k, n): batch
    of them for a batched product, else batch 0 and one, the left's leading dimensions
    folded into m (product's cases)."""
    if left.rank == 1:  # (k) * (k, n)
        return 0, 1, right.shape[0], right.shape[1]
    k = left.shape[-1]
    if right.rank <= 2:  # (..., m, k) * (k) or (k, n)
        return 0, left.count // k, k, 1 if right.rank == 1 else right.shape[1]
    m = left.shape[-2]  # (b, m, k) * (b, k, n)
    return left.count // (m * k), m, k, right.shape[-1]
