"""inspect tasks of MHER: `inspect eval histbench/mher_<condition>` (-T split=test|dev).

Each sample is one item of the condition, asked exactly as `histbench eval mher --model`
asks it (protocol.render_messages: the protocol's system instruction, the condition's
instruction and the model-visible fields only; at most 256 new tokens, temperature 0,
top-p 1). As in histbench, a reply that breaks the JSON output contract is asked again
afresh with seed = the attempt number, at most `format_retries` (default 2) more times;
an item still failing is scored as histbench scores it: invalid, action ambiguous,
probabilities (1/3, 1/3, 1/3). Replies are parsed with protocol.parse_reply and the
metric is metrics.binary_metrics (accuracy with its Wilson interval, macro-F1, abstention,
selective accuracy, false merges, Brier, log loss, invalid replies; for the
expert-unresolved items metrics.unresolved_summary), the numbers histbench.evaluate gives
for the run.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from .common import (
    GENERATE,
    chat_input,
    flatten,
    generate_config,
    histbench_generate_with_format_retries,
    open_build,
)

_BENCHES: dict = {}


def _bench(dataset: str | None, revision: str | None):
    from histbench.eval.mher.data import load_bench

    key = (dataset, revision)
    if key not in _BENCHES:
        _BENCHES[key] = load_bench(open_build("mher", dataset, revision))
    return _BENCHES[key]


def _parse_contract(text: str) -> None:
    from histbench.eval.mher.protocol import parse_reply

    parse_reply(text)  # ContractError is a ValueError


def mher_samples(condition: str, split: str, dataset: str | None, revision: str | None, max_new_tokens: int,
                 temperature: float) -> list[Sample]:
    from histbench.eval.mher.data import Bench
    from histbench.eval.mher.protocol import render_messages

    records = _bench(dataset, revision).items(condition, split)
    config = generate_config(max_tokens=max_new_tokens, temperature=temperature)
    return [Sample(id=Bench.item_id(condition, r), input=chat_input(render_messages(condition, r)),
                   target=str(r.get("label") or "unresolved"), metadata={"row": n, GENERATE: config})
            for n, r in enumerate(records)]


@scorer(metrics=[])
def mher_reply():
    """protocol.parse_reply; the value is 1 when the action is the gold label."""
    from histbench.eval.mher.protocol import ContractError, parse_reply

    async def score(state: TaskState, target: Target) -> Score:
        try:
            if state.output.error:
                raise ContractError(f"no response: {state.output.error}")
            judgement = parse_reply(state.output.completion)
            probabilities, action, valid, error = list(judgement.probabilities), judgement.action, True, None
        except ContractError as exc:
            probabilities, action, valid, error = [1 / 3, 1 / 3, 1 / 3], "ambiguous", False, str(exc)
        return Score(value=float(action == target.text), answer=action, explanation=error,
                     metadata={"row": state.metadata["row"], "probabilities": probabilities, "action": action,
                               "valid": valid, "tries": state.metadata.get("histbench_tries", 1)})

    return score


@metric
def mher_metrics(condition: str, split: str = "test", dataset: str | None = None, revision: str | None = None) -> Metric:
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        import numpy as np

        from histbench.eval.mher import metrics as M
        from histbench.eval.mher.data import ACTION_CODES, LABEL_CODES

        records = _bench(dataset, revision).items(condition, split)
        ordered = sorted(scores, key=lambda s: s.score.metadata["row"])
        action = np.array([ACTION_CODES[s.score.metadata["action"]] for s in ordered], dtype=int)
        probabilities = np.array([s.score.metadata["probabilities"] for s in ordered], dtype=float).reshape(-1, 3)
        if condition == "unresolved":
            return flatten(M.unresolved_summary(action, probabilities))
        gold = np.array([LABEL_CODES[records[s.score.metadata["row"]]["label"]] for s in ordered], dtype=int)
        valid = np.array([s.score.metadata["valid"] for s in ordered], dtype=bool)
        return flatten(M.binary_metrics(gold, action, probabilities, valid))

    return compute


def mher_task(condition: str, split: str, dataset: str | None, revision: str | None, format_retries: int,
              max_new_tokens: int, temperature: float) -> Task:
    from histbench.eval.mher.protocol import template_text

    if condition == "unresolved" and split != "test":
        raise ValueError("the unresolved items are a test set only")
    built = open_build("mher", dataset, revision)
    return Task(dataset=MemoryDataset(mher_samples(condition, split, dataset, revision, max_new_tokens, temperature),
                                      name=f"mher_{condition}_{split}"),
                solver=histbench_generate_with_format_retries(_parse_contract, int(format_retries)),
                scorer=mher_reply(), metrics=[mher_metrics(condition, split, dataset, revision)],
                metadata={"histbench": {"benchmark": "mher", "condition": condition, "split": split,
                                        "protocol": template_text()["version"], "build": built.identity()}})


def _make(condition: str):
    def make(dataset: str | None = None, revision: str | None = None, split: str = "test", format_retries: int = 2,
             max_new_tokens: int = 256, temperature: float = 0.0) -> Task:
        return mher_task(condition, split, dataset, revision, format_retries, max_new_tokens, temperature)

    make.__name__ = f"mher_{condition}"
    make.__qualname__ = make.__name__
    make.__doc__ = f"MHER, {condition.replace('_', ' ')} condition: the 3-way confidence protocol (section 5.4)."
    return task(make)


mher_name_only = _make("name_only")
mher_context_only = _make("context_only")
mher_source_grounded = _make("source_grounded")
mher_shuffled_a = _make("shuffled_a")
mher_shuffled_b = _make("shuffled_b")
mher_shuffled_c = _make("shuffled_c")
mher_unresolved = _make("unresolved")
