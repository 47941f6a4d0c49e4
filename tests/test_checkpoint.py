"""Checkpoints: safetensors files named by canonical paths, written atomically,
checked whole before a Load changes anything."""

from __future__ import annotations

import numpy as np
import pytest
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
        assert f.metadata()["format"] == "mica" and f.metadata()["checksum"].startswith("crc32:")
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
