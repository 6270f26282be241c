"""The items of a Chronologic-EN run folder, as items.jsonl holds them and the per-item
viewer (histbench.eval.viewer) shows them (run_summary.py writes them):

- likelihood runs (`--mode likelihood`, `--baseline random`): one item per question. The
  prompt is the context every option was scored after, as the run store holds it (rebuilt
  from the build the run records, with its prompt template, --limit and frame permutation,
  then looked up in records.jsonl); each option shows its text, summed log-likelihood,
  token count, mean per-token log-likelihood, softmax probability, the released answer
  probability (gold) and the model's choice. Outcome: correct / wrong by the Table 3 rule
  (acc); `abstained` when the model's top option is "insufficient information" and that
  is not the answer; the random baseline's expected accuracy 1/n is neither: `unscored`.
  Score: the question's softmax Brier (`brier_softmax`), named so: it is not Table 3's
  calibrated Brier, which the index card and the report quote and which pools every
  question's options in its Platt fits, so has no per-question value of its own.
- free-generation runs (`--mode generate`): one item per question, with the system and user
  messages as sent, the raw answer and the cleaned one; `invalid` when the answer is empty
  or the request failed, otherwise `unscored` (the judges score them, `--mode judge`).
"""

from __future__ import annotations

from pathlib import Path

from histbench.builders.chronologic.taxonomy import TYPE_LABELS
from histbench.core.errors import EvalError
from histbench.core.readers import iter_jsonl_objects
from histbench.eval.viewer import StoredAnswers, request_messages

from .likelihood import LEDGER_NAME

ABSTAIN = "insufficient information"
GROUP_NAMES = {"cloze": "Cloze tasks", "generation": "Generation tasks", "knowledge": "Knowledge and inference"}
OPTION_COLUMNS = (("text", "option"), ("loglik", "log-likelihood"), ("tokens", "tokens"),
                  ("mean_loglik", "mean per token"), ("probability", "softmax p"), ("gold", "released p"),
                  ("chosen", "chosen"))


def _questions(results: dict, run_dir: Path) -> tuple[dict[int, dict], str | None]:
    """The build's questions as the run scored them (frames applied), by number; or a note
    saying why the build cannot be read."""
    from histbench.core.dataset import BuiltDataset
    from histbench.core.errors import HistbenchError

    from .data import FramePermutation, apply_frames, load_questions

    dataset = (results.get("dataset") or {}).get("path")
    if not dataset:
        return {}, "the run does not record its build: option texts and prompts are not shown"
    try:
        built = BuiltDataset.open(dataset, benchmark="chronologic")
    except HistbenchError as exc:
        return {}, f"the build {dataset} cannot be opened ({exc}): option texts and prompts are not shown"
    recorded = (results.get("dataset") or {}).get("data_sha256")
    if recorded and recorded != built.identity().get("data_sha256"):
        return {}, f"the build at {dataset} is not the one this run scored (data {recorded[:12]}): prompts are not shown"
    questions = load_questions(built, (results.get("options") or {}).get("limit"))
    permutation = results.get("frame_permutation")
    if permutation:
        perm = FramePermutation({int(k): int(v) for k, v in permutation["donor"].items()}, (), (),
                                permutation.get("seed", 0), permutation.get("groups", "authors"))
        questions = apply_frames(questions, perm)
    return {q["question_number"]: q for q in questions}, None


def _template(results: dict, run_dir: Path):
    """The likelihood prompt template the run used (its recorded text)."""
    import tempfile

    from .data import PromptTemplate

    recorded = results.get("prompt_template") or {}
    text = recorded.get("text")
    if not text:
        return PromptTemplate.from_recorded(recorded.get("path"), run_dir)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "likelihood_prompt.yaml"
        path.write_text(text, encoding="utf-8")
        return PromptTemplate.load(path)


def likelihood_items(run_dir: Path, results: dict) -> tuple[list[dict], list[str]]:
    ledger = run_dir / LEDGER_NAME
    if not ledger.is_file():
        raise EvalError(f"the likelihood run has no {LEDGER_NAME}", file=run_dir)
    baseline = (results.get("model") or {}).get("baseline")
    questions, note = _questions(results, run_dir)
    notes = [note] if note else []
    template = _template(results, run_dir) if questions else None
    stored = StoredAnswers.open(run_dir)
    if baseline:
        notes.append("random-choice baseline: every option equally likely, no model was asked; the tie of all "
                     "options is not broken, so no option is shown as chosen; a question's expected accuracy is 1/n "
                     "(outcome: unscored)")
    tokenisation = (results.get("options") or {}).get("tokenisation", "authors")
    notes.append(f"log-likelihoods with the {tokenisation} tokenisation; score: the question's softmax Brier "
                 "(mean squared gap between the options' softmax probabilities and 1/k on its k ground truths), "
                 "not Table 3's calibrated Brier, which the report and the index card quote")
    items = []
    for _, row in iter_jsonl_objects(ledger, error=EvalError):
        number = row["question_number"]
        question = questions.get(number)
        context = template.render_context(question) if question is not None else None
        texts = list(question["answer_strings"]) if question is not None else [None] * row["n_options"]
        missing_records = 0
        options = []
        for k in range(row["n_options"]):
            option = {"text": texts[k], "loglik": row["loglik"][k], "tokens": row["n_tokens"][k],
                      "mean_loglik": row["mean_loglik"][k], "probability": row["probabilities"][k],
                      "gold": row["answer_probabilities"][k] or False, "chosen": not baseline and k == row["choice"]}
            if context is not None and not baseline:
                record = stored.loglikelihood(context, template.render_continuation(texts[k]))
                missing_records += record is None
            options.append(option)
        acc = float(row["acc"])
        chosen_text = (texts[row["choice"]] or "").strip().lower().rstrip(".")
        if baseline or 0.0 < acc < 1.0:
            outcome = "unscored"
        elif acc >= 1.0:
            outcome = "correct"
        elif chosen_text == ABSTAIN:
            outcome = "abstained"
        else:
            outcome = "wrong"
        details = {"reasoning type": TYPE_LABELS.get(row["reasoning_type"], row["reasoning_type"]),
                   "accuracy (Table 3 rule)": acc, "any ground truth": row.get("acc_any"),
                   "tied top options": row.get("tied"), "p(truth)": row.get("p_truth")}
        tied = row.get("tied") or 1
        if baseline:
            # every option ties (p = 1/n); the ledger's choice is argmax's first option, which is
            # the ground truth in every release, so the baseline is shown choosing nothing
            details["tie"] = (f"all {row['n_options']} options tie; not broken: no option is chosen, the accuracy "
                              f"is the expected 1/{row['n_options']} of a uniform pick")
        elif tied > 1:
            details["tie"] = (f"{tied} top options tie; broken by release order (the first tied option is the "
                              "choice, as Table 3's argmax rule does); 'any ground truth' shares the credit")
        if row.get("frame_donor") not in (None, number):
            details["metadata frame of question"] = row["frame_donor"]
        if missing_records:
            details["options not found in records.jsonl"] = missing_records
        items.append({
            "id": str(number), "config": "questions", "group": row["group"], "system": None, "outcome": outcome,
            "score": row.get("brier_softmax"), "score_label": "softmax Brier", "kind": "loglikelihood",
            "prompt": context, "prompt_label": "prompt (the context every option is scored after)",
            "options": options, "gold": [t for t, p in zip(texts, row["answer_probabilities"], strict=True) if p == 1.0],
            "parsed": None if baseline else texts[row["choice"]], "details": details,
        })
    return items, notes


def generation_items(run_dir: Path, results: dict) -> tuple[list[dict], list[str]]:
    questions, note = _questions(results, run_dir)
    notes = [note] if note else []
    notes.append("free generation: answers are scored by the judges (--mode judge), not here (outcome: unscored)")
    stored = StoredAnswers.open(run_dir)
    items = []
    for answer in results.get("answers") or []:
        number = answer["question_number"]
        question = questions.get(number)
        record = stored.by_key.get(answer.get("key") or "")
        messages = request_messages(record)
        prompt = None
        if messages is None and record is not None:
            prompt = (record.get("request") or {}).get("prompt")
        if answer.get("error"):
            outcome, problem = "invalid", f"request failed: {answer['error']}"
        elif answer.get("empty"):
            outcome, problem = "invalid", "empty answer after cleaning (scores 0 on the substantive channel)"
        else:
            outcome, problem = "unscored", None
        gold = None
        if question is not None:
            gold = [t for t, p in zip(question["answer_strings"], question["answer_probabilities"], strict=True) if p == 1.0]
        items.append({
            "id": str(number), "config": "questions", "group": (question or {}).get("group"), "system": None,
            "outcome": outcome, "score": None, "kind": "generate", "messages": messages, "prompt": prompt,
            "response": answer.get("raw"), "parsed": answer.get("answer") or None, "parse_error": problem,
            "gold": gold, "details": {"finish reason": answer.get("finish_reason"),
                                      "token budget": answer.get("max_new_tokens")},
        })
    return items, notes
