"""examples/gpt/gpt.mica at other sizes, for the benches that measure it.

The GPT takes its shapes from constants, so a size is a copy of the program
and the units beside it with some of them replaced; the example's own files
are never changed.
"""

from __future__ import annotations

import math
import re
import subprocess
import tempfile
from pathlib import Path

from micatool.reference import Generator

ROOT = Path(__file__).resolve().parents[1]
GPT = ROOT / "examples" / "gpt" / "gpt.mica"
GPU_GPT = ROOT / "examples" / "gpu" / "gpt.mica"
CORPUS = ROOT / "examples" / "gpt" / "corpus.txt"

SIZES = {
    "example": {},
    # nanoGPT's "baby" Shakespeare model as its README trains it on a CPU (--block_size=64 --batch_size=12 ...)
    "baby": {"L": 4, "H": 4, "C": 128, "HS": 32, "Mlp": 512, "T": 64, "B": 12},
    # about 10M parameters: nanoGPT's config/train_shakespeare_char.py, with a batch of 8
    "10m": {"L": 6, "H": 6, "C": 384, "HS": 64, "Mlp": 1536, "T": 256, "B": 8},
    # a model whose weight products are most of its time: 4 blocks of 256 channels
    "large": {"T": 64, "C": 256, "H": 4, "HS": 64, "L": 4, "Mlp": 1024, "B": 8},
    # the example at four times its width, as bench/gpu_device.sh measures it on a GPU
    "wide": {"C": 256, "H": 8, "HS": 32, "Mlp": 1024},
}


def constants(program: Path) -> dict[str, int]:
    """The integer constants the program and the units beside it declare."""
    return {name: int(value) for path in sorted(program.parent.glob("*.mica"))
            for name, value in re.findall(r"\n    (\w+) = (\d+);", path.read_text())}


def sized(size: str, program: Path = GPT, **more: int) -> Path:
    """program (the GPT, or its GPU twin), or a copy with the size's constants (and any others given) replaced."""
    changes = SIZES[size] | more
    if not changes:
        return program
    return with_constants(program, changes, Path(tempfile.mkdtemp(prefix=f"gpt-{size}-")))


def with_constants(program: Path, changes: dict[str, int], folder: Path) -> Path:
    """A copy in `folder` of program and the units beside it, each constant of `changes` replaced
    in whichever files declare it; the copy of program."""
    texts = {path.name: path.read_text() for path in program.parent.glob("*.mica")}
    for name, value in changes.items():
        replaced = 0
        for file, text in texts.items():
            texts[file], count = re.subn(rf"(\n    {name} = )\d+;", rf"\g<1>{value};", text)
            replaced += count
        assert replaced, name
    if "HS" in changes:  # attention's 1 / sqrt(HS), written out for the example's 16
        scale = f"* {1 / math.sqrt(changes['HS'])!r})"
        texts = {file: text.replace("* 0.25)", scale) for file, text in texts.items()}
    for file, text in texts.items():
        (folder / file).write_text(text)
    return folder / program.name


def corpus_ids(path: Path = CORPUS) -> list[int]:
    """The corpus as the GPT reads it: each byte's rank among the distinct bytes."""
    data = path.read_bytes()
    index = {c: i for i, c in enumerate(sorted(set(data)))}
    return [index[c] for c in data]


def windows(ids: list[int], k: dict[str, int], step: int) -> tuple[list[list[int]], list[list[int]]]:
    """TrainingBatch of step `step`: B windows and their next characters, each start drawn after
    Seed(BaseSeed + step)."""
    train_end = len(ids) * 9 // 10
    g = Generator(k["BaseSeed"] + step)
    starts = [g.random_int(train_end - k["T"] - 1) for _ in range(k["B"])]
    return [ids[s:s + k["T"]] for s in starts], [ids[s + 1:s + k["T"] + 1] for s in starts]


def cpu_model() -> str:
    """lscpu's model name and the vector extensions that decide the kernels."""
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", lscpu)
    flags = re.search(r"Flags:\s*(.*)", lscpu)
    wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp")
    present = [f for f in wanted if flags and f in flags.group(1).split()]
    return f"{model.group(1) if model else 'unknown CPU'} ({', '.join(present) or 'none of ' + ', '.join(wanted)})"
