"""Source manifests: what raw inputs a benchmark reads and how they are checked.

`sources/<benchmark>/manifest.yaml` has this shape::

    benchmark: chronoculture
    min_inputs: 1                 # how many roles must be given (default 1)
    inputs:
      wvs:                        # the role; the CLI option is --wvs (underscores -> dashes)
        description: WVS time-series file (waves 1-7)
        kind: file                # file | directory
        formats: [sav, dta, csv]  # accepted extensions; omit to accept any
        multiple: false           # true: the option takes several paths
        required: false
        licence: WVS Association terms of use, no redistribution
        redistribution: forbidden # open | conditions | own | forbidden | unknown (default)
        obtain: https://www.worldvaluessurvey.org/WVSDocumentationWVL.jsp
        expected_sha256:          # optional: known releases, file name -> sha256
          WVS_Time_Series_1981-2022_spss_v5_0.sav: 0123...
        sample: [sample/wvs_timeseries_sample.sav]   # bundled sample, relative to sources/<b>/

`resolve_inputs` turns user-given paths into `InputFile` records: it checks existence,
kind and extension, hashes every file (directories file by file), and compares the
hash with the known releases. A hash that matches no known release is an error unless
`allow_checksum_mismatch` is set; the override is recorded per file in histbench.json.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.errors import SourceError, UsageError
from histbench.core.hashing import sha256_path
from histbench.core.resources import Resources

from .card import REDISTRIBUTION


@dataclass(frozen=True)
class InputSpec:
    role: str
    description: str
    kind: str = "file"
    formats: tuple[str, ...] | None = None
    multiple: bool = False
    required: bool = False
    licence: str = ""
    redistribution: str = "unknown"
    obtain: str = ""
    expected_sha256: dict[str, str] = field(default_factory=dict)
    sample: tuple[str, ...] = ()

    @property
    def option(self) -> str:
        return "--" + self.role.replace("_", "-")

    @property
    def dest(self) -> str:
        return self.role


@dataclass(frozen=True)
class SourceManifest:
    benchmark: str
    inputs: dict[str, InputSpec]
    min_inputs: int = 1
    path: Path | None = None

    @classmethod
    def load(cls, benchmark: str, resources: Resources | None = None) -> SourceManifest:
        resources = resources or Resources.default()
        path = resources.source_dir(benchmark) / "manifest.yaml"
        if not path.is_file():
            raise SourceError(f"no source manifest for benchmark {benchmark!r}", file=path)
        return cls.from_dict(resources.load_yaml(path), path=path)

    @classmethod
    def from_dict(cls, data: dict, path: Path | None = None) -> SourceManifest:
        where = path or "manifest"
        if not isinstance(data.get("inputs"), dict) or not data["inputs"]:
            raise SourceError("a manifest needs a non-empty 'inputs' mapping", file=where)
        inputs = {}
        for role, spec in data["inputs"].items():
            spec = dict(spec or {})
            kind = spec.get("kind", "file")
            if kind not in ("file", "directory"):
                raise SourceError(f"input {role!r}: kind must be 'file' or 'directory', not {kind!r}", file=where)
            formats = spec.get("formats")
            redistribution = str(spec.get("redistribution", "unknown"))
            if redistribution not in REDISTRIBUTION:
                raise SourceError(
                    f"input {role!r}: redistribution must be one of {', '.join(REDISTRIBUTION)}, not {redistribution!r}",
                    file=where,
                )
            inputs[role] = InputSpec(
                role=role,
                description=str(spec.get("description", role)),
                kind=kind,
                formats=None if formats is None else tuple(str(f).lower().lstrip(".") for f in formats),
                multiple=bool(spec.get("multiple", False)),
                required=bool(spec.get("required", False)),
                licence=str(spec.get("licence", "")),
                redistribution=redistribution,
                obtain=str(spec.get("obtain", "")),
                expected_sha256={str(k): str(v).lower() for k, v in (spec.get("expected_sha256") or {}).items()},
                sample=tuple(spec.get("sample") or ()),
            )
        return cls(
            benchmark=str(data.get("benchmark", "")),
            inputs=inputs,
            min_inputs=int(data.get("min_inputs", 1)),
            path=path,
        )

    def sample_paths(self, resources: Resources | None = None) -> dict[str, list[Path]]:
        """The bundled sample inputs, role -> paths (roles without a sample are absent)."""
        resources = resources or Resources.default()
        root = resources.source_dir(self.benchmark)
        return {role: [root / rel for rel in spec.sample] for role, spec in self.inputs.items() if spec.sample}


@dataclass(frozen=True)
class InputFile:
    """One resolved raw input. For a directory, `files` lists (relative path, sha256)."""

    role: str
    path: Path
    kind: str
    sha256: str
    size: int
    checksum: str
    files: tuple[tuple[str, str], ...] = ()
    licence: str = ""
    redistribution: str = "unknown"

    def to_json(self) -> dict:
        """What histbench.json records: the file's name (never its directory) and sha256,
        and its source's terms."""
        record = {
            "role": self.role,
            "name": self.path.name,
            "kind": self.kind,
            "sha256": self.sha256,
            "size": self.size,
            "checksum": self.checksum,
            "licence": " ".join(self.licence.split()),
            "redistribution": self.redistribution,
        }
        if self.kind == "directory":
            record["files"] = [{"path": rel, "sha256": digest} for rel, digest in self.files]
        return record


def _extension(path: Path) -> str:
    return path.suffix.lower().lstrip(".")


def _check_format(spec: InputSpec, path: Path) -> None:
    if spec.formats is None:
        return
    if _extension(path) not in spec.formats:
        accepted = ", ".join("." + f if f else "(no extension)" for f in spec.formats)
        raise SourceError(
            f"unknown format for {spec.option} ({spec.description}); accepted: {accepted}", file=path
        )


def _kind_of(path: Path) -> str:
    """What is at `path`, in words: 'a directory', 'a named pipe (FIFO)', 'a broken symbolic link' ..."""
    import stat

    if path.is_symlink() and not path.exists():
        return f"a broken symbolic link (to {os.readlink(path)}, which does not exist)"
    mode = path.stat().st_mode
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISREG, "a file"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                        (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return "neither a file nor a directory"


def _digest(spec: InputSpec, path: Path, show_progress: bool = False) -> str:
    """sha256 of an input file; a file the system will not let us read is a SourceError naming it."""
    try:
        return sha256_path(path, show_progress=show_progress)
    except OSError as exc:
        raise SourceError(f"cannot read this input of {spec.option}: {exc.strerror or exc}", file=path) from None


def _members(spec: InputSpec, folder: Path) -> list[Path]:
    """The files of an input folder (hidden ones left out); a broken link or a pipe among them is an error, not a skip."""
    members = []
    for p in sorted(folder.rglob("*")):
        if p.name.startswith(".") or p.is_dir():
            continue
        if not p.is_file():
            raise SourceError(f"the folder given as {spec.option} holds {_kind_of(p)} where a file is expected; "
                              "remove or replace it", file=p)
        members.append(p)
    return members


def _resolve_one(spec: InputSpec, raw: str | Path, allow_checksum_mismatch: bool) -> InputFile:
    path = Path(raw).expanduser()
    if not path.exists():
        what = f" ({_kind_of(path)})" if path.is_symlink() else ""
        # where the file comes from, as the manifest (and --help, and the benchmark's docs page) says
        obtain = f"; get it from: {spec.obtain}" if spec.obtain else ""
        raise SourceError(f"input for {spec.option} does not exist{what} ({spec.description}){obtain}", file=path)
    if spec.kind == "file":
        if not path.is_file():
            raise SourceError(f"{spec.option} expects a file, got {_kind_of(path)}", file=path)
        _check_format(spec, path)
        digest = _digest(spec, path, show_progress=True)
        size = path.stat().st_size
        files: tuple[tuple[str, str], ...] = ()
    else:
        if not path.is_dir():
            raise SourceError(f"{spec.option} expects a directory, got {_kind_of(path)}", file=path)
        members = _members(spec, path)
        if not members:
            raise SourceError(f"directory for {spec.option} holds no files", file=path)
        files = tuple((p.relative_to(path).as_posix(), _digest(spec, p)) for p in members)
        combined = hashlib.sha256("".join(f"{rel}\0{d}\n" for rel, d in files).encode()).hexdigest()
        digest = combined
        size = sum(p.stat().st_size for p in members)

    if spec.expected_sha256:
        known = {v: k for k, v in spec.expected_sha256.items()}
        if digest in known:
            status = f"matches known release {known[digest]}"
        elif allow_checksum_mismatch:
            status = "matches no known release (accepted with --allow-checksum-mismatch)"
        else:
            raise SourceError(
                f"sha256 {digest[:12]}... matches no known release of {spec.option} "
                f"(known: {', '.join(sorted(spec.expected_sha256))}); "
                "if this is a newer release, rerun with --allow-checksum-mismatch",
                file=path,
            )
    else:
        status = "no known release checksum to compare"
    return InputFile(spec.role, path.resolve(), spec.kind, digest, size, status, files,
                     licence=spec.licence, redistribution=spec.redistribution)


def resolve_inputs(
    manifest: SourceManifest,
    given: dict[str, list[str | Path] | str | Path | None],
    allow_checksum_mismatch: bool = False,
) -> dict[str, list[InputFile]]:
    """Check and hash the user's inputs. `given` maps role -> path(s); None/empty = not given."""
    unknown = sorted(set(given) - set(manifest.inputs))
    if unknown:
        raise UsageError(f"unknown input role(s) for {manifest.benchmark}: {', '.join(unknown)}")
    resolved: dict[str, list[InputFile]] = {}
    for role, spec in manifest.inputs.items():
        raw = given.get(role)
        if raw is None or raw == [] or raw == "":
            if spec.required:
                raise UsageError(f"{manifest.benchmark}: {spec.option} is required ({spec.description})")
            continue
        values = list(raw) if isinstance(raw, list | tuple) else [raw]
        if len(values) > 1 and not spec.multiple:
            raise UsageError(f"{manifest.benchmark}: {spec.option} takes one path, got {len(values)}")
        resolved[role] = [_resolve_one(spec, value, allow_checksum_mismatch) for value in values]
    if len(resolved) < manifest.min_inputs:
        options = ", ".join(spec.option for spec in manifest.inputs.values())
        raise UsageError(
            f"{manifest.benchmark}: give at least {manifest.min_inputs} input(s) ({options})"
        )
    return resolved
