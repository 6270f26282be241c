"""Results by topic and by region, across models (C.4, 4.5).

Groups are each survey's own topic labels (WVS and ISSP apart) and the seven world
regions (per survey). Strong and very strong shifts are pooled as "strong+". Each cell
is computed per model on that model's analysed pairs and left blank when it holds
fewer than `MIN_PAIRS` (20) pairs; across models a cell shows the mean and the range
(lowest to highest model) over the models where it is not blank. Kendall's W measures
whether the models rank the groups alike (groups blank for some model are left out of
that W).

C.4's check with every country counting once is `both_accurate_countries_equal`
(region cells only): the mean over the region's countries of each country's share of
pairs accurate in both periods, so a country with many pairs counts as much as one with
few. It is blank under the same rule (fewer than `min_pairs` pairs in the cell); every
country with at least one pair in the cell counts.
"""

from __future__ import annotations

import numpy as np

from . import metrics as m
from .analysis import Analysis
from .data import Benchmark

MIN_PAIRS = 20
DIMENSIONS = {"topic": "topic", "region": "region"}
BANDS = {
    "stable": (m.STABLE,),
    "moderate": (m.MODERATE,),
    "strong_plus": (m.STRONG, m.VERY_STRONG),
}
# metric -> (bands it is reported for, function of (values dict, subset) -> float)


METRICS = ("both_accurate", "both_accurate_countries_equal", "zero_shift", "right_direction", "median_ratio",
           "benefit_old", "benefit_new", "mean_d_h")


def _metrics(v: dict, subset: np.ndarray, countries: np.ndarray | None = None) -> dict[str, float]:
    both = m.period_outcome(v["d_old"][subset], v["d_new"][subset], m.TAU) == m.BOTH
    nonzero = ~v["zero_shift"][subset]
    cos = v["cosine"][subset]
    ratio = v["ratio"][subset][nonzero]
    defined_cos = cos[~np.isnan(cos)]
    out = {}
    if countries is not None:
        names, inverse = np.unique(countries[subset].astype(str), return_inverse=True)
        per_country = np.bincount(inverse, weights=both.astype(float)) / np.bincount(inverse)
        out["both_accurate_countries_equal"] = float(per_country.mean()) if names.size else float("nan")
    return out | {
        "both_accurate": float(both.mean()),
        "zero_shift": float(v["zero_shift"][subset].mean()),
        "right_direction": float((defined_cos > 0).mean()) if defined_cos.size else float("nan"),
        "median_ratio": float(np.nanmedian(ratio)) if np.any(~np.isnan(ratio)) else float("nan"),
        "benefit_old": float(np.nanmean(v["b_old"][subset])),
        "benefit_new": float(np.nanmean(v["b_new"][subset])),
        "mean_d_h": float(v["d_h"][subset].mean()),
    }


def per_model_cells(bench: Benchmark, analysis: Analysis, min_pairs: int = MIN_PAIRS) -> dict:
    """{dimension: {survey: {group: {band: {"pairs": n, metric: value|None}}}}} for one model."""
    v = analysis.per_pair
    idx = v["index"]
    cat = v["categories"]["default"]
    countries = bench.country[idx]
    out: dict = {}
    for dim, column in DIMENSIONS.items():
        labels = getattr(bench, column)[idx]
        out[dim] = {}
        for survey in ("WVS", "ISSP"):
            in_survey = v["survey"] == survey
            groups = sorted(set(labels[in_survey]))
            out[dim][survey] = {}
            for group in groups:
                out[dim][survey][group] = {}
                for band, codes in BANDS.items():
                    subset = in_survey & (labels == group) & np.isin(cat, codes)
                    n = int(subset.sum())
                    cell = {"pairs": n}
                    if n >= min_pairs:
                        cell.update(_metrics(v, subset, countries if dim == "region" else None))
                    out[dim][survey][group][band] = cell
    return out


def across_models(bench: Benchmark, analyses: list[Analysis], min_pairs: int = MIN_PAIRS) -> dict:
    """Mean, range and Kendall's W over models (see the module docstring)."""
    cells = {a.label: per_model_cells(bench, a, min_pairs) for a in analyses}
    labels = list(cells)
    summary: dict = {"min_pairs": min_pairs, "models": labels, "groups": {}, "kendall_w": {}}
    for dim in DIMENSIONS:
        summary["groups"][dim] = {}
        summary["kendall_w"][dim] = {}
        for survey in ("WVS", "ISSP"):
            groups = sorted({g for label in labels for g in cells[label][dim][survey]})
            table: dict = {}
            for group in groups:
                table[group] = {}
                for band in BANDS:
                    per_model = {label: cells[label][dim][survey].get(group, {}).get(band, {"pairs": 0}) for label in labels}
                    entry = {"pairs": {label: c["pairs"] for label, c in per_model.items()}}
                    for metric in METRICS:
                        values = {label: c[metric] for label, c in per_model.items()
                                  if metric in c and not np.isnan(c[metric])}
                        if values:
                            array = np.array(list(values.values()))
                            entry[metric] = {"mean": float(array.mean()), "min": float(array.min()),
                                             "max": float(array.max()), "models": len(values), "per_model": values}
                        else:
                            entry[metric] = None
                    table[group][band] = entry
            summary["groups"][dim][survey] = table
            summary["kendall_w"][dim][survey] = {}
            for band in ("stable", "strong_plus"):
                complete = [g for g in groups if table[g][band]["both_accurate"] is not None
                            and table[g][band]["both_accurate"]["models"] == len(labels)]
                if len(labels) >= 2 and len(complete) >= 2:
                    scores = np.array([[table[g][band]["both_accurate"]["per_model"][label] for g in complete]
                                       for label in labels])
                    w = m.kendalls_w(scores)
                else:
                    w = float("nan")
                summary["kendall_w"][dim][survey][band] = {"W": w, "groups": len(complete), "models": len(labels)}
    return summary
