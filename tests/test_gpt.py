"""The GPT example in a small configuration: its loss column, digit for digit,
on x86_64 and aarch64, a resumed run that ends bit-identical to a straight one,
a run with dropout that prints the same digits at every thread count,
examples/gpt/to_torch.py reproducing its validation loss from a checkpoint, and
int8.mica's model of that checkpoint: its record on both targets, its loss
beside float32's, and its checkpoint's int8 weights against the float32 ones
they quantize.

The configuration shrinks the constants of examples/gpt's programs and units
(bench/gpt_sizes.with_constants); tests/records/gpt_small.txt is the training
run's record (the tokens/s column removed), gpt_small_int8.txt int8.mica's,
gpt_small_dropout.txt the record of 40 steps at --dropout 0.2.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import EXAMPLES, ROOT, build

sys.path.insert(0, str(ROOT / "bench"))
from gpt_sizes import with_constants  # noqa: E402

SMALL = {"B": 8, "T": 16, "C": 32, "H": 2, "HS": 16, "L": 1, "Mlp": 128, "DefaultSteps": 150, "Warmup": 10,
         "EvalEvery": 50, "EvalWindows": 2, "SampleLength": 120}
RECORD = Path(__file__).parent / "records" / "gpt_small.txt"
INT8_RECORD = Path(__file__).parent / "records" / "gpt_small_int8.txt"
DROPOUT_RECORD = Path(__file__).parent / "records" / "gpt_small_dropout.txt"

pytestmark = pytest.mark.slow


def small_folder(folder: Path) -> Path:
    """examples/gpt's programs and units in the small configuration, in folder."""
    return with_constants(EXAMPLES / "gpt" / "gpt.mica", SMALL, folder).parent


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("gpt")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return small_folder(tmp_path_factory.mktemp("small"))


def run_program(program: Path, target: str, tier: str, *args: str, qemu: str | None = None,
                threads: int | None = None) -> str:
    command = [str(build(program, target=target, tier=tier)), *args]
    if qemu:
        command.insert(0, qemu)
    env = dict(os.environ, MICA_THREADS=str(threads)) if threads else None
    # run beside the example's corpus, which the programs find by themselves
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, cwd=EXAMPLES / "gpt", env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def train(small: Path, target: str, tier: str, *args: str, qemu: str | None = None, threads: int | None = None) -> str:
    return run_program(small / "gpt.mica", target, tier, *args, qemu=qemu, threads=threads)


def without_rates(output: str) -> str:
    """The loss column without tokens/s, and no sampling rates: they depend on the machine."""
    output = re.sub(r"^(\s*\d+\s+[\d.]+\s+[\d.]+)\s+\d+$", r"\1", output, flags=re.M)
    return re.sub(r"^sampling tokens/s: float32 \d+, int8 \d+$", "sampling tokens/s: float32 N, int8 N", output,
                  flags=re.M)


def test_the_loss_column_matches_the_record(small):
    output = without_rates(train(small, "x86_64-linux", "checked"))
    assert output == RECORD.read_text()


def test_validation_loss_ends_below_the_unigram_entropy():
    final = re.search(r"validation loss ([\d.]+) against a unigram entropy of ([\d.]+)", RECORD.read_text())
    assert float(final.group(1)) < float(final.group(2)) - 0.5


@pytest.mark.qemu
def test_aarch64_matches_the_record(small, aarch64):
    output = without_rates(train(small, "aarch64-linux", "fast", qemu=aarch64))
    assert output == RECORD.read_text()


def test_resuming_from_a_checkpoint_is_bit_identical(work, small):
    straight, first, resumed = work / "straight.safetensors", work / "half.safetensors", work / "resumed.safetensors"
    train(small, "x86_64-linux", "fast", "--steps", "40", "--save", str(straight))
    train(small, "x86_64-linux", "fast", "--steps", "40", "--until", "20", "--save", str(first))
    train(small, "x86_64-linux", "fast", "--steps", "40", "--load", str(first), "--save", str(resumed))
    assert first.read_bytes() != straight.read_bytes()
    assert resumed.read_bytes() == straight.read_bytes()


def test_dropout_trains_the_same_digits_at_every_thread_count(small):
    """The masks are the seeded generator's, so a run at one thread and one at two
    print the record's digits, and they are not the digits of the run without dropout."""
    runs = [without_rates(train(small, "x86_64-linux", "fast", "--steps", "40", "--dropout", "0.2", threads=n))
            for n in (1, 2)]
    assert runs[0] == runs[1] == DROPOUT_RECORD.read_text()
    plain = without_rates(train(small, "x86_64-linux", "fast", "--steps", "40")).splitlines()
    dropped = runs[0].splitlines()
    assert plain[:4] == dropped[:4]  # the corpus, the model and the header
    assert plain[4] != dropped[4] and plain[5] != dropped[5]  # the losses of steps 1 and 40


def test_to_torch_reproduces_the_validation_loss(work, tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    folder = small_folder(tmp_path)
    program = folder / "gpt.mica"
    source, count = re.subn(r"'validation loss ', ValidationLoss:0:4", "'validation loss ', ValidationLoss:0:9",
                            program.read_text())  # every digit float64 keeps
    assert count == 1
    program.write_text(source)
    binary = build(program)
    checkpoint = work / "torch.safetensors"
    done = subprocess.run([str(binary), "--steps", "30", "--save", str(checkpoint)], capture_output=True, text=True,
                          timeout=300, cwd=EXAMPLES / "gpt")
    assert done.returncode == 0, done.stderr
    mica = float(re.search(r"^validation loss (\d+\.\d{9}) against", done.stdout, re.M).group(1))
    torch = subprocess.run([sys.executable, str(EXAMPLES / "gpt" / "to_torch.py"), str(checkpoint),
                            str(EXAMPLES / "gpt" / "corpus.txt")], capture_output=True, text=True, timeout=300)
    assert torch.returncode == 0, torch.stderr
    loss, text = re.fullmatch(r"validation loss (\d+\.\d{9})\n(.*)\n", torch.stdout, re.S).groups()
    assert abs(float(loss) - mica) <= 1e-5 * mica
    corpus = (EXAMPLES / "gpt" / "corpus.txt").read_text()
    assert len(text) == SMALL["T"] + 200 and set(text) <= set(corpus)
    assert text.startswith(corpus[len(corpus) * 9 // 10:][:SMALL["T"]])  # the held-out text it continues


def int8_run(work: Path, small: Path, target: str = "x86_64-linux", qemu: str | None = None) -> str:
    """int8.mica on the small GPT's checkpoint, trained here for the target: what it prints."""
    trained = work / f"float-{target}.safetensors"
    train(small, target, "fast", "--save", str(trained), qemu=qemu)
    return without_rates(run_program(small / "int8.mica", target, "fast", "--load", str(trained), "--save-int8",
                                     str(work / f"int8-{target}.safetensors"), qemu=qemu))


def test_the_int8_model_matches_its_record(work, small):
    assert int8_run(work, small) == INT8_RECORD.read_text()


@pytest.mark.qemu
def test_aarch64_int8_model_matches_the_record(work, small, aarch64):
    assert int8_run(work, small, "aarch64-linux", qemu=aarch64) == INT8_RECORD.read_text()


def test_int8_needs_a_checkpoint(small):
    done = subprocess.run([str(build(small / "int8.mica"))], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "usage: int8 --load FILE [--corpus FILE] [--save-int8 FILE]\n")


def test_away_from_its_folder_the_trainer_says_to_name_the_corpus(small, tmp_path):
    done = subprocess.run([str(build(small / "gpt.mica"))], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "gpt: cannot open 'examples/gpt/corpus.txt': No such file or directory\n"
                                              "gpt: name the text to train on with --corpus FILE "
                                              "(examples/gpt/corpus.txt ships with it)\n")


def test_the_int8_loss_stays_within_two_percent_of_float32():
    record = INT8_RECORD.read_text()
    float_loss = float(re.search(r"^validation loss ([\d.]+) against", record, re.M).group(1))
    int8_loss, change = re.search(r"^int8 model: validation loss ([\d.]+), ([-+\d.]+)% from float32's$", record,
                                  re.M).groups()
    assert abs(float(int8_loss) - float_loss) / float_loss < 0.02
    assert float(change) == pytest.approx(100 * (float(int8_loss) - float_loss) / float_loss, abs=0.01)


def test_the_int8_checkpoint_holds_each_weight_quantized_per_column(work, small):
    """Read by Python's safetensors: each int8 weight is its float32 weight over its
    column's scale (max |column| / 127), rounded half to even, as numpy computes it."""
    np = pytest.importorskip("numpy")
    from safetensors.numpy import load_file

    if not (work / "int8-x86_64-linux.safetensors").exists():
        int8_run(work, small)
    quantized = load_file(str(work / "int8-x86_64-linux.safetensors"))
    weights = load_file(str(work / "float-x86_64-linux.safetensors"))
    C, H, L = SMALL["C"], SMALL["H"], SMALL["L"]
    pairs = [(f"twins[{k}].{w}[{h}]", f"qmodel.blocks[{k}].{w}[{h}]", f"qmodel.blocks[{k}].s{w[1]}[{h}]")
             for k in range(L) for h in range(H) for w in ("wq", "wk", "wv", "wo")]
    pairs += [(f"twins[{k}].{w}", f"qmodel.blocks[{k}].{w}", f"qmodel.blocks[{k}].s{w[1]}")
              for k in range(L) for w in ("w1", "w2")]
    for float_name, q_name, scale_name in pairs:
        w, q, s = weights[float_name], quantized[q_name], quantized[scale_name]
        assert q.dtype == np.int8 and q.shape == w.shape and s.shape == (w.shape[1],)
        assert np.array_equal(s, np.abs(w).max(axis=0) / np.float32(127))
        assert np.array_equal(q, np.clip(np.round(w / s), -127, 127).astype(np.int8))
        assert (np.abs(q).max(axis=0) == 127).all()
    wte, head, scales = weights["embed.wte"], quantized["qmodel.head"], quantized["qmodel.headScales"]
    assert head.shape == (C, wte.shape[0])
    assert np.array_equal(head.T, np.clip(np.round(wte / scales[:, None]), -127, 127).astype(np.int8))
