"""Device lowering: operations on GPU values become kernel launches.

A device value is a `mica_dev` (its storage's device address and size). An
operator with a device operand lowers here instead of to a host kernel (and a
vocabulary call through its op's device lowering, ops/): a fresh device
temporary for the result, and one `mica_gpu_launch` of the kernel that
mirrors the host kernel (micatool.compile.ptx lists each kernel's
parameters and thread count). The kernels a program launches are the only
ones its binary embeds.
"""

from __future__ import annotations

from .. import ast, shapes
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..residency import on_gpu
from ..ops.lowering import too_deep
from ..types import INTEGER, SCALAR_BYTES, Scalar, Tensor, Type, element_count, element_of, plain

# The C type each signature letter's argument is passed as (ptx.LETTERS).
VARARG_TYPE = {"p": "uint64_t", "i": "int64_t", "u": "int", "f": "double", "d": "double"}


def byte_size(t: Type) -> int:
    return element_count(t) * SCALAR_BYTES[element_of(t).name]


class Device:
    """One function's GPU side: launches, transfers, device temporaries and the operators on device values."""

    def __init__(self, f):
        self.f = f
        self.emit = f.emit

    def launch(self, kernel: str, line: int, grid_y: int = 1, **args) -> None:
        """One kernel launch; args are C expressions keyed by the kernel's parameter names.
        grid_y is the grid's height, for kernels that take one (a batch of products)."""
        from .. import ptx

        spec = ptx.KERNELS[kernel]
        self.f.lowering.kernels.add(kernel)
        values, extents = [], {"batch": grid_y}
        for param in spec.params:
            text = str(args[param.name])
            # varargs must arrive as the launcher reads them
            values.append(f"({VARARG_TYPE[ptx.LETTERS[param.ptx]]})({text})")
            if param.kind in ("int", "flag"):
                extents[param.name] = int(text) if text.lstrip("-").isdigit() else text
        threads = spec.threads.of(extents)
        grid = f"{threads}" if spec.grid_y is None else f"{threads}, {spec.grid_y.of(extents)}"
        self.emit.line(f'mica_gpu_launch{"" if spec.grid_y is None else "_grid"}("{kernel}", {grid}, {line}, '
                       f'"{ptx.signature(spec)}", {", ".join(values)});')

    def temp(self, t: Type, line: int) -> CValue:
        """A fresh device value of type t, its storage reserved (and zeroed)."""
        t = plain(t)
        name = self.emit.declare(t)
        self.emit.line(f"mica_dev_reserve(&{name}, {byte_size(t)}, {line});")
        return CValue(name, t, owned=True, lvalue=True)

    def ids(self, e: ast.Expr, line: int) -> str:
        """Ids or targets for a device kernel: a device value, or a host integer sent along
        (a scalar travels with the launch, as host numbers do)."""
        v = self.f.exprs.untracked(self.f.exprs.value(e))
        if isinstance(plain(v.type), Scalar):
            ids = self.emit.declare(Tensor(INTEGER, (), 0, True))
            self.emit.line(f"mica_dev_upload(&{ids}, "
                           f"&{self.f.exprs.materialize(self.f.exprs.convert(v, INTEGER, line)).text}, 8, {line});")
            return ids
        return self.f.exprs.materialize(self.f.exprs.borrow(v)).text

    def data(self, v: CValue, line: int) -> str:
        """The device address of an operand (a place never written reads as zeros)."""
        v = self.f.exprs.materialize(self.f.exprs.borrow(v))
        return f"mica_dev_read(&{v.text}, {byte_size(v.type)}, {line})"

    # ============================================================ crossings

    def to_device(self, call: ast.Call) -> CValue:
        t = plain(self.f.concrete(call.ty))
        host = self.f.exprs.untracked(self.f.exprs.value(call.args[0]))
        out = self.emit.declare(t)
        data = (f"&{self.f.exprs.materialize(host).text}" if isinstance(plain(host.type), Scalar)
                else self.f.exprs.data(host))
        if isinstance(plain(host.type), Scalar) and plain(host.type) != element_of(t):
            data = f"&{self.f.exprs.materialize(self.f.exprs.convert(host, element_of(t), call.pos.line)).text}"
        self.emit.line(f"mica_dev_upload(&{out}, {data}, {byte_size(t)}, {call.pos.line});")
        return CValue(out, t, owned=True, lvalue=True)

    def to_host(self, call: ast.Call) -> CValue:
        t = plain(self.f.concrete(call.ty))
        device = self.f.exprs.untracked(self.f.exprs.value(call.args[0]))
        out = self.emit.declare_uninitialized(t)
        target = f"&{out}" if isinstance(plain(t), Scalar) else f"{out}.e"
        self.emit.line(f"mica_dev_download({target}, {self.f.exprs.materialize(self.f.exprs.borrow(device)).text}, "
                       f"{byte_size(t)}, {call.pos.line});")
        return CValue(out, t, lvalue=True)

    # ============================================================ operators

    def binary(self, e: ast.Binary) -> CValue:
        t = plain(self.f.concrete(e.ty))
        s, line = SUFFIX[t.element], e.pos.line
        left, right = (self.f.exprs.untracked(self.f.exprs.value(e.left)),
                       self.f.exprs.untracked(self.f.exprs.value(e.right)))
        if t.rank == 0:  # device scalars join as host numbers do: float32 with float64 gives float64
            left, right = (self.as_element(v, t.element, line) if isinstance(plain(v.type), Tensor) else v
                           for v in (left, right))
        lt, rt = plain(left.type), plain(right.type)
        out = self.temp(t, line)
        both_device = isinstance(lt, Tensor) and isinstance(rt, Tensor)
        if both_device and lt.rank == rt.rank == 0:  # two device scalars
            a, b = self.data(left, line), self.data(right, line)
            kernel = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[e.op]
            self.launch(f"mica_{kernel}_{s}", line, out=f"{out.text}.ptr", a=a, b=b, n=1)
            return out
        if both_device and lt.rank and rt.rank:
            a, b = self.data(left, line), self.data(right, line)
            if e.op == "*":
                self.product(out, a, b, lt, rt, s, line)
            elif lt.shape == rt.shape:
                self.launch(f"mica_{'add' if e.op == '+' else 'sub'}_{s}", line, out=f"{out.text}.ptr", a=a, b=b,
                            n=t.count)
            else:
                kernel = f"mica_{'add' if e.op == '+' else 'sub'}_rows_{s}"
                self.launch(kernel, line, out=f"{out.text}.ptr", a=a, row=b, rows=t.count // rt.count, cols=rt.count)
            return out
        tensor_left = isinstance(lt, Tensor) and (lt.rank > 0 or not both_device)
        if e.op == "/" and not tensor_left:  # a host number over a device scalar: it crosses as a kernel operand
            numerator = self.emit.declare(t)
            self.emit.line(f"mica_dev_upload(&{numerator}, "
                           f"&{self.f.exprs.materialize(self.f.exprs.convert(left, t.element, line)).text}, "
                           f"{byte_size(t)}, {line});")
            self.launch(f"mica_div_{s}", line, out=f"{out.text}.ptr", a=f"{numerator}.ptr",
                        b=self.data(right, line), n=1)
            return out
        tensor, scalar = (left, right) if tensor_left else (right, left)
        a = self.data(tensor, line)
        if both_device:  # a device scalar: the kernel reads it at its device address
            k, at = self.data(scalar, line), "_at"
        else:
            k, at = self.f.exprs.convert(scalar, t.element, line).text, ""
        kernel = {"*": "scale", "/": "divide", "+": "shift"}.get(e.op, "sub")
        if e.op == "-" and not tensor_left:
            kernel = "rsub"
        elif kernel == "sub":  # a - k
            if both_device:
                self.launch(f"mica_sub_rows_{s}", line, out=f"{out.text}.ptr", a=a, row=k, rows=t.count, cols=1)
                return out
            kernel, k = "shift", f"-({k})"
        self.launch(f"mica_{kernel}{at}_{s}", line, out=f"{out.text}.ptr", a=a, s=k, n=t.count)
        return out

    def product(self, out: CValue, a: str, b: str, lt: Tensor, rt: Tensor, s: str, line: int) -> None:
        """The forms of '*', as one gemm launch per matrix product (the host's order of sums), or
        the integer product's one launch."""
        batch, m, k, n = shapes.product_extents(lt, rt)
        if lt.element.is_integer:  # int8 or uint8 times int8, exactly in int32 (no batch: matrices only)
            if k > shapes.INTEGER_PRODUCT_DEPTH:  # a routine's shape variable bound too deep
                self.emit.line(too_deep(k, line))
                return
            self.launch(f"mica_matmul_i32_{SUFFIX[lt.element]}_i8", line, out=f"{out.text}.ptr", a=a, b=b, m=m, k=k,
                        n=n)
            return
        if batch:  # the grid's height walks the batch
            self.launch(f"mica_gemm_{s}", line, grid_y=batch, trans_a=0, trans_b=0, m=m, n=n, k=k,
                        a=a, lda=k, b=b, ldb=n, c=f"{out.text}.ptr", ldc=n, accumulate=0,
                        stride_a=m * k, stride_b=k * n, stride_c=m * n)
            return
        self.launch(f"mica_gemm_{s}", line, trans_a=0, trans_b=0, m=m, n=n, k=k, a=a, lda=k, b=b, ldb=n,
                    c=f"{out.text}.ptr", ldc=n, accumulate=0, stride_a=0, stride_b=0, stride_c=0)

    def unary(self, e: ast.Unary) -> CValue:
        t = plain(self.f.concrete(e.ty))
        operand = self.f.exprs.untracked(self.f.exprs.value(e.operand))
        if e.op == "+":
            return operand
        out = self.temp(t, e.pos.line)
        self.launch(f"mica_neg_{SUFFIX[t.element]}", e.pos.line, out=f"{out.text}.ptr",
                    a=self.data(operand, e.pos.line), n=element_count(t))
        return out

    # ============================================================ conversions and stores

    def as_element(self, x: CValue, element: Scalar, line: int) -> CValue:
        """x with float elements of the given type, converted on the device when they differ."""
        source = element_of(x.type)
        if source == element:
            return x
        t = plain(x.type)
        out = self.temp(Tensor(element, t.shape, 0, True), line)
        self.launch(f"mica_convert_{SUFFIX[element]}_{SUFFIX[source]}", line, out=f"{out.text}.ptr",
                    a=self.data(x, line), n=element_count(t))
        return out

    def store(self, target: CValue, value: CValue, line: int) -> None:
        if value.owned:
            self.emit.line(f"mica_dev_move(&{target.text}, {value.text});")
        else:
            self.emit.line(f"mica_dev_assign(&{target.text}, {self.f.exprs.materialize(value).text}, {line});")


def uses_device(e: ast.Expr) -> bool:
    """Does this call or operator work on GPU values (an operand, or its result)?"""
    types = [e.ty] + [a.ty for a in getattr(e, "args", []) if not isinstance(a, ast.AddressArg)]
    types += [getattr(e, "left", None) and e.left.ty, getattr(e, "right", None) and e.right.ty,
              getattr(e, "operand", None) and e.operand.ty]
    return any(t is not None and on_gpu(t) for t in types)
