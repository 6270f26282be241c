"""inspect task of Chronologic-EN's free generation: `inspect eval histbench/chronologic_generate`.

Each sample is one question, asked exactly as `histbench eval chronologic --mode generate`
asks it (generation.generation_request: the system message with the question's length
request, the user message `CONTEXT / QUESTION / ANSWER`, or both as one user message with
`-T prompt_style=plain`; the token budget of twice the requested upper length, at least
16, or `-T reasoning=true`'s 25000, or `-T max_new_tokens=`; temperature 0 and top-p 1
unless `-T temperature=` / `-T top_p=` / `-T sampling_seed=` say otherwise).

The scorer is the paper's pass/fail judge (A.2.1) as `histbench eval chronologic --mode
judge` runs it on the pass/fail path (the question's released `partial_credit` 0): the
answer is cleaned as histbench cleans it (generation.clean_answer, normalize_answer; a
failed request is an empty answer); an empty answer scores 0, an answer identical to a
ground truth or to a probability-0 distractor of class question/both gets its automatic
verdict (judge.auto_verdict) with no judge call; otherwise the judge model (inspect's
`grader` role, `--model-role grader=MODEL`, which wins over `-T judge=MODEL`; with
neither the sample fails: the candidate never judges itself) is asked the trials of
judge.candidate_pass_fail_trials (order seed `-T seed=`, histbench's `--seed`, default 0)
with histbench's judge messages and token budget (judge.judge_request, `-T
judge_effort=`), an unparsable reply is asked once more with the retry sentence, and one
still unparsed fails; the question scores judge.pass_fail_score of judge.candidate_passes.

Partial-credit questions are asked (their answers are in the log) but not scored here:
their score is a Bradley-Terry strength against the frozen anchors of a separate `histbench
eval chronologic --mode anchors` run, which stays with histbench. The metric is
substantive.aggregate_substantive, histbench's own aggregation, over the pass/fail
questions: the overall, per-group (cloze, generation, knowledge) and per-reasoning-type
means x 100 with their item-bootstrap intervals (`-T bootstrap=`, default 1000 as
histbench's `--bootstrap`), and histbench's pass/fail counts (trials, retried and unparsed
replies, automatic verdicts, empty answers).
"""

from __future__ import annotations

from functools import lru_cache

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import NOANSWER, Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from .common import GENERATE, chat_input, flatten, generate_config, histbench_generate, open_build

PATHS = ("all", "pass_fail")
GRADER = "grader"


@lru_cache(maxsize=8)
def _prompts(path: str | None):
    from histbench.eval.chronologic.generation import load_prompts

    return load_prompts(path)


@lru_cache(maxsize=8)
def _questions(dataset: str | None, revision: str | None) -> dict:
    from histbench.eval.chronologic.generation import load_questions

    return {q.number: q for q in load_questions(open_build("chronologic", dataset, revision))}


def _path(question) -> str:
    from histbench.eval.chronologic.judge import PARTIAL, PASS_FAIL

    return PARTIAL if question.partial_credit == 1 else PASS_FAIL


def chronologic_samples(dataset: str | None, revision: str | None, prompts_path: str | None, *, prompt_style: str,
                        max_new_tokens: int | None, temperature: float, top_p: float, sampling_seed: int | None,
                        reasoning: bool, paths: str) -> list[Sample]:
    from histbench.eval.chronologic.generation import generation_request

    prompts = _prompts(prompts_path)
    samples = []
    for number, q in _questions(dataset, revision).items():
        if paths == "pass_fail" and _path(q) != "pass_fail":
            continue
        request = generation_request(q, prompts, prompt_style=prompt_style, max_new_tokens=max_new_tokens,
                                     temperature=temperature, top_p=top_p, seed=sampling_seed, reasoning=reasoning)
        messages = request.messages if request.messages is not None else [{"role": "user", "content": request.prompt}]
        config = generate_config(max_tokens=request.max_new_tokens, temperature=request.temperature, top_p=request.top_p,
                                 seed=request.seed)
        samples.append(Sample(id=number, input=chat_input(messages), target=q.options[q.ground_truths[0]],
                              metadata={"question_number": number, "path": _path(q), GENERATE: config}))
    return samples


async def _verdict(model, question, trial, answer: str, prompts, max_tokens: int) -> tuple[str | None, bool]:
    """(verdict or None, retried) of one pass/fail trial: histbench's judge request, asked
    once more with the retry sentence when the reply does not parse (judge.ask)."""
    from histbench.eval.chronologic.judge import judge_request, parse_pass_fail

    for retry in (False, True):
        request = judge_request(question, trial, prompts, answer, max_tokens, retry=retry)
        config = generate_config(max_tokens=request.max_new_tokens, temperature=request.temperature, top_p=request.top_p)
        output = await model.generate(chat_input(request.messages), config=GenerateConfig(**config))
        if not output.error:
            try:
                return parse_pass_fail(output.completion), retry
            except ValueError:
                pass
    return None, True


@scorer(metrics=[])
def chronologic_pass_fail(dataset: str | None = None, revision: str | None = None, prompts_path: str | None = None,
                          seed: int = 0, judge: str | None = None, judge_effort: str = "medium"):
    """The pass/fail judge of A.2.1 (see the module docstring); the value is the question's
    pass/fail score (0, 1/3, 2/3 or 1), NOANSWER for a partial-credit question."""
    from histbench.eval.chronologic.generation import clean_answer, normalize_answer
    from histbench.eval.chronologic.judge import (
        CANDIDATE,
        PASS_FAIL,
        auto_verdict,
        candidate_pass_fail_trials,
        candidate_passes,
        judge_max_tokens,
        load_penalties,
        pass_fail_score,
    )

    prompts = _prompts(prompts_path)
    max_tokens = judge_max_tokens(prompts, PASS_FAIL, judge_effort)
    penalties = load_penalties()

    async def score(state: TaskState, target: Target) -> Score:
        q = _questions(dataset, revision)[state.metadata["question_number"]]
        raw = None if state.output.error else state.output.completion
        answer = normalize_answer(clean_answer(raw), q.options)
        row = {"question_number": q.number, "reasoning_type": q.reasoning_type, "group": q.group, "path": _path(q),
               "n_ground_truths": len(q.ground_truths), "empty_answer": not answer, "score": float("nan"),
               "status": "scored", "auto_verdict": None, "trials": 0, "passes": None, "retried": 0, "unparsed": 0,
               "verdicts": ""}
        if row["path"] != PASS_FAIL:
            row["status"] = "partial credit: scored by histbench against the anchors"
            return Score(value=NOANSWER, answer=answer, explanation=row["status"], metadata=row)
        if not answer:
            row.update(score=0.0, status="empty answer")
        elif (auto := auto_verdict(q, answer, PASS_FAIL, penalties)) is not None:
            row.update(score=1.0 if auto == "pass" else 0.0, status="automatic verdict", auto_verdict=auto)
        else:
            model = get_model(role=GRADER, required=True, default=judge)
            trials = candidate_pass_fail_trials(q, seed)
            verdicts = [await _verdict(model, q, t, answer, prompts, max_tokens) for t in trials]
            passes = [candidate_passes(t, v) for t, (v, _) in zip(trials, verdicts, strict=True)]
            row["verdicts"] = " ".join(f"{'c' if t.first == CANDIDATE else q.item_ids[t.first]}-"
                                       f"{'c' if t.second == CANDIDATE else q.item_ids[t.second]}:{v or 'unparsed'}"
                                       for t, (v, _) in zip(trials, verdicts, strict=True))
            row.update(trials=len(trials), passes=sum(passes), retried=sum(r for _, r in verdicts),
                       unparsed=sum(v is None for v, _ in verdicts), score=pass_fail_score(passes))
        return Score(value=row["score"], answer=answer, explanation=f"{row['status']} {row['verdicts']}".strip(),
                     metadata=row)

    return score


@metric
def chronologic_pass_fail_metrics(bootstrap: int = 1000, bootstrap_seed: int = 20260817) -> Metric:
    """substantive.aggregate_substantive over the pass/fail questions (overall, per group and
    per reasoning type, x 100, with item-bootstrap intervals) and histbench's pass/fail counts."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        from histbench.eval.chronologic.judge import PASS_FAIL
        from histbench.eval.chronologic.substantive import aggregate_substantive

        ledger = sorted((s.score.metadata for s in scores if s.score.metadata["path"] == PASS_FAIL),
                        key=lambda r: r["question_number"])
        aggregate = aggregate_substantive(ledger, {}, None, [], n_resamples=int(bootstrap), seed=int(bootstrap_seed))
        out = flatten({k: aggregate[k] for k in ("overall", "groups", "reasoning_types")}, skip=("n_pass_fail", "n_partial"))
        out.update({
            "pass_fail_questions": float(len(ledger)),
            "two_ground_truth_pass_fail": float(sum(r["n_ground_truths"] == 2 for r in ledger)),
            "empty_answers": float(sum(r["empty_answer"] for r in ledger)),
            "automatic_verdicts_pass_fail": float(sum(r["auto_verdict"] is not None for r in ledger)),
            "pass_fail_trials": float(sum(r["trials"] for r in ledger)),
            "pass_fail_retried": float(sum(r["retried"] for r in ledger)),
            "pass_fail_unparsed": float(sum(r["unparsed"] for r in ledger)),
        })
        return out

    return compute


@task
def chronologic_generate(dataset: str | None = None, revision: str | None = None, prompt_style: str = "chat",
                         max_new_tokens: int | None = None, temperature: float = 0.0, top_p: float = 1.0,
                         sampling_seed: int | None = None, reasoning: bool = False, seed: int = 0,
                         judge: str | None = None, judge_effort: str = "medium", bootstrap: int = 1000,
                         paths: str = "all", generation_prompts: str | None = None) -> Task:
    """Chronologic-EN free generation (paper 5.2) with the pass/fail judge (A.2.1)."""
    from histbench.eval.chronologic.judge import PASS_FAIL, judge_max_tokens

    if paths not in PATHS:
        raise ValueError(f"paths must be one of {', '.join(PATHS)}, not {paths!r}")
    if int(bootstrap) < 1:
        raise ValueError("bootstrap must be at least 1")
    prompts = _prompts(generation_prompts)
    judge_max_tokens(prompts, PASS_FAIL, judge_effort)  # an unknown effort fails before any request
    built = open_build("chronologic", dataset, revision)
    samples = chronologic_samples(dataset, revision, generation_prompts, prompt_style=prompt_style,
                                  max_new_tokens=max_new_tokens, temperature=float(temperature), top_p=float(top_p),
                                  sampling_seed=sampling_seed, reasoning=bool(reasoning), paths=paths)
    return Task(dataset=MemoryDataset(samples, name="chronologic_generate"), solver=histbench_generate(),
                scorer=chronologic_pass_fail(dataset, revision, generation_prompts, int(seed), judge, judge_effort),
                metrics=[chronologic_pass_fail_metrics(int(bootstrap))],
                metadata={"histbench": {"benchmark": "chronologic", "mode": "generate", "judge": "pass_fail",
                                        "prompt_hashes": {k: prompts.hashes[k] for k in ("generation", PASS_FAIL)},
                                        "order_seed": int(seed), "judge_effort": judge_effort, "build": built.identity()}})
