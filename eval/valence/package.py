"""`histbench valence package RUN`: a run's tables as a versioned dataset folder.

The run's sentences, predictions and annotations (already checked against the valence
schemas) are written by the project's dataset writer into a folder such as
build/valence-run-1.0.0 with a dataset card, histbench.json and one parquet config
each, so they load with `datasets.load_dataset(folder, "predictions")` and upload with
`histbench push`. The run manifest (models, their identities, imports) goes into
histbench.json under `run`.
"""

from __future__ import annotations

from pathlib import Path

from histbench.builders.machinery.writer import BuildOutput, write_build
from histbench.core.errors import EvalError
from histbench.core.markdown import code_span, escape_markdown

from .runfolder import RunFolder


def package_run(run: RunFolder, out: Path | None = None) -> Path:
    from histbench.builders.valence import BUILDER

    predictions = run.predictions()
    if not predictions:
        raise EvalError("this run holds no predictions to package", file=run.path)
    configs = {"sentences": {"test": run.sentences()}, "predictions": {"test": predictions}}
    annotations = run.annotations()
    if annotations:
        configs["annotations"] = {"test": annotations}
    models = run.model_labels()
    summary = {
        "run": run.path.name,
        "models": models,
        "top_k": run.top_k,
        "rows": {name: len(splits["test"]) for name, splits in configs.items()},
        "annotators": sorted({a["annotator"] for a in annotations}),
    }
    markdown = (
        f"Run {code_span(run.path.name)}: {len(configs['sentences']['test'])} sentences, models "
        f"{', '.join(code_span(m) for m in models)}, top-{run.top_k} predictions "
        f"({len(predictions)} rows), {len(annotations)} annotation rows"
        f"{' by ' + ', '.join(escape_markdown(a) for a in summary['annotators']) if annotations else ''}."
    )
    out = Path(out) if out else Path("build") / f"valence-run-{BUILDER.version}"
    return write_build(
        benchmark="valence", version=BUILDER.version, output=BuildOutput(configs, summary, markdown),
        inputs={}, options={"scale": run.manifest.get("scale"), "case_sensitive_tokens": not run.fold_case,
                            "groups": run.manifest.get("groups"), "packaged_from_run": True},
        out_dir=out, extra_manifest={"run": run.manifest},
    )
