"""Networking (LANGUAGE.md section 11): TCP over IPv4 and IPv6. A listening socket
and a connection are streams (streams.py): a connection is read with ReadLine and
ReadBytes, written with Write and WriteLn, and flushed and closed as a file is.
Listen, Accept and Connect answer false with a reason naming host:port; misusing a
stream (LocalPort or SetTimeout of a file, Accept on a connection, reading a
listening socket) traps. Accept and LocalPort only read the server they are given, so
the tasks of one block may share it (analyzer/tasks.py). The C is runtime_c/mica_net.c."""

from __future__ import annotations

from ..types import BOOLEAN, FLOAT64, INTEGER, STREAM, STRING, VOID
from .checking import Lent, Shared
from .library import define_calls

define_calls({
    "Listen": ([STRING, INTEGER, Lent(STREAM)], BOOLEAN, "mica_listen", False),
    "Accept": ([Shared(STREAM), Lent(STREAM)], BOOLEAN, "mica_accept", True),
    "Connect": ([STRING, INTEGER, Lent(STREAM)], BOOLEAN, "mica_connect", False),
    "LocalPort": ([Shared(STREAM)], INTEGER, "mica_local_port", True),
    "SetTimeout": ([STREAM, FLOAT64], VOID, "mica_set_timeout", True),
})
