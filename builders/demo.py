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

from histbench.builders.core.errors import BuildError, UsageError
from histbench.builders.core.progress import log

SAMPLE_ROW_CHARS = 160


def _shorten(value):
    if isinstance(value, str) and len(value) > SAMPLE_ROW_CHARS:
        return value[:SAMPLE_ROW_CHARS] + "..."
    if isinstance(value, list):
        shown = [_shorten(v) for v in value[:8]]
        return shown + [f"... ({len(value) - 8} more)"] if len(value) > 8 else shown
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    return value


def check_reload(folder: Path) -> dict[str, dict[str, int]]:
    """Load every config with datasets.load_dataset and compare with the written parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from histbench.builders.core.dataset import load_build_config

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
    from histbench.builders.core.dataset import load_build_config
    from histbench.eval.report import markdown_table

    manifest = json.loads((folder / "histbench.json").read_text(encoding="utf-8"))
    rows = [
        {"config": config, "split": split, "rows": count}
        for config, splits in manifest["rows"].items() for split, count in splits.items()
    ]
    first_config = next(iter(manifest["rows"]))
    first_split = next(iter(manifest["rows"][first_config]))
    sample = load_build_config(folder, first_config, first_split, manifest["data_sha256"])
    lines = [
        f"Built from the bundled sample sources into `{folder}` "
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
        row = _shorten(sample[0])
        lines += [
            f"### A sample row ({first_config}/{first_split}, row 0)",
            "",
            "```json",
            json.dumps(row, indent=2, ensure_ascii=False, default=str),
            "```",
            "",
        ]
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

    from histbench.builders.core.build import discover_builders, run_build
    from histbench.builders.core.progress import quiet_datasets
    from histbench.builders.core.validate import validate_build
    from histbench.eval.plugin import discover_evaluators
    from histbench.eval.report import ReportSection, write_report

    quiet_datasets()
    builders = discover_builders()
    if only:
        unknown = sorted(set(only) - set(builders))
        if unknown:
            raise UsageError(f"unknown benchmark(s) {', '.join(unknown)} (known: {', '.join(sorted(builders))})")
        builders = {name: builders[name] for name in only}
    if not builders:
        raise BuildError("no benchmark is registered: nothing to demonstrate")
    evaluators = discover_evaluators(builders)
    report_dir = Path(out_root) / "report"
    work_root = Path(out_root) / "demo-runs"
    sections: list[ReportSection] = []
    for name, builder in builders.items():
        log(f"== {name}: building the bundled sample")
        sample = builder.manifest().sample_paths()
        folder = run_build(builder, sample, options=builder.demo_options(), out_root=out_root)
        validate_build(folder)
        check_reload(folder)
        body, data = _build_section(builder, folder)
        figures: list[Path] = []
        evaluator = evaluators.get(name)
        if evaluator is not None:
            from histbench.builders.core.dataset import BuiltDataset

            log(f"== {name}: reference baselines")
            (report_dir / name).mkdir(parents=True, exist_ok=True)
            scored = evaluator.demo(BuiltDataset.open(folder), work_root / name, report_dir / name)
            if scored is not None:
                body += "\n" + scored.markdown.strip() + "\n"
                figures += scored.figures
                data["scores"] = scored.data
        sections.append(ReportSection(f"{builder.title} ({name} {builder.version})", body, figures, data))
    intro = (
        "Every benchmark below was built from the small synthetic or illustrative samples bundled in "
        "`sources/<benchmark>/sample/`, not from the licensed releases: the numbers show that the whole "
        "pipeline runs and what each table looks like, not the published results."
    )
    index = write_report(sections, report_dir, "histbench demo report", intro)
    log(f"report: {index} and {index.with_suffix('.html')}")
    return index
