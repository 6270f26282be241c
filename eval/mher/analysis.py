"""Every number of the MHER report (Tables 2-7 and sections 7-8) from runs and the build.

Models (generative runs and reference systems) are analysed together, because the
paired bootstrap shares one set of resamples across all of them (and the entity-cluster
bootstrap one set of person draws).

The Bonferroni family (sections 5.6, 6.3, 8.4: "across the five prespecified model-level
primary comparisons") is the generative models of the report, not every system in it:
reference systems and baselines are outside it, unless the user names the family
(`family`, e.g. the systems of a demo) or its size (`family_size`, a family fixed in
advance that is larger than the runs at hand, e.g. 5 when one of the paper's models is
re-run). Systems outside the family get no adjusted p-value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histbench.core.errors import EvalError

from . import metrics as M
from .data import Aligned, Bench, Prediction, align

PAIRED = ("name_only", "context_only", "source_grounded", "shuffled_a", "shuffled_b", "shuffled_c")
SHUFFLES = ("shuffled_a", "shuffled_b", "shuffled_c")
CHALLENGES = ("cross_language", "cross_script", "near_surface", "identical_surface")


@dataclass
class System:
    label: str
    system: str
    predictions: list[Prediction]
    kind: str = "model"


def _reorder(aligned: Aligned, ids: list[str]) -> Aligned:
    index = {item: i for i, item in enumerate(aligned.item_ids)}
    order = [index[i] for i in ids]
    return Aligned([aligned.item_ids[i] for i in order], None if aligned.gold is None else aligned.gold[order],
                   aligned.action[order], aligned.probabilities[order], aligned.valid[order],
                   [aligned.records[i] for i in order])


def baseline_table(bench: Bench, predictions: list[Prediction], info: dict) -> list[dict]:
    """Table 2 rows: every baseline on its condition, TEST (and DEV for reference)."""
    rows = []
    for name, described in info.get("systems", {}).items():
        condition = described["condition"]
        row = {"system": name, "label": described.get("label", name), "evidence": described.get("evidence"),
               "condition": condition, "dev_fit_accuracy": described.get("dev_accuracy"),
               "threshold": described.get("threshold"), "model": described.get("model")}
        for split in ("dev", "test"):
            aligned = align(bench, predictions, name, condition, split)
            if aligned is None:
                continue
            row[split] = M.binary_metrics(aligned.gold, aligned.action)
        rows.append(row)
    return rows


def bonferroni_family(systems: list[System], named: list[str] | None = None,
                      family_size: int | None = None) -> dict:
    """The family of the Bonferroni adjustment: the named systems, or every generative
    model (kind "model"); `family_size` fixes the number of tests m (at least the family)."""
    labels = [s.label for s in systems]
    if named:
        unknown = [n for n in named if n not in labels]
        if unknown:
            raise EvalError(f"--bonferroni-family names {', '.join(map(repr, unknown))}, not a system of these runs "
                            f"(systems: {', '.join(map(repr, labels))})", field="--bonferroni-family")
        members = list(dict.fromkeys(named))
    else:
        members = [s.label for s in systems if s.kind == "model"]
    if family_size is not None and family_size < len(members):
        raise EvalError(f"--bonferroni-tests {family_size} is smaller than the family ({len(members)} systems)",
                        field="--bonferroni-tests")
    return {"members": members, "size": family_size, "named": bool(named)}


def analyse_models(bench: Bench, systems: list[System], resamples: int = M.DEFAULT_BOOTSTRAP, seed: int = 0,
                   thinning: int = 2000, split: str = "test", family: list[str] | None = None,
                   family_size: int | None = None, cluster_estimator: str = M.DEFAULT_CLUSTER_ESTIMATOR) -> dict:
    if not systems:
        return {}
    bonferroni = bonferroni_family(systems, family, family_size)
    subset_ids = [r["pair_id"] for r in bench.items("source_grounded", split)]
    subset = set(subset_ids)
    per_model: dict[str, dict] = {}
    columns: list[np.ndarray] = []
    column_names: list[tuple[str, str]] = []
    comparisons: list[tuple[int, int]] = []
    comparison_names: list[tuple[str, str, str]] = []

    for sys in systems:
        result: dict = {"label": sys.label, "kind": sys.kind, "system": sys.system}
        full = align(bench, sys.predictions, sys.system, "name_only", split)
        if full is not None:
            result["name_only_full"] = M.binary_metrics(full.gold, full.action, full.probabilities, full.valid)
            result["slices_name_only_full"] = _slices(full)
            same = full.gold == M.SAME
            result["prominence"] = M.prominence_spearman(
                full.correct[same], [r["person_a"] for r, s in zip(full.records, same, strict=True) if s],
                [r["prominence_a"] for r, s in zip(full.records, same, strict=True) if s])
        paired: dict[str, Aligned] = {}
        for condition in PAIRED:
            restrict = subset if condition == "name_only" else None
            aligned = align(bench, sys.predictions, sys.system, condition, split, restrict=restrict)
            if aligned is None:
                continue
            paired[condition] = _reorder(aligned, subset_ids)
            result.setdefault("paired", {})[condition] = M.binary_metrics(
                paired[condition].gold, paired[condition].action, paired[condition].probabilities,
                paired[condition].valid)
            result.setdefault("slices_paired", {})[condition] = _slices(paired[condition])
        unresolved = align(bench, sys.predictions, sys.system, "unresolved", "test") if split == "test" else None
        if unresolved is not None:
            result["unresolved"] = M.unresolved_summary(unresolved.action, unresolved.probabilities)
        result["_paired"] = paired
        per_model[sys.label] = result

        index = {}
        for condition, aligned in paired.items():
            index[condition] = len(columns)
            columns.append(aligned.correct.astype(float))
            column_names.append((sys.label, condition))
        if all(s in paired for s in SHUFFLES):
            index["shuffle_mean"] = len(columns)
            columns.append(np.mean([paired[s].correct.astype(float) for s in SHUFFLES], axis=0))
            column_names.append((sys.label, "shuffle_mean"))
        if "source_grounded" in index:
            for before in ("name_only", "context_only", *SHUFFLES, "shuffle_mean"):
                if before in index:
                    comparisons.append((index["source_grounded"], index[before]))
                    comparison_names.append((sys.label, "source_grounded", before))

    boot = None
    if columns:
        matrix = np.column_stack(columns)
        boot = M.paired_bootstrap(matrix, comparisons, n_resamples=resamples, seed=seed)
        for (label, condition), acc in zip(column_names, boot["accuracy"], strict=True):
            per_model[label].setdefault("bootstrap_accuracy", {})[condition] = acc
        for (label, after, before), diff in zip(comparison_names, boot["differences"], strict=True):
            per_model[label].setdefault("bootstrap_difference", {})[f"{after}-{before}"] = diff

    labels = list(per_model)
    gain_columns: list[np.ndarray] = []
    gain_labels: list[str] = []
    entities: list[tuple[str, str]] = []
    for label in labels:
        result = per_model[label]
        paired = result.pop("_paired")
        if "source_grounded" not in paired:
            continue
        source = paired["source_grounded"]
        for before in ("name_only", "context_only", *SHUFFLES):
            if before in paired:
                result.setdefault("transitions", {})[before] = M.transitions(paired[before].correct, source.correct)
        if "name_only" in paired:
            gains = source.correct.astype(float) - paired["name_only"].correct.astype(float)
            entities = [(r["person_a"], r["person_b"]) for r in source.records]   # the same items for every model
            gain_columns.append(gains)
            gain_labels.append(label)
            result["entity_robustness"] = {
                "pair_gain": float(gains.mean()),
                "thinning": M.one_pair_per_entity(gains, entities, repetitions=thinning, seed=seed),
                "leave_one_entity_out": M.leave_one_entity_out(gains, entities),
                "repeated_entities": _repeated_entities(entities),
            }
        result["source_errors"] = _error_structure(source, paired.get("context_only"))
    if gain_columns:   # one set of person draws for every model (section 7.4)
        clusters = M.cluster_bootstrap(np.column_stack(gain_columns), entities, n_resamples=resamples, seed=seed,
                                       estimator=cluster_estimator)
        for label, cluster in zip(gain_labels, clusters, strict=True):
            per_model[label]["entity_robustness"]["cluster_bootstrap"] = cluster

    # Bonferroni over the family of each primary comparison (section 5.6), and of prominence (8.4)
    members = set(bonferroni["members"])
    for before in ("name_only", "context_only", *SHUFFLES):
        holders = [lab for lab in labels if lab in members and before in per_model[lab].get("transitions", {})]
        m = bonferroni["size"] or len(holders)
        adjusted = dict(zip(holders, M.bonferroni([per_model[lab]["transitions"][before]["mcnemar_p"]
                                                   for lab in holders], m), strict=True))
        for lab in labels:
            t = per_model[lab].get("transitions", {}).get(before)
            if t is not None:
                t["mcnemar_p_bonferroni"] = adjusted.get(lab)
                t["bonferroni_tests"] = m if lab in adjusted else None
    holders = [lab for lab in labels if lab in members and "prominence" in per_model[lab]]
    m = bonferroni["size"] or len(holders)
    adjusted = dict(zip(holders, M.bonferroni([per_model[lab]["prominence"]["p"] for lab in holders], m),
                        strict=True))
    for lab in labels:
        if "prominence" in per_model[lab]:
            p = adjusted.get(lab)
            per_model[lab]["prominence"]["p_bonferroni"] = None if p is None or not np.isfinite(p) else p
            per_model[lab]["prominence"]["bonferroni_tests"] = m if lab in adjusted else None
    return {"split": split, "paired_items": len(subset_ids), "resamples": resamples, "seed": seed,
            "thinning_repetitions": thinning, "cluster_estimator": cluster_estimator, "bonferroni": bonferroni,
            "models": per_model, "aggregate": cross_model_aggregate(per_model, bonferroni["members"])}


AGGREGATE_CONDITIONS = ("name_only", "context_only", "source_grounded")


def cross_model_aggregate(per_model: dict, members: list[str]) -> dict:
    """The counts the paper adds up over its models (sections 8.1, 7.3, 8.5): per challenge
    slice of the paired subset and condition, model-item decisions that are correct,
    abstentions and false same merges (identical-surface: 0/25 under Name-only, 24/25
    under Source-grounded with one abstention; near-surface 0/35), and the unresolved
    set's abstentions (50/50). Summed over the Bonferroni family's systems."""
    systems = [m for m in members if m in per_model]
    out: dict = {"systems": systems, "slices": {}, "unresolved": None}
    if not systems:
        return out
    for name in CHALLENGES:
        rows = {}
        for condition in AGGREGATE_CONDITIONS:
            cells = [per_model[m].get("slices_paired", {}).get(condition, {}).get(name) for m in systems]
            cells = [c for c in cells if c]
            if len(cells) == len(systems):
                rows[condition] = {key: sum(c.get(key, 0) for c in cells)
                                   for key in ("n", "correct", "abstained", "false_same", "missed_same")}
        out["slices"][name] = rows
    unresolved = [per_model[m].get("unresolved") for m in systems]
    if all(unresolved):
        out["unresolved"] = {"n": sum(u["n"] for u in unresolved), "ambiguous": sum(u["ambiguous"] for u in unresolved)}
    return out


def _repeated_entities(entities) -> int:
    counts: dict[str, int] = {}
    for item in entities:
        for person in set(item):
            counts[person] = counts.get(person, 0) + 1
    return sum(1 for c in counts.values() if c > 1)


def _slices(aligned: Aligned) -> dict:
    correct = aligned.correct
    out = {}
    for name in CHALLENGES:
        mask = np.array([bool(r["challenge"][name]) for r in aligned.records], dtype=bool)
        out[name] = M.slice_accuracy(correct, mask, aligned.action, aligned.gold)
    for stratum in ("head", "mid", "long-tail"):
        mask = np.array([r["label"] == "same" and r["prominence_a"] == stratum for r in aligned.records], dtype=bool)
        out[f"same_{stratum}"] = M.slice_accuracy(correct, mask)
    return out


def _error_structure(source: Aligned, context: Aligned | None) -> dict:
    """Source-grounded errors by direction, split into name-induced (Context-only was
    correct) and persistent (Context-only was also wrong) - the automatic part of Table 7."""
    wrong = ~source.correct
    kinds = {
        "false_same_merge": (source.action == M.SAME) & (source.gold == M.DIFFERENT),
        "missed_same": (source.action == M.DIFFERENT) & (source.gold == M.SAME),
        "abstention": source.action == M.AMBIGUOUS,
    }
    out = {"errors": int(wrong.sum())}
    for name, mask in kinds.items():
        row = {"total": int(mask.sum())}
        if context is not None:
            row["name_induced"] = int((mask & context.correct).sum())
            row["persistent"] = int((mask & ~context.correct).sum())
        out[name] = row
    out["items"] = [
        {"pair_id": source.item_ids[i], "gold": "same" if source.gold[i] == M.SAME else "different",
         "action": ("same", "different", "ambiguous")[source.action[i]],
         "context_only_correct": None if context is None else bool(context.correct[i])}
        for i in np.flatnonzero(wrong)
    ]
    return out
