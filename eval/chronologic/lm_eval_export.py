"""The lm-evaluation-harness task of Chronologic-EN (`histbench export lm-eval chronologic
BUILD`, written by the shared exporter histbench.eval.lm_eval_export).

`chronologic_en_likelihood`: the `questions` config, every answer option scored after
the same prompt histbench's likelihood mode scores with (the authors' own,
sources/chronologic/likelihood_prompt.yaml; its sha256 is in the task's metadata), with
every ground truth as a target (a list: choosing any of them counts). The harness's
`acc` (argmax of summed log-likelihood) and `acc_norm` (summed log-likelihood per
character) equal `histbench eval chronologic --mode likelihood --tokenisation harness`'s
`acc_sum` and `acc_norm` on the same model: the harness scores every answer token, so it
is compared with histbench's harness tokenisation, not the authors' default. The paper's
choice rule (mean per-token log-likelihood), its Brier score and the Table 3 breakdown
stay with `histbench eval chronologic`. The prompt is plain text: run the task without
--apply_chat_template.
"""

from __future__ import annotations

from pathlib import Path

from histbench.core.errors import UsageError
from histbench.eval.lm_eval_export import HarnessTask, lm_eval_exporter

TASK = "chronologic_en_likelihood"


def _delimiter(continuation: str) -> str:
    """The harness puts target_delimiter before each choice and nothing after it."""
    if not continuation.endswith("$answer") or continuation.count("$") != 1:
        raise UsageError(
            "the harness can only express a continuation of the form '<delimiter>$answer'; "
            f"this template has {continuation!r}", field="continuation",
        )
    return continuation[: -len("$answer")]


def harness_tasks(built, options) -> list[HarnessTask]:
    from .data import REMINDER_LINE, PromptTemplate

    template = PromptTemplate.load(getattr(options, "prompt_template", None))
    reminder = template.reminder
    params = {
        "lines": list(template.lines),
        "reminder_line": REMINDER_LINE,
        "reminder": None if reminder is None else {"text": reminder.text, "reasoning_types": list(reminder.reasoning_types),
                                                   "answer_contains": list(reminder.answer_contains)},
    }
    return [HarnessTask(
        name=TASK, config="questions", renderer="chronologic.likelihood", params=params, chat=False,
        target_delimiter=_delimiter(template.continuation), prompt_sha256=template.sha256,
        about="every answer option's likelihood after the authors' prompt (paper 5.1); any ground truth counts",
        same_as="`histbench eval chronologic --mode likelihood --tokenisation harness`: acc = `acc_sum`, acc_norm = `acc_norm`",
    )]


def _add_arguments(parser) -> None:
    parser.add_argument("--prompt-template", type=Path, metavar="YAML",
                        help="another likelihood prompt template (default: the one histbench scores with)")


EXPORTER = lm_eval_exporter(
    "chronologic", harness_tasks, chat=False, add_arguments=_add_arguments,
    help="lm-evaluation-harness task for the likelihood part of Chronologic-EN",
)
