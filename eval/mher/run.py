"""`histbench eval mher`: baselines, reference systems, or a generative model.

    histbench eval mher --baseline table2 --dataset build/mher-1.0.0 --out runs/mher-baselines
    histbench eval mher --reference lexical --dataset build/mher-1.0.0 --out runs/mher-lexical
    histbench eval mher --model api:gpt-x@https://api.example/v1 --dataset build/mher-1.0.0 --out runs/gptx

Model runs go through the evaluator engine's RunStore: every raw response is kept in
`records.jsonl` before it is parsed, a rerun never asks an answered request again, and
only transport failures (the backend's own retries, then one re-ask per attempt here) and
output-format failures (a reply that breaks the JSON contract: the same messages asked
again with `seed` = attempt number) are retried, at most --format-retries times. A reply
that parses is never asked again, whatever it says. Items still failing are scored as
invalid: action `ambiguous` with probabilities (1/3, 1/3, 1/3), and counted.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from histbench.core.dataset import BuiltDataset
from histbench.core.errors import EvalError, UsageError
from histbench.core.progress import log

from .data import Bench, Prediction, load_bench, write_predictions
from .protocol import ACTIONS, CONDITIONS, parse_reply, render_messages, template_text

DEFAULT_MAX_NEW_TOKENS = 256
TABLE2 = "table2"  # --baseline table2: every non-generative baseline of Table 2, fitted together on DEV
UNIFORM = (1 / 3, 1 / 3, 1 / 3)


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    from histbench.core.backends import add_model_arguments
    from histbench.eval.plugin import add_baseline_argument, add_run_arguments

    add_run_arguments(parser, "mher", limit="items of each condition")
    parser.add_argument("--out", type=Path,
                        help="run folder (created; a model run resumes in it; default runs/mher-baselines, "
                             "runs/mher-reference-KIND or runs/mher-<model>)")
    what = parser.add_argument_group("what to evaluate (one of)")
    add_baseline_argument(what, [TABLE2], "table2 = the non-generative baselines of Table 2 (thresholds and fits "
                                          "on DEV only)")
    what.add_argument("--reference", choices=["lexical", "embedding"],
                      help="a deterministic reference system answering in every condition (no language model)")
    parser.add_argument("--embedding-model", metavar="PATH_OR_ID|api:MODEL@URL",
                        help="embedding model for the embedding baseline / reference: a sentence-transformers path "
                             "or Hub id (a local path works offline), or an OpenAI-compatible /embeddings endpoint "
                             "api:MODEL@BASE_URL[#KEY_ENV] (the paper used an API multilingual model); an "
                             "English-only model is labelled as such")
    add_model_arguments(parser)
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS),
                        help="conditions to run (default: all seven)")
    parser.add_argument("--split", choices=["test", "dev", "both"], default="test",
                        help="split for model runs (default test; dev is for prompt validation)")
    parser.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS,
                        help=f"generation budget per reply (default {DEFAULT_MAX_NEW_TOKENS})")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    parser.add_argument("--format-retries", type=int, default=2,
                        help="extra attempts for replies that break the JSON contract or failed in transport "
                             "(default 2; a parsed reply is never retried)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the baselines' cross-validation folds")


def short_system_name(spec: str) -> str:
    """The name tables show for a model spec (the full spec is kept in the run info):
    `api:gpt-x@https://host/v1#KEY` -> `gpt-x`, `hf:/models/Qwen3-8B` -> `Qwen3-8B`,
    `offline:smollm2` -> `smollm2`."""
    kind, _, target = spec.partition(":")
    if not target:
        target = kind
    target = target.split("#", 1)[0]
    if kind == "api" or "@" in target and not target.startswith(("/", ".", "~")):
        target = target.split("@", 1)[0]
    parts = [p for p in target.replace("\\", "/").split("/") if p]
    if not parts:
        return spec
    name = parts[-1]
    if name in ("model", "models", "snapshot") and len(parts) > 1:
        name = parts[-2]
    return name


def _splits(args) -> list[str]:
    return ["dev", "test"] if args.split == "both" else [args.split]


def run_eval(args: argparse.Namespace) -> None:
    baselines = args.baseline == TABLE2
    chosen = [baselines, bool(args.reference), bool(getattr(args, "model", None))]
    if sum(chosen) != 1:
        raise UsageError("give exactly one of --baseline table2, --reference or --model")
    if args.out is None:
        if baselines:
            name = "baselines"
        elif args.reference:
            name = f"reference-{args.reference}"
        else:
            name = re.sub(r"[^A-Za-z0-9._-]+", "-", args.label or args.model.split("@")[0]).strip("-")
        args.out = Path("runs") / f"mher-{name}"
    built = BuiltDataset.open(args.dataset, revision=args.revision, benchmark="mher")
    bench = load_bench(built)
    if baselines:
        out = run_baselines(bench, args.out, embedding_spec=args.embedding_model, seed=args.seed)
    elif args.reference:
        out = run_reference(bench, args.out, args.reference, embedding_spec=args.embedding_model,
                            conditions=args.conditions, seed=args.seed, label=args.label)
    else:
        out = run_model(bench, built, args)
    print(out)


# ------------------------------------------------------------------------------ baselines


def _embedding(spec: str | None, model, info):
    """(model, EmbeddingModelInfo) from a spec, or the given model and its description."""
    from .embeddings import UNKNOWN, EmbeddingModelInfo, load_embedding_model

    if model is None:
        return load_embedding_model(spec) if spec else (None, None)
    return model, info or EmbeddingModelInfo(spec or "(in-process model)", "sentence embedding",
                                             "sentence-transformers", UNKNOWN, "not described")


def run_baselines(bench: Bench, out: Path, embedding_spec: str | None = None, embedding_model=None,
                  embedding_info=None, seed: int = 0) -> Path:
    """Fit every baseline on DEV, predict DEV and TEST, write a run folder."""
    from . import baselines as B
    from .metrics import LABEL_CODES
    from .protocol import visible_item

    embedding_model, embedding_info = _embedding(embedding_spec, embedding_model, embedding_info)
    embedding_label = embedding_info.label if embedding_info else None
    dev_name = bench.items("name_only", "dev")
    dev_ctx = bench.items("context_only", "dev")
    fitted = B.fit_baselines(
        [visible_item("name_only", r) for r in dev_name], [LABEL_CODES[r["label"]] for r in dev_name],
        [visible_item("context_only", r) for r in dev_ctx], [LABEL_CODES[r["label"]] for r in dev_ctx],
        embedding_model=embedding_model, embedding_label=embedding_label, seed=seed,
    )
    predictions = []
    for baseline in fitted:
        for split in ("dev", "test"):
            records = bench.items(baseline.condition, split)
            actions, p_same = baseline.predict([visible_item(baseline.condition, r) for r in records])
            for record, action, p in zip(records, actions, p_same, strict=True):
                probabilities = (float(p), float(1 - p), 0.0)
                predictions.append(Prediction(baseline.name, baseline.condition, split,
                                              Bench.item_id(baseline.condition, record), probabilities,
                                              ACTIONS[int(action)]))
    info = {"kind": "baselines", "label": "baselines", "dataset": bench.identity,
            "signature": _system_signature(bench, "baseline:table2", seed, embedding_info),
            "systems": {b.name: b.describe() for b in fitted},
            "embedding_model": embedding_info.to_json() if embedding_info else None}
    write_predictions(out, predictions, info)
    log(f"[mher] {len(fitted)} baselines fitted on DEV, predictions in {out}")
    return Path(out)


def _system_signature(bench: Bench, spec: str, seed: int, embedding_info) -> dict:
    """The signature of a run of fitted systems (no model asked): the data, the systems
    (baseline:table2 or reference:KIND), the embedding model they used, the seed."""
    from histbench.eval.signature import make_signature

    embedding = embedding_info.label if embedding_info else "none"
    return make_signature(dataset=bench.identity, backend={"spec": spec}, embedding=embedding,
                          seed=seed).to_dict()


def run_reference(bench: Bench, out: Path, kind: str, embedding_spec: str | None = None, embedding_model=None,
                  conditions=CONDITIONS, seed: int = 0, label: str | None = None, embedding_info=None) -> Path:
    from .systems import ReferenceSystem, embedding_features, lexical_features, system_predictions

    if kind == "embedding":
        if embedding_model is None and not embedding_spec:
            raise UsageError("--reference embedding needs --embedding-model PATH_OR_ID or api:MODEL@URL")
        embedding_model, embedding_info = _embedding(embedding_spec, embedding_model, embedding_info)
        factories = embedding_features(embedding_model)
        name = label or f"reference: embedding ({embedding_info.label})"
    else:
        factories = lexical_features()
        name = label or "reference: lexical logistic"
    system = ReferenceSystem(name, factories, seed=seed).fit(bench)
    predictions = system_predictions(system, bench, conditions, ["dev", "test"])
    info = {"kind": "reference", "label": name, "dataset": bench.identity,
            "signature": _system_signature(bench, f"reference:{kind}", seed, embedding_info if kind == "embedding" else None),
            "systems": {name: system.describe()},
            "conditions": list(conditions),
            "embedding_model": embedding_info.to_json() if kind == "embedding" else None}
    write_predictions(out, predictions, info)
    return Path(out)


# ------------------------------------------------------------------------------ models


def _parse(result) -> dict:
    """The run store's parse hook: a ContractError becomes the record's parse_error."""
    return parse_reply(result.text).to_json()


def run_model(bench: Bench, built, args: argparse.Namespace) -> Path:
    from histbench.core.backends import GenerateRequest, backend_from_args
    from histbench.core.runstore import RunStore
    from histbench.eval.signature import hash_text, make_signature

    backend = backend_from_args(args)
    if "generate" not in backend.supports:
        raise EvalError(f"{backend.spec} cannot generate text; MHER needs a chat or generation model", field="--model")
    if args.format_retries < 0:
        raise UsageError("--format-retries must be >= 0")
    decoding = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature}
    options = {"protocol": template_text()["version"], **decoding, "format_retries": args.format_retries,
               "conditions": list(args.conditions), "split": args.split, "limit": args.limit}
    store = RunStore.open(args.out, backend=backend, dataset=built, options=options)
    label = args.label or short_system_name(backend.spec)
    predictions: list[Prediction] = []
    counts: dict[str, dict] = {}
    first_request = None
    for condition in args.conditions:
        for split in _splits(args):
            if condition == "unresolved" and split != "test":
                continue
            records = bench.items(condition, split)
            if args.limit is not None:
                records = records[: args.limit]
            if not records:
                continue
            messages = [render_messages(condition, r) for r in records]

            def request(m, attempt):
                return GenerateRequest(messages=m, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                       seed=None if attempt == 0 else attempt)

            first_request = first_request or request(messages[0], 0)
            final: dict[int, object] = {}
            seeds = [0] * len(records)      # 0: the plain request; k: the k-th format retry
            tries = [0] * len(records)
            pending = list(range(len(records)))
            for round_number in range(args.format_retries + 1):
                got = store.run([request(messages[i], seeds[i]) for i in pending], parse=_parse,
                                desc=f"mher {condition}/{split}" + (f" (retry {round_number})" if round_number else ""))
                still = []
                for i, record in zip(pending, got, strict=True):
                    final[i] = record
                    tries[i] += 1
                    if record.ok:
                        continue
                    if record.error is None:  # a reply that breaks the contract: ask again with a new seed
                        seeds[i] += 1
                    still.append(i)           # a transport failure: the same request again
                pending = still
                if not pending:
                    break
            invalid = 0
            for i, record_in in enumerate(records):
                rec = final[i]
                item_id = Bench.item_id(condition, record_in)
                if rec.ok:
                    parsed = rec.parsed
                    probabilities = tuple(parsed["probabilities"][a] for a in ACTIONS)
                    predictions.append(Prediction(label, condition, split, item_id, probabilities, parsed["action"],
                                                  True, parsed.get("rationale"), rec.key, tries[i]))
                else:
                    invalid += 1
                    predictions.append(Prediction(label, condition, split, item_id, UNIFORM, "ambiguous", False, None,
                                                  rec.key, tries[i], rec.error or rec.parse_error))
            counts[f"{condition}/{split}"] = {"items": len(records), "invalid": invalid,
                                              "retried": sum(1 for t in tries if t > 1)}
    signature = make_signature(dataset=built.identity(), backend=backend.identity(),
                               decoding=first_request.decoding() if first_request else decoding,
                               prompt_template_hash=hash_text(template_text()), benchmark="mher")
    info = {"kind": "model", "label": label, "dataset": built.identity(), "backend": backend.identity(),
            "signature": signature.to_dict(), "options": options, "counts": counts,
            "records": os.path.join(str(args.out), "records.jsonl")}
    write_predictions(args.out, predictions, info)
    bad = sum(c["invalid"] for c in counts.values())
    log(f"[mher] {len(predictions)} predictions ({bad} invalid after retries) in {args.out}; signature {signature}")
    return Path(args.out)
