"""`histbench demo` / `make demo`: every benchmark, end to end, on its bundled sample.

For each registered benchmark: build from `sources/<name>/sample/`, validate the
folder, load every config back with `datasets.load_dataset(folder, config)` and check
it equals the parquet that was written, run the benchmark's reference baselines (its
evaluator's `demo`), and write `build/report/index.md` and `index.html`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from histbench.core.errors import BuildError, UsageError
from histbench.core.progress import log

SAMPLE_ROW_CHARS = 160
SAMPLE_LIST_ITEMS = 8


def _short_text(value) -> str:
    text = str(value).replace("\n", " ")
    return text[:SAMPLE_ROW_CHARS] + "..." if len(text) > SAMPLE_ROW_CHARS else text


def _readable(value) -> str:
    """One table cell for a field of a sample row: lists numbered, mappings as key: value,
    long texts shortened."""
    if value is None:
        return "(none)"
    if isinstance(value, str) and value.startswith(("{", "[")):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_short_text(_readable(v))}" for k, v in value.items()) or "(empty)"
    if isinstance(value, list):
        shown = [f"({k + 1}) {_short_text(_readable(v))}" for k, v in enumerate(value[:SAMPLE_LIST_ITEMS])]
        if len(value) > SAMPLE_LIST_ITEMS:
            shown.append(f"... {len(value) - SAMPLE_LIST_ITEMS} more")
        return " ".join(shown) or "(empty)"
    return _short_text(value)


def sample_row_table(row: dict) -> str:
    """A sample row as a two-column table (field, value), readable at a glance."""
    from histbench.core.markdown import markdown_table

    return markdown_table([{"field": f"`{k}`", "value": _readable(v)} for k, v in row.items()], ["field", "value"], "ll")


def check_reload(folder: Path) -> dict[str, dict[str, int]]:
    """Load every config with datasets.load_dataset and compare with the written parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from histbench.core.dataset import load_build_config

    manifest = json.loads((folder / "histbench.json").read_text(encoding="utf-8"))
    loaded_counts: dict[str, dict[str, int]] = {}
    for config, splits in manifest["rows"].items():
        loaded = load_build_config(folder, config, data_sha256=manifest["data_sha256"], label_names=False)
        if set(loaded) != set(splits):
            raise BuildError(f"load_dataset gave splits {sorted(loaded)} for config {config!r}, expected {sorted(splits)}", file=folder)
        loaded_counts[config] = {}
        for split in splits:
            paths = sorted(folder / o["path"] for o in manifest["outputs"] if o["config"] == config and o["split"] == split)
            written = pa.concat_tables([pq.read_table(p) for p in paths])
            if loaded[split].to_list() != written.to_pylist():
                raise BuildError(f"config {config}/{split} loads back differently from what was written", file=folder)
            loaded_counts[config][split] = loaded[split].num_rows
    return loaded_counts


def _build_section(builder, folder: Path) -> tuple[str, dict]:
    from histbench.core.dataset import load_build_config
    from histbench.core.markdown import markdown_table

    manifest = json.loads((folder / "histbench.json").read_text(encoding="utf-8"))
    rows = [
        {"config": config, "split": split, "rows": count}
        for config, splits in manifest["rows"].items() for split, count in splits.items()
    ]
    first_config = next(iter(manifest["rows"]))
    first_split = next(iter(manifest["rows"][first_config]))
    sample = load_build_config(folder, first_config, first_split, manifest["data_sha256"])
    lines = [
        f"Built from the bundled sample sources into `{folder.name}` "
        f"(data sha256 `{manifest['data_sha256'][:16]}`); validated, and every config loaded back "
        "with `datasets.load_dataset` equals what was written.",
        "",
        markdown_table(rows, ["config", "split", "rows"], "llr"),
        "",
    ]
    summary_md = _card_summary(folder)
    if summary_md:
        lines += ["### Build summary", "", summary_md, ""]
    if sample.num_rows:
        lines += [f"### A sample row ({first_config}/{first_split}, row 0)", "", sample_row_table(sample[0]), ""]
    return "\n".join(lines), {"rows": manifest["rows"], "summary": manifest.get("summary", {})}


def _card_summary(folder: Path) -> str:
    """The builder's own human-readable summary (stored between markers in the card)."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- summary -->", "<!-- /summary -->"
    if start in text and end in text:
        return text.split(start, 1)[1].split(end, 1)[0].strip()
    return ""


def run_demo(out_root: Path = Path("build"), only: list[str] | None = None) -> Path:
    # Everything the demo touches is local; never wait for the Hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    from histbench.builders.machinery.build import discover_builders
    from histbench.core.progress import quiet_datasets
    from histbench.eval.demo_model import shared_demo_models
    from histbench.eval.plugin import discover_evaluators
    from histbench.eval.report import staged_report

    quiet_datasets()
    builders = discover_builders()
    if only:
        unknown = sorted(set(only) - set(builders))
        if unknown:
            from histbench.core.suggest import did_you_mean

            hints = "".join(did_you_mean(name, builders) for name in unknown)
            raise UsageError(f"unknown benchmark(s) {', '.join(unknown)}{hints} (known: {', '.join(sorted(builders))})")
        builders = {name: builders[name] for name in only}
    if not builders:
        raise BuildError("no benchmark is registered: nothing to demonstrate")
    evaluators = discover_evaluators(builders)
    work_root = Path(out_root) / "demo-runs"
    # the whole site is staged and replaces build/report only when complete (eval/report.py)
    # one demo model for every benchmark that scores it, loaded once (eval/demo_model.py)
    with staged_report(Path(out_root) / "report") as report_dir, shared_demo_models():
        index = _demo_site(builders, evaluators, report_dir, work_root)
    log(f"report: {index.with_suffix('.html')} (one page per benchmark beside it; every run's items under viewer/)")
    return index


def _demo_site(builders, evaluators, report_dir: Path, work_root: Path) -> Path:
    from histbench.builders.machinery.build import run_build
    from histbench.builders.machinery.validate import validate_build
    from histbench.core.progress import Steps
    from histbench.eval.report import ReportSection, SitePage, compared_runs, site_runs, write_site

    out_root = work_root.parent
    pages: list[SitePage] = []
    steps = Steps()
    for name, builder in builders.items():
        with steps(f"{name}: building the bundled sample, validating it and loading it back"):
            sample = builder.manifest().sample_paths()
            folder = run_build(builder, sample, options=builder.demo_options(), out_root=out_root)
            validate_build(folder)
            check_reload(folder)
            body, data = _build_section(builder, folder)
        sections = [ReportSection("The build", body, data=data)]
        runs = []
        evaluator = evaluators.get(name)
        if evaluator is not None:
            from histbench.core.dataset import BuiltDataset

            (report_dir / name).mkdir(parents=True, exist_ok=True)
            with steps(f"{name}: scoring the reference runs and the demo model, and writing its report page"):
                scored = evaluator.demo(BuiltDataset.open(folder), work_root / name, report_dir / name)
            if scored is not None:
                # results first (issue 43): the build, its audits and a sample row after them
                sections.insert(0, scored)
                with steps(f"{name}: the run format's files (run.json, results.json, items.jsonl) of each run"):
                    for run_dir in scored.runs:
                        evaluator.finish_run(run_dir)
                with steps(f"{name}: a per-item viewer for each of {len(scored.runs)} run(s)"):
                    runs = site_runs(evaluator, scored.runs, report_dir, Path("viewer") / name)
                with steps(f"{name}: the leaderboard and the runs side by side"):
                    sections[:0] = compared_runs(evaluator, scored.runs, report_dir, Path("compare") / name)
        pages.append(SitePage(name, f"{builder.title} ({name} {builder.version})", sections, built=_built_line(folder),
                              runs=runs))
    intro = (
        "Every benchmark below was built from the small synthetic or illustrative samples bundled in "
        "`sources/<benchmark>/sample/`, not from the licensed releases: the numbers show that the whole "
        "pipeline runs and what each table looks like, not the published results."
    )
    with steps("writing the report site"):
        return write_site(pages, report_dir, "histbench demo report", intro)


def _built_line(folder: Path) -> str:
    """What was built, for the site's index card: configs and rows."""
    manifest = json.loads((folder / "histbench.json").read_text(encoding="utf-8"))
    rows = {config: sum(splits.values()) for config, splits in manifest["rows"].items()}
    return (f"Built `{folder.name}` from the bundled sample: {sum(rows.values()):,} rows in {len(rows)} configs ("
            + ", ".join(f"{config} {count:,}" for config, count in rows.items()) + ").")
