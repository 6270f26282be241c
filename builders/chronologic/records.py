"""Release questions -> records of the `questions`, `options` and `sources` configs, and
the build summary (Table 1 counts and everything a rule set aside or noticed)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from .release import OPTIONAL_FIELDS, ReleaseQuestion
from .taxonomy import (
    FAMILIES,
    GROUND_TRUTH_PROBABILITY,
    GROUP_OF,
    GROUP_TITLES,
    GROUPS,
    PAPER_TABLE1,
    PAPER_TOTAL,
    REASONING_TYPES,
    TYPE_LABELS,
    parse_answer_type,
)

RELEASE_ORDER = (
    "question_number", "metadata_frame", "substantive_metadata_frame", "main_question", "frame_type",
    "reasoning_type", "question_category", "question_process", "answer_strings", "answer_probabilities",
    "answer_types", "answer_length", "partial_credit", "reject_reasons", "source_title", "source_author",
    "source_date", "source_genre", "source_htid", "author_nationality", "author_birth", "author_profession",
    "manual_comment", "added_answers", "period_words_in_main_question",
)
SOURCE_META = (
    "source_title", "source_author", "source_date", "source_genre",
    "author_nationality", "author_birth", "author_profession",
)
_HATHITRUST = re.compile(r"^[a-z0-9]{2,8}\.[^\s.][^\s]*$")


def ground_truth_indices(probabilities: list[float]) -> list[int]:
    """Options with probability 1.0 are ground truths (paper section 4.3)."""
    return [i for i, p in enumerate(probabilities) if p == GROUND_TRUTH_PROBABILITY]


def question_record(question: ReleaseQuestion) -> dict:
    fields = question.fields
    truths = ground_truth_indices(fields["answer_probabilities"])
    record = {name: fields[name] for name in RELEASE_ORDER}
    record.update({
        "group": GROUP_OF[fields["reasoning_type"]],
        "n_options": len(fields["answer_strings"]),
        "ground_truth_indices": truths,
        "n_ground_truths": len(truths),
        "answer_families": [parse_answer_type(t).family for t in fields["answer_types"]],
        "extra_fields": json.dumps(question.extra, ensure_ascii=False, sort_keys=True),
    })
    return record


def option_records(question: ReleaseQuestion) -> list[dict]:
    fields = question.fields
    added = {a["index"]: a for a in (fields["added_answers"] or []) if a["index"] is not None}
    truths = ground_truth_indices(fields["answer_probabilities"])
    reasons = fields["reject_reasons"]
    out = []
    for index, (text, prob, raw_type) in enumerate(
        zip(fields["answer_strings"], fields["answer_probabilities"], fields["answer_types"], strict=True)
    ):
        parsed = parse_answer_type(raw_type)
        extra = added.get(index)
        out.append({
            "question_number": fields["question_number"],
            "option_index": index,
            "answer_string": text,
            "answer_probability": prob,
            "answer_type": raw_type,
            "is_ground_truth": index in truths,
            "answer_family": parsed.family,
            "is_stylistic": parsed.stylistic,
            "answer_generator": parsed.generator,
            "answer_year": parsed.year,
            "answer_variants": list(parsed.variants),
            "reject_reason": None if reasons is None else reasons[index],
            "added_by_model": None if extra is None else extra["candidate_model"],
            "added_approving_judges": None if extra is None else extra["approving_judges"],
            "reasoning_type": fields["reasoning_type"],
            "group": GROUP_OF[fields["reasoning_type"]],
            "frame_type": fields["frame_type"],
            "partial_credit": fields["partial_credit"],
            "n_options": len(fields["answer_strings"]),
            "n_ground_truths": len(truths),
            "n_characters": len(text),
            "n_words": len(text.split()),
        })
    return out


def volume_id_kind(htid: str, placeholders: set[str]) -> str:
    """'hathitrust' (namespace.id), 'placeholder' (the id is a question category or
    reasoning type, i.e. no volume: e.g. abstention questions) or 'other'."""
    if htid in placeholders:
        return "placeholder"
    return "hathitrust" if _HATHITRUST.match(htid) else "other"


def source_records(questions: list[ReleaseQuestion]) -> tuple[list[dict], int]:
    """One row per source_htid; returns the rows and how many questions have no htid."""
    by_id: dict[str, list[ReleaseQuestion]] = defaultdict(list)
    missing = 0
    for question in questions:
        htid = question["source_htid"]
        if htid is None or htid == "":
            missing += 1
            continue
        by_id[htid].append(question)
    placeholders = set(REASONING_TYPES) | {q["question_category"] for q in questions if q["question_category"]}
    rows = []
    for htid in sorted(by_id):
        members = sorted(by_id[htid], key=lambda q: q["question_number"])
        variants = Counter(tuple(q[name] for name in SOURCE_META) for q in members)
        # The most frequent description wins; ties go to the one seen first (by question number).
        order = {v: i for i, v in reversed(list(enumerate(tuple(q[n] for n in SOURCE_META) for q in members)))}
        chosen = min(variants, key=lambda v: (-variants[v], order[v]))
        listed = sorted(variants, key=lambda v: (-variants[v], order[v]))
        rows.append({
            "source_htid": htid,
            "volume_id_kind": volume_id_kind(htid, placeholders),
            **dict(zip(SOURCE_META, chosen, strict=True)),
            "question_numbers": [q["question_number"] for q in members],
            "n_questions": len(members),
            "reasoning_types": sorted({q["reasoning_type"] for q in members}, key=REASONING_TYPES.index),
            "n_metadata_variants": len(variants),
            "metadata_variants": json.dumps(
                [dict(zip(SOURCE_META, v, strict=True), n_questions=variants[v]) for v in listed], ensure_ascii=False
            ),
        })
    return rows, missing


def table1_rows(questions: list[ReleaseQuestion]) -> list[dict]:
    """Counts per reasoning type in Table 1 order, with group subtotals."""
    total = len(questions)
    counts = Counter(q["reasoning_type"] for q in questions)
    rows = []
    for group in GROUPS:
        members = [t for t in REASONING_TYPES if GROUP_OF[t] == group]
        n_group = sum(counts[t] for t in members)
        rows.append({"level": "group", "name": group, "label": GROUP_TITLES[group], "n": n_group,
                     "percent": round(100.0 * n_group / total, 1)})
        for rtype in members:
            rows.append({"level": "type", "name": rtype, "label": TYPE_LABELS[rtype], "n": counts[rtype],
                         "percent": round(100.0 * counts[rtype] / total, 1)})
    rows.append({"level": "total", "name": "total", "label": "Total", "n": total, "percent": 100.0})
    return rows


def build_summary(questions: list[ReleaseQuestion], options: list[dict], sources: list[dict],
                  missing_htid: int) -> dict:
    counts = Counter(q["reasoning_type"] for q in questions)
    families = Counter(o["answer_family"] for o in options)
    unparsed = Counter(o["answer_type"] for o in options if o["answer_family"] == "other")
    mismatched = [
        o["question_number"] for o in options
        if o["is_ground_truth"] != (o["answer_type"] == "ground_truth")
    ]
    extras = Counter(key for q in questions for key in q.extra)
    absent = {name: sum(1 for q in questions if name in q.absent) for name in OPTIONAL_FIELDS}
    summary = {
        "questions": len(questions),
        "options": len(options),
        "sources": len(sources),
        "table1": table1_rows(questions),
        "reasoning_types": {t: counts[t] for t in REASONING_TYPES},
        "groups": {g: sum(counts[t] for t in REASONING_TYPES if GROUP_OF[t] == g) for g in GROUPS},
        "frame_types": dict(sorted(Counter(q["frame_type"] for q in questions).items())),
        "partial_credit": {"pass_fail": sum(q["partial_credit"] == 0 for q in questions),
                           "partial_credit": sum(q["partial_credit"] == 1 for q in questions)},
        "options_per_question": dict(sorted(Counter(len(q["answer_strings"]) for q in questions).items())),
        "ground_truths_per_question": dict(sorted(Counter(
            len(ground_truth_indices(q["answer_probabilities"])) for q in questions).items())),
        "partly_acceptable_options": sum(0.0 < o["answer_probability"] < 1.0 for o in options),
        "answer_families": {f: families[f] for f in FAMILIES if families[f]},
        "unparsed_answer_types": dict(sorted(unparsed.items())),
        "ground_truth_type_mismatches": sorted(set(mismatched)),
        "questions_with_added_answers": sum(bool(q["added_answers"]) for q in questions),
        "questions_with_substantive_frame": sum(q["substantive_metadata_frame"] is not None for q in questions),
        "absent_optional_fields": {k: v for k, v in absent.items() if v},
        "extra_fields": dict(sorted(extras.items())),
        "questions_without_source_htid": missing_htid,
        "sources_by_id_kind": dict(sorted(Counter(s["volume_id_kind"] for s in sources).items())),
        "sources_with_metadata_variants": sum(s["n_metadata_variants"] > 1 for s in sources),
        "excluded": {"questions": 0, "options": 0},
    }
    if len(questions) == PAPER_TOTAL:
        summary["matches_paper_table1"] = all(counts[t] == n for t, n in PAPER_TABLE1.items())
    return summary


def summary_markdown(summary: dict) -> str:
    from histbench.core.markdown import markdown_table

    lines = [
        f"{summary['questions']:,} questions, {summary['options']:,} answer options, "
        f"{summary['sources']:,} source volumes; nothing excluded "
        "(every question of the release is kept, and a broken invariant stops the build).",
        "",
        "Reasoning types (Table 1 layout):",
        "",
    ]
    table = []
    for row in summary["table1"]:
        label = f"**{row['label']}**" if row["level"] != "type" else row["label"]
        table.append({"Reasoning type": label, "N": row["n"], "%": f"{row['percent']:.1f}"})
    lines.append(markdown_table(table, ["Reasoning type", "N", "%"]))
    if "matches_paper_table1" in summary:
        lines += ["", "Matches the paper's Table 1 counts: "
                  + ("yes" if summary["matches_paper_table1"] else "**no**") + "."]
    pc = summary["partial_credit"]
    lines += [
        "",
        f"- scoring path: {pc['pass_fail']} pass/fail, {pc['partial_credit']} partial credit",
        "- options per question: " + ", ".join(f"{k}: {v}" for k, v in summary["options_per_question"].items()),
        "- ground truths per question: "
        + ", ".join(f"{k}: {v}" for k, v in summary["ground_truths_per_question"].items()),
        f"- partly acceptable options (0 < probability < 1): {summary['partly_acceptable_options']}",
        "- frame types: " + ", ".join(f"{k}: {v}" for k, v in summary["frame_types"].items()),
        "- answer families: " + ", ".join(f"{k}: {v}" for k, v in summary["answer_families"].items()),
        f"- questions with a substantive metadata frame: {summary['questions_with_substantive_frame']}; "
        f"with added answers: {summary['questions_with_added_answers']}",
        "- source ids: " + ", ".join(f"{k}: {v}" for k, v in summary["sources_by_id_kind"].items())
        + f"; {summary['sources_with_metadata_variants']} with differing descriptions across questions",
    ]
    if summary["unparsed_answer_types"]:
        lines.append("- answer types of no known family (kept, family 'other'): "
                     + ", ".join(f"{k} ({v})" for k, v in summary["unparsed_answer_types"].items()))
    if summary["ground_truth_type_mismatches"]:
        lines.append("- questions where probability 1.0 and type 'ground_truth' disagree: "
                     + ", ".join(map(str, summary["ground_truth_type_mismatches"])))
    if summary["extra_fields"]:
        lines.append("- unknown fields kept in `extra_fields`: "
                     + ", ".join(f"{k} ({v} questions)" for k, v in summary["extra_fields"].items()))
    if summary["questions_without_source_htid"]:
        lines.append(f"- questions without a source_htid (in no `sources` row): {summary['questions_without_source_htid']}")
    return "\n".join(lines)
