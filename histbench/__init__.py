"""histbench: rebuild published benchmarks about the past from the raw sources you hold
under licence, as versioned Hugging Face datasets, and score language models on them as
the papers did.

    import histbench

    folder = histbench.build("chronologic", sample=True)    # or questions="chronologic_en_1.0.jsonl"
    questions = histbench.load(folder, "questions", split="test")
    run = histbench.evaluate("chronologic", baseline="random", dataset=folder)
    run.metrics, run.records, run.signature
    histbench.report("chronologic", [run], out="reports/chronologic")

`build`, `validate`, `push`, `evaluate` and `report` are the `histbench` command's
subcommands as functions: they take its options as keyword arguments (see
histbench.api). `load` opens one config of a build; `results` reads a finished run folder;
`benchmarks` lists what can be built.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from histbench.core.results import Results

from .api import benchmarks, build, evaluate, load, push, report, results, validate

try:
    __version__ = _version("histbench")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = ["Results", "__version__", "benchmarks", "build", "evaluate", "load", "push", "report", "results",
           "validate"]
