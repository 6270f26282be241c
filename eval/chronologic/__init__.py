"""Chronologic-EN evaluator: `histbench eval chronologic --mode MODE ...`.

Modes are registered in `MODES` (name -> `Mode`). Each mode lives in its own module of
this package, which exposes `MODES: list[Mode]`; the module names are listed in
`MODE_MODULES` (to add modes, add the module name there). A mode contributes its own
options in an argument group of the one `eval chronologic` parser; the options every
mode shares are defined here once (see `add_common_arguments`): --dataset, --revision,
--label and --limit (the options of every evaluator, eval/plugin.py), --out, --seed,
--permute-frames and the model options of the evaluator engine
(--model, --model-option, --max-concurrency, --batch-size). A mode must not redefine
them.

Run folders: after every run, run.json, results.json and items.jsonl (the run format,
histbench.core.runfolder) are written from chronologic's own files by `run_summary.py`;
chronologic's own results are in the folder's chronologic.json (files.py).

Reports: `histbench report chronologic RUN [RUN ...]` reads each run folder's
chronologic.json, whose "mode" field picks the reporter in `REPORTERS` (mode -> function
(list of (run_dir, results)), args) -> None), registered by the same modules (a module
may expose `REPORTERS: dict`).

Exporters: `histbench export lm-eval chronologic BUILD` (see `exporters()`; the CLI builds
the `export` command from every evaluator's exporters).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from histbench.core.errors import UsageError
from histbench.eval.plugin import BenchmarkEvaluator, add_report_run_arguments

# Modules of this package that define modes (each exposes MODES: list[Mode], and may
# expose REPORTERS: dict[str, Callable]). Add a module name here to add its modes.
MODE_MODULES: tuple[str, ...] = ("likelihood", "generation_modes", "analyses")


@dataclass(frozen=True)
class Mode:
    """One `--mode` of `histbench eval chronologic`.

    add_arguments(group): adds this mode's own options (names unique across modes; the
    common options of `add_common_arguments` are already there);
    run(args): does the work (args has the common options and every mode's options).
    """

    name: str
    help: str
    run: Callable[[argparse.Namespace], None]
    add_arguments: Callable[[argparse._ArgumentGroup], None] | None = None


MODES: dict[str, Mode] = {}
REPORTERS: dict[str, Callable] = {}


def register_mode(mode: Mode) -> None:
    if mode.name in MODES and MODES[mode.name] is not mode:
        raise ValueError(f"chronologic mode {mode.name!r} is registered twice")
    MODES[mode.name] = mode


def _load_modes() -> None:
    for module_name in MODE_MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        for mode in getattr(module, "MODES", ()):
            register_mode(mode)
        REPORTERS.update(getattr(module, "REPORTERS", {}))


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    from histbench.core.backends import add_model_arguments
    from histbench.eval.plugin import add_run_arguments

    parser.add_argument(
        "--mode", default="likelihood", metavar="MODE",
        help="what to run: " + ", ".join(f"{m.name} ({m.help})" for m in MODES.values())
        + " (default: likelihood)",
    )
    add_run_arguments(parser, "chronologic", limit="questions (by question_number)")
    parser.add_argument("--out", type=Path, help="run folder (created; an existing one is resumed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default: 0)")
    parser.add_argument(
        "--permute-frames", action="store_true",
        help="wrong-context experiment (paper 6.3): each question gets the metadata frame of another "
             "question of its group (seeded derangement, --seed), in likelihood and generate modes alike",
    )
    parser.add_argument("--frame-groups", choices=("authors", "reasoning_type"), default="authors",
                        help="--permute-frames groups: the authors' (world context, character modelling, topic "
                             "sentence + constrained generation, cloze / passage context; default) or reasoning types")
    add_model_arguments(parser)


def mode_of(args: argparse.Namespace) -> Mode:
    name = args.mode
    if name in MODES:
        return MODES[name]
    known = ", ".join(MODES)
    raise UsageError(f"unknown --mode {name!r} (available: {known})", field="--mode")


# --------------------------------------------------------------------------- evaluator


class ChronologicEvaluator(BenchmarkEvaluator):
    name = "chronologic"
    run_module = f"{__name__}.run_summary"

    def add_eval_arguments(self, parser: argparse.ArgumentParser) -> None:
        _load_modes()
        parser.description = (
            "Score models on Chronologic-EN. Modes: "
            + "; ".join(f"{m.name}: {m.help}" for m in MODES.values())
        )
        add_common_arguments(parser)
        for mode in MODES.values():
            if mode.add_arguments is not None:
                mode.add_arguments(parser.add_argument_group(f"--mode {mode.name}"))

    def run_eval(self, args: argparse.Namespace) -> None:
        _load_modes()
        mode_of(args).run(args)

    def run_folder(self, args: argparse.Namespace) -> Path | None:
        """--mode judge, style and self-rejection score the --run folder (and write into it); the
        other modes write --out."""
        run = getattr(args, "run", None)
        folder = run if getattr(args, "mode", None) in ("judge", "style", "self-rejection") and run else args.out
        return Path(folder) if folder else None

    def add_report_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_report_run_arguments(parser, "chronologic")
        parser.add_argument("--published", action="store_true",
                            help="free generation: show the paper's published Table 4/7 rows beside the runs")
        from .likelihood import add_published_argument

        add_published_argument(parser)

    def run_report(self, args: argparse.Namespace) -> None:
        from .report import run_report

        _load_modes()
        run_report(args, REPORTERS)

    def exporters(self) -> dict[str, dict]:
        from .lm_eval_export import EXPORTER

        return {"lm-eval": EXPORTER}

    def demo(self, built, work_dir: Path, report_dir: Path):
        from .demo import run_demo

        return run_demo(built, work_dir, report_dir)


EVALUATOR = ChronologicEvaluator()
