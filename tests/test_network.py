"""Networking (LANGUAGE.md section 11): Mica programs serving and calling Python
peers over 127.0.0.1 and ::1, with their exact output and the exact reasons
LastError gives. Every socket and subprocess here has a timeout, and every loop a
bound, so a broken build fails a test instead of hanging it."""

from __future__ import annotations

import contextlib
import re
import selectors
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from helpers import build_text, run

pytestmark = pytest.mark.network

WAIT = 20  # seconds any one peer or program may take before the test fails


def mica(body: str, decls: str = "") -> str:
    return f"program N;\n{decls}\nbegin\n{body}\nend.\n"


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def host_param(host: str):
    marks = [pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback")] \
        if host == "::1" else []
    return pytest.param(host, marks=marks)


class Server:
    """A Python peer on port 0 of `host` that runs `serve(conn)` for one connection
    in a thread; what it raises is raised again by result()."""

    def __init__(self, host: str, serve):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.socket(family)
        self.listener.bind((host, 0))
        self.listener.listen(1)
        self.listener.settimeout(WAIT)
        self.port = self.listener.getsockname()[1]
        self.outcome = {}
        self.thread = threading.Thread(target=self._run, args=(serve,), daemon=True)
        self.thread.start()

    def _run(self, serve):
        try:
            conn, _ = self.listener.accept()
            conn.settimeout(WAIT)
            with conn:
                self.outcome["value"] = serve(conn)
        except BaseException as e:  # handed to the test's thread by result()
            self.outcome["error"] = e
        finally:
            self.listener.close()

    def result(self):
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the Python peer did not finish"
        if "error" in self.outcome:
            raise self.outcome["error"]
        return self.outcome.get("value")


def read_line(f) -> bytes:
    line = f.readline()
    assert line.endswith(b"\n"), line
    return line


def listening(host: str) -> str:
    """Mica lines that listen on port 0 of host and tell the test the port, on standard error."""
    return f"""
    if not Listen('{host}', 0, address server) then begin
        WriteLn(LastError);
        Halt(1);
    end;
    WriteLn(ErrOutput, LocalPort(server));
    SetTimeout(server, 20.0);"""


@contextlib.contextmanager
def serving(tmp_path, text: str):
    """A Mica server running, and the port it listens on."""
    program = subprocess.Popen([str(build_text(tmp_path, text))], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield program, int(program.stderr.readline())
    finally:
        program.kill()


ECHO = mica(listening("127.0.0.1") + """
    if not Accept(server, address conn) then begin
        WriteLn(LastError);
        Halt(1);
    end;
    while ReadLine(conn, address line) do begin
        n := n + 1;
        WriteLn(conn, n:3, ' ', UpperCase(line), ' ', Length(line));
        if not Flush(conn) then WriteLn(LastError);
    end;
    WriteLn('served ', n, ' lines; the end says "', LastError, '"');
    if Close(conn) then WriteLn('closed');""", "var server, conn : stream; line : string; n : integer;")


def test_a_mica_server_echoes_lines_to_a_python_client(tmp_path):
    with serving(tmp_path, ECHO) as (program, port):
        long_line = "x" * 200_000  # past the 64 KiB buffers both ways
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as client:
            f = client.makefile("rwb")
            replies = []
            for sent in ["hello", "wörld", "", "tab\there\r", long_line]:
                f.write(sent.encode() + b"\n")
                f.flush()
                replies.append(read_line(f).decode())
            client.shutdown(socket.SHUT_WR)  # half-closed: the server reads its end
            assert f.read() == b""
        out, err = program.communicate(timeout=WAIT)
    assert replies == ["  1 HELLO 5\n", "  2 WöRLD 6\n", "  3  0\n", "  4 TAB\tHERE 8\n",
                       f"  5 {long_line.upper()} 200000\n"]
    assert out == b'served 5 lines; the end says ""\nclosed\n'
    assert program.returncode == 0, err


CLIENT = mica("""
    if not Connect(ParamStr(1), StrToInt(ParamStr(2)), address conn) then begin
        WriteLn(LastError);
        Halt(1);
    end;
    SetTimeout(conn, 20);
    for i := 1 to 3 do begin
        WriteLn(conn, 'ping ', i, ' ', v:0:2, ' ', 0.1, ' ', i > 1);
        if not Flush(conn) then WriteLn(LastError);
        if ReadLine(conn, address line) then WriteLn('[', line, ']');
    end;
    if ReadBytes(conn, 5, address line) then WriteLn('bytes [', line, ']');
    while ReadLine(conn, address line) do WriteLn('rest [', line, ']');
    WriteLn('end "', LastError, '"');""",
              "var conn : stream; line : string; i : integer; v : vector[2] of float64 = [1.5, -2.0];")


@pytest.mark.parametrize("host", [host_param("127.0.0.1"), host_param("::1"), host_param("localhost")])
def test_a_mica_client_talks_to_a_python_server(tmp_path, host):
    def serve(conn):
        f = conn.makefile("rwb")
        got = []
        for i in range(1, 4):
            got.append(read_line(f).decode())
            f.write(f"pong {i}\n".encode())
            f.flush()
        f.write(b"12345678")
        f.flush()
        return got

    binary = build_text(tmp_path, CLIENT)
    server = Server("::1" if host == "::1" else "127.0.0.1", serve)
    result = run(binary, args=[host, str(server.port)], timeout=WAIT)
    assert server.result() == [f"ping {i} 1.50 -2.00 0.1 {'true' if i > 1 else 'false'}\n" for i in (1, 2, 3)]
    assert result.stdout == '[pong 1]\n[pong 2]\n[pong 3]\nbytes [12345]\nrest [678]\nend ""\n'
    assert result.returncode == 0, result.stderr


def closed_port() -> int:
    """A port nothing listens on: bound by the test, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_each_failure_answers_false_with_a_reason_naming_host_and_port(tmp_path):
    refused = closed_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        text = mica("""
    if not Connect('127.0.0.1', StrToInt(ParamStr(1)), address c) then WriteLn(LastError);
    if not Connect('no-such-host.invalid', 80, address c) then WriteLn(LastError);
    if not Connect('::1', 70000, address c) then WriteLn(LastError);
    if not Listen('127.0.0.1', StrToInt(ParamStr(2)), address s) then WriteLn(LastError);
    if not Listen('127.0.0.1', -1, address s) then WriteLn(LastError);
    if Listen('127.0.0.1', 0, address s) then begin
        SetTimeout(s, 0.2);
        t := Clock;
        if not Accept(s, address c) then WriteLn(Replace(LastError, IntToStr(LocalPort(s)), 'PORT'));
        WriteLn(Clock - t >= 0.15, ' ', Clock - t < 5.0);
    end;""", "var s, c : stream; t : float64;")
        result = run(build_text(tmp_path, text), args=[str(refused), str(busy)], timeout=WAIT)
    assert result.stdout == (f"cannot connect to 127.0.0.1:{refused}: Connection refused\n"
                             "cannot connect to no-such-host.invalid:80: Name does not resolve\n"
                             "cannot connect to [::1]:70000: a port is 0 to 65535\n"
                             f"cannot listen on 127.0.0.1:{busy}: Address in use\n"
                             "cannot listen on 127.0.0.1:-1: a port is 0 to 65535\n"
                             "cannot accept on 127.0.0.1:PORT: timed out after 0.2 s\n"
                             "true true\n")
    assert result.returncode == 0, result.stderr


def test_a_timed_out_read_names_the_timeout_and_loses_nothing(tmp_path):
    """The peer sends half a line and waits: ReadLine times out, then, once the
    rest comes, answers the whole line."""

    def serve(conn):
        f = conn.makefile("rwb")
        f.write(b"hel")
        f.flush()
        asked = read_line(f)  # the program says it timed out
        f.write(b"lo\nwor")
        f.flush()
        return asked

    text = mica("""
    if not Connect('127.0.0.1', StrToInt(ParamStr(1)), address conn) then Halt(1);
    SetTimeout(conn, 0.2);
    t := Clock;
    if not ReadLine(conn, address line) then
        WriteLn(Replace(LastError, ParamStr(1), 'PORT'), ' ', Clock - t >= 0.15);
    WriteLn(conn, 'timed out');
    Flush(conn);
    SetTimeout(conn, 0);
    if ReadLine(conn, address line) then WriteLn('[', line, ']');
    if ReadLine(conn, address line) then WriteLn('[', line, ']');
    if not ReadLine(conn, address line) then WriteLn('end "', LastError, '"');""",
                "var conn : stream; line : string; t : float64;")
    binary = build_text(tmp_path, text)
    server = Server("127.0.0.1", serve)
    result = run(binary, args=[str(server.port)], timeout=WAIT)
    assert server.result() == b"timed out\n"
    assert result.stdout == ("cannot read from 127.0.0.1:PORT: timed out after 0.2 s true\n"
                             "[hello]\n[wor]\nend \"\"\n")
    assert result.returncode == 0, result.stderr


def flood(timeout: float) -> str:
    """A Mica program, short of its `end.`, that writes 20 MB to the port of its
    argument, more than the loopback buffers hold, then says how Flush and Close went."""
    return f"""program Flood;
var conn : stream; i : integer;
begin
    if not Connect('127.0.0.1', StrToInt(ParamStr(1)), address conn) then Halt(1);
    SetTimeout(conn, {timeout});
    for i := 1 to 200000 do
        WriteLn(conn, i:10, ' ....................................................................................');
    if not Flush(conn) then WriteLn(Replace(LastError, ParamStr(1), 'PORT'));
    if not Close(conn) then WriteLn(Replace(LastError, ParamStr(1), 'PORT'));"""


def test_a_peer_that_resets_mid_write_is_reported_not_fatal(tmp_path):
    """The program is still writing when the peer resets the connection; no SIGPIPE ends it."""

    def serve(conn):
        got = conn.recv(1000)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close with RST
        return len(got) > 0

    text = flood(20) + "\n    WriteLn('still here');\nend.\n"
    binary = build_text(tmp_path, text)
    server = Server("127.0.0.1", serve)
    result = run(binary, args=[str(server.port)], timeout=WAIT)
    assert server.result() is True
    assert result.stdout == ("cannot write to 127.0.0.1:PORT: Connection reset by peer\n"
                             "cannot write to 127.0.0.1:PORT: Connection reset by peer\n"
                             "still here\n")
    assert result.returncode == 0, result.stderr


def test_a_connection_left_open_is_flushed_and_closed_when_its_routine_returns(tmp_path):
    def serve(conn):
        f = conn.makefile("rb")
        return f.read()  # up to the end: the routine's return closed the connection

    text = mica("""
    Greet(StrToInt(ParamStr(1)));
    WriteLn('returned');""", """
procedure Greet(port : integer);
var conn : stream;
begin
    if Connect('127.0.0.1', port, address conn) then WriteLn(conn, 'hello from ', port);
end;""")
    binary = build_text(tmp_path, text)
    server = Server("127.0.0.1", serve)
    result = run(binary, args=[str(server.port)], timeout=WAIT)
    assert server.result() == f"hello from {server.port}\n".encode()
    assert result.stdout == "returned\n"
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("body, message", [
    ("if Listen('127.0.0.1', 0, address s) then if ReadLine(s, address line) then WriteLn(line);",
     "cannot read from 127.0.0.1:PORT: it is listening; Accept gives its connections"),
    ("if Listen('127.0.0.1', 0, address s) then WriteLn(s, 'x');",
     "cannot write to 127.0.0.1:PORT: it is listening; Accept gives its connections"),
    ("if Listen('127.0.0.1', 0, address s) then if Connect('127.0.0.1', LocalPort(s), address c) then "
     "if Accept(c, address s) then WriteLn('?');",
     "Accept on 127.0.0.1:PORT: it is a connection, not a listening socket"),
    ("if Listen('127.0.0.1', 0, address s) then SetTimeout(s, -0.5);",
     "SetTimeout of -0.5 s: a timeout is 0 (none) to 1e9 seconds"),
    ("if OpenRead('{tmp}/f.txt', address s) then WriteLn(LocalPort(s));",
     "LocalPort of '{tmp}/f.txt': it is a file, not a socket"),
    ("SetTimeout(c, 1);", "SetTimeout of a stream that is not open"),
    ("if Listen('127.0.0.1', 0, address s) then if AwaitHead(s, address c) then WriteLn('?');",
     "AwaitHead with 127.0.0.1:PORT: it holds no callers; call HoldCallers first"),
    ("if Listen('127.0.0.1', 0, address s) then HoldCallers(s, Length(line), 1.0);",
     "HoldCallers with a limit of 0 bytes: a head is 1 to 65536 bytes (a connection's buffer)"),
])
def test_misusing_a_socket_traps_naming_the_line(tmp_path, body, message):
    (tmp_path / "f.txt").write_text("x\n")
    text = mica("    " + body.replace("{tmp}", str(tmp_path)), "var s, c : stream; line : string;")
    result = run(build_text(tmp_path, text), timeout=WAIT)
    assert result.returncode == 1
    assert re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", result.stderr) == \
        f"prog.mica:4: {message.replace('{tmp}', str(tmp_path))}\n"


def test_a_loopback_exchange_runs_on_aarch64(tmp_path, aarch64):
    def serve(conn):
        f = conn.makefile("rwb")
        line = read_line(f)
        f.write(b"pong " + line)
        f.flush()
        return line

    text = mica("""
    if not Connect('127.0.0.1', StrToInt(ParamStr(1)), address conn) then begin
        WriteLn(LastError);
        Halt(1);
    end;
    SetTimeout(conn, 20.0);
    WriteLn(conn, 'from arm64 ', 6 * 7);
    if Flush(conn) and ReadLine(conn, address line) then WriteLn('[', line, ']');""",
                "var conn : stream; line : string;")
    binary = build_text(tmp_path, text, target="aarch64-linux")
    server = Server("127.0.0.1", serve)
    result = run(binary, target="aarch64-linux", args=[str(server.port)], timeout=60)
    assert server.result() == b"from arm64 42\n"
    assert result.stdout == "[pong from arm64 42]\n"
    assert result.returncode == 0, result.stderr


def test_a_write_to_a_peer_that_does_not_read_times_out(tmp_path):
    done = threading.Event()

    def serve(conn):
        return done.wait(WAIT)  # holds the connection open, reading nothing, until the program has ended

    text = flood(0.2) + "\nend.\n"
    binary = build_text(tmp_path, text)
    server = Server("127.0.0.1", serve)
    try:
        result = run(binary, args=[str(server.port)], timeout=WAIT)
    finally:
        done.set()
    assert server.result() is True
    assert result.stdout == "cannot write to 127.0.0.1:PORT: timed out after 0.2 s\n" * 2
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("listen_on, caller", [
    ("::", ("127.0.0.1", socket.AF_INET)), ("::", ("::1", socket.AF_INET6)), ("::1", ("::1", socket.AF_INET6))])
def test_a_server_on_ipv6_answers_its_callers(tmp_path, listen_on, caller):
    if not has_ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback")
    text = mica(listening(listen_on) + """
    if Accept(server, address conn) and ReadLine(conn, address line) then
        WriteLn(conn, 'got ', line, ' on port ', LocalPort(conn) = LocalPort(server));""",
                "var server, conn : stream; line : string;")
    with serving(tmp_path, text) as (program, port):
        with socket.socket(caller[1]) as client:
            client.settimeout(WAIT)
            client.connect((caller[0], port))
            client.sendall(b"hi\n")
            reply = read_line(client.makefile("rb"))
        out, err = program.communicate(timeout=WAIT)
    assert reply == b"got hi on port true\n"
    assert program.returncode == 0, err


def test_an_accepted_connection_keeps_the_servers_timeout_and_is_named_by_its_peer(tmp_path):
    text = mica(listening("127.0.0.1") + """
    SetTimeout(server, 0.2);
    if Accept(server, address conn) and not ReadLine(conn, address line) then WriteLn(LastError);""",
                "var server, conn : stream; line : string;")
    with serving(tmp_path, text) as (program, port):
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as client:
            peer = client.getsockname()[1]
            out, err = program.communicate(timeout=WAIT)  # the client stays silent
    assert out == f"cannot read from 127.0.0.1:{peer}: timed out after 0.2 s\n".encode()
    assert program.returncode == 0, err


def longest_listen_queue() -> int:
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


def test_callers_queue_as_long_as_the_system_allows(tmp_path):
    """A server that accepts no one: 300 callers still connect, since the listening queue is
    the system's longest (net.core.somaxconn), not musl's SOMAXCONN of 128."""
    if longest_listen_queue() < 300:
        pytest.skip("net.core.somaxconn is below 300 here")
    text = mica(listening("127.0.0.1") + """
    if ReadLine(Input, address line) then WriteLn('accepted no one');""", "var server : stream; line : string;")
    program = subprocess.Popen([str(build_text(tmp_path, text))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        port = int(program.stderr.readline())
        callers = []
        try:
            for _ in range(300):
                callers.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        finally:
            for caller in callers:
                caller.close()
        out, _ = program.communicate(b"go\n", timeout=WAIT)
    finally:
        program.kill()
    assert (len(callers), out) == (300, b"accepted no one\n")


def test_tasks_each_hold_a_connection_of_their_own(tmp_path):
    """Four tasks connect at once to a Python server that answers each caller in a
    thread; each task's reply comes back to it, whatever the order they ran in."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(WAIT)

    def answer(conn):
        with conn:
            conn.settimeout(WAIT)
            f = conn.makefile("rwb")
            f.write(b"pong " + read_line(f))
            f.flush()

    def serve():
        with listener:
            threads = [threading.Thread(target=answer, args=(listener.accept()[0],)) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(WAIT)

    text = """program Callers;
var replies : array[0..3] of string; k : integer;

procedure Ask(port, n : integer; address reply : string);
var conn : stream;
begin
    if not Connect('127.0.0.1', port, address conn) then reply := LastError
    else begin
        SetTimeout(conn, 20);
        WriteLn(conn, 'task ', n);
        if not Flush(conn) or not ReadLine(conn, address reply) then reply := LastError;
    end;
end;

begin
    tasks
        for k := 0 to 3 do spawn Ask(StrToInt(ParamStr(1)), k, address replies[k]);
    end;
    for k := 0 to 3 do WriteLn(replies[k]);
end.
"""
    binary = build_text(tmp_path, text)
    server = threading.Thread(target=serve, daemon=True)
    server.start()
    result = run(binary, args=[str(listener.getsockname()[1])], timeout=WAIT)
    server.join(WAIT)
    assert result.stdout == "".join(f"pong task {n}\n" for n in range(4))
    assert result.returncode == 0, result.stderr


SHARED_SERVER = mica(listening("127.0.0.1") + """
    tasks
        for i := 0 to 3 do spawn Worker(address server, address served[i]);
    end;
    for i := 0 to 3 do WriteLn('worker ', i, ' served ', served[i]);""", """
var server : stream; i : integer; served : array[0..3] of integer;

{ Accept and LocalPort leave the server as it was: the four workers share it. }
procedure Worker(address server : stream; address count : integer);
var conn : stream; line : string; clean : boolean;
begin
    if Accept(server, address conn) then begin
        SetTimeout(conn, 20.0);
        if ReadLine(conn, address line) then
            WriteLn(conn, 'hello, ', line, ', from port ', LocalPort(server));
        count := count + 1;
        clean := Close(conn);
    end;
end;""")


def test_tasks_that_share_a_listening_socket_each_take_a_caller(tmp_path):
    """Four workers Accept on one server: four callers at once each get exactly one of them."""
    with serving(tmp_path, SHARED_SERVER) as (program, port):
        callers = [socket.create_connection(("127.0.0.1", port), timeout=WAIT) for _ in range(4)]
        replies = []
        for n, caller in enumerate(callers):
            with caller:
                caller.sendall(f"caller {n}\n".encode())
                replies.append(read_line(caller.makefile("rb")).decode())
        out, err = program.communicate(timeout=WAIT)
    assert replies == [f"hello, caller {n}, from port {port}\n" for n in range(4)]
    assert out == b"".join(b"worker %d served 1\n" % i for i in range(4))
    assert program.returncode == 0, err


HELD = mica(listening("127.0.0.1") + """
    HoldCallers(server, StrToInt(ParamStr(1)), StrToFloat(ParamStr(2)));
    for n := 1 to StrToInt(ParamStr(3)) do
        if Accept(server, address conn) then begin
            WriteLn('accepted');
            Flush(Output);
            while AwaitHead(server, address conn) and ReadLine(conn, address first) do begin
                more := 0;
                while ReadLine(conn, address line) and (line <> '') do more := more + 1;
                WriteLn(conn, 'got ', first, ' ', more);
                clean := Flush(conn);
            end;
            WriteLn(LastError);
            Flush(Output);
            clean := Close(conn);
        end;""", "var server, conn : stream; first, line : string; n, more : integer; clean : boolean;")


@pytest.fixture(scope="module")
def held(tmp_path_factory):
    """A server of one task that holds its callers (HoldCallers with the limit and seconds of
    its first two arguments) and converses with as many as its third says, in turn, by
    AwaitHead: each head is answered with its first line and how many lines followed."""
    return build_text(tmp_path_factory.mktemp("held"), HELD)


@contextlib.contextmanager
def holding(binary, limit: int, seconds: float, callers: int):
    program = subprocess.Popen([str(binary), str(limit), str(seconds), str(callers)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        yield program, int(program.stderr.readline())
    finally:
        program.kill()


def printed(program) -> bytes:
    """The program's next line of output, which must come within WAIT."""
    with selectors.DefaultSelector() as waiting:
        waiting.register(program.stdout, selectors.EVENT_READ)
        assert waiting.select(WAIT), "the program printed nothing"
    return program.stdout.readline()


def caller(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=WAIT)


def test_a_server_gives_out_only_callers_that_have_asked(held):
    """One task, three callers: one silent and one slow before one that asks at once. The
    one that asked is served first; when the slow one's head comes, the first's
    conversation is given up for it, and the silent one's for the last."""
    with holding(held, 8192, 20, 3) as (program, port):
        silent, slow, ready = caller(port), caller(port), caller(port)
        slow.sendall(b"slow\n")
        ready.sendall(b"ready\nx: 1\n\n")
        assert read_line(ready.makefile("rb")) == b"got ready 1\n"
        slow.sendall(b"\n")
        assert read_line(slow.makefile("rb")) == b"got slow 0\n"
        assert ready.recv(100) == b""  # given up
        silent.sendall(b"silent\n\n")
        assert read_line(silent.makefile("rb")) == b"got silent 0\n"
        assert slow.recv(100) == b""
        silent.shutdown(socket.SHUT_WR)
        out, err = program.communicate(timeout=WAIT)
        names = [f"127.0.0.1:{s.getsockname()[1]}" for s in (ready, slow)]
        for s in (silent, slow, ready):
            s.close()
    given_up = "cannot read from {}: given up for a caller that waits for a task\n"
    assert out.decode() == "".join(f"accepted\n{given_up.format(name)}" for name in names) + "accepted\n\n"
    assert program.returncode == 0, err


def test_a_caller_not_ready_in_time_is_closed_unseen(held):
    """A silent caller is closed by the server alone; the next is served, and closed when its
    next head is late."""
    with holding(held, 8192, 0.5, 1) as (program, port):
        with caller(port) as silent:
            assert silent.recv(100) == b""
        with caller(port) as late:
            late.sendall(b"late\n\n")
            f = late.makefile("rb")
            assert (read_line(f), f.read()) == (b"got late 0\n", b"")
            name = f"127.0.0.1:{late.getsockname()[1]}"
        out, err = program.communicate(timeout=WAIT)
    assert out.decode() == f"accepted\ncannot read from {name}: timed out after 0.5 s\n"
    assert program.returncode == 0, err


def test_a_caller_is_given_out_at_the_limit_or_at_its_end(held):
    """With a limit of 16 bytes, 16 bytes without a head are enough; a caller that sends a
    line and closes its side is given out too, and still gets its answer."""
    with holding(held, 16, 20, 2) as (program, port):
        with caller(port) as long:
            long.sendall(b"0123456789abcdef")
            assert printed(program) == b"accepted\n"
            long.sendall(b"\n\n")
            assert read_line(long.makefile("rb")) == b"got 0123456789abcdef 0\n"
        assert printed(program) == b"\n"
        with caller(port) as short:
            short.sendall(b"bye\n")
            short.shutdown(socket.SHUT_WR)
            f = short.makefile("rb")
            assert (read_line(f), f.read()) == (b"got bye 0\n", b"")
        out, err = program.communicate(timeout=WAIT)
    assert out == b"accepted\n\n"
    assert program.returncode == 0, err
