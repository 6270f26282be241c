"""`histbench report chronoculture`: the paper's tables and figures for one or more runs.

Runs are shown side by side, one row per run, in the order given. A run whose label
repeats an earlier one is a repeated run of that model (F.3): it is compared with the
first, not reported again. Every model run gets the two references of C.1 on its own
analysed pairs: `uniform` (equal shares) and `static` (its undated answer for both
years). Reference runs written with `histbench eval chronoculture --baseline` have no
knowledge to filter on and are analysed on all pairs (retention 100%); so are model runs
on a `--sample`, as F.3 analyses its sample, unless `--retention` is given (see
`data.analysis_retention`).

Cells show the estimate and its bootstrap 95% interval over temporal pairs; the
robustness tables (F.1, F.2) show estimates only (their intervals, from the same
resamples, are in the JSON). Percentages are of the pairs in the cell; "-" marks an
empty cell. Every table and figure names the table or figure of the paper it reproduces.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError
from histbench.core.markdown import code_span, escape_markdown
from histbench.eval.report import markdown_table

from . import figures as fig
from . import metrics as m
from .analysis import Analysis, Cell, analyse
from .breakdowns import BANDS, MIN_PAIRS, across_models
from .data import Benchmark, Predictions, analysis_retention, static_predictions, uniform_predictions
from .run import OPTION_PROBABILITIES, OPTION_PROBABILITIES_NOTE

CAT = {"stable": "Stab.", "moderate": "Mod.", "strong": "Str.", "very_strong": "V. str."}
CAT_LONG = {"stable": "Stable", "moderate": "Moderate", "strong": "Strong", "very_strong": "Very strong", "all": "All"}
SHIFTED = ("moderate", "strong", "very_strong")
DASH = "-"


# ---------------------------------------------------------------------------
# Cell formatting
# ---------------------------------------------------------------------------

def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _bounds(cell: Cell, ci: bool, fmt) -> str:
    """' [low, high] (n=N)'; an interval of no width in words (never "[0.0, 0.0]"): every
    resample gave that value, or 95% of them did. n is always shown (issue 43)."""
    if not ci:
        return ""
    n = f"n={cell.n:,}"
    if _nan(cell.low) or _nan(cell.high):
        return f" ({n})"
    low, high = fmt(cell.low), fmt(cell.high)
    if low == high:   # no width as shown
        which = "every resample" if cell.constant else "95% of resamples"
        return f" ({which} {low}; {n})"
    return f" [{low}, {high}] ({n})"


def pct(cell: Cell, ci: bool = True, digits: int = 1) -> str:
    if _nan(cell.estimate):
        return DASH
    return f"{100 * cell.estimate:.{digits}f}" + _bounds(cell, ci, lambda v: f"{100 * v:.{digits}f}")


def num(cell: Cell, ci: bool = True, digits: int = 2) -> str:
    if _nan(cell.estimate):
        return DASH
    return f"{cell.estimate:.{digits}f}" + _bounds(cell, ci, lambda v: f"{v:.{digits}f}")


def benefit(cell: Cell, ci: bool = True) -> str:
    """Mean benefit x 100, signed."""
    if _nan(cell.estimate):
        return DASH
    return f"{100 * cell.estimate:+.2f}" + _bounds(cell, ci, lambda v: f"{100 * v:+.2f}")


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

@dataclass
class Entry:
    """One run as reported: its analysis, references, and repeats."""

    preds: Predictions
    analysis: Analysis
    references: dict = field(default_factory=dict)     # name -> Analysis (rf1 only)
    retention_variants: dict = field(default_factory=dict)   # level -> Analysis (F.2, with intervals)
    retained_by_level: dict = field(default_factory=dict)    # level -> {category: retained pairs} (Table 7)
    instruction_of: tuple | None = None                      # (original Entry's label, comparison): F.3 prompts
    repeats: list = field(default_factory=list)          # [(Predictions, comparison dict)]

    @property
    def label(self) -> str:
        return self.analysis.label

    @property
    def md_label(self) -> str:
        """The label as it enters the report's Markdown: untrusted text (a run folder is shared),
        escaped so it renders as itself (histbench.core.markdown.escape_markdown)."""
        return escape_markdown(self.analysis.label)

    @property
    def is_model(self) -> bool:
        return self.preds.kind == "model"


def compare_runs(bench: Benchmark, first: Predictions, other: Predictions) -> dict:
    """F.3: how often a repeated run's predictions equal the first run's, and their mean W."""
    out = {"run": str(other.run_dir) if other.run_dir else other.label}
    total_same, total_n, distances = 0, 0, []
    for period in ("undated", "old", "new"):
        a = getattr(first, f"p_{period}" if period != "undated" else "p_undated")
        b = getattr(other, f"p_{period}" if period != "undated" else "p_undated")
        both = first.valid(period) & other.valid(period)
        same = m.identical(a[both], b[both])
        d = m.wasserstein(a[both], b[both], bench.positions[both])
        out[period] = {"compared": int(both.sum()), "identical": float(same.mean()) if both.any() else float("nan"),
                       "mean_w": float(d.mean()) if both.any() else float("nan")}
        total_same += int(same.sum())
        total_n += int(both.sum())
        distances.append(d)
    d = np.concatenate(distances) if distances else np.zeros(0)
    out["all"] = {"compared": total_n, "identical": total_same / total_n if total_n else float("nan"),
                  "mean_w": float(d.mean()) if d.size else float("nan")}
    return out


RETENTION_LEVELS = (0.5, 0.75, 1.0)          # F.2, Tables 26-27
TABLE7_LEVELS = (1.0, 0.75, 0.5, 0.25)        # B.2, Table 7


def retained_by_category(bench: Benchmark, a: Analysis, level: float) -> dict[str, int]:
    """Table 7: pairs the knowledge filter keeps at `level`, by shift category (same K, same groups)."""
    kept = m.knowledge_filter(a.k_score, bench.filter_groups(), level)
    out = {name: int((kept & (bench.categories["default"] == code)).sum()) for code, name in enumerate(m.CATEGORIES)}
    return out | {"total": int(kept.sum())}


def prepare(bench: Benchmark, runs: list[Predictions], *, retention: float | None = None, resamples: int = 1000,
            seed: int = 0, references: bool = True, retention_levels: tuple[float, ...] = RETENTION_LEVELS) -> list[Entry]:
    """Analyse every run (see the module docstring). retention None: each run's default
    (`data.analysis_retention`); a number applies to every model run."""
    from histbench.core.progress import progress

    entries: OrderedDict[str, Entry] = OrderedDict()
    for preds in progress(runs, desc="analysing runs", unit="run"):
        if preds.label in entries:
            first = entries[preds.label]
            if _prompt_sha(first.preds) != _prompt_sha(preds):
                raise EvalError(f"two runs are labelled {preds.label!r} but were asked with different prompts "
                                f"({first.preds.run_dir} and {preds.run_dir}); repeated runs (F.3) must use the same "
                                "prompts: give one of them another --label", file=preds.run_dir)
            first.repeats.append((preds, compare_runs(bench, first.preds, preds)))
            continue
        level = analysis_retention(preds.kind, preds.info, retention)
        a = analyse(bench, preds, retention=level, resamples=resamples, seed=seed)
        entry = Entry(preds, a)
        if preds.kind == "model":
            if references:
                for name, ref in (("uniform", uniform_predictions(bench)), ("static", static_predictions(preds))):
                    entry.references[name] = analyse(bench, ref, pairs=a.analysed, resamples=resamples, seed=seed,
                                                     parts=("rf1",), sets=("default",))
            for other in retention_levels:
                entry.retention_variants[other] = a if math.isclose(other, level) else analyse(
                    bench, preds, retention=other, resamples=resamples, seed=seed, parts=("rf1", "align", "rf2", "rf3"),
                    sets=("default",))
            entry.retained_by_level = {lv: retained_by_category(bench, a, lv) for lv in TABLE7_LEVELS}
        entries[preds.label] = entry
    _match_instructions(bench, list(entries.values()))
    return list(entries.values())


def _prompt_sha(preds: Predictions) -> str | None:
    return preds.info.get("prompt_templates_sha256")


def _model_key(preds: Predictions) -> tuple:
    backend = preds.info.get("backend") or {}
    # the scoring method too: an option-probabilities run is no original of a generated one (F.3)
    return (preds.info.get("model"), backend.get("revision"), preds.info.get("mode") or "generate")


def _match_instructions(bench: Benchmark, entries: list[Entry]) -> None:
    """F.3: a model run asked with `--prompts FILE` is compared with the run of the same model
    (spec and revision) asked with the build's own prompts, when the report has one."""
    originals = {}
    for e in entries:
        if e.is_model and (e.preds.info.get("prompts") or {}).get("source", "build") == "build":
            originals.setdefault(_model_key(e.preds), e)
    for e in entries:
        if not e.is_model or (e.preds.info.get("prompts") or {}).get("source", "build") == "build":
            continue
        original = originals.get(_model_key(e.preds))
        if original is not None and _prompt_sha(original.preds) != _prompt_sha(e.preds):
            e.instruction_of = (original.label, compare_runs(bench, original.preds, e.preds))


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def _table(header: list[str], rows: list[list[str]]) -> str:
    return markdown_table(rows, header, "l" * 1 + "r" * (len(header) - 1))


def runs_table(entries: list[Entry]) -> str:
    rows = []
    for e in entries:
        info = e.preds.info
        counts = info.get("counts", {})
        cells = []
        for period in ("undated", "old", "new"):
            c = counts.get(period)
            cells.append(f"{c['valid']:,}/{c['prompts']:,}" if c else DASH)
        invalid = {}
        for reasons in e.preds.invalid.values():
            for reason, n in reasons.items():
                invalid[reason] = invalid.get(reason, 0) + n
        missing = sum(e.preds.missing.get(p, 0) for p in ("undated", "old", "new"))
        rows.append([e.md_label, e.preds.kind + (f" ({info.get('baseline')})" if info.get("baseline") else ""), *cells,
                     ", ".join(f"{k} {v:,}" for k, v in sorted(invalid.items())) or "none", f"{missing:,}"])
    table = markdown_table(rows, ["run", "kind", "undated valid", "older valid", "newer valid", "invalid outputs (excluded)",
                                  "prompts not asked (outside the sample)"], "llrrrlr")
    signatures = [f"- {e.md_label}: {code_span(e.preds.info['signature'])}" for e in entries if e.preds.info.get("signature")]
    return table + ("\n\nSignatures:\n\n" + "\n".join(signatures) if signatures else "")


def retention_table(entries: list[Entry]) -> str:
    """Table 6: knowledge-filter retention (retained/scored pairs) and every exclusion."""
    rows = []
    for e in entries:
        c = e.analysis.counts
        s = c["by_survey"]
        rows.append([e.md_label, f"{e.analysis.retention:.0%}",
                     f"{s['WVS']['retained']:,}/{s['WVS']['scored']:,}", f"{s['ISSP']['retained']:,}/{s['ISSP']['scored']:,}",
                     f"{c['retained']:,}", f"{c.get('not_asked', 0):,}", f"{c['excluded_invalid_undated']:,}",
                     f"{c['excluded_by_filter']:,}", f"{c['excluded_invalid_dated']:,}", f"{c['analysed']:,}"])
    return _table(["run", "retention", "WVS", "ISSP", "total retained", "not asked (outside the sample)",
                   "no valid undated answer", "filtered out", "retained, dated answer invalid", "analysed pairs"], rows)


def table7(entries: list[Entry]) -> str:
    """Table 7: pairs retained at 100/75/50/25% by shift category, per model run."""
    rows = []
    for e in entries:
        for level, counts in e.retained_by_level.items():
            rows.append([e.md_label, f"{level:.0%}", *[f"{counts[c]:,}" for c in m.CATEGORIES], f"{counts['total']:,}"])
    return _table(["run", "retained", *[CAT[c] for c in m.CATEGORIES], "total"], rows)


def _rows_with_references(entries: list[Entry], render) -> list[list[str]]:
    rows = []
    for e in entries:
        rows.append([e.md_label, *render(e.analysis)])
        for name, ref in e.references.items():
            label = f"uniform (on {e.md_label}'s pairs)" if name == "uniform" else f"static ({e.md_label}'s undated answer)"
            rows.append([label, *render(ref)])
    return rows


def table8(entries: list[Entry], metric: str) -> str:
    header = ["run", *[CAT[c] for c in m.CATEGORIES]]
    rows = _rows_with_references(entries, lambda a: [pct(a.cell(f"rf1.default.tau0.10.{c}.{metric}")) for c in m.CATEGORIES])
    return _table(header, rows)


def table9(a: Analysis) -> str:
    rows = []
    for tau in m.TOLERANCES:
        for c in (*m.CATEGORIES, "all"):
            base = f"rf1.default.tau{tau:.2f}.{c}"
            rows.append([f"{tau:.2f}", CAT_LONG[c], *[pct(a.cell(f"{base}.{x}")) for x in
                         ("older_accurate", "newer_accurate", "both", "older_only", "newer_only", "neither")],
                         f"{a.cell(f'{base}.both').n:,}"])
    return markdown_table(rows, ["tau", "human shift", "older accurate", "newer accurate", "both", "older only",
                                 "newer only", "neither", "pairs"], "ll" + "r" * 7)


def table10a(entries: list[Entry]) -> str:
    header = ["run", *[f"separated {CAT[c]}" for c in SHIFTED], *[f"same period {CAT[c]}" for c in SHIFTED]]
    rows = [[e.md_label, *[pct(e.analysis.cell(f"align.default.{c}.separated")) for c in SHIFTED],
             *[pct(e.analysis.cell(f"align.default.{c}.same_period")) for c in SHIFTED]] for e in entries]
    return _table(header, rows)


def table10b(entries: list[Entry]) -> str:
    names = ("separated", "older_aligned", "newer_aligned", "reversed", "tie")
    header = ["run", "separated", "older-aligned", "newer-aligned", "reversed", "tie (1e-12)", "shifted pairs"]
    rows = [[e.md_label, *[pct(e.analysis.cell(f"align.default.shifted.{x}")) for x in names],
             f"{e.analysis.cell('align.default.shifted.separated').n:,}"] for e in entries]
    return _table(header, rows)


def table11(entries: list[Entry], metric: str) -> str:
    render = pct if metric == "zero_shift" else num
    header = ["run", *[CAT[c] for c in SHIFTED]]
    rows = [[e.md_label, *[render(e.analysis.cell(f"rf2.default.{c}.{metric}")) for c in SHIFTED]] for e in entries]
    return _table(header, rows)


def table12(a: Analysis) -> str:
    rows = [[CAT_LONG[c], num(a.cell(f"rf2.default.{c}.median_ratio"), digits=3),
             num(a.cell(f"rf2.default.{c}.median_ratio_all"), digits=3),
             f"{a.cell(f'rf2.default.{c}.median_ratio').n:,}/{a.cell(f'rf2.default.{c}.median_ratio_all').n:,}"]
            for c in SHIFTED]
    return markdown_table(rows, ["human shift", "median r, nonzero model shift", "median r, all pairs",
                                 "pairs (nonzero/all)"], "lrrr")


def table13(entries: list[Entry]) -> str:
    header = ["run", "preserves", "small false drift", "large false drift", "stable pairs"]
    rows = [[e.md_label, *[pct(e.analysis.cell(f"stable.default.all.{x}")) for x in m.STABILITY],
             f"{e.analysis.cell('stable.default.all.preserves').n:,}"] for e in entries]
    return _table(header, rows)


def table14(a: Analysis) -> str:
    labels = {"preserves": "Preserves stability", "small_drift": "Small false drift", "large_drift": "Large false drift"}
    rows = [[labels[x], *[pct(a.cell(f"stable.default.{s}.{x}")) for s in ("WVS", "ISSP", "all")]] for x in m.STABILITY]
    rows.append(["stable pairs", *[f"{a.cell(f'stable.default.{s}.preserves').n:,}" for s in ("WVS", "ISSP", "all")]])
    return markdown_table(rows, ["behaviour", "WVS", "ISSP", "pooled"], "lrrr")


def table15(entries: list[Entry]) -> str:
    header = ["run", "oldest", "intermediate", "newest", "combinations"]
    rows = [[e.md_label, *[pct(e.analysis.cell(f"rf3.default_period.all.{x}")) for x in m.DEFAULT_PERIODS],
             f"{e.analysis.cell('rf3.default_period.all.oldest').n:,}"] for e in entries]
    return _table(header, rows)


def table16(a: Analysis) -> str:
    rows = []
    for group, label, periods in (("two", "exactly two", ("oldest", "newest")),
                                  ("three_plus", "three or more", m.DEFAULT_PERIODS)):
        for x in periods:
            rows.append([label, x, pct(a.cell(f"rf3.default_period.{group}.{x}"), digits=2),
                         pct(a.cell(f"rf3.equal_choice.{group}.{x}"), ci=False, digits=2),
                         f"{a.cell(f'rf3.default_period.{group}.{x}').n:,}"])
    return markdown_table(rows, ["available years", "default survey year", "observed (%)", "equal-choice (%)", "items"], "llrrr")


def table17(entries: list[Entry], period: str) -> str:
    base = f"rf3.benefit.{period}.all"
    header = ["run", "benefit (x100)", "helped", "unchanged", "hurt", "identical"]
    rows = [[e.md_label, benefit(e.analysis.cell(f"{base}.mean")),
             *[pct(e.analysis.cell(f"{base}.{x}")) for x in ("helped", "unchanged", "hurt", "identical")]] for e in entries]
    return _table(header, rows)


def table18(entries: list[Entry], period: str) -> str:
    header = ["run", *[CAT[c] for c in m.CATEGORIES]]
    rows = [[e.md_label, *[benefit(e.analysis.cell(f"rf3.benefit.{period}.{c}.mean")) for c in m.CATEGORIES]] for e in entries]
    return _table(header, rows)


def table19(a: Analysis) -> str:
    rows = []
    for c in m.CATEGORIES:
        for period, label in (("old", "older"), ("new", "newer")):
            base = f"rf3.benefit.{period}.{c}"
            rows.append([CAT_LONG[c], label, benefit(a.cell(f"{base}.mean")),
                         *[pct(a.cell(f"{base}.{x}")) for x in ("helped", "unchanged", "hurt")]])
    return markdown_table(rows, ["human shift", "period", "mean benefit (x100)", "helped", "unchanged", "hurt"], "llrrrr")


def table20(entries: list[Entry]) -> str:
    header = ["run", "older: helped", "older: hurt", "newer: helped", "newer: hurt", "very strong pairs"]
    rows = [[e.md_label, *[pct(e.analysis.cell(f"rf3.benefit.{p}.very_strong.{x}")) for p in ("old", "new")
                        for x in ("helped", "hurt")], f"{e.analysis.cell('rf3.benefit.old.very_strong.mean').n:,}"]
            for e in entries]
    return _table(header, rows)


def robustness_tables(entries: list[Entry]) -> dict[str, str]:
    """Tables 21-25 (F.1): estimates under the tighter, default and looser boundaries."""
    bounds = [[name, *[f"{'<=' if j == 0 else ''}{b}" for j, b in enumerate(v)]] for name, v in m.BOUNDARY_SETS.items()]
    out = {"21": markdown_table(bounds, ["set", "stable <=", "strong from", "very strong from"], "lrrr")}
    rows22, rows23, rows24, rows25 = [], [], [], []
    for e in entries:
        a = e.analysis
        for s in ("tighter", "default", "looser"):
            rows22.append([e.md_label, s, *[pct(a.cell(f"rf1.{s}.tau0.10.{c}.both"), ci=False) for c in m.CATEGORIES],
                           *[pct(a.cell(f"rf1.{s}.tau0.10.{c}.one_only"), ci=False) for c in m.CATEGORIES]])
            rows23.append([e.md_label, s, *[pct(a.cell(f"align.{s}.{c}.separated"), ci=False) for c in SHIFTED],
                           *[pct(a.cell(f"align.{s}.{c}.same_period"), ci=False) for c in SHIFTED]])
            rows24.append([e.md_label, s, *[pct(a.cell(f"rf2.{s}.{c}.zero_shift"), ci=False) for c in SHIFTED],
                           *[num(a.cell(f"rf2.{s}.{c}.median_ratio"), ci=False) for c in SHIFTED],
                           *[num(a.cell(f"rf2.{s}.{c}.median_cosine"), ci=False) for c in SHIFTED]])
            rows25.append([e.md_label, s, *[pct(a.cell(f"stable.{s}.all.{x}"), ci=False) for x in m.STABILITY]])
    cats = [CAT[c] for c in m.CATEGORIES]
    shifted = [CAT[c] for c in SHIFTED]
    out["22"] = markdown_table(rows22, ["run", "set", *[f"both {c}" for c in cats], *[f"one only {c}" for c in cats]],
                               "ll" + "r" * 8)
    out["23"] = markdown_table(rows23, ["run", "set", *[f"separated {c}" for c in shifted],
                                        *[f"same period {c}" for c in shifted]], "ll" + "r" * 6)
    out["24"] = markdown_table(rows24, ["run", "set", *[f"zero shift {c}" for c in shifted],
                                        *[f"median r {c}" for c in shifted], *[f"median cos {c}" for c in shifted]],
                               "ll" + "r" * 9)
    out["25"] = markdown_table(rows25, ["run", "set", "preserves", "small", "large"], "llrrr")
    return out


def retention_robustness_tables(e: Entry) -> tuple[str, str]:
    """Tables 26-27 (F.2) for one model."""
    rows26, rows27 = [], []
    for level, a in sorted(e.retention_variants.items()):
        rows26.append([f"{level:.0%}", *[pct(a.cell(f"rf1.default.tau0.10.{c}.both"), ci=False) for c in m.CATEGORIES],
                       *[pct(a.cell(f"align.default.{c}.separated"), ci=False) for c in SHIFTED],
                       *[num(a.cell(f"rf2.default.{c}.median_ratio"), ci=False) for c in SHIFTED],
                       *[num(a.cell(f"rf2.default.{c}.median_cosine"), ci=False) for c in SHIFTED],
                       f"{a.counts['analysed']:,}"])
        rows27.append([f"{level:.0%}", pct(a.cell("rf3.default_period.all.newest"), ci=False),
                       benefit(a.cell("rf3.benefit.old.all.mean"), ci=False), benefit(a.cell("rf3.benefit.new.all.mean"), ci=False),
                       pct(a.cell("stable.default.all.preserves"), ci=False)])
    cats = [CAT[c] for c in m.CATEGORIES]
    shifted = [CAT[c] for c in SHIFTED]
    t26 = markdown_table(rows26, ["retained", *[f"both {c}" for c in cats], *[f"separated {c}" for c in shifted],
                                  *[f"median r {c}" for c in shifted], *[f"median cos {c}" for c in shifted], "pairs"],
                         "l" + "r" * 14)
    t27 = markdown_table(rows27, ["retained", "newest default (%)", "benefit older (x100)", "benefit newer (x100)",
                                  "preserves (%)"], "lrrrr")
    return t26, t27


def repeats_table(entries: list[Entry]) -> str:
    rows = []
    for e in entries:
        for _, c in e.repeats:
            rows.append([e.md_label, escape_markdown(c["run"]), f"{c['all']['compared']:,}",
                         DASH if _nan(c["all"]["identical"]) else f"{100 * c['all']['identical']:.1f}",
                         DASH if _nan(c["all"]["mean_w"]) else f"{c['all']['mean_w']:.4f}",
                         *[DASH if _nan(c[p]["identical"]) else f"{100 * c[p]['identical']:.1f}" for p in ("undated", "old", "new")]])
    return _table(["model", "repeated run", "predictions compared", "identical to first run (%)", "mean W to first run",
                   "identical: undated", "identical: older", "identical: newer"], rows)


def instructions_table(entries: list[Entry]) -> str:
    """F.3: each alternative instruction's predictions against the same model's original ones."""
    rows = []
    for e in entries:
        if e.instruction_of is None:
            continue
        original, c = e.instruction_of
        prompts = e.preds.info.get("prompts") or {}
        rows.append([e.md_label, escape_markdown(original), escape_markdown(Path(str(prompts.get("path", ""))).name), f"{c['all']['compared']:,}",
                     DASH if _nan(c["all"]["identical"]) else f"{100 * c['all']['identical']:.1f}",
                     DASH if _nan(c["all"]["mean_w"]) else f"{c['all']['mean_w']:.4f}",
                     *[DASH if _nan(c[p]["mean_w"]) else f"{c[p]['mean_w']:.4f}" for p in ("undated", "old", "new")]])
    return _table(["run", "original instruction", "prompt file", "predictions compared", "identical (%)", "mean W",
                   "mean W: undated", "mean W: older", "mean W: newer"], rows)


def modal_table(entries: list[Entry]) -> str:
    rows = []
    for e in entries:
        mo = e.analysis.modal
        if not mo:
            continue
        cells = []
        for c in ("stable", "strong", "very_strong"):
            entry = mo["by_category"][c]
            ci = entry["both_correct"]
            cells.append(DASH if not entry["kept"] else
                         f"{100 * ci['estimate']:.1f} [{100 * ci['low']:.1f}, {100 * ci['high']:.1f}] (n={entry['kept']:,})")
        hidden = mo["shifted"]["correct_mode_under_half_shift"]
        rows.append([e.md_label, *cells, f"{mo['kept']:,}/{mo['pairs']:,}",
                     DASH if _nan(hidden["estimate"]) else f"{100 * hidden['estimate']:.1f} (n={mo['shifted']['with_distribution_predictions']:,})"])
    return _table(["run", "stable: both correct (%)", "strong", "very strong", "pairs kept (>= 1 period correct)",
                   "shifted: correct mode, < half the shift captured (%)"], rows)


def _breakdown_cell(entry, metric, scale=100.0, digits=0, signed=False):
    """Mean across runs [lowest, highest] of one breakdown metric, or a dash."""
    if entry is None or entry.get(metric) is None:
        return DASH
    v = entry[metric]
    fmt = (lambda x: f"{scale * x:+.{digits}f}") if signed else (lambda x: f"{scale * x:.{digits}f}")
    text = fmt(v["mean"])
    if v["models"] > 1:
        text += f" [{fmt(v['min'])}, {fmt(v['max'])}]"
    return text


def breakdown_tables(summary: dict) -> str:
    """C.4: per survey, topic and region rows; mean across runs and [range]."""
    cell = _breakdown_cell
    parts = []
    for dim in ("topic", "region"):
        for survey in ("WVS", "ISSP"):
            table = summary["groups"][dim][survey]
            if not table:
                continue
            rows = []
            for group, bands in table.items():
                st, mo, sp = bands["stable"], bands["moderate"], bands["strong_plus"]
                rows.append([group, cell(st, "both_accurate"), cell(sp, "both_accurate"), cell(sp, "right_direction"),
                             cell(sp, "zero_shift"), cell(mo, "median_ratio", 1, 2), cell(sp, "median_ratio", 1, 2),
                             cell(sp, "benefit_old", 100, 1, True), cell(sp, "mean_d_h", 1, 3),
                             f"{max(st['pairs'].values(), default=0):,}/{max(sp['pairs'].values(), default=0):,}"])
            w = summary["kendall_w"][dim][survey]
            wtext = "; ".join(f"{band.replace('_plus', '+')}: W = " + (f"{w[band]['W']:.2f} over {w[band]['groups']} groups"
                                                                    if not _nan(w[band]["W"]) else "n/a")
                              for band in ("stable", "strong_plus"))
            parts.append(f"**{survey}, by {dim}** (Kendall's W across runs: {wtext})\n\n" + markdown_table(
                rows, [dim, "both % stable", "both % strong+", "right direction % strong+", "zero shift % strong+",
                       "median r moderate", "median r strong+", "naming older, benefit x100 strong+", "mean d_h strong+",
                       "pairs stable/strong+ (max)"], "l" + "r" * 9))
    return "\n\n".join(parts)


def countries_equal_table(summary: dict) -> str:
    """C.4's check: both-period accuracy by region with pairs pooled and with every country weighted equally."""
    parts = []
    for survey in ("WVS", "ISSP"):
        table = summary["groups"]["region"][survey]
        if not table:
            continue
        rows = [[region, *[_breakdown_cell(bands[b], metric) for b in BANDS
                           for metric in ("both_accurate", "both_accurate_countries_equal")]]
                for region, bands in table.items()]
        header = ["region"]
        for b in BANDS:
            label = {"stable": "stable", "moderate": "moderate", "strong_plus": "strong+"}[b]
            header += [f"both % {label}, pairs pooled", f"both % {label}, countries equal"]
        parts.append(f"**{survey}**\n\n" + markdown_table(rows, header, "l" + "r" * 6))
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------
# The whole report
# ---------------------------------------------------------------------------

@dataclass
class Part:
    title: str
    markdown: str
    data: dict = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)


def _img(path: Path, link_prefix: str, caption: str) -> str:
    """An image with its caption as alt text (the report site shows it as the figure's caption)."""
    return f"![{caption}]({link_prefix}{path.name})"


def _cells(a: Analysis, *prefixes: str) -> dict:
    return {k: v.to_json() for k, v in a.cells.items() if k.startswith(prefixes)}


def method_notes(entries: list[Entry]) -> list[str]:
    """A bold line (and a blank one) for each run not scored by the paper's generation method
    (`--mode option-probabilities`). The note is this package's own text (run.OPTION_PROBABILITIES_NOTE,
    chosen by the run's recorded mode), never the run file's."""
    lines = []
    for e in entries:
        if e.preds.info.get("mode") == OPTION_PROBABILITIES:
            note = OPTION_PROBABILITIES_NOTE
            # the label in a code span (Markdown escapes its HTML); a backtick would end the span
            label = str(e.label).replace("`", "'")
            lines += [f"**`{label}` was {note}.**", ""]
    return lines


def _published(number: int, entries: list[Entry]) -> list[str]:
    """The paper's own Table `number` beside ours (issue 43): the model a run names, matched only by
    the declared aliases of sources/chronoculture/published/aliases.yaml, first; [] when none ships."""
    from histbench.core.published import published_markdown

    names = [n for e in entries if e.is_model for n in (e.preds.info.get("model"), e.label) if isinstance(n, str)]
    text = published_markdown("chronoculture", number, names)
    return ["", text] if text else []


def build_parts(bench: Benchmark, entries: list[Entry], figure_dir: Path, link_prefix: str = "", h: str = "###",
                example_limit: int = 6, min_pairs: int = MIN_PAIRS) -> list[Part]:
    """Every section of the report as Markdown (sub-headings at level `h`) with its numbers and figures.

    Figures of single runs (11, 12, 16-18) are drawn for the first `example_limit` model
    runs; reference runs predict no change, so they have none of these.
    """
    analyses = [e.analysis for e in entries]
    models = [e for e in entries if e.is_model]
    shown = models[:example_limit]
    parts: list[Part] = []
    ci_note = ("Cells: estimate [95% interval]: Wilson for a share of pairs (every %), a percentile bootstrap over "
               "temporal pairs for means, medians and benefits; percentages are of the pairs in the cell. An interval "
               "of no width is said in words (every resample, or 95% of them, gave that value).")
    no_model = "No model run in this report, so there is no per-run figure here (reference runs predict no change)."

    # Runs, exclusions, Tables 6 and 7, Figure 11
    md = [*method_notes(entries), "Each run's prompts, how many answers were valid, and why the others were excluded "
          "(B.1: a missing option, a non-numeric or non-finite value, or a non-positive total).", "",
          runs_table(entries), "", f"{h} Table 6. Knowledge-filter retention (retained/scored pairs)", "",
          "Within each survey x number-of-available-years group, the share with the smallest K = min over years of "
          "W(P_undated, G_t) is kept (floor of the share). Reference runs, and model runs on a sample (F.3), are "
          "analysed on all pairs.", "", retention_table(entries)]
    figures = []
    if models:
        md += ["", f"{h} Table 7. Temporal pairs retained at each level, by shift category", "",
               "The same K and groups as Table 6, kept at 100%, 75%, 50% and 25% (before the check of valid dated "
               "answers).", "", table7(models)]
        for e in shown:
            path = fig.knowledge_figure(e.analysis, figure_dir)
            figures.append(path)
            md += ["", _img(path, link_prefix, f"Figure 11. Nearest-survey distance K, retained and excluded: {e.md_label}")]
    parts.append(Part("Runs, invalid outputs and the knowledge filter (B.1, B.2, Tables 6-7, Figure 11)", "\n".join(md),
                      {"runs": {e.label: {"counts": e.analysis.counts, "info": {k: v for k, v in e.preds.info.items()
                                                                             if k not in ("signature_fields",)}}
                                for e in entries},
                       "table7": {e.label: {f"{lv:.2f}": c for lv, c in e.retained_by_level.items()} for e in models}},
                      figures))

    # RF1 accuracy
    f5 = fig.accuracy_figure(analyses, figure_dir)
    md = [ci_note, "", f"{h} Table 8. Accuracy within tau = 0.10 by human shift (% of pairs)", "",
          "References (C.1) under each model: `uniform` (equal shares for every option) and `static` (the model's "
          "undated answer for both years), on the model's own analysed pairs.", "",
          "**Both periods accurate**", "", table8(entries, "both"), "", "**Older only**", "", table8(entries, "older_only"),
          "", "**Newer only**", "", table8(entries, "newer_only"), *_published(8, entries), "",
          _img(f5, link_prefix, "Figure 5. Both periods (a) and one period only (b) within tau = 0.10, by human shift"),
          "", f"{h} Table 9. Accuracy at each tolerance (C.2)"]
    for e in entries:
        md += ["", f"**{e.md_label}**", "", table9(e.analysis)]
    md += _published(9, entries)
    figures = [f5]
    for e in shown:
        path = fig.period_error_figure(e.analysis, figure_dir)
        figures.append(path)
        md += ["", _img(path, link_prefix, f"Figure 12. Per-period prediction errors: {e.md_label}")]
    parts.append(Part("RF1: accuracy by human shift (4.2, C.1-C.2, Tables 8-9, Figures 5 and 12)", "\n".join(md),
                      {e.label: _cells(e.analysis, "rf1.default")
                       | {f"reference.{n}.{k}": v.to_json() for n, r in e.references.items() for k, v in r.cells.items()}
                       for e in entries}, figures))

    # RF1 alignment
    f6 = fig.alignment_figure(analyses, figure_dir)
    md = [ci_note, "", "Which gold distribution each prediction is closer to, for pairs with a moderate or larger "
          "shift (zero model shift included). Distances equal within 1e-12 count as a tie.", "",
          f"{h} Table 10. Temporal alignment (%)", "", table10a(entries), "", "**All shifted pairs**", "", table10b(entries),
          *_published(10, entries),
          "", _img(f6, link_prefix, "Figure 6. Temporal alignment of the two predictions, shifted pairs")]
    parts.append(Part("RF1: temporal alignment (C.3, Table 10, Figure 6)", "\n".join(md),
                      {e.label: _cells(e.analysis, "align.default") for e in entries}, [f6]))

    # RF2 magnitude and direction
    f7 = fig.magnitude_direction_figure(analyses, figure_dir)
    f15 = fig.shift_scatter_figure([e.analysis for e in models[:9]], figure_dir) if models else None
    md = [ci_note, "", f"{h} Table 11. Magnitude and direction by human shift", "",
          "**Zero model shift (identical predictions, %)**", "", table11(entries, "zero_shift"), "",
          "**Median ratio r = d_m / d_h (pairs with nonzero model shift)**", "", table11(entries, "median_ratio"), "",
          "**Median cosine of the cumulative change vectors (pairs with nonzero model shift)**", "",
          table11(entries, "median_cosine"), *_published(11, entries), "",
          _img(f7, link_prefix, "Figure 7. Identical predictions (a), median ratio r (b) and median cosine (c) by human shift"),
          "", f"{h} Table 12. Median ratio with and without identical predictions (D.2)"]
    for e in entries:
        md += ["", f"**{e.md_label}**", "", table12(e.analysis)]
    md += _published(12, entries)
    md += ["", _img(f15, link_prefix, "Figure 15. Human shift d_h and model shift d_m per temporal pair") if f15 else no_model]
    parts.append(Part("RF2: magnitude and direction (4.3, D.1-D.2, D.5, Tables 11-12, Figures 7 and 15)", "\n".join(md),
                      {e.label: _cells(e.analysis, "rf2.default") for e in entries}, [f7] + ([f15] if f15 else [])))

    # Stable pairs
    md = [ci_note, "", "Stable pairs (d_h <= 0.03): the model preserves stability when d_m <= 0.03; false drift is "
          "small for 0.03 < d_m < 0.10 and large for d_m >= 0.10.", "", f"{h} Table 13. Behaviour on stable pairs (%)", "",
          table13(entries), *_published(13, entries), "", f"{h} Table 14. Stable pairs by survey (%)"]
    for e in entries:
        md += ["", f"**{e.md_label}**", "", table14(e.analysis)]
    md += _published(14, entries)
    parts.append(Part("RF2: stability and false drift (D.3-D.4, Tables 13-14)", "\n".join(md),
                      {e.label: _cells(e.analysis, "stable.default") for e in entries}))

    # RF3 default period
    md = [ci_note, "", "The survey year whose gold distribution is closest to the undated prediction, among all "
          "available years, for every retained question x country combination (4.4; a combination whose dated "
          "answers are invalid still counts here). Ties within 1e-12 go to the earliest year and are counted in the "
          "JSON. Intervals resample the combinations.", "",
          f"{h} Table 15. Default survey year of undated predictions (%)", "", table15(entries), *_published(15, entries), "",
          f"{h} Table 16. Default year by coverage, against equal choice (E.2)"]
    for e in entries:
        md += ["", f"**{e.md_label}**", "", table16(e.analysis)]
    md += _published(16, entries)
    parts.append(Part("RF3: default period (4.4, E.1-E.2, Tables 15-16)", "\n".join(md),
                      {e.label: _cells(e.analysis, "rf3.default_period", "rf3.equal_choice") for e in entries}))

    # RF3 benefit
    f8 = fig.benefit_figure(analyses, figure_dir)
    md = [ci_note, "", "Benefit b_t = W(P_undated, G_t) - W(P_t, G_t), x 100: positive when naming the year brings "
          "the prediction closer to that year's gold distribution. Helped / unchanged / hurt by its sign (|b| <= 1e-12 "
          "is unchanged); identical: the dated answer equals the undated one.", "",
          f"{h} Table 17. Overall effect of naming a year", "", "**Naming the older year**", "", table17(entries, "old"), "",
          "**Naming the newer year**", "", table17(entries, "new"), *_published(17, entries), "",
          f"{h} Table 18. Mean benefit (x 100) by human shift", "", "**Naming the older year**", "", table18(entries, "old"),
          "", "**Naming the newer year**", "", table18(entries, "new"), *_published(18, entries), "",
          _img(f8, link_prefix, "Figure 8. Mean benefit of naming the older (a) and the newer (b) year, by human shift"), "",
          f"{h} Table 19. Naming outcomes by human shift"]
    for e in entries:
        md += ["", f"**{e.md_label}**", "", table19(e.analysis)]
    md += _published(19, entries)
    figures = [f8]
    for e in shown:
        path = fig.naming_outcomes_figure(e.analysis, figure_dir)
        figures.append(path)
        md += ["", _img(path, link_prefix, f"Figure 18. Naming outcomes by human shift: {e.md_label}")]
    md += ["", f"{h} Table 20. Items helped and hurt, very strong shifts (%)", "", table20(entries), *_published(20, entries)]
    parts.append(Part("RF3: naming a year (4.4, E.3-E.4, Tables 17-20, Figures 8 and 18)", "\n".join(md),
                      {e.label: _cells(e.analysis, "rf3.benefit") for e in entries}, figures))

    # Topic and region
    breakdown_runs = [e.analysis for e in models] or analyses
    summary = across_models(bench, breakdown_runs, min_pairs)
    f13 = fig.heatmap_figure(summary, "topic", figure_dir)
    f14 = fig.heatmap_figure(summary, "region", figure_dir)
    threshold = f"{min_pairs} pairs" + ("" if min_pairs == MIN_PAIRS else f" (the paper's C.4 uses {MIN_PAIRS})")
    md = [f"Per run on its analysed pairs; strong+ pools strong and very strong shifts; cells with fewer than "
          f"{threshold} are blank ({DASH}). Each cell: mean across runs [lowest, highest run]. "
          f"Runs compared: {', '.join(escape_markdown(x) for x in summary['models'])}. Accuracy uses tau = 0.10; right direction is a positive "
          "cosine among pairs with nonzero model shift.", "", breakdown_tables(summary) or "No group has enough pairs.", "",
          _img(f13, link_prefix, "Figure 13. Both-period accuracy by topic and shift band (mean % across runs, [range])"),
          "", _img(f14, link_prefix, "Figure 14. Both-period accuracy by region and shift band (mean % across runs, [range])"),
          "", f"{h} C.4 check: every country weighted equally", "",
          "Both-period accuracy by region with the pairs pooled, and as the mean of each country's own share (a "
          "country with many pairs counts as much as one with few); blank under the same rule.", "",
          countries_equal_table(summary) or "No region has enough pairs."]
    parts.append(Part("Topics and regions (4.5, C.4, Figures 13-14)", "\n".join(md),
                      {"breakdowns": summary, "bands": list(BANDS)}, [f13, f14]))

    # Robustness F.1
    rob = robustness_tables(entries)
    md = ["Only the category assignment changes; predictions and distances stay the same. Estimates only; the "
          "intervals are in the JSON.", "", f"{h} Table 21. Human-shift boundaries", "", rob["21"], "",
          f"{h} Table 22. RF1 under each boundary set (%)", "", rob["22"], "",
          f"{h} Table 23. Alignment under each boundary set (%)", "", rob["23"], "",
          f"{h} Table 24. RF2 under each boundary set", "", rob["24"], "",
          f"{h} Table 25. Stable pairs under each boundary set (%)", "",
          "Preserves uses each set's stable boundary; large drift is d_m >= 0.10 throughout.", "", rob["25"]]
    parts.append(Part("Robustness: shift boundaries (F.1, Tables 21-25)", "\n".join(md),
                      {e.label: {k: v.to_json() for k, v in e.analysis.cells.items()
                                 if k.split(".")[1] in ("tighter", "looser")} for e in entries}))

    # Robustness F.2
    model_entries = [e for e in entries if e.retention_variants]
    if model_entries:
        md = ["The same predictions with 50%, 75% and 100% of question x country combinations retained. Estimates "
              "only; every cell's bootstrap interval is in the JSON."]
        data = {}
        for e in model_entries:
            t26, t27 = retention_robustness_tables(e)
            md += ["", f"**{e.md_label}**", "", f"{h} Table 26. RF1 and RF2 by retention", "", t26, "",
                   f"{h} Table 27. RF3 and stable pairs by retention", "", t27]
            data[e.label] = {f"{level:.2f}": {"counts": a.counts, "cells": {k: v.to_json() for k, v in a.cells.items()}}
                             for level, a in e.retention_variants.items()}
        parts.append(Part("Robustness: knowledge-filter retention (F.2, Tables 26-27)", "\n".join(md), data))

    # Repeats and instructions F.3
    if any(e.repeats or e.instruction_of for e in entries):
        md = []
        if any(e.repeats for e in entries):
            md += ["Runs with the same label are repeated runs of the same prompts; each is compared with the first.", "",
                   f"{h} F.3. Repeated runs against the first run", "", repeats_table(entries), ""]
        if any(e.instruction_of for e in entries):
            md += ["A run asked with `--prompts FILE` (an alternative instruction) against the run of the same model "
                   "with the build's prompts, on the prompts both answered; its own tables above show whether the "
                   "temporal patterns persist.", "", f"{h} F.3. Alternative instructions against the original", "",
                   instructions_table(entries)]
        parts.append(Part("Robustness: repeated runs and prompt instructions (F.3)", "\n".join(md).strip(),
                          {e.label: {"repeats": [c for _, c in e.repeats],
                                     "instruction": None if e.instruction_of is None else
                                     {"original": e.instruction_of[0], **e.instruction_of[1]}}
                           for e in entries if e.repeats or e.instruction_of}))

    # Modal answers
    if any(e.analysis.modal for e in entries):
        md = ["Single-answer prompts on the mcq pairs (top-two margin >= 10 points; stable pairs, and strong or very "
              "strong pairs whose mode changes). Pairs the run answers wrongly in both periods are dropped (as the "
              "knowledge filter does); both-correct with a Wilson 95% interval. The last column: among kept strong and "
              "very strong pairs with valid distribution answers, the share with both modes right while r = d_m/d_h < 0.5.",
              "", f"{h} Table 5. Modal-answer accuracy", "", modal_table(entries), *_published(5, entries)]
        parts.append(Part("Modal-answer evaluation (A.5, Table 5)", "\n".join(md),
                          {e.label: e.analysis.modal for e in entries if e.analysis.modal}))

    # Examples
    figures = []
    md = ["Per model run: one pair for each pattern of predicted change that some analysed pair shows (D.6; mean "
          "response on the answer scale, older to newer year), and the strong or very strong pairs with the least "
          "model change (D.7; cumulative distributions)."]
    for e in shown:
        f16 = fig.patterns_figure(bench, e.preds, e.analysis, figure_dir)
        f17 = fig.limited_change_figure(bench, e.preds, e.analysis, figure_dir)
        figures += [f16, f17]
        md += ["", f"**{e.md_label}**", "", _img(f16, link_prefix, f"Figure 16. Patterns of predicted change: {e.md_label}"), "",
               _img(f17, link_prefix, f"Figure 17. Limited model change despite human shift: {e.md_label}")]
    if not shown:
        md += ["", no_model]
    parts.append(Part("Examples of predicted change (D.6-D.7, Figures 16-17)", "\n".join(md),
                      {e.label: {"patterns": {k: None if i is None else bench.pair_id[i]
                                              for k, i in fig.pattern_examples(e.analysis).items()},
                                 "limited_change": [bench.pair_id[i] for i in fig.limited_change_examples(e.analysis)]}
                       for e in shown},
                      figures))
    # results first (issue 43): the findings (RF1-RF3, then Table 5's modal answers), then the
    # runs' counts, exclusions and the knowledge filter (B.1-B.2), then the robustness checks
    runs_part = parts.pop(0)
    modal = [p for p in parts if p.title.startswith("Modal-answer")]
    parts = [p for p in parts if not p.title.startswith("Modal-answer")]
    at = next((i for i, p in enumerate(parts) if p.title.startswith("Robustness")), len(parts))
    return [*parts[:at], *modal, runs_part, *parts[at:]]
