"""builders/core/readers.py: JSON Lines with line-numbered errors."""

from __future__ import annotations

import pytest

from histbench.builders.core.errors import EvalError, SourceError
from histbench.builders.core.readers import iter_jsonl_objects


def test_line_numbers_skip_blank_lines_and_keep_u2028(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"a": 1}\n\n{"b": "x\u2028y"}\r\n', encoding="utf-8")
    assert list(iter_jsonl_objects(path)) == [(1, {"a": 1}), (3, {"b": "x\u2028y"})]


def test_errors_name_file_and_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        list(iter_jsonl_objects(path))
    assert str(caught.value).startswith(f"{path}, row 2: not valid JSON")
    path.write_text('[1, 2]\n', encoding="utf-8")
    with pytest.raises(EvalError, match="row 1: each line must hold one JSON object, got list"):
        list(iter_jsonl_objects(path, error=EvalError))
