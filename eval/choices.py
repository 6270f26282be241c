"""Multiple-choice items scored by likelihood: `histbench eval BENCHMARK --mode likelihood`.

Benchmarks whose multiple-choice prompts are asked by generation (the Italian MCQ
tasks, ChronoCulture's modal-answer prompts) can also be scored the way
lm-evaluation-harness scores them, so that `histbench export lm-eval` tasks can be
checked against histbench on the same model. One rule for every benchmark:

- the context is exactly what the model reads when histbench asks it to generate the
  answer: the backend renders the prompt's chat messages (`Backend.render`: the model's
  chat template with its generation prompt; for a model without one, the messages'
  contents joined by blank lines; a served model (`api:`) needs its tokenizer for the
  template, `--model-option tokenizer=PATH_OR_ID`, since its server applies it);
- each option is scored as the continuation written as the prompt asks for the answer
  (e.g. {"answer": "B"}), directly after a chat template's generation prompt, or after a
  blank line when the messages were joined as plain text;
- tokenisation is the harness's (LoglikelihoodRequest boundary "harness"), through the
  evaluator engine (histbench.core.likelihood) and the run folder's run store (every
  answer saved, never asked twice);
- the choice is the option of highest summed log-likelihood (`choice`, the harness's
  acc) and of highest log-likelihood per character of the option (`choice_norm`, the
  harness's acc_norm); ties go to the first option, as numpy's argmax does.

The export's prompt format follows the same rule: `chat` is the chat-template rendering
(lm_eval --apply_chat_template), `plain` the blank-line one (histbench:
`--model-option chat_template=never` for a model that has a template).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from histbench.core.errors import EvalError, UsageError

PLAIN_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ChoiceItem:
    """One multiple-choice question: its chat `messages` and its answer `choices` (as the
    prompt asks for them)."""

    messages: tuple
    choices: tuple[str, ...]


@dataclass(frozen=True)
class ChoiceScore:
    logliks: tuple[float, ...]
    n_tokens: tuple[int, ...]
    choice: int
    choice_norm: int
    chat_template: bool
    truncated: int

    def to_json(self) -> dict:
        return {"logliks": list(self.logliks), "n_tokens": list(self.n_tokens), "choice": self.choice,
                "choice_norm": self.choice_norm, "chat_template": self.chat_template, "truncated": self.truncated}


def first_argmax(values: Sequence[float]) -> int:
    """The index of the largest value, the first of equal ones (numpy.argmax's rule)."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def check_backend(backend) -> None:
    if "loglikelihood" not in backend.supports or not hasattr(backend, "render"):
        raise UsageError(
            f"--mode likelihood needs a model that gives log-likelihoods; {backend.spec!r} supports "
            f"{', '.join(sorted(backend.supports)) or 'nothing'} (use an hf: or vllm: model, or api: on a vLLM, "
            "SGLang or TGI server)", field="--model")


def requests_for(items: Sequence[ChoiceItem], backend):
    """One LoglikelihoodRequest per option of every item (items in order, options in
    order), and per item whether its context came from the chat template."""
    from histbench.core.backends import GenerateRequest, LoglikelihoodRequest

    requests, templated = [], []
    for item in items:
        if not item.choices:
            raise EvalError("a multiple-choice item has no options", field="choices")
        context, used_template = backend.render(GenerateRequest(messages=list(item.messages)))
        separator = "" if used_template else PLAIN_SEPARATOR
        templated.append(used_template)
        requests += [LoglikelihoodRequest(context=context, continuation=separator + choice) for choice in item.choices]
    return requests, templated


def score_items(items: Sequence[ChoiceItem], backend, store, *, desc: str) -> list[ChoiceScore]:
    """Ask (or reuse from `store`) every option's log-likelihood; one ChoiceScore per item.
    A request that failed is an error naming how many (a rerun asks only those again)."""
    check_backend(backend)
    items = list(items)
    requests, templated = requests_for(items, backend)
    records = store.run(requests, desc=desc)
    failed = [r for r in records if r.response is None]
    if failed:
        raise EvalError(f"{len(failed)} of {len(records)} log-likelihood requests failed (first: {failed[0].error}); "
                        "rerun the same command to ask them again (answered ones are kept)", file=store.run_dir)
    scores, start = [], 0
    for item, used_template in zip(items, templated, strict=True):
        part = records[start:start + len(item.choices)]
        start += len(item.choices)
        logliks = tuple(float(r.response["logprob"]) for r in part)
        per_char = [ll / len(choice) for ll, choice in zip(logliks, item.choices, strict=True)]
        scores.append(ChoiceScore(
            logliks=logliks, n_tokens=tuple(int(r.response["n_tokens"]) for r in part),
            choice=first_argmax(logliks), choice_norm=first_argmax(per_char), chat_template=used_template,
            truncated=sum(int(r.response.get("truncated") or 0) > 0 for r in part)))
    return scores
