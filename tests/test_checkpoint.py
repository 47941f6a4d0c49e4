"""Checkpoints: safetensors files named by canonical paths, written atomically,
checked whole before a Load changes anything; hostile files (hypothesis) are
refused without a crash, and a Save killed midway never tears the checkpoint."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import time
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from helpers import build_text, run

WRITER = """program W;
type Block = record w : tracked matrix[2, 3] of float32; b : vector[3] of float64; end;
var blocks : array[0..1] of Block; step : integer; d : matrix of float64;
begin
    blocks[0].w := [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    blocks[1].b := [0.5, 0.25, 0.125];
    step := 42;
    SetShape(address d, 2, 2);
    d[1, 1] := 7.0;
    Save(ParamStr(1), blocks, step, d);
end.
"""

READER = """program R;
type Block = record w : tracked matrix[2, 3] of float32; b : vector[3] of float64; end;
var blocks : array[0..1] of Block; step : integer; d : matrix of float64; ok : boolean;
begin
    step := -1;
    ok := Load(ParamStr(1), blocks, step, d);
    WriteLn(ok, ' ', step, ' ', blocks[0].w, ' ', blocks[1].b, ' ', Rows(d), ' ', d);
    Load(ParamStr(1), blocks, step, d);
    WriteLn('loaded');
end.
"""


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    work = tmp_path_factory.mktemp("ckpt")
    return build_text(work, WRITER, name="w.mica"), build_text(work, READER, name="r.mica")


@pytest.fixture
def checkpoint(tmp_path, binaries):
    path = tmp_path / "model.safetensors"
    assert run(binaries[0], args=[str(path)]).returncode == 0
    return path


def read(binaries, path):
    return run(binaries[1], args=[str(path)])


def test_the_file_opens_with_python_safetensors(checkpoint):
    tensors = load_file(str(checkpoint))
    assert sorted(tensors) == ["blocks[0].b", "blocks[0].w", "blocks[1].b", "blocks[1].w", "d", "step"]
    np.testing.assert_array_equal(tensors["blocks[0].w"], np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    assert tensors["step"].dtype == np.int64 and tensors["step"].shape == () and tensors["step"] == 42
    assert tensors["d"].shape == (2, 2) and tensors["d"][1, 1] == 7.0
    with safe_open(str(checkpoint), "np") as f:
        metadata = f.metadata()
    data = checkpoint.read_bytes()
    data = data[8 + struct.unpack("<Q", data[:8])[0]:]
    assert metadata.pop("checksum") == f"crc32:{zlib.crc32(data):08x}"
    assert metadata == {"format": "mica", "program": "W", "consts": "{}", "tensors": json.dumps({
        "blocks[0].w": {"type": "matrix[2, 3] of float32", "tracked": True},
        "blocks[0].b": {"type": "vector[3] of float64", "tracked": False},
        "blocks[1].w": {"type": "matrix[2, 3] of float32", "tracked": True},
        "blocks[1].b": {"type": "vector[3] of float64", "tracked": False},
        "step": {"type": "integer", "tracked": False}, "d": {"type": "matrix of float64", "tracked": False}},
        separators=(",", ":"))}
    assert [p.name for p in checkpoint.parent.iterdir()] == ["model.safetensors"]  # no temporary left behind


def test_load_restores_every_place(binaries, checkpoint):
    result = read(binaries, checkpoint)
    assert result.stdout == "true 42 1.0 2.0 3.0 4.0 5.0 6.0 0.5 0.25 0.125 2 0.0 0.0 0.0 7.0\nloaded\n"


def refused(binaries, path, why: str):
    """A refused file: Load answers false with the reason, state untouched; as a statement it traps."""
    result = read(binaries, path)
    assert result.stdout == "false -1 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0 \n"
    message = f"cannot load '{path}': {why}"
    assert result.stderr == f"r.mica:6: {message}\nr.mica:8: {message}\n"
    assert result.returncode == 1


def test_truncated_file_is_refused(binaries, checkpoint):
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) - 5])
    checksum_or_bounds = read(binaries, checkpoint).stderr
    assert "the data is corrupt" in checksum_or_bounds or "truncated" in checksum_or_bounds
    checkpoint.write_bytes(data[:20])
    refused(binaries, checkpoint, "the file is truncated: its header runs past the end")


def test_corrupt_data_is_refused_by_its_checksum(binaries, checkpoint):
    data = bytearray(checkpoint.read_bytes())
    data[-1] ^= 0x40
    checkpoint.write_bytes(bytes(data))
    result = read(binaries, checkpoint)
    assert "the data is corrupt: its checksum is crc32:" in result.stderr and result.stdout.startswith("false -1 ")


def test_a_missing_tensor_is_named(binaries, checkpoint):
    tensors = load_file(str(checkpoint))
    del tensors["blocks[1].w"]
    save_file(tensors, str(checkpoint))
    refused(binaries, checkpoint, "it has no tensor 'blocks[1].w'")


def test_a_wrong_shape_is_named(binaries, checkpoint):
    tensors = load_file(str(checkpoint))
    tensors["blocks[0].b"] = np.zeros(4)
    save_file(tensors, str(checkpoint))
    refused(binaries, checkpoint, "tensor 'blocks[0].b' has shape [4], but the program's place has [3]")


def test_a_wrong_dtype_is_named(binaries, checkpoint):
    tensors = load_file(str(checkpoint))
    tensors["blocks[1].w"] = tensors["blocks[1].w"].astype(np.float64)
    save_file(tensors, str(checkpoint))
    refused(binaries, checkpoint, "tensor blocks[1].w is F64, but the program's place is F32")


def test_other_files_are_not_safetensors(binaries, tmp_path):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    refused(binaries, junk, "not a safetensors file: the header is not valid JSON")


def test_a_file_written_by_python_without_checksum_loads(binaries, checkpoint):
    tensors = load_file(str(checkpoint))
    tensors["step"] = np.array(7, np.int64)
    save_file(tensors, str(checkpoint))
    assert read(binaries, checkpoint).stdout.startswith("true 7 1.0 2.0 3.0")


def test_a_nul_in_the_metadata_written_by_python_loads(binaries, checkpoint):
    """JSON's \\u0000, which safetensors writes for a NUL, in a metadata key and value;
    a NUL in "format" or "checksum" makes them no format or checksum Mica knows."""
    tensors = load_file(str(checkpoint))
    tensors["step"] = np.array(7, np.int64)
    for metadata in ({"note": "a\0b", "x\0": "y"}, {"format": "mica\0", "format\0": "mica"}):
        save_file(tensors, str(checkpoint), metadata=metadata)
        assert b"\\u0000" in checkpoint.read_bytes()
        assert read(binaries, checkpoint).stdout.startswith("true 7 1.0 2.0 3.0")
    save_file(tensors, str(checkpoint), metadata={"checksum": "crc32:00000000\0"})
    result = read(binaries, checkpoint)
    assert result.stdout.startswith("false -1 ")
    assert "the header says crc32:00000000\\u0000\n" in result.stderr


def test_a_nul_in_a_tensor_name_is_shown_as_the_file_writes_it(binaries, checkpoint):
    tensors = load_file(str(checkpoint))
    tensors["step\0"] = tensors.pop("step")
    save_file(tensors, str(checkpoint))
    refused(binaries, checkpoint, "it has a tensor 'step\\u0000' that the program does not load")


def test_the_const_section_is_recorded(tmp_path):
    consts = "program C;\nconst N = 3; Rate = 0.25; Name = 'a\"b'; On = true; Big = 1e300;\n"
    binary = build_text(tmp_path, consts + "var x : integer;\nbegin\n    Save(ParamStr(1), x);\nend.\n", name="c.mica")
    assert run(binary, args=[str(tmp_path / "c.safetensors")]).returncode == 0
    with safe_open(str(tmp_path / "c.safetensors"), "np") as f:
        assert json.loads(f.metadata()["consts"]) == {"N": 3, "Rate": 0.25, "Name": 'a"b', "On": True, "Big": 1e300}


# ---------------------------------------------------------------- hostile files

PLACES = [("blocks[0].w", "F32", [2, 3]), ("blocks[0].b", "F64", [3]), ("blocks[1].w", "F32", [2, 3]),
          ("blocks[1].b", "F64", [3]), ("step", "I64", []), ("d", "F64", [2, 2])]
SIZES = {"F32": 4, "F64": 8, "I64": 8}


def sound_header() -> dict:
    """The header of a file READER loads: its places tiling the data in order."""
    header, at = {}, 0
    for name, dtype, shape in PLACES:
        size = SIZES[dtype] * int(np.prod(shape))
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + size]}
        at += size
    return header


SOUND_DATA = bytes(range(65, 91)) * 7  # the tensors take the first 136 bytes


def safetensors_file(header: dict, data: bytes, metadata: dict | None = None, length: int | None = None) -> bytes:
    text = json.dumps(header if metadata is None else {"__metadata__": metadata, **header}).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def mica_metadata(data: bytes) -> dict:
    return {"format": "mica", "checksum": f"crc32:{zlib.crc32(data):08x}"}


def test_a_sound_hand_written_file_loads(binaries, tmp_path):
    path = tmp_path / "sound.safetensors"
    data = SOUND_DATA[:136]
    for metadata in (None, mica_metadata(data)):
        path.write_bytes(safetensors_file(sound_header(), data, metadata))
        assert read(binaries, path).stdout.startswith("true 6510331868474594387 ")


def with_d(shape: list[int], size: int = 32) -> dict:
    header = sound_header()
    header["d"] = {"dtype": "F64", "shape": shape, "data_offsets": [104, 104 + size]}
    return header


@pytest.mark.parametrize("header, data, metadata, why", [
    (with_d([5, 7378697629483820647], 24), 128, None, "tensor 'd' has shape [5, 7378697629483820647], too large to address"),
    (with_d([2**32, 2**29], 0), 104, None, "tensor 'd' has shape [4294967296, 536870912], too large to address"),
    (with_d([0, 2**62], 0), 104, None, "tensor 'd' has shape [0, 4611686018427387904], too large to address"),
    (with_d([2, 2, 2], 64), 168, None, "tensor 'd' has shape [2, 2, 2], but the program's place has rank 2"),
    (with_d([2**63, 1]), 136, None, "tensor 'd' has a shape or offset over 2^63 - 1"),
    (with_d([-1, 2]), 136, None, "tensor 'd' has a shape or offset that is not a non-negative integer"),
    (with_d([4, 2]), 136, None, "tensor 'd' of shape [4, 2] holds 64 bytes, but its data_offsets [104, 136] span 32"),
    (sound_header() | {"extra": {"dtype": "F32", "shape": [0], "data_offsets": [136, 136]}}, 136, None,
     "it has a tensor 'extra' that the program does not load"),
    (sound_header() | {"step": {"dtype": "I64", "shape": [], "data_offsets": [88, 96]}}, 136, None,
     "tensor 'step' overlaps tensor 'blocks[1].b' in the data"),
    (sound_header() | {"step": {"dtype": "I64", "shape": [], "data_offsets": [108, 116]}}, 136, None,
     "tensor 'd' starts at byte 104, leaving a gap after byte 96"),
    (sound_header() | {"step": {"dtype": "I64", "shape": [], "data_offsets": [104, 96]}}, 136, None,
     "tensor 'step' has data_offsets [104, 96], which run backwards"),
    (sound_header() | {"step": {"dtype": "F16", "shape": [], "data_offsets": [96, 104]}}, 136, None,
     "tensor 'step' has dtype F16, which Mica does not store"),
    (sound_header() | {"step": {"dtype": "I64", "shape": [], "data_offsets": [96, 104], "x": 1}}, 136, None,
     "tensor 'step' has a field 'x' twice or one safetensors does not define"),
    (sound_header(), 138, None, "the file runs on past its last tensor's data, at byte 136"),
    (sound_header(), 135, None, "the file is truncated: its data ends at byte 135 of the 136 its tensors need"),
    (sound_header(), 136, {"format": "mica"}, "its metadata says it was written by Mica but carries no checksum"),
])
def test_an_unsound_file_is_refused_naming_why(binaries, tmp_path, header, data, metadata, why):
    path = tmp_path / "unsound.safetensors"
    path.write_bytes(safetensors_file(header, SOUND_DATA[:data], metadata))
    refused(binaries, path, why)


def test_a_directory_and_a_device_are_refused(binaries, tmp_path):
    refused(binaries, tmp_path, "it is a directory")
    refused(binaries, "/dev/zero", "not a safetensors file: the header is not valid JSON")
    huge = tmp_path / "huge.safetensors"
    huge.write_bytes(b"\xff" * 8 + b"{}")
    refused(binaries, huge, "not a safetensors file: its header length 18446744073709551615 is over safetensors' "
                            "limit of 100000000 bytes")


def mutation_of_a_sound_file(data) -> bytes:
    """A sound file, then one change that makes it unsound whatever the values drawn."""
    header, body = sound_header(), SOUND_DATA[:136]
    metadata = data.draw(st.sampled_from([None, mica_metadata(body)]))
    name = data.draw(st.sampled_from([n for n, _, _ in PLACES]))
    entry = header[name]
    kind = data.draw(st.sampled_from(["shape", "offsets", "dtype", "extra", "drop", "field", "cut data", "add data",
                                      "length", "cut header", "checksum", "nesting", "not a string"]))
    number = st.integers(-2**65, 2**65)
    if kind == "shape":
        shape = data.draw(st.lists(st.one_of(st.integers(0, 9), number), max_size=5))
        size, bound = SIZES[entry["dtype"]], SIZES[entry["dtype"]]
        for d in shape:
            size, bound = size * d, bound * max(d, 1)
        fits = all(0 <= d < 2**63 for d in shape) and bound < 2**63 and len(shape) == len(entry["shape"])
        assume(not (fits and (shape == entry["shape"] or name == "d" and size == 32)))
        entry["shape"] = shape
    elif kind == "offsets":
        offsets = data.draw(st.lists(st.one_of(st.integers(0, 200), number), min_size=0, max_size=3))
        assume(offsets != entry["data_offsets"])
        entry["data_offsets"] = offsets
    elif kind == "dtype":
        entry["dtype"] = data.draw(st.sampled_from(["F16", "BF16", "F32", "F64", "I64", "I32", "U8", "BOOL", "", "f32"])
                                   .filter(lambda d: d != entry["dtype"]))
    elif kind == "extra":
        extra = data.draw(st.text(max_size=20).filter(lambda n: n not in header and n != "__metadata__"))
        header[extra] = {"dtype": "F32", "shape": [0], "data_offsets": [136, 136]}
    elif kind == "drop":
        del entry[data.draw(st.sampled_from(sorted(entry)))]
    elif kind == "field":
        entry[data.draw(st.text(max_size=8).filter(lambda k: k not in entry))] = data.draw(st.one_of(number, st.text()))
    elif kind == "cut data":
        body = body[:data.draw(st.integers(0, 135))]
    elif kind == "add data":
        body += data.draw(st.binary(min_size=1, max_size=16))
    elif kind == "checksum":
        metadata = {"format": "mica"} | data.draw(st.sampled_from([{}, {"checksum": "crc32:00000000"}, {"checksum": ""}]))
    elif kind == "nesting":
        entry["shape"] = "@nest@"  # replaced below: json.dumps would recurse as deep
    elif kind == "not a string":
        metadata = {"format": data.draw(st.one_of(number, st.lists(st.integers(), max_size=3)))}
    whole = safetensors_file(header, body, metadata)
    if kind == "nesting":
        depth = data.draw(st.integers(2, 100000))
        text = whole[8:len(whole) - len(body)].replace(b'"@nest@"', b"[" * depth + b"]" * depth)
        whole = struct.pack("<Q", len(text)) + text + body
    elif kind == "length":
        length = data.draw(st.one_of(st.integers(0, len(whole) + 8), st.integers(0, 2**64 - 1)))
        assume(length != len(whole) - 8 - len(body))
        whole = struct.pack("<Q", length) + whole[8:]
    elif kind == "cut header":
        text = whole[8:len(whole) - len(body)]
        cut = data.draw(st.integers(0, len(text) - 1))
        whole = struct.pack("<Q", cut) + text[:cut] + body
    return whole


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_no_hostile_file_loads_or_crashes(binaries, hostile_folder, data):
    path = hostile_folder / "hostile.safetensors"
    path.write_bytes(mutation_of_a_sound_file(data))
    result = read(binaries, path)
    assert result.stdout == "false -1 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0 \n" and result.returncode == 1
    assert re.fullmatch(rf"r\.mica:6: cannot load '{re.escape(str(path))}': (.+)\nr\.mica:8: cannot load "
                        rf"'{re.escape(str(path))}': \1\n", result.stderr), result.stderr


# ---------------------------------------------------------------- a kill during Save

BIG_WRITER = """program Big;
var big : vector of float64;
    i, n : integer;
    x : float64;
begin
    n := StrToInt(ParamStr(2));
    x := StrToFloat(ParamStr(3));
    SetShape(address big, n);
    for i := 0 to n - 1 do big[i] := x;
    Save(ParamStr(1), big);
end.
"""
BIG = 4_000_000  # 32 MB: the write lasts long enough to be killed inside it


def generation(path) -> float:
    """The one value a whole checkpoint holds; a torn one fails to load."""
    values = np.unique(load_file(str(path))["big"])
    assert len(values) == 1 and len(load_file(str(path))["big"]) == BIG
    return float(values[0])


def test_a_killed_save_leaves_the_old_or_the_new_file_and_the_next_save_cleans_up(tmp_path):
    binary = build_text(tmp_path, BIG_WRITER, name="big.mica")
    folder = tmp_path / "out"
    folder.mkdir()
    path = folder / "big.safetensors"
    assert run(binary, args=[str(path), str(BIG), "0"]).returncode == 0
    whole, killed_inside = 0.0, 0
    for g in (1.0, 2.0, 3.0):
        writer = subprocess.Popen([str(binary), str(path), str(BIG), str(g)])
        while writer.poll() is None and len(os.listdir(folder)) == 1:
            time.sleep(0.0005)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        killed_inside += writer.returncode == -signal.SIGKILL and len(os.listdir(folder)) > 1
        assert generation(path) in (whole, g)
        whole = generation(path)
    assert killed_inside >= 1
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid whose process has ended; this test's own still runs
    kept = [f"big.safetensors.tmp{os.getpid()}", "big.safetensors.tmpx", "other.tmp1"]
    for name in [f"big.safetensors.tmp{gone.pid}", *kept]:
        (folder / name).write_bytes(b"")
    assert run(binary, args=[str(path), "3", "4"]).returncode == 0
    assert sorted(os.listdir(folder)) == sorted(["big.safetensors", *kept])
    assert np.array_equal(load_file(str(path))["big"], [4.0, 4.0, 4.0])


QUANTIZED = """program Q;
var q : matrix[2, 3] of int8; u : vector[4] of uint8; i : integer; ok : boolean;
begin
    if ParamStr(2) = 'save' then
    begin
        for i := 0 to 5 do q[i div 3, i mod 3] := i * 50 - 128;
        for i := 0 to 3 do u[i] := 252 + i;
        Save(ParamStr(1), q, u);
    end
    else
    begin
        ok := Load(ParamStr(1), q, u);
        WriteLn(ok, ' ', q, ' ', u);
    end;
end.
"""


def test_int8_and_uint8_tensors_are_i8_and_u8_for_python_and_load_back(tmp_path):
    binary = build_text(tmp_path, QUANTIZED, name="q.mica")
    path = tmp_path / "q.safetensors"
    assert run(binary, args=[str(path), "save"]).returncode == 0
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    assert (header["q"]["dtype"], header["u"]["dtype"]) == ("I8", "U8")
    tensors = load_file(str(path))
    np.testing.assert_array_equal(tensors["q"], np.array([[-128, -78, -28], [22, 72, 122]], np.int8))
    np.testing.assert_array_equal(tensors["u"], np.array([252, 253, 254, 255], np.uint8))
    assert tensors["q"].dtype == np.int8 and tensors["u"].dtype == np.uint8
    assert run(binary, args=[str(path), "load"]).stdout == "true -128 -78 -28 22 72 122 252 253 254 255\n"
