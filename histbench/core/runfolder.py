"""The run folder: one format for what every benchmark's evaluation writes.

Every run folder, whatever the benchmark, holds

    run.json        what ran: run_format, benchmark, label, model spec or baseline, the
                    build (benchmark, version, data_sha256, where it was read), options,
                    versions (histbench, its commit, Python, the libraries that score),
                    started and finished, and `extras`: the benchmark's own further files,
                    each with what it holds. A model run's run store (histbench.core.runstore)
                    keeps its own keys in the same file (backend, sessions, answered, ...).
    results.json    run_format, benchmark, label, the signature as one string, and every
                    metric in one shape: {id, metric, estimate, interval, method, n, unit,
                    higher_is_better, headline, system, config, note}
    items.jsonl     one line per scored item with the same core keys for every benchmark:
                    id, config, group, system, messages or prompt, options, response,
                    parsed, parse_error, gold, score, outcome (and, where the benchmark has
                    them, score_label, details, ...)
    records.jsonl   model runs: the run store, every raw answer (see histbench.core.runstore)

and whatever `extras` names. The shapes are JSON Schemas shipped with the package:
schemas/runfolder-run.json, runfolder-results.json, runfolder-items.json (one line),
runfolder-records.json (one line). Every write is validated before anything is replaced,
and each file is replaced atomically (results.json and items.jsonl first, run.json last:
a folder whose run.json says run_format has its other two files).

Decisions:
- A benchmark converts what its evaluation wrote into this format in one function,
  `BenchmarkEvaluator.summarise_run(run_dir) -> RunSummary`; everything that reads runs
  (the report, the viewer, `histbench.results`) reads only this format (`RunFolder`).
- A folder written before this format (no run_format in run.json) is refused by readers
  with the command that converts it in place (`histbench convert-run RUN`), which adds the
  three files and changes nothing else a run wrote.
- An interval is [low, high] with the method that made it named beside it. A zero-width
  interval is only written with a note saying why (every resample gave the same value):
  `write_run_folder` refuses one without a note, so no report shows certainty it lacks.
- Values that are not finite numbers are written as null (JSON has no NaN).
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from histbench.core.atomic import write_text_atomic
from histbench.core.errors import EvalError
from histbench.core.readers import iter_jsonl_objects, read_json_object, read_text_utf8
from histbench.core.secrets import scrub_text

RUN_FORMAT = 1
RUN_FILE = "run.json"
RESULTS_FILE = "results.json"
ITEMS_FILE = "items.jsonl"
RECORDS_FILE = "records.jsonl"
CANONICAL_FILES = (RUN_FILE, RESULTS_FILE, ITEMS_FILE)

#: keys every line of items.jsonl has (null where the benchmark has no such thing)
ITEM_CORE_KEYS = ("id", "config", "group", "system", "messages", "prompt", "options", "response", "parsed",
                  "parse_error", "gold", "score", "outcome")
#: further keys an item may have
ITEM_OTHER_KEYS = ("score_label", "score_text", "prompt_label", "details", "kind")
#: Python packages whose versions run.json records when installed (they change scores)
SCORING_PACKAGES = ("datasets", "numpy", "scipy", "torch", "transformers", "vllm", "sentence-transformers",
                    "llama-cpp-python", "scikit-learn")

SCHEMA_FILES = {"run": "runfolder-run.json", "results": "runfolder-results.json",
                "item": "runfolder-items.json", "record": "runfolder-records.json"}


@dataclass
class Metric:
    """One number of a run, as results.json holds it.

    id: unique within the run (e.g. "wsd/accuracy", "exact/name_only/accuracy"); metric:
    the name the paper gives it; estimate: the number (None when undefined, e.g. no item);
    interval: (low, high) or None; method: how the interval was made ("Wilson 95%",
    "percentile bootstrap 95%, 1,000 resamples"), required with an interval; n: the items
    (or units the interval resamples) it rests on; unit: "proportion" (0-1), "percent",
    "points" (a score of its own scale), "count"; headline: shown on the site's index card;
    system/config: which system of a multi-system run and which config it belongs to;
    note: what a reader must know; constant: every resample gave the same value (so a
    zero-width interval is exact, not a lack of resamples); published: the paper's table
    cell this metric reproduces, {table: number, column, row (or None)}, as in
    sources/<benchmark>/published/tableN.yaml (the leaderboard shows the paper's values).
    """

    id: str
    metric: str
    estimate: float | None
    unit: str
    interval: tuple[float, float] | None = None
    method: str | None = None
    n: int | None = None
    higher_is_better: bool | None = None
    headline: bool = False
    system: str | None = None
    config: str | None = None
    label: str | None = None
    note: str | None = None
    constant: bool | None = None
    published: Mapping[str, Any] | None = None

    def to_json(self) -> dict:
        out = asdict(self)
        out["published"] = dict(self.published) if self.published else None
        out["estimate"] = _finite(self.estimate)
        out["interval"] = None if self.interval is None else [_finite(v) for v in self.interval]
        if out["interval"] is not None and None in out["interval"]:
            out["interval"] = None
        return out


@dataclass
class RunSummary:
    """What a benchmark's `summarise_run` gives for one run folder: everything the three
    files hold. items: dicts with ITEM_CORE_KEYS (missing ones become null); labels,
    aliases, notes, option_columns: how the viewer shows facets and options (see
    histbench.eval.viewer.ViewerRun); extras: {file name in the folder: what it holds}."""

    benchmark: str
    label: str
    dataset: Mapping[str, Any] | None
    metrics: list[Metric]
    items: list[dict]
    model: str | None = None
    baseline: str | None = None
    signature: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    aliases: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)
    notes: Sequence[str] = ()
    option_columns: Sequence[Sequence[str]] | None = None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json_value(value: Any) -> Any:
    """Plain JSON values: numpy scalars and arrays as Python values, non-finite floats as null."""
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, str | bytes):
        return to_json_value(value.item())
    if hasattr(value, "tolist") and callable(value.tolist):
        return to_json_value(value.tolist())
    return value


@cache
def schema(kind: str) -> dict:
    """The JSON Schema of one run-folder file (kind: run, results, item, record)."""
    from histbench.core.resources import Resources

    return json.loads((Resources.default().schemas / SCHEMA_FILES[kind]).read_text(encoding="utf-8"))


@cache
def _validator(kind: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(kind))


def validate(kind: str, value: Any, where: str | Path, row: Any = None) -> None:
    """An EvalError naming the file, row and field where `value` breaks the schema of `kind`."""
    error = next(iter(sorted(_validator(kind).iter_errors(value), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or None
        raise EvalError(f"does not match the run-folder schema {SCHEMA_FILES[kind]}: {error.message[:300]}",
                        file=where, row=row, field=path)


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in SCORING_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _item(item: Mapping, where: Path) -> dict:
    unknown = set(item) - set(ITEM_CORE_KEYS) - set(ITEM_OTHER_KEYS)
    if unknown:
        raise EvalError(f"an item has key(s) the run format does not know: {', '.join(sorted(unknown))}",
                        file=where, row=item.get("id"))
    out = {key: item.get(key) for key in ITEM_CORE_KEYS}
    out.update({key: item[key] for key in ITEM_OTHER_KEYS if key in item})
    return to_json_value(out)


def _check_metrics(metrics: Sequence[Metric], where: Path) -> None:
    seen: set[str] = set()
    for metric in metrics:
        if metric.id in seen:
            raise EvalError("two metrics share one id", file=where, row=metric.id)
        seen.add(metric.id)
        if metric.interval is not None and not metric.method:
            raise EvalError("an interval without the method that made it", file=where, row=metric.id)
        if (metric.interval is not None and metric.interval[0] == metric.interval[1]
                and metric.constant is None and not metric.note):
            raise EvalError("a zero-width interval that says neither whether every resample was identical "
                            "(constant) nor why (note)", file=where, row=metric.id)


def write_run_folder(run_dir: Path, summary: RunSummary, *, started: str | None = None) -> None:
    """Write (or rewrite) results.json, items.jsonl and run.json of `run_dir` from `summary`,
    each validated against its schema before any file is replaced. Keys of an existing
    run.json that this format does not set (the run store's) are kept."""
    run_dir = Path(run_dir)
    _check_metrics(summary.metrics, run_dir / RESULTS_FILE)
    items = [_item(item, run_dir / ITEMS_FILE) for item in summary.items]
    for item in items:
        validate("item", item, run_dir / ITEMS_FILE, row=item.get("id"))
    results = {"run_format": RUN_FORMAT, "benchmark": summary.benchmark, "label": summary.label,
               "signature": summary.signature, "metrics": [m.to_json() for m in summary.metrics]}
    validate("results", results, run_dir / RESULTS_FILE)
    existing = read_json_object(run_dir / RUN_FILE, error=EvalError) if (run_dir / RUN_FILE).is_file() else {}
    from histbench.core.version import histbench_commit, histbench_version

    missing = [name for name in summary.extras if not (run_dir / name).exists()]
    if missing:
        raise EvalError(f"run.json would name extra file(s) the folder lacks: {', '.join(missing)}", file=run_dir)
    now = utc_now()
    run = {
        **existing,
        "run_format": RUN_FORMAT,
        "benchmark": summary.benchmark,
        "label": summary.label,
        "model": summary.model,
        "baseline": summary.baseline,
        "build": to_json_value(dict(summary.dataset)) if summary.dataset else None,
        "options": to_json_value(existing.get("options") or dict(summary.options)),
        "versions": {"histbench": histbench_version(), "commit": histbench_commit(),
                     "python": platform.python_version(), **package_versions()},
        "started": existing.get("started") or started or now,
        "finished": now,
        "files": {"results": RESULTS_FILE, "items": ITEMS_FILE,
                  "records": RECORDS_FILE if (run_dir / RECORDS_FILE).is_file() else None,
                  "extras": dict(summary.extras)},
        "viewer": to_json_value({"labels": summary.labels, "aliases": summary.aliases, "notes": list(summary.notes),
                                 "option_columns": summary.option_columns}),
    }
    validate("run", run, run_dir / RUN_FILE)
    run_dir.mkdir(parents=True, exist_ok=True)
    dumps = lambda v: json.dumps(v, ensure_ascii=False, allow_nan=False)  # noqa: E731
    write_text_atomic(run_dir / ITEMS_FILE, scrub_text("".join(dumps(item) + "\n" for item in items)))
    write_text_atomic(run_dir / RESULTS_FILE, scrub_text(json.dumps(results, indent=2, ensure_ascii=False,
                                                                     allow_nan=False) + "\n"))
    write_text_atomic(run_dir / RUN_FILE, scrub_text(json.dumps(run, indent=2, ensure_ascii=False,
                                                                 allow_nan=False) + "\n"))


class OldRunFolder(EvalError):
    """A run folder written before the run format (or by a newer histbench)."""


def convert_hint(run_dir: Path) -> str:
    return f"convert it in place with `histbench convert-run {run_dir}` (it adds run.json, results.json and items.jsonl)"


def is_run_folder(run_dir: Path) -> bool:
    """Whether `run_dir` holds a run.json of this format (any benchmark)."""
    return read_run_manifest(run_dir) is not None


def read_run_manifest(run_dir: Path) -> dict | None:
    """The run.json of a folder in the run format (unchecked), or None when it has none."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        return None
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return run if isinstance(run, dict) and "run_format" in run else None


#: the sha256 digests of items.jsonl texts this process has checked against the item schema
#: (insertion-ordered; the oldest forgotten beyond 64)
_CHECKED_ITEMS: dict[bytes, None] = {}


@dataclass
class RunFolder:
    """A run folder read back: run (run.json), results (results.json), items (items.jsonl)."""

    path: Path
    run: dict
    results: dict
    items: list[dict]

    @property
    def benchmark(self) -> str:
        return self.run["benchmark"]

    @property
    def label(self) -> str:
        return self.run["label"]

    @property
    def metrics(self) -> list[dict]:
        return self.results["metrics"]

    @property
    def system_labels(self) -> dict[str, str]:
        """{system: how the run names it} (the viewer's labels of the system facet)."""
        return (self.run.get("viewer") or {}).get("labels", {}).get("system", {})

    def extra(self, name: str) -> Path:
        """The path of an extra file run.json names (a name it does not list is an error)."""
        from histbench.core.paths import inside

        extras = self.run.get("files", {}).get("extras", {})
        if name not in extras:
            raise EvalError(f"the run folder has no extra file {name!r} (it has: {', '.join(extras) or 'none'})",
                            file=self.path)
        return inside(self.path, name, error=EvalError, what="extra file")

    @classmethod
    def open(cls, run_dir: Path, benchmark: str | None = None) -> RunFolder:
        """Read and check a run folder; an older folder is refused with the command that converts it."""
        run_dir = Path(run_dir)
        if not run_dir.is_dir():
            raise EvalError("no such run folder", file=run_dir)
        run = read_run_manifest(run_dir)
        if run is None:
            raise OldRunFolder(f"not a run folder of this histbench (no run.json with run_format {RUN_FORMAT}); if an "
                               f"earlier histbench wrote it, {convert_hint(run_dir)}", file=run_dir)
        if run.get("run_format") != RUN_FORMAT:
            raise OldRunFolder(f"run format {run.get('run_format')!r}, and this histbench reads format {RUN_FORMAT}",
                               file=run_dir / RUN_FILE)
        validate("run", run, run_dir / RUN_FILE)
        if benchmark is not None and run["benchmark"] != benchmark:
            raise EvalError(f"a run of {run['benchmark']}, not of {benchmark}", file=run_dir / RUN_FILE)
        results = read_json_object(run_dir / RESULTS_FILE, error=EvalError)
        validate("results", results, run_dir / RESULTS_FILE)
        path = run_dir / ITEMS_FILE
        text = read_text_utf8(path, error=EvalError)
        # One report opens a run several times (viewer, headlines, leaderboard, its own tables):
        # items whose very text was checked already are not checked again (about 0.15 ms an item)
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        items = []
        for number, item in iter_jsonl_objects(path, text=text, error=EvalError):
            if digest not in _CHECKED_ITEMS:
                validate("item", item, path, row=number)
            items.append(item)
        _CHECKED_ITEMS[digest] = None
        while len(_CHECKED_ITEMS) > 64:
            del _CHECKED_ITEMS[next(iter(_CHECKED_ITEMS))]
        return cls(run_dir, run, results, items)


def headline_metrics(metrics: Iterable[Mapping]) -> list[Mapping]:
    return [m for m in metrics if m.get("headline")]


#: decimals shown per unit: a proportion as a percentage with one; a score of its own scale
#: (a Brier score, a Spearman correlation, a bias) with three
DIGITS = {"proportion": 1, "percent": 1, "points": 3, "count": 0}


def format_metric(metric: Mapping, digits: int | None = None) -> str:
    """"54.2 [48.0, 60.1] (Wilson, n=200)": proportions in percent, a zero-width interval in
    words (histbench.core.markdown.format_ci); digits default by unit (DIGITS)."""
    from histbench.core.markdown import format_ci

    if digits is None:
        digits = DIGITS.get(str(metric.get("unit")), 3)

    interval = metric.get("interval") or (None, None)
    text = format_ci(metric.get("estimate"), interval[0], interval[1], digits=digits,
                     percent=metric.get("unit") == "proportion", method=metric.get("method") if metric.get("interval") else None,
                     n=metric.get("n"), constant=metric.get("constant"))
    return text or ("n/a" + (f" (n={metric['n']:,})" if metric.get("n") is not None else ""))


def finite(value: Any) -> float | None:
    """A number as a metric holds it: None for no value, NaN or an infinity (JSON has neither)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def finite_interval(low: Any, high: Any) -> tuple[float, float] | None:
    """(low, high), or None when either end is undefined (see `finite`)."""
    low, high = finite(low), finite(high)
    return None if low is None or high is None else (low, high)


def interval_metric(id: str, metric: str, estimate: Any, low: Any, high: Any, method: str | None, *, unit: str,
                    n: int | None = None, constant: bool | None = None, **more: Any) -> Metric:
    """A Metric from an estimate and interval as the benchmarks' code stores them (NaN for
    undefined): no interval when either end is undefined; a zero-width interval not known
    to be constant gets the note that 95% of the resamples gave that value."""
    estimate, interval = finite(estimate), finite_interval(low, high)
    note = more.pop("note", None)
    if interval is not None and interval[0] == interval[1] and not constant and note is None:
        note = "95% of the resamples gave this value; some differed"
    return Metric(id, metric, estimate, unit, interval, method if interval else None, n,
                  constant=True if constant else None, note=note, **more)
