"""inspect tasks of the Historical Italian benchmark: `inspect eval histbench/italian_<task>`.

Each sample is one row of the task's config, asked exactly as `histbench eval italian`
asks it: the system and user messages of sources/italian/prompts.yaml (section eval),
greedy decoding (temperature 0, top-p 1) and histbench's token budget (tasks.max_tokens:
32 for a choice, 64 for an order, the letter-length budget for NER). The scorer parses
each answer with histbench's parser (tasks.parser_for); an answer cut off at its budget
is a failure, as in histbench. The metric is histbench's own (tasks.score_task over the
scored rows): accuracy with its bootstrap interval, mean Spearman, or strict and fuzzy
NER precision / recall / F1 with the ceiling, and the counts of parse failures and cut-off
answers.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from .common import (
    GENERATE,
    build_rows,
    chat_input,
    cut_off,
    flatten,
    generate_config,
    histbench_generate,
    open_build,
)


def italian_samples(task_name: str, dataset: str | None, revision: str | None, ner_tokens_per_char: float) -> list[Sample]:
    from histbench.eval.italian.tasks import NER_TASKS, gold_choice, load_prompts, max_tokens, messages

    prompts = load_prompts()
    samples = []
    for n, row in enumerate(build_rows("italian", dataset, revision, task_name)):
        if task_name in NER_TASKS:
            target = f"{len(row['entities'])} entities"
        elif task_name == "chrono_ranking":
            target = ",".join(str(i) for i in row["gold_order"])
        else:
            target = str(gold_choice(task_name, row))
        samples.append(Sample(
            id=row["id"], input=chat_input(messages(task_name, row, prompts)), target=target,
            metadata={"row": n, GENERATE: generate_config(max_tokens=max_tokens(task_name, row, ner_tokens_per_char))}))
    return samples


@scorer(metrics=[])
def italian_answer(task_name: str, dataset: str | None = None, revision: str | None = None):
    """histbench's parser on the answer; the value is the row's own score (1/0, its
    Spearman correlation, or its strict F1)."""
    from histbench.eval.italian.tasks import CUT_OFF, NER_TASKS, parser_for, score_task

    rows = build_rows("italian", dataset, revision, task_name)

    class _Text:
        def __init__(self, text):
            self.text = text

    async def score(state: TaskState, target: Target) -> Score:
        n = state.metadata["row"]
        row = rows[n]
        prediction, failure = None, None
        if state.output.error:
            failure = f"request failed: {state.output.error}"
        elif cut_off(state):
            failure = CUT_OFF
        else:
            try:
                prediction = parser_for(task_name, row)(_Text(state.output.completion))
            except (ValueError, TypeError, KeyError) as exc:
                failure = f"unparsed: {exc}"
        metrics, _ = score_task(task_name, [row], [prediction], [failure])
        value = metrics["strict"]["f1"] if task_name in NER_TASKS else (
            metrics["mean_spearman"] if task_name == "chrono_ranking" else metrics["accuracy"])
        return Score(value=float(value), answer=state.output.completion,
                     metadata={"row": n, "prediction": prediction, "failure": failure})

    return score


@metric
def italian_metrics(task_name: str, dataset: str | None = None, revision: str | None = None) -> Metric:
    """histbench's metrics of the task (tasks.score_task) over the scored rows."""
    from histbench.eval.italian.tasks import score_task

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = build_rows("italian", dataset, revision, task_name)
        ordered = sorted(scores, key=lambda s: s.score.metadata["row"])
        metrics, _ = score_task(task_name, [rows[s.score.metadata["row"]] for s in ordered],
                                [s.score.metadata["prediction"] for s in ordered],
                                [s.score.metadata["failure"] for s in ordered])
        return flatten(metrics, skip=("per_type", "entity_types", "types_without_gold", "invented_types"))

    return compute


def italian_task(task_name: str, dataset: str | None, revision: str | None, ner_tokens_per_char: float | None) -> Task:
    from histbench.eval.italian.tasks import NER_TOKENS_PER_CHAR

    built = open_build("italian", dataset, revision)
    if task_name not in built.configs:
        raise ValueError(f"the build {built.path} has no {task_name!r} config")
    per_char = NER_TOKENS_PER_CHAR if ner_tokens_per_char is None else float(ner_tokens_per_char)
    return Task(dataset=MemoryDataset(italian_samples(task_name, dataset, revision, per_char), name=f"italian_{task_name}"),
                solver=histbench_generate(), scorer=italian_answer(task_name, dataset, revision),
                metrics=[italian_metrics(task_name, dataset, revision)],
                metadata={"histbench": {"benchmark": "italian", "task": task_name, "build": built.identity()}})


@task
def italian_wsd(dataset: str | None = None, revision: str | None = None) -> Task:
    """Word sense disambiguation (paper 3.1): accuracy."""
    return italian_task("wsd", dataset, revision, None)


@task
def italian_ner_classense(dataset: str | None = None, revision: str | None = None,
                          ner_tokens_per_char: float | None = None) -> Task:
    """NER, Canneti-Fiacchi letters (3.2): strict and fuzzy macro P/R/F1."""
    return italian_task("ner_classense", dataset, revision, ner_tokens_per_char)


@task
def italian_ner_bellini(dataset: str | None = None, revision: str | None = None,
                        ner_tokens_per_char: float | None = None) -> Task:
    """NER, Bellini letters (3.2): strict and fuzzy macro P/R/F1."""
    return italian_task("ner_bellini", dataset, revision, ner_tokens_per_char)


@task
def italian_chrono_ranking(dataset: str | None = None, revision: str | None = None) -> Task:
    """Chronological ranking (3.3): mean Spearman correlation."""
    return italian_task("chrono_ranking", dataset, revision, None)


@task
def italian_authorship(dataset: str | None = None, revision: str | None = None) -> Task:
    """Authorship verification (3.3): accuracy."""
    return italian_task("authorship", dataset, revision, None)


@task
def italian_head(dataset: str | None = None, revision: str | None = None) -> Task:
    """Head prediction (3.4): accuracy."""
    return italian_task("head", dataset, revision, None)


@task
def italian_deprel(dataset: str | None = None, revision: str | None = None) -> Task:
    """Dependency relation prediction (3.4): accuracy."""
    return italian_task("deprel", dataset, revision, None)


@task
def italian_intertext(dataset: str | None = None, revision: str | None = None) -> Task:
    """Intertextuality detection (3.5): accuracy."""
    return italian_task("intertext", dataset, revision, None)
