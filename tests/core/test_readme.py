"""The README's examples, as written, in a fresh environment: `pip install <wheel>[eval]`
(after torch, installed first as the README says), then every command and the Python
block of "Try it on a bundled sample". The other examples need your own files, an API key,
a GPU or the Hub: each of their commands is parsed by the installed `histbench` instead,
so every option they use exists and takes what they give it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNABLE = "Try it on a bundled sample"


def readme_blocks() -> list[tuple[str, str, str]]:
    """(section heading, language, code) of every fenced block of the README."""
    blocks, section = [], ""
    for part in re.split(r"(^## [^\n]*$|^```\w*\n.*?^```$)", (REPO / "README.md").read_text(), flags=re.M | re.S):
        if part.startswith("## "):
            section = part[3:].strip()
        elif part.startswith("```"):
            language, _, code = part[3:].partition("\n")
            blocks.append((section, language, code.rsplit("```", 1)[0]))
    return blocks


def commands(code: str) -> list[list[str]]:
    return [words for line in code.splitlines() if (words := shlex.split(line, comments=True))]


def test_the_readme_has_runnable_and_parse_checked_examples():
    blocks = readme_blocks()
    runnable = [b for b in blocks if b[0] == RUNNABLE]
    assert {language for _, language, _ in runnable} == {"bash", "python"}
    others = [words for section, language, code in blocks if language == "bash" and section != RUNNABLE
              for words in commands(code) if words[0] == "histbench"]
    assert len(others) >= 10  # one build line per benchmark, validate, push, local/API/vLLM scoring, report


@pytest.mark.slow
def test_the_readme_examples_run_in_a_fresh_environment(venv_with_torch, histbench_wheel, tmp_path):
    venv = venv_with_torch
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "HISTBENCH_PROGRESS": "0"}
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", f"{histbench_wheel[0]}[eval]"],
                             capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stderr[-4000:]
    versions = subprocess.run([python, "-c", "import json, torch, transformers, httpx, pyreadstat, histbench; "
                               "print(json.dumps([torch.__version__, histbench.__version__]))"],
                              capture_output=True, text=True, env=env, cwd="/")
    assert versions.returncode == 0, versions.stderr[-3000:]
    import torch

    assert json.loads(versions.stdout)[0] == torch.__version__  # the torch installed first was kept

    work = tmp_path / "work"
    work.mkdir()
    blocks = readme_blocks()
    for section, language, code in blocks:
        if section != RUNNABLE:
            continue
        if language == "bash":
            for words in commands(code):
                assert words[0] == "histbench", words
                done = subprocess.run(words, capture_output=True, text=True, env=env, cwd=work)
                assert done.returncode == 0, f"{shlex.join(words)}\n{done.stderr[-3000:]}"
        else:
            done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, cwd=work)
            assert done.returncode == 0, done.stderr[-3000:]
            assert "histbench:" in done.stdout  # the printed signature
    assert (work / "reports" / "chronologic" / "index.html").is_file()
    assert json.loads((work / "runs" / "random" / "results.json").read_text())["counts"]["questions"] == 24

    parse = "import sys; from histbench.cli import make_parser; make_parser().parse_args(sys.argv[1:])"
    for section, language, code in blocks:
        if language != "bash" or section == RUNNABLE:
            continue
        for words in commands(code):
            if words[0] != "histbench":
                continue  # pip, make: the install and the clone's targets
            done = subprocess.run([python, "-c", parse, *words[1:]], capture_output=True, text=True, env=env, cwd=work)
            assert done.returncode == 0, f"{shlex.join(words)}\n{done.stderr[-2000:]}"
