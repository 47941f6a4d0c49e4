"""Tasks and channels (LANGUAGE.md §11, docs/language.md "Tasks and channels").

Programs run end to end with their exact output. Where tasks print, only the
order of whole lines may change, so those lines are compared sorted; results
that tasks write through `address` are printed after their block. Every loop
in these programs is bounded, and every run has a timeout.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from helpers import BOTH_TARGETS, build_text, run


def run_text(tmp_path, text: str, timeout: int):
    """Build and run on x86_64; a program that hangs fails the test after `timeout` seconds."""
    return run(build_text(tmp_path, text), timeout=timeout)

WORK = """program Work;
type
    Pair = record name : string; values : array of integer; end;
var
    squares : array[0..3] of integer;
    greeting, kept : string;
    i, total, pairs_seen : integer;
    words : channel of string;
    records : channel of Pair;
    numbers : channel of vector[3] of float64;
    sum : vector[3] of float64;

procedure Square(n : integer; address r : integer);
begin
    r := n * n;
end;

procedure Shout(who : string; address out : string);
begin
    who := who + '!';   { the task's own copy: the caller's string stays }
    out := 'hello ' + who;
end;

procedure Produce(c : channel of string; n : integer);
var k : integer;
begin
    for k := 1 to n do Send(c, 'item ' + IntToStr(k));
    CloseChannel(c);
end;

procedure Consume(c : channel of string; address letters : integer);
var got : string; more : boolean;
begin
    letters := 0;
    repeat
        more := Receive(c, address got);
        if more then letters := letters + Length(got);
    until not more;
end;

procedure SendPairs(c : channel of Pair);
var p : Pair; k : integer;
begin
    for k := 1 to 3 do begin
        p.name := 'p' + IntToStr(k);
        SetLength(p.values, k);
        p.values[k - 1] := 10 * k;
        Send(c, p);       { a copy goes: changing p next round leaves it alone }
    end;
    CloseChannel(c);
end;

procedure ReadPairs(c : channel of Pair; address seen : integer);
var p : Pair;
begin
    seen := 0;
    while Receive(c, address p) do begin
        if p.name <> 'p' + IntToStr(Length(p.values)) then exit;   { seen stays short: the test fails }
        seen := seen + Length(p.values) * 1000 + p.values[Length(p.values) - 1];
    end;
end;

procedure SendVectors(c : channel of vector[3] of float64);
var k : integer;
begin
    for k := 1 to 4 do Send(c, [1.0, 2.0, 3.0] * float64(k));
    CloseChannel(c);
end;

procedure AddVectors(c : channel of vector[3] of float64; address s : vector[3] of float64);
var v : vector[3] of float64;
begin
    while Receive(c, address v) do s := s + v;
end;

begin
    kept := 'world';
    tasks
        for i := 0 to 3 do
            spawn Square(i + 10, address squares[i]);
        spawn Shout(kept, address greeting);
    end;
    for i := 0 to 3 do WriteLn(squares[i]);
    WriteLn(greeting, ' ', kept);
    NewChannel(address words, 2);
    NewChannel(address records, 1);
    NewChannel(address numbers, 3);
    tasks
        spawn Produce(words, 20);
        spawn Consume(words, address total);
        spawn SendPairs(records);
        spawn ReadPairs(records, address pairs_seen);
        spawn SendVectors(numbers);
        spawn AddVectors(numbers, address sum);
    end;
    WriteLn(total, ' ', pairs_seen, ' ', sum);
end.
"""


def expected_work() -> str:
    letters = sum(len(f"item {k}") for k in range(1, 21))
    pairs = sum(k * 1000 + 10 * k for k in range(1, 4))
    vectors = " ".join(repr(float(x)) for x in np.array([1.0, 2.0, 3.0]) * 10)
    squares = "".join(f"{n * n}\n" for n in range(10, 14))
    return f"{squares}hello world! world\n{letters} {pairs} {vectors}\n"


@pytest.mark.parametrize("target", BOTH_TARGETS)
def test_tasks_share_through_address_and_channels(tmp_path, target, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    result = run(build_text(tmp_path, WORK, target=target), target=target, timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == expected_work()


def test_lines_of_tasks_never_tear(tmp_path):
    result = run_text(tmp_path, """program Lines;
var k : integer;

procedure Talk(who : integer);
var j : integer;
begin
    for j := 1 to 200 do WriteLn('task ', who, ' says line ', j, ' of 200');
end;

begin
    WriteLn('before');
    tasks
        for k := 1 to 8 do spawn Talk(k);
    end;
    WriteLn('after');
end.
""", timeout=60)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "before" and lines[-1] == "after"
    assert sorted(lines[1:-1]) == sorted(f"task {w} says line {j} of 200" for w in range(1, 9) for j in range(1, 201))


DEADLOCK = """program Stuck;
var ch : channel of integer;

procedure Wait(c : channel of integer);
var v : integer;
begin
    if Receive(c, address v) then WriteLn(v);
end;

begin
    NewChannel(address ch, 1);
    WriteLn('start');
    tasks
        spawn Wait(ch);
        spawn Wait(ch);
    end;
    WriteLn('not reached');
end.
"""


def test_a_block_that_waits_forever_traps_as_a_deadlock(tmp_path):
    result = run_text(tmp_path, DEADLOCK, timeout=30)
    assert result.returncode == 1
    assert result.stdout == "start\n"
    assert result.stderr == "prog.mica:7: deadlock: every task waits on a channel that no running task will serve\n"


def test_a_sender_with_nobody_to_receive_is_a_deadlock_too(tmp_path):
    result = run_text(tmp_path, """program Full;
var ch : channel of string;

procedure Flood(c : channel of string);
var k : integer;
begin
    for k := 1 to 3 do Send(c, 'x');
end;

begin
    NewChannel(address ch, 2);
    tasks
        spawn Flood(ch);
    end;
end.
""", timeout=30)
    assert (result.returncode, result.stderr) == (
        1, "prog.mica:7: deadlock: every task waits on a channel that no running task will serve\n")


def test_a_task_that_traps_stops_the_program_with_its_line(tmp_path):
    result = run_text(tmp_path, """program Trap;
var r : array[0..1] of integer;

procedure Divide(n, d : integer; address out : integer);
begin
    out := n div d;
end;

begin
    WriteLn('start');
    tasks
        spawn Divide(6, 3, address r[0]);
        spawn Divide(1, 0, address r[1]);
    end;
    WriteLn('not reached');
end.
""", timeout=30)
    assert (result.returncode, result.stdout, result.stderr) == (1, "start\n", "prog.mica:6: division by zero\n")


def test_past_the_live_task_limit_a_spawn_traps(tmp_path):
    result = run_text(tmp_path, """program Many;
var ch : channel of integer; i : integer;

procedure Hold(c : channel of integer);
var v : integer;
begin
    if Receive(c, address v) then v := v + 1;
end;

begin
    NewChannel(address ch, 1);
    tasks
        for i := 1 to 65 do spawn Hold(ch);
    end;
end.
""", timeout=60)
    assert (result.returncode, result.stderr) == (1, "prog.mica:13: too many tasks: at most 64 run at once\n")


def test_sixty_four_tasks_at_once_are_within_the_limit(tmp_path):
    result = run_text(tmp_path, """program Limit;
var ch : channel of integer; i, total : integer;

procedure Hold(c : channel of integer; address got : integer);
begin
    if not Receive(c, address got) then got := -1;
end;

procedure Release(c : channel of integer; n : integer);
var k : integer;
begin
    for k := 1 to n do Send(c, k);
end;

var got : array[1..63] of integer;
begin
    NewChannel(address ch, 4);
    tasks
        for i := 1 to 63 do spawn Hold(ch, address got[i]);
        spawn Release(ch, 63);
    end;
    total := 0;
    for i := 1 to 63 do total := total + got[i];
    WriteLn(total);
end.
""", timeout=60)
    assert (result.returncode, result.stdout) == (0, f"{sum(range(1, 64))}\n")


@pytest.mark.parametrize("body, line, message", [
    ("NewChannel(address ch, 1); CloseChannel(ch); Send(ch, 1)", 4, "Send on a closed channel"),
    ("NewChannel(address ch, 1); CloseChannel(ch); CloseChannel(ch)", 4, "CloseChannel of a channel already closed"),
    ("Send(ch, 1)", 4, "this channel was never made: call NewChannel first"),
    ("n := 0; NewChannel(address ch, n)", 4, "a channel holds at least 1 value, not 0"),
])
def test_channel_misuse_at_run_time_traps(tmp_path, body, line, message):
    result = run_text(tmp_path, f"program Misuse;\nvar ch : channel of integer; n : integer;\nbegin\n    {body};\n"
                                "    WriteLn('not reached');\nend.\n", timeout=30)
    assert (result.returncode, result.stderr) == (1, f"prog.mica:{line}: {message}\n")


def test_receive_drains_a_closed_channel_then_answers_false(tmp_path):
    result = run_text(tmp_path, """program Drain;
var ch : channel of string; s : string; k : integer;
begin
    NewChannel(address ch, 3);
    Send(ch, 'a'); Send(ch, 'b');
    CloseChannel(ch);
    for k := 1 to 3 do
        if Receive(ch, address s) then WriteLn('got ', s) else WriteLn('closed, s is still ', s);
end.
""", timeout=30)
    assert result.stdout == "got a\ngot b\nclosed, s is still b\n"


def test_numbers_inside_a_task_have_the_same_bits(tmp_path):
    program = """program Same;
const N = 96;
var
    a, b, inside, outside : matrix[N, N] of float64;
    s_inside, s_outside : matrix[N, N] of float32;

procedure Compute(x, y : matrix[N, N] of float64; address p : matrix[N, N] of float64;
                  address s : matrix[N, N] of float32);
begin
    p := x * y;
    s := Softmax(float32(p));
end;

begin
    Seed(3);
    Normal(address a, 0.0, 1.0);
    Normal(address b, 0.0, 1.0);
    tasks
        spawn Compute(a, b, address inside, address s_inside);
        spawn Compute(b, a, address outside, address s_outside);
    end;
    WriteLn(inside);
    WriteLn(s_inside);
    outside := a * b;
    s_outside := Softmax(float32(outside));
    WriteLn(outside);
    WriteLn(s_outside);
    WriteLn(a);
    WriteLn(b);
end.
"""
    result = run_text(tmp_path, program, timeout=120)
    assert result.returncode == 0, result.stderr
    task_product, task_softmax, main_product, main_softmax, a, b = result.stdout.splitlines()
    assert task_product == main_product and task_softmax == main_softmax
    n = 96
    a = np.array(a.split(), dtype=np.float64).reshape(n, n)
    b = np.array(b.split(), dtype=np.float64).reshape(n, n)
    product = np.array(main_product.split(), dtype=np.float64).reshape(n, n)
    np.testing.assert_allclose(product, a @ b, rtol=1e-12, atol=1e-12)
    logits = (a @ b).astype(np.float32).astype(np.float64)
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.array(main_softmax.split(), dtype=np.float64).reshape(n, n), softmax, rtol=1e-5)


MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def test_each_task_draws_from_its_own_generator_as_documented(tmp_path):
    result = run_text(tmp_path, """program Draws;
var
    draws : array[0..2] of vector[2] of float64;
    before, after : vector[1] of float64;
    k : integer;

procedure Draw(address v : vector[2] of float64);
begin
    Uniform(address v, 0.0, 1.0);
end;

begin
    Seed(11);
    Uniform(address before, 0.0, 1.0);
    tasks
        for k := 0 to 2 do spawn Draw(address draws[k]);
    end;
    Uniform(address after, 0.0, 1.0);
    for k := 0 to 2 do WriteLn(draws[k]);
    WriteLn(before, ' ', after);
end.
""", timeout=60)
    assert result.returncode == 0, result.stderr
    key, counter = mix((11 + GAMMA) & MASK), 0

    def uniform(key: int, c: int) -> str:
        return repr((mix((key + c * GAMMA) & MASK) >> 11) * 2.0**-53)

    before = uniform(key, counter)
    counter += 1  # the spawns leave the main generator where it was
    lines = []
    for task in range(3):
        child = mix(key ^ mix((counter + (task + 1) * GAMMA) & MASK))
        lines.append(f"{uniform(child, 0)} {uniform(child, 1)}")
    lines.append(f"{before} {uniform(key, counter)}")
    assert result.stdout.splitlines() == lines


def test_tasks_compute_with_the_tracked_model_outside_windows(tmp_path):
    """A task reads tracked globals as plain values (no window is open while a block runs):
    the same bits as the main program's, after the program trained them."""
    program = """program Model;
var
    w : tracked matrix[4, 4] of float64;
    l : tracked float64;
    x : vector[4] of float64;
    scores : array[0..1] of float64;

procedure Score(address r : float64);
var h : tracked vector[4] of float64;
begin
    h := Tanh(w * x);
    r := Sum(h);
end;

begin
    Seed(5);
    Normal(address x, 0.0, 1.0);
    w := [[1.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.5, 0.0], [0.0, 0.0, 1.0, 0.5], [0.5, 0.0, 0.0, 1.0]];
    tape
        l := Sum(Tanh(w * x));
    end;
    Backward(l);
    w := w - 0.1 * Gradient(w);
    tasks
        spawn Score(address scores[0]);
        spawn Score(address scores[1]);
    end;
    WriteLn(scores[0], ' ', scores[1]);
    Score(address scores[0]);
    WriteLn(scores[0]);
end.
"""
    result = run_text(tmp_path, program, timeout=120)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first == f"{second} {second}"


def test_a_task_may_run_a_tasks_block_of_its_own(tmp_path):
    result = run_text(tmp_path, """program Nested;
var halves : array[0..1] of integer; i : integer;

procedure Add(n : integer; address r : integer);
begin
    r := n + 1;
end;

procedure Half(base : integer; address total : integer);
var parts : array[0..3] of integer; j : integer;
begin
    tasks
        for j := 0 to 3 do spawn Add(base + j, address parts[j]);
    end;
    total := parts[0] + parts[1] + parts[2] + parts[3];
end;

begin
    tasks
        for i := 0 to 1 do spawn Half(10 * i, address halves[i]);
    end;
    WriteLn(halves[0], ' ', halves[1]);
end.
""", timeout=60)
    assert result.stdout == f"{sum(j + 1 for j in range(4))} {sum(10 + j + 1 for j in range(4))}\n"


def test_each_task_writes_a_file_through_a_stream_of_its_own(tmp_path):
    result = run(build_text(tmp_path, """program Files;
var ok : array[0..2] of boolean; k : integer;

procedure Report(n : integer; address done : boolean);
var j : integer; f : stream;
begin
    done := OpenWrite('part' + IntToStr(n) + '.txt', address f);
    if done then begin
        for j := 1 to 3 do WriteLn(f, 'part ', n, ' row ', j);
        Close(f);
    end;
    WriteLn(Output, 'task ', n, ' wrote its part');
end;

begin
    tasks
        for k := 0 to 2 do spawn Report(k, address ok[k]);
    end;
    for k := 0 to 2 do WriteLn(ok[k]);
end.
"""), cwd=tmp_path, timeout=60)
    lines = result.stdout.splitlines()
    assert sorted(lines[:3]) == [f"task {n} wrote its part" for n in range(3)]
    assert lines[3:] == ["true"] * 3
    for n in range(3):
        assert (tmp_path / f"part{n}.txt").read_text() == "".join(f"part {n} row {j}\n" for j in range(1, 4))


BUSY = """program Stress;
var a, b : channel of integer; total, k : integer; sums : array[0..3] of integer;

procedure Relay(from, into : channel of integer; n : integer);
var v, i : integer;
begin
    for i := 1 to n do
        if Receive(from, address v) then Send(into, v + 1);
end;

procedure Feed(into : channel of integer; n : integer);
var i : integer;
begin
    i := 0;
    repeat
        i := i + 1;
        Send(into, i);
    until i = n;
end;

procedure Drain(from : channel of integer; n : integer; address sum : integer);
var i, v : integer;
begin
    sum := 0;
    for i := 1 to n do
        if Receive(from, address v) then sum := sum + v;
end;

begin
    NewChannel(address a, 1);
    NewChannel(address b, 1);
    tasks
        spawn Feed(a, 20000);
        for k := 0 to 3 do spawn Relay(a, b, 5000);
        for k := 0 to 3 do spawn Drain(b, 5000, address sums[k]);
    end;
    total := 0;
    for k := 0 to 3 do total := total + sums[k];
    WriteLn(total);
end.
"""


def test_a_busy_pipeline_never_mistakes_waiting_for_a_deadlock(tmp_path):
    """Nine tasks hand 20000 values through two one-value channels, so every Send and
    Receive waits and is woken, again and again: no run may trap."""
    binary = build_text(tmp_path, BUSY)
    for _ in range(5):
        result = run(binary, timeout=60)
        assert (result.returncode, result.stdout, result.stderr) == (0, f"{sum(range(1, 20001)) + 20000}\n", "")


def test_tasks_reading_input_take_turns_a_line_at_a_time(tmp_path):
    binary = build_text(tmp_path, """program Readers;
var counts : array[0..3] of integer; sums : array[0..3] of integer; k : integer;

procedure Read(address count, sum : integer);
var line : string;
begin
    count := 0;
    sum := 0;
    while ReadLine(Input, address line) do begin
        count := count + 1;
        sum := sum + StrToInt(line);
    end;
end;

begin
    tasks
        for k := 0 to 3 do spawn Read(address counts[k], address sums[k]);
    end;
    WriteLn(counts[0] + counts[1] + counts[2] + counts[3], ' ', sums[0] + sums[1] + sums[2] + sums[3]);
end.
""")
    text = "".join(f"{n}\n" for n in range(1, 50001))
    result = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, f"50000 {sum(range(1, 50001))}\n")
