"""`histbench demo` on the toy benchmark: build, validate, reload, report."""

from __future__ import annotations

import pytest

from histbench import demo
from histbench.builders.machinery import build as build_module
from histbench.core import resources as resources_module
from histbench.core.errors import EvalError
from histbench.eval import plugin
from histbench.eval.report import ReportSection


class ToyEvaluator(plugin.BenchmarkEvaluator):
    name = "toy"

    def demo(self, built, work_dir, report_dir):
        rows = built.load("pairs", "test")
        share = sum(not same for same in rows["same"]) / rows.num_rows
        return ReportSection("scores", f"Always-'different' baseline accuracy: {share:.3f}", data={"always_different": share})


@pytest.fixture
def toy_demo(monkeypatch, toy_builder, toy_resources):
    monkeypatch.setattr(build_module, "discover_builders", lambda: {"toy": toy_builder})
    monkeypatch.setattr(resources_module.Resources, "default", classmethod(lambda cls: toy_resources))
    monkeypatch.setattr(plugin, "discover_evaluators", lambda names: {"toy": ToyEvaluator()})


def test_demo_writes_report(toy_demo, tmp_path):
    index = demo.run_demo(out_root=tmp_path / "build")
    text = index.read_text()
    assert "## Toy benchmark (toy 1.0.0)" in text
    assert "| items | dev | 6 |" in text
    assert "12 lines read." in text
    assert "Always-'different' baseline accuracy: 1.000" in text
    assert "| `item_id` | i0 |" in text   # the sample row as a field / value table, not a JSON dump
    html = (index.parent / "index.html").read_text()
    assert 'class="card"' in html and 'href="toy.html"' in html and "Toy benchmark" in html   # the index: a card
    page = (index.parent / "toy.html").read_text()
    assert "<table>" in page and "baseline accuracy: 1.000" in page   # the page: the tables
    assert (index.parent / "report.json").is_file()
    # a shared site names no local folder (issue 28): the build by its name, not its absolute path
    assert "Built from the bundled sample sources into `toy-1.0.0`" in text
    for path in index.parent.rglob("*"):
        if path.is_file():
            assert str(tmp_path) not in path.read_text(encoding="utf-8"), path.name


def test_reload_check_detects_a_mismatch(toy_builder, toy_sample, toy_resources, tmp_path):
    folder = build_module.run_build(toy_builder, {"text": [toy_sample]}, out_root=tmp_path / "b", resources=toy_resources)
    assert demo.check_reload(folder) == {"items": {"dev": 6, "test": 6}, "pairs": {"dev": 5, "test": 6}}
    card = folder / "README.md"
    # A card whose configs block points both splits at the same files would load different rows:
    # the build's verification (issue 39) refuses it before anything is loaded
    card.write_text(card.read_text().replace("path: data/items/test-*.parquet", "path: data/items/dev-*.parquet"))
    with pytest.raises(EvalError, match="card's data_files of items/test .* not the files histbench.json lists"):
        demo.check_reload(folder)


def test_demo_unknown_benchmark(toy_demo, tmp_path):
    from histbench.core.errors import UsageError

    with pytest.raises(UsageError, match="unknown benchmark"):
        demo.run_demo(out_root=tmp_path, only=["nope"])


def test_the_page_leads_with_results_then_the_build_summary_then_the_sample_row(toy_demo, tmp_path):
    """Issue 43: a benchmark's page opens with its results; the build, its summary (where the
    shortcut audits are) and the sample row come after them."""
    index = demo.run_demo(out_root=tmp_path / "build")
    page = (index.parent / "toy.html").read_text()
    results = page.index("baseline accuracy: 1.000")
    build = page.index("Built from the bundled sample sources")
    summary = page.index("12 lines read.")
    sample = page.index("i0")
    assert results < build < summary and build < sample, (results, build, summary, sample)
    markdown = index.read_text()
    assert markdown.index("Always-'different'") < markdown.index("### A sample row")


def test_the_demo_model_is_loaded_once_for_every_benchmark(monkeypatch):
    """Issue 44: ChronoCulture, Chronologic and Italian each loaded SmolLM2 again; within
    `shared_demo_models()` (what `histbench demo` runs in) a spec and options load once,
    every benchmark scores with that backend, and it is closed at the end. Outside it each
    call loads and closes its own."""
    from histbench.core import backends
    from histbench.eval import demo_model

    loaded = []

    class Backend:
        closed = False

        def close(self):
            self.closed = True

    def load(spec, options):
        loaded.append((spec, options))
        return Backend()

    monkeypatch.setattr(backends, "load_backend", load)
    seen = []
    with demo_model.shared_demo_models():
        for benchmark in ("chronoculture", "chronologic", "italian"):
            assert demo_model.score_with_demo_model(benchmark, "label", "offline:smollm2", {"dtype": "float32"},
                                                    seen.append) == ""
        demo_model.score_with_demo_model("italian", "label", "offline:smollm2", {"dtype": "bfloat16"}, seen.append)
        assert len(loaded) == 2 and seen[0] is seen[1] is seen[2] and seen[3] is not seen[0]
        assert not any(b.closed for b in seen)
    assert all(b.closed for b in seen)
    demo_model.score_with_demo_model("italian", "label", "offline:smollm2", {"dtype": "float32"}, seen.append)
    assert len(loaded) == 3 and seen[4].closed and seen[4] is not seen[0]


def test_every_benchmark_asks_for_the_demo_model_with_the_same_options():
    """One SmolLM2 serves the three benchmarks only when they ask with the same options."""
    from histbench.eval import demo_model
    from histbench.eval.chronoculture import reporting_cli
    from histbench.eval.italian import report

    assert reporting_cli.DEMO_MODEL_OPTIONS is report.DEMO_MODEL_OPTIONS is demo_model.DEMO_MODEL_OPTIONS
    assert demo_model.DEMO_MODEL_OPTIONS == {"dtype": "float32", "token_budget": 256}
