"""Two evaluators on one run folder never pay twice (issue 17, point 1).

Process A answers 20 prompts, pauses (as ChronoCulture does between its undated and dated
prompts) and answers 20 more; process B opens the same folder during the pause and asks
all 40. The loopback server counts every request it receives: 40, each prompt once, and
records.jsonl holds each key once. Before the fix, A's second step re-asked the 20 prompts
B had answered (60 requests, 20 keys written twice).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.runstore import RECORDS_NAME, RunStore

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 10}

# argv: spec, run_dir, first, last, [pause_file, go_file]: answer prompts first..last-1 in two
# steps of 20 with a pause between them (A), or in one step (B).
EVALUATOR = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from histbench.core.backends import GenerateRequest, load_backend
    from histbench.core.runstore import RunStore

    spec, run_dir, steps = sys.argv[1], sys.argv[2], sys.argv[3]
    pause_file = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    go_file = Path(sys.argv[5]) if len(sys.argv) > 5 else None
    backend = load_backend(spec, {"max_concurrency": 2, "backoff_base": 0.01, "timeout": 10})
    store = RunStore.open(run_dir, backend=backend)
    for n, step in enumerate(steps.split(",")):
        first, last = map(int, step.split("-"))
        if n and pause_file is not None:
            pause_file.write_text("paused")
            while not go_file.exists():
                time.sleep(0.01)
        requests = [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=20)
                    for i in range(first, last)]
        records = store.run(requests)
        assert [r.text for r in records] == [f"n {i}" for i in range(first, last)], "wrong answers"
        print(f"step {step}: asked {store.last_stats['asked']}, reused {store.last_stats['reused']}", flush=True)
    """
)


def _start(script: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "HISTBENCH_PROGRESS": "0"}
    return subprocess.Popen([sys.executable, str(script), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(condition, what: str, processes, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for proc in processes:
            if proc.poll() not in (None, 0):
                pytest.fail(f"an evaluator ended early while waiting for {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def _keys(run_dir: Path) -> Counter:
    return Counter(json.loads(line)["key"] for line in (run_dir / RECORDS_NAME).read_text().splitlines())


@pytest.mark.parametrize("resume", ["while B asks", "after B finished"])
def test_two_processes_on_one_folder_pay_each_prompt_once(chat_server, tmp_path, resume):
    server = chat_server(lambda m: "n " + m[-1]["content"][1:], delay=0.02)
    script = tmp_path / "evaluator.py"
    script.write_text(EVALUATOR)
    run_dir, pause, go = tmp_path / "run", tmp_path / "paused", tmp_path / "go"
    a = _start(script, server.spec(), str(run_dir), "0-20,20-40", str(pause), str(go))
    b = None
    try:
        _wait_for(pause.exists, "A's pause", [a])
        assert server.requests == 20
        b = _start(script, server.spec(), str(run_dir), "0-40")
        if resume == "while B asks":   # A's second step starts while B holds the folder
            _wait_for(lambda: server.requests > 22, "B to start asking", [a, b])
        else:
            assert b.wait(timeout=60) == 0, b.communicate()
        go.write_text("go")
        out_a, err_a = a.communicate(timeout=60)
        out_b, err_b = b.communicate(timeout=60)
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert a.returncode == 0, err_a
    assert b.returncode == 0, err_b
    assert server.requests == 40                     # 0 prompts paid twice
    assert server.delivered_keys == {f"q{i}": 1 for i in range(40)}
    keys = _keys(run_dir)
    assert len(keys) == 40 and set(keys.values()) == {1}   # no key twice in records.jsonl
    assert "step 0-40: asked 20, reused 20" in out_b
    assert "step 20-40: asked 0, reused 20" in out_a
    if resume == "while B asks":
        assert "another histbench process is asking in this run folder; waiting" in err_a


def test_a_store_reloads_what_another_store_answered_before_asking(chat_server, tmp_path):
    """The same in one process: a store opened before another one answered reuses those answers."""
    server = chat_server(lambda m: "n " + m[-1]["content"][1:])
    backend = load_backend(server.spec(), FAST)
    requests = [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=20) for i in range(6)]
    first = RunStore.open(tmp_path / "run", backend=backend)
    first.run(requests[:2])
    second = RunStore.open(tmp_path / "run", backend=backend)
    second.run(requests)
    assert server.requests == 6
    records = first.run(requests)
    assert server.requests == 6 and first.last_stats["asked"] == 0 and all(r.reused for r in records)
    assert [r.text for r in records] == [f"n {i}" for i in range(6)]
    assert set(_keys(tmp_path / "run").values()) == {1}
