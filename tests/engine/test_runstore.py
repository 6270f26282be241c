"""The run store: append-only records, resume, torn lines, parse failures (issue 3; paper
002 sections 5.4 and 5.7: raw responses stored before normalisation, successful answers
never rerun)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.errors import EvalError
from histbench.core.runstore import RECORDS_NAME, RUN_NAME, RunStore, summarize

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5}


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=20) for i in range(n)]


def _number(result):
    """A parser: the answer's last word as an int (raises on anything else)."""
    return int(result.text.split()[-1])


def _lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / RECORDS_NAME).read_text().splitlines()]


def test_records_hold_request_raw_response_parse_timestamps_and_ids(chat_server, tmp_path):
    server = chat_server(lambda m: "the answer is " + m[-1]["content"][1:], model="served-1")
    backend = load_backend(server.spec(model="asked"), FAST)
    store = RunStore.open(tmp_path / "run", backend=backend, options={"config": "questions"})
    records = store.run(_requests(4), parse=_number, desc="test")
    assert [r.parsed for r in records] == [0, 1, 2, 3]
    assert [r.text for r in records] == [f"the answer is {i}" for i in range(4)]
    stored = _lines(tmp_path / "run")
    assert len(stored) == 4
    first = next(s for s in stored if s["request"]["messages"][0]["content"] == "q0")
    assert first["key"] == backend.key(_requests(1)[0]) and len(first["key"]) == 64
    assert first["kind"] == "generate" and first["backend"] == server.spec(model="asked")
    assert first["model"] == "served-1"
    assert first["response"]["raw"]["choices"][0]["message"]["content"] == "the answer is 0"  # the provider's JSON
    assert first["response"]["usage"]["completion_tokens"] == 4
    assert first["parsed"] == 0 and first["parse_error"] is None and first["error"] is None
    assert first["started"] <= first["finished"] and first["finished"].endswith("Z")
    run = json.loads((tmp_path / "run" / RUN_NAME).read_text())
    assert run["backend"]["spec"] == server.spec(model="asked") and run["backend"]["model"] == "asked"
    assert run["options"] == {"config": "questions"}
    assert run["histbench_version"] and run["started"] <= run["ended"]
    assert run["sessions"][-1]["asked"] == 4 and run["sessions"][-1]["interrupted"] is False
    assert run["answered"] == 4


def test_run_json_records_the_dataset_identity(chat_server, tmp_path):
    identity = {"benchmark": "toy", "version": "1.0.0", "data_sha256": "ab" * 32, "path": "/x/toy-1.0.0"}
    backend = load_backend(chat_server().spec(), FAST)
    RunStore.open(tmp_path / "run", backend=backend, dataset=identity).run(_requests(1))
    run = json.loads((tmp_path / "run" / RUN_NAME).read_text())
    assert run["dataset"] == identity


def test_built_dataset_identity_and_revision(chat_server, tmp_path):
    class FakeBuilt:  # the BuiltDataset interface the store uses: identity() and manifest
        manifest = {"histbench_version": "0.1.0"}

        def identity(self):
            return {"benchmark": "toy", "version": "1.0.0", "data_sha256": "cd" * 32,
                    "path": "/cache/datasets--org--toy/snapshots/0123456789abcdef0123456789abcdef01234567"}

    backend = load_backend(chat_server().spec(), FAST)
    RunStore.open(tmp_path / "run", backend=backend, dataset=FakeBuilt()).run(_requests(1))
    dataset = json.loads((tmp_path / "run" / RUN_NAME).read_text())["dataset"]
    assert dataset["revision"] == "0123456789abcdef0123456789abcdef01234567"
    assert dataset["data_sha256"] == "cd" * 32 and dataset["built_with"] == "0.1.0"


def test_a_rerun_asks_nothing_and_duplicates_are_asked_once(chat_server, tmp_path):
    server = chat_server(lambda m: "n " + m[-1]["content"][1:])
    backend = load_backend(server.spec(), FAST)
    requests = _requests(5) + _requests(2)  # two duplicates
    store = RunStore.open(tmp_path / "run", backend=backend)
    first = store.run(requests, parse=_number)
    assert server.requests == 5 and store.last_stats["asked"] == 5 and store.last_stats["unique"] == 5
    assert first[5].key == first[0].key and first[5].parsed == 0
    again = RunStore.open(tmp_path / "run", backend=backend).run(requests, parse=_number)
    assert server.requests == 5
    assert all(r.reused for r in again) and [r.parsed for r in again] == [0, 1, 2, 3, 4, 0, 1]
    assert len(_lines(tmp_path / "run")) == 5


def test_changed_decoding_parameters_are_new_requests(chat_server, tmp_path):
    server = chat_server()
    backend = load_backend(server.spec(), FAST)
    store = RunStore.open(tmp_path / "run", backend=backend)
    store.run([GenerateRequest(prompt="p", max_new_tokens=10)])
    store.run([GenerateRequest(prompt="p", max_new_tokens=11)])
    store.run([GenerateRequest(prompt="p", max_new_tokens=10, temperature=0.5)])
    store.run([GenerateRequest(prompt="p", max_new_tokens=10)])
    assert server.requests == 3


def test_parse_failures_are_stored_counted_and_not_asked_again(chat_server, tmp_path):
    server = chat_server(lambda m: "no number here" if m[-1]["content"] in ("q1", "q3") else "n 7")
    backend = load_backend(server.spec(), FAST)
    store = RunStore.open(tmp_path / "run", backend=backend)
    records = store.run(_requests(4), parse=_number)
    assert [r.parsed for r in records] == [7, None, 7, None]
    assert records[1].parse_error.startswith("ValueError: invalid literal")
    assert records[1].response["text"] == "no number here" and records[1].error is None
    assert store.last_stats["parse_failures"] == 2
    assert summarize(records) == {"requests": 4, "answered": 4, "reused": 0, "failed": 0, "parse_failures": 2}
    stored = {s["request"]["messages"][0]["content"]: s for s in _lines(tmp_path / "run")}
    assert stored["q1"]["parse_error"].startswith("ValueError") and stored["q1"]["parsed"] is None
    # not retried: a rerun asks nothing, and still counts both failures
    again = RunStore.open(tmp_path / "run", backend=backend)
    records = again.run(_requests(4), parse=_number)
    assert server.requests == 4 and again.last_stats["parse_failures"] == 2
    # a fixed parser applies to the stored raw answers without asking the model again
    fixed = again.run(_requests(4), parse=lambda r: len(r.text))
    assert [r.parsed for r in fixed] == [3, 14, 3, 14] and server.requests == 4


def test_torn_last_line_is_ignored_with_a_warning_and_asked_again(chat_server, tmp_path):
    server = chat_server(lambda m: "n " + m[-1]["content"][1:])
    backend = load_backend(server.spec(), FAST)
    run_dir = tmp_path / "run"
    RunStore.open(run_dir, backend=backend).run(_requests(3), parse=_number)
    path = run_dir / RECORDS_NAME
    lines = path.read_text().splitlines(keepends=True)
    torn_key = json.loads(lines[-1])["key"]
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # killed mid-write
    with pytest.warns(UserWarning, match="line 3 is incomplete"):
        store = RunStore.open(run_dir, backend=backend)
    assert store.torn_lines == 1 and len(store) == 2
    records = store.run(_requests(3), parse=_number)
    assert [r.parsed for r in records] == [0, 1, 2]
    assert server.requests == 4  # only the torn one again
    stored = _lines(run_dir)  # every line parses: the fragment was cut off before appending
    assert len(stored) == 3 and sorted(s["key"] for s in stored) == sorted(r.key for r in records)
    assert [r.reused for r in records if r.key == torn_key] == [False]


def test_a_complete_last_line_without_newline_is_kept(chat_server, tmp_path):
    server = chat_server()
    backend = load_backend(server.spec(), FAST)
    run_dir = tmp_path / "run"
    RunStore.open(run_dir, backend=backend).run(_requests(2))
    path = run_dir / RECORDS_NAME
    path.write_text(path.read_text().rstrip("\n"))
    store = RunStore.open(run_dir, backend=backend)
    assert len(store) == 2
    store.run(_requests(3))
    assert server.requests == 3 and len(_lines(run_dir)) == 3


def test_a_broken_line_in_the_middle_is_an_error_naming_it(chat_server, tmp_path):
    backend = load_backend(chat_server().spec(), FAST)
    run_dir = tmp_path / "run"
    RunStore.open(run_dir, backend=backend).run(_requests(3))
    path = run_dir / RECORDS_NAME
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{garbage\n" + "".join(lines[1:]))
    with pytest.raises(EvalError, match="row 2.*not a valid record") as info:
        RunStore.open(run_dir, backend=backend)
    assert str(path) in str(info.value)


def test_a_folder_belongs_to_one_model(chat_server, tmp_path):
    server = chat_server()
    RunStore.open(tmp_path / "run", backend=load_backend(server.spec(model="a"), FAST)).run(_requests(1))
    with pytest.raises(EvalError, match="holds answers of model 'api:a@.*use another run folder"):
        RunStore.open(tmp_path / "run", backend=load_backend(server.spec(model="b"), FAST))


def test_resume_after_the_server_dies_mid_run_answers_each_request_exactly_once(chat_server, tmp_path):
    """The endpoint dies after 7 answers (requests in flight get nothing); the run stops with
    an error, the 7 answers are on disk; a rerun against the restarted endpoint asks only the
    13 others. Over both servers every request is answered exactly once."""
    n = 20
    first = chat_server(lambda m: "n " + m[-1]["content"][1:], delay=0.02, die_after=7)
    backend = load_backend(first.spec(), {**FAST, "max_concurrency": 4, "max_retries": 2})
    run_dir = tmp_path / "run"
    with pytest.raises(EvalError, match="no answer from"):
        RunStore.open(run_dir, backend=backend).run(_requests(n), parse=_number)
    assert first.delivered == 7
    assert len(_lines(run_dir)) == 7
    session = json.loads((run_dir / RUN_NAME).read_text())["sessions"][-1]
    assert session["asked"] == 7 and session["ended"] is not None

    second = chat_server(lambda m: "n " + m[-1]["content"][1:], port=first.port)  # same endpoint, back up
    assert second.spec() == first.spec()
    store = RunStore.open(run_dir, backend=backend)
    records = store.run(_requests(n), parse=_number)
    assert [r.parsed for r in records] == list(range(n))
    assert store.last_stats["reused"] == 7 and store.last_stats["asked"] == 13
    delivered = first.delivered_keys + second.delivered_keys
    assert delivered == {f"q{i}": 1 for i in range(n)}
    assert len(_lines(run_dir)) == n


RUNNER = textwrap.dedent(
    """
    import sys
    from histbench.core.backends import GenerateRequest, load_backend
    from histbench.core.runstore import RunStore
    spec, run_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    backend = load_backend(spec, {"max_concurrency": 2, "backoff_base": 0.01})
    requests = [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=20) for i in range(n)]
    RunStore.open(run_dir, backend=backend).run(requests)
    print("finished")
    """
)


def test_resume_after_kill_9_loses_at_most_the_requests_in_flight(chat_server, tmp_path):
    n = 30
    server = chat_server(lambda m: "n " + m[-1]["content"][1:], delay=0.05)
    run_dir = tmp_path / "run"
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    env = {**os.environ, "HISTBENCH_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, str(script), server.spec(), str(run_dir), str(n)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        records = run_dir / RECORDS_NAME
        while time.monotonic() < deadline:
            if records.exists() and len(records.read_text().splitlines()) >= 8:
                break
            if proc.poll() is not None:
                pytest.fail(f"runner ended early: {proc.communicate()}")
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    saved = len(_lines(run_dir))
    assert 8 <= saved < n
    store = RunStore.open(run_dir, backend=load_backend(server.spec(), FAST))
    records = store.run(_requests(n), parse=_number)
    assert [r.parsed for r in records] == list(range(n))
    assert store.last_stats["asked"] == n - saved
    # paid twice: at most the 2 requests in flight when the process died
    assert n <= server.requests <= n + 2
    assert len(_lines(run_dir)) == n


def test_ctrl_c_keeps_every_answer_received(chat_server, tmp_path):
    server = chat_server(lambda m: "n " + m[-1]["content"][1:], delay=0.02)
    backend = load_backend(server.spec(), {**FAST, "max_concurrency": 2})
    seen = []

    def parse(result):
        seen.append(result.text)
        if len(seen) == 5:
            raise KeyboardInterrupt
        return _number(result)

    store = RunStore.open(tmp_path / "run", backend=backend)
    with pytest.raises(KeyboardInterrupt):
        store.run(_requests(12), parse=parse)
    assert len(_lines(tmp_path / "run")) == 4
    assert json.loads((tmp_path / "run" / RUN_NAME).read_text())["sessions"][-1]["interrupted"] is True
    asked_before = server.requests
    records = RunStore.open(tmp_path / "run", backend=backend).run(_requests(12), parse=_number)
    assert [r.parsed for r in records] == list(range(12))
    assert server.requests - asked_before == 8
