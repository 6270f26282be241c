"""Format readers shared by several benchmarks (each benchmark keeps its own
format-specific readers in its package)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from .errors import HistbenchError, SourceError


def read_text_utf8(path: Path, *, error: type[HistbenchError] = SourceError) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped); `error` names the file
    when it cannot be read, is UTF-16 (as spreadsheets save "Unicode text"), is not UTF-8,
    or holds NUL bytes (a binary file under a text name)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read the file ({exc.strerror or exc})", file=path) from exc
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise error("the file is UTF-16 text; save it as UTF-8", file=path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as UTF-8", file=path) from exc
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise error("the file holds NUL bytes (a binary file, or text in another encoding)", file=path, row=line)
    return text


def iter_jsonl_objects(
    path: Path, *, text: str | None = None, error: type[HistbenchError] = SourceError
) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSON Lines file.

    A line that is not JSON, or holds something other than one JSON object, raises
    `error` naming the file and line. `text` may be given when the file is already read.
    """
    path = Path(path)
    if text is None:
        text = read_text_utf8(path, error=error)
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
        except RecursionError as exc:
            raise error(f"JSON nested deeper than {sys.getrecursionlimit()} levels", file=path, row=number) from exc
        if not isinstance(value, dict):
            raise error(f"each line must hold one JSON object, got {type(value).__name__}", file=path, row=number)
        yield number, value


def read_json_object(path: Path, *, error: type[HistbenchError] = SourceError) -> dict:
    """The JSON object stored in a file; `error` names the file when it is unreadable,
    not JSON, or not an object."""
    path = Path(path)
    text = read_text_utf8(path, error=error)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", file=path) from exc
    except RecursionError as exc:
        raise error(f"JSON nested deeper than {sys.getrecursionlimit()} levels", file=path) from exc
    if not isinstance(value, dict):
        raise error(f"expected a JSON object, got {type(value).__name__}", file=path)
    return value
