"""The house in one direction (docs/architecture.md): histbench.core <- builders <- eval <-
the package face (histbench: API, CLI, demo). Every import of the package's own modules,
at the top of a file or inside a function, points down that line."""

from __future__ import annotations

import argparse
import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FACE = ("histbench.api", "histbench.cli", "histbench.demo", "histbench.options")


def _imports(folder: str) -> dict[str, set[str]]:
    """file (relative) -> every absolute module name it imports from histbench."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / folder).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(REPO))] = {n for n in names if n == "histbench" or n.startswith("histbench.")}
    return found


def _offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for file, names in _imports(folder).items():
        hits = sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in forbidden))
        if hits:
            bad[file] = hits
    return bad


def test_builders_import_nothing_from_eval_or_the_face():
    assert _offending("builders", ("histbench.eval", *FACE)) == {}


def test_the_core_imports_neither_builders_nor_eval_nor_the_face():
    assert _offending("histbench/core", ("histbench.builders", "histbench.eval", *FACE)) == {}


def test_eval_imports_nothing_from_the_face():
    assert _offending("eval", FACE) == {}


def test_the_checker_sees_imports_inside_functions(tmp_path, monkeypatch):
    """The check above would catch a late import like the ones it forbids."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "m.py").write_text("def f():\n    from histbench.eval.report import markdown_table\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert _offending("pkg", ("histbench.eval",)) == {"pkg/m.py": ["histbench.eval.report",
                                                                   "histbench.eval.report.markdown_table"]}


def test_the_console_script_is_the_package_face():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"histbench": "histbench.cli:main"}
    assert (REPO / "histbench" / "cli.py").is_file() and not (REPO / "builders" / "cli.py").exists()


def test_the_api_does_not_import_argparse():
    assert "argparse" not in {alias.name for node in ast.walk(ast.parse((REPO / "histbench" / "api.py").read_text()))
                              if isinstance(node, ast.Import) for alias in node.names}


def test_the_api_builds_and_evaluates_with_no_argparse_parser(tmp_path, monkeypatch):
    """No parser parses anything while the API builds, evaluates and reports."""
    import histbench

    def refuse(*_args, **_kwargs):
        raise AssertionError("the API went through argparse")

    for method in ("parse_args", "parse_known_args", "parse_intermixed_args"):
        monkeypatch.setattr(argparse.ArgumentParser, method, refuse)
    monkeypatch.chdir(tmp_path)
    folder = histbench.build("chronologic", sample=True)
    run = histbench.evaluate("chronologic", baseline="random", dataset=folder, limit=4, bootstrap=20)
    assert len(run.records) == 4
    assert histbench.report("chronologic", run) == Path("reports/chronologic")
    with pytest.raises(AssertionError, match="through argparse"):
        from histbench.cli import main

        main(["validate", str(folder)])   # while the command line does parse
