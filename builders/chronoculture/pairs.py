"""Temporal pairs, sampling noise and the modal-answer variant (paper 3.4-3.6, A.5, F.1, F.4).

Pairs (3.4): one per question x country with gold distributions in at least two
periods. The newer period is WVS wave 7 (a WVS question x country without a wave-7
distribution has no pair) or the most recent ISSP year; the older period is the oldest
available year. d_h = W(G_old, G_new) and its categories under the default, tighter and
looser boundaries (distance.py). Rule 3.2 (scales.py): a question whose older and newer
period are not on the same answer scale gets no pair (or, with the `match` policy, the
oldest period on the newer period's scale), counted per question.

Sampling noise (F.4): for each pair, 200 times, two independent samples of 500
respondents are drawn from G_old (multinomial) and W between their empirical
distributions is computed; the pair stores the median and the 95th percentile
(numpy's default linear interpolation). The generator of each pair is seeded with
(build seed, crc32(pair_id)), so a pair's noise does not depend on which other pairs
the build contains; the distances of all pairs are then computed together (`pair_noise`).

Modal-answer variant (3.6, A.5): the label of a period is the mode of its gold
distribution. A pair enters the `mcq` config when the two largest proportions differ by
at least 10 points in both periods, and it is either stable, or strong/very strong with
a mode that changes; moderate pairs are left out. The build summary reports, over all
pairs, the share of shifted (non-stable) pairs that keep their mode and of stable pairs
whose mode changes (68.2% and 8.5% in the paper).
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .distance import SHIFT_BOUNDARIES, normalised_wasserstein, option_positions, shift_category
from .prompts import LETTERS, PromptTemplates
from .registry import Question
from .scales import PeriodScale, scale_difference

NOISE_DRAWS = 200
NOISE_RESPONDENTS = 500
MCQ_MARGIN = 0.10
MARGIN_TOLERANCE = 1e-12


@dataclass
class Cell:
    """A gold distribution: one question x country x period."""

    year: int
    wave: int | None
    gold: np.ndarray
    n: int
    source: str  # "<file name>:<variable>"
    scale: PeriodScale | None = None  # the period's answers over all countries (rule 3.2)


def pair_id_of(question_id: str, alpha3: str) -> str:
    return f"{question_id}__{alpha3}"


def noise_distances(g_old, values, rng: np.random.Generator, draws: int = NOISE_DRAWS,
                    respondents: int = NOISE_RESPONDENTS) -> np.ndarray:
    """W between the two samples of each of `draws` pairs of multinomial samples from g_old (F.4)."""
    p = np.asarray(g_old, dtype=float)
    p = p / p.sum()
    positions = option_positions(len(p), values)
    counts = rng.multinomial(respondents, p, size=(draws, 2))
    cdf = np.cumsum(counts, axis=2)[:, :, :-1]  # counts at or below each option (the last is always n)
    return (np.abs(cdf[:, 0] - cdf[:, 1]) @ np.diff(positions)) / (respondents * (positions[-1] - positions[0]))


def noise_quantiles(distances: np.ndarray) -> np.ndarray:
    """(median, 95th percentile) of each row of W's: shape (pairs, 2). One call for all pairs."""
    return np.quantile(np.atleast_2d(distances), [0.5, 0.95], axis=1).T


def sampling_noise(g_old, values, rng: np.random.Generator, draws: int = NOISE_DRAWS,
                   respondents: int = NOISE_RESPONDENTS) -> tuple[float, float]:
    """(median, 95th percentile) of W between two multinomial samples from g_old (F.4)."""
    median, p95 = noise_quantiles(noise_distances(g_old, values, rng, draws, respondents))[0]
    return float(median), float(p95)


NOISE_CHUNK = 1024  # pairs whose samples are held at once (1,024 x 200 x 2 x 10 counts: 33 MB)


def pair_noise(golds, values, pair_ids, seed: int, draws: int = NOISE_DRAWS,
               respondents: int = NOISE_RESPONDENTS) -> np.ndarray:
    """(median, 95th percentile) of the F.4 noise of every pair, shape (pairs, 2).

    The same numbers as `sampling_noise(gold, values, pair_rng(seed, pair_id))` pair by pair:
    each pair's multinomial samples come from its own generator, and the distances of all
    pairs on the same scale positions are then computed in one step (running sums of the two
    samples' count differences, times the positions' spacing) and their quantiles in one call.
    """
    distances = np.empty((len(golds), draws))
    by_scale: dict[tuple, list[int]] = {}
    scale_of: dict = {}  # (options, values) -> their positions, worked out once per scale
    for i, (gold, vals) in enumerate(zip(golds, values, strict=True)):
        key = (len(gold), None if vals is None else tuple(vals))
        if key not in scale_of:
            scale_of[key] = tuple(option_positions(len(gold), vals).tolist())
        by_scale.setdefault(scale_of[key], []).append(i)
    for scale, members in by_scale.items():
        positions = np.array(scale)
        gaps, span = np.diff(positions), respondents * (positions[-1] - positions[0])
        for start in range(0, len(members), NOISE_CHUNK):
            chunk = members[start:start + NOISE_CHUNK]
            counts = np.empty((len(chunk), draws, 2, len(positions)), dtype=np.int64)
            for row, i in enumerate(chunk):
                p = np.asarray(golds[i], dtype=float)
                counts[row] = pair_rng(seed, pair_ids[i]).multinomial(respondents, p / p.sum(), size=(draws, 2))
            # the gap between the two samples' counts at or below each option but the last (always n):
            # the running sum of the counts' differences, exact in integers
            gap = np.subtract(counts[:, :, 0, :-1], counts[:, :, 1, :-1])
            np.cumsum(gap, axis=2, out=gap)
            distances[chunk] = (np.abs(gap, out=gap) @ gaps) / span
    return noise_quantiles(distances) if len(golds) else np.empty((0, 2))


def pair_rng(seed: int, pair_id: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(pair_id.encode("utf-8"))])


def top_two_margin(p) -> float:
    """The largest proportion minus the second largest (the same float numpy's sort gives)."""
    second, first = sorted(p.tolist() if isinstance(p, np.ndarray) else map(float, p))[-2:]
    return first - second


def mode_index(p: list[float]) -> int:
    """The option with the largest proportion, the first of a tie (as numpy's argmax)."""
    return max(range(len(p)), key=p.__getitem__)


def choose_periods(question: Question, cells: list[Cell], newer_wave: int | None,
                   scale_policy: str = "drop") -> tuple[Cell, Cell] | tuple[str, str | None]:
    """(older, newer) cells of a pair, or (the reason there is none, a detail or None).

    Rule 3.2: with `scale_policy` "drop" a pair whose two periods differ in scale is not
    formed ("scale_changed"); with "match" the older period is the oldest one on the newer
    period's scale.
    """
    ordered = sorted(cells, key=lambda c: (c.year, c.wave or 0))
    if len(ordered) < 2:
        return "single_period", None
    if question.survey == "WVS":
        newer = [c for c in ordered if c.wave == newer_wave]
        if not newer:
            return "no_newer_wave", None
        older = [c for c in ordered if c.wave is not None and c.wave < newer_wave]
        if not older:
            return "single_period", None
        new = newer[0]
    else:
        new, older = ordered[-1], ordered[:-1]
    reason = scale_difference(older[0].scale, new.scale)
    if reason is None:
        return older[0], new
    if scale_policy == "match":
        same = [c for c in older[1:] if scale_difference(c.scale, new.scale) is None]
        if same:
            return same[0], new
    return "scale_changed", reason


def build_records(
    cells: dict[tuple[str, str], list[Cell]],
    questions: dict[str, Question],
    countries: dict,
    templates: PromptTemplates,
    *,
    seed: int,
    newer_wave: int | None,
    noise_draws: int = NOISE_DRAWS,
    progress=None,
    scale_policy: str = "drop",
) -> tuple[dict[str, list[dict]], dict]:
    """All four configs' records and the pair-level statistics for the summary."""
    # the cyclic collector runs rarely meanwhile: run_build raises its thresholds for the whole
    # build (builders/machinery/build.py, fewer_collections)
    order = {qid: i for i, qid in enumerate(questions)}
    keys = sorted(cells, key=lambda k: (0 if questions[k[0]].survey == "WVS" else 1, order[k[0]], k[1]))
    pairs, items, undated, mcq = [], [], [], []
    noise_inputs: list[tuple] = []  # (G_old, option values, pair id) per pair: F.4 noise after the loop
    no_pair = Counter()
    mcq_excluded = Counter()
    scale_changes: dict[str, dict] = {}
    iterator = progress(keys, desc="temporal pairs", unit="pair") if progress else keys
    for qid, alpha3 in iterator:
        question = questions[qid]
        country = countries[alpha3]
        by_year: dict[int, Cell] = {}
        for cell in sorted(cells[(qid, alpha3)], key=lambda c: (c.year, c.wave or 0)):
            if cell.year in by_year:  # two WVS waves with the same survey year: keep the later wave
                no_pair[f"{question.survey}:cell_with_repeated_year_dropped"] += 1
            by_year[cell.year] = cell
        cells[(qid, alpha3)] = list(by_year.values())
        chosen = choose_periods(question, cells[(qid, alpha3)], newer_wave, scale_policy)
        if isinstance(chosen[0], str):
            no_pair[f"{question.survey}:{chosen[0]}"] += 1
            if chosen[0] == "scale_changed":
                entry = scale_changes.setdefault(qid, {"pairs_not_formed": 0, "countries": [], "reasons": Counter()})
                entry["pairs_not_formed"] += 1
                entry["countries"].append(alpha3)
                entry["reasons"][chosen[1]] += 1
            continue
        old, new = chosen
        pid = pair_id_of(qid, alpha3)
        values = question.values
        labels = question.labels
        d_h = normalised_wasserstein(old.gold, new.gold, values)
        g_old, g_new = old.gold.tolist(), new.gold.tolist()  # plain lists: the writer's fast schema path takes them
        noise_inputs.append((old.gold, values, pid))
        category = shift_category(d_h)
        available = cells[(qid, alpha3)]  # in (year, wave) order already
        common = {
            "survey": question.survey, "question_id": qid, "country_iso3": alpha3,
        }
        place = {"country_name": country.name, "region": country.region}
        topic = {"topic": question.topic, "topic_category": question.category}
        pairs.append({  # in the schema's column order, as every config's records
            "pair_id": pid, "survey": question.survey, "question_id": qid, "question_text": question.text, **topic,
            "country_iso3": alpha3, "country_iso_numeric": country.iso_numeric, **place,
            "option_labels": labels, "option_values": values,
            "year_old": old.year, "year_new": new.year, "wave_old": old.wave, "wave_new": new.wave,
            "source_old": old.source, "source_new": new.source,
            "years_available": [c.year for c in available],
            "G_old": g_old, "G_new": g_new, "n_old": old.n, "n_new": new.n,
            "d_h": d_h, "shift_category": category,
            "shift_category_tighter": shift_category(d_h, "tighter"),
            "shift_category_looser": shift_category(d_h, "looser"),
            "noise_median": None, "noise_p95": None, "above_noise_p95": None,  # filled after the loop
        })
        for period, cell in (("old", old), ("new", new)):
            items.append({
                "item_id": f"{pid}__{period}", "pair_id": pid, "period": period, "year": cell.year, **common,
                **place, **topic, "shift_category": category, "d_h": d_h,
                "option_labels": labels, "option_values": values, "gold": cell.gold.tolist(), "n": cell.n,
                "messages": templates.distribution(country.name, question.text, labels, cell.year),
            })
        undated.append({
            "undated_id": pid, "pair_id": pid, **common, **place, **topic,
            "option_labels": labels, "option_values": values, "n_years": len(available),
            "years": [{"year": c.year, "wave": c.wave, "gold": c.gold.tolist(), "n": c.n} for c in available],
            "messages": templates.distribution(country.name, question.text, labels, None),
        })
        mode_old, mode_new = mode_index(g_old), mode_index(g_new)
        margin_old, margin_new = top_two_margin(g_old), top_two_margin(g_new)
        changed = mode_old != mode_new
        pairs[-1]["_mode_changed"] = changed  # for the summary; removed before writing
        if min(margin_old, margin_new) < MCQ_MARGIN - MARGIN_TOLERANCE:
            mcq_excluded["margin_below_10_points"] += 1
            continue
        if category == "moderate":
            mcq_excluded["moderate_shift"] += 1
            continue
        if category in ("strong", "very_strong") and not changed:
            mcq_excluded["shifted_mode_unchanged"] += 1
            continue
        letters = list(LETTERS[: len(labels)])
        mcq.append({
            "mcq_id": pid, "pair_id": pid, **common, **place, **topic, "shift_category": category, "d_h": d_h,
            "year_old": old.year, "year_new": new.year, "option_labels": labels, "option_letters": letters,
            "G_old": g_old, "G_new": g_new, "mode_old": mode_old, "mode_new": mode_new,
            "mode_label_old": labels[mode_old], "mode_label_new": labels[mode_new],
            "answer_old": letters[mode_old], "answer_new": letters[mode_new],
            "margin_old": margin_old, "margin_new": margin_new, "mode_changed": changed,
            "messages_old": templates.mcq(country.name, question.text, labels, old.year),
            "messages_new": templates.mcq(country.name, question.text, labels, new.year),
        })
    if pairs:
        golds, values_of, pair_ids = zip(*noise_inputs, strict=True)
        for pair, (median, p95) in zip(pairs, pair_noise(golds, values_of, pair_ids, seed, noise_draws).tolist(),
                                       strict=True):
            pair["noise_median"], pair["noise_p95"] = median, p95
            pair["above_noise_p95"] = bool(pair["d_h"] > p95)
    stats = _statistics(pairs, mcq, no_pair, mcq_excluded)
    stats["scale_changes"] = {
        qid: {"pairs_not_formed": e["pairs_not_formed"], "countries": e["countries"],
              "reasons": [{"reason": r, "pairs": n} for r, n in e["reasons"].most_common()]}
        for qid, e in scale_changes.items()
    }
    for pair in pairs:
        pair.pop("_mode_changed", None)
    return {"pairs": pairs, "items": items, "undated": undated, "mcq": mcq}, stats


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _statistics(pairs: list[dict], mcq: list[dict], no_pair: Counter, mcq_excluded: Counter) -> dict:
    categories = {
        name: dict(Counter(p[f"shift_category{'' if name == 'default' else '_' + name}"] for p in pairs))
        for name in SHIFT_BOUNDARIES
    }
    shifted = [p for p in pairs if p["shift_category"] != "stable"]
    stable = [p for p in pairs if p["shift_category"] == "stable"]
    shifted_same = sum(not p["_mode_changed"] for p in shifted)
    stable_changed = sum(p["_mode_changed"] for p in stable)
    strong = [p for p in pairs if p["shift_category"] in ("strong", "very_strong")]
    above = Counter(p["shift_category"] for p in pairs if p["above_noise_p95"])
    total = Counter(p["shift_category"] for p in pairs)
    return {
        "shift_categories": categories,
        "pairs_not_formed": dict(sorted(no_pair.items())),
        "mode_change": {
            "shifted_pairs": len(shifted),
            "shifted_pairs_same_mode": shifted_same,
            "shifted_pairs_same_mode_share": _share(shifted_same, len(shifted)),
            "strong_or_very_strong_pairs": len(strong),
            "strong_or_very_strong_same_mode": sum(not p["_mode_changed"] for p in strong),
            "stable_pairs": len(stable),
            "stable_pairs_mode_changed": stable_changed,
            "stable_pairs_mode_changed_share": _share(stable_changed, len(stable)),
            "paper": {"shifted_pairs_same_mode_share": 0.682, "stable_pairs_mode_changed_share": 0.085},
        },
        "mcq": {
            "rows": len(mcq),
            "by_shift_category": dict(Counter(r["shift_category"] for r in mcq)),
            "excluded": dict(sorted(mcq_excluded.items())),
        },
        "noise": {
            "median_of_noise_median": float(np.median([p["noise_median"] for p in pairs])) if pairs else None,
            "median_of_noise_p95": float(np.median([p["noise_p95"] for p in pairs])) if pairs else None,
            "share_above_own_p95_by_category": {c: _share(above[c], total[c]) for c in sorted(total)},
            "paper": {"median_of_noise_median": 0.016, "median_of_noise_p95": 0.034},
        },
    }
