"""The lm-evaluation-harness tasks of the Historical Italian benchmark (`histbench export
lm-eval italian BUILD`, written by the shared exporter histbench.eval.lm_eval_export).

One task per task with a multiple-choice form (tasks.LIKELIHOOD_TASKS): the prompt is the
one `histbench eval italian` asks (sources/italian/prompts.yaml, section eval, verbatim
in each task's metadata), every option written as the prompt asks for the answer
({"answer": "B"}). The ranking task's options are every order of its four snippets
({"order": ["B", "A", "D", "C"]}, 24 options), scored by the Spearman correlation of the
likeliest order with the true one (the paper's metric, 3.3), so its number is a mean
Spearman, not an accuracy. `histbench eval italian --mode likelihood` gives the same
numbers (accuracy = acc, accuracy_norm = acc_norm, mean_spearman). The two NER tasks have
no multiple-choice form (the answer is a free list of entities) and are not exported.
"""

from __future__ import annotations

from histbench.eval.lm_eval_export import HarnessTask, lm_eval_exporter

from .tasks import LIKELIHOOD_TASKS, load_prompts, prompt_text

ABOUT = {
    "wsd": "word sense disambiguation (3.1): the meaning of a phrase in Manzoni's context, six options",
    "chrono_ranking": "chronological ranking (3.3): every order of four snippets; metric the likeliest order's Spearman",
    "authorship": "authorship verification (3.3): which of four snippets is by another author",
    "head": "head prediction (3.4): the syntactic head of a word in Cavalcanti",
    "deprel": "dependency relation (3.4): the relation between a word and its head",
    "intertext": "intertextuality (3.5): which of two passages Dante's passage echoes",
}


def harness_tasks(built, options) -> list[HarnessTask]:
    from histbench.eval.signature import hash_text

    prompts = load_prompts()
    digest = hash_text(prompt_text(prompts))
    tasks = []
    for task in LIKELIHOOD_TASKS:
        spec = prompts[task]
        ranking = task == "chrono_ranking"
        metric = "mean_spearman" if ranking else "accuracy"
        tasks.append(HarnessTask(
            name=f"italian_{task}", config=task, renderer="italian.mcq",
            params={"task": task, "system": spec["system"], "user": spec["user"]},
            metrics=("mean_spearman",) if ranking else ("acc", "acc_norm"),
            process_results="process_results_order" if ranking else None, prompt_sha256=digest,
            about=ABOUT[task],
            same_as=f"`histbench eval italian --mode likelihood`: `{metric}`" + ("" if ranking else ", `accuracy_norm`"),
        ))
    return tasks


EXPORTER = lm_eval_exporter("italian", harness_tasks,
                            help="lm-evaluation-harness tasks for the multiple-choice tasks of the Historical Italian benchmark")
