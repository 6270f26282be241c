"""The built ChronoCulture dataset as arrays, and a run's predictions aligned with it.

`load_benchmark` reads the `pairs` and `undated` configs (and `mcq` when present) of a
build through `BuiltDataset.load` and lines them up by pair id: one row per temporal
pair, with its gold distributions, every available year's gold distribution (for the
knowledge filter and the default period), the shift categories of the three boundary
sets as stored by the builder, and the labels used by the breakdowns. Distributions are
padded to the longest scale (see `metrics`).

`Predictions` are a run's parsed answers on the same rows: P_old, P_new and P_undated
(NaN rows where an answer is invalid or missing), plus the modal-answer choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError
from histbench.core.readers import iter_jsonl_objects, read_json_object

from . import metrics as m

BOUNDARY_COLUMNS = {"default": "shift_category", "tighter": "shift_category_tighter", "looser": "shift_category_looser"}
PERIODS = ("old", "new", "undated")
MCQ_PERIODS = ("mcq_old", "mcq_new")


@dataclass
class ModalTable:
    """The `mcq` config lined up with the pairs (A.5)."""

    pair_index: np.ndarray          # (q,) row of the pair in Benchmark
    mcq_id: np.ndarray
    category: np.ndarray            # default shift category code
    mode_old: np.ndarray
    mode_new: np.ndarray
    letters: list[list[str]]

    @property
    def n(self) -> int:
        return int(self.pair_index.size)


@dataclass
class Benchmark:
    """Model-independent arrays of one build (see the module docstring)."""

    pair_id: np.ndarray
    survey: np.ndarray
    question_id: np.ndarray
    question_text: np.ndarray
    topic: np.ndarray
    topic_category: np.ndarray
    country: np.ndarray
    region: np.ndarray
    options: list[list[str]]
    k: np.ndarray
    positions: np.ndarray
    g_old: np.ndarray
    g_new: np.ndarray
    d_h: np.ndarray
    categories: dict[str, np.ndarray]
    year_old: np.ndarray
    year_new: np.ndarray
    years: np.ndarray                # (n, Y) ascending, -1 after the last available year
    golds: np.ndarray                # (n, Y, W)
    identity: dict = field(default_factory=dict)
    modal: ModalTable | None = None

    @property
    def n(self) -> int:
        return int(self.pair_id.size)

    @property
    def width(self) -> int:
        return int(self.positions.shape[1])

    @property
    def year_mask(self) -> np.ndarray:
        return self.years >= 0

    @property
    def n_years(self) -> np.ndarray:
        return self.year_mask.sum(axis=1)

    def index(self) -> dict[str, int]:
        return {pid: i for i, pid in enumerate(self.pair_id)}

    def filter_groups(self) -> np.ndarray:
        """Knowledge-filter groups: survey x number of available years (B.2)."""
        return np.char.add(np.char.add(self.survey.astype(str), ":"), self.n_years.astype(str))


def _category_codes(values, where: str) -> np.ndarray:
    lookup = {name: code for code, name in enumerate(m.CATEGORIES)}
    try:
        return np.array([lookup[v] for v in values], dtype=np.int8)
    except KeyError as exc:
        raise EvalError(f"unknown shift category {exc.args[0]!r} (expected one of {', '.join(m.CATEGORIES)})", file=where) from exc


def _check_distribution(row: dict, column: str, k: int, where: str, number: int) -> list[float]:
    values = row[column]
    if values is None or len(values) != k:
        raise EvalError(f"expected {k} proportions (one per option), got {values!r}", file=where, row=number, field=column)
    return list(values)


def benchmark_from_records(pairs: list[dict], undated: list[dict], mcq: list[dict] | None = None,
                           identity: dict | None = None, where: str = "chronoculture") -> Benchmark:
    """Arrays from the rows of the `pairs`, `undated` (and `mcq`) configs."""
    if not pairs:
        raise EvalError("the build has no temporal pairs", file=where)
    ids = [p["pair_id"] for p in pairs]
    if len(set(ids)) != len(ids):
        raise EvalError("pair_id values repeat in the pairs config", file=f"{where}:pairs", field="pair_id")
    index = {pid: i for i, pid in enumerate(ids)}
    n = len(pairs)
    k = np.array([len(p["option_labels"]) for p in pairs], dtype=int)
    width = int(k.max())
    values = [p.get("option_values") for p in pairs]
    positions = m.option_positions(k, width, values)
    g_old = m.pad_distributions([_check_distribution(p, "G_old", k[i], f"{where}:pairs", i) for i, p in enumerate(pairs)], width)
    g_new = m.pad_distributions([_check_distribution(p, "G_new", k[i], f"{where}:pairs", i) for i, p in enumerate(pairs)], width)

    by_pair: dict[int, dict] = {}
    for number, row in enumerate(undated):
        i = index.get(row["pair_id"])
        if i is None:
            raise EvalError(f"undated row refers to pair {row['pair_id']!r}, which is not in the pairs config",
                            file=f"{where}:undated", row=number, field="pair_id")
        if i in by_pair:
            raise EvalError(f"two undated rows for pair {row['pair_id']!r}", file=f"{where}:undated", row=number, field="pair_id")
        by_pair[i] = row
    missing = [ids[i] for i in range(n) if i not in by_pair]
    if missing:
        raise EvalError(f"{len(missing)} pair(s) have no undated row, e.g. {missing[0]!r}", file=f"{where}:undated")
    y_max = max(len(by_pair[i]["years"]) for i in range(n))
    years = np.full((n, y_max), -1, dtype=int)
    golds = np.zeros((n, y_max, width))
    for i in range(n):
        row = by_pair[i]
        found = [y["year"] for y in row["years"]]
        if found != sorted(found) or len(set(found)) != len(found):
            raise EvalError("years must be ascending and distinct", file=f"{where}:undated", row=i, field="years")
        for j, year in enumerate(row["years"]):
            years[i, j] = year["year"]
            golds[i, j, : k[i]] = _check_distribution(year, "gold", k[i], f"{where}:undated", i)

    def column(name):
        return np.array([p[name] for p in pairs], dtype=object)

    categories = {name: _category_codes(column(col), f"{where}:pairs") for name, col in BOUNDARY_COLUMNS.items()}
    bench = Benchmark(
        pair_id=np.array(ids, dtype=object), survey=column("survey"), question_id=column("question_id"),
        question_text=column("question_text"), topic=column("topic"), topic_category=column("topic_category"),
        country=column("country_name"), region=column("region"), options=[list(p["option_labels"]) for p in pairs],
        k=k, positions=positions, g_old=g_old, g_new=g_new, d_h=np.array([p["d_h"] for p in pairs], dtype=float),
        categories=categories, year_old=np.array([p["year_old"] for p in pairs]),
        year_new=np.array([p["year_new"] for p in pairs]), years=years, golds=golds, identity=dict(identity or {}),
    )
    if mcq:
        rows = []
        for number, row in enumerate(mcq):
            i = index.get(row["pair_id"])
            if i is None:
                raise EvalError(f"mcq row refers to pair {row['pair_id']!r}, which is not in the pairs config",
                                file=f"{where}:mcq", row=number, field="pair_id")
            rows.append(i)
        bench.modal = ModalTable(
            pair_index=np.array(rows, dtype=int), mcq_id=np.array([r["mcq_id"] for r in mcq], dtype=object),
            category=_category_codes([r["shift_category"] for r in mcq], f"{where}:mcq"),
            mode_old=np.array([r["mode_old"] for r in mcq], dtype=int), mode_new=np.array([r["mode_new"] for r in mcq], dtype=int),
            letters=[list(r["option_letters"]) for r in mcq],
        )
    return bench


def load_benchmark(built) -> Benchmark:
    """Arrays of a `BuiltDataset` (configs pairs, undated and, if built, mcq; split test)."""
    pairs = built.load("pairs", "test").to_list()
    undated = built.load("undated", "test").remove_columns(["messages"]).to_list()
    mcq = None
    if "mcq" in built.configs:
        mcq = built.load("mcq", "test").remove_columns(["messages_old", "messages_new"]).to_list()
    return benchmark_from_records(pairs, undated, mcq, identity=built.identity(), where=str(built.path))


# ---------------------------------------------------------------------------
# Predictions
# ---------------------------------------------------------------------------

PREDICTIONS_NAME = "predictions.jsonl"
RUN_INFO_NAME = "chronoculture.json"


@dataclass
class Predictions:
    """One run's parsed answers, aligned with a Benchmark's rows."""

    label: str
    kind: str                        # "model" or "baseline"
    p_old: np.ndarray
    p_new: np.ndarray
    p_undated: np.ndarray
    choice_old: np.ndarray | None = None   # (q,) modal-answer choices, -1 invalid
    choice_new: np.ndarray | None = None
    invalid: dict = field(default_factory=dict)   # period -> {reason: count}
    missing: dict = field(default_factory=dict)   # period -> count of rows without an answer
    asked: np.ndarray | None = None               # bool (n,): the run has a row for the pair (None: every pair)
    info: dict = field(default_factory=dict)
    run_dir: Path | None = None

    def valid(self, period: str) -> np.ndarray:
        array = {"old": self.p_old, "new": self.p_new, "undated": self.p_undated}[period]
        return ~np.isnan(array).any(axis=1)


DEFAULT_RETENTION = 0.75  # 4.1: the 75% of combinations with the smallest K


def analysis_retention(kind: str, info: dict | None, retention: float | None = None) -> float:
    """The knowledge-filter retention a run is analysed at.

    Reference runs (`kind` "baseline") have no knowledge to filter on: 1.0. A model run:
    `retention` when given, else 0.75 (4.1); a model run on a `--sample` is analysed
    without the filter (1.0), as F.3 analyses its 300-pair sample, unless `retention`
    is given.
    """
    if kind != "model":
        return 1.0
    if retention is not None:
        return float(retention)
    return 1.0 if (info or {}).get("sample") else DEFAULT_RETENTION


def reason_class(error: str) -> str:
    """A short class of a parse error, for the invalid-output counts."""
    for needle, name in (("missing", "option missing"), ("not a number", "non-numeric value"),
                         ("not finite", "non-finite value"), ("positive total", "non-positive total"),
                         ("empty", "empty output"), ("twice", "option given twice"),
                         ("no response", "no response"), ("more than one", "several options named"),
                         ("no option", "no option named")):
        if needle in error:
            return name
    return "unparseable"


def predictions_from_rows(bench: Benchmark, rows: list[dict], label: str, kind: str, info: dict | None = None,
                          where: str = PREDICTIONS_NAME) -> Predictions:
    """Align prediction rows ({pair_id, period, probabilities|choice, error}) with the benchmark."""
    index = bench.index()
    arrays = {p: np.full((bench.n, bench.width), np.nan) for p in PERIODS}
    seen = {p: np.zeros(bench.n, dtype=bool) for p in PERIODS}
    invalid: dict[str, dict[str, int]] = {p: {} for p in (*PERIODS, *MCQ_PERIODS)}
    modal_index = {}
    if bench.modal is not None:
        modal_index = {int(i): j for j, i in enumerate(bench.modal.pair_index)}
    choices = {p: np.full(bench.modal.n if bench.modal else 0, -1, dtype=int) for p in MCQ_PERIODS}
    seen_mcq = {p: np.zeros(bench.modal.n if bench.modal else 0, dtype=bool) for p in MCQ_PERIODS}
    for number, row in enumerate(rows, start=1):
        period = row.get("period")
        i = index.get(row.get("pair_id"))
        if i is None:
            raise EvalError(f"prediction for pair {row.get('pair_id')!r}, which this dataset does not have "
                            "(was the run made on another build?)", file=where, row=number, field="pair_id")
        if period in MCQ_PERIODS:
            j = modal_index.get(i)
            if j is None:
                continue
            seen_mcq[period][j] = True
            if row.get("choice") is None:
                reason = reason_class(row.get("error") or "")
                invalid[period][reason] = invalid[period].get(reason, 0) + 1
            else:
                choices[period][j] = int(row["choice"])
            continue
        if period not in PERIODS:
            raise EvalError(f"unknown period {period!r}", file=where, row=number, field="period")
        seen[period][i] = True
        probabilities = row.get("probabilities")
        if probabilities is None:
            reason = reason_class(row.get("error") or "")
            invalid[period][reason] = invalid[period].get(reason, 0) + 1
            continue
        if len(probabilities) != bench.k[i]:
            raise EvalError(f"{len(probabilities)} probabilities for a question with {bench.k[i]} options",
                            file=where, row=number, field="probabilities")
        arrays[period][i, : bench.k[i]] = probabilities
        arrays[period][i, bench.k[i]:] = 0.0
    missing = {p: int((~seen[p]).sum()) for p in PERIODS}
    if bench.modal is not None and any(seen_mcq[p].any() for p in MCQ_PERIODS):
        missing.update({p: int((~seen_mcq[p]).sum()) for p in MCQ_PERIODS})
    has_modal = bench.modal is not None and any(seen_mcq[p].any() for p in MCQ_PERIODS)
    return Predictions(
        label=label, kind=kind, p_old=arrays["old"], p_new=arrays["new"], p_undated=arrays["undated"],
        choice_old=choices["mcq_old"] if has_modal else None, choice_new=choices["mcq_new"] if has_modal else None,
        invalid={p: v for p, v in invalid.items() if v}, missing={p: v for p, v in missing.items() if v},
        asked=seen["undated"] | seen["old"] | seen["new"],
        info=dict(info or {}),
    )


def _read_files(info_path: Path, predictions_path: Path) -> tuple[dict, list[dict]]:
    info = read_json_object(info_path, error=EvalError)
    rows = [row for _, row in iter_jsonl_objects(predictions_path, error=EvalError)]
    return info, rows


def read_run(run_dir: Path, *, finished: bool = False) -> tuple[dict, list[dict]]:
    """A run folder's chronoculture.json and predictions.jsonl rows.

    finished: read them through the run folder (`histbench.core.runfolder.RunFolder`: the
    extras its run.json names), as the report does; a folder written before the run format
    is refused with the command that converts it. Otherwise read the files as `histbench
    eval` wrote them (what `run_summary.summarise` and the demo read before the run format's
    files are written)."""
    run_dir = Path(run_dir)
    if finished:
        from . import EVALUATOR

        folder = EVALUATOR.open_run(run_dir)
        return _read_files(folder.extra(RUN_INFO_NAME), folder.extra(PREDICTIONS_NAME))
    info_path = run_dir / RUN_INFO_NAME
    if not info_path.is_file():
        raise EvalError(f"not a ChronoCulture run folder ({RUN_INFO_NAME} is missing; run `histbench eval chronoculture` first)",
                        file=run_dir)
    return _read_files(info_path, run_dir / PREDICTIONS_NAME)


def load_predictions(bench: Benchmark, run_dir: Path, *, finished: bool = False) -> Predictions:
    """A run's Predictions (`finished`: read through the run folder, see `read_run`)."""
    info, rows = read_run(run_dir, finished=finished)
    return predictions_from_info(bench, run_dir, info, rows)


def predictions_from_info(bench: Benchmark, run_dir: Path, info: dict, rows: list[dict]) -> Predictions:
    """The Predictions of a run folder's chronoculture.json (`info`) and predictions.jsonl (`rows`)."""
    preds = predictions_from_rows(bench, rows, info.get("label") or Path(run_dir).name, info.get("kind", "model"),
                                  info, where=str(Path(run_dir) / PREDICTIONS_NAME))
    preds.run_dir = Path(run_dir)
    return preds


# ---------------------------------------------------------------------------
# Reference predictions that need no model (C.1)
# ---------------------------------------------------------------------------

def uniform_predictions(bench: Benchmark, label: str = "uniform") -> Predictions:
    """Equal shares for every option, for every prompt (the uniform reference of C.1)."""
    p = np.where(np.arange(bench.width)[None, :] < bench.k[:, None], 1.0 / bench.k[:, None], 0.0)
    return Predictions(label, "baseline", p.copy(), p.copy(), p.copy(), info={"baseline": "uniform"})


def static_predictions(preds: Predictions, label: str | None = None) -> Predictions:
    """The model's undated prediction used for both years (the static reference of C.1)."""
    p = preds.p_undated
    return Predictions(label or f"static ({preds.label})", "baseline", p.copy(), p.copy(), p.copy(),
                       info={"baseline": "static", "of": preds.label})


def frozen_gold_predictions(bench: Benchmark, year: str, label: str | None = None) -> Predictions:
    """An oracle that knows one year's gold distribution and repeats it for every prompt.

    Not a model: it shows what a perfectly informed but time-blind predictor scores
    (the no-model counterpart of the static reference). year: "oldest" or "newest".
    """
    p = {"oldest": bench.g_old, "newest": bench.g_new}[year]
    return Predictions(label or f"frozen {year} gold", "baseline", p.copy(), p.copy(), p.copy(),
                       info={"baseline": f"frozen-{year}"})


# ---------------------------------------------------------------------------
# Subsets of pairs to ask (F.3's stratified sample)
# ---------------------------------------------------------------------------

STRATA = ("shift_category", "survey", "topic_category", "region")


def _strata_labels(bench: Benchmark, column: str) -> tuple[np.ndarray, list[str]]:
    """Each pair's stratum and the strata in their natural order (shift categories stable first)."""
    if column == "shift_category":
        labels = np.array([m.CATEGORIES[c] for c in bench.categories["default"]], dtype=object)
        return labels, [c for c in m.CATEGORIES if (labels == c).any()]
    if column not in STRATA:
        raise EvalError(f"cannot stratify by {column!r} (choose one of {', '.join(STRATA)})", field="--stratify")
    labels = np.asarray(getattr(bench, column), dtype=object)
    return labels, sorted({str(v) for v in labels})


def sample_pairs(bench: Benchmark, n: int, stratify: str | None = None, seed: int = 0) -> tuple[np.ndarray, dict]:
    """A seeded sample of `n` pairs (benchmark rows, in dataset order) and what was drawn.

    Without `stratify`, a simple random sample. With it, equal shares of every stratum
    (F.3 samples the four shift categories equally): n // S pairs from
    each of the S strata present, the remainder one more each to the first strata in
    order. A stratum with fewer pairs than its share gives all of them; the shortfall is
    not moved to other strata (that would make the shares unequal) and is reported.
    """
    if n < 1:
        raise EvalError("--sample must be at least 1", field="--sample")
    rng = np.random.default_rng(seed)
    info: dict = {"n": int(n), "stratify": stratify, "seed": int(seed)}
    if stratify is None:
        chosen = np.sort(rng.choice(bench.n, size=min(n, bench.n), replace=False))
        info.update({"selected": int(chosen.size), "available": bench.n})
        return chosen, info
    labels, strata = _strata_labels(bench, stratify)
    base, extra = divmod(n, len(strata))
    chosen, by_stratum = [], {}
    for j, stratum in enumerate(strata):
        members = np.flatnonzero(labels == stratum)
        share = base + (1 if j < extra else 0)
        take = min(share, members.size)
        chosen.append(rng.choice(members, size=take, replace=False))
        by_stratum[stratum] = {"available": int(members.size), "share": int(share), "selected": int(take)}
    out = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=int)
    info.update({"selected": int(out.size), "available": bench.n, "by_stratum": by_stratum,
                 "short": {s: v["share"] - v["selected"] for s, v in by_stratum.items() if v["selected"] < v["share"]}})
    return out, info
