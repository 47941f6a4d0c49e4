"""Channels between tasks: NewChannel, Send, Receive, CloseChannel (LANGUAGE.md §11).

A `channel of T` is a handle on one queue of `capacity` values in the runtime
(runtime_c/mica_tasks.c): copying the variable shares the queue. Send copies
its value in (a string or dynamic array gets its own storage, owned by the
queue), and Receive moves the oldest value out into its place.
"""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, ERROR, VOID, Channel, ErrorType, Type, needs_drop, plain
from .registry import define
from .checking import arity, is_integer, wrong
from .lowering import NOTHING


def channel_arg(a, call: ast.Call, arg: ast.Expr, t: Type) -> Channel | None:
    """The channel type of an argument that must be one, or None once a diagnostic says why."""
    if isinstance(t, ErrorType):
        return None
    if not isinstance(t, Channel):
        a.error(arg, 4039, f"'{call.callee.ident}' takes a channel, found '{t}'")
        return None
    return t


def first_channel(a, call: ast.Call, count: int) -> tuple[bool, Channel | None]:
    """The argument count checked, then the first argument, a channel: (whether the
    count was right, the channel or None)."""
    if not arity(a, call, count):
        return False, None
    return True, channel_arg(a, call, call.args[0], a.expr(call.args[0]))


def check_new_channel(a, call, expected):
    """NewChannel(address ch, capacity)."""
    if not arity(a, call, 2):
        return ERROR
    channel = channel_arg(a, call, call.args[0].place if isinstance(call.args[0], ast.AddressArg) else call.args[0],
                          a.address_arg(call.args[0], "NewChannel's first argument"))
    capacity = a.expr(call.args[1])
    if channel is None or isinstance(capacity, ErrorType):
        return VOID
    if not is_integer(capacity):
        return wrong(a, call, call.args[1], capacity, "an integer capacity")
    known = call.args[1].folded
    if isinstance(known, int) and known < 1:
        a.error(call.args[1], 4040, f"a channel holds at least 1 value, not {known}: "
                                    "Send waits only while it is full")
    return VOID


def lower_new_channel(f, call: ast.Call) -> CValue:
    place = f.place(call.args[0].place)
    element = f.concrete(plain(place.type).element)
    capacity = f.value(call.args[1]).text
    f.line(f"mica_channel_new(&{place.text}, sizeof({f.ctype(element)}), {capacity}, {call.pos.line});")
    return NOTHING


def with_channel(check_second):
    """The checker of a call (ch, x): its count and channel, then check_second(a, call, channel)
    checks x and gives the call's type."""

    def check(a, call, expected):
        counted, channel = first_channel(a, call, 2)
        return check_second(a, call, channel) if counted else ERROR

    return check


def check_send(a, call, channel):
    """Send(ch, value): the value converts to the channel's element type as an assignment would."""
    value = a.expr(call.args[1], channel.element if channel else None)
    if channel is not None and not isinstance(value, ErrorType):
        a.check_assignable(value, channel.element, call.args[1])
    return VOID


def lower_send(f, call: ast.Call) -> CValue:
    channel = f.value(call.args[0])
    element = f.concrete(channel.type.element)
    value = f.convert(f.untracked(f.value(call.args[1], element)), element, call.pos.line)
    if needs_drop(element) and not value.owned:  # the queue owns what it holds
        value = CValue(f.types.copy(element, value.text), element, owned=True)
    held = f.declare(element, value.text)  # an owned value moves in: no drop here
    f.line(f"mica_channel_send({channel.text}, &{held}, {call.pos.line});")
    return NOTHING


def check_receive(a, call, channel):
    """Receive(ch, address v) : boolean, false once the channel is closed and empty."""
    t = a.address_arg(call.args[1], "Receive's second argument")
    if channel is None or isinstance(t, ErrorType):
        return BOOLEAN
    if plain(t) != channel.element:
        a.error(call.args[1], 4028, f"'{channel}' gives '{channel.element}' values, and "
                                    f"'{ast.place_text(call.args[1].place)}' is '{t}'")
    return BOOLEAN


def lower_receive(f, call: ast.Call) -> CValue:
    channel = f.value(call.args[0])
    element = f.concrete(channel.type.element)
    place = f.place(call.args[1].place)
    held = f.declare(element)
    got = f.declare(BOOLEAN, f"mica_channel_receive({channel.text}, &{held}, {call.pos.line})")
    store = f.types.move(element, place.text, held) if needs_drop(element) else f"{place.text} = {held};"
    f.line(f"if ({got}) {store}")
    return CValue(got, BOOLEAN)


def check_close_channel(a, call, expected):
    counted, _ = first_channel(a, call, 1)
    return VOID if counted else ERROR


def lower_close_channel(f, call: ast.Call) -> CValue:
    f.line(f"mica_channel_close({f.value(call.args[0]).text}, {call.pos.line});")
    return NOTHING


define("NewChannel", check=check_new_channel, lower=lower_new_channel,
       signature="NewChannel(address ch : channel of T; capacity : integer)",
       doc="Makes ch a new channel whose queue holds up to capacity values, at least 1.")
define("Send", check=with_channel(check_send), lower=lower_send,
       signature="Send(ch : channel of T; v : T)",
       doc="Copies v into the channel's queue, waiting while the queue is full.")
define("Receive", check=with_channel(check_receive), lower=lower_receive,
       signature="Receive(ch : channel of T; address v : T) : boolean",
       doc="Moves the oldest value into v, waiting while the queue is empty; false once it is closed and empty.")
define("CloseChannel", check=check_close_channel, lower=lower_close_channel,
       signature="CloseChannel(ch : channel of T)", doc="Closes the channel and wakes every task waiting on it.")
