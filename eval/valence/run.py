"""`histbench eval valence`: top-k fill-mask predictions of one or more masked LMs.

Each model answers every sentence through the evaluator engine (a `FillMaskRequest` per
sentence, the canonical [MASK] rewritten by the backend to the model's own mask token),
through its own run store under RUN/models/<label>/, so an interrupted or repeated run
never asks twice and a later `--model` adds a model to the same run. The predictions of
all models are then written to RUN/predictions.parquet (schema valence.predictions):
the vocabulary entry (`token`), the word it spells (`word`), its kind (whole word,
sub-word piece, special token) and the model's raw softmax probability.

Cased and uncased models: the sentence is given as written; an uncased model's
tokenizer lower-cases it itself. Predicted words are matched to annotations case-folded
by default, so 'Thou' (cased model) and 'thou' (uncased model) share one annotation; a
build made with --case-sensitive-tokens keeps them apart.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from histbench.builders.valence.scale import scale_from_manifest
from histbench.core.dataset import BuiltDataset
from histbench.core.errors import EvalError, UsageError
from histbench.core.progress import log

from .metrics import Piece, classify_piece, uses_word_start_markers
from .runfolder import RUN_MANIFEST, RunFolder, slugify


@dataclass(frozen=True)
class ModelSpec:
    label: str
    spec: str


def parse_model_specs(values: list[str]) -> list[ModelSpec]:
    """`--model SPEC` or `--model LABEL=SPEC`; labels default to the model's name."""
    if not values:
        raise UsageError("give at least one --model (e.g. --model hf:bert-base-uncased)", field="--model")
    out: list[ModelSpec] = []
    for value in values:
        label, sep, spec = value.partition("=")
        if not sep or ":" in label:
            label, spec = "", value
        spec = spec.strip()
        if not label:
            target = spec.split(":", 1)[1] if ":" in spec else spec
            target = target.split("@", 1)[0] if not Path(target).expanduser().exists() else target
            label = Path(target.rstrip("/")).name or target
        out.append(ModelSpec(label.strip(), spec))
    labels = [m.label for m in out]
    clashes = sorted({lab for lab in labels if labels.count(lab) > 1})
    if clashes:
        raise UsageError(f"two --model options get the label {clashes[0]!r}: name them with --model LABEL=SPEC", field="--model")
    slugs = [slugify(lab) for lab in labels]
    if len(set(slugs)) != len(slugs):
        raise UsageError("two model labels map to the same folder name: choose distinct labels (--model LABEL=SPEC)", field="--model")
    return out


def vocabulary_traits(backend) -> tuple[bool | None, frozenset[str]]:
    """(does the vocabulary mark word starts with 'Ġ'/'▁'?, the special tokens) from the
    backend's tokenizer when it has one (hf); (None, empty) otherwise."""
    try:
        tokenizer = getattr(backend, "tokenizer", None)
    except EvalError:   # e.g. every answer is stored and the tokenizer cannot be loaded now
        tokenizer = None
    if tokenizer is None:
        return None, frozenset()
    try:
        vocabulary = tokenizer.get_vocab()
    except (AttributeError, NotImplementedError):
        return None, frozenset(getattr(tokenizer, "all_special_tokens", []) or [])
    return uses_word_start_markers(vocabulary), frozenset(tokenizer.all_special_tokens)


def prediction_rows(label: str, sentences: list[dict], results: list[list[dict] | None], *,
                    marker_vocabulary: bool | None = None, special_tokens: frozenset[str] = frozenset()) -> tuple[list[dict], dict]:
    """Rows of the predictions table for one model, and counts by kind.

    marker_vocabulary: whether the model's vocabulary marks word starts (None: guessed from
    the predicted pieces); special_tokens: the tokenizer's special tokens (never scored).
    """
    pieces = [c.get("piece") or c.get("token") or "" for cands in results if cands for c in cands]
    markers = uses_word_start_markers(pieces) if marker_vocabulary is None else marker_vocabulary
    rows, kinds = [], {"word": 0, "subword": 0, "special": 0}
    for sentence, cands in zip(sentences, results, strict=True):
        if not cands:
            continue
        after_space = sentence["left"][-1:].isspace() if sentence["left"] else False
        for rank, c in enumerate(cands, start=1):
            piece = c.get("piece") if c.get("piece") is not None else c.get("token", "")
            if piece in special_tokens:
                kind = Piece(piece, "special")
            else:
                kind = classify_piece(piece, c.get("token"), marker_vocabulary=markers, after_space=after_space)
            kinds[kind.kind] += 1
            rows.append({
                "sentence_id": sentence["sentence_id"],
                "model": label,
                "rank": rank,
                "token": piece,
                "token_id": c.get("token_id"),
                "word": kind.word,
                "kind": kind.kind,
                "probability": min(1.0, max(0.0, float(c["probability"]))),
            })
    return rows, kinds


def evaluate(
    dataset: str | Path,
    models: list[ModelSpec],
    out: Path,
    *,
    top_k: int = 10,
    options: dict | None = None,
    copy_dataset_annotations: bool = True,
    revision: str | None = None,
    limit: int | None = None,
) -> dict:
    """Run every model on every sentence (the first `limit` with a limit); write
    RUN/predictions.parquet. Returns counts. revision: of a Hub dataset id."""
    from histbench.core.backends import load_backend

    if top_k < 1:
        raise UsageError("--top-k must be at least 1", field="--top-k")
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1", field="--limit")
    built = BuiltDataset.open(dataset, revision=revision, benchmark="valence")
    build_options = built.manifest.get("options", {})
    scale = scale_from_manifest(build_options)
    fold_case = not build_options.get("case_sensitive_tokens", False)
    sentences = built.load("sentences", "test").to_list()[:limit]
    if not sentences:
        raise EvalError("the build holds no sentences", file=built.path)
    groups = build_options.get("groups") or built.manifest.get("summary", {}).get("sentences", {}).get("groups")
    # every model is checked before the run folder exists: a wrong spec leaves nothing behind
    backends = {}
    for model in models:
        backend = load_backend(model.spec, options or {})
        if "fill_mask" not in backend.supports:
            raise EvalError(
                f"model {model.spec!r} cannot fill masks (it supports: {', '.join(sorted(backend.supports)) or 'nothing'}); "
                "temporal valence needs a masked LM such as hf:bert-base-uncased", field="--model",
            )
        backends[model.label] = backend
    new_folder = not (Path(out).expanduser() / RUN_MANIFEST).is_file()
    run = RunFolder.create_or_open(
        out,
        dataset_identity=built.identity(),
        settings={"top_k": top_k, "fold_case": fold_case, "scale": scale.to_list(), "limit": limit},
    )
    try:
        return _predict(run, built, sentences, models, backends, groups, top_k, copy_dataset_annotations)
    except BaseException:
        if new_folder and not any((run.path / "models").glob("*/records.jsonl")):
            # no model answered anything: the new folder would only hold settings that lock later runs
            shutil.rmtree(run.path, ignore_errors=True)
        raise


def _predict(run: RunFolder, built: BuiltDataset, sentences: list[dict], models: list[ModelSpec], backends: dict,
             groups, top_k: int, copy_dataset_annotations: bool) -> dict:
    from histbench.core.backends import FillMaskRequest
    from histbench.core.runstore import RunStore

    run.manifest["groups"] = groups
    run.write_sentences(sentences)
    existing = [p for p in run.predictions() if p["model"] not in {m.label for m in models}]
    new_rows: list[dict] = []
    per_model = {}
    for model in models:
        backend = backends[model.label]
        store = RunStore.open(run.store_dir(model.label), backend=backend, dataset=built,
                              options={"benchmark": "valence", "top_k": top_k, "label": model.label})
        requests = [FillMaskRequest(text=s["text"], top_k=top_k) for s in sentences]
        log(f"[valence] {model.label}: {len(requests)} sentences, top-{top_k}")
        records = store.run(requests, desc=f"fill-mask {model.label}")
        results = [r.response.get("candidates") if r.response is not None else None for r in records]
        failed = [(s["sentence_id"], r.error) for s, r in zip(sentences, records, strict=True) if r.response is None]
        markers, specials = vocabulary_traits(backend)
        rows, kinds = prediction_rows(model.label, sentences, results, marker_vocabulary=markers, special_tokens=specials)
        new_rows += rows
        per_model[model.label] = {
            "spec": backend.spec, "sentences": len(sentences), "failed": len(failed), "failures": failed[:20],
            "kinds": kinds, "reused": store.last_stats.get("reused", 0), "asked": store.last_stats.get("asked", 0),
        }
        run.upsert_model({
            "label": model.label, "spec": backend.spec, "store": run.store_dir(model.label).relative_to(run.path).as_posix(),
            "identity": backend.identity(), "failed": len(failed), "kinds": kinds,
        })
        backend.close()
    order = {label: i for i, label in enumerate(run.model_labels())}
    sentence_order = {s["sentence_id"]: i for i, s in enumerate(sentences)}
    all_rows = sorted(existing + new_rows, key=lambda r: (order.get(r["model"], len(order)), sentence_order.get(r["sentence_id"], 0), r["rank"]))
    run.write_predictions(all_rows)
    run.save()
    copied = None
    if copy_dataset_annotations and "annotations" in built.configs and not run.annotations_path.is_file():
        copied = copy_build_annotations(run, built)
    return {"run": str(run.path), "models": per_model, "predictions": len(all_rows), "copied_annotations": copied}


def copy_build_annotations(run: RunFolder, built: BuiltDataset) -> dict:
    """Annotations shipped with the build become the run's starting annotations (as they are:
    coverage of this run's predictions is reported by the report, not required here)."""
    rows = built.load("annotations", "test").to_list()
    run.write_annotations(rows)
    run.manifest.setdefault("annotation_imports", []).append(
        {"from_build": str(built.path), "data_sha256": built.manifest.get("data_sha256"), "rows": len(rows)}
    )
    run.save()
    return {"rows": len(rows)}
