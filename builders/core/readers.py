"""Format readers shared by several benchmarks (each benchmark keeps its own
format-specific readers in its package)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .errors import HistbenchError, SourceError


def iter_jsonl_objects(
    path: Path, *, text: str | None = None, error: type[HistbenchError] = SourceError
) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSON Lines file.

    A line that is not JSON, or holds something other than one JSON object, raises
    `error` naming the file and line. `text` may be given when the file is already read.
    """
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise error(f"cannot read the file ({exc.strerror or exc})", file=path) from exc
        except UnicodeDecodeError as exc:
            raise error(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from exc
    # split on "\n" only: str.splitlines() would also break at U+2028 and similar
    # characters, which JSON allows unescaped inside strings
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"not valid JSON ({exc.msg} at column {exc.colno})", file=path, row=number) from exc
        if not isinstance(value, dict):
            raise error(f"each line must hold one JSON object, got {type(value).__name__}", file=path, row=number)
        yield number, value


def read_json_object(path: Path, *, error: type[HistbenchError] = SourceError) -> dict:
    """The JSON object stored in a file; `error` names the file when it is unreadable,
    not JSON, or not an object."""
    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise error(f"cannot read the file ({exc.strerror or exc})", file=path) from exc
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from exc
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", file=path) from exc
    if not isinstance(value, dict):
        raise error(f"expected a JSON object, got {type(value).__name__}", file=path)
    return value
