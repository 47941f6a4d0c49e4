"""Streams, files and folders (LANGUAGE.md section 11): Mica programs against their
exact output, the files they leave, and the reasons LastError gives."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from helpers import build_text, run


def mica(body: str, decls: str = "") -> str:
    return f"program S;\n{decls}\nbegin\n{body}\nend.\n"


def test_write_formats_into_a_file_and_read_it_back(tmp_path):
    path = tmp_path / "out.txt"
    text = mica(f"""
    if OpenWrite('{path}', address f) then begin
        WriteLn(f, 'x = ', 3.14159:8:3, ' n = ', 42:5, ' ', true);
        Write(f, v:6:2);
        WriteLn(f);
        WriteLn(f, v, ' ', 0.1);
        Write(f, 'no newline');
        if Close(f) then WriteLn('closed');
    end;
    if OpenRead('{path}', address f) then
        while ReadLine(f, address line) do WriteLn('[', line, ']');
    WriteLn('end: "', LastError, '"');""",
                "var f : stream; line : string; v : vector[3] of float64 = [1.5, -2.25, 10.0];")
    result = run(build_text(tmp_path, text))
    assert result.returncode == 0, result.stderr
    assert path.read_text() == "x =    3.142 n =    42 true\n  1.50  -2.25  10.00\n1.5 -2.25 10.0 0.1\nno newline"
    assert result.stdout == ("closed\n[x =    3.142 n =    42 true]\n[  1.50  -2.25  10.00]\n[1.5 -2.25 10.0 0.1]\n"
                             "[no newline]\nend: \"\"\n")


def test_failures_answer_false_and_name_the_path(tmp_path):
    (tmp_path / "folder").mkdir()
    text = mica(f"""
    if not OpenRead('{tmp_path}/missing.txt', address f) then WriteLn(LastError);
    if not OpenRead('{tmp_path}/folder', address f) then WriteLn(LastError);
    if not OpenWrite('{tmp_path}/no/such/x.txt', address f) then WriteLn(LastError);
    if not OpenAppend('{tmp_path}/no/x.txt', address f) then WriteLn(LastError);
    if not MakeDir('{tmp_path}/folder') then WriteLn(LastError);
    if not MakeDir('{tmp_path}/no/such') then WriteLn(LastError);
    if not RemoveFile('{tmp_path}/missing.txt') then WriteLn(LastError);
    if not RemoveFile('{tmp_path}/folder') then WriteLn(LastError);
    if not RenameFile('{tmp_path}/missing.txt', '{tmp_path}/b') then WriteLn(LastError);
    if not FileSize('{tmp_path}/missing.txt', address n) then WriteLn(LastError);
    if not FileSize('{tmp_path}/folder', address n) then WriteLn(LastError);
    if not ListDir('{tmp_path}/missing', address names) then WriteLn(LastError);
    WriteLn(n, ' ', Length(names));""", "var f : stream; n : integer; names : array of string;")
    result = run(build_text(tmp_path, text))
    assert result.returncode == 0, result.stderr
    d = tmp_path
    assert result.stdout.splitlines() == [
        f"cannot open '{d}/missing.txt': No such file or directory",
        f"cannot open '{d}/folder': Is a directory",
        f"cannot write '{d}/no/such/x.txt': No such file or directory",
        f"cannot append to '{d}/no/x.txt': No such file or directory",
        f"cannot make folder '{d}/folder': File exists",
        f"cannot make folder '{d}/no/such': No such file or directory",
        f"cannot remove '{d}/missing.txt': No such file or directory",
        f"cannot remove '{d}/folder': Is a directory",
        f"cannot rename '{d}/missing.txt' to '{d}/b': No such file or directory",
        f"cannot read the size of '{d}/missing.txt': No such file or directory",
        f"cannot read the size of '{d}/folder': Is a directory",
        f"cannot list '{d}/missing': No such file or directory",
        "0 0",
    ]


def test_files_and_folders(tmp_path):
    d = tmp_path / "d"
    text = mica(f"""
    WriteLn(MakeDir('{d}'), ' ', MakeDir('{d}/sub'));
    WriteFile('{d}/b.txt', 'hello');
    WriteFile('{d}/B.txt', '');
    WriteFile('{d}/a b.txt', 'é');
    if FileSize('{d}/b.txt', address n) then WriteLn(n);
    if FileSize('{d}/a b.txt', address n) then WriteLn(n);
    WriteLn(RenameFile('{d}/b.txt', '{d}/c.txt'), ' ', FileExists('{d}/b.txt'), ' ', ReadFile('{d}/c.txt'));
    if ListDir('{d}', address names) then
        for i := 0 to Length(names) - 1 do WriteLn('<', names[i], '>');
    WriteLn(RemoveFile('{d}/c.txt'), ' ', FileExists('{d}/c.txt'));
    if ListDir('{d}/sub', address names) then WriteLn(Length(names));""",
                "var n, i : integer; names : array of string;")
    result = run(build_text(tmp_path, text))
    assert result.returncode == 0, result.stderr
    expected = sorted(["B.txt", "a b.txt", "c.txt", "sub"], key=lambda s: s.encode())
    assert result.stdout.splitlines() == ["true true", "5", "2", "true false hello",
                                          *[f"<{name}>" for name in expected], "true false", "0"]


def test_lines_end_with_lf_or_crlf_and_can_be_longer_than_any_buffer(tmp_path):
    path = tmp_path / "in.txt"
    long_line = "x" * (10 << 20)
    lines = [f"line {i} " + "y" * (i % 300) for i in range(40000)]
    path.write_bytes(b"a\r\nb\n\r\n\nc\r\r\n" + long_line.encode() + b"\n" + "\n".join(lines).encode() + b"\nlast")
    text = mica(f"""
    if OpenRead('{path}', address f) then
        while ReadLine(f, address line) do begin
            count := count + 1;
            bytes := bytes + Length(line);
            if count <= 6 then WriteLn(count, ':', Length(line), ':', Copy(line, 1, 1), ':', Pos(Chr(13), line))
        end;
    WriteLn(count, ' ', bytes, ' ', line);""", "var f : stream; line : string; count, bytes : integer;")
    result = run(build_text(tmp_path, text))
    assert result.returncode == 0, result.stderr
    body = sum(len(s) for s in lines)
    assert result.stdout.split("\n") == [
        "1:1:a:0", "2:1:b:0", "3:0::0", "4:0::0", "5:2:c:2", f"6:{10 << 20}:x:0",
        f"{6 + len(lines) + 1} {1 + 1 + 2 + (10 << 20) + body + 4} last", "",
    ]


def test_read_bytes_takes_up_to_n_and_false_at_the_end(tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(b"0123456789")
    text = mica(f"""
    if OpenRead('{path}', address f) then begin
        while ReadBytes(f, 4, address s) do WriteLn('[', s, ']');
        WriteLn(ReadBytes(f, 4, address s), ' [', s, ']');
    end;""", "var f : stream; s : string;")
    result = run(build_text(tmp_path, text))
    assert result.stdout == "[0123]\n[4567]\n[89]\nfalse [89]\n"


def test_append_adds_and_output_keeps_order_with_plain_writeln(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("old\n")
    text = mica(f"""
    if OpenAppend('{path}', address f) then begin
        WriteLn(f, 'new ', 1);
        Flush(f);
        Close(f)
    end;
    WriteLn('one');
    WriteLn(Output, 'two ', 2.5:4:1);
    Write('three');
    Flush(Output);
    WriteLn(ErrOutput, 'to stderr');
    WriteLn(Output);""", "var f : stream;")
    result = run(build_text(tmp_path, text))
    assert path.read_text() == "old\nnew 1\n"
    assert result.stdout == "one\ntwo  2.5\nthree\n"
    assert result.stderr == "to stderr\n"


def test_input_is_read_line_by_line(tmp_path):
    text = mica("while ReadLine(Input, address line) do WriteLn(Length(line), ' ', line);", "var line : string;")
    binary = build_text(tmp_path, text)
    result = subprocess.run([str(binary)], input=b"ab\r\n\nlast", capture_output=True)
    assert result.stdout == b"2 ab\n0 \n4 last\n"


def test_a_stream_closes_when_its_variable_goes_out_of_scope(tmp_path):
    text = f"""program S;
var g : stream;

procedure Report(name : string);
var f : stream;
begin
    if OpenWrite(name, address f) then WriteLn(f, 'from ', name);
end;

procedure Log(address into : stream; n : integer);
begin
    WriteLn(into, 'entry ', n);
end;

begin
    Report('{tmp_path}/a.txt');
    WriteLn(FileExists('{tmp_path}/a.txt'));
    if OpenWrite('{tmp_path}/g.txt', address g) then begin
        Log(address g, 1);
        Log(address g, 2);
    end;
    WriteLn(FileExists('{tmp_path}/g.txt'));
end.
"""
    result = run(build_text(tmp_path, text))
    assert result.stdout == "true\nfalse\n"
    assert (tmp_path / "a.txt").read_text() == f"from {tmp_path}/a.txt\n"
    assert (tmp_path / "g.txt").read_text() == "entry 1\nentry 2\n"  # closed as the program ended


@pytest.mark.parametrize("ending, status", [("WriteLn(1 div zero)", 1), ("Halt(3)", 3)])
def test_an_open_write_whose_program_ends_early_leaves_no_file(tmp_path, ending, status):
    text = mica(f"""
    if OpenAppend('{tmp_path}/log.txt', address g) then WriteLn(g, 'kept');
    if OpenWrite('{tmp_path}/out.txt', address f) then begin
        WriteLn(f, 'half');
        {ending};
    end;""", "var f, g : stream; zero : integer;")
    result = run(build_text(tmp_path, text))
    assert result.returncode == status
    assert sorted(os.listdir(tmp_path)) == ["log.txt", "prog.mica"]  # neither out.txt nor its temporary
    assert (tmp_path / "log.txt").read_text() == "kept\n"  # what an appending stream held went out


def test_an_open_write_whose_program_is_killed_leaves_no_file(tmp_path):
    target = tmp_path / "out.txt"
    text = mica(f"""
    if OpenWrite('{target}', address f) then begin
        for i := 1 to 100000 do WriteLn(f, 'line ', i);
        Flush(f);
        WriteLn('written');
        Flush(Output);
        while true do i := i + 1;
    end;""", "var f : stream; i : integer;")
    binary = build_text(tmp_path, text)
    child = subprocess.Popen([str(binary)], stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"written\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert not target.exists()
    temporaries = [p for p in os.listdir(tmp_path) if p.startswith("out.txt.tmp")]
    assert len(temporaries) == 1 and (tmp_path / temporaries[0]).stat().st_size > 1000000
    done = run(build_text(tmp_path, mica(f"WriteFile('{target}', 'whole');"), name="again.mica"))
    assert done.returncode == 0 and target.read_text() == "whole"
    assert not [p for p in os.listdir(tmp_path) if p.startswith("out.txt.tmp")]  # the stale one is swept


MANY_FILES = mica("""
    for i := 1 to 2000 do
        if OpenWrite(ParamStr(1) + '/f' + IntToStr(i) + '.txt', address f) then begin
            WriteLn(f, 'file ', i);
            Close(f);
        end;
    WriteFile('./' + ParamStr(1) + '/f2001.txt', 'last');""", "var f : stream; i : integer;")


def _folder_with_leftovers(tmp_path) -> tuple[list[str], list[str]]:
    """out/ holding what killed writers left: the temporaries the run's writes must
    remove, and those it must keep (another target's, a live writer's, not ours)."""
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid whose process has ended; this test's own still runs
    removed = [f"f7.txt.tmp{gone.pid}", f"f2000.txt.tmp{gone.pid}", f"f2001.txt.tmp{gone.pid}"]
    kept = [f"other.txt.tmp{gone.pid}", f"f9.txt.tmp{os.getpid()}", "f3.txt.tmpx", f"f3.tmp{gone.pid}"]
    (tmp_path / "out").mkdir()
    for name in removed + kept:
        (tmp_path / "out" / name).write_text("half")
    return removed, kept


def test_writing_many_files_removes_only_their_dead_writers_temporaries(tmp_path):
    """The first and the last writes of the run, and one through another spelling
    of the folder (./out), each remove their own target's leftovers."""
    removed, kept = _folder_with_leftovers(tmp_path)
    result = run(build_text(tmp_path, MANY_FILES), args=["out"], cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    written = [f"f{i}.txt" for i in range(1, 2002)]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(written + kept)
    assert [(tmp_path / "out" / name).read_text() for name in written] == \
        [f"file {i}\n" for i in range(1, 2001)] + ["last"]


def test_writing_many_files_reads_their_folder_once(tmp_path):
    """Writing n files costs O(n): the dead writers' temporaries are found in one
    listing of the folder per run, not one per Close of a growing folder."""
    if subprocess.run(["strace", "-o", os.devnull, "true"], capture_output=True).returncode != 0:
        pytest.skip("strace is missing or may not trace here")
    _folder_with_leftovers(tmp_path)
    binary = build_text(tmp_path, MANY_FILES)
    trace = tmp_path / "trace.txt"
    done = subprocess.run(["strace", "-f", "-e", "trace=open,openat", "-o", str(trace), str(binary), "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, "")
    listings = [line for line in trace.read_text().splitlines() if "O_DIRECTORY" in line]
    assert len(listings) == 1, listings[:3]


@pytest.mark.parametrize("body, message", [
    ("WriteLn(f, 1);", "Write to a stream that is not open"),
    ("if OpenRead('prog.mica', address f) then WriteLn(f, 1);", "cannot write to 'prog.mica': it is open for reading"),
    ("if ReadLine(Output, address s) then WriteLn(s);", "cannot read from 'standard output': it is open for writing"),
    ("Close(f);", "Close of a stream that is not open"),
    ("if OpenRead('prog.mica', address f) then if ReadBytes(f, -1, address s) then WriteLn(s);",
     "ReadBytes of -1 bytes: a count is 0 or more"),
])
def test_using_a_stream_wrongly_traps_naming_the_line(tmp_path, body, message):
    result = run(build_text(tmp_path, mica(body, "var f : stream; s : string;")), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == f"prog.mica:4: {message}\n"


def test_a_stream_and_string_program_runs_on_aarch64(tmp_path, aarch64):
    path = tmp_path / "data.csv"
    path.write_bytes(b"a,1\r\nb,22\nc,333")
    text = mica(f"""
    if OpenRead('{path}', address f) then
        while ReadLine(f, address line) do begin
            parts := Split(line, ',');
            if TryStrToInt(parts[1], address n) then total := total + n;
            WriteLn(Join(parts, ' = '), ' ', EndsWith(parts[1], '2'));
        end;
    WriteLn(total:6);""", "var f : stream; line : string; parts : array of string; n, total : integer;")
    binary = build_text(tmp_path, text, target="aarch64-linux")
    result = run(binary, target="aarch64-linux")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "a = 1 false\nb = 22 true\nc = 333 false\n   356\n"


def test_a_failed_write_answers_at_close_or_traps_when_nobody_reads_the_answer(tmp_path):
    answered = mica("""
    if OpenWrite('/dev/full', address f) then begin
        WriteLn(f, 'lost');
        WriteLn(Close(f), ' ', LastError);
    end;
    if OpenAppend('/dev/full', address f) then begin
        WriteLn(f, 'lost');
        WriteLn(Flush(f), ' ', LastError);
        Close(f);
    end;""", "var f : stream;")
    result = run(build_text(tmp_path, answered))
    assert result.returncode == 1
    assert result.stdout == ("false cannot write '/dev/full': No space left on device\n"
                             "false cannot write '/dev/full': No space left on device\n")
    assert result.stderr == "prog.mica:12: cannot write '/dev/full': No space left on device\n"
