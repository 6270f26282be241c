"""Training the style judges on your own corpora (paper Appendix A.1.1, A.1.2).

    python -m histbench.eval.chronologic.style.train date --corpus dated.parquet --out models/date-predictor
    python -m histbench.eval.chronologic.style.train authenticity --corpus auth.parquet --out models/authenticity

`--base` is any Hugging Face encoder (Hub id or local folder; default
microsoft/deberta-v3-large). Corpus formats and the grouped split: style/corpus.py.

Date predictor: a 36-way classification head over the ten-year bins 1680-2040, trained
with cross-entropy against Gaussian soft targets (sigma 15 years, renormalised; dating.py),
max length 256 tokens. Passages that are not at least one sentence are excluded (the paper
excludes fragments from date scoring; `--keep-fragments` keeps them), counted in the
report. Model selection: the epoch with the lowest validation CRPS; the test split's CRPS
(overall and for 1831-1930) goes into the judge's metadata.

Authenticity detector: a 2-way head (1 = authentic), cross-entropy, texts normalised as
in encoders.py. Selection by validation AUROC; test accuracy, F1 and AUROC are reported,
and the same for passages of `--holdout-generator` models, which are kept out of training
and validation entirely (the paper's held-out-model test).

Optimisation: AdamW (lr 2e-5, weight decay 0.01), linear warm-up over 6% of the steps then
linear decay, batch 16, 3 epochs, bf16 autocast on a CUDA GPU that supports it, fixed seed.
The output folder gets the best checkpoint (`save_pretrained`), its tokenizer,
`histbench_style.json` and `training_report.json`; it is written in a temporary sibling
and moved into place at the end, so an interrupted training leaves no half judge behind.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from histbench.core.errors import HistbenchError, UsageError
from histbench.core.hashing import sha256_path
from histbench.core.progress import log, progress

from . import dating
from .conformal import is_sentence
from .corpus import grouped_split, read_authenticity_corpus, read_dated_corpus
from .encoders import (
    AUTHENTICITY,
    DATE,
    DEFAULT_BASE_MODEL,
    DEFAULT_MAX_LENGTH,
    META_NAME,
    NORMALISATION,
    normalise_text,
    pick_device,
)


def _batches(n: int, size: int, rng: np.random.Generator | None):
    order = rng.permutation(n) if rng is not None else np.arange(n)
    return [order[i:i + size] for i in range(0, n, size)]


def _date_metrics(probs: np.ndarray, dates: np.ndarray) -> dict:
    if len(dates) == 0:
        return {"n": 0}
    scores = dating.crps(probs, dates)
    core = (dates >= dating.CORE_PERIOD[0]) & (dates <= dating.CORE_PERIOD[1])
    mean = dating.mean_date(probs)
    return {"n": int(len(dates)), "crps": float(scores.mean()), "crps_1831_1930": float(scores[core].mean()) if core.any() else None,
            "mean_abs_error_years": float(np.abs(mean - dates).mean()), "mean_signed_error_years": float((mean - dates).mean())}


def _auth_metrics(p: np.ndarray, labels: np.ndarray) -> dict:
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    if len(labels) == 0:
        return {"n": 0}
    predicted = (p >= 0.5).astype(int)
    auroc = float(roc_auc_score(labels, p)) if len(np.unique(labels)) == 2 else None
    return {"n": int(len(labels)), "accuracy": float(accuracy_score(labels, predicted)),
            "f1": float(f1_score(labels, predicted, zero_division=0)), "auroc": auroc}


def train_judge(kind: str, corpus_path: str | Path, out: str | Path, *, base: str = DEFAULT_BASE_MODEL, epochs: int = 3,
                batch_size: int = 16, grad_accum: int = 1, lr: float = 2e-5, weight_decay: float = 0.01, warmup: float = 0.06,
                max_length: int = DEFAULT_MAX_LENGTH, seed: int = 0, device: str | None = None, validation: float = 0.1,
                test: float = 0.1, holdout_generators=(), keep_fragments: bool = False, max_steps: int | None = None,
                eval_batch_size: int = 64, precision: str = "auto") -> dict:
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    if kind not in (DATE, AUTHENTICITY):
        raise UsageError(f"unknown judge kind {kind!r} (date or authenticity)")
    out = Path(out)
    started = time.time()
    corpus = read_dated_corpus(corpus_path) if kind == DATE else read_authenticity_corpus(corpus_path)
    frame = corpus.frame
    excluded = dict(corpus.excluded)
    if kind == DATE and not keep_fragments:
        sentence = frame["text"].map(is_sentence)
        excluded["not a complete sentence"] = int((~sentence).sum())
        frame = frame[sentence].reset_index(drop=True)
    split = grouped_split(frame, validation, test, seed)
    heldout_mask = np.zeros(len(frame), dtype=bool)
    if holdout_generators:
        if "generator" not in frame.columns:
            raise UsageError("--holdout-generator needs a 'generator' column in the corpus")
        heldout_mask = frame["generator"].astype(str).isin(set(holdout_generators)).to_numpy() & (frame["label"].to_numpy() == 0)
    parts = {name: np.flatnonzero((split == name) & ~heldout_mask) for name in ("train", "validation", "test")}
    if kind == AUTHENTICITY and heldout_mask.any():
        parts["heldout_models"] = np.concatenate([np.flatnonzero(heldout_mask), parts["test"][frame["label"].to_numpy()[parts["test"]] == 1]])
    if len(parts["train"]) == 0 or len(parts["validation"]) == 0:
        raise UsageError(f"the split left {len(parts['train'])} training and {len(parts['validation'])} validation passages")

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    device = pick_device(device)
    num_labels = dating.N_BINS if kind == DATE else 2
    try:
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=num_labels, ignore_mismatched_sizes=True)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the base encoder {base!r}: {exc}") from exc
    if kind == DATE:
        model.config.id2label = {i: f"{int(e)}-{int(e) + 9}" for i, e in enumerate(dating.EDGES[:-1])}
    else:
        model.config.id2label = {0: "model-written", 1: "authentic"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.to(device)
    scheme = NORMALISATION if kind == AUTHENTICITY else None
    texts = [normalise_text(t, scheme) for t in frame["text"].tolist()]
    if kind == DATE:
        dates = frame["date"].to_numpy(dtype=float)
        targets = dating.soft_targets(dates)
    else:
        labels = frame["label"].to_numpy(dtype=int)

    use_bf16 = device.startswith("cuda") and torch.cuda.is_bf16_supported() if precision == "auto" else precision == "bf16"
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps_per_epoch = math.ceil(len(parts["train"]) / batch_size / grad_accum)
    total_steps = max_steps or steps_per_epoch * epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup * total_steps), total_steps)

    def forward(index):
        encoded = tokenizer([texts[i] for i in index], truncation=True, max_length=max_length, padding=True,
                            return_tensors="pt").to(device)
        with torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16, enabled=use_bf16):
            return model(**encoded).logits.float()

    def evaluate(index) -> dict:
        model.eval()
        rows = []
        with torch.no_grad():
            for batch in _batches(len(index), eval_batch_size, None):
                rows.append(torch.softmax(forward(index[batch]), dim=-1).cpu().numpy())
        model.train()
        probs = np.concatenate(rows) if rows else np.zeros((0, num_labels))
        if kind == DATE:
            return _date_metrics(probs, dates[index])
        return _auth_metrics(probs[:, 1], labels[index])

    tmp = out.with_name(f".{out.name}.training")
    best_dir = tmp / "best"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    history = []
    best = None
    step = 0
    model.train()
    try:
        for epoch in range(epochs):
            batches = _batches(len(parts["train"]), batch_size, rng)
            running = []
            for n, batch in enumerate(progress(batches, desc=f"train {kind} epoch {epoch + 1}/{epochs}", unit="batch")):
                index = parts["train"][batch]
                logits = forward(index)
                if kind == DATE:
                    target = torch.tensor(targets[index], dtype=torch.float32, device=device)
                    loss = -(target * torch.log_softmax(logits, dim=-1)).sum(dim=-1).mean()
                else:
                    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(labels[index], device=device))
                (loss / grad_accum).backward()
                running.append(float(loss.detach()))
                if (n + 1) % grad_accum == 0 or n + 1 == len(batches):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
                    step += 1
                    if max_steps and step >= max_steps:
                        break
            metrics = evaluate(parts["validation"])
            key = metrics["crps"] if kind == DATE else -(metrics["auroc"] if metrics["auroc"] is not None else metrics["accuracy"])
            history.append({"epoch": epoch + 1, "steps": step, "train_loss": float(np.mean(running)) if running else None,
                            "validation": metrics})
            log(f"style {kind}: epoch {epoch + 1}: train loss {history[-1]['train_loss']:.4f}, validation {metrics}")
            if best is None or key < best[0]:
                best = (key, epoch + 1)
                model.save_pretrained(best_dir)
                tokenizer.save_pretrained(best_dir)
            if max_steps and step >= max_steps:
                break
        model = AutoModelForSequenceClassification.from_pretrained(best_dir).to(device)
        results = {name: evaluate(index) for name, index in parts.items() if name != "train"}
        report = {
            "kind": kind, "base_model": base, "corpus": {"file": str(corpus_path), "sha256": sha256_path(Path(corpus_path)),
                                                         "rows_read": int(len(corpus.frame)) + sum(corpus.excluded.values()),
                                                         "excluded": excluded},
            "split_sizes": {name: int(len(index)) for name, index in parts.items()},
            "split": "given 'split' column" if "split" in frame.columns else "grouped by author and volume (connected components)",
            "options": {"epochs": epochs, "batch_size": batch_size, "grad_accum": grad_accum, "lr": lr, "weight_decay": weight_decay,
                        "warmup": warmup, "max_length": max_length, "seed": seed, "device": device, "bf16": bool(use_bf16),
                        "validation": validation, "test": test, "holdout_generators": list(holdout_generators),
                        "keep_fragments": keep_fragments, "max_steps": max_steps},
            "best_epoch": best[1], "history": history, "results": results, "seconds": round(time.time() - started, 1),
        }
        meta = {"kind": kind, "base_model": base, "max_length": max_length, "text_normalisation": scheme,
                "bins": {"start": dating.BIN_START, "end": dating.BIN_END, "width": dating.BIN_WIDTH} if kind == DATE else None,
                "sigma_years": dating.SIGMA_YEARS if kind == DATE else None, "metrics": results}
        final = tmp / "judge"
        shutil.move(str(best_dir), final)
        (final / META_NAME).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        (final / "training_report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(final, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m histbench.eval.chronologic.style.train",
                                     description="Train a Chronologic style judge (date predictor or authenticity detector).")
    parser.add_argument("kind", choices=(DATE, AUTHENTICITY))
    parser.add_argument("--corpus", required=True, type=Path, help="passages (.parquet/.csv/.tsv/.jsonl); see style/corpus.py")
    parser.add_argument("--out", required=True, type=Path, help="output folder for the trained judge")
    parser.add_argument("--base", default=DEFAULT_BASE_MODEL, help=f"encoder to fine-tune (default {DEFAULT_BASE_MODEL})")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--warmup", type=float, default=0.06, help="share of steps for linear warm-up")
    parser.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH)
    parser.add_argument("--max-steps", type=int, default=None, help="stop after this many optimiser steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda when available)")
    parser.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto")
    parser.add_argument("--validation", type=float, default=0.1, help="share of author/volume groups for validation")
    parser.add_argument("--test", type=float, default=0.1, help="share of author/volume groups for test")
    parser.add_argument("--holdout-generator", action="append", default=[], metavar="NAME",
                        help="authenticity: keep this generator's passages out of training (repeatable)")
    parser.add_argument("--keep-fragments", action="store_true", help="date: keep passages shorter than a sentence")
    return parser


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    try:
        report = train_judge(args.kind, args.corpus, args.out, base=args.base, epochs=args.epochs, batch_size=args.batch_size,
                             grad_accum=args.grad_accum, lr=args.lr, weight_decay=args.weight_decay, warmup=args.warmup,
                             max_length=args.max_length, seed=args.seed, device=args.device, validation=args.validation,
                             test=args.test, holdout_generators=args.holdout_generator, keep_fragments=args.keep_fragments,
                             max_steps=args.max_steps, precision=args.precision)
    except HistbenchError as error:
        print(f"histbench: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report["results"], indent=2))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
