"""The report command and the demo: load runs, analyse, write Markdown, HTML, JSON and figures."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from histbench.builders.core.errors import EvalError, UsageError
from histbench.builders.core.progress import log

from .data import Benchmark, load_benchmark, load_predictions, read_run

TITLE = "ChronoCulture: cultural change over time in model predictions"


def _open_dataset(args: argparse.Namespace, runs: list[Path]):
    from histbench.builders.core.dataset import BuiltDataset

    infos = []
    for run in runs:
        info, _ = read_run(run)
        infos.append(info)
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


def write(bench: Benchmark, runs, out: Path, *, retention: float, resamples: int, seed: int, references: bool,
          intro: str = "") -> Path:
    from histbench.eval.report import ReportSection, write_report

    from .reporting import build_parts, prepare

    entries = prepare(bench, runs, retention=retention, resamples=resamples, seed=seed, references=references)
    parts = build_parts(bench, entries, out / "figures", link_prefix="figures/", h="###")
    sections = [ReportSection(p.title, p.markdown, p.figures, p.data) for p in parts]
    sections.append(ReportSection("All numbers", "Every cell of every run (estimate, interval, pairs) is in "
                                  "`report.json` and `chronoculture_results.json`.",
                                  data={"settings": {"retention": retention, "resamples": resamples, "seed": seed}}))
    index = write_report(sections, out, TITLE, intro)
    results = {"dataset": bench.identity, "settings": {"retention": retention, "resamples": resamples, "seed": seed},
               "runs": {e.label: {**e.analysis.to_json(),
                                  "references": {n: r.to_json() for n, r in e.references.items()},
                                  "repeats": [c for _, c in e.repeats]} for e in entries}}
    from histbench.builders.core.schema import to_native

    (out / "chronoculture_results.json").write_text(
        json.dumps(to_native(results), indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return index


def run_report(args: argparse.Namespace) -> None:
    if not 0 < args.retention <= 1:
        raise UsageError("--retention must be in (0, 1]", field="--retention")
    if args.resamples < 0:
        raise UsageError("--resamples must be >= 0", field="--resamples")
    runs = [Path(r) for r in args.runs]
    built = _open_dataset(args, runs)
    bench = load_benchmark(built)
    predictions = [load_predictions(bench, run) for run in runs]
    intro = (f"Dataset: `{built.path}` (ChronoCulture {built.version}, data sha256 "
             f"`{(built.identity().get('data_sha256') or '')[:16]}`). Runs: "
             + ", ".join(f"`{p.label}` ({r})" for p, r in zip(predictions, runs, strict=True)) + ".")
    index = write(bench, predictions, Path(args.out), retention=args.retention, resamples=args.resamples,
                  seed=args.seed, references=not args.no_references, intro=intro)
    log(f"report: {index} and {index.with_suffix('.html')}")
    print(index)


DEMO_INTRO = """\
Reference runs that need no model, scored on the sample build with the full ChronoCulture
analysis (every table and figure of the report; bootstrap 95% intervals over temporal
pairs, 1,000 resamples). They are analysed on all pairs (no knowledge filter, which
needs a model's undated answers):

- `uniform`: equal shares for every option, for every prompt (the uniform reference of C.1);
- `frozen oldest gold` and `frozen newest gold`: oracles that repeat one survey year's
  gold distribution for every prompt. They are not models: they show what a perfectly
  informed but time-blind predictor scores (both periods accurate only while the human
  shift stays under the tolerance, every shifted pair aligned with one year, zero model
  shift); in the modal-answer format (Table 5) they answer that distribution's mode.

The static reference of C.1 (a model's undated answer used for both years) needs a model
run: `histbench report chronoculture RUN...` adds it, with the uniform reference on the
model's own retained pairs, under every model. The sample is synthetic, so these numbers
show the pipeline, not the paper's results."""


def demo(built, work_dir: Path, report_dir: Path):
    from histbench.eval.report import ReportSection

    from .reporting import build_parts, prepare
    from .run import BASELINES, run_baseline

    bench = load_benchmark(built)
    runs = []
    for name in BASELINES:
        run_dir = work_dir / name
        run_baseline(built, bench, name, run_dir)
        runs.append(load_predictions(bench, run_dir))
    entries = prepare(bench, runs, resamples=1000, seed=0)
    parts = build_parts(bench, entries, report_dir, link_prefix=f"{report_dir.name}/", h="####")
    markdown = "\n\n".join([DEMO_INTRO, *[f"### {p.title}\n\n{p.markdown}" for p in parts]])
    figures = [f for p in parts for f in p.figures]
    data = {p.title: p.data for p in parts}
    return ReportSection("ChronoCulture reference runs", markdown, figures, data)
