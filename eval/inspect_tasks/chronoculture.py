"""The inspect task of ChronoCulture: `inspect eval histbench/chronoculture`.

Samples are the build's own prompts, pair by pair in the build's order: the undated
prompt and the two dated ones (old and new survey year) of every temporal pair, and with
`-T modal=true` the two modal-answer prompts of the pairs in the mcq config (A.5); the
B.1 system message and user message exactly as `histbench eval chronoculture` sends
them, with its decoding (temperature 0, top-p 1, at most 120 new tokens). Answers are
parsed with histbench's B.1 parser (parsing.parse_distribution; parse_choice for the
modal prompts). The metric is histbench's analysis of the run (analysis.analyse, the
summary `histbench eval chronoculture` prints): the share of pairs whose two periods
are both predicted within 0.10 of the survey (RF1) per shift category after the
knowledge filter, the pairs analysed, the valid answers per period, and with `modal`
the Table 5 cells (both periods' mode right, among pairs with one right). As in
histbench, a run on part of the pairs (inspect's --limit: the first pairs) is analysed
without the knowledge filter.
"""

from __future__ import annotations

import numpy as np
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from .common import GENERATE, chat_input, generate_config, histbench_generate, open_build

PERIOD_ORDER = {"undated": 0, "old": 1, "new": 2, "mcq_old": 3, "mcq_new": 4}
CATEGORIES = ("stable", "moderate", "strong", "very_strong")


def _bench(dataset: str | None, revision: str | None):
    from histbench.eval.chronoculture.data import load_benchmark

    built = open_build("chronoculture", dataset, revision)
    key = (dataset, revision)
    if key not in _BENCHES:
        _BENCHES[key] = load_benchmark(built)
    return built, _BENCHES[key]


_BENCHES: dict = {}


def chronoculture_samples(dataset: str | None, revision: str | None, modal: bool) -> list[Sample]:
    from histbench.eval.chronoculture.run import DECODING, _prompt_jobs

    built, bench = _bench(dataset, revision)
    jobs, letters = _prompt_jobs(built, bench, np.arange(bench.n), None, modal)
    index = bench.index()
    jobs = sorted(jobs, key=lambda job: (index[job[0]], PERIOD_ORDER[job[1]]))
    config = generate_config(max_tokens=DECODING["max_new_tokens"], temperature=DECODING["temperature"],
                             top_p=DECODING["top_p"])
    return [Sample(id=f"{pair_id}:{period}", input=chat_input(messages), target=period,
                   metadata={"pair_id": pair_id, "period": period, "letters": letters.get(pair_id), GENERATE: config})
            for pair_id, period, messages in jobs]


@scorer(metrics=[])
def chronoculture_answer(dataset: str | None = None, revision: str | None = None):
    """histbench's parser; the value is 1 for a valid answer, 0 for an invalid one."""
    from histbench.eval.chronoculture.parsing import parse_choice, parse_distribution

    async def score(state: TaskState, target: Target) -> Score:
        _, bench = _bench(dataset, revision)
        pair_id, period = state.metadata["pair_id"], state.metadata["period"]
        options = bench.options[bench.index()[pair_id]]
        row = {"pair_id": pair_id, "period": period}
        if state.output.error:
            row.update({"route": "none", "error": f"no response: {state.output.error}"})
            row["choice" if period.startswith("mcq") else "probabilities"] = None
        elif period.startswith("mcq"):
            parsed = parse_choice(state.output.completion, options, state.metadata["letters"])
            row.update({"choice": parsed.index, "route": parsed.route, "error": parsed.error})
        else:
            parsed = parse_distribution(state.output.completion, options)
            row.update({"probabilities": list(parsed.probabilities) if parsed.ok else None,
                        "route": parsed.route, "error": parsed.error})
        valid = row.get("probabilities") is not None or row.get("choice") is not None
        return Score(value=float(valid), answer=state.output.completion, metadata={"prediction": row})

    return score


def summary(bench, rows: list[dict]) -> dict[str, float]:
    """What `histbench eval chronoculture` prints for a run's prediction rows: RF1 (both
    periods within 0.10) per shift category after the knowledge filter, the pairs
    analysed, valid answers per period; with modal rows, the Table 5 cells."""
    from histbench.eval.chronoculture.analysis import analyse, modal_analysis
    from histbench.eval.chronoculture.data import analysis_retention, predictions_from_rows

    asked = {row["pair_id"] for row in rows}
    info = {"sample": None if len(asked) == bench.n else {"method": "first", "selected": len(asked)}}
    preds = predictions_from_rows(bench, rows, "inspect", "model", info)
    out: dict[str, float] = {}
    for period in PERIOD_ORDER:
        chosen = [r for r in rows if r["period"] == period]
        if chosen:
            out[f"valid_{period}"] = float(sum(r.get("probabilities") is not None or r.get("choice") is not None
                                               for r in chosen))
    if any(r["period"] in ("undated", "old", "new") for r in rows):
        result = analyse(bench, preds, retention=analysis_retention("model", info), resamples=0, parts=("rf1",),
                         sets=("default",))
        out["pairs_analysed"] = float(result.counts["analysed"])
        for category in CATEGORIES:
            out[f"rf1_both_within_0.10_{category}"] = float(result.cell(f"rf1.default.tau0.10.{category}.both").estimate)
    if preds.choice_old is not None:
        for category, cell in modal_analysis(bench, preds)["by_category"].items():
            out[f"modal_both_correct_{category}"] = float(cell["both_correct"]["estimate"])
    return out


@metric
def chronoculture_metrics(dataset: str | None = None, revision: str | None = None) -> Metric:
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        _, bench = _bench(dataset, revision)
        return summary(bench, [s.score.metadata["prediction"] for s in scores])

    return compute


@task
def chronoculture(dataset: str | None = None, revision: str | None = None, modal: bool = False) -> Task:
    """Distribution prompts of every temporal pair (and with modal=true the A.5 modal-answer prompts)."""
    built, _ = _bench(dataset, revision)
    modal = modal if isinstance(modal, bool) else str(modal).lower() in ("1", "true", "yes")
    return Task(dataset=MemoryDataset(chronoculture_samples(dataset, revision, modal), name="chronoculture"),
                solver=histbench_generate(), scorer=chronoculture_answer(dataset, revision),
                metrics=[chronoculture_metrics(dataset, revision)],
                metadata={"histbench": {"benchmark": "chronoculture", "modal": modal, "build": built.identity()}})
