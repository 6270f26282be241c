"""The run store: every model request goes through a run folder, and no answer is paid twice.

A run folder holds

    records.jsonl   append-only, one JSON object per answered request:
                    {key, kind, request, response (the raw result, e.g. the provider's JSON),
                     error, parsed, parse_error, backend, config, model, started, finished,
                     attempts}
    run.json        dataset identity (benchmark, version, data_sha256, revision), histbench
                    version and commit, the backend's identity and spec, the evaluator's
                    options, first start and last end, and one entry per session (what it
                    asked, reused, failed, whether it was interrupted)

`key` is the sha256 of the backend spec, the model revision when known, the options that
change answers, and the canonical request (which carries its decoding parameters);
`config` is a short digest of the same identity without the request (run.json's
backend.configs holds the current one per kind).
`RunStore.run` asks the backend only for keys not answered yet, and writes each answer
the moment it arrives (flushed line by line, fsynced every few seconds and at the end),
so a Ctrl-C, a kill -9 or a crash loses at most the requests in flight.

Decisions:
- A torn last line (the process died mid-write) is reported with a warning, cut off, and
  its request asked again; a broken line before the last one is an error naming the line.
- Which line is the answer (RecordIndex, shared with the viewers, so the scores and the
  pages read the same record): the first valid answer of a key. Repeated keys, lines
  whose key is not the key this model (in this configuration) gives their request, and
  stored answers that fail validation (backends.base.invalid_result) are named on stderr
  when read and not used; an invalid one is asked again. Nothing in the file is rewritten.
- An answer that fails validation when it arrives is stored as a failed request
  ("invalid answer: ..."), never as an answer.
- Parse failures are answers: they are stored (`parse_error`), counted, and never asked
  again. The parse function runs on every `run` call, also on stored answers, so a fixed
  parser applies to old raw responses without asking the model again; the `parsed` value
  in records.jsonl is what the parser gave when the answer arrived.
- A request the backend definitively refused (`RequestFailed`, e.g. HTTP 400) is stored
  with `error` and no response; its record also carries a `parse_error` ("no response:
  ...") so that code counting parse failures counts it too. A later run asks it again
  (it cost nothing).
- One folder belongs to one model: opening it with another model is an error. "Another
  model" compares the canonical spec (backends/spec.py: model, endpoint or folder, Hub
  revision), not how the key is found or how the host is spelt; a folder that holds no
  answer yet belongs to nobody.
- Two processes may open the same folder; only one asks at a time. `run` takes an
  exclusive lock on the folder (filelock), re-reads what other processes appended since,
  and asks only what is still missing, so no request is paid twice and no key is written
  twice; a second process waits (saying so) while the first asks.
- Nothing is created before the model answers: the folder, run.json and records.jsonl
  appear with the first answer, so a model that fails to load leaves no folder behind
  that would hold its options and nothing else.
- Credentials never reach the disk: the backend identity is redacted by name, and every
  line and file written is scrubbed of the credentials the backend read (see
  histbench.core.secrets).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histbench.core.atomic import write_text_atomic
from histbench.core.errors import EvalError, HistbenchError
from histbench.core.locks import file_lock
from histbench.core.paths import inside
from histbench.core.progress import log, progress
from histbench.core.readers import read_json_object
from histbench.core.runfolder import utc_now
from histbench.core.runfolder import validate as validate_run_file
from histbench.core.secrets import scrub_text

from .backends.base import Backend, Request, RequestFailed, Result, request_from_dict, result_from_dict

RECORDS_NAME = "records.jsonl"


def record_line(record: dict, where: Path, key: str) -> str:
    """A record about to be written as its JSON line, checked against
    schemas/runfolder-records.json first (an error names the key and field: a record that
    breaks it is a bug, and is never written)."""
    line = json.dumps(record, ensure_ascii=False, default=_json_default)
    validate_run_file("record", json.loads(line), where, row=key)
    return line

RUN_NAME = "run.json"
LOCK_NAME = ".lock"
FSYNC_EVERY_S = 2.0


@dataclass
class Record:
    """One request and what became of it.

    response: the raw result as a dict (for generate: text, finish_reason, model, usage and
    the provider's raw JSON); None when the request failed (`error`).
    parsed / parse_error: what the parse function returned, or why it failed.
    reused: the answer came from an earlier session of this run folder.
    """

    key: str
    request: Request
    response: dict | None
    parsed: Any = None
    parse_error: str | None = None
    error: str | None = None
    model: str | None = None
    started: str | None = None
    finished: str | None = None
    attempts: int = 1
    reused: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.response is not None and self.parse_error is None

    @property
    def result(self) -> Result | None:
        return None if self.response is None else result_from_dict(self.request.kind, self.response)

    @property
    def text(self) -> str | None:
        """The generated text (generate requests)."""
        return None if self.response is None else self.response.get("text")


def _json_default(value: Any) -> Any:
    from histbench.core.schema import to_native

    native = to_native(value)
    if native is not value:
        return native
    if isinstance(value, set | frozenset):
        return sorted(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _dataset_identity(dataset: Any) -> dict | None:
    if dataset is None:
        return None
    if isinstance(dataset, Mapping):
        return dict(dataset)
    ident = dict(dataset.identity())
    manifest = getattr(dataset, "manifest", {}) or {}
    path = Path(ident.get("path", ""))
    # A Hub download lives in .../snapshots/<commit>/: that commit is the revision.
    ident.setdefault("revision", path.name if path.parent.name == "snapshots" else None)
    ident.setdefault("built_with", manifest.get("histbench_version"))
    return ident


class RecordIndex:
    """Which line of a records.jsonl answers each key: the one rule that the run store (so
    the scores) and the viewers (eval/viewer.py StoredAnswers) both read through.

    - the first valid answer of a key is the answer (the one scored when it arrived); a
      later line of a key already answered (a copied or concatenated file, an edit) is a
      duplicate: named (`duplicates`) and ignored;
    - an answer that fails validation (backends.base.invalid_result: a NaN or positive
      log-probability, text that is not a string, finish_reason "error", ...) is not an
      answer: named (`invalid`) and its request asked again, so that a run folder never
      becomes impossible to complete;
    - a line that `foreign(record)` says belongs to another model or configuration (its key
      is not the key this model gives its request) is named (`foreign`) and ignored;
    - a failed request (no response) is remembered until its key is answered.
    """

    def __init__(self, foreign: Callable[[dict], str | None] | None = None) -> None:
        self.foreign_check = foreign
        self.answered: dict[str, dict] = {}
        self.failed: dict[str, dict] = {}
        #: (line number, why) of lines read but not used
        self.duplicates: list[tuple[int, str]] = []
        self.invalid: list[tuple[int, str, str]] = []   # (line, why, key)
        self.foreign: list[tuple[int, str]] = []

    def clear(self) -> None:
        self.answered.clear()
        self.failed.clear()
        self.duplicates.clear()
        self.invalid.clear()
        self.foreign.clear()

    def add(self, record: dict, line: int | None = None) -> str:
        """Take one record (of line `line`); says what it became: answer, failed, duplicate,
        invalid or foreign."""
        from .backends.base import invalid_result

        key = record["key"]
        why = self.foreign_check(record) if self.foreign_check is not None else None
        if why is not None:
            self.foreign.append((line or 0, why))
            return "foreign"
        if key in self.answered:
            self.duplicates.append((line or 0, f"repeats key {key[:12]}, answered before"))
            return "duplicate"
        if record.get("response") is None:
            self.failed[key] = record
            return "failed"
        why = invalid_result(record.get("kind") or "", record["response"])
        if why is not None:
            self.invalid.append((line or 0, why, key))
            self.failed.setdefault(key, {**record, "response": None, "error": f"invalid answer: {why}"})
            return "invalid"
        self.answered[key] = record
        self.failed.pop(key, None)
        return "answer"

    def problems(self, since: tuple[int, int, int] = (0, 0, 0)) -> list[str]:
        """One sentence per kind of line not used (those found after `since`, the lengths of
        duplicates, invalid and foreign at an earlier call)."""
        out = []
        # an invalid answer whose request was answered since (a later line) is history, not news
        invalid = [item for item in self.invalid[since[2]:] if item[2] not in self.answered]
        for new, what in ((self.foreign[since[0]:], ("holds", "hold", "answers of another model or configuration: ignored")),
                          (self.duplicates[since[1]:], ("repeats", "repeat",
                                                        "a key answered on an earlier line: the first answer is used")),
                          (invalid, ("holds", "hold", "an invalid answer, not used: the request is asked again"))):
            if new:
                n = len(new)
                numbers = ", ".join(str(item[0]) for item in new[:10]) + (", ..." if n > 10 else "")
                where = f"line {new[0][0]}: {new[0][1]}" if n == 1 else f"lines {numbers}; line {new[0][0]}: {new[0][1]}"
                out.append(f"{n} {'line' if n == 1 else 'lines'} {what[0] if n == 1 else what[1]} {what[2]} ({where})")
        return out

    def marks(self) -> tuple[int, int, int]:
        return len(self.foreign), len(self.duplicates), len(self.invalid)


def read_records(path: Path, foreign: Callable[[dict], str | None] | None = None) -> RecordIndex:
    """The RecordIndex of a records.jsonl read whole (viewers: what the scores used)."""
    from histbench.core.readers import iter_jsonl_objects

    index = RecordIndex(foreign)
    if Path(path).is_file():
        for number, row in iter_jsonl_objects(path, error=EvalError):
            try:
                _check_record(row)
            except ValueError as exc:
                raise EvalError(f"line {number} of the run store is not a valid record ({exc})", file=path, row=number) from exc
            index.add(row, number)
    return index


def foreign_by_run_json(run_dir: Path) -> Callable[[dict], str | None]:
    """Without the backend (the viewer): a line is foreign when its config digest is not the
    one run.json records for its kind, or (lines without one) its model's canonical spec is
    not the folder's."""
    try:
        info = read_json_object(Path(run_dir) / RUN_NAME, error=EvalError)
    except EvalError:
        info = {}
    backend = info.get("backend") if isinstance(info.get("backend"), Mapping) else {}
    configs = backend.get("configs") if isinstance(backend.get("configs"), Mapping) else {}
    ours = backend.get("canonical_spec")
    cache: dict[str, str | None] = {}

    def check(record: dict) -> str | None:
        config = record.get("config")
        wanted = configs.get(record.get("kind"))
        if config is not None and wanted is not None:
            return None if config == wanted else "another configuration of the model (options that change answers)"
        spec = record.get("backend")
        if ours and isinstance(spec, str) and spec != backend.get("spec"):
            if spec not in cache:
                cache[spec] = _canonical_or_none(spec)
            if cache[spec] not in (None, ours):
                return f"answers of model {spec!r}"
        return None

    return check


class RunStore:
    """An append-only store of model answers in one folder (see the module docstring)."""

    def __init__(self, run_dir: Path, backend: Backend, dataset: Any = None, options: Mapping | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.backend = backend
        self.dataset = _dataset_identity(dataset)
        self.options = dict(options or {})
        self._index = RecordIndex(self._foreign)
        self._answered = self._index.answered
        self._failed = self._index.failed
        #: bytes of records.jsonl read so far, and the file they were read from (st_dev, st_ino)
        self._read_offset = 0
        self._lines_read = 0
        self._read_file: tuple[int, int] | None = None
        #: numbers of the last `run` call
        self.last_stats: dict[str, int] = {}
        #: lines dropped when the folder was read (torn last line)
        self.torn_lines = 0

    @property
    def records_path(self) -> Path:
        """records.jsonl, refused (EvalError) when it is a link leading out of the run folder:
        a shared run folder must not make histbench truncate or append to another file."""
        return inside(self.run_dir, RECORDS_NAME, error=EvalError, what="run store file")

    @property
    def run_path(self) -> Path:
        return inside(self.run_dir, RUN_NAME, error=EvalError, what="run store file")

    # -- opening -----------------------------------------------------------------------

    @classmethod
    def open(cls, run_dir: str | os.PathLike, *, backend: Backend, dataset: Any = None, options: Mapping | None = None) -> RunStore:
        """Open a run folder; what it holds is reused. A folder that does not exist yet is
        created when the first answer arrives (see the module docstring)."""
        store = cls(Path(run_dir), backend, dataset, options)
        if store.run_dir.exists() and not store.run_dir.is_dir():
            raise EvalError("the run folder is a file, not a folder", file=store.run_dir)
        if not store.run_dir.is_dir():
            _check_creatable(store.run_dir)
            return store
        with store._locked():
            store._refresh()
            if store.run_path.exists():
                store._write_run_json(new_session=None)
        return store

    def _refresh(self) -> None:
        """Read what was appended to records.jsonl since the last read, then check that the
        folder belongs to this model (under the lock)."""
        marks = self._index.marks()
        self._load()
        self._check_owner()
        for problem in self._index.problems(marks):  # said once, when read
            warnings.warn(f"{self.records_path}: {problem}", stacklevel=3)

    def _check_owner(self) -> None:
        if not self.run_path.exists():
            return
        info = self._read_run_json()
        stored = info.get("backend") or {}
        theirs = stored.get("canonical_spec") or _canonical_or_none(stored.get("spec"))
        if theirs and theirs != self.backend.canonical_spec and (self._answered or self._index.foreign):
            raise EvalError(
                f"this run folder holds answers of model {stored.get('spec')!r}, not {self.backend.spec!r} "
                f"(compared as {theirs!r} and {self.backend.canonical_spec!r}): use another run folder",
                file=self.run_dir,
            )
        ours = (self.dataset or {}).get("data_sha256")
        theirs = (info.get("dataset") or {}).get("data_sha256")
        if ours and theirs and ours != theirs:
            warnings.warn(
                f"{self.run_dir}: the run folder was started on dataset data {theirs[:12]}, this run uses {ours[:12]}; "
                "answers are matched by request, so unchanged requests are reused",
                stacklevel=3,
            )

    def _read_run_json(self) -> dict:
        info = read_json_object(self.run_path, error=EvalError)
        for name, kind, what in (("backend", Mapping, "an object"), ("dataset", Mapping, "an object"),
                                 ("options", Mapping, "an object"), ("sessions", list, "a list")):
            if info.get(name) is not None and not isinstance(info[name], kind):
                raise EvalError(f"expected {what}, got {type(info[name]).__name__} (the file was edited or damaged; "
                                "fix it or use another run folder)", file=self.run_path, field=name)
        return info

    def _load(self) -> None:
        """Read the records appended since the last call (all of them the first time, or
        when the file was replaced or shortened behind our back). Called under the lock."""
        if not self.records_path.exists():
            return
        stat = self.records_path.stat()
        file_id = (stat.st_dev, stat.st_ino)
        if file_id != self._read_file or stat.st_size < self._read_offset:
            self._index.clear()
            self._read_offset = self._lines_read = 0
            self._read_file = file_id
        if stat.st_size == self._read_offset:
            return
        with self.records_path.open("rb") as handle:
            handle.seek(self._read_offset)
            data = handle.read()
        self._load_lines(data)

    def _load_lines(self, data: bytes) -> None:
        lines = data.split(b"\n")
        position = self._read_offset
        added_newline = 0
        for index, line in enumerate(lines):
            number = self._lines_read + index + 1
            line_start = position
            position += len(line) + 1
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                _check_record(record)
            except ValueError as exc:
                if not any(rest.strip() for rest in lines[index + 1:]):
                    warnings.warn(
                        f"{self.records_path}: line {number} is incomplete (the run was interrupted while writing it); "
                        "it is ignored and its request will be asked again",
                        stacklevel=3,
                    )
                    self.torn_lines += 1
                    with self.records_path.open("r+b") as handle:
                        handle.truncate(line_start)
                    self._read_offset, self._lines_read = line_start, number - 1
                    return
                raise EvalError(f"line {number} of the run store is not a valid record ({exc})", file=self.records_path, row=number) from exc
            if index == len(lines) - 1:  # complete object without its newline: add it before appending
                with self.records_path.open("ab") as handle:
                    handle.write(b"\n")
                added_newline = 1
            self._index.add(record, number)
        self._read_offset = self._read_offset + len(data) + added_newline
        self._lines_read += data.count(b"\n") + added_newline

    def _mark_appended(self, size: int, lines: int) -> None:
        """What this process appended itself (under the lock) needs no re-reading."""
        if self._read_file is None and self.records_path.exists():
            stat = self.records_path.stat()
            self._read_file = (stat.st_dev, stat.st_ino)
        self._read_offset = size
        self._lines_read += lines

    def _remember(self, record: dict) -> None:
        self._index.add(record)

    def _foreign(self, record: dict) -> str | None:
        """Why a stored line is not this model's (in this configuration), or None: its key
        must be the key this backend gives its request."""
        try:
            request = request_from_dict(record["request"])
        except (HistbenchError, TypeError, ValueError) as exc:
            return f"its request is not a valid request ({exc})"
        if self.backend.key(request) == record["key"]:
            return None
        spec = record.get("backend")
        if isinstance(spec, str) and _canonical_or_none(spec) not in (None, self.backend.canonical_spec):
            return f"answers of model {spec!r}, not {self.backend.spec!r}"
        return "its key is not this model's key for its request (another configuration: options that change answers)"

    # -- run.json ------------------------------------------------------------------------

    def _write_run_json(self, new_session: dict | None, update_last: dict | None = None) -> None:
        from histbench.core.version import histbench_commit, histbench_version

        info = self._read_run_json() if self.run_path.exists() else {}
        now = utc_now()
        info.setdefault("started", now)
        info.update(
            {
                "histbench_version": histbench_version(),
                "histbench_commit": histbench_commit(),
                "dataset": self.dataset if self.dataset is not None else info.get("dataset"),
                "backend": {**self.backend.identity(),
                            "configs": {kind: self.backend.config_digest(kind) for kind in sorted(self.backend.supports)}},
                "options": self.options,
                "records": RECORDS_NAME,
                "answered": len(self._answered),
                "failed": len(self._failed),
            }
        )
        sessions = info.setdefault("sessions", [])
        if new_session is not None:
            sessions.append(new_session)
        if update_last is not None and sessions:
            sessions[-1].update(update_last)
            info["ended"] = update_last.get("ended", now)
        info.setdefault("ended", None)
        text = json.dumps(info, indent=2, ensure_ascii=False, default=_json_default) + "\n"
        write_text_atomic(self.run_path, text)

    # -- locking ---------------------------------------------------------------------------

    def _locked(self):
        """The folder's exclusive lock; another process holding it is waited for (once
        announced on stderr)."""
        return file_lock(
            inside(self.run_dir, LOCK_NAME, error=EvalError, what="run store file"),   # a link out would be truncated
            on_wait=lambda: log(f"{self.run_dir}: another histbench process is asking in this run folder; waiting for it "
                                "(its answers will be reused)"),
        )

    # -- queries ---------------------------------------------------------------------------

    def key(self, request: Request) -> str:
        return self.backend.key(request)

    def __contains__(self, request: Request) -> bool:
        return self.key(request) in self._answered

    def __len__(self) -> int:
        return len(self._answered)

    def get(self, request: Request, parse: Callable | None = None) -> Record | None:
        stored = self._answered.get(self.key(request))
        return None if stored is None else self._record(stored, request, parse, reused=True)

    # -- running -----------------------------------------------------------------------------

    def run(self, requests: Sequence[Request], parse: Callable[[Result], Any] | None = None, desc: str = "requests") -> list[Record]:
        """Answer every request (asking the backend only for those not answered yet) and
        return one Record per request, in order. `parse(result)` turns a result into what
        the evaluator scores; an exception it raises becomes the record's parse_error.

        Under the folder's lock, what other processes answered meanwhile is read first and
        reused: nothing is asked twice, whoever asked it."""
        requests = list(requests)
        keys = [self.key(r) for r in requests]
        fresh: dict[str, Record] = {}
        created = False
        if not self.run_dir.is_dir():
            if not requests:
                self.last_stats = {"requests": 0, "unique": 0, "reused": 0, "asked": 0, "failed": 0, "parse_failures": 0}
                return []
            try:
                self.run_dir.mkdir(parents=True)
            except FileExistsError:
                pass  # another process made it meanwhile
            except OSError as exc:
                raise EvalError(f"cannot create the run folder: {exc}", file=self.run_dir) from exc
            else:
                created = True
        try:
            with self._locked():
                self._refresh()
                stats = self._ask(requests, keys, parse, desc, fresh)
        finally:
            if created:
                self._remove_if_empty()
        out: list[Record] = []
        for key, request in zip(keys, requests, strict=True):
            if key in fresh:
                record = fresh[key]
            elif key in self._answered:
                record = self._record(self._answered[key], request, parse, reused=True)
            else:  # failed in this session (fresh) or never answered: cannot happen
                raise EvalError(f"internal error: no record for request key {key}", file=self.records_path)
            stats["parse_failures"] += record.parse_error is not None and record.error is None
            out.append(record)
        stats["failed"] = sum(r.error is not None for r in out)
        self.last_stats = stats
        return out

    def _ask(self, requests: list[Request], keys: list[str], parse: Callable | None, desc: str, fresh: dict) -> dict:
        """Ask the backend for every key not answered yet (under the lock); the session is
        written to run.json with the first answer (or at once when run.json exists)."""
        todo: dict[str, Request] = {}
        for key, request in zip(keys, requests, strict=True):
            if key not in self._answered and key not in todo:
                todo[key] = request
        reused = len({k for k in keys if k in self._answered})
        todo_keys = list(todo)
        stats = {"requests": len(requests), "unique": len(set(keys)), "reused": reused, "asked": 0, "failed": 0, "parse_failures": 0}
        session = {"started": utc_now(), "ended": None, "to_ask": len(todo), "reused": reused, "options": self.options}
        session_open = False
        if self.run_path.exists():
            self._write_run_json(new_session=session)
            session_open = True
        interrupted = False
        last_sync = time.monotonic()
        started = utc_now()
        bar = progress(total=len(todo_keys), desc=desc, unit="req")
        handle = None
        appended = 0
        try:
            try:
                if todo_keys:
                    for index, result in self.backend.stream([todo[k] for k in todo_keys]):
                        if handle is None:  # the model answered: the folder now holds something
                            handle = self.records_path.open("a", encoding="utf-8")
                            if not session_open:
                                self._write_run_json(new_session=session)
                                session_open = True
                        key = todo_keys[index]
                        stored = self._stored(key, todo[key], result, started, parse)
                        handle.write(scrub_text(record_line(stored, self.records_path, key)) + "\n")
                        handle.flush()
                        appended += 1
                        if time.monotonic() - last_sync > FSYNC_EVERY_S:
                            os.fsync(handle.fileno())
                            last_sync = time.monotonic()
                        self._remember(stored)
                        fresh[key] = self._record(stored, todo[key], None, reused=False)
                        stats["asked"] += 1
                        stats["failed"] += stored["error"] is not None
                        bar.update(1)
            finally:
                if handle is not None:
                    handle.flush()
                    os.fsync(handle.fileno())
                    handle.close()
                    self._mark_appended(self.records_path.stat().st_size, appended)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            bar.close()
            if session_open:
                self._write_run_json(
                    new_session=None,
                    update_last={"ended": utc_now(), "asked": stats["asked"], "failed": stats["failed"], "interrupted": interrupted},
                )
        return stats

    def _remove_if_empty(self) -> None:
        """Remove a folder this call created when it ended up holding nothing (the model
        failed before its first answer): only the lock file may be in it."""
        try:
            leftovers = [p for p in self.run_dir.iterdir() if p.name != LOCK_NAME]
            if leftovers:
                return
            (self.run_dir / LOCK_NAME).unlink(missing_ok=True)
            self.run_dir.rmdir()
        except OSError:
            pass

    def _stored(self, key: str, request: Request, result: Result | RequestFailed, started: str, parse: Callable | None) -> dict:
        from .backends.base import invalid_result

        base = {
            "key": key,
            "kind": request.kind,
            "request": request.to_dict(),
            "backend": self.backend.spec,
            "config": self.backend.config_digest(request.kind),
            "started": started,
            "finished": utc_now(),
        }
        if isinstance(result, RequestFailed):
            return {
                **base,
                "response": None,
                "error": str(result),
                "error_raw": result.raw,
                "model": None,
                "attempts": result.attempts,
                "parsed": None,
                "parse_error": f"no response: {result}",
            }
        response = result.to_dict()
        why = invalid_result(request.kind, response)
        if why is not None:  # never stored as an answer: a failed request, asked again by a later run
            return {
                **base,
                "response": None,
                "error": f"invalid answer: {why}",
                "error_raw": {"answer": json.dumps(response, default=str)[:2000]},
                "model": None,
                "attempts": getattr(result, "attempts", 1),
                "parsed": None,
                "parse_error": f"no response: invalid answer: {why}",
            }
        parsed, parse_error = _parse(parse, result)
        try:
            json.dumps(parsed, default=_json_default)
        except (TypeError, ValueError):
            parsed = repr(parsed)
        return {
            **base,
            "response": response,
            "error": None,
            "model": response.get("model") or self.backend.model_name,
            "attempts": getattr(result, "attempts", 1),
            "parsed": parsed,
            "parse_error": parse_error,
        }

    def _record(self, stored: dict, request: Request, parse: Callable | None, reused: bool) -> Record:
        parsed, parse_error = stored.get("parsed"), stored.get("parse_error")
        if stored.get("response") is not None and parse is not None:
            try:
                result = result_from_dict(stored["kind"], stored["response"])
            except (KeyError, TypeError) as exc:
                raise EvalError(f"the stored answer of request {stored['key'][:12]} is not a {stored.get('kind')} result "
                                f"({exc}); the file was edited or damaged", file=self.records_path) from exc
            parsed, parse_error = _parse(parse, result)
        return Record(
            key=stored["key"],
            request=request,
            response=stored.get("response"),
            parsed=parsed,
            parse_error=parse_error,
            error=stored.get("error"),
            model=stored.get("model"),
            started=stored.get("started"),
            finished=stored.get("finished"),
            attempts=stored.get("attempts", 1),
            reused=reused,
        )

    def stored_records(self) -> list[dict]:
        """Every answered record of the folder as stored (raw dicts)."""
        return list(self._answered.values())

    def stored_requests(self) -> list[Request]:
        return [request_from_dict(r["request"]) for r in self._answered.values()]


def _check_record(record: Any) -> None:
    """ValueError unless `record` has the shape the store writes (key, kind, request, response)."""
    from .backends.base import KINDS

    if not isinstance(record, dict) or not isinstance(record.get("key"), str) or not isinstance(record.get("request"), dict):
        raise ValueError("not a record: expected an object with a text key and a request object")
    record.setdefault("kind", record["request"].get("kind"))
    if record["kind"] not in KINDS:
        raise ValueError(f"not a record: unknown kind {record['kind']!r}")
    if record.get("response") is not None and not isinstance(record["response"], dict):
        raise ValueError("not a record: the response is not an object")


def _check_creatable(run_dir: Path) -> None:
    """A clear error now, before any model is loaded, when the folder could not be made later."""
    parent = run_dir.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise EvalError(f"cannot create the run folder: {parent} is not a folder", file=run_dir)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise EvalError(f"cannot create the run folder: {parent} is not writable", file=run_dir)


def _canonical_or_none(spec: Any) -> str | None:
    """The canonical form of a spec recorded by an older histbench (run.json without
    canonical_spec); None when it cannot be read as a spec."""
    if not isinstance(spec, str) or not spec:
        return None
    from histbench.core.errors import HistbenchError

    from .backends.spec import canonical_spec

    try:
        return canonical_spec(spec)
    except HistbenchError:
        return spec


def _parse(parse: Callable | None, result: Result) -> tuple[Any, str | None]:
    if parse is None:
        return None, None
    try:
        return parse(result), None
    except Exception as exc:  # noqa: BLE001 - any parser failure is a stored parse failure
        return None, f"{type(exc).__name__}: {exc}"


def summarize(records: Sequence[Record]) -> dict[str, int]:
    """Counts every evaluator reports: requests, answered, reused, failed, parse failures."""
    return {
        "requests": len(records),
        "answered": sum(r.response is not None for r in records),
        "reused": sum(r.reused for r in records),
        "failed": sum(r.error is not None for r in records),
        "parse_failures": sum(r.error is None and r.parse_error is not None for r in records),
    }


__all__ = ["Record", "RunStore", "summarize", "RECORDS_NAME", "RUN_NAME"]
