"""`histbench eval chronoculture`: ask a model every prompt of a build (or write a reference run).

A run folder holds the engine's run store (records.jsonl, run.json: every raw answer,
never asked twice, resumable after an interruption) and two files of this evaluator:

    predictions.jsonl   one line per prompt: pair_id, period (undated / old / new /
                        mcq_old / mcq_new), probabilities (normalised, option order) or
                        choice (option index), parse route, error
    chronoculture.json  label, kind (model or baseline), model spec and identity, dataset
                        identity, decoding, signature, and the counts of answers, invalid
                        outputs by reason and parse routes

Decoding follows B.1: temperature 0, top-p 1, at most 120 new tokens, one generation.
Undated prompts are asked first (the knowledge filter needs them), then the dated ones,
then, with --modal, the single-answer prompts of A.5. Re-running the same command
re-parses stored answers and asks only what is missing.

The prompts are the build's (rendered from sources/chronoculture/prompts.yaml when it was
built). `--prompts FILE` renders them again from another template file of the same form,
e.g. the two alternative instructions of F.3 (sources/chronoculture/prompts_f3_*.yaml):
the question, options, country and year stay those of the build; the file's sha256
replaces the build's in the run's signature. `--sample N` asks only a seeded random
subset of N pairs, `--stratify shift_category` with equal shares per shift category
(F.3's 300-pair sample); the sample is recorded in chronoculture.json and the signature.

`--mode likelihood` scores the mcq config's modal-answer prompts (A.5) by likelihood
instead of asking for an answer: each option, written as the prompt asks for it
({"answer": "B"}), scored after the same prompt through the engine's log-likelihood
requests (histbench.eval.choices), the likeliest option taken as the model's choice
(`choice`; `choice_norm`: likeliest per character). Its predictions.jsonl holds the
mcq_old / mcq_new choices and chronoculture.json their accuracy per prompt (acc and
acc_norm of `histbench export lm-eval chronoculture`'s task) and the modal-answer cells
of Table 5.

`--mode option-probabilities` reads each distribution prompt's answer from the model's
probabilities instead of its text (OpinionQA-style scoring, for base models and models too
small to follow the JSON format; NOT the paper's method, B.1 generates): after exactly the
prompt the generate mode asks (the backend's chat rendering, as histbench.eval.choices
renders it), every option's label is scored as the continuation, and the options'
probabilities exp(loglik) are normalised to sum to 1, in option order. Every prompt gets a
distribution (no parsing, no invalid answers). The run records mode option-probabilities
and the note OPTION_PROBABILITIES_NOTE, which the report and the viewer print over it; its
label ends in "(option probabilities)"; its signature names the method.

Reference runs need no model: --baseline uniform (equal shares for every option) and
the oracles frozen-oldest / frozen-newest (one year's gold distribution repeated for
every prompt; in the modal-answer format they answer that distribution's mode). The static reference of C.1 (a model's undated answer used for both
years) is derived from each model run by `histbench report`.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from histbench.core.atomic import write_text_atomic
from histbench.core.errors import EvalError, UsageError
from histbench.core.progress import log

from .data import (
    PREDICTIONS_NAME,
    RUN_INFO_NAME,
    STRATA,
    Benchmark,
    Predictions,
    analysis_retention,
    frozen_gold_predictions,
    load_benchmark,
    predictions_from_rows,
    sample_pairs,
    uniform_predictions,
)
from .parsing import parse_choice, parse_distribution

BASELINES = ("uniform", "frozen-oldest", "frozen-newest")
MODES = ("generate", "likelihood", "option-probabilities")
#: what every page and run file says about a run of --mode option-probabilities
OPTION_PROBABILITIES = "option-probabilities"
OPTION_PROBABILITIES_NOTE = (
    "scored by option probabilities, not by the paper's generation method (B.1): each distribution is the "
    "model's probability of writing each option's label right after the paper's prompt, normalised over the "
    "options (OpinionQA-style scoring); no answer was generated or parsed")
DECODING = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 120}


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    from histbench.core.backends import add_model_arguments
    from histbench.eval.plugin import add_baseline_argument, add_run_arguments

    add_run_arguments(parser, "chronoculture", limit="temporal pairs")
    parser.add_argument("--mode", choices=MODES, default="generate",
                        help="generate (default, the paper's method): the model answers the distribution prompts (and "
                             "with --modal the modal-answer ones); likelihood: the modal-answer prompts of the mcq config "
                             "scored by the log-likelihood of each option, as `histbench export lm-eval chronoculture` "
                             "scores them; option-probabilities: each distribution read from the model's probabilities of "
                             "the option labels after the paper's prompt, normalised (OpinionQA-style, for base or small "
                             "models; not the paper's method, and labelled so). likelihood modes: hf: or vllm: models")
    parser.add_argument("--out", type=Path,
                        help="run folder (created; an existing one is resumed; default: runs/chronoculture-LABEL)")
    add_model_arguments(parser)
    add_baseline_argument(parser, BASELINES, "reference runs that need no model (uniform shares; one year's gold "
                                             "distribution repeated for every prompt)")
    parser.add_argument("--modal", action="store_true",
                        help="also ask the single-answer prompts of the mcq config (modal-answer evaluation, A.5)")
    parser.add_argument("--prompts", type=Path, metavar="YAML",
                        help="render the prompts from this template file instead of using the build's (F.3's alternative "
                             "instructions: sources/chronoculture/prompts_f3_*.yaml); recorded in the signature")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="ask only a seeded random sample of N temporal pairs (see --stratify, --sample-seed)")
    parser.add_argument("--stratify", choices=STRATA,
                        help="with --sample: equal shares of every value of this pairs column (F.3: shift_category)")
    parser.add_argument("--sample-seed", type=int, default=0, help="seed of --sample (default 0)")
    decoding = parser.add_argument_group("decoding (defaults: the paper's, B.1)")
    decoding.add_argument("--temperature", type=float, default=DECODING["temperature"])
    decoding.add_argument("--top-p", type=float, default=DECODING["top_p"])
    decoding.add_argument("--max-new-tokens", type=int, default=DECODING["max_new_tokens"])
    decoding.add_argument("--seed", type=int, default=None,
                          help="sampling seed passed to the backend (a repeated run with another seed asks again)")


def write_run(out: Path, rows: list[dict], info: dict) -> None:
    """predictions.jsonl and chronoculture.json, each replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / PREDICTIONS_NAME, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    write_text_atomic(out / RUN_INFO_NAME, json.dumps(info, indent=2, ensure_ascii=False, default=str) + "\n")


def rows_from_predictions(bench: Benchmark, preds: Predictions, pairs: np.ndarray | None = None) -> list[dict]:
    rows = []
    for i in range(bench.n) if pairs is None else pairs:
        k = int(bench.k[i])
        for period, array in (("undated", preds.p_undated), ("old", preds.p_old), ("new", preds.p_new)):
            values = array[i, :k]
            ok = not np.isnan(values).any()
            rows.append({"pair_id": bench.pair_id[i], "period": period,
                         "probabilities": [float(v) for v in values] if ok else None,
                         "route": "baseline", "error": None if ok else "no prediction"})
    return rows


def choose_pairs(bench: Benchmark, sample: int | None, stratify: str | None, seed: int,
                 limit: int | None = None) -> tuple[np.ndarray | None, dict | None]:
    """The benchmark rows to ask (None: all) and the sample's record (None: no sample).

    `--limit N` is the quick look every evaluator has: the first N pairs in build order
    (mostly one question); `--sample N --stratify ...` is the representative subset (F.3)."""
    if limit is not None:
        if sample is not None:
            raise UsageError("give --limit (the first N pairs) or --sample (a seeded sample), not both", field="--limit")
        if limit < 1:
            raise UsageError("--limit must be at least 1", field="--limit")
        rows = np.arange(min(limit, bench.n))
        return rows, {"n": int(limit), "method": "first", "stratify": None, "seed": None,
                      "selected": int(rows.size), "available": bench.n}
    if sample is None:
        if stratify:
            raise UsageError("--stratify needs --sample N", field="--stratify")
        return None, None
    rows, info = sample_pairs(bench, sample, stratify, seed)
    if info.get("short"):
        short = ", ".join(f"{s} {v['selected']}/{v['share']}" for s, v in info["by_stratum"].items() if s in info["short"])
        log(f"[chronoculture] --sample {sample}: some strata have fewer pairs than their share ({short})")
    return rows, info


def sample_tag(sample: dict | None) -> str | None:
    """The sample as one signature field: '300/shift_category/seed0' (None without a sample)."""
    if not sample:
        return None
    if sample.get("method") == "first":
        return f"first{sample['selected']}"
    return f"{sample['selected']}/{sample.get('stratify') or 'random'}/seed{sample['seed']}"


def _count(rows: list[dict]) -> dict:
    counts: dict = {}
    for row in rows:
        entry = counts.setdefault(row["period"], {"prompts": 0, "valid": 0, "invalid": 0, "routes": Counter(), "reasons": Counter()})
        entry["prompts"] += 1
        ok = row.get("probabilities") is not None or row.get("choice") is not None
        entry["valid" if ok else "invalid"] += 1
        entry["routes"][row.get("route") or "none"] += 1
        if not ok:
            from .data import reason_class

            entry["reasons"][reason_class(row.get("error") or "")] += 1
    return {p: {**e, "routes": dict(e["routes"]), "reasons": dict(e["reasons"])} for p, e in counts.items()}


def _dataset_info(built) -> tuple[dict, str | None]:
    sources = built.manifest.get("chronoculture_sources") or {}
    prompt_hash = (sources.get("prompt_templates") or {}).get("sha256")
    return built.identity(), prompt_hash


def run_baseline(built, bench: Benchmark, name: str, out: Path, label: str | None = None,
                 pairs: np.ndarray | None = None, sample: dict | None = None) -> dict:
    """Write a reference run (no model) into `out` (all pairs, or the rows `pairs`); returns its chronoculture.json."""
    preds = uniform_predictions(bench) if name == "uniform" else frozen_gold_predictions(bench, name.split("-", 1)[1])
    rows = rows_from_predictions(bench, preds, pairs)
    if bench.modal is not None and name != "uniform":
        # a frozen oracle's single answer is the mode of the distribution it repeats (A.5)
        keep = set(range(bench.n) if pairs is None else np.asarray(pairs).tolist())
        for i in bench.modal.pair_index:
            if int(i) in keep:
                choice = int(np.argmax(preds.p_old[i, : bench.k[i]]))
                rows += [{"pair_id": bench.pair_id[i], "period": period, "choice": choice, "route": "baseline",
                          "error": None} for period in ("mcq_old", "mcq_new")]
    identity, prompt_hash = _dataset_info(built)
    signature = f"histbench-chronoculture|baseline:{name}|data:{identity.get('data_sha256', '')[:12]}"
    if sample:
        signature += f"|sample:{sample_tag(sample)}"
    info = {
        "label": label or preds.label, "kind": "baseline", "baseline": name, "model": None, "dataset": identity,
        "prompt_templates_sha256": prompt_hash, "sample": sample, "counts": _count(rows), "signature": signature,
    }
    write_run(out, rows, info)
    return info


def _prompt_jobs(built, bench: Benchmark, rows: np.ndarray, templates, modal: bool) -> tuple[list, dict]:
    """(pair_id, period, messages) for the undated, dated and (with `modal`) single-answer prompts of
    the benchmark rows `rows`, and the option letters of the modal pairs.

    templates None: the build's own messages; otherwise rendered from the templates with the
    build's country, question, options and years (the builder renders the same way, so the
    shipped prompts.yaml gives exactly the build's messages).
    """
    wanted = {bench.pair_id[i] for i in rows}
    letters: dict[str, list[str]] = {}
    modal_jobs: list[tuple[str, str, list[dict]]] = []
    if modal:
        if "mcq" not in built.configs:
            raise EvalError("this build has no mcq config (modal-answer prompts)", file=built.path)
        if templates is not None and not templates.has("mcq"):
            raise UsageError(f"--modal with --prompts needs an 'mcq' section in {templates.path}", field="--prompts")
        for r in built.load("mcq", "test").select_columns(["pair_id", "option_letters", "messages_old", "messages_new"]).to_list():
            if r["pair_id"] in wanted:
                letters[r["pair_id"]] = r["option_letters"]
                modal_jobs += [(r["pair_id"], "mcq_old", r["messages_old"]), (r["pair_id"], "mcq_new", r["messages_new"])]
    if templates is not None:
        index = bench.index()
        jobs = []
        for i in rows:
            args = (str(bench.country[i]), str(bench.question_text[i]), list(bench.options[i]))
            jobs.append((bench.pair_id[i], "undated", templates.distribution(*args, None)))
        for i in rows:
            args = (str(bench.country[i]), str(bench.question_text[i]), list(bench.options[i]))
            jobs.append((bench.pair_id[i], "old", templates.distribution(*args, int(bench.year_old[i]))))
            jobs.append((bench.pair_id[i], "new", templates.distribution(*args, int(bench.year_new[i]))))
        rendered = []
        for pair_id, period, _ in modal_jobs:
            i = index[pair_id]
            year = int(bench.year_old[i] if period == "mcq_old" else bench.year_new[i])
            rendered.append((pair_id, period, templates.mcq(str(bench.country[i]), str(bench.question_text[i]),
                                                            list(bench.options[i]), year)))
        return jobs + rendered, letters
    index = bench.index()
    undated_rows = [r for r in built.load("undated", "test").select_columns(["pair_id", "messages"]).to_list() if r["pair_id"] in wanted]
    item_rows = [r for r in built.load("items", "test").select_columns(["pair_id", "period", "messages"]).to_list()
                 if r["pair_id"] in wanted]
    jobs = [(r["pair_id"], "undated", r["messages"]) for r in sorted(undated_rows, key=lambda r: index[r["pair_id"]])]
    dated = sorted(item_rows, key=lambda r: (index[r["pair_id"]], r["period"] != "old"))
    jobs += [(r["pair_id"], r["period"], r["messages"]) for r in dated]
    per_pair = Counter(j[0] for j in jobs)
    missing = [bench.pair_id[i] for i in rows if per_pair[bench.pair_id[i]] != 3]
    if missing:
        raise EvalError(f"{len(missing)} pair(s) lack an undated prompt or one of their two dated prompts, e.g. {missing[0]!r}",
                        file=built.path)
    return jobs + modal_jobs, letters


def run_model(built, bench: Benchmark, backend, out: Path, *, label: str | None = None, pairs: np.ndarray | None = None,
              sample: dict | None = None, modal: bool = False, decoding: dict | None = None,
              prompts: Path | None = None) -> dict:
    """Ask `backend` every prompt of the rows `pairs` (default: all; through a RunStore in `out`),
    parse, write the run files. prompts: a template file to render the prompts from (F.3)."""
    from histbench.builders.chronoculture.prompts import PromptTemplates
    from histbench.core.backends import GenerateRequest
    from histbench.core.runstore import RunStore
    from histbench.eval.signature import make_signature

    decoding = {**DECODING, **(decoding or {})}
    check_mode(out, "generate")
    if "generate" not in backend.supports:
        raise EvalError(f"model {backend.spec!r} cannot generate text; ChronoCulture needs chat generation", field="--model")
    rows = np.arange(bench.n) if pairs is None else np.asarray(pairs, dtype=int)
    templates = None
    if prompts is not None:
        templates = PromptTemplates.load(Path(prompts), sections=("distribution", "mcq") if modal else ("distribution",))
    jobs, letters = _prompt_jobs(built, bench, rows, templates, modal)
    index = bench.index()

    def request(messages):
        return GenerateRequest(messages=messages, max_new_tokens=decoding["max_new_tokens"], temperature=decoding["temperature"],
                               top_p=decoding["top_p"], seed=decoding.get("seed"))

    identity, build_prompt_hash = _dataset_info(built)
    prompt_hash = templates.sha256 if templates is not None else build_prompt_hash
    prompt_info = ({"source": "file", "path": str(prompts), "sha256": templates.sha256} if templates is not None
                   else {"source": "build", "sha256": build_prompt_hash})
    options = {"benchmark": "chronoculture", "sample": sample, "modal": modal, "decoding": decoding, "prompts": prompt_info}
    store = RunStore.open(out, backend=backend, dataset=built, options=options)
    records = []
    for desc, group in (("undated prompts", [j for j in jobs if j[1] == "undated"]),
                        ("dated prompts", [j for j in jobs if j[1] in ("old", "new")]),
                        ("modal-answer prompts", [j for j in jobs if j[1].startswith("mcq")])):
        if group:
            log(f"[chronoculture] {len(group):,} {desc} to {backend.spec}")
            records += list(zip(group, store.run([request(j[2]) for j in group], desc=desc), strict=True))
    out_rows = []
    for (pair_id, period, _), record in records:
        i = index[pair_id]
        row = {"pair_id": pair_id, "period": period}
        if record.response is None:
            row.update({"route": "none", "error": f"no response: {record.error}"})
            row["probabilities" if not period.startswith("mcq") else "choice"] = None
        elif period.startswith("mcq"):
            parsed = parse_choice(record.text, bench.options[i], letters[pair_id])
            row.update({"choice": parsed.index, "route": parsed.route, "error": parsed.error})
        else:
            parsed = parse_distribution(record.text, bench.options[i])
            row.update({"probabilities": list(parsed.probabilities) if parsed.ok else None,
                        "route": parsed.route, "error": parsed.error})
        out_rows.append(row)
    backend_identity = backend.identity()
    extra = {"sample": sample_tag(sample)} if sample else {}
    signature = make_signature(dataset=identity, backend=backend_identity,
                               decoding={k: decoding[k] for k in ("temperature", "top_p", "max_new_tokens")},
                               prompt_template_hash=prompt_hash, **extra)
    info = {
        "label": label or default_label(backend_identity, backend.spec, prompts), "kind": "model", "model": backend.spec,
        "backend": backend_identity, "dataset": identity, "prompt_templates_sha256": prompt_hash, "prompts": prompt_info,
        "decoding": decoding, "sample": sample, "modal": modal, "signature": signature.text,
        "signature_fields": signature.data, "counts": _count(out_rows),
    }
    write_run(out, out_rows, info)
    return info


def check_mode(out: Path, mode: str) -> None:
    """One run folder holds one mode's run (folders from before modes were recorded hold generate runs)."""
    if (out / RUN_INFO_NAME).is_file():
        from histbench.core.readers import read_json_object

        found = read_json_object(out / RUN_INFO_NAME, error=EvalError).get("mode") or "generate"
        if found != mode:
            raise UsageError(f"this folder holds a --mode {found} run; give the --mode {mode} run its own --out",
                             file=out, field="--out")


def modal_likelihood_summary(bench: Benchmark, rows: list[dict]) -> dict:
    """Accuracy of the likelihood choices per modal-answer prompt (overall and per period,
    by summed log-likelihood and per character) and the Table 5 cells (A.5) of the choices."""
    from .analysis import modal_analysis

    index = bench.index()
    modal_row = {int(i): j for j, i in enumerate(bench.modal.pair_index)}
    correct: dict[str, list[bool]] = {"choice": [], "choice_norm": []}
    by_period: dict[str, dict[str, list[bool]]] = {p: {"choice": [], "choice_norm": []} for p in ("mcq_old", "mcq_new")}
    for row in rows:
        j = modal_row[index[row["pair_id"]]]
        mode = bench.modal.mode_old[j] if row["period"] == "mcq_old" else bench.modal.mode_new[j]
        for key in ("choice", "choice_norm"):
            correct[key].append(int(row[key]) == int(mode))
            by_period[row["period"]][key].append(int(row[key]) == int(mode))

    def share(values: list[bool]) -> float:
        return float(np.mean(values)) if values else float("nan")

    preds = predictions_from_rows(bench, rows, "likelihood", "model")
    return {
        "prompts": len(correct["choice"]),
        "accuracy": share(correct["choice"]), "accuracy_norm": share(correct["choice_norm"]),
        "by_period": {p.removeprefix("mcq_"): {"prompts": len(v["choice"]), "accuracy": share(v["choice"]),
                                              "accuracy_norm": share(v["choice_norm"])} for p, v in by_period.items()},
        "table5": modal_analysis(bench, preds),
    }


def run_likelihood(built, bench: Benchmark, backend, out: Path, *, label: str | None = None,
                   pairs: np.ndarray | None = None, sample: dict | None = None) -> dict:
    """`--mode likelihood` (module doc): score the modal-answer prompts of the rows `pairs`
    (default: all) through a RunStore in `out` and write the run files."""
    import json as _json

    from histbench.core.runstore import RunStore
    from histbench.eval.choices import ChoiceItem, check_backend, score_items
    from histbench.eval.signature import make_signature

    check_backend(backend)
    check_mode(out, "likelihood")
    if "mcq" not in built.configs or bench.modal is None:
        raise EvalError("this build has no mcq config (modal-answer prompts)", file=built.path)
    wanted = {bench.pair_id[i] for i in (range(bench.n) if pairs is None else pairs)}
    mcq = [r for r in built.load("mcq", "test").select_columns(["pair_id", "option_letters", "messages_old", "messages_new"])
           .to_list() if r["pair_id"] in wanted]
    jobs = [(r["pair_id"], f"mcq_{period}", r[f"messages_{period}"], r["option_letters"]) for r in mcq for period in ("old", "new")]
    if not jobs:
        raise EvalError(f"none of the {len(wanted):,} temporal pair(s) chosen has modal-answer prompts in the mcq config "
                        "(not every pair has them): choose more pairs (--limit, --sample)", file=built.path)
    identity, prompt_hash = _dataset_info(built)
    store = RunStore.open(out, backend=backend, dataset=built,
                          options={"benchmark": "chronoculture", "mode": "likelihood", "sample": sample})
    log(f"[chronoculture] {len(jobs):,} modal-answer prompts scored by likelihood on {backend.spec}")
    items = [ChoiceItem(tuple(messages), tuple(_json.dumps({"answer": letter}) for letter in letters))
             for _, _, messages, letters in jobs]
    scores = score_items(items, backend, store, desc="modal-answer prompts (likelihood)")
    rows = [{"pair_id": pair_id, "period": period, "choice": score.choice, "choice_norm": score.choice_norm,
             "logliks": list(score.logliks), "route": "likelihood", "error": None}
            for (pair_id, period, _, _), score in zip(jobs, scores, strict=True)]
    backend_identity = backend.identity()
    extra = {"sample": sample_tag(sample)} if sample else {}
    signature = make_signature(dataset=identity, backend=backend_identity,
                               decoding={"method": "loglikelihood", "tokenisation": "harness"},
                               prompt_template_hash=prompt_hash, mode="likelihood", **extra)
    info = {
        "label": label or f"{default_label(backend_identity, backend.spec)} (likelihood)", "kind": "model",
        "mode": "likelihood", "model": backend.spec, "backend": backend_identity, "dataset": identity,
        "prompt_templates_sha256": prompt_hash, "prompts": {"source": "build", "sha256": prompt_hash},
        "sample": sample, "modal": True, "signature": signature.text, "signature_fields": signature.data,
        "counts": _count(rows), "contexts_truncated": sum(s.truncated > 0 for s in scores),
        "modal_likelihood": modal_likelihood_summary(bench, rows),
    }
    write_run(out, rows, info)
    return info


def option_distribution(logliks) -> list[float]:
    """Log-likelihoods of the options (option order) as probabilities summing to 1: exp(ll)
    normalised, computed as a softmax (shifted by the largest value, so that very negative
    log-likelihoods do not underflow to an all-zero row)."""
    values = np.asarray(logliks, dtype=float)
    if values.size == 0 or not np.isfinite(values).all():
        raise EvalError(f"option log-likelihoods must be finite numbers, got {list(logliks)!r}")
    weights = np.exp(values - values.max())
    return [float(v) for v in weights / weights.sum()]


def run_option_probabilities(built, bench: Benchmark, backend, out: Path, *, label: str | None = None,
                             pairs: np.ndarray | None = None, sample: dict | None = None,
                             prompts: Path | None = None) -> dict:
    """`--mode option-probabilities` (module doc): every distribution prompt (undated, old, new)
    of the rows `pairs` (default: all) scored by the probabilities of its option labels, through
    a RunStore in `out`; writes the run files."""
    from histbench.builders.chronoculture.prompts import PromptTemplates
    from histbench.core.runstore import RunStore
    from histbench.eval.choices import ChoiceItem, check_backend, score_items
    from histbench.eval.signature import make_signature

    check_backend(backend)
    check_mode(out, OPTION_PROBABILITIES)
    rows_asked = np.arange(bench.n) if pairs is None else np.asarray(pairs, dtype=int)
    templates = PromptTemplates.load(Path(prompts), sections=("distribution",)) if prompts is not None else None
    jobs, _ = _prompt_jobs(built, bench, rows_asked, templates, False)
    index = bench.index()
    identity, build_prompt_hash = _dataset_info(built)
    prompt_hash = templates.sha256 if templates is not None else build_prompt_hash
    prompt_info = ({"source": "file", "path": str(prompts), "sha256": templates.sha256} if templates is not None
                   else {"source": "build", "sha256": build_prompt_hash})
    store = RunStore.open(out, backend=backend, dataset=built,
                          options={"benchmark": "chronoculture", "mode": OPTION_PROBABILITIES, "sample": sample,
                                   "prompts": prompt_info})
    log(f"[chronoculture] {len(jobs):,} distribution prompts scored by option probabilities on {backend.spec} "
        "(not the paper's generation method)")
    items = [ChoiceItem(tuple(messages), tuple(str(o) for o in bench.options[index[pair_id]]))
             for pair_id, _, messages in jobs]
    scores = score_items(items, backend, store, desc="distribution prompts (option probabilities)")
    rows = [{"pair_id": pair_id, "period": period, "probabilities": option_distribution(score.logliks),
             "logliks": list(score.logliks), "route": OPTION_PROBABILITIES, "error": None}
            for (pair_id, period, _), score in zip(jobs, scores, strict=True)]
    backend_identity = backend.identity()
    extra = {"sample": sample_tag(sample)} if sample else {}
    signature = make_signature(dataset=identity, backend=backend_identity,
                               decoding={"method": OPTION_PROBABILITIES, "tokenisation": "harness"},
                               prompt_template_hash=prompt_hash, mode=OPTION_PROBABILITIES, **extra)
    info = {
        "label": label or f"{default_label(backend_identity, backend.spec, prompts)} (option probabilities)",
        "kind": "model", "mode": OPTION_PROBABILITIES, "method_note": OPTION_PROBABILITIES_NOTE,
        "model": backend.spec, "backend": backend_identity, "dataset": identity,
        "prompt_templates_sha256": prompt_hash, "prompts": prompt_info, "sample": sample, "modal": False,
        "signature": signature.text, "signature_fields": signature.data, "counts": _count(rows),
        "contexts_truncated": sum(s.truncated > 0 for s in scores),
    }
    write_run(out, rows, info)
    return info


def default_label(identity: dict, spec: str, prompts: Path | None = None) -> str:
    """A short run label: the model name without its organisation or folder
    ('meta-llama/Llama-3.3-70B-Instruct' -> 'Llama-3.3-70B-Instruct'), and with `--prompts`
    the prompt file's name ('Llama-3.3-70B-Instruct [prompts_f3_hundred_adults]'), so that
    the report does not take it for a repeated run of the original prompts."""
    model = str(identity.get("model") or spec).rstrip("/")
    label = model.rsplit("/", 1)[-1] or spec
    return f"{label} [{Path(prompts).stem}]" if prompts is not None else label


def _print_summary(out: Path, info: dict, bench: Benchmark, rows: list[dict]) -> None:
    from .analysis import analyse

    for period, entry in info["counts"].items():
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(entry["reasons"].items())) or "none"
        print(f"{period:>8}: {entry['valid']:,}/{entry['prompts']:,} valid; invalid by reason: {reasons}")
    preds = predictions_from_rows(bench, rows, info["label"], info["kind"])
    retention = analysis_retention(info["kind"], info)
    a = analyse(bench, preds, retention=retention, resamples=0, parts=("rf1",), sets=("default",))
    def share(c):
        value = a.cell(f"rf1.default.tau0.10.{c}.both").estimate
        return "-" if np.isnan(value) else f"{100 * value:.1f}%"

    cells = "  ".join(f"{c} {share(c)}" for c in ("stable", "moderate", "strong", "very_strong"))
    print(f"both periods within 0.10 ({a.counts['analysed']:,} pairs analysed, retention {retention:.0%}): {cells}")
    print(f"run folder: {out}  (next: histbench report chronoculture {out} ... --out reports/chronoculture)")


def _print_likelihood_summary(out: Path, info: dict) -> None:
    summary = info["modal_likelihood"]
    periods = "; ".join(f"{p} {v['accuracy']:.3f}" for p, v in summary["by_period"].items())
    print(f"modal-answer prompts scored by likelihood: {summary['prompts']:,}; the likeliest option is the gold mode in "
          f"{summary['accuracy']:.3f} of them ({periods}; per character {summary['accuracy_norm']:.3f})")
    cells = "  ".join(f"{c} {v['both_correct']['estimate']:.3f} (of {v['kept']})"
                      for c, v in summary["table5"]["by_category"].items() if v["kept"])
    print(f"both periods correct (A.5, pairs with at least one correct): {cells or '-'}")
    print(f"run folder: {out}")


def run_eval(args: argparse.Namespace) -> None:
    from histbench.core.dataset import BuiltDataset

    if bool(args.model) == bool(args.baseline):
        raise UsageError("give exactly one of --model SPEC or --baseline NAME", field="--model")
    if args.prompts is not None and args.baseline:
        raise UsageError("--prompts is for model runs (a baseline answers no prompt)", field="--prompts")
    built = BuiltDataset.open(args.dataset, revision=args.revision, benchmark="chronoculture")
    bench = load_benchmark(built)
    if args.out is None:
        from histbench.eval.plugin import default_run_folder

        args.out = default_run_folder("chronoculture", args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError("--out must be a folder", file=out, field="--out")
    pairs, sample = choose_pairs(bench, args.sample, args.stratify, args.sample_seed, args.limit)
    if args.mode == "likelihood":
        if args.baseline:
            raise UsageError("--mode likelihood scores a model's log-likelihoods; a baseline answers without one",
                             field="--baseline")
        if args.prompts is not None:
            raise UsageError("--mode likelihood scores the build's own modal-answer prompts; --prompts is for generate",
                             field="--prompts")
        from histbench.core.backends import backend_from_args

        backend = backend_from_args(args)
        try:
            info = run_likelihood(built, bench, backend, out, label=args.label, pairs=pairs, sample=sample)
        finally:
            backend.close()
        _print_likelihood_summary(out, info)
        return
    if args.mode == OPTION_PROBABILITIES:
        if args.baseline:
            raise UsageError("--mode option-probabilities reads a model's probabilities; a baseline has none",
                             field="--baseline")
        if args.modal:
            raise UsageError("--modal with --mode option-probabilities: the modal-answer prompts are scored by "
                             "--mode likelihood (a separate run folder)", field="--modal")
        from histbench.core.backends import backend_from_args

        backend = backend_from_args(args)
        try:
            info = run_option_probabilities(built, bench, backend, out, label=args.label, pairs=pairs, sample=sample,
                                            prompts=args.prompts)
        finally:
            backend.close()
        print(f"note: {info['label']} was {OPTION_PROBABILITIES_NOTE}")
    elif args.baseline:
        info = run_baseline(built, bench, args.baseline, out, args.label, pairs, sample)
    else:
        from histbench.core.backends import backend_from_args

        backend = backend_from_args(args)
        decoding = {"temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.max_new_tokens,
                    "seed": args.seed}
        try:
            info = run_model(built, bench, backend, out, label=args.label, pairs=pairs, sample=sample, modal=args.modal,
                             decoding=decoding, prompts=args.prompts)
        finally:
            backend.close()
    from .data import read_run

    _, rows = read_run(out)
    _print_summary(out, info, bench, rows)
