"""Packaging: the namespace layout, package data, and real installs into fresh venvs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAPPED = {"builders": "histbench.builders", "eval": "histbench.eval", "schemas": "histbench.schemas",
          "cards": "histbench.cards", "sources": "histbench.sources"}


def test_every_python_package_is_listed_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    assert config["package-dir"] == {v: k for k, v in MAPPED.items()}
    found = set()
    for folder, package in MAPPED.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *rel)))
    assert found == listed, f"add to / remove from pyproject [tool.setuptools] packages: {sorted(found ^ listed)}"


def test_top_level_layout_is_fixed():
    allowed = {"builders", "eval", "schemas", "cards", "sources", "tests", "bench", "docs", "pyproject.toml",
               "Makefile", "README.md", "CONTRIBUTING.md", ".ci", ".gitignore", ".git"}
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    top = {path.split("/", 1)[0] for path in tracked}
    assert top <= allowed, f"unexpected top-level entries: {sorted(top - allowed)}"


def test_shipped_data_is_reachable_through_importlib():
    from histbench.builders.core.resources import Resources

    resources = Resources.default()
    assert resources.schemas.is_dir() and resources.cards.is_dir() and resources.sources.is_dir()
    for schema in resources.schemas.glob("*.schema.json"):
        json.loads(schema.read_text())


def _fresh_venv(tmp_path: Path, name: str) -> Path:
    venv = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return venv


def _install(venv: Path, *args: str) -> None:
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", *args],
        cwd=REPO, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def _run_installed(venv: Path, code: str) -> subprocess.CompletedProcess:
    # Dependencies come from the test environment; histbench itself only from the fresh venv
    # (PYTHONPATH does not process the .pth file of this environment's editable install).
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env, cwd="/")


CHECK = r"""
import json, pathlib, importlib.util, histbench.builders, histbench.eval
from histbench.builders.core.resources import Resources
r = Resources.default()
schemas = sorted(p.name for p in r.schemas.glob('*.schema.json'))
for name in schemas:
    json.loads((r.schemas / name).read_text())
print(json.dumps({
    "builders": str(pathlib.Path(histbench.builders.__file__).parent),
    "schemas": schemas,
    "cards": sorted(p.name for p in r.cards.glob('*.md')),
    "manifests": sorted(p.parent.name for p in r.sources.glob('*/manifest.yaml')),
    "source_files": sorted(p.relative_to(r.sources).as_posix() for p in r.sources.rglob('*')
                           if p.is_file() and '__pycache__' not in p.parts and p.name != '__init__.py'),
    "bare_eval": importlib.util.find_spec('builders') is not None,
}))
"""


def _repo_data():
    return {
        "schemas": sorted(p.name for p in (REPO / "schemas").glob("*.schema.json")),
        "cards": sorted(p.name for p in (REPO / "cards").glob("*.md")),
        "manifests": sorted(p.parent.name for p in (REPO / "sources").glob("*/manifest.yaml")),
        "source_files": sorted(
            path[len("sources/"):] for path in subprocess.run(
                ["git", "ls-files", "-z", "sources"], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout.split("\0") if path and not path.endswith("__init__.py")
        ),
    }


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["pip-install", "pip-install-e"])
def test_install_into_fresh_venv(tmp_path, editable):
    venv = _fresh_venv(tmp_path, "venv")
    _install(venv, *(["-e", "."] if editable else ["."]))
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    assert not (site / "builders").exists() and not (site / "eval").exists()
    if not editable:
        assert (site / "histbench" / "builders" / "cli.py").is_file()
        assert not (site / "histbench" / "__init__.py").exists()  # a namespace package

    result = _run_installed(venv, CHECK)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert found["bare_eval"] is False
    if not editable:
        assert found["builders"].startswith(str(site))
    for key, expected in _repo_data().items():
        assert found[key] == expected, key

    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    help_run = subprocess.run([str(venv / "bin" / "histbench"), "--help"], capture_output=True, text=True, env=env, cwd="/")
    assert help_run.returncode == 0, help_run.stderr[-3000:]
    assert "validate" in help_run.stdout and "demo" in help_run.stdout
