"""Chronologic-EN (Underwood et al. 2026): the question release -> `questions`, `options`, `sources`.

    make build-chronologic QUESTIONS=~/data/chronologic_en_1.0.jsonl
"""

from __future__ import annotations

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
        if summary["extra_fields"]:
            ctx.log("unknown fields kept in extra_fields: " + ", ".join(summary["extra_fields"]))
        return BuildOutput(
            configs={
                "questions": {"test": question_rows},
                "options": {"test": option_rows},
                "sources": {"test": sources},
            },
            summary=summary,
            summary_markdown=summary_markdown(summary),
        )


BUILDER = ChronologicBuilder()
