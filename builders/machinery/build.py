"""The builder interface every benchmark implements, and the build driver.

A benchmark lives in `builders/<name>/` and exposes `BUILDER`, an instance of a
`BenchmarkBuilder` subclass. The driver resolves the raw inputs against the benchmark's
source manifest, calls `build(ctx)` and hands the records to the writer::

    raw files -> resolve_inputs (exists, format, sha256) -> builder.build(ctx) -> BuildOutput
              -> write_build (schema check, parquet, card, histbench.json, atomic rename)
"""

from __future__ import annotations

import argparse
import gc
import importlib
import pkgutil
import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from histbench.core.errors import BuildError, UsageError
from histbench.core.progress import log
from histbench.core.resources import Resources

from .manifest import InputFile, SourceManifest, resolve_inputs
from .writer import BuildOutput, check_replaceable, utc_now, write_build

DEFAULT_OUT = Path("build")


@dataclass
class BuildContext:
    """What a builder gets: resolved inputs (role -> files), options (incl. `seed`)."""

    benchmark: str
    inputs: dict[str, list[InputFile]]
    options: dict
    resources: Resources
    manifest: SourceManifest
    extra_manifest: dict = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return int(self.options.get("seed", 0))

    def paths(self, role: str) -> list[Path]:
        return [f.path for f in self.inputs.get(role, [])]

    def path(self, role: str) -> Path | None:
        paths = self.paths(role)
        return paths[0] if paths else None

    def source_file(self, *parts: str) -> Path:
        """A file shipped in sources/<benchmark>/ (registries, prompt templates)."""
        return self.resources.source_dir(self.benchmark).joinpath(*parts)

    def log(self, message: str) -> None:
        log(f"[{self.benchmark}] {message}")


class BenchmarkBuilder(ABC):
    """Subclass per benchmark; set the class attributes and implement `build`."""

    name: ClassVar[str]
    version: ClassVar[str]
    title: ClassVar[str]
    # The config a dataset card marks `default` (what `load_dataset(folder)` gives without
    # a config name); None: the first config written.
    default_config: ClassVar[str | None] = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Build options beyond the input roles (which come from the manifest)."""

    def options_from_args(self, args: argparse.Namespace) -> dict:
        """The options dict passed to `build` from parsed CLI arguments."""
        return {}

    def demo_options(self) -> dict:
        """Options used by `histbench demo` when building the bundled sample."""
        return {}

    @abstractmethod
    def build(self, ctx: BuildContext) -> BuildOutput:
        """Turn resolved inputs into records per config and split."""

    def manifest(self, resources: Resources | None = None) -> SourceManifest:
        return SourceManifest.load(self.name, resources)

    def output_dir(self, out_root: Path) -> Path:
        return Path(out_root) / f"{self.name}-{self.version}"


# Python's cyclic collector runs a young-generation pass every 700 net allocations and
# re-scans the older generations every 10 of those. A build allocates millions of small
# objects that live until the dataset is written (records, their lists and dicts; a full
# ChronoCulture build holds some 58,000 records), none of them in reference cycles, so
# those passes only re-scan live data: at the default thresholds they cost about 1.2 s CPU
# of a 21 s full-width ChronoCulture build (bench/chronoculture_build.py). While a build
# runs the passes come 100 times less often; cyclic garbage (there is next to none) waits
# longer, and the thresholds the caller had are restored afterwards.
BUILD_GC_THRESHOLDS = (70_000, 50, 100)


_GC_LOCK = threading.Lock()
_GC_STATE = {"builds": 0, "before": None}  # builds running in this process, the thresholds before the first


@contextmanager
def fewer_collections(thresholds: tuple[int, int, int] = BUILD_GC_THRESHOLDS):
    """Raise the cyclic collector's thresholds while a build runs (never lower them). Builds
    running at once in threads share one raise: the thresholds from before the first come back
    when the last one ends."""
    with _GC_LOCK:
        if _GC_STATE["builds"] == 0:
            _GC_STATE["before"] = before = gc.get_threshold()
            gc.set_threshold(*(max(a, b) for a, b in zip(before, thresholds, strict=True)))
        _GC_STATE["builds"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_STATE["builds"] -= 1
            if _GC_STATE["builds"] == 0:
                gc.set_threshold(*_GC_STATE["before"])


def run_build(
    builder: BenchmarkBuilder,
    given: dict,
    *,
    options: dict | None = None,
    out_root: Path = DEFAULT_OUT,
    seed: int = 0,
    allow_checksum_mismatch: bool = False,
    resources: Resources | None = None,
) -> Path:
    """Resolve inputs, build, check and write; returns the output folder."""
    with fewer_collections():
        return _run_build(builder, given, options=options, out_root=out_root, seed=seed,
                          allow_checksum_mismatch=allow_checksum_mismatch, resources=resources)


def _run_build(builder: BenchmarkBuilder, given: dict, *, options: dict | None, out_root: Path, seed: int,
               allow_checksum_mismatch: bool, resources: Resources | None) -> Path:
    resources = resources or Resources.default()
    started = utc_now()
    manifest = builder.manifest(resources)
    inputs = resolve_inputs(manifest, given, allow_checksum_mismatch=allow_checksum_mismatch)
    options = {"seed": seed, **(options or {})}
    options["allow_checksum_mismatch"] = allow_checksum_mismatch
    check_replaceable(builder.output_dir(out_root), builder.name)   # before a long build, not after it
    ctx = BuildContext(builder.name, inputs, options, resources, manifest)
    ctx.log(f"building {builder.name} {builder.version} from {sum(len(v) for v in inputs.values())} input(s)")
    output = builder.build(ctx)
    if not isinstance(output, BuildOutput):
        raise BuildError(f"{builder.name}: build() must return a BuildOutput")
    return write_build(
        benchmark=builder.name,
        version=builder.version,
        output=output,
        inputs=inputs,
        options=options,
        out_dir=builder.output_dir(out_root),
        resources=resources,
        started=started,
        extra_manifest=ctx.extra_manifest,
        default_config=builder.default_config,
    )


def discover_builders() -> dict[str, BenchmarkBuilder]:
    """Every benchmark package under histbench.builders that defines BUILDER, by name."""
    import histbench.builders as root

    found: dict[str, BenchmarkBuilder] = {}
    for module in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name):
        if not module.ispkg or module.name == "machinery" or module.name.startswith("_"):
            continue
        package = importlib.import_module(f"histbench.builders.{module.name}")
        builder = getattr(package, "BUILDER", None)
        if builder is not None:
            found[builder.name] = builder
    return found


def get_builder(name: str) -> BenchmarkBuilder:
    builders = discover_builders()
    if name not in builders:
        from histbench.core.suggest import did_you_mean

        known = ", ".join(sorted(builders)) or "none"
        raise UsageError(f"unknown benchmark {name!r}{did_you_mean(name, builders)} (known: {known})")
    return builders[name]
