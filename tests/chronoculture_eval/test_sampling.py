"""F.3's sample: `--sample N --stratify shift_category` (equal shares per category, seeded)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from histbench import cli
from histbench.core.errors import EvalError
from histbench.eval.chronoculture import metrics as m
from histbench.eval.chronoculture.data import analysis_retention, sample_pairs


def _categories(bench, rows):
    return Counter(m.CATEGORIES[c] for c in bench.categories["default"][rows])


def test_stratified_sample_has_equal_shares_f3(benchmark):
    """F.3: equal shares of the four human-shift categories."""
    available = _categories(benchmark, np.arange(benchmark.n))
    assert min(available.values()) >= 3
    rows, info = sample_pairs(benchmark, 12, "shift_category", seed=0)
    assert _categories(benchmark, rows) == {c: 3 for c in m.CATEGORIES}
    assert (np.diff(rows) > 0).all()                               # dataset order, no repeats
    assert info["by_stratum"]["strong"] == {"available": available["strong"], "share": 3, "selected": 3}
    assert info["short"] == {}
    again, _ = sample_pairs(benchmark, 12, "shift_category", seed=0)
    other, _ = sample_pairs(benchmark, 12, "shift_category", seed=1)
    assert (again == rows).all() and not np.array_equal(other, rows)
    # 13 = 4 x 3 + 1: the remainder goes to the first category (stable)
    rows13, _ = sample_pairs(benchmark, 13, "shift_category", seed=0)
    assert _categories(benchmark, rows13) == {"stable": 4, "moderate": 3, "strong": 3, "very_strong": 3}


def test_short_strata_are_not_topped_up_from_others(benchmark):
    available = _categories(benchmark, np.arange(benchmark.n))
    share = max(available.values()) + 5
    rows, info = sample_pairs(benchmark, 4 * share, "shift_category", seed=0)
    assert _categories(benchmark, rows) == available                # every stratum gives all it has
    assert info["short"] == {c: share - available[c] for c in m.CATEGORIES}
    assert info["selected"] == benchmark.n


def test_simple_random_sample_and_bad_requests(benchmark):
    rows, info = sample_pairs(benchmark, 10, None, seed=3)
    assert rows.size == 10 and len(set(rows.tolist())) == 10 and info["stratify"] is None
    by_survey, _ = sample_pairs(benchmark, 10, "survey", seed=0)
    assert Counter(benchmark.survey[by_survey]) == {"WVS": 5, "ISSP": 5}
    with pytest.raises(EvalError, match="at least 1"):
        sample_pairs(benchmark, 0, None)
    with pytest.raises(EvalError, match="cannot stratify"):
        sample_pairs(benchmark, 5, "question_text")


def test_sampled_runs_are_analysed_without_the_filter_f3():
    assert analysis_retention("model", {}) == 0.75
    assert analysis_retention("model", {"sample": {"n": 300}}) == 1.0
    assert analysis_retention("model", {"sample": {"n": 300}}, 0.5) == 0.5
    assert analysis_retention("baseline", {}, 0.5) == 1.0


def _uniform_answer(messages):
    labels = re.findall(r"Options: (.+)\n", messages[-1]["content"])[0].split("; ")
    return json.dumps({label: 100 / len(labels) for label in labels})


def test_sample_through_the_cli_is_recorded_and_reported(chat_server, synthetic_build, benchmark, tmp_path, capsys):
    server = chat_server(_uniform_answer)
    run = tmp_path / "run"
    args = ["eval", "chronoculture", "--model", server.spec(), "--model-option", "max_retries=0",
            "--dataset", str(synthetic_build), "--out", str(run), "--sample", "8", "--stratify", "shift_category",
            "--sample-seed", "5"]
    assert cli.main(args) == 0
    assert server.requests == 3 * 8                                 # undated + two dated prompts per sampled pair
    info = json.loads((run / "chronoculture.json").read_text())
    assert info["sample"]["by_stratum"] == {c: {"available": v, "share": 2, "selected": 2}
                                            for c, v in _categories(benchmark, np.arange(benchmark.n)).items()}
    assert "sample:8/shift_category/seed5" in info["signature"]
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    expected, _ = sample_pairs(benchmark, 8, "shift_category", seed=5)
    assert sorted({r["pair_id"] for r in rows}) == sorted(benchmark.pair_id[expected].tolist())
    assert "8 pairs analysed, retention 100%" in capsys.readouterr().out

    report = tmp_path / "report"
    assert cli.main(["report", "chronoculture", str(run), "--out", str(report), "--resamples", "50"]) == 0
    results = json.loads((report / "chronoculture_results.json").read_text())
    label = info["label"]
    assert results["runs"][label]["retention"] == 1.0 and results["runs"][label]["counts"]["analysed"] == 8
    # histbench.evaluate's numbers (and the report site's headline) are the report's: no filter on a sample
    from histbench.eval.chronoculture import EVALUATOR

    evaluated = EVALUATOR.results(run)
    assert any("knowledge-filter retention 100%" in note for note in evaluated.info["viewer"]["notes"])
    assert evaluated.metrics["counts.analysed"]["estimate"] == 8
    assert evaluated.metrics["rf1.default.tau0.10.all.both"]["n"] == 8
    items = (report / "viewer" / "run" / "items.jsonl").read_text().splitlines()
    assert len(items) == 3 * 8 and "(Wilson 95%, n=8)" in (report / "index.html").read_text()
    assert cli.main(["report", "chronoculture", str(run), "--out", str(report), "--resamples", "0",
                     "--retention", "0.5"]) == 0
    results = json.loads((report / "chronoculture_results.json").read_text())
    assert results["runs"][label]["retention"] == 0.5


def test_stratify_needs_sample(synthetic_build, tmp_path, capsys):
    args = ["eval", "chronoculture", "--baseline", "uniform", "--dataset", str(synthetic_build), "--out",
            str(tmp_path / "r"), "--stratify", "shift_category"]
    assert cli.main(args) == 2
    assert "--stratify needs --sample" in capsys.readouterr().err


def test_limit_is_the_first_pairs_and_excludes_sample(benchmark):
    """`--limit N`, the quick look every evaluator has: the first N pairs in build order."""
    from histbench.core.errors import UsageError
    from histbench.eval.chronoculture.run import choose_pairs, sample_tag

    rows, info = choose_pairs(benchmark, None, None, 0, limit=5)
    assert rows.tolist() == [0, 1, 2, 3, 4] and info["method"] == "first" and sample_tag(info) == "first5"
    rows, info = choose_pairs(benchmark, None, None, 0, limit=benchmark.n + 10)
    assert rows.size == benchmark.n
    with pytest.raises(UsageError, match="not both"):
        choose_pairs(benchmark, 4, "shift_category", 0, limit=5)
    assert choose_pairs(benchmark, None, None, 0) == (None, None)
