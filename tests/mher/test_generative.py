"""A model run end to end over a real loopback OpenAI-compatible server: prompts, the run
store (raw replies kept, resume), format-failure retries, invalid replies, and the report."""

from __future__ import annotations

import json
import re

import pytest

from histbench.cli import main
from histbench.eval.mher.data import read_run


def scripted(counter: dict, never: tuple[str, str], retry: tuple[str, str]):
    """A deterministic 'model': reads the prompt and answers under the JSON contract, except
    that it never answers the name-only prompt of the `never` surfaces properly, and breaks
    the contract the first time it sees the name-only prompt of the `retry` surfaces."""

    def shows(user, pair):
        return f"Attestation A: {pair[0]}\n" in user and f"Attestation B: {pair[1]}\n" in user and "evidence" not in user

    def answer(messages):
        user = messages[-1]["content"]
        counter[user] = counter.get(user, 0) + 1
        if shows(user, never):
            return "These are surely two different rulers."          # never valid
        if shows(user, retry) and counter[user] == 1:
            return "Let me think about this first."                   # valid on the retry
        if "unresolved" in user:
            return '{"same": 0.1, "different": 0.1, "ambiguous": 0.8, "rationale": "Scholars disagree."}'
        names = re.findall(r"Attestation [AB]: (.+)", user)
        if len(names) == 2 and names[0][:2].lower() == names[1][:2].lower():
            return '```json\n{"same": 0.7, "different": 0.2, "ambiguous": 0.1, "rationale": "Similar forms."}\n```'
        if "evidence:" in user and "1227" in user:
            return '{"same": 0.4, "different": 0.4, "ambiguous": 0.2, "rationale": "Torn."}'
        return '{"same": 0.2, "different": 0.7, "ambiguous": 0.1, "rationale": "Different careers."}'

    return answer


def test_model_run_resume_and_report(sample_build, sample_bench, chat_server, tmp_path, capsys):
    counter: dict = {}
    grounded_ids = {r["pair_id"] for r in sample_bench.items("source_grounded", "test")}
    name_only = sample_bench.items("name_only", "test")
    never_record = next(r for r in name_only if r["pair_id"] in grounded_ids)
    retry_record = name_only[-1]
    server = chat_server(scripted(counter, (never_record["a"]["surface"], never_record["b"]["surface"]),
                                  (retry_record["a"]["surface"], retry_record["b"]["surface"])), model="scripted-1")
    out = tmp_path / "run"
    args = ["eval", "mher", "--model", server.spec(), "--dataset", str(sample_build), "--out", str(out),
            "--max-concurrency", "8", "--label", "scripted"]
    assert main(args) == 0
    run = read_run(out)
    manifest = json.loads((sample_build / "histbench.json").read_text(encoding="utf-8"))
    rows = manifest["rows"]
    expected = rows["name_only"]["test"] + 5 * rows["source_grounded"]["test"] + rows["unresolved"]["test"]
    assert len(run.predictions) == expected
    asked = server.requests
    # every raw reply is kept in the run store, also the contract-breaking ones
    raw = [json.loads(line) for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert any(r["response"]["text"] == "Let me think about this first." for r in raw)
    assert len(raw) == asked
    retried = [p for p in run.predictions if p.attempts == 2 and p.valid]
    assert [p.item_id for p in retried] == [retry_record["pair_id"]]
    never = [p for p in run.predictions if not p.valid]
    assert [(p.condition, p.item_id) for p in never] == [("name_only", never_record["pair_id"])]
    assert never[0].action == "ambiguous" and never[0].attempts == 3 and never[0].probabilities == (1 / 3,) * 3
    assert all(abs(sum(p.probabilities) - 1) < 1e-9 for p in run.predictions)
    assert {p.action for p in run.predictions if p.condition == "unresolved"} == {"ambiguous"}
    # an exact tie on the maximum -> ambiguous; a fenced JSON reply parses
    assert any(p.action == "ambiguous" and p.valid and p.rationale == "Torn." for p in run.predictions)
    assert any(p.rationale == "Similar forms." for p in run.predictions)
    info = run.info
    assert info["signature"]["text"].startswith("histbench:") and "prompt:" in info["signature"]["text"]
    assert info["counts"]["unresolved/test"] == {"items": 3, "invalid": 0, "retried": 0}

    # resume: nothing is asked again
    assert main(args) == 0
    assert server.requests == asked
    assert [p.to_json() for p in read_run(out).predictions] == [p.to_json() for p in run.predictions]

    # report: baselines + the model
    base = tmp_path / "baselines"
    assert main(["eval", "mher", "--baseline", "table2", "--dataset", str(sample_build), "--out", str(base)]) == 0
    report = tmp_path / "report"
    assert main(["report", "mher", str(base), str(out), "--out", str(report), "--resamples", "2000",
                 "--thinning", "200"]) == 0
    text = (report / "index.md").read_text(encoding="utf-8")
    for title in ("Table 2", "Table 3", "Table 4", "Table 5", "Table 6", "Table 7", "Expert-unresolved"):
        assert title in text
    assert "| scripted |" in text
    assert (report / "paired_accuracy.png").is_file() and (report / "source_grounded_errors.csv").is_file()
    numbers = json.loads((report / "report.json").read_text(encoding="utf-8"))
    model = numbers["Data"]["analysis"]["models"]["scripted"]
    assert model["unresolved"]["abstention_share"] == 1.0
    assert model["paired"]["name_only"]["invalid"] == 1 and model["name_only_full"]["invalid"] == 1
    capsys.readouterr()


def test_partial_run_cannot_be_reported_silently(sample_build, chat_server, tmp_path, capsys):
    server = chat_server(lambda m: '{"same": 0.5, "different": 0.4, "ambiguous": 0.1}')
    out = tmp_path / "partial"
    assert main(["eval", "mher", "--model", server.spec(), "--dataset", str(sample_build), "--out", str(out),
                 "--limit", "4", "--conditions", "name_only"]) == 0
    assert main(["report", "mher", str(out), "--out", str(tmp_path / "rep"), "--resamples", "100"]) == 2
    assert "has no prediction for" in capsys.readouterr().err


@pytest.mark.slow
def test_protocol_with_the_real_offline_smollm2(sample_build, smollm2_path, tmp_path, capsys):
    """The real SmolLM2-135M-Instruct answers a few items through the hf backend; whatever
    it says is kept raw, parsed under the contract or counted as invalid."""
    out = tmp_path / "smol"
    assert main(["eval", "mher", "--model", "offline:smollm2", "--dataset", str(sample_build), "--out", str(out),
                 "--conditions", "name_only", "unresolved", "--limit", "1", "--max-new-tokens", "48",
                 "--format-retries", "0"]) == 0
    run = read_run(out)
    assert len(run.predictions) == 2
    raw = [json.loads(line) for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(raw) == 2 and all(r["response"]["text"] is not None for r in raw)
    assert run.info["counts"]["name_only/test"]["items"] == 1
    assert run.info["backend"]["backend"] == "hf"
    capsys.readouterr()
