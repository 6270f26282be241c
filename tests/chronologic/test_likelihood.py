"""`--mode likelihood` end to end through the evaluator engine's run store, with a small
deterministic Backend subclass (log-likelihoods computed from the text); the real-model
path (tiny transformers model, SmolLM2) is in test_lm_eval.py and test_demo.py."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest

from histbench.builders.core.dataset import BuiltDataset
from histbench.builders.core.errors import UsageError
from histbench.eval.backends.base import Backend, LoglikelihoodResult
from histbench.eval.chronologic.likelihood import REPORTERS, evaluate
from histbench.eval.chronologic.report import run_report


class TextBackend(Backend):
    """log P(continuation | context) = -0.1 * characters - 0.01 * (len(context) % 7); one
    token per word. Counts what it is asked."""

    kind = "text"

    def __init__(self, spec: str = "text:length", supports=("loglikelihood",)) -> None:
        super().__init__(spec, "length", {})
        self.supports = frozenset(supports)
        self.contexts: list[str] = []

    def _loglikelihood_batch(self, requests, indices):
        self.contexts += [r.context for r in requests]
        yield indices, [
            LoglikelihoodResult(-0.1 * len(r.continuation) - 0.01 * (len(r.context) % 7),
                                max(1, len(r.continuation.split())), False)
            for r in requests
        ]


def test_run_writes_results_and_ledger_and_resumes(sample_build, tmp_path):
    built = BuiltDataset.open(sample_build)
    backend = TextBackend()
    results = evaluate(built, backend=backend, run_dir=tmp_path / "run", n_resamples=200)
    n_options = sum(len(q["answer_strings"]) for q in built.load("questions", "test").to_list())
    assert len(backend.contexts) == n_options
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert saved["counts"]["questions"] == 24 and saved["counts"]["options"] == n_options
    assert set(saved["metrics"]["acc"]) >= {"overall", "group:cloze", "group:generation", "group:knowledge",
                                            "type:abstention"}
    assert saved["table3"]["brier"] == saved["metrics"]["brier"]["overall"]
    assert "prompt:" + saved["prompt_template"]["sha256"][:12] in saved["signature"]["text"]
    ledger = [json.loads(line) for line in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()]
    assert len(ledger) == 24 and ledger[0]["frame_donor"] == ledger[0]["question_number"]
    # every option is scored with the same context for a question
    q = built.load("questions", "test").to_list()[0]
    assert backend.contexts[0] == f"{q['metadata_frame']}\n\n{q['main_question']}\n\nAnswer:"
    # a rerun asks nothing again and gives the same numbers
    again = TextBackend()
    rerun = evaluate(built, backend=again, run_dir=tmp_path / "run", n_resamples=200)
    assert again.contexts == [] and rerun["metrics"] == results["metrics"]


def test_permuted_frames_change_the_contexts(sample_build, tmp_path):
    built = BuiltDataset.open(sample_build)
    backend = TextBackend()
    results = evaluate(built, backend=backend, run_dir=tmp_path / "perm", permute_frames=True, seed=4, n_resamples=50)
    donors = results["frame_permutation"]["donor"]
    assert all(int(k) != v for k, v in donors.items())
    frames = {q["question_number"]: q["metadata_frame"] for q in built.load("questions", "test").to_list()}
    first = min(frames)
    assert backend.contexts[0].startswith(frames[donors[str(first)]])
    assert results["label"].endswith("(wrong frames)") and "frames:permuted-seed4" in results["signature"]["text"]


def test_backend_without_loglikelihood_is_a_usage_error(sample_build, tmp_path):
    with pytest.raises(UsageError, match="needs a model that gives log-likelihoods"):
        evaluate(BuiltDataset.open(sample_build), backend=TextBackend("text:chat", ("generate",)), run_dir=tmp_path / "x")


def test_report_sorts_by_brier(sample_build, tmp_path, capsys):
    built = BuiltDataset.open(sample_build)
    evaluate(built, baseline="random", run_dir=tmp_path / "random", n_resamples=50)
    evaluate(built, backend=TextBackend(), run_dir=tmp_path / "text", n_resamples=50)
    sections = run_report(Namespace(runs=[tmp_path / "text", tmp_path / "random"], out=tmp_path / "report"),
                          REPORTERS)
    data = sections[0].data
    briers = [v["metrics"]["brier"]["overall"]["estimate"] for v in data.values()]
    assert briers == sorted(briers) and set(data) == {"random choice", "text:length"}
    with pytest.raises(UsageError, match="holds a model's run"):
        evaluate(built, baseline="random", run_dir=tmp_path / "text")
    text = (tmp_path / "report" / "index.md").read_text()
    assert "| Model | Brier | Cloze | Gen. | Know. |" in text
    assert "random choice" in capsys.readouterr().out


def test_cli_modes(sample_build, tmp_path, capsys, monkeypatch):
    import histbench.eval.chronologic as package
    from histbench.builders.cli import main

    # as an installation that has only the likelihood mode
    monkeypatch.setattr(package, "MODES", {})
    monkeypatch.setattr(package, "MODE_MODULES", ("likelihood",))

    out = tmp_path / "cli-random"
    assert main(["eval", "chronologic", "--mode", "likelihood", "--baseline", "random",
                 "--dataset", str(sample_build), "--out", str(out), "--bootstrap", "50"]) == 0
    assert json.loads((out / "results.json").read_text())["label"] == "random choice"
    assert main(["eval", "chronologic", "--mode", "anchors", "--dataset", str(sample_build)]) == 2
    assert "unknown --mode 'anchors' (available: likelihood)" in capsys.readouterr().err
    assert main(["eval", "chronologic", "--mode", "nonsense"]) == 2
    assert "unknown --mode 'nonsense' (available: likelihood" in capsys.readouterr().err
    assert main(["eval", "chronologic", "--baseline", "random", "--model", "hf:x", "--dataset", str(sample_build)]) == 2
    assert main(["report", "chronologic", str(out)]) == 0
    assert "random choice" in capsys.readouterr().out
