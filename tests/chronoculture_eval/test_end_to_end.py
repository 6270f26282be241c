"""`histbench eval chronoculture` against a real loopback chat server answering scripted
distributions; the server dies mid-run (the run stops), a new one on the same port lets the
same command resume; then `histbench report chronoculture` on the model and a uniform run."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from histbench import cli
from histbench.eval.chronoculture import metrics as m
from histbench.eval.chronoculture.analysis import analyse
from histbench.eval.chronoculture.data import Predictions, load_predictions


def main(argv: list[str]) -> int:
    """`histbench ARGV` through the real CLI (exit status 2 and one line on errors)."""
    return cli.main(argv)


REF = re.compile(r"\[ref (\S+) (\S+)\]")


def _percent_json(labels, probabilities):
    return json.dumps({label: 100 * p for label, p in zip(labels, probabilities, strict=True)})


def scripted(records):
    """The model's answers and the distributions they mean (None: an invalid answer)."""
    pairs = {p["pair_id"]: (i, p) for i, p in enumerate(records["pairs"])}
    mcq = {r["pair_id"]: r for r in records["mcq"]}
    intended: dict[tuple[str, str], list[float] | None] = {}

    def plan(pair_id, period):
        i, p = pairs[pair_id]
        labels, g_old, g_new = p["option_labels"], p["G_old"], p["G_new"]
        if period == "undated":
            if i == 7:
                return "I cannot estimate this.", None
            dist = g_old[::-1] if i % 4 == 3 else g_old
            return f"Here you go:\n```json\n{_percent_json(labels, dist)}\n```", dist
        if period == "old":
            if i == 9:
                return '{"' + '": NaN, "'.join(labels) + '": NaN}', None
            return _percent_json(labels, g_old), g_old
        if period == "new":
            if i == 5:
                return json.dumps({labels[0]: 50, labels[1]: 50}), None
            dist = g_new if i % 2 == 0 else g_old
            return _percent_json(labels, dist), dist
        letter = mcq[pair_id]["option_letters"][mcq[pair_id]["mode_old"]]
        return json.dumps({"answer": letter}), None

    for pair_id in pairs:
        for period in ("undated", "old", "new"):
            intended[(pair_id, period)] = plan(pair_id, period)[1]

    def answer(messages):
        pair_id, period = REF.search(messages[-1]["content"]).groups()
        return plan(pair_id, period)[0]

    return answer, intended


def _restart(chat_server, answer, port):
    """A new server on the port of a stopped one (the old socket may take a moment to close)."""
    for _ in range(50):
        try:
            return chat_server(answer, port=port)
        except OSError:
            time.sleep(0.1)
    return chat_server(answer, port=port)


def _eval_args(spec, build, out):
    return ["eval", "chronoculture", "--model", spec, "--model-option", "max_retries=0", "--max-concurrency", "2",
            "--dataset", str(build), "--out", str(out), "--modal"]


def test_eval_interrupted_resumed_and_reported(chat_server, synthetic_build, synthetic_records, tmp_path, capsys):
    answer, intended = scripted(synthetic_records)
    n_pairs = len(synthetic_records["pairs"])
    total = 3 * n_pairs + 2 * len(synthetic_records["mcq"])
    run = tmp_path / "runs" / "loopback"

    first = chat_server(answer, die_after=40)
    assert main(_eval_args(first.spec(), synthetic_build, run)) == 2  # the endpoint went away mid-run
    assert "no answer" in capsys.readouterr().err
    stored = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    answered = sum(r["response"] is not None for r in stored)
    # answers in flight when the fatal error stopped the run may be lost (at most the concurrency, 2)
    assert first.delivered - 2 <= answered <= first.delivered == 40
    assert not (run / "predictions.jsonl").exists()

    first.stop()
    second = _restart(chat_server, answer, first.port)
    assert second.spec() == first.spec()
    assert main(_eval_args(second.spec(), synthetic_build, run)) == 0
    assert second.requests == total - answered  # nothing answered before is asked again
    out = capsys.readouterr().out
    assert "both periods within 0.10" in out

    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == total
    info = json.loads((run / "chronoculture.json").read_text())
    assert info["kind"] == "model" and info["label"] == "loopback-model"
    assert info["decoding"]["temperature"] == 0.0 and info["decoding"]["max_new_tokens"] == 120
    counts = info["counts"]
    assert (counts["undated"]["invalid"], counts["old"]["invalid"], counts["new"]["invalid"]) == (1, 1, 1)
    assert counts["undated"]["reasons"] == {"option missing": 1}  # prose without numbers
    assert counts["old"]["reasons"] == {"non-finite value": 1}
    assert counts["new"]["reasons"] == {"option missing": 1}
    assert counts["undated"]["routes"]["fenced"] == n_pairs - 1
    assert counts["mcq_old"]["valid"] == len(synthetic_records["mcq"])
    for row in rows:
        if row["period"] in ("undated", "old", "new"):
            expected = intended[(row["pair_id"], row["period"])]
            if expected is None:
                assert row["probabilities"] is None and row["error"]
            else:
                assert row["probabilities"] == pytest.approx(expected, abs=1e-9)

    # a rerun re-parses stored answers and asks nothing
    second.stop()
    third = _restart(chat_server, answer, first.port)
    assert main(_eval_args(third.spec(), synthetic_build, run)) == 0
    assert third.requests == 0

    uniform = tmp_path / "runs" / "uniform"
    assert main(["eval", "chronoculture", "--baseline", "uniform", "--dataset", str(synthetic_build), "--out", str(uniform)]) == 0
    report = tmp_path / "report"
    assert main(["report", "chronoculture", str(run), str(uniform), "--out", str(report), "--resamples", "200"]) == 0
    text = (report / "index.md").read_text()
    for table in ("Table 5.", "Table 6.", "Table 8.", "Table 9.", "Table 10.", "Table 11.", "Table 13.", "Table 15.",
                  "Table 16.", "Table 17.", "Table 18.", "Table 22.", "Table 26."):
        assert table in text, table
    assert (report / "index.html").is_file()
    for name in ("fig5_accuracy.png", "fig6_alignment.png", "fig7_magnitude_direction.png", "fig8_benefit.png",
                 "fig15_human_vs_model_shift.png", "fig16_patterns_loopback-model.png", "fig17_limited_change_loopback-model.png"):
        assert (report / "figures" / name).stat().st_size > 1000, name

    # The report's numbers are the analysis of exactly the scripted distributions.
    def no_nan(token):
        raise AssertionError(f"{token} is not JSON")

    results = json.loads((report / "chronoculture_results.json").read_text(), parse_constant=no_nan)
    json.loads((report / "report.json").read_text(), parse_constant=no_nan)
    # an undefined cell is null: the uniform run never changes its prediction, so no ratio is defined
    assert results["runs"]["uniform"]["cells"]["rf2.default.strong.median_ratio"]["estimate"] is None
    model = results["runs"]["loopback-model"]
    assert model["counts"]["excluded_invalid_undated"] == 1
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.data import load_benchmark

    bench = load_benchmark(BuiltDataset.open(synthetic_build))
    arrays = {p: m.pad_distributions([intended[(pid, p)] for pid in bench.pair_id], bench.width) for p in ("undated", "old", "new")}
    direct = analyse(bench, Predictions("x", "model", arrays["old"], arrays["new"], arrays["undated"]), resamples=200)
    for key in ("rf1.default.tau0.10.all.both", "rf2.default.very_strong.zero_shift", "rf3.benefit.new.all.mean",
                "align.default.shifted.older_aligned"):
        assert model["cells"][key]["estimate"] == pytest.approx(direct.cell(key).estimate)
        assert model["cells"][key]["low"] == pytest.approx(direct.cell(key).low)
    # odd pairs repeat the older gold for the newer year: zero model shift exactly there
    loaded = load_predictions(bench, run)
    a = analyse(bench, loaded, resamples=0)
    odd = np.array([int(bench.index()[pid]) % 2 == 1 for pid in bench.pair_id[a.per_pair["index"]]])
    assert (a.per_pair["zero_shift"] == odd).all()
    # modal answers: always the older mode -> both correct exactly when the mode did not change
    modal = model["modal"]
    assert modal["by_category"]["stable"]["both_correct"]["estimate"] == pytest.approx(
        np.mean([r["mode_old"] == r["mode_new"] for r in synthetic_records["mcq"] if r["shift_category"] == "stable"]))
    assert modal["by_category"]["very_strong"]["both_correct"]["estimate"] == 0.0


def test_eval_needs_a_model_or_a_baseline(synthetic_build, tmp_path, capsys):
    assert main(["eval", "chronoculture", "--dataset", str(synthetic_build), "--out", str(tmp_path / "r")]) == 2
    assert "exactly one of --model" in capsys.readouterr().err


def test_report_refuses_runs_of_another_build(synthetic_build, make_build, tmp_path, capsys):
    other = make_build(tmp_path / "other", n_pairs=16, seed=3)
    run = tmp_path / "uniform"
    assert main(["eval", "chronoculture", "--baseline", "uniform", "--dataset", str(synthetic_build), "--out", str(run)]) == 0
    assert main(["report", "chronoculture", str(run), "--dataset", str(other), "--out", str(tmp_path / "rep")]) == 2
    assert "report runs of one build together" in capsys.readouterr().err


def test_report_of_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["report", "chronoculture", str(tmp_path), "--out", str(tmp_path / "rep")]) == 2
    assert "not a run folder of this histbench" in capsys.readouterr().err


def test_likelihood_over_pairs_without_modal_answer_prompts_is_one_line(sample_build, capsys, tmp_path):
    """The sample's first pair has no modal-answer prompt: `--mode likelihood --limit 1`
    says so in one line (exit 2) instead of failing in the metrics; nothing is asked (the
    URL is never contacted) and no run folder is written."""
    code = cli.main(["eval", "chronoculture", "--dataset", str(sample_build), "--mode", "likelihood",
                     "--model", "api:m@http://127.0.0.1:9/v1", "--limit", "1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "has modal-answer prompts" in err[0] and "--limit" in err[0]
    assert not (tmp_path / "run" / "predictions.jsonl").exists()
