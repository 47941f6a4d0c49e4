"""Write and WriteLn, with `:width:decimals` formats: to the program's standard output
(Output), or to the stream given first, in the same formats."""

from __future__ import annotations

from .. import ast, residency
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import BOOLEAN, STREAM, STRING, VOID, ErrorType, Scalar, Tensor, Type, plain
from .registry import define
from .checking import check_signature, is_integer
from .lowering import NOTHING


def printable(t: Type) -> bool:
    p = plain(t)
    return (isinstance(p, Scalar)) or isinstance(p, Tensor)


OUTPUT = "(&mica_output)"  # the stream of the output buffer, which plain Write fills


def check_write(a, call: ast.Call, expected) -> Type:
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.FormatArg):
            t = a.expr(arg.value)
            arg.ty = t
            for part in (arg.width, arg.decimals):
                if part is not None:
                    pt = a.expr(part)
                    if not isinstance(pt, ErrorType) and not is_integer(pt):
                        a.error(part, 4033, f"a width or decimal count must be an integer, found '{pt}'")
            if isinstance(t, ErrorType):
                continue
            element = plain(t).element if isinstance(plain(t), Tensor) else plain(t)
            if arg.decimals is not None and not (isinstance(element, Scalar) and element.is_float):
                a.error(arg.decimals, 4034, f"decimals apply to floats; '{t}' takes only a width")
        else:
            if isinstance(arg, ast.AddressArg):
                a.expr(arg.place)
                a.error(arg, 5007, "Write prints values; remove 'address'")
                continue
            t = a.expr(arg)
            if i == 0 and t == STREAM:  # the stream to write to
                a.change_stream(arg)
                continue
        if not isinstance(t, ErrorType) and residency.on_gpu(t):
            value = arg.value if isinstance(arg, ast.FormatArg) else arg
            a.error(arg, 7002, f"Write prints host values; {residency.describe(value)} "
                               "lives on the GPU: print ToHost(...) of it")
        elif t == STREAM:
            a.error(arg, 4035, "a stream is written to, not printed: name it first, as in 'WriteLn(f, ...)'")
        elif not isinstance(t, ErrorType) and not printable(t):
            a.error(arg, 4035, f"cannot print a value of type '{t}'; print its fields or elements")
    return VOID


def lower_write(f, call: ast.Call) -> CValue:
    args, to = call.args, OUTPUT
    if args and args[0].ty == STREAM:
        stream = f.value(args[0]).text
        to = stream if stream == OUTPUT else f.declare(STREAM, f"mica_writable({stream}, {call.pos.line})")
        args = args[1:]
    for arg in args:
        width, decimals = "0", "-1"
        if isinstance(arg, ast.FormatArg):
            width = f.value(arg.width).text
            if arg.decimals is not None:
                decimals = f.value(arg.decimals).text
            arg = arg.value
        value = f.untracked(f.value(arg))
        f.line(_write_statement(f, to, value, width, decimals) + ";")
    if call.callee.ident == "WriteLn":
        f.line(f"mica_writeln({to});")
    return NOTHING


def _write_statement(f, to: str, value: CValue, width: str, decimals: str) -> str:
    t = plain(value.type)
    if t == STRING:
        return f"mica_write_str({to}, {f.borrow(value).text}, {width})"
    if t == BOOLEAN:
        return f"mica_write_bool({to}, {value.text}, {width})"
    if isinstance(t, Scalar) and t.is_integer:
        return f"mica_write_int({to}, {value.text}, {width})"
    if isinstance(t, Scalar):
        return f"mica_write_{SUFFIX[t]}({to}, {value.text}, {width}, {decimals})"
    suffix = SUFFIX[t.element]
    data, count = f.data(value), f.count(f.borrow(value))
    if t.element.is_integer:
        plural = {"i64": "ints"}.get(suffix, suffix + "s")
        return f"mica_write_{plural}({to}, {data}, {count}, {width})"
    return f"mica_write_{suffix}s({to}, {data}, {count}, {width}, {decimals})"


define("Write", check=check_write, lower=lower_write,
       signature="Write(args...)", doc="Writes its arguments to the stream given first, or else to standard output.")
define("WriteLn", check=check_write, lower=lower_write,
       signature="WriteLn(args...)",
       doc="Writes its arguments and a line break to the stream given first, or else to standard output.")
define("Output", check=check_signature([], STREAM), lower=lambda f, call: CValue(OUTPUT, STREAM),
       signature="Output : stream", doc="The standard output stream, the one plain Write fills.")
