"""The valence part of `make demo`: two toy masked LMs, fill-mask, beta and delta, the report.

What it shows: the whole loop on the bundled sample (30 sentences written for histbench,
10 per group) with two tiny BERTs trained for a few seconds on toy early and modern
corpora (see toy.py), scored with the bundled annotations of their predictions, plus
automatic sigma from the same toy corpora for comparison. The models are toys: the
numbers check the plumbing and that the measure separates an early-trained from a
modern-trained model; they are not results about any real model.
"""

from __future__ import annotations

import time
from pathlib import Path

from histbench.core.progress import log

TOY_NOTE = (
    "a 2-layer toy BERT trained for seconds on a 60-line imitation Early Modern English corpus "
    "(sources/valence/sample/toy_corpus_early.txt); not a real model"
)
TOY_MODERN_NOTE = (
    "the same toy architecture and vocabulary trained on a 60-line present-day English corpus "
    "(sources/valence/sample/toy_corpus_modern.txt); not a real model"
)


def run_demo(built, work_dir: Path, report_dir: Path, *, top_k: int = 10):
    from histbench.core.resources import Resources

    from .autosigma import automatic_sigmas, count_corpus
    from .reporting import build_section, summary_table
    from .run import ModelSpec, evaluate
    from .runfolder import RunFolder
    from .scoring import ScoreOptions, score_run
    from .toy import build_demo_models
    from .vocabulary import predicted_vocabulary

    started = time.monotonic()
    sample_dir = Resources.default().source_dir("valence") / "sample"
    paths = build_demo_models(Path(work_dir) / "toy-models", sample_dir)
    log(f"[valence] toy models ready ({time.monotonic() - started:.1f} s)")
    run_dir = Path(work_dir) / "run"
    if run_dir.exists():   # a fresh run each time: the sample build may have changed since the last demo
        import shutil

        shutil.rmtree(run_dir)
    evaluate(built.path, [ModelSpec("toy-early", f"hf:{paths['toy-early']}"), ModelSpec("toy-modern", f"hf:{paths['toy-modern']}")],
             run_dir, top_k=top_k, options={"device": "cpu"})
    run = RunFolder.open(run_dir)
    sentences = run.sentences()
    # The bundled annotations cover the toys' top 20 on the machine they were written on;
    # elsewhere a near-tie may bring in an unannotated word: score over the annotated ones
    # and report that mass rather than fail.
    options = ScoreOptions(allow_unannotated=True, fold_case=run.fold_case)
    scores = score_run(sentences, run.predictions(), run.annotations(), options, groups=run.manifest.get("groups"))
    unannotated = scores.counts["candidate_status"].get("unannotated", 0)
    preface = (
        "**Toy models, not a real result.** No BERT-style masked LM can be loaded offline here, and an "
        "untrained model's fillers are random, so the demo trains two tiny BERTs for a few seconds each "
        "(fixed seed) on two 60-line toy corpora written for histbench: an imitation Early Modern English "
        "one and a present-day one. The check is qualitative: the early toy should lean to negative "
        "beta (and the better delta on EME sentences), the modern toy to positive beta on ME sentences. "
        f"Fill-mask went through the evaluator engine's hf backend (top-{top_k}); sigma comes from the "
        f"bundled annotations (`sources/valence/sample/annotations.csv`, {len(run.annotations())} sentence x word rows). "
        f"Unannotated top-{top_k} words (a near-tie that ranks differently on this CPU): {unannotated}, scored "
        "without them and shown as `?`."
    )
    from .coverage import vocabulary_coverage

    section = build_section(
        scores, sentences, report_dir, link_prefix="valence/", plot="box",
        coverage=vocabulary_coverage(run.models, scores.candidates),
        title="Temporal valence (toy models)", preface=preface,
        model_notes={"toy-early": TOY_NOTE, "toy-modern": TOY_MODERN_NOTE},
    )
    # automatic sigma from the same toy corpora, clearly labelled, for comparison
    early = count_corpus([sample_dir / "toy_corpus_early.txt"])
    modern = count_corpus([sample_dir / "toy_corpus_modern.txt"])
    vocabulary, _ = predicted_vocabulary(run)
    auto_rows = automatic_sigmas(vocabulary, sentences, early, modern, run.scale(), min_count=2, fold_case=run.fold_case)
    automatic = [
        {"sentence_id": r["sentence_id"], "token": r["token"], "sigma": float(r["sigma"]) if r["sigma"] else None,
         "skipped": not r["sigma"], "annotator": r["annotator"], "method": "automatic", "comment": r["comment"]}
        for r in auto_rows
    ]
    auto_scores = score_run(sentences, run.predictions(), automatic,
                            ScoreOptions(sigma_source="automatic", allow_unannotated=True, fold_case=run.fold_case),
                            groups=run.manifest.get("groups"))
    manual = {(a["sentence_id"], a["token"].casefold()): a for a in run.annotations()}
    compared = [(manual.get((a["sentence_id"], a["token"].casefold())), a) for a in automatic if a["sigma"] is not None]
    compared = [(m, a) for m, a in compared if m is not None and not m["skipped"]]
    agree = sum(m["sigma"] == a["sigma"] for m, a in compared)
    section.markdown += "\n".join([
        "",
        "### Automatic sigma from the toy corpora (labelled automatic)",
        "",
        "The same runs scored with sigma derived from relative frequencies in the two toy corpora "
        "(`histbench valence auto-sigma`, normalised frequency difference snapped to the scale, words seen "
        f"fewer than 2 times skipped): {sum(a['sigma'] is not None for a in automatic)} of {len(automatic)} "
        f"sentence x word pairs get a value; they equal the manual value in {agree} of {len(compared)} pairs "
        "annotated both ways. Automatic values are global, not contextual.",
        "",
        summary_table(auto_scores, "raw"),
        "",
        f"(valence demo: {time.monotonic() - started:.1f} s)",
        "",
    ])
    section.runs = [run_dir]
    section.data["automatic"] = {"summary": auto_scores.summary, "agreement": {"equal": agree, "compared": len(compared)}}
    return section
