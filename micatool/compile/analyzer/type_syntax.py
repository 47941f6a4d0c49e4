"""Type syntax -> types: shapes and their dimensions, records, the GPU element rule,
the static size limits."""

from __future__ import annotations

from .. import ast
from ..symbols import AmbiguousSymbol, ConstSymbol, ShapeVarSymbol, TypeSymbol
from ..residency import holds_device
from ..types import (ERROR, STREAM, Array, Channel, ErrorType, Record, Scalar, Tensor, Tracked, Type, has_tracked,
                     storage_bytes, trackable)
from .rules import STATIC_LIMIT_BYTES, STREAM_ALONE, TENSOR_CONSTRUCTORS


class TypeSyntax:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts

    def resolve_type(self, t, name: str | None = None, new_shape_vars: list | None = None,
                     known_shape_vars: set | None = None) -> Type:
        known = set(known_shape_vars or ()) | set(new_shape_vars or ())
        if self.a.routine is not None:
            known |= set(self.a.routine.shape_vars)
        if isinstance(t, ast.NamedType):
            symbol = self.a.resolve(t, "type")
            if symbol is None:
                return ERROR
            if not isinstance(symbol, TypeSymbol):
                return self.a.error(t, 3003, f"'{t.name}' is not a type")
            return symbol.type
        if isinstance(t, ast.ShapedType):
            return self.shaped_type(t, new_shape_vars, known)
        if isinstance(t, ast.DynamicShapedType) and t.constructor == "channel":
            return self.channel_type(t, known)
        if isinstance(t, ast.DynamicShapedType):
            element = self.tensor_element(t.element, t)
            if t.constructor not in ("vector", "matrix"):
                return self.a.error(t, 4003, f"'{t.constructor} of T' is not a type; "
                                             "dynamic tensors are 'vector of T' and 'matrix of T'")
            if isinstance(element, ErrorType):
                return ERROR
            if self.on_gpu(t.element):
                return self.a.error(t, 7008, "a GPU tensor needs a static shape: "
                                             "its storage is allocated on the device")
            return Tensor(element, None, TENSOR_CONSTRUCTORS[t.constructor])
        if isinstance(t, ast.StaticArrayType):
            low, high = self.const_int(t.low), self.const_int(t.high)
            element = self.resolve_type(t.element, known_shape_vars=known)
            if low is None or high is None or isinstance(element, ErrorType):
                return ERROR
            if element == STREAM:
                return self.a.error(t, 5021, STREAM_ALONE.format("an array's element"))
            if low > high:
                return self.a.error(t, 6002, f"array bounds {low}..{high} are empty: "
                                             "the low bound is above the high bound")
            return self.within_static_limit(t, Array(element, low, high))
        if isinstance(t, ast.DynamicArrayType):
            element = self.resolve_type(t.element, known_shape_vars=known)
            if element == STREAM:
                return self.a.error(t, 5021, STREAM_ALONE.format("an array's element"))
            if has_tracked(element):
                return self.a.error(t, 5103, "a dynamic array cannot hold tracked values: "
                                             "their paths must be known before the program runs")
            return Array(element, None, None)
        if isinstance(t, ast.RecordType):
            return self.record_type(t, name, known)
        if isinstance(t, ast.TrackedType):
            inner = self.resolve_type(t.inner, new_shape_vars=new_shape_vars, known_shape_vars=known)
            if isinstance(inner, ErrorType):
                return ERROR
            if trackable(inner):
                return Tracked(inner)
            return self.a.error(t, 5101, f"'tracked' needs a float scalar or a static-shaped float tensor, "
                                         f"not '{inner}'")
        if isinstance(t, ast.AddressType):
            return self.a.error(t, 5104, "'address' belongs in a parameter list: "
                                         "it lends the caller's place to the routine")
        if isinstance(t, ast.OnGpuType):
            inner = self.resolve_type(t.inner, new_shape_vars=new_shape_vars, known_shape_vars=known)
            if isinstance(inner, ErrorType):
                return ERROR
            if isinstance(inner, Scalar) and inner.is_numeric:
                return Tensor(inner, (), 0, True)  # a device scalar
            if isinstance(inner, Tensor) and inner.is_dynamic:
                return self.a.error(t, 7008, "a GPU tensor needs a static shape: "
                                             "its storage is allocated on the device")
            if isinstance(inner, Tensor):  # a named tensor type, moved
                return Tensor(inner.element, inner.shape, 0, True)
            return self.a.error(t, 7009, f"'on gpu' applies to numbers and static tensors, not '{inner}'")
        raise AssertionError(f"unknown type syntax {t!r}")

    def on_gpu(self, element) -> bool:
        return isinstance(element, ast.OnGpuType)

    def tensor_element(self, element, where) -> Scalar | ErrorType:
        t = self.resolve_type(element.inner if self.on_gpu(element) else element)
        if isinstance(t, ErrorType):
            return ERROR
        if not isinstance(t, Scalar) or not t.is_numeric:
            return self.a.error(where, 4004, f"a tensor's elements must be a float or integer type, not '{t}'")
        return t

    def channel_type(self, t: ast.DynamicShapedType, known: set) -> Type:
        element = self.resolve_type(t.element, known_shape_vars=known)
        if isinstance(element, ErrorType):
            return ERROR
        if element == STREAM:
            return self.a.error(t, 5021, STREAM_ALONE.format("what a channel carries"))
        if has_tracked(element) or holds_device(element):
            return self.a.error(t, 4038, f"a channel carries host values without a tape node; "
                                         f"'{element}' is not one")
        return Channel(element)

    def shaped_type(self, t: ast.ShapedType, new_shape_vars, known) -> Type:
        rank = TENSOR_CONSTRUCTORS.get(t.constructor, -1)
        if rank == -1:
            return self.a.error(t, 3003, f"'{t.constructor}' is not a tensor type; use vector, matrix or tensor")
        if rank is not None and len(t.dims) != rank:
            word = "one dimension" if rank == 1 else "two dimensions"
            return self.a.error(t, 6003, f"'{t.constructor}' takes {word}, found {len(t.dims)}")
        dims = []
        for d in t.dims:
            dim = self.dimension(d, new_shape_vars, known)
            if dim is None:
                return ERROR
            dims.append(dim)
        element = self.tensor_element(t.element, t)
        if isinstance(element, ErrorType):
            return ERROR
        return self.within_static_limit(t, Tensor(element, tuple(dims), 0, self.on_gpu(t.element)))

    def within_static_limit(self, where: ast.Node, t: Type) -> Type:
        """A static type lives in place, as C storage: keep it to a size a machine can address."""
        if storage_bytes(t) > STATIC_LIMIT_BYTES:
            return self.a.error(where, 6019, f"'{t}' would take {storage_bytes(t)} bytes in place; a static type "
                                           f"holds at most 1 TiB: use a dynamic array or tensor")
        return t

    def dimension(self, d: ast.Expr, new_shape_vars, known) -> int | str | None:
        if isinstance(d, ast.Name) and d.unit is None:  # a unit's qualified name can only be a constant
            symbol = self.a.scope.lookup(d.ident)
            if d.ident in known:
                return d.ident
            if isinstance(symbol, AmbiguousSymbol):  # two used units declare it: qualify it (3016)
                self.a.resolve(d)
                return None
            if isinstance(symbol, TypeSymbol):
                self.a.error(d, 4005, f"'{d.ident}' is a type; a dimension is a constant or a shape variable")
                return None
            if not isinstance(symbol, ConstSymbol) and new_shape_vars is not None:
                new_shape_vars.append(d.ident)  # any name but a constant's: a shape variable (it shadows)
                known.add(d.ident)
                return d.ident
            if symbol is None or isinstance(symbol, ShapeVarSymbol):
                self.a.error(d, 3001, f"unknown name '{d.ident}' in a dimension; "
                                      "shape variables are introduced by parameter types")
                return None
            if not isinstance(symbol, ConstSymbol):
                self.a.error(d, 4005, f"a dimension is a constant, and '{d.ident}' is not one; shape variables are "
                                    f"introduced by parameter types")
                return None
        if self.mentions_shape_var(d, known):
            self.a.error(d, 6004, "a shape variable must stand alone as a dimension")
            return None
        value = self.const_int(d)
        if value is None:
            return None
        if value <= 0:
            self.a.error(d, 6001, f"a dimension must be positive, found {value}")
            return None
        return value

    def mentions_shape_var(self, e: ast.Expr, known) -> bool:
        return any(isinstance(node, ast.Name) and node.ident in known for node in ast.walk(e))

    def record_type(self, t: ast.RecordType, name, known) -> Type:
        fields: list[tuple[str, Type]] = []
        seen: set[str] = set()
        for decl in t.fields:
            ft = self.resolve_type(decl.type, known_shape_vars=known)
            if ft == STREAM:
                ft = self.a.error(decl, 5021, STREAM_ALONE.format("a record's field"))
            for field_name in decl.names:
                if field_name in seen:
                    self.a.error(decl, 3004, f"field '{field_name}' appears twice in the record")
                seen.add(field_name)
                fields.append((field_name, ft))
        record = Record(name or f"record_{len(self.a.records) + 1}", tuple(fields), anonymous=name is None)
        self.a.records.append(record)
        return record

    def const_int(self, e: ast.Expr) -> int | None:
        t = self.a.expressions.expr(e)
        if isinstance(t, ErrorType):
            return None
        if not (isinstance(t, Scalar) and t.is_integer) or e.folded is None:
            self.a.error(e, 4005, "expected an integer known at compile time")
            return None
        return e.folded
