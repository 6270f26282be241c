"""inspect_ai tasks (`inspect eval histbench/<task>`): the same prompts and decoding as
`histbench eval`, and on the same answers the same numbers, with inspect's mock model
and with a loopback OpenAI-compatible server that both tools talk to."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")
# inspect_ai's own retry helper warns about a tenacity argument on every request
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from histbench.core.backends import load_backend  # noqa: E402
from histbench.core.dataset import BuiltDataset  # noqa: E402


@pytest.fixture
def builds(sample_builds) -> dict[str, Path]:
    return sample_builds


def _user(messages) -> str:
    return [m["content"] for m in messages if m["role"] == "user"][-1]


def mock_model(answer):
    """inspect's mockllm/model answering with `answer(messages)` (text, or a dict with
    "content" and "finish_reason" as the loopback server takes it)."""

    def outputs(input, tools, tool_choice, config):
        reply = answer([{"role": m.role, "content": m.text} for m in input])
        shaped = reply if isinstance(reply, dict) else {"content": reply}
        stop = "max_tokens" if shaped.get("finish_reason") == "length" else "stop"
        output = ModelOutput.from_content(model="mockllm", content=shaped["content"], stop_reason=stop)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # (else counted with a downloaded tokenizer)
        return output

    return get_model("mockllm/model", custom_outputs=outputs, memoize=False)


def loopback_model(server):
    return get_model("openai-api/loopback/loopback-model", base_url=server.base_url, api_key="not-a-secret", memoize=False)


def run_inspect(tasks, model, log_dir: Path, limit: int | None = None) -> dict[str, dict[str, float]]:
    """{task name: {metric: value}} of one inspect eval."""
    logs = inspect_eval(tasks, model=model, display="none", log_dir=str(log_dir), max_retries=0, fail_on_error=True,
                        limit=limit)
    out = {}
    for log in logs:
        assert log.status == "success", str(log.error)[:2000]
        (score,) = log.results.scores
        out[log.eval.task.split("/")[-1]] = {name: metric.value for name, metric in score.metrics.items()}
    return out


def sent(server) -> list[str]:
    """What reached the server, order aside: messages and decoding of every request."""
    keys = ("messages", "temperature", "top_p", "max_tokens", "seed")
    return sorted(json.dumps({k: body.get(k) for k in keys}, sort_keys=True, ensure_ascii=False) for body in server.bodies)


def close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


# --------------------------------------------------------------------------- Historical Italian


def italian_answer(messages):
    user = _user(messages)
    h = zlib.crc32(user.encode()) % 6
    if '"entities"' in user:
        found = [w.strip(",.;:") for w in user.split() if w[:1].isupper()][:4]
        return json.dumps({"entities": [{"text": w, "type": "PER" if i % 2 else "LOC"} for i, w in enumerate(found)]})
    if '"order"' in user:
        return ['{"order": ["A", "B", "C", "D"]}', '{"order": ["D", "C", "B", "A"]}', "non lo so",
                '{"order": ["B", "A", "D", "C"]}', {"content": '{"order": ["A", "B"', "finish_reason": "length"},
                '{"order": ["C", "A", "B", "D"]}'][h]
    return ['{"answer": "A"}', '{"answer": "B"}', "La risposta corretta è la C", "???", '{"answer": "D"}',
            {"content": '{"answer": "', "finish_reason": "length"}][h]


def _italian_expected(task: str, metrics: dict) -> dict[str, float]:
    from histbench.eval.inspect_tasks.common import flatten

    return flatten(metrics, skip=("per_type", "entity_types", "types_without_gold", "invented_types"))


def test_italian_tasks_equal_histbench_on_the_same_answers(builds, chat_server, tmp_path):
    from histbench.eval import inspect_tasks
    from histbench.eval.italian.run import evaluate
    from histbench.eval.italian.tasks import TASKS

    build = builds["italian"]
    histbench_server = chat_server(italian_answer)
    backend = load_backend(histbench_server.spec(), {"max_concurrency": 4})
    try:
        ours = evaluate(BuiltDataset.open(build), tmp_path / "run", backend=backend)
    finally:
        backend.close()
    assert ours["tasks"]["wsd"]["parse_failures"] > 0 and ours["tasks"]["wsd"]["cut_off"] > 0  # the script is varied

    tasks = [getattr(inspect_tasks, f"italian_{t}")(dataset=str(build)) for t in TASKS]
    inspect_server = chat_server(italian_answer)
    for model, where in ((mock_model(italian_answer), "mock"), (loopback_model(inspect_server), "loopback")):
        got = run_inspect(tasks, model, tmp_path / where)
        for task in TASKS:
            expected = _italian_expected(task, ours["tasks"][task])
            assert set(got[f"italian_{task}"]) == set(expected), task
            for name, value in expected.items():
                assert close(got[f"italian_{task}"][name], value), (where, task, name)
    # exactly histbench's requests: messages, temperature, top-p and token budget
    assert sent(inspect_server) == sent(histbench_server)


# --------------------------------------------------------------------------- ChronoCulture


def chronoculture_answer(messages):
    user = _user(messages)
    h = zlib.crc32(user.encode())
    if "Which answer option" in user:
        letters = [line.split(".", 1)[0] for line in user.splitlines() if len(line) > 2 and line[1] == "."]
        return "maybe" if h % 7 == 0 else json.dumps({"answer": letters[h % len(letters)]})
    if h % 9 == 0:
        return "I cannot know that."
    labels = [line[2:] for line in user.splitlines() if line.startswith("- ")]
    weights = [1 + (h >> (3 * i)) % 7 for i in range(len(labels))]
    total = sum(weights)
    return json.dumps({label: round(100 * w / total, 1) for label, w in zip(labels, weights, strict=True)})


def test_chronoculture_task_equals_histbench_on_the_same_answers(builds, chat_server, tmp_path):
    from histbench.eval.chronoculture.analysis import analyse, modal_analysis
    from histbench.eval.chronoculture.data import (
        analysis_retention,
        load_benchmark,
        load_predictions,
        read_run,
    )
    from histbench.eval.chronoculture.run import run_model
    from histbench.eval.inspect_tasks.chronoculture import CATEGORIES, chronoculture

    built = BuiltDataset.open(builds["chronoculture"])
    bench = load_benchmark(built)
    histbench_server = chat_server(chronoculture_answer)
    backend = load_backend(histbench_server.spec(), {"max_concurrency": 4})
    try:
        info = run_model(built, bench, backend, tmp_path / "run", modal=True)
    finally:
        backend.close()
    preds = load_predictions(bench, tmp_path / "run")
    result = analyse(bench, preds, retention=analysis_retention("model", info), resamples=0, parts=("rf1",),
                     sets=("default",))
    _, rows = read_run(tmp_path / "run")
    expected = {f"valid_{p}": float(sum(r.get("probabilities") is not None or r.get("choice") is not None
                                        for r in rows if r["period"] == p))
                for p in ("undated", "old", "new", "mcq_old", "mcq_new")}
    assert expected["valid_old"] < sum(r["period"] == "old" for r in rows)   # some answers are invalid
    expected["pairs_analysed"] = float(result.counts["analysed"])
    expected.update({f"rf1_both_within_0.10_{c}": result.cell(f"rf1.default.tau0.10.{c}.both").estimate for c in CATEGORIES})
    expected.update({f"modal_both_correct_{c}": v["both_correct"]["estimate"]
                     for c, v in modal_analysis(bench, preds)["by_category"].items()})

    inspect_server = chat_server(chronoculture_answer)
    task = chronoculture(dataset=str(builds["chronoculture"]), modal=True)
    for model, where in ((mock_model(chronoculture_answer), "mock"), (loopback_model(inspect_server), "loopback")):
        got = run_inspect([task], model, tmp_path / where)["chronoculture"]
        assert set(got) == set(expected)
        for name, value in expected.items():
            assert close(got[name], value), (where, name)
    assert sent(inspect_server) == sent(histbench_server)


# --------------------------------------------------------------------------- MHER


def mher_answer_factory():
    """The first reply to every third prompt breaks the output contract; asked again, it answers."""
    asked = Counter()

    def answer(messages):
        user = _user(messages)
        asked[user] += 1
        h = zlib.crc32(user.encode())
        if h % 3 == 0 and asked[user] == 1:
            return "These look like the same person to me."
        same = (h >> 4) % 10 / 10
        return json.dumps({"same": same, "different": round(1 - same, 2) * 0.8, "ambiguous": 0.1,
                           "rationale": "by the names"})

    return answer


MHER_CONDITIONS = ("name_only", "context_only", "shuffled_b", "unresolved")   # every prompt family
MHER_LIMIT = 16


def test_mher_tasks_equal_histbench_on_the_same_answers(builds, chat_server, tmp_path):
    from histbench.cli import main
    from histbench.eval import inspect_tasks
    from histbench.eval.inspect_tasks.common import flatten
    from histbench.eval.mher import metrics as M
    from histbench.eval.mher.data import Bench, align, load_bench, read_run

    histbench_server = chat_server(mher_answer_factory())
    assert main(["eval", "mher", "--model", histbench_server.spec(), "--dataset", str(builds["mher"]), "--out",
                 str(tmp_path / "run"), "--conditions", *MHER_CONDITIONS, "--limit", str(MHER_LIMIT)]) == 0
    run = read_run(tmp_path / "run")
    bench = load_bench(BuiltDataset.open(builds["mher"]))
    expected = {}
    for condition in MHER_CONDITIONS:
        asked = {Bench.item_id(condition, r) for r in bench.items(condition, "test")[:MHER_LIMIT]}
        aligned = align(bench, run.predictions, run.label, condition, "test", restrict=asked)
        expected[condition] = flatten(M.unresolved_summary(aligned.action, aligned.probabilities) if aligned.gold is None
                                      else M.binary_metrics(aligned.gold, aligned.action, aligned.probabilities, aligned.valid))
    assert expected["name_only"]["invalid"] == 0                # every contract failure was asked again and answered
    assert sum(p.attempts > 1 for p in run.predictions) > 0
    tasks = [getattr(inspect_tasks, f"mher_{c}")(dataset=str(builds["mher"])) for c in MHER_CONDITIONS]
    inspect_server = chat_server(mher_answer_factory())
    for model, where in ((mock_model(mher_answer_factory()), "mock"), (loopback_model(inspect_server), "loopback")):
        got = run_inspect(tasks, model, tmp_path / where, limit=MHER_LIMIT)
        for condition in MHER_CONDITIONS:
            assert set(got[f"mher_{condition}"]) == set(expected[condition])
            for name, value in expected[condition].items():
                assert close(got[f"mher_{condition}"][name], value), (where, condition, name)
    assert sent(inspect_server) == sent(histbench_server)      # the retries too, with seed = attempt


# --------------------------------------------------------------------------- the command line


def test_inspect_command_finds_the_registered_task(builds, chat_server, tmp_path):
    """`inspect eval histbench/<task>` (the entry point), against the loopback server."""
    from histbench.eval.italian.run import evaluate

    build = builds["italian"]
    histbench_server = chat_server(italian_answer)
    backend = load_backend(histbench_server.spec(), {})
    try:
        ours = evaluate(BuiltDataset.open(build), tmp_path / "run", backend=backend, tasks=["intertext"])
    finally:
        backend.close()
    server = chat_server(italian_answer)
    inspect = Path(sys.executable).with_name("inspect")
    env = {**os.environ, "LOOPBACK_API_KEY": "not-a-secret", "LOOPBACK_BASE_URL": server.base_url}
    done = subprocess.run([str(inspect), "eval", "histbench/italian_intertext", "--model", "openai-api/loopback/loopback-model",
                           "-T", f"dataset={build}", "--log-dir", str(tmp_path / "logs"), "--log-format", "json",
                           "--display", "none"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (log_file,) = (tmp_path / "logs").glob("*.json")
    log = json.loads(log_file.read_text())
    assert log["eval"]["task"] == "histbench/italian_intertext"
    metrics = {name: m["value"] for name, m in log["results"]["scores"][0]["metrics"].items()}
    assert metrics["accuracy"] == ours["tasks"]["intertext"]["accuracy"]
    assert metrics["parse_failures"] == ours["tasks"]["intertext"]["parse_failures"]
    assert sent(server) == sent(histbench_server)
