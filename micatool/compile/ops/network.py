"""Networking (LANGUAGE.md section 11): TCP over IPv4 and IPv6. A listening socket
and a connection are streams (streams.py): a connection is read with ReadLine and
ReadBytes, written with Write and WriteLn, and flushed and closed as a file is.
Listen, Accept and Connect answer false with a reason naming host:port; misusing a
stream (LocalPort or SetTimeout of a file, Accept on a connection, reading a
listening socket) traps. HoldCallers makes a server hold its callers, with no
task, until each has sent a request's head; Accept then gives out only those, and
AwaitHead waits for a connection's next head. Accept, AwaitHead and LocalPort only
read the server they are given, so the tasks of one block may share it
(analyzer/tasks.py). The C is runtime_c/mica_net.c and runtime_c/mica_hold.c."""

from __future__ import annotations

from .. import ast
from ..types import BOOLEAN, ERROR, FLOAT64, INTEGER, STREAM, STRING, VOID
from .registry import define
from .checking import Lent, Shared, check_signature
from .library import define_calls, runtime_call

CONNECTION_BUFFER = 1 << 16  # a connection's read buffer (MICA_STREAM_BUFFER): the longest head it holds
LONGEST_WAIT = 1e9  # seconds, as SetTimeout's

define_calls({
    "Listen": ([STRING, INTEGER, Lent(STREAM)], BOOLEAN, "mica_listen", False,
               "Listen(host : string; port : integer; address server : stream) : boolean",
               "Opens a TCP socket listening on host and port into server; port 0 lets the system pick one."),
    "Accept": ([Shared(STREAM), Lent(STREAM)], BOOLEAN, "mica_accept", True,
               "Accept(server : stream; address conn : stream) : boolean",
               "Waits for the next caller of a listening socket and gives its connection in conn."),
    "AwaitHead": ([Shared(STREAM), Lent(STREAM)], BOOLEAN, "mica_await_head", True,
                  "AwaitHead(server : stream; address conn : stream) : boolean",
                  "Waits until conn has sent its next head, by HoldCallers' rule; false when it is not ready in time."),
    "Connect": ([STRING, INTEGER, Lent(STREAM)], BOOLEAN, "mica_connect", False,
                "Connect(host : string; port : integer; address conn : stream) : boolean",
                "Opens a TCP connection to host:port into conn, trying each address the name has in turn."),
    "LocalPort": ([Shared(STREAM)], INTEGER, "mica_local_port", True, "LocalPort(s : stream) : integer",
                  "The local port of a listening socket or a connection."),
    "SetTimeout": ([STREAM, FLOAT64], VOID, "mica_set_timeout", True, "SetTimeout(s : stream; seconds : number)",
                   "Bounds every later read, write and Accept of s to seconds; 0 waits without end."),
})

_hold_signature = check_signature([STREAM, INTEGER, FLOAT64], VOID)


def check_hold_callers(a, call: ast.Call, expected):
    """HoldCallers(server, limit, seconds): a limit or a time known here and out of its
    range is 4041 (the runtime traps on one computed)."""
    if _hold_signature(a, call, expected) is ERROR:
        return ERROR
    limit, seconds = call.args[1].folded, call.args[2].folded
    if isinstance(limit, int) and not 1 <= limit <= CONNECTION_BUFFER:
        a.error(call.args[1], 4041, f"a held caller's head is 1 to {CONNECTION_BUFFER} bytes (a connection's "
                                    f"buffer), not {limit}")
    if isinstance(seconds, int | float) and not 0 <= seconds <= LONGEST_WAIT:
        a.error(call.args[2], 4041, f"a held caller's time is 0 (no end) to 1e9 seconds, not {seconds:g}")
    return VOID


check_hold_callers.signature = _hold_signature.signature
define("HoldCallers", check=check_hold_callers, lower=runtime_call("mica_hold_callers", None, with_line=True),
       signature="HoldCallers(server : stream; limit : integer; seconds : number)",
       doc="Makes server hold each caller, with no task, until it has sent a head, limit bytes or the end.")
