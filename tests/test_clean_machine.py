"""The project on a clean machine: what it declares is all the tests need, a
wheel builds programs as a checkout does, and builds are the same bytes in
caches that share nothing.

The wheel test installs the built wheel into a new virtual environment of its
own (no editable install, no system site-packages) and builds from a folder
outside the checkout, as a user who ran `pip install micatool` would.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import EXAMPLES, ROOT, run
from micatool import targets

TESTS = Path(__file__).resolve().parent


def declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    return {normalize(re.match(r"[A-Za-z0-9._-]+", line).group()) for line in wanted}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every module the file imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_module_the_tests_import_is_declared():
    ours = [*TESTS.glob("*.py"), *(ROOT / "tools").glob("*.py"), *(ROOT / "bench").glob("*.py")]
    local = {p.stem for p in ours} | {"micatool"}
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    undeclared = {}
    for path in sorted(TESTS.glob("*.py")):
        for name in imported_modules(path) - local - set(sys.stdlib_module_names):
            if not declared & {normalize(d) for d in providers.get(name, [])}:
                undeclared.setdefault(name, []).append(path.name)
    assert undeclared == {}, "imported by tests, declared neither by micatool nor by its [test] extra"


def fresh_venv(where: Path) -> Path:
    venv.create(where, with_pip=True, system_site_packages=False)
    return where / "bin"


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


@pytest.mark.slow
def test_the_sdist_carries_the_runtime_the_checkout_has(distributions):
    import tarfile

    (sdist,) = distributions.glob("micatool-*.tar.gz")
    with tarfile.open(sdist) as archive:
        shipped = {Path(name).name for name in archive.getnames() if "/runtime_c/" in name}
    assert {p.name for p in (ROOT / "runtime_c").iterdir() if p.suffix in (".c", ".h", ".inc")} <= shipped


@pytest.mark.slow
@pytest.mark.parametrize("target", ["x86_64-linux", "aarch64-linux"])
def test_an_installed_wheel_builds_and_runs_tracked_records(distributions, tmp_path_factory, target, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    bin_dir = installed_wheel(distributions, tmp_path_factory)
    elsewhere = tmp_path_factory.mktemp("user")
    program = elsewhere / "TrackedRecords.mica"
    program.write_bytes((EXAMPLES / "TrackedRecords" / "TrackedRecords.mica").read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(bin_dir / "micatool"), "build", "--target", target, "TrackedRecords.mica",
                           "-o", "tracked"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    result = run(elsewhere / "tracked", target=target, cwd=elsewhere)
    assert (result.returncode, result.stdout) == (0, (EXAMPLES / "TrackedRecords" / "expected.txt").read_text())


@pytest.mark.slow
def test_an_installed_wheel_writes_the_ptx_a_checkout_writes(distributions, tmp_path_factory):
    """The kernels' templates ship in the wheel, and rendering them needs nothing of the [test] extra."""
    from micatool.compile import compile_program, load_source

    bin_dir = installed_wheel(distributions, tmp_path_factory)
    elsewhere = tmp_path_factory.mktemp("gpu-user")
    (elsewhere / "gpu.mica").write_bytes((EXAMPLES / "gpu" / "gpu.mica").read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(bin_dir / "micatool"), "emit-ptx", "gpu.mica"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == compile_program(load_source(str(EXAMPLES / "gpu" / "gpu.mica"))).ptx != ""


@pytest.mark.slow
def test_an_installed_wheel_shows_the_help_pages(distributions, tmp_path_factory):
    """The pages of `micatool help CODE` ship in the wheel, as package data."""
    from micatool import help

    bin_dir = installed_wheel(distributions, tmp_path_factory)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(bin_dir / "micatool"), "help", "5119"], cwd=tmp_path_factory.mktemp("help-user"),
                          env=env, capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (0, help.show(help.page(5119)))


_installed: dict[str, Path] = {}


def installed_wheel(distributions: Path, tmp_path_factory) -> Path:
    """The wheel installed, once, into a virtual environment of its own."""
    if "bin" not in _installed:
        (wheel,) = distributions.glob("micatool-*.whl")
        bin_dir = fresh_venv(tmp_path_factory.mktemp("wheel-venv") / "venv")
        done = subprocess.run([str(bin_dir / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        _installed["bin"] = bin_dir
    return _installed["bin"]


@pytest.mark.slow
def test_every_tier_is_the_same_bytes_in_two_fresh_caches(tmp_path):
    """Each cache starts empty, zig's own included, so each builds musl and
    the runtime itself, saying so on its pipe: the binaries must not record where either lived."""
    program = EXAMPLES / "words" / "words.mica"

    def build_all(cache: str) -> dict[str, bytes]:
        env = dict(os.environ, MICA_CACHE_DIR=str(tmp_path / cache))
        out = {}
        for tier in ("debug", "checked", "fast"):
            binary = tmp_path / f"{cache}-{tier}"
            done = subprocess.run([sys.executable, "-m", "micatool", "build", "--tier", tier, str(program),
                                   "-o", str(binary)], env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stderr
            runtime = re.escape(f"the runtime for {targets.native().name} ({tier})")
            assert re.fullmatch(f"micatool: building {runtime}; a target's first build takes about a minute\n"
                                f"micatool: built {runtime} in [0-9]+\\.[0-9] s\n", done.stderr), done.stderr
            out[tier] = binary.read_bytes()
        return out

    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(build_all, ["cache-a", "cache-b"])
    for tier in first:
        assert first[tier] == second[tier], f"{tier} binaries differ between two caches"
        assert b"cache-a" not in first[tier] and b"mica-build-" not in first[tier]


def test_the_readme_names_only_files_a_checkout_has():
    """Every path under examples/, docs/, bench/ or images/ the README's commands
    and text name exists in the checkout; nothing outside it is named."""
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"(?<![\w/.])((?:examples|docs|bench|images|tests)/[\w./-]*\w)", readme))
    assert named and sorted(p for p in named if not (ROOT / p).exists()) == []
    assert "../" not in readme
