"""Packaging: the package layout, package data, and real installs into fresh venvs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "histbench"  # the package face and its core, at its own name
MAPPED = {"builders": "histbench.builders", "eval": "histbench.eval",
          "schemas": "histbench.schemas", "cards": "histbench.cards", "sources": "histbench.sources"}


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", *paths], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [path for path in out.split("\0") if path]


def test_every_folder_with_installed_files_is_listed_in_pyproject():
    """setuptools ignores (and warns about) data folders missing from `packages`: every folder
    under a mapped folder that holds a tracked file, or an __init__.py, must be listed."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    assert config["package-dir"] == {v: k for k, v in MAPPED.items()}
    found = set()
    for folder, package in {PACKAGE: PACKAGE, **MAPPED}.items():
        for path in _tracked(folder):
            rel = Path(path).parent.relative_to(folder).parts
            found.add(".".join((package, *rel)))
        for init in (REPO / folder).rglob("__init__.py"):
            found.add(".".join((package, *init.parent.relative_to(REPO / folder).parts)))
    assert found == listed, f"add to / remove from pyproject [tool.setuptools] packages: {sorted(found ^ listed)}"


def test_wheel_build_has_no_setuptools_warnings(histbench_wheel):
    """No "Package would be ignored" (or any other setuptools) warning from building the wheel."""
    _, output = histbench_wheel
    for warning in ("would be ignored", "BuildBackendWarning", "SetuptoolsDeprecationWarning"):
        assert warning not in output, output[-3000:]


def test_building_the_wheel_leaves_no_build_folder_in_the_source(histbench_wheel, histbench_source, histbench_sdist):
    """Issue 44: `pip install .` left a copy of the package in the checkout's build/lib (pip
    builds in the source folder; setuptools works in its build/), where `inspect list tasks`
    then found histbench's tasks. The in-tree backend (buildsupport/histbench_backend.py)
    moves setuptools' working folder to a temporary one; the sdist carries the backend, so
    that a wheel builds from it too."""
    import tarfile
    import zipfile

    assert not (histbench_source / "build").exists()
    with zipfile.ZipFile(histbench_wheel[0]) as wheel:
        names = wheel.namelist()
    assert "histbench/cli.py" in names and not any(n.startswith(("build/", "buildsupport/")) for n in names)
    with tarfile.open(histbench_sdist) as sdist:
        assert any(n.endswith("/buildsupport/histbench_backend.py") for n in sdist.getnames())
    backend = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]
    assert backend["build-backend"] == "histbench_backend" and backend["backend-path"] == ["buildsupport"]


def test_the_licence_is_mit_as_pyproject_says():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Permission is hereby granted, free of charge" in text


def test_the_wheel_and_the_sdist_carry_the_licence(histbench_wheel, histbench_sdist):
    """PEP 639 (`license-files`): the wheel holds LICENSE under .dist-info/licenses/ and its
    metadata names it and the MIT expression; the sdist holds it at its root."""
    import tarfile
    import zipfile
    from email.parser import Parser

    licence = (REPO / "LICENSE").read_bytes()
    with zipfile.ZipFile(histbench_wheel[0]) as wheel:
        names = wheel.namelist()
        (dist_info,) = {name.split("/", 1)[0] for name in names if name.split("/", 1)[0].endswith(".dist-info")}
        assert wheel.read(f"{dist_info}/licenses/LICENSE") == licence
        metadata = Parser().parsestr(wheel.read(f"{dist_info}/METADATA").decode())
    assert metadata["License-Expression"] == "MIT" and metadata.get_all("License-File") == ["LICENSE"]
    with tarfile.open(histbench_sdist) as sdist:
        root = sdist.getnames()[0].split("/", 1)[0]
        assert sdist.extractfile(f"{root}/LICENSE").read() == licence
        metadata = Parser().parsestr(sdist.extractfile(f"{root}/PKG-INFO").read().decode())
    assert metadata["License-Expression"] == "MIT" and metadata.get_all("License-File") == ["LICENSE"]



def test_the_wheel_ships_no_imitation_server(histbench_wheel):
    """Issue 41: the servers that imitate an OpenAI-compatible endpoint (tests/servers/) are
    test fixtures, not part of the installed package: no module of the wheel is one of them,
    and none runs an HTTP server of its own (the real engine is vLLM's server)."""
    import zipfile

    imitations = {p.name for p in (REPO / "tests" / "servers").glob("*.py") if p.name != "__init__.py"}
    assert {"loopback.py", "completions_server.py"} <= imitations
    with zipfile.ZipFile(histbench_wheel[0]) as wheel:
        modules = [name for name in wheel.namelist() if name.endswith(".py")]
        shipped = {Path(name).name for name in modules} & imitations
        serving = [name for name in modules if b"BaseHTTPRequestHandler" in wheel.read(name)]
    assert len(modules) > 50
    assert shipped == set(), f"imitation servers in the wheel: {sorted(shipped)}"
    assert serving == [], f"modules of the wheel that serve HTTP: {serving}"

def test_top_level_layout_is_fixed():
    allowed = {"histbench", "builders", "eval", "schemas", "cards", "sources", "tests", "bench", "docs", "pyproject.toml",
               "mkdocs.yml", "Makefile", "README.md", "CONTRIBUTING.md", "LICENSE", ".ci", ".gitignore", ".git",
               "buildsupport", "MANIFEST.in"}
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    top = {path.split("/", 1)[0] for path in tracked}
    assert top <= allowed, f"unexpected top-level entries: {sorted(top - allowed)}"


def test_shipped_data_is_reachable_through_importlib():
    from histbench.core.resources import Resources

    resources = Resources.default()
    assert resources.schemas.is_dir() and resources.cards.is_dir() and resources.sources.is_dir()
    for schema in resources.schemas.glob("*.schema.json"):
        json.loads(schema.read_text())


def _run_installed(venv: Path, code: str) -> subprocess.CompletedProcess:
    # Dependencies come from the test environment; histbench itself only from the fresh venv
    # (PYTHONPATH does not process the .pth file of this environment's editable install).
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env, cwd="/")


CHECK = r"""
import json, pathlib, importlib.util, histbench, histbench.builders, histbench.eval
from histbench.core.resources import Resources
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
    "version": histbench.__version__,
    "api": sorted(histbench.__all__),
}))
"""


def _repo_data():
    return {
        "schemas": sorted(p.name for p in (REPO / "schemas").glob("*.schema.json")),
        "cards": sorted(p.name for p in (REPO / "cards").glob("*.md")),
        "manifests": sorted(p.parent.name for p in (REPO / "sources").glob("*/manifest.yaml")),
        "source_files": sorted(path[len("sources/"):] for path in _tracked("sources") if not path.endswith("__init__.py")),
    }


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["pip-install", "pip-install-e"])
def test_install_into_fresh_venv(fresh_venv, pip, link_from_this_environment, editable, histbench_wheel):
    venv = fresh_venv()
    if editable:
        # Built by this environment's setuptools, linked in (no build isolation: it would fetch
        # setuptools from an index, which CI need not reach).
        link_from_this_environment(venv, "setuptools")
        result = pip(venv, "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", ".", cwd=REPO)
    else:
        result = pip(venv, "install", "--quiet", "--no-deps", str(histbench_wheel[0]), cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    assert not (site / "builders").exists() and not (site / "eval").exists()
    if not editable:
        assert (site / "histbench" / "cli.py").is_file()
        assert (site / "histbench" / "__init__.py").is_file()  # the package face, histbench/

    result = _run_installed(venv, CHECK)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert found["bare_eval"] is False
    if not editable:
        assert found["builders"].startswith(str(site))
    for key, expected in _repo_data().items():
        assert found[key] == expected, key
    assert found["version"] == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert {"build", "load", "evaluate", "report", "Results", "__version__"} <= set(found["api"])

    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    help_run = subprocess.run([str(venv / "bin" / "histbench"), "--help"], capture_output=True, text=True, env=env, cwd="/")
    assert help_run.returncode == 0, help_run.stderr[-3000:]
    assert "validate" in help_run.stdout and "demo" in help_run.stdout


def _clean_env() -> dict:
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "HISTBENCH_PROGRESS": "0"}


def _histbench(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "histbench"), *args], capture_output=True, text=True, env=_clean_env(),
                          cwd=cwd)


def _importable(venv: Path, modules: list[str]) -> list[str]:
    code = "import importlib.util, json, sys; print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m)]))"
    result = subprocess.run([str(venv / "bin" / "python"), "-c", code, *modules], capture_output=True, text=True,
                            env=_clean_env(), cwd="/")
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.slow
def test_core_dependencies_build_chronologic_and_valence_and_name_the_extra_for_the_others(linked_env, tmp_path):
    """`pip install histbench`: the two benchmarks that need no reader of their own build;
    the others stop with one line naming `histbench[build]`."""
    venv = linked_env()
    assert _importable(venv, ["pandas", "datasets", "pyreadstat", "scipy", "torch", "matplotlib"]) == ["pandas", "datasets"]
    for name in ("chronologic", "valence"):
        result = _histbench(venv, "build", name, "--sample", "--out", "build", cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    result = _histbench(venv, "build", "chronoculture", "--sample", "--out", "build", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "histbench: error: reading SPSS (.sav) and Stata (.dta) files needs pyreadstat, which is not installed: "
        "pip install 'histbench[build]'")
    assert not (tmp_path / "build" / "chronoculture-1.0.0").exists()


@pytest.mark.slow
def test_the_build_extra_builds_every_benchmark_without_torch(linked_env, tmp_path):
    venv = linked_env(("build",))
    assert _importable(venv, ["pyreadstat", "lxml", "rdflib", "torch", "transformers", "httpx"]) == ["pyreadstat", "lxml", "rdflib"]
    for name in ("chronoculture", "mher", "italian"):
        result = _histbench(venv, "build", name, "--sample", "--out", "build", cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        assert _histbench(venv, "validate", f"build/{name}-1.0.0", cwd=tmp_path).returncode == 0
    result = _histbench(venv, "eval", "chronologic", "--model", "hf:gpt2", "--dataset", "build/none", cwd=tmp_path)
    assert result.returncode == 2 and "histbench" in result.stderr


@pytest.mark.slow
def test_the_api_extra_scores_a_chat_model_without_torch(linked_env, tmp_path, chat_server):
    """`pip install 'histbench[api]'`: a chat-completions model scored end to end (a loopback
    server stands in for the provider), with no torch installed."""
    venv = linked_env(("api",))
    assert _importable(venv, ["httpx", "matplotlib", "torch"]) == ["httpx", "matplotlib"]
    server = chat_server(lambda messages: "A plausible period answer.")
    assert _histbench(venv, "build", "chronologic", "--sample", "--out", "build", cwd=tmp_path).returncode == 0
    result = _histbench(venv, "eval", "chronologic", "--mode", "generate", "--model", server.spec(), "--limit", "3",
                        "--dataset", "build/chronologic-1.0.0", "--out", "runs/chat", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    answers = json.loads((tmp_path / "runs" / "chat" / "chronologic.json").read_text())["answers"]
    assert [a["answer"] for a in answers] == ["A plausible period answer."] * 3
    result = _histbench(venv, "eval", "chronologic", "--model", "hf:gpt2", "--dataset", "build/chronologic-1.0.0",
                        "--out", "runs/local", cwd=tmp_path)
    assert result.returncode == 2
    assert re.search(r"needs (torch|transformers), which is not installed: pip install 'histbench\[eval\]'", result.stderr)
    assert "https://download.pytorch.org/whl/cpu" in result.stderr
