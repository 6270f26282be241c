"""Chronologic-EN (Underwood et al. 2026): the question release -> `questions`, `options`, `sources`.

    make build-chronologic QUESTIONS=~/data/chronologic_en_1.0.jsonl
"""

from __future__ import annotations

from histbench.builders.machinery import shortcuts
from histbench.builders.machinery.build import BenchmarkBuilder, BuildContext
from histbench.builders.machinery.writer import BuildOutput

from .records import build_summary, option_records, question_record, source_records, summary_markdown
from .release import load_release


class ChronologicBuilder(BenchmarkBuilder):
    name = "chronologic"
    version = "1.0.0"
    title = "Chronologic-EN: English writing and knowledge in context, 1831-1930"
    default_config = "questions"

    def build(self, ctx: BuildContext) -> BuildOutput:
        path = ctx.path("questions")
        questions = load_release(path)
        questions.sort(key=lambda q: q["question_number"])
        ctx.log(f"read {len(questions)} questions from {path.name}")
        question_rows = [question_record(q) for q in questions]
        option_rows = [row for q in questions for row in option_records(q)]
        sources, missing = source_records(questions)
        summary = build_summary(questions, option_rows, sources, missing)
        summary["shortcut_audit"] = shortcut_audit(question_rows)
        for rule in shortcuts.failing(summary["shortcut_audit"]):
            ctx.log(f"shortcut audit (reported, not enforced): {rule['title']} beats chance")
        if summary["extra_fields"]:
            ctx.log("unknown fields kept in extra_fields: " + ", ".join(summary["extra_fields"]))
        return BuildOutput(
            configs={
                "questions": {"test": question_rows},
                "options": {"test": option_rows},
                "sources": {"test": sources},
            },
            summary=summary,
            summary_markdown=summary_markdown(summary) + "\n\n" + shortcuts.markdown(summary["shortcut_audit"], "options"),
        )


def shortcut_audit(question_rows: list[dict]) -> dict:
    """The shortcut audit (histbench.builders.machinery.shortcuts) of the answer options as
    the likelihood evaluation offers them: every ground truth counts as right, the context
    is the metadata frame and the question. Reported, not enforced: the questions and
    their options are the authors' release, which histbench does not construct or change."""
    items = []
    for row in question_rows:
        truths = list(row["ground_truth_indices"])
        if not truths or len(row["answer_strings"]) < 2:
            continue
        context = " ".join(t for t in (row.get("metadata_frame"), row.get("main_question")) if t)
        items.append(shortcuts.Choice(row["answer_strings"], truths[0], context or None, also_correct=truths[1:]))
    unseen = "the options are scored one at a time by likelihood (free generation shows none), so their order is never seen"
    result = shortcuts.audit_choices(items, exempt={"first_position": unseen, "last_position": unseen,
                                                    "most_common_gold_position": unseen})
    return shortcuts.record(result, allow=False, enforced=False,
                            why_not="Chronologic-EN's questions and options are the authors' released dataset; "
                                    "histbench does not construct them")


BUILDER = ChronologicBuilder()
