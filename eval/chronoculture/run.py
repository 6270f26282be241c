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

from histbench.builders.core.atomic import write_text_atomic
from histbench.builders.core.errors import EvalError, UsageError
from histbench.builders.core.progress import log

from .data import (
    PREDICTIONS_NAME,
    RUN_INFO_NAME,
    Benchmark,
    Predictions,
    frozen_gold_predictions,
    load_benchmark,
    predictions_from_rows,
    uniform_predictions,
)
from .parsing import parse_choice, parse_distribution

BASELINES = ("uniform", "frozen-oldest", "frozen-newest")
DECODING = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 120}


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    from histbench.eval.backends import add_model_arguments
    from histbench.eval.plugin import add_baseline_argument, add_run_arguments

    add_run_arguments(parser, "chronoculture", limit="temporal pairs")
    parser.add_argument("--out", type=Path,
                        help="run folder (created; an existing one is resumed; default: runs/chronoculture-LABEL)")
    add_model_arguments(parser)
    add_baseline_argument(parser, BASELINES, "reference runs that need no model (uniform shares; one year's gold "
                                             "distribution repeated for every prompt)")
    parser.add_argument("--modal", action="store_true",
                        help="also ask the single-answer prompts of the mcq config (modal-answer evaluation, A.5)")
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


def run_baseline(built, bench: Benchmark, name: str, out: Path, label: str | None = None, limit: int | None = None) -> dict:
    """Write a reference run (no model) into `out`; returns its chronoculture.json."""
    preds = uniform_predictions(bench) if name == "uniform" else frozen_gold_predictions(bench, name.split("-", 1)[1])
    pairs = np.arange(min(limit, bench.n)) if limit else None
    rows = rows_from_predictions(bench, preds, pairs)
    if bench.modal is not None and name != "uniform":
        # a frozen oracle's single answer is the mode of the distribution it repeats (A.5)
        keep = set(range(bench.n) if pairs is None else pairs.tolist())
        for i in bench.modal.pair_index:
            if int(i) in keep:
                choice = int(np.argmax(preds.p_old[i, : bench.k[i]]))
                rows += [{"pair_id": bench.pair_id[i], "period": period, "choice": choice, "route": "baseline",
                          "error": None} for period in ("mcq_old", "mcq_new")]
    identity, prompt_hash = _dataset_info(built)
    info = {
        "label": label or preds.label, "kind": "baseline", "baseline": name, "model": None, "dataset": identity,
        "prompt_templates_sha256": prompt_hash, "limit": limit, "counts": _count(rows),
        "signature": f"histbench-chronoculture|baseline:{name}|data:{identity.get('data_sha256', '')[:12]}",
    }
    write_run(out, rows, info)
    return info


def _messages(rows, column: str) -> dict[str, list[dict]]:
    return {r["pair_id"]: r[column] for r in rows}


def run_model(built, bench: Benchmark, backend, out: Path, *, label: str | None = None, limit: int | None = None,
              modal: bool = False, decoding: dict | None = None) -> dict:
    """Ask `backend` every prompt (through a RunStore in `out`), parse, write the run files."""
    from histbench.eval.backends import GenerateRequest
    from histbench.eval.runstore import RunStore
    from histbench.eval.signature import make_signature

    decoding = {**DECODING, **(decoding or {})}
    if "generate" not in backend.supports:
        raise EvalError(f"model {backend.spec!r} cannot generate text; ChronoCulture needs chat generation", field="--model")
    pair_ids = list(bench.pair_id[: limit] if limit else bench.pair_id)
    wanted = set(pair_ids)
    index = bench.index()
    undated_rows = [r for r in built.load("undated", "test").select_columns(["pair_id", "messages"]).to_list() if r["pair_id"] in wanted]
    item_rows = [r for r in built.load("items", "test").select_columns(["pair_id", "period", "messages"]).to_list()
                 if r["pair_id"] in wanted]
    jobs: list[tuple[str, str, list[dict]]] = [(r["pair_id"], "undated", r["messages"]) for r in undated_rows]
    dated = sorted(item_rows, key=lambda r: (index[r["pair_id"]], r["period"] != "old"))
    jobs += [(r["pair_id"], r["period"], r["messages"]) for r in dated]
    per_pair = Counter(j[0] for j in jobs)
    missing = [p for p in pair_ids if per_pair[p] != 3]
    if missing:
        raise EvalError(f"{len(missing)} pair(s) lack an undated prompt or one of their two dated prompts, e.g. {missing[0]!r}",
                        file=built.path)
    modal_jobs: list[tuple[str, str, list[dict]]] = []
    letters = {}
    if modal:
        if "mcq" not in built.configs:
            raise EvalError("this build has no mcq config (modal-answer prompts)", file=built.path)
        for r in built.load("mcq", "test").select_columns(["pair_id", "option_letters", "messages_old", "messages_new"]).to_list():
            if r["pair_id"] in wanted:
                letters[r["pair_id"]] = r["option_letters"]
                modal_jobs += [(r["pair_id"], "mcq_old", r["messages_old"]), (r["pair_id"], "mcq_new", r["messages_new"])]

    def request(messages):
        return GenerateRequest(messages=messages, max_new_tokens=decoding["max_new_tokens"], temperature=decoding["temperature"],
                               top_p=decoding["top_p"], seed=decoding.get("seed"))

    identity, prompt_hash = _dataset_info(built)
    options = {"benchmark": "chronoculture", "limit": limit, "modal": modal, "decoding": decoding}
    store = RunStore.open(out, backend=backend, dataset=built, options=options)
    records = []
    for desc, group in (("undated prompts", [j for j in jobs if j[1] == "undated"]),
                        ("dated prompts", [j for j in jobs if j[1] != "undated"]),
                        ("modal-answer prompts", modal_jobs)):
        if group:
            log(f"[chronoculture] {len(group):,} {desc} to {backend.spec}")
            records += list(zip(group, store.run([request(j[2]) for j in group], desc=desc), strict=True))
    rows = []
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
        rows.append(row)
    backend_identity = backend.identity()
    signature = make_signature(dataset=identity, backend=backend_identity,
                               decoding={k: decoding[k] for k in ("temperature", "top_p", "max_new_tokens")},
                               prompt_template_hash=prompt_hash)
    info = {
        "label": label or default_label(backend_identity, backend.spec), "kind": "model", "model": backend.spec,
        "backend": backend_identity, "dataset": identity, "prompt_templates_sha256": prompt_hash,
        "decoding": decoding, "limit": limit, "modal": modal, "signature": signature.text,
        "signature_fields": signature.data, "counts": _count(rows),
    }
    write_run(out, rows, info)
    return info


def default_label(identity: dict, spec: str) -> str:
    """A short run label: the model name without its organisation or folder
    ('meta-llama/Llama-3.3-70B-Instruct' -> 'Llama-3.3-70B-Instruct')."""
    model = str(identity.get("model") or spec).rstrip("/")
    return model.rsplit("/", 1)[-1] or spec


def _print_summary(out: Path, info: dict, bench: Benchmark, rows: list[dict]) -> None:
    from .analysis import analyse

    for period, entry in info["counts"].items():
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(entry["reasons"].items())) or "none"
        print(f"{period:>8}: {entry['valid']:,}/{entry['prompts']:,} valid; invalid by reason: {reasons}")
    preds = predictions_from_rows(bench, rows, info["label"], info["kind"])
    retention = 1.0 if info["kind"] == "baseline" else 0.75
    a = analyse(bench, preds, retention=retention, resamples=0, parts=("rf1",), sets=("default",))
    def share(c):
        value = a.cell(f"rf1.default.tau0.10.{c}.both").estimate
        return "-" if np.isnan(value) else f"{100 * value:.1f}%"

    cells = "  ".join(f"{c} {share(c)}" for c in ("stable", "moderate", "strong", "very_strong"))
    print(f"both periods within 0.10 ({a.counts['analysed']:,} pairs analysed, retention {retention:.0%}): {cells}")
    print(f"run folder: {out}  (next: histbench report chronoculture {out} ... --out reports/chronoculture)")


def run_eval(args: argparse.Namespace) -> None:
    from histbench.builders.core.dataset import BuiltDataset

    if bool(args.model) == bool(args.baseline):
        raise UsageError("give exactly one of --model SPEC or --baseline NAME", field="--model")
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1", field="--limit")
    built = BuiltDataset.open(args.dataset, revision=args.revision, benchmark="chronoculture")
    bench = load_benchmark(built)
    if args.out is None:
        from histbench.eval.plugin import default_run_folder

        args.out = default_run_folder("chronoculture", args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError("--out must be a folder", file=out, field="--out")
    if args.baseline:
        info = run_baseline(built, bench, args.baseline, out, args.label, args.limit)
    else:
        from histbench.eval.backends import backend_from_args

        backend = backend_from_args(args)
        decoding = {"temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.max_new_tokens,
                    "seed": args.seed}
        try:
            info = run_model(built, bench, backend, out, label=args.label, limit=args.limit, modal=args.modal,
                             decoding=decoding)
        finally:
            backend.close()
    from .data import read_run

    _, rows = read_run(out)
    _print_summary(out, info, bench, rows)
