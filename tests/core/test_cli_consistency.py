"""One command line: the same option means the same thing in every `histbench eval BENCHMARK`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from histbench.cli import main, make_parser
from histbench.core.errors import UsageError
from histbench.eval.plugin import default_dataset

BENCHMARKS = ("chronoculture", "chronologic", "italian", "mher", "valence")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _eval_parsers() -> dict[str, argparse.ArgumentParser]:
    return _subparsers(_subparsers(make_parser())["eval"])


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


def test_every_evaluator_shares_dataset_revision_label_limit_and_baseline():
    parsers = _eval_parsers()
    assert set(parsers) == set(BENCHMARKS)
    helps = {}
    for name, parser in parsers.items():
        options = _options(parser)
        for flag in ("--dataset", "--revision", "--label", "--limit", "--out", "--model"):
            assert flag in options, f"histbench eval {name} has no {flag}"
        dataset = options["--dataset"]
        assert not dataset.required and dataset.default == default_dataset(name) == f"build/{name}-1.0.0"
        assert options["--limit"].type is int
        helps.setdefault("--revision", set()).add(options["--revision"].help)
        helps.setdefault("--label", set()).add(options["--label"].help)
        if "--baseline" in options:
            assert isinstance(options["--baseline"], argparse._AppendAction), name
        assert "--baselines" not in options
    assert all(len(texts) == 1 for texts in helps.values()), helps
    assert {name for name, p in parsers.items() if "--baseline" in _options(p)} == {
        "chronoculture", "chronologic", "italian", "mher"}


def test_no_help_text_sends_the_reader_to_the_readme():
    """Help says what it can itself (a format spec shipped with the sources may be named)."""
    import re

    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    for parser in walk(make_parser()):
        texts = [parser.description or ""] + [a.help or "" for a in parser._actions]
        assert not [t for t in texts if re.search(r"(?<![/\w])README\b(?!\.md)", t)], parser.prog


def _build_samples(root: Path) -> None:
    import histbench
    from histbench.builders.machinery.build import get_builder

    for name in ("chronoculture", "chronologic", "mher", "valence"):
        histbench.build(name, sample=True, out=root / "build")
    cavalcanti = get_builder("italian").manifest().sample_paths()["cavalcanti"][0]
    histbench.build("italian", cavalcanti=cavalcanti, out=root / "build")


@pytest.fixture
def sample_builds(run_cache, tmp_path_factory):
    """The bundled samples in build/ of a fresh working folder (italian: the Cavalcanti
    sample only, which is quick), as a user who ran `histbench build BENCHMARK --sample` has:
    built once per test run, copied for each test."""
    import shutil

    return Path(shutil.copytree(run_cache("cli-consistency-builds", _build_samples), tmp_path_factory.mktemp("work") / "w"))


def test_the_dataset_defaults_to_the_build_folder_everywhere(sample_builds, monkeypatch):
    monkeypatch.chdir(sample_builds)
    assert main(["eval", "chronoculture", "--baseline", "uniform", "--out", "runs/cc"]) == 0
    assert main(["eval", "italian", "--baseline", "random", "--out", "runs/it"]) == 0
    assert main(["eval", "mher", "--baseline", "table2", "--out", "runs/mh"]) == 0
    # (chronologic's bootstrap cut to 50 resamples here: it takes ~25 s CPU at the default 1,000)
    assert main(["eval", "chronologic", "--baseline", "random", "--bootstrap", "50", "--out", "runs/cl"]) == 0
    for run, file in (("cc", "chronoculture.json"), ("mh", "mher_run.json"), ("cl", "chronologic.json")):
        info = json.loads((sample_builds / "runs" / run / file).read_text())
        assert Path(info["dataset"]["path"]).resolve().parent == (sample_builds / "build").resolve(), run
    italian = json.loads((sample_builds / "runs" / "it" / "italian.json").read_text())
    built = json.loads((sample_builds / "build" / "italian-1.0.0" / "histbench.json").read_text())
    assert f"|data:italian@1.0.0#{built['data_sha256'][:12]}|" in italian["signature"]["text"]


@pytest.mark.parametrize("name, words", [
    ("chronoculture", ["--baseline", "uniform"]),
    ("chronologic", ["--baseline", "random", "--bootstrap", "50"]),
    ("italian", ["--baseline", "random"]),
    ("mher", ["--baseline", "table2"]),
    ("valence", ["--model", "hf:/nonexistent/masked-lm"]),
])
def test_revision_reaches_the_hub_download_in_every_evaluator(name, words, sample_builds, monkeypatch, tmp_path):
    """A Hub id with --revision: the download asks for exactly that revision (the Hub
    itself is replaced by the local build it would have returned)."""
    import huggingface_hub

    asked = []

    def snapshot_download(repo_id, repo_type, revision=None, **kwargs):
        asked.append((repo_id, repo_type, revision))
        return str(sample_builds / "build" / f"{name}-1.0.0")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    main(["eval", name, "--dataset", f"some-org/{name}", "--revision", "v1.0.0", "--out", str(tmp_path / "run"), *words])
    assert asked and asked[0] == (f"some-org/{name}", "dataset", "v1.0.0")


def test_a_repeated_baseline_is_one_run_each_named_by_its_baseline(sample_builds, monkeypatch, capsys):
    monkeypatch.chdir(sample_builds)
    assert main(["eval", "chronoculture", "--baseline", "uniform", "--baseline", "frozen-oldest", "--out", "runs/refs"]) == 0
    labels = {}
    for baseline in ("uniform", "frozen-oldest"):
        info = json.loads((sample_builds / "runs" / "refs" / baseline / "chronoculture.json").read_text())
        assert info["kind"] == "baseline"
        labels[baseline] = info["label"]
    assert labels == {"uniform": "uniform", "frozen-oldest": "frozen oldest gold"}  # each its baseline's own name
    assert main(["eval", "chronoculture", "--baseline", "uniform", "--baseline", "frozen-newest", "--label", "x"]) == 2
    assert "--label names one run" in capsys.readouterr().err


def test_label_names_the_run_in_every_evaluator(sample_builds, monkeypatch):
    monkeypatch.chdir(sample_builds)
    assert main(["eval", "chronologic", "--baseline", "random", "--bootstrap", "50", "--label", "coin",
                 "--out", "runs/coin"]) == 0
    assert json.loads(Path("runs/coin/chronologic.json").read_text())["label"] == "coin"
    assert main(["eval", "italian", "--baseline", "random", "--label", "dice", "--out", "runs/dice"]) == 0
    assert json.loads(Path("runs/dice/results.json").read_text())["label"] == "dice"
    assert main(["eval", "chronoculture", "--baseline", "uniform", "--label", "flat"]) == 0
    assert json.loads(Path("runs/chronoculture-flat/chronoculture.json").read_text())["label"] == "flat"


def test_valence_label_and_limit(sample_builds, monkeypatch, tiny_masked_lm):
    import histbench

    monkeypatch.chdir(sample_builds)
    run = histbench.evaluate("valence", model=f"hf:{tiny_masked_lm}", label="tiny", limit=4, top_k=2,
                             model_option={"device": "cpu"}, out="runs/valence-tiny")
    assert run.label == "tiny" and {r["id"].split(":", 1)[1] for r in run.records} == {
        r["sentence_id"] for r in histbench.load("build/valence-1.0.0", "sentences", "test").select(range(4))}
    assert main(["eval", "valence", "--model", f"hf:{tiny_masked_lm}", "--model", f"other=hf:{tiny_masked_lm}",
                 "--label", "x", "--out", "runs/two"]) == 2


def _report_parsers() -> dict[str, argparse.ArgumentParser]:
    return _subparsers(_subparsers(make_parser())["report"])


def test_every_report_takes_its_runs_out_dataset_and_revision_alike():
    """`histbench report BENCHMARK RUN... [--out DIR] [--dataset BUILD] [--revision REV]`,
    the same names, defaults (reports/BENCHMARK) and help in every benchmark."""
    helps: dict[str, set[str]] = {}
    for name, parser in _report_parsers().items():
        (runs,) = [a for a in parser._actions if not a.option_strings and a.dest != "help"]
        assert (runs.dest, runs.nargs, runs.metavar) == ("runs", "+", "RUN"), name
        options = _options(parser)
        assert options["--out"].default == Path("reports") / name, name
        for flag in ("--dataset", "--revision"):
            helps.setdefault(flag, set()).add(options[flag].help)
    assert set(_report_parsers()) == set(BENCHMARKS)
    assert all(len(texts) == 1 for texts in helps.values()), helps


def test_an_option_has_one_name_in_the_command_and_the_api():
    """Every API keyword is its option's long name with dashes as underscores (a raw input:
    its role, `--questions` is `questions`), in every command of every benchmark."""
    import inspect

    import histbench
    from histbench.options import PUSH, build_options, eval_options, report_options

    for name in BENCHMARKS:
        for options in (build_options(name), eval_options(name), report_options(name)):
            for option in options.options:
                if option.flags[0].startswith("--"):
                    assert option.keyword == option.flag[2:].replace("-", "_"), (options.prog, option.flags)
    assert set(inspect.signature(histbench.push).parameters) == {o.keyword for o in PUSH.options}
    with pytest.raises(UsageError, match=r"no option 'question' \(did you mean 'questions'\?\) \(options: .*\bquestions\b") as caught:
        histbench.build("chronologic", question="x.jsonl")
    assert "input_" not in str(caught.value)


def test_the_command_refuses_what_it_would_otherwise_ignore(sample_builds, capsys):
    assert main(["--frob"]) == 2
    err = capsys.readouterr().err
    assert "unknown option --frob" in err and "required: COMMAND" not in err and len(err.strip().splitlines()) == 1
    folder = str(sample_builds / "build" / "chronologic-1.0.0")
    assert main(["validate", folder, "--revision", "v1"]) == 2
    assert "is a local folder" in capsys.readouterr().err
    assert main(["validate", folder]) == 0


@pytest.mark.parametrize("name", ["chronoculture", "chronologic", "italian", "mher"])
def test_eval_without_a_model_names_the_baselines(name, sample_builds, monkeypatch, capsys):
    monkeypatch.chdir(sample_builds)
    assert main(["eval", name]) == 2
    err = capsys.readouterr().err
    assert "--model" in err and "--baseline" in err and len(err.strip().splitlines()) == 1


def test_the_api_is_quiet_unless_asked(sample_builds, monkeypatch, capsys):
    """In a notebook, `evaluate` and `report` print no tables (verbose=True prints what the
    command prints); progress and notes still go to standard error."""
    import histbench

    monkeypatch.chdir(sample_builds)
    capsys.readouterr()
    run = histbench.evaluate("chronologic", baseline="random", out="runs/quiet", bootstrap=50)
    histbench.report("chronologic", run, out="reports/quiet")
    assert capsys.readouterr().out == ""
    histbench.evaluate("chronologic", baseline="random", out="runs/loud", bootstrap=50, verbose=True)
    histbench.report("chronologic", "runs/loud", out="reports/loud", verbose=True)
    loud = capsys.readouterr().out
    assert "random choice" in loud and "|" in loud   # the command's tables


def test_report_dataset_refuses_runs_of_another_build(sample_builds, monkeypatch, capsys):
    """`--dataset` in a report that does not read the build still checks the runs against it."""
    import histbench
    from histbench.builders.machinery.build import get_builder

    monkeypatch.chdir(sample_builds)
    assert main(["eval", "chronologic", "--baseline", "random", "--bootstrap", "50", "--out", "runs/cl"]) == 0
    assert main(["report", "chronologic", "runs/cl", "--dataset", "build/chronologic-1.0.0", "--out", "reports/ok"]) == 0
    sample = get_builder("chronologic").manifest().sample_paths()["questions"][0]
    fewer = Path("fewer.jsonl")
    fewer.write_text("".join(Path(sample).read_text(encoding="utf-8").splitlines(keepends=True)[:-1]), encoding="utf-8")
    other = histbench.build("chronologic", questions=fewer, out="other", allow_checksum_mismatch=True)
    capsys.readouterr()
    assert main(["report", "chronologic", "runs/cl", "--dataset", str(other), "--out", "reports/other"]) == 2
    err = capsys.readouterr().err
    assert "was made on build data" in err and "runs/cl" in err
    assert not Path("reports/other").exists()


def test_top_level_help_is_the_full_parsers_without_importing_a_builder():
    """`histbench --help` uses the shallow parser (issue 45: no builder imported); its text
    must stay the full parser's word for word, command order included."""
    import subprocess
    import sys

    from histbench.cli import shallow_parser

    assert shallow_parser().format_help() == make_parser().format_help()
    code = ("import sys; from histbench.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('histbench.builders.') and m.count('.') >= 3))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "usage: histbench" in out
    assert out.strip().splitlines()[-1] == "[]", out.strip().splitlines()[-1]
