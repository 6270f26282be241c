"""histbench/core/readers.py: JSON Lines with line-numbered errors."""

from __future__ import annotations

import pytest

from histbench.core.errors import EvalError, SourceError
from histbench.core.readers import iter_jsonl_objects


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


def test_json_object_files(tmp_path):
    from histbench.core.readers import read_json_object

    path = tmp_path / "run.json"
    path.write_text('{"mode": "likelihood"}', encoding="utf-8")
    assert read_json_object(path) == {"mode": "likelihood"}
    path.write_text('{"mode": ', encoding="utf-8")
    with pytest.raises(EvalError, match=r"run.json: not valid JSON \(Expecting value at line 1, column 10\)"):
        read_json_object(path, error=EvalError)
    path.write_text("[1]", encoding="utf-8")
    with pytest.raises(SourceError, match="expected a JSON object, got list"):
        read_json_object(path)
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(SourceError, match="not UTF-8 text"):
        read_json_object(path)
    with pytest.raises(SourceError, match="cannot read the file"):
        read_json_object(tmp_path / "absent.json")
    with pytest.raises(SourceError, match="cannot read the file"):
        list(iter_jsonl_objects(tmp_path / "absent.jsonl"))
