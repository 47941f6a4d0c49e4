"""Image networks: Conv2d of a batch of images with a bank of kernels, and
MaxPool2d and AvgPool2d over square windows."""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue, dims_literal
from ..types import ERROR, ErrorType, Tensor, plain
from .registry import define
from .checking import argument_types, arity, records_on_gpu, touch, tracked_if, wrong
from .lowering import fresh_tensor, node_result, plain_arg, records


def _static_image(a, call, arg, t, ranks) -> bool:
    p = plain(t)
    if not (isinstance(p, Tensor) and p.element.is_float and not p.is_dynamic and p.rank in ranks):
        wrong(a, call, arg, t, " or ".join(f"a static float tensor of rank {r}" for r in ranks))
        return False
    return True


def check_conv2d(a, call, expected):
    """Conv2d(x : [C, H, W] or [B, C, H, W], k : [O, C, KH, KW]): valid, stride 1."""
    types = argument_types(a, call, 2)
    if types is None:
        return ERROR
    x, k = types
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


def lower_conv2d(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    s = SUFFIX[t.element]
    xt, kt = plain(f.concrete(call.args[0].ty)), plain(f.concrete(call.args[1].ty))
    batch = xt.shape[0] if xt.rank == 4 else 1
    if records(f, call):
        rank, dims = dims_literal(t)
        return node_result(f, call, f"mica_t_conv2d_{s}({f.node(call.args[0])}, {f.node(call.args[1])}, "
                                    f"{batch}, {rank}, {dims})")
    x, k = plain_arg(f, call.args[0]), plain_arg(f, call.args[1])
    out = fresh_tensor(f, t, None, call.pos.line)
    cin, h, w = xt.shape[-3:]
    cout, _, kh, kw = kt.shape
    f.line(f"mica_conv2d_{s}({out.text}.e, {f.data(x)}, {f.data(k)}, "
                f"{batch}, {cin}, {h}, {w}, {cout}, {kh}, {kw});")
    return out


def device_conv2d(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    x, k = (f.untracked(f.value(a)) for a in call.args)
    xt, kt = plain(x.type), plain(k.type)
    out = f.device_temp(t, call.pos.line)
    f.launch(f"mica_conv2d_{SUFFIX[t.element]}", call.pos.line, out=f"{out.text}.ptr",
                x=f.device_data(x, call.pos.line), k=f.device_data(k, call.pos.line),
                batch=xt.shape[0] if xt.rank == 4 else 1, cin=xt.shape[-3], h=xt.shape[-2], w=xt.shape[-1],
                cout=kt.shape[0], kh=kt.shape[2], kw=kt.shape[3])
    return out


define("Conv2d", records=True, check=check_conv2d, lower=lower_conv2d, device=device_conv2d, kernels=["conv2d"],
       signature="Conv2d(x : [C, H, W] or [B, C, H, W]; k : [O, C, KH, KW]) : [(B,) O, H-KH+1, W-KW+1]",
       doc="The valid 2-D convolution of x with the kernels k, stride 1.")


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
    pooled = plain(x).with_shape(shape[:-2] + (shape[-2] // size, shape[-1] // size))
    return records_on_gpu(a, call, tracked_if(pooled, x))


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


def device_pool(f, call: ast.Call) -> CValue:
    t = plain(f.concrete(call.ty))
    x = f.untracked(f.value(call.args[0]))
    xt = plain(x.type)
    h, w = xt.shape[-2:]
    out = f.device_temp(t, call.pos.line)
    name = call.callee.ident.lower()
    extra = {"where": 0} if name == "maxpool2d" else {}
    f.launch(f"mica_{name}_{SUFFIX[t.element]}", call.pos.line, out=f"{out.text}.ptr",
                x=f.device_data(x, call.pos.line), planes=xt.count // (h * w), h=h, w=w,
                size=call.args[1].folded, **extra)
    return out


define("MaxPool2d", records=True, check=check_pool, lower=lower_pool, device=device_pool, kernels=["maxpool2d"],
       signature="MaxPool2d(x : [C, H, W] or [B, C, H, W]; s : constant integer) : [..., H div s, W div s]",
       doc="The largest element of each non-overlapping s-by-s window.")
define("AvgPool2d", records=True, check=check_pool, lower=lower_pool, device=device_pool, kernels=["avgpool2d"],
       signature="AvgPool2d(x : [C, H, W] or [B, C, H, W]; s : constant integer) : [..., H div s, W div s]",
       doc="The mean of each non-overlapping s-by-s window.")
