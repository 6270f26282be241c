"""`make check-gpu` (bench/gpu_check.py, issue 27) on a machine without a GPU: one clear
"no GPU" line and exit status 0; the check itself needs a CUDA device and vllm."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_a_gpu_it_says_so_in_one_line_and_exits_cleanly(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: `make check-gpu` runs the real check")
    assert _script().main([]) == 0
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("no GPU: ") and "make check-gpu" in lines[0]
    assert out.err == ""


def test_without_torch_it_says_so_too(monkeypatch, capsys):
    module = _script()
    monkeypatch.setattr(module, "find_spec", lambda name: None)
    assert module.main([]) == 0
    assert capsys.readouterr().out.startswith("no GPU: torch is not installed")
