"""The lm-evaluation-harness task of ChronoCulture (`histbench export lm-eval
chronoculture BUILD`, written by the shared exporter histbench.eval.lm_eval_export).

`chronoculture_mcq`: the modal-answer prompts of the `mcq` config (appendix A.5), both of
each row (the old and the new survey year: two documents per row), exactly the build's
messages (the B.1 system message and the modal-answer user message); the options are the
answers the prompt asks for ({"answer": "A"}, {"answer": "B"}, ...), the target the
gold distribution's mode. The harness's `acc` / `acc_norm` (share of prompts whose
likeliest option, summed or per character, is the mode) equal `histbench eval
chronoculture --mode likelihood`'s `accuracy` / `accuracy_norm`; the pair-level cells of
Table 5 (both periods right, among pairs with at least one right) stay with histbench,
which prints them for the same choices.
"""

from __future__ import annotations

from histbench.eval.lm_eval_export import HarnessTask, lm_eval_exporter


def harness_tasks(built, options) -> list[HarnessTask]:
    sources = built.manifest.get("chronoculture_sources") or {}
    return [HarnessTask(
        name="chronoculture_mcq", config="mcq", renderer="chronoculture.mcq", params={},
        prompt_sha256=(sources.get("prompt_templates") or {}).get("sha256"),
        about="modal-answer prompts (A.5), old and new year of each pair: the likeliest option against the gold mode",
        same_as="`histbench eval chronoculture --mode likelihood`: `accuracy`, `accuracy_norm` (chronoculture.json)",
    )]


EXPORTER = lm_eval_exporter("chronoculture", harness_tasks,
                            help="lm-evaluation-harness task for ChronoCulture's modal-answer (mcq) prompts")
