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


# Run by the installed Python: each command line (argv[1], JSON) given to a new parser;
# prints {command: what the parser wrote} for those that exit non-zero or raise.
PARSE_EACH = """
import contextlib, io, json, shlex, sys, traceback
from histbench.cli import make_parser
failed = {}
for words in json.loads(sys.argv[1]):
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            make_parser().parse_args(words)
    except SystemExit as exc:
        if exc.code not in (0, None):
            failed[shlex.join(words)] = said.getvalue()[-2000:]
    except Exception:
        failed[shlex.join(words)] = traceback.format_exc()[-2000:]
print(json.dumps(failed))
"""


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
def test_the_readme_examples_run_in_a_fresh_environment(venv_with_torch, histbench_wheel, pip,
                                                        link_from_this_environment, tmp_path):
    venv = venv_with_torch
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "HISTBENCH_PROGRESS": "0"}
    python = str(venv / "bin" / "python")
    # `pip install "histbench[eval]"` with no index: pip resolves the extra's requirements
    # against the wheel (the only file in its folder) and the distributions the environment
    # holds, which are linked in from this one as torch was (CI need not reach an index,
    # and downloading them again would test the index, not histbench).
    link_from_this_environment(venv, "histbench[eval]")
    install = pip(venv, "install", "--quiet", "--no-index", "--find-links", str(histbench_wheel[0].parent),
                  "histbench[eval]", env=env)
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
    assert json.loads((work / "runs" / "random" / "chronologic.json").read_text())["counts"]["questions"] == 24

    others = [words for section, language, code in blocks if language == "bash" and section != RUNNABLE
              for words in commands(code) if words[0] == "histbench"]  # not pip, make: the install, the clone's targets
    assert others
    # Every command parsed by a fresh parser of the installed histbench, all in one process:
    # a command that does not parse is reported with what the parser said.
    done = subprocess.run([python, "-c", PARSE_EACH, json.dumps([words[1:] for words in others])],
                          capture_output=True, text=True, env=env, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    failed = json.loads(done.stdout)
    assert failed == {}, "\n\n".join(f"histbench {line}\n{error}" for line, error in failed.items())
