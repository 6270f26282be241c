"""`histbench eval chronoculture --mode option-probabilities`: a distribution read from the
model's probabilities of the option labels after the paper's prompt (OpinionQA-style; not
the paper's generation method of B.1, and labelled so wherever the run is shown)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from histbench import cli
from histbench.eval.chronoculture.run import OPTION_PROBABILITIES_NOTE, option_distribution


def test_option_distribution_is_normalised_exp_loglik_in_option_order():
    logliks = [math.log(0.2), math.log(0.1), math.log(0.1)]
    assert option_distribution(logliks) == pytest.approx([0.5, 0.25, 0.25])
    # the order of the options is kept: the likeliest option stays where it was
    assert int(np.argmax(option_distribution([-9.0, -1.0, -5.0]))) == 1
    # very unlikely options (long labels) do not underflow to an all-zero row
    far = option_distribution([-2000.0, -2001.0])
    assert sum(far) == pytest.approx(1.0) and far[0] == pytest.approx(1 / (1 + math.exp(-1)))


@pytest.mark.parametrize("bad", [[], [float("nan"), -1.0], [float("-inf"), -1.0]])
def test_option_distribution_refuses_what_is_not_a_loglikelihood(bad):
    from histbench.core.errors import EvalError

    with pytest.raises(EvalError, match="finite"):
        option_distribution(bad)


@pytest.fixture(scope="module")
def option_run(sample_build, tiny_causal_lm, tmp_path_factory):
    """Two pairs of the bundled sample scored with the tiny causal LM (6 distribution prompts)."""
    out = tmp_path_factory.mktemp("option-run") / "run"
    code = cli.main(["eval", "chronoculture", "--dataset", str(sample_build), "--mode", "option-probabilities",
                     "--model", f"hf:{tiny_causal_lm}", "--model-option", "dtype=float32", "--limit", "2",
                     "--out", str(out)])
    assert code == 0
    return out


def test_every_prompt_gets_a_distribution_over_its_options(option_run, sample_build):
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.data import load_benchmark

    bench = load_benchmark(BuiltDataset.open(sample_build))
    index = bench.index()
    rows = [json.loads(line) for line in (option_run / "predictions.jsonl").read_text().splitlines()]
    assert sorted(r["period"] for r in rows) == ["new", "new", "old", "old", "undated", "undated"]
    for row in rows:
        p = row["probabilities"]
        assert len(p) == len(row["logliks"]) == int(bench.k[index[row["pair_id"]]])
        assert sum(p) == pytest.approx(1.0) and min(p) > 0
        assert p == pytest.approx(option_distribution(row["logliks"]))
        assert row["route"] == "option-probabilities" and row["error"] is None
    info = json.loads((option_run / "chronoculture.json").read_text())
    assert info["mode"] == "option-probabilities" and info["label"].endswith("(option probabilities)")
    assert info["method_note"] == OPTION_PROBABILITIES_NOTE and "not by the paper's generation method" in info["method_note"]
    assert "option-probabilities" in info["signature"]
    assert all(c["valid"] == c["prompts"] for c in info["counts"].values())


def test_the_options_are_scored_in_their_own_order(option_run, sample_build, tiny_causal_lm):
    """Each option's log-likelihood is its own label's: scored again one request at a time, in
    reversed order, after the same rendered prompt, it gives the same numbers at the same places."""
    from histbench.core.backends import GenerateRequest, LoglikelihoodRequest, load_backend
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.data import load_benchmark

    built = BuiltDataset.open(sample_build)
    bench = load_benchmark(built)
    row = json.loads((option_run / "predictions.jsonl").read_text().splitlines()[0])
    messages = next(r["messages"] for r in built.load("undated", "test").to_list() if r["pair_id"] == row["pair_id"])
    options = list(bench.options[bench.index()[row["pair_id"]]])
    backend = load_backend(f"hf:{tiny_causal_lm}", {"dtype": "float32"})
    try:
        context, templated = backend.render(GenerateRequest(messages=messages))
        separator = "" if templated else "\n\n"
        again = {}
        for j in reversed(range(len(options))):
            result = backend.loglikelihood([LoglikelihoodRequest(context=context, continuation=separator + options[j])])[0]
            again[j] = result.logprob
    finally:
        backend.close()
    assert [again[j] for j in range(len(options))] == pytest.approx(row["logliks"], abs=1e-4)


def test_the_report_and_the_viewer_say_it_is_not_the_papers_method(option_run, tmp_path):
    from histbench.eval.chronoculture import EVALUATOR

    report = tmp_path / "report"
    assert cli.main(["report", "chronoculture", str(option_run), "--resamples", "0", "--out", str(report)]) == 0
    text = (report / "index.md").read_text()
    assert "was scored by option probabilities, not by the paper's generation method (B.1)" in text
    assert "not by the paper's generation method" in (report / "chronoculture.html").read_text()
    assert "(option probabilities)" in (report / "index.html").read_text()   # the index card: the run's label
    viewed = EVALUATOR.view_items(option_run)
    assert any("not by the paper's generation method" in note for note in viewed.notes)
    assert all(item["response"] and item["parsed"] for item in viewed.items)


def test_a_generate_run_and_an_option_run_do_not_share_a_folder(option_run, sample_build, capsys):
    code = cli.main(["eval", "chronoculture", "--dataset", str(sample_build), "--model", "api:m@http://127.0.0.1:9/v1",
                     "--limit", "1", "--out", str(option_run)])
    assert code == 2 and "holds a --mode option-probabilities run" in capsys.readouterr().err


def test_option_probabilities_refuses_a_baseline_and_modal(sample_build, tmp_path, capsys):
    base = ["eval", "chronoculture", "--dataset", str(sample_build), "--mode", "option-probabilities",
            "--out", str(tmp_path / "r")]
    assert cli.main([*base, "--baseline", "uniform"]) == 2
    assert "a baseline has none" in capsys.readouterr().err
    assert cli.main([*base, "--model", "api:m@http://127.0.0.1:9/v1", "--modal"]) == 2
    assert "--mode likelihood" in capsys.readouterr().err
