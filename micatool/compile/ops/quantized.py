"""Quantized tensors (LANGUAGE.md section 10): Quantize and Dequantize between
float and int8/uint8 tensors with a scale and a zero point, and QuantizeRows,
one symmetric int8 scale per row of a weight matrix. The arithmetic is
runtime_c/mica_quantize.c's: rounding half to even, saturating at the range.

On the GPU the tensors all live there and the scale and zero point are host
numbers, which travel with the launch; the kernels (ptx/quantized.ptx.j2) do
the C's arithmetic step for step, and a nan that the C traps on is flagged by
the kernel and trapped on by the host with the C's message
(mica_gpu_quantize, mica_gpu_quantize_rows in runtime_c/mica_gpu_tape.c).
"""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue, dtype_of
from ..types import ERROR, FLOAT32, FLOAT64, INT8, INTEGER, UINT8, VOID, ErrorType, Tensor, Type, plain
from .registry import define
from .checking import arity, is_integer, is_numeric, plain_only, wrong
from .lowering import NOTHING, c_product, extents, fresh_tensor, plain_arg, storage

QUANTIZED = (INT8, UINT8)


def float_tensor(t: Type) -> bool:
    p = plain(t)
    return isinstance(p, Tensor) and p.element.is_float and p.rank > 0


def quantized_tensor(t: Type) -> bool:
    p = plain(t)
    return isinstance(p, Tensor) and p.element in QUANTIZED and p.rank > 0


def scale_and_zero_fit(a, call, scale: Type, zero: Type) -> bool:
    """Arguments 2 and 3 of Quantize and Dequantize: a number and an integer (else a diagnostic)."""
    if not is_numeric(scale):
        wrong(a, call, call.args[1], scale, "a number, the scale")
        return False
    if not is_integer(zero):
        wrong(a, call, call.args[2], zero, "an integer, the zero point")
        return False
    return True


def same_shape(a, call, x: Type, q: Type) -> bool:
    """x and q hold the same elements: one static shape, or a rank a dynamic one shares."""
    px, pq = plain(x), plain(q)
    if px.rank == pq.rank and (px.shape is None or pq.shape is None or px.shape == pq.shape):
        return True
    a.error(call, 6017, f"'{call.callee.ident}' needs one shape throughout: '{x}' and '{q}'")
    return False


def check_quantize(a, call, expected):
    """Quantize(x, scale, zero, address q)."""
    if not arity(a, call, 4):
        return ERROR
    x, scale, zero = (a.expr(arg) for arg in call.args[:3])
    q = a.address_arg(call.args[3], "argument 4 of Quantize")
    if any(isinstance(t, ErrorType) for t in (x, scale, zero, q)):
        return VOID
    plain_only(a, call, [x, scale, zero, q])
    if not together(a, call, [0, 3], [x, q]) or not host_numbers(a, call, scale, zero):
        return VOID
    if not float_tensor(x):
        return wrong(a, call, call.args[0], x, "a float tensor")
    if not scale_and_zero_fit(a, call, scale, zero):
        return ERROR
    if not quantized_tensor(q):
        return wrong(a, call, call.args[3], q, "an int8 or uint8 tensor to receive the result")
    same_shape(a, call, x, q)
    return VOID


def together(a, call, indices: list[int], types: list[Type]) -> bool:
    """The tensors at `indices` live in one place (7001), either one."""
    return residency.check_together(a, call, f"'{call.callee.ident}'", [call.args[i] for i in indices], types)


def host_numbers(a, call, scale: Type, zero: Type) -> bool:
    """The scale and the zero point (arguments 2 and 3) are host numbers: on the GPU too, they
    travel with the launch (7005)."""
    for arg, t in zip(call.args[1:3], (scale, zero)):
        if residency.on_gpu(t):
            a.error(arg, 7005, f"'{call.callee.ident}' takes its scale and zero point as host numbers, which "
                               f"travel with the launch; {residency.describe(arg)} lives on the GPU: bring it "
                               f"across with ToHost({residency.argument_text(arg)})")
            return False
    return True


def scale_and_zero(f, call: ast.Call, element) -> tuple[str, str]:
    """The C of arguments 2 and 3: the scale in the float type `element`, the zero point an integer."""
    scale = f.convert(f.value(call.args[1]), element, call.pos.line).text
    zero = f.convert(f.value(call.args[2]), INTEGER, call.pos.line).text
    return scale, zero


def lower_quantize(f, call: ast.Call) -> CValue:
    x = plain_arg(f, call.args[0])
    element = plain(x.type).element
    scale, zero = scale_and_zero(f, call, element)
    place = f.place(call.args[3].place)
    data, count = storage(f, place)
    n = c_product(extents(f, x))
    if plain(x.type).is_dynamic or plain(place.type).is_dynamic:
        f.line(f'mica_check_shape({count}, {n}, {call.pos.line}, "elements to receive the quantized ones");')
    qs = SUFFIX[plain(place.type).element]
    f.line(f"mica_quantize_{qs}_{SUFFIX[element]}({data}, {f.data(x)}, {n}, {scale}, {zero}, "
                f"{call.pos.line});")
    return NOTHING


def device_quantize(f, call: ast.Call) -> CValue:
    x = plain_arg(f, call.args[0])
    element = plain(x.type).element
    scale, zero = scale_and_zero(f, call, element)
    q = f.place(call.args[3].place)
    base = f"mica_quantize_{SUFFIX[plain(q.type).element]}"
    f.uses_kernel(f"{base}_{SUFFIX[element]}")
    f.line(f'mica_gpu_quantize(&{q.text}, "{base}", {dtype_of(x.type)}, '
                f"{f.materialize(f.borrow(x)).text}, {plain(x.type).count}, {scale}, {zero}, "
                f"{call.pos.line});")
    return NOTHING


define("Quantize", check=check_quantize, lower=lower_quantize, device=device_quantize,
       kernels=["quantize_i8", "quantize_u8"],
       signature="Quantize(x : float tensor; scale : number; zero : integer; address q : int8 or uint8 tensor)",
       doc="Writes roundeven(x / scale) + zero into q, clamped to q's range; a zero or NaN scale traps.")


def check_dequantize(a, call, expected):
    """Dequantize(q, scale, zero): a float tensor of the scale's type (float64 for a literal)."""
    if not arity(a, call, 3):
        return ERROR
    q, scale, zero = (a.expr(arg) for arg in call.args)
    if any(isinstance(t, ErrorType) for t in (q, scale, zero)):
        return ERROR
    plain_only(a, call, [q, scale, zero])
    if not host_numbers(a, call, scale, zero):
        return ERROR
    if not quantized_tensor(q):
        return wrong(a, call, call.args[0], q, "an int8 or uint8 tensor")
    if not scale_and_zero_fit(a, call, scale, zero):
        return ERROR
    element = FLOAT32 if plain(scale) == FLOAT32 else FLOAT64
    p = plain(q)
    return Tensor(element, None, p.rank) if p.is_dynamic else Tensor(element, p.shape, 0, p.on_gpu)


def lower_dequantize(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    q = plain_arg(f, call.args[0])
    scale, zero = scale_and_zero(f, call, t.element)
    out = fresh_tensor(f, t, q, call.pos.line)
    qs = SUFFIX[plain(q.type).element]
    f.line(f"mica_dequantize_{SUFFIX[t.element]}_{qs}({out.text}.e, {f.data(q)}, "
                f"{c_product(extents(f, q))}, {scale}, {zero});")
    return out


def device_dequantize(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    q = plain_arg(f, call.args[0])
    scale, zero = scale_and_zero(f, call, t.element)
    out = f.device_temp(t, call.pos.line)
    f.launch(f"mica_dequantize_{SUFFIX[plain(q.type).element]}_{SUFFIX[t.element]}", call.pos.line,
                    out=f"{out.text}.ptr", q=f.device_data(q, call.pos.line), n=t.count, scale=scale, zero=zero)
    return out


define("Dequantize", check=check_dequantize, lower=lower_dequantize, device=device_dequantize,
       kernels=["dequantize_i8", "dequantize_u8"],
       signature="Dequantize(q : int8 or uint8 tensor; scale : number; zero : integer) : float tensor",
       doc="The floats (q - zero) * scale, in the scale's float type.")


def check_quantize_rows(a, call, expected):
    """QuantizeRows(x, address q, address scales): x a float matrix [R, C] of static
    shape, q an int8 matrix of its shape, scales a vector [R] of x's float type."""
    if not arity(a, call, 3):
        return ERROR
    x = a.expr(call.args[0])
    q = a.address_arg(call.args[1], "argument 2 of QuantizeRows")
    scales = a.address_arg(call.args[2], "argument 3 of QuantizeRows")
    if any(isinstance(t, ErrorType) for t in (x, q, scales)):
        return VOID
    plain_only(a, call, [x, q, scales])
    if not together(a, call, [0, 1, 2], [x, q, scales]):
        return VOID
    px, pq, ps = plain(x), plain(q), plain(scales)
    if not (float_tensor(x) and px.rank == 2 and not px.is_dynamic):
        return wrong(a, call, call.args[0], x, "a float matrix with a static shape")
    if pq != Tensor(INT8, px.shape, 0, px.on_gpu):
        return wrong(a, call, call.args[1], q, f"'matrix[{px.shape[0]}, {px.shape[1]}] of int8'")
    if ps != Tensor(px.element, (px.shape[0],), 0, px.on_gpu):
        return wrong(a, call, call.args[2], scales, f"'vector[{px.shape[0]}] of {px.element}', a scale per row")
    return VOID


def lower_quantize_rows(f, call: ast.Call) -> CValue:
    x = plain_arg(f, call.args[0])
    rows, cols = plain(x.type).shape
    q, scales = (f.place(arg.place) for arg in call.args[1:])
    f.line(f"mica_quantize_rows_i8_{SUFFIX[plain(x.type).element]}({q.text}.e, {scales.text}.e, "
                f"{f.data(x)}, {rows}, {cols}, {call.pos.line});")
    return NOTHING


def device_quantize_rows(f, call: ast.Call) -> CValue:
    x = plain_arg(f, call.args[0])
    rows, cols = plain(x.type).shape
    q, scales = (f.place(arg.place) for arg in call.args[1:])
    f.uses_kernel(f"mica_quantize_rows_i8_{SUFFIX[plain(x.type).element]}")
    f.line(f"mica_gpu_quantize_rows(&{q.text}, &{scales.text}, {dtype_of(x.type)}, "
                f"{f.materialize(f.borrow(x)).text}, {rows}, {cols}, {call.pos.line});")
    return NOTHING


define("QuantizeRows", check=check_quantize_rows, lower=lower_quantize_rows, device=device_quantize_rows,
       kernels=["quantize_rows_i8"],
       signature="QuantizeRows(x : matrix[R, C]; address q : matrix[R, C] of int8; address scales : vector[R])",
       doc="Quantizes each row of x into q with its own scale, max |row| / 127, written into scales.")
