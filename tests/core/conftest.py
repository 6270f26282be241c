"""A toy benchmark with two configs (two splits each) for testing the core in isolation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from histbench.builders.machinery.build import BenchmarkBuilder, BuildContext
from histbench.builders.machinery.writer import BuildOutput
from histbench.core.resources import Resources

ITEMS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "toy.items",
    "type": "object",
    "properties": {
        "item_id": {"type": "string"},
        "year": {"type": "integer", "minimum": 1800},
        "score": {"type": ["number", "null"]},
        "options": {"type": "array", "items": {"type": "string"}},
        "gold": {
            "type": "object",
            "properties": {"index": {"type": "integer"}, "weight": {"type": "number"}},
            "required": ["index", "weight"],
            "additionalProperties": False,
        },
    },
    "required": ["item_id", "year", "score", "options", "gold"],
    "additionalProperties": False,
}

PAIRS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "toy.pairs",
    "type": "object",
    "properties": {
        "pair_id": {"type": "integer"},
        "left": {"type": "string"},
        "right": {"type": "string"},
        "same": {"type": "boolean"},
        # categorical: stored as a ClassLabel (null stays null)
        "relation": {"type": ["string", "null"], "enum": ["same_start", "different_start", None]},
    },
    "required": ["pair_id", "left", "right", "same", "relation"],
    "additionalProperties": False,
}

CARD = """---
pretty_name: Toy benchmark
license: cc-by-4.0
language: [en]
task_categories: [text-classification]
tags: [history]
---
# Toy $version

$row_table

$summary

## Uses

Testing histbench's core.

## Bias, risks and limitations

Twelve invented lines.

## Source data

`lines.txt`.

## Annotations

None.

## Citation

```bibtex
@misc{toy2026,
  title = {A toy benchmark},
  year  = {2026}
}
```
"""


def make_records(lines: list[str]) -> BuildOutput:
    items = [
        {
            "item_id": f"i{n}",
            "year": 1850 + n,
            "score": None if n % 3 == 0 else n / 7,
            "options": line.split(),
            "gold": {"index": n % 2, "weight": 1.0},
        }
        for n, line in enumerate(lines)
    ]
    pairs = [
        {"pair_id": n, "left": a, "right": b, "same": a[0] == b[0],
         "relation": None if n % 4 == 3 else "same_start" if n % 2 else "different_start"}
        for n, (a, b) in enumerate(zip(lines, lines[1:], strict=False))
    ]
    half_i, half_p = len(items) // 2, len(pairs) // 2
    return BuildOutput(
        configs={
            "items": {"dev": items[:half_i], "test": items[half_i:]},
            "pairs": {"dev": pairs[:half_p], "test": pairs[half_p:]},
        },
        summary={"lines": len(lines)},
        summary_markdown=f"{len(lines)} lines read.",
    )


class ToyBuilder(BenchmarkBuilder):
    name = "toy"
    version = "1.0.0"
    title = "Toy benchmark"

    def build(self, ctx: BuildContext) -> BuildOutput:
        lines = []
        for path in ctx.paths("text"):
            lines += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return make_records(lines)


@pytest.fixture
def toy_resources(tmp_path: Path) -> Resources:
    root = tmp_path / "resources"
    (root / "schemas").mkdir(parents=True)
    (root / "cards").mkdir()
    (root / "sources" / "toy" / "sample").mkdir(parents=True)
    (root / "schemas" / "toy.items.schema.json").write_text(json.dumps(ITEMS_SCHEMA, indent=2))
    (root / "schemas" / "toy.pairs.schema.json").write_text(json.dumps(PAIRS_SCHEMA, indent=2))
    (root / "cards" / "toy.md").write_text(CARD)
    sample = root / "sources" / "toy" / "sample" / "lines.txt"
    sample.write_text("\n".join(f"alpha beta {n} gamma" if n % 2 else f"delta {n}" for n in range(12)) + "\n")
    manifest = {
        "benchmark": "toy",
        "inputs": {
            "text": {
                "description": "text lines",
                "formats": ["txt"],
                "multiple": True,
                "required": True,
                "sample": ["sample/lines.txt"],
            }
        },
    }
    (root / "sources" / "toy" / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    return Resources(schemas=root / "schemas", cards=root / "cards", sources=root / "sources")


@pytest.fixture
def toy_builder() -> ToyBuilder:
    return ToyBuilder()


@pytest.fixture
def toy_sample(toy_resources: Resources) -> Path:
    return toy_resources.sources / "toy" / "sample" / "lines.txt"


@pytest.fixture
def make_toy_records():
    return make_records


# --------------------------------------------------------------------------- installs
# Real installs of histbench into fresh virtual environments (tests marked slow).

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def histbench_source(tmp_path_factory):
    """A copy of the checkout (tracked files and new ones not ignored), once per session:
    setuptools writes build metadata next to the sources, which must not land in the checkout."""
    import shutil
    import subprocess

    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    for rel in filter(None, listed.split("\0")):
        if (REPO / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, source / rel)
    return source


@pytest.fixture(scope="session")
def histbench_wheel(tmp_path_factory, histbench_source):
    """(path, pip's output) of the wheel built from this checkout, once per session."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(histbench_source)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return next(out.glob("histbench-*.whl")), result.stdout + result.stderr


@pytest.fixture(scope="session")
def histbench_sdist(tmp_path_factory, histbench_source):
    """The sdist built from this checkout by setuptools' PEP 517 backend (what `python -m
    build --sdist --no-isolation` calls), once per session."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("sdist")
    code = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    result = subprocess.run([sys.executable, "-c", code, str(out)], cwd=histbench_source, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return out / result.stdout.strip().splitlines()[-1]


def _closure(requirement: str) -> dict:
    """Every installed distribution a requirement needs (extras and markers followed), by
    normalised name -> Distribution; histbench itself excluded."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict = {}
    wanted: dict[str, set] = {}
    todo = [Requirement(requirement)]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = set(req.extras)
        if name in wanted and extras <= wanted[name]:
            continue
        wanted[name] = wanted.get(name, set()) | extras
        dist = distribution(req.name)
        if name != "histbench":
            found[name] = dist
        for text in dist.requires or []:
            dep = Requirement(text)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in {"", *wanted[name]}):
                todo.append(dep)
    return found


def _hardlink(source: Path, target: Path) -> None:
    """A copy made of hard links (no data copied; pip removing it later leaves the original)."""
    import os
    import shutil

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    if source.is_dir():
        shutil.copytree(source, target, copy_function=link, symlinks=True)
    else:
        link(source, target)


def site_packages(venv: Path) -> Path:
    import sysconfig

    return venv / Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))


def install_from_this_environment(venv: Path, requirement: str) -> None:
    """Put into `venv` every distribution `requirement` needs, as this environment has it
    installed, without downloading (hard links): e.g. the torch a user installs first."""
    site = site_packages(venv)
    for dist in _closure(requirement).values():
        for top in sorted({f.parts[0] for f in dist.files or [] if f.parts and not f.parts[0].startswith("..")}):
            if top != "__pycache__" and not (site / top).exists():
                _hardlink(Path(dist.locate_file(top)), site / top)


def linked_environment(root: Path, wheel: Path, extras: tuple[str, ...] = (), also: tuple[str, ...] = ()) -> Path:
    """A fresh virtual environment with histbench installed from `wheel` and exactly the
    distributions that histbench[extras] (and `also`) need, taken from this test
    environment rather than downloaded: what `pip install 'histbench[extras]'` gives, with
    nothing else importable. Returns the environment's folder."""
    import subprocess
    import sys

    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    install_from_this_environment(venv, f"histbench[{','.join(extras)}]" if extras else "histbench")
    for requirement in also:
        install_from_this_environment(venv, requirement)
    result = pip_into(venv, "install", "--quiet", "--no-deps", str(wheel))
    assert result.returncode == 0, result.stderr[-3000:]
    return venv


@pytest.fixture
def linked_env(tmp_path, histbench_wheel):
    """linked_env(extras=("build",), also=()) -> a fresh environment (see linked_environment)."""
    counter = iter(range(100))

    def make(extras: tuple[str, ...] = (), also: tuple[str, ...] = ()) -> Path:
        root = tmp_path / f"env{next(counter)}"
        root.mkdir()
        return linked_environment(root, histbench_wheel[0], tuple(extras), tuple(also))

    return make


def pip_into(venv: Path, *args: str, **kwargs):
    """`pip ARGS` for the environment `venv` (this environment's pip, run with --python:
    a fresh venv needs no pip of its own, which takes seconds to install)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args],
                          capture_output=True, text=True, **kwargs)


@pytest.fixture
def fresh_venv(tmp_path):
    """fresh_venv(name="venv") -> a new virtual environment (no pip: install into it with pip_into)."""
    import subprocess
    import sys

    def make(name: str = "venv") -> Path:
        venv = tmp_path / name
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        return venv

    return make


@pytest.fixture
def venv_with_torch(fresh_venv):
    """A fresh virtual environment holding only torch and what torch needs, as this
    environment has them: the torch a user installs first for their machine
    (docs/install.md), without downloading it again."""
    pytest.importorskip("torch")
    venv = fresh_venv("fresh")
    install_from_this_environment(venv, "torch")
    return venv


@pytest.fixture
def pip():
    """pip(venv, *args) -> CompletedProcess (see pip_into)."""
    return pip_into


@pytest.fixture
def link_from_this_environment():
    """link(venv, requirement): see install_from_this_environment."""
    return install_from_this_environment
