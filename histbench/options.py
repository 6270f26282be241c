"""Every command's options, declared once, for two front ends.

A benchmark declares its options the way argparse is told them (`add_argument`,
`add_argument_group`), on an `OptionSet`. The command line (histbench.cli) adds the set to
its argparse parser; the Python API (histbench.api) resolves keyword arguments against
the same set, with no parser: each keyword is an option's long name with dashes as
underscores (`--max-new-tokens` is `max_new_tokens`), checked and completed as the
command would (unknown names, flags that are not booleans, choices, required options,
a string converted by the option's type, defaults). So both accept the same options, with
the same defaults, and an option added for one reaches the other.

`build_options`, `eval_options` and `report_options` are the option sets of `histbench
build | eval | report BENCHMARK`; `VALIDATE` and `PUSH` those of `validate` and `push`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from histbench.core.errors import UsageError

_FLAG_ACTIONS = {"store_true": False, "store_false": True}


@dataclass(frozen=True)
class Option:
    """One option as declared: its flags and argparse's keywords."""

    flags: tuple[str, ...]
    spec: dict
    group: int | None

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def flag(self) -> str:
        """The name the command line shows: the longest flag (or the positional's name)."""
        return max(self.flags, key=len)

    @property
    def keyword(self) -> str:
        """The API's keyword: the long name with dashes as underscores (a positional: its name)."""
        return self.flags[0] if self.positional else self.flag.lstrip("-").replace("-", "_")

    @property
    def dest(self) -> str:
        return self.spec.get("dest") or self.keyword

    @property
    def action(self) -> str | None:
        return self.spec.get("action")

    @property
    def is_flag(self) -> bool:
        return self.action in _FLAG_ACTIONS

    @property
    def many(self) -> bool:
        """Whether it takes a list: repeatable, or several values at once."""
        return self.action == "append" or self.spec.get("nargs") not in (None, "?")

    @property
    def required(self) -> bool:
        if self.positional:
            return self.spec.get("nargs") not in ("?", "*") and "default" not in self.spec
        return bool(self.spec.get("required"))

    def default(self) -> Any:
        if self.is_flag:
            return self.spec.get("default", _FLAG_ACTIONS[self.action])
        default = self.spec.get("default")
        if isinstance(default, str) and self.spec.get("type") is not None:
            return self._convert(default)   # as argparse does with a string default
        return default

    def _convert(self, value: Any) -> Any:
        kind = self.spec.get("type")
        if kind is not None and isinstance(value, str):
            try:
                value = kind(value)
            except argparse.ArgumentTypeError as exc:
                raise UsageError(f"argument {self.flag}: {exc}", field=self.keyword) from exc
            except (TypeError, ValueError) as exc:
                name = getattr(kind, "__name__", repr(kind))
                raise UsageError(f"argument {self.flag}: invalid {name} value: {value!r}", field=self.keyword) from exc
        elif isinstance(value, PathLike) and kind is not Path:
            value = str(Path(value))
        choices = self.spec.get("choices")
        if choices is not None and value not in choices:
            shown = ", ".join(repr(c) for c in choices)
            raise UsageError(f"argument {self.flag}: invalid choice: {value!r} (choose from {shown})",
                             field=self.keyword)
        return value

    def value(self, given: Any, prog: str) -> Any:
        """A keyword argument's value as the command would have parsed it."""
        if self.is_flag:
            if not isinstance(given, bool):
                raise UsageError(f"{prog}: {self.keyword} is a flag: give True or False", field=self.keyword)
            return given
        if self.many:
            if isinstance(given, Mapping):
                items = [f"{k}={v}" for k, v in given.items()]
            elif isinstance(given, str | PathLike) or not isinstance(given, Iterable):
                items = [given]
            else:
                items = list(given)
            return [self._convert(item) for item in items]
        if not isinstance(given, str | PathLike) and isinstance(given, Iterable) and not isinstance(given, Mapping):
            raise UsageError(f"{prog}: {self.keyword} takes one value, got {given!r}", field=self.keyword)
        return self._convert(given)


@dataclass
class OptionSet:
    """The options of one command, recorded in the order they were declared."""

    prog: str
    options: list[Option] = field(default_factory=list)
    groups: list[tuple[str | None, str | None]] = field(default_factory=list)
    defaults: dict = field(default_factory=dict)
    #: {category: flags} sorting the options declared outside a group into --help's sections
    #: (histbench eval: EVAL_HELP_SECTIONS); None: argparse's one list
    sections: dict[str, tuple[str, ...]] | None = None

    # --- the declaring side (argparse's names, so a benchmark declares its options once)

    def add_argument(self, *flags: str, **spec: Any) -> None:
        self._add(flags, spec, None)

    def add_argument_group(self, title: str | None = None, description: str | None = None) -> _Group:
        self.groups.append((title, description))
        return _Group(self, len(self.groups) - 1)

    def set_defaults(self, **values: Any) -> None:
        self.defaults.update(values)

    def _add(self, flags: tuple[str, ...], spec: dict, group: int | None) -> None:
        if not flags:
            raise TypeError("an option needs a name")
        option = Option(tuple(flags), dict(spec), group)
        if any(o.keyword == option.keyword for o in self.options):
            raise ValueError(f"{self.prog}: option {option.flag} is declared twice")
        self.options.append(option)

    # --- the command line

    def add_to(self, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """Add every option to an argparse parser, in groups as declared (with `sections`:
        the ungrouped ones, and groups titled like a section, in --help's sections)."""
        if self.sections is not None:
            return self._add_in_sections(parser)
        groups = [parser.add_argument_group(title, description) for title, description in self.groups]
        for option in self.options:
            target = parser if option.group is None else groups[option.group]
            target.add_argument(*option.flags, **option.spec)
        parser.set_defaults(**self.defaults)
        return parser

    def _add_in_sections(self, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        by_flag = {flag: name for name, flags in self.sections.items() for flag in flags}

        def section_of(option: Option) -> str | None:
            if option.group is not None:
                title = (self.groups[option.group][0] or "").lower()
                named = next((name for name in self.sections if title.startswith(name.split(":")[0].rstrip("s"))), None)
                if named is None:
                    return None   # a group of its own (e.g. the options of one --mode)
                return named
            return by_flag.get(option.flag, ADVANCED)

        placed = [(option, section_of(option)) for option in self.options]
        groups: dict[str, argparse._ArgumentGroup] = {}
        titles = {name: name for name in self.sections}
        for option, section in placed:   # a declared group that says more keeps its title ("decoding (B.1's)")
            title = self.groups[option.group][0] if option.group is not None and section is not None else None
            if title and title.lower() not in ("model", "models") and title.lower() != section.split(":")[0]:
                titles[section] = title
        for name in self.sections:
            if any(section == name for _, section in placed):
                groups[name] = parser.add_argument_group(titles[name])
        own = {i: parser.add_argument_group(title, description) for i, (title, description) in enumerate(self.groups)
               if any(section is None and option.group == i for option, section in placed)}
        if any(section == ADVANCED for _, section in placed):
            groups[ADVANCED] = parser.add_argument_group(ADVANCED)
        for option, section in placed:
            target = own[option.group] if section is None else groups[section]
            target.add_argument(*option.flags, **option.spec)
        parser.set_defaults(**self.defaults)
        return parser

    def keywords(self, namespace: argparse.Namespace) -> dict[str, Any]:
        """What the command line parsed, as the API's keyword arguments."""
        return {o.keyword: getattr(namespace, o.dest) for o in self.options if hasattr(namespace, o.dest)}

    # --- the Python API

    @property
    def names(self) -> list[str]:
        return sorted(o.keyword for o in self.options)

    def resolve(self, given: Mapping[str, Any]) -> argparse.Namespace:
        """Keyword arguments -> the values the command would have parsed, every option set
        (None: not given). Raises UsageError naming the keyword for anything the command
        would refuse."""
        by_keyword = {o.keyword: o for o in self.options}
        values = dict(self.defaults)
        for option in self.options:
            values[option.dest] = option.default()
        for name, value in given.items():
            if value is None:   # as not given (the API's keywords default to None)
                continue
            option = by_keyword.get(name)
            if option is None:
                from histbench.core.suggest import did_you_mean

                raise UsageError(f"{self.prog}: no option {name!r}{did_you_mean(name, self.names)} "
                                 f"(options: {', '.join(self.names)})", field=name)
            values[option.dest] = option.value(value, self.prog)
        missing = [o.flag for o in self.options if o.required and given.get(o.keyword) is None]
        if missing:
            raise UsageError(f"{self.prog}: the following arguments are required: {', '.join(missing)}",
                             field=missing[0])
        return argparse.Namespace(**values)


@dataclass
class _Group:
    """An argument group of an OptionSet (only for --help; keywords are not grouped)."""

    owner: OptionSet
    index: int

    def add_argument(self, *flags: str, **spec: Any) -> None:
        self.owner._add(flags, spec, self.index)


# --------------------------------------------------------------------------- the commands


def build_options(benchmark: str) -> OptionSet:
    """`histbench build BENCHMARK`: the raw inputs its source manifest names (keywords: the
    roles), --sample, --out, --seed, --allow-checksum-mismatch and the builder's own."""
    from histbench.builders.machinery.build import get_builder

    builder = get_builder(benchmark)
    manifest = builder.manifest()
    options = OptionSet(f"histbench build {benchmark}")
    group = options.add_argument_group(f"raw inputs (see sources/{benchmark}/manifest.yaml)")
    for spec in manifest.inputs.values():
        text = spec.description
        if spec.formats:
            text += f" [{', '.join('.' + f if f else 'no extension' for f in spec.formats)}]"
        if spec.obtain:
            text += f"; obtain: {spec.obtain}"
        group.add_argument(spec.option, dest=f"input_{spec.role}", nargs="+" if spec.multiple else None,
                           metavar="DIR" if spec.kind == "directory" else "FILE", help=text)
    options.add_argument(
        "--sample", action="store_true",
        help=f"build the small sample bundled with histbench (sources/{benchmark}/sample/, with the options "
             "`histbench demo` uses) instead of your files",
    )
    options.add_argument("--out", type=Path, default=Path("build"), help="output root (default: build/)")
    options.add_argument("--seed", type=int, default=0, help="seed for every random choice (default: 0)")
    options.add_argument(
        "--allow-checksum-mismatch", action="store_true",
        help="accept input files whose sha256 matches no known release (recorded in histbench.json)",
    )
    builder.add_arguments(options)
    return options


ADVANCED = "advanced"
#: --help's sections of `histbench eval BENCHMARK` (issue 44: some fifty options in one list),
#: by flag; an option not named here is `advanced`, a declared group titled "model",
#: "models" or "decoding ..." joins that section, any other declared group stays its own
EVAL_HELP_SECTIONS: dict[str, tuple[str, ...]] = {
    "inputs: the build and which of its items": (
        "--dataset", "--revision", "--limit", "--sample", "--stratify", "--sample-seed", "--tasks", "--split",
        "--conditions", "--prompts", "--frame-groups"),
    "model: what answers, and how it is scored": (
        "--model", "--model-option", "--baseline", "--mode", "--modal", "--embedding-model", "--max-concurrency",
        "--batch-size", "--threads"),
    "decoding": ("--temperature", "--top-p", "--max-new-tokens", "--seed", "--top-k", "--format-retries",
                 "--ner-tokens-per-char"),
    "output: where the run goes and what it is called": ("--out", "--label"),
}


def eval_options(benchmark: str) -> OptionSet:
    """`histbench eval BENCHMARK`: the evaluator's options (in --help's sections)."""
    from histbench.eval.plugin import get_evaluator

    options = OptionSet(f"histbench eval {benchmark}", sections=EVAL_HELP_SECTIONS)
    get_evaluator(benchmark).add_eval_arguments(options)
    return options


def report_options(benchmark: str) -> OptionSet:
    """`histbench report BENCHMARK`: the evaluator's options (the runs are its positional)."""
    from histbench.eval.plugin import get_evaluator

    options = OptionSet(f"histbench report {benchmark}")
    get_evaluator(benchmark).add_report_arguments(options)
    return options


def _validate() -> OptionSet:
    options = OptionSet("histbench validate")
    options.add_argument("path", help="build/<benchmark>-<version> or a Hub dataset id ORG/NAME")
    options.add_argument("--revision", help="Hub revision (tag, branch or commit) when PATH is a Hub id")
    return options


def _push() -> OptionSet:
    options = OptionSet("histbench push")
    options.add_argument("path", type=Path, help="build/<benchmark>-<version>")
    options.add_argument("--repo-id", required=True, help="dataset repository ORG/NAME")
    options.add_argument("--public", action="store_true",
                         help="create the repository as public (default: private); gated when a source forbids "
                              "redistribution")
    options.add_argument("--confirm-redistribution-rights", action="store_true",
                         help="with --public: you confirm the sources' terms let you publish this build "
                              "(needed when any source forbids redistribution or does not say)")
    options.add_argument("--dry-run", action="store_true",
                         help="show what would be uploaded, where, and what the sources' terms say; upload nothing")
    return options


VALIDATE = _validate()
PUSH = _push()
