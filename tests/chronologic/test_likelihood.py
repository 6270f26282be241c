"""`--mode likelihood` end to end through the evaluator engine's run store, with a small
deterministic Backend subclass (log-likelihoods computed from the text); the real-model
path (tiny transformers model, SmolLM2) is in test_lm_eval.py and test_demo.py."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest

from histbench.core.backends.base import Backend, LoglikelihoodResult
from histbench.core.dataset import BuiltDataset
from histbench.core.errors import UsageError
from histbench.eval.chronologic import EVALUATOR
from histbench.eval.chronologic.data import PromptTemplate
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
    saved = json.loads((tmp_path / "run" / "chronologic.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert not (tmp_path / "run" / "results.json").exists()   # the run format's, written by finish_run
    assert saved["counts"]["questions"] == 24 and saved["counts"]["options"] == n_options
    assert set(saved["metrics"]["acc"]) >= {"overall", "group:cloze", "group:generation", "group:knowledge",
                                            "type:abstention"}
    assert saved["table3"]["brier"] == saved["metrics"]["brier"]["overall"]
    assert "prompt:" + saved["prompt_template"]["sha256"][:12] in saved["signature"]["text"]
    ledger = [json.loads(line) for line in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()]
    assert len(ledger) == 24 and ledger[0]["frame_donor"] == ledger[0]["question_number"]
    # every option is scored after its question's one context: the authors' prompt
    q = built.load("questions", "test").to_list()[0]
    assert backend.contexts[0] == PromptTemplate.load().render_context(q)
    assert backend.contexts[0] == f"{q['metadata_frame']}\nQUESTION: {q['main_question']}\nANSWER: "
    assert saved["counts"]["questions_with_reminder"] == 9  # knowledge, inference, abstention
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
    assert results["label"].endswith("(wrong frames)") and "frames:permuted-authors-seed4" in results["signature"]["text"]
    # the authors' groups (their ExperimentPlan: world context, character modelling, book
    # context, passage context): no frame crosses a group
    from histbench.eval.chronologic.data import frame_group

    by_number = {q["question_number"]: q for q in built.load("questions", "test").to_list()}
    assert all(frame_group(by_number[int(k)], "authors") == frame_group(by_number[v], "authors")
               for k, v in donors.items())
    assert results["options"]["frame_groups"] == "authors"


def test_backend_without_loglikelihood_is_a_usage_error(sample_build, tmp_path):
    with pytest.raises(UsageError, match="needs a model that gives log-likelihoods"):
        evaluate(BuiltDataset.open(sample_build), backend=TextBackend("text:chat", ("generate",)), run_dir=tmp_path / "x")


def test_report_sorts_by_brier(sample_build, tmp_path, capsys):
    built = BuiltDataset.open(sample_build)
    evaluate(built, baseline="random", run_dir=tmp_path / "random", n_resamples=50)
    evaluate(built, backend=TextBackend(), run_dir=tmp_path / "text", n_resamples=50)
    for run in ("random", "text"):   # as `histbench eval` does after every run
        EVALUATOR.finish_run(tmp_path / run)
    sections = run_report(Namespace(runs=[tmp_path / "text", tmp_path / "random"], out=tmp_path / "report",
                                    published_table3=None), REPORTERS)
    data = sections[0].data
    briers = [v["metrics"]["brier"]["overall"]["median"] for v in data.values()]
    assert briers == sorted(briers) and set(data) == {"random choice", "text:length"}
    with pytest.raises(UsageError, match="holds a model's run"):
        evaluate(built, baseline="random", run_dir=tmp_path / "text")
    text = (tmp_path / "report" / "index.md").read_text()
    assert "| Model | Brier | Cloze | Gen. | Know. |" in text
    assert "random choice" in capsys.readouterr().out


def test_cli_modes(sample_build, tmp_path, capsys, monkeypatch):
    import histbench.eval.chronologic as package
    from histbench.cli import main

    # as an installation that has only the likelihood mode
    monkeypatch.setattr(package, "MODES", {})
    monkeypatch.setattr(package, "MODE_MODULES", ("likelihood",))

    out = tmp_path / "cli-random"
    assert main(["eval", "chronologic", "--mode", "likelihood", "--baseline", "random",
                 "--dataset", str(sample_build), "--out", str(out), "--bootstrap", "50", "--platt-fit", "newton"]) == 0
    saved = json.loads((out / "chronologic.json").read_text())
    assert saved["label"] == "random choice" and saved["options"]["platt_fit"] == "newton"
    assert json.loads((out / "run.json").read_text())["run_format"] == 1
    assert main(["eval", "chronologic", "--mode", "anchors", "--dataset", str(sample_build)]) == 2
    assert "unknown --mode 'anchors' (available: likelihood)" in capsys.readouterr().err
    assert main(["eval", "chronologic", "--mode", "nonsense"]) == 2
    assert "unknown --mode 'nonsense' (available: likelihood" in capsys.readouterr().err
    assert main(["eval", "chronologic", "--baseline", "random", "--model", "hf:x", "--dataset", str(sample_build)]) == 2
    assert main(["report", "chronologic", str(out), "--out", str(tmp_path / "report")]) == 0
    assert "random choice" in capsys.readouterr().out


def test_report_shows_the_published_table3_rows(sample_build, tmp_path, capsys):
    """Point 8 of the issue: the authors' published leaderboard (bundled copy, cited) sits
    in the Table 3 layout beside the user's runs, sorted by Brier with them."""
    from histbench.cli import main

    evaluate(BuiltDataset.open(sample_build), baseline="random", run_dir=tmp_path / "random", n_resamples=50)
    EVALUATOR.finish_run(tmp_path / "random")
    assert main(["report", "chronologic", str(tmp_path / "random"), "--published-table3", "--out", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and line.endswith(("| published |", "| this run |"))]
    assert rows[0].startswith("| Talkie 1930 base | 0.1574 [0.1551, 0.1596] | 39.5 [34.3, 44.7] | 24.9 [19.9, 30.1] | "
                              "44.0 [37.5, 50.0] | 866 | published |")
    assert [r.split(" | ")[0] for r in rows[:7]] == [
        "| Talkie 1930 base", "| Talkie 1930 it", "| Qwen 7B ft (ckpt-3500)", "| Qwen 72B",
        "| Qwen 3.5 35B-A3B base", "| Talkie web base", "| Qwen 7B"]
    assert rows[-1].startswith("| random choice |") and rows[-1].endswith("| 24 | this run |")
    assert "Historical-AI-Lab/GPT-1914, chronologic/evalcode/prob_08/leaderboard.md at commit ee0b705" in out
    assert "not on the question set of the published rows" in out
    # the authors' leaderboard.csv (no intervals), as a user would point at it
    theirs = tmp_path / "leaderboard.csv"
    theirs.write_text("model,overall_brier,cloze_acc,constrained_generation_acc,knowledge_and_inference_acc\n"
                      "Gemma 4 31B base,0.1606,23.0,13.3,40.6\n")
    assert main(["eval", "chronologic", "--baseline", "random", "--dataset", str(sample_build),
                 "--out", str(tmp_path / "r2"), "--bootstrap", "20", "--published-table3", str(theirs)]) == 0
    assert "| Gemma 4 31B base | 0.1606 | 23.0 | 13.3 | 40.6 |  | published |" in capsys.readouterr().out
    theirs.write_text("model,overall_brier\nGemma,not a number\n")
    assert main(["report", "chronologic", str(tmp_path / "random"), "--published-table3", str(theirs), "--out", str(tmp_path / "report")]) == 2
    assert "row 2, column 'overall_brier': expected a number" in capsys.readouterr().err


def test_authors_tokenisation_is_the_default_and_harness_an_option(sample_build, tmp_path, tiny_causal_lm):
    """--tokenisation authors (the default, how the published Table 3 came about): every
    option loses the token its first word shares with the prompt's last space, and an option
    left with none scores 0.0 (counted), as in their code; --tokenisation harness scores
    every answer token. The two are different requests (different keys), one model."""
    from histbench.core.backends import load_backend

    built = BuiltDataset.open(sample_build)
    backend = load_backend(f"hf:{tiny_causal_lm}")
    results = {}
    try:
        results["authors"] = evaluate(built, backend=backend, run_dir=tmp_path / "authors", n_resamples=20,
                                      platt_fit="newton")
        results["harness"] = evaluate(built, backend=backend, run_dir=tmp_path / "harness", n_resamples=20,
                                      platt_fit="newton", tokenisation="harness")
    finally:
        backend.close()
    ledgers = {b: [json.loads(line) for line in (tmp_path / b / "questions.jsonl").read_text().splitlines()]
               for b in results}
    harness_tokens = [t for row in ledgers["harness"] for t in row["n_tokens"]]
    authors_tokens = [t for row in ledgers["authors"] for t in row["n_tokens"]]
    assert all(a <= h for a, h in zip(authors_tokens, harness_tokens, strict=True))
    assert sum(a < h for a, h in zip(authors_tokens, harness_tokens, strict=True)) > 0
    zero = sum(t == 0 for t in authors_tokens)
    assert results["authors"]["counts"]["options_scored_over_no_tokens"] == zero
    assert results["harness"]["counts"]["options_scored_over_no_tokens"] == 0
    assert results["authors"]["options"]["tokenisation"] == "authors"
    assert "tokenisation=authors" in results["authors"]["signature"]["text"]
    records = [json.loads(line) for line in (tmp_path / "authors" / "records.jsonl").read_text().splitlines()]
    assert {r["request"].get("boundary") for r in records} == {"context-length"}


def test_published_table3_is_on_by_default_and_can_be_left_out(sample_build, tmp_path, capsys):
    """Issue 43, item 3: the paper's Table 3 rows stand beside a run without asking for them."""
    from histbench.cli import main

    evaluate(BuiltDataset.open(sample_build), baseline="random", run_dir=tmp_path / "random", n_resamples=50)
    EVALUATOR.finish_run(tmp_path / "random")
    assert main(["report", "chronologic", str(tmp_path / "random"), "--out", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    assert "| Talkie 1930 base | 0.1574 [0.1551, 0.1596] |" in out and "| published |" in out
    assert main(["report", "chronologic", str(tmp_path / "random"), "--no-published-table3",
                 "--out", str(tmp_path / "report2")]) == 0
    out = capsys.readouterr().out
    assert "Talkie 1930 base" not in out and "random choice" in out


def test_the_demo_page_shows_the_published_table3(sample_build, tmp_path, monkeypatch):
    """Issue 43, item 3: in the demo too (the SmolLM2 run is left out here: it takes minutes)."""
    from histbench.eval import demo_model
    from histbench.eval.chronologic import demo as chronologic_demo

    monkeypatch.setattr(demo_model, "score_with_demo_model", lambda *args: "model not scored in this test")
    section = chronologic_demo.run_demo(BuiltDataset.open(sample_build), tmp_path / "work", tmp_path / "report")
    assert "| Talkie 1930 base | 0.1574 [0.1551, 0.1596] |" in section.markdown
    assert "not on the question set of the published rows" in section.markdown
