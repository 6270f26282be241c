"""Run-store integrity (issue 39, class 6): every record is keyed to its model and
configuration; lines of another model or configuration and repeated keys are named and not
used; the scores (RunStore.run) and the viewers (StoredAnswers) read the same record: the
first valid answer of a key."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.core.backends.base import GENERATE, Backend, GenerateRequest, GenerateResult
from histbench.core.runstore import RECORDS_NAME, RUN_NAME, RunStore
from histbench.eval.viewer import StoredAnswers


class Echo(Backend):
    """A backend answering at once, with an option that changes its answers (`style`)."""

    kind = "echo"
    OPTIONS = {"style": ("plain", "how the answer is worded")}
    KEY_OPTIONS = ("style",)

    def __init__(self, model: str = "m", **options) -> None:
        super().__init__(f"echo:{model}", model, options)
        self.supports = frozenset({GENERATE})
        self.asked = 0

    def _generate_batch(self, requests, indices):
        self.asked += len(requests)
        yield indices, [GenerateResult(text=f"{self.options['style']} answer to {r.messages[-1]['content']}",
                                       finish_reason="stop") for r in requests]


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(n)]


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / RECORDS_NAME).read_text().splitlines()]


def _append(run: Path, lines: list[dict]) -> None:
    with (run / RECORDS_NAME).open("a") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


def _shown(run: Path, request: GenerateRequest) -> str | None:
    record = StoredAnswers.open(run).generate(messages=request.messages)
    return None if record is None or record["response"] is None else record["response"]["text"]


def test_every_record_and_run_json_carry_the_configuration_digest(tmp_path):
    backend = Echo(style="terse")
    RunStore.open(tmp_path / "run", backend=backend).run(_requests(2))
    digest = backend.config_digest(GENERATE)
    assert [line["config"] for line in _lines(tmp_path / "run")] == [digest, digest]
    run_json = json.loads((tmp_path / "run" / RUN_NAME).read_text())
    assert run_json["backend"]["configs"] == {"generate": digest}
    assert Echo(style="plain").config_digest(GENERATE) != digest


def test_a_line_of_another_model_is_named_and_not_used(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    RunStore.open(theirs, backend=Echo("other")).run(_requests(2))
    backend = Echo("m")
    RunStore.open(mine, backend=backend).run(_requests(1))
    _append(mine, _lines(theirs))  # two colleagues' records.jsonl concatenated
    with pytest.warns(UserWarning, match=r"2 lines hold answers of another model or configuration: ignored "
                                         r"\(lines 2, 3; line 2: answers of model 'echo:other', not 'echo:m'\)"):
        store = RunStore.open(mine, backend=backend)
    records = store.run(_requests(2))
    assert [r.reused for r in records] == [True, False]  # q1 is asked: the other model's answer is not ours
    assert [r.text for r in records] == ["plain answer to q0", "plain answer to q1"]
    assert json.loads((mine / RUN_NAME).read_text())["answered"] == 2
    assert _shown(mine, _requests(2)[1]) == "plain answer to q1"  # the viewer agrees with the scores


def test_a_line_of_another_configuration_is_named_and_not_used(tmp_path):
    run = tmp_path / "run"
    RunStore.open(run, backend=Echo(style="terse")).run(_requests(1))
    backend = Echo(style="plain")
    with pytest.warns(UserWarning, match="1 line holds answers of another model or configuration: ignored "
                                         r"\(line 1: its key is not this model's key for its request"):
        store = RunStore.open(run, backend=backend)
    (record,) = store.run(_requests(1))
    assert not record.reused and record.text == "plain answer to q0"
    assert _shown(run, _requests(1)[0]) == "plain answer to q0"  # run.json now names the plain configuration


def test_a_line_whose_key_was_edited_is_foreign(tmp_path):
    run = tmp_path / "run"
    backend = Echo()
    RunStore.open(run, backend=backend).run(_requests(2))
    lines = _lines(run)
    lines[1]["request"]["messages"][0]["content"] = "q0"  # an answer moved to another question
    (run / RECORDS_NAME).write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.warns(UserWarning, match="line 2: its key is not this model's key"):
        store = RunStore.open(run, backend=backend)
    assert [r.text for r in store.run(_requests(2))] == ["plain answer to q0", "plain answer to q1"]


def test_a_repeated_key_is_named_and_the_scores_and_viewer_both_use_the_first_answer(tmp_path):
    run = tmp_path / "run"
    backend = Echo()
    RunStore.open(run, backend=backend).run(_requests(1))
    (first,) = _lines(run)
    _append(run, [{**first, "response": {**first["response"], "text": "a later, different answer"}}])
    with pytest.warns(UserWarning, match=r"1 line repeats a key answered on an earlier line: the first answer is used "
                                         r"\(line 2: repeats key"):
        store = RunStore.open(run, backend=backend)
    (record,) = store.run(_requests(1))
    assert record.reused and record.text == "plain answer to q0" and backend.asked == 1
    assert _shown(run, _requests(1)[0]) == "plain answer to q0"


def test_a_folder_of_another_model_is_still_refused_whole(tmp_path):
    from histbench.core.errors import EvalError

    RunStore.open(tmp_path / "run", backend=Echo("other")).run(_requests(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused with one error, without a warning per line first
        with pytest.raises(EvalError, match="holds answers of model 'echo:other'"):
            RunStore.open(tmp_path / "run", backend=Echo("m"))


# --------------------------------------------------------------------------- the same record, whatever the file holds

_LINE_KINDS = st.sampled_from(["own", "own-again", "failed", "invalid", "other-model", "other-config"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2), _LINE_KINDS), max_size=12))
def test_scores_and_viewer_read_the_same_record_for_any_file(lines):
    """Whatever mix of own answers, repeats, failures, invalid answers and other models' or
    configurations' lines records.jsonl holds, the record the run store scores is the one the
    viewer shows: the first valid own answer, or a fresh one when there is none."""
    requests = _requests(3)
    backend, other_model, other_config = Echo(), Echo("other"), Echo(style="terse")
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        # the folder as a first session leaves it (run.json names the model and configuration)
        RunStore.open(run, backend=backend).run([GenerateRequest(messages=[{"role": "user", "content": "setup"}])])
        written = []
        for number, (q, kind) in enumerate(lines):
            request = requests[q]
            source = {"other-model": other_model, "other-config": other_config}.get(kind, backend)
            response = {"text": f"{kind} {number}", "finish_reason": "stop", "model": None, "usage": None,
                        "raw": None, "attempts": 1}
            if kind == "failed":
                response = None
            elif kind == "invalid":
                response = {**response, "text": 12}
            written.append({"key": source.key(request), "kind": "generate", "request": request.to_dict(),
                            "backend": source.spec, "config": source.config_digest(GENERATE), "response": response,
                            "error": "HTTP 400" if response is None else None})
        _append(run, written)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records = RunStore.open(run, backend=backend).run(requests)
            for q, (request, record) in enumerate(zip(requests, records, strict=True)):
                own = [n for n, (at, kind) in enumerate(lines) if at == q and kind in ("own", "own-again")]
                expected = f"{lines[own[0]][1]} {own[0]}" if own else f"plain answer to q{q}"
                assert record.text == expected
                assert _shown(run, request) == expected


def test_a_folder_written_before_config_digests_is_read_by_model(tmp_path):
    """Lines and run.json without `config` (an older histbench): the viewer tells another
    model's line by its spec, the run store by its key."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    RunStore.open(theirs, backend=Echo("other")).run(_requests(2))
    backend = Echo("m")
    RunStore.open(mine, backend=backend).run(_requests(1))
    old = [{k: v for k, v in line.items() if k != "config"} for line in _lines(mine) + _lines(theirs)[1:]]
    (mine / RECORDS_NAME).write_text("".join(json.dumps(line) + "\n" for line in old))
    run_json = json.loads((mine / RUN_NAME).read_text())
    del run_json["backend"]["configs"]
    (mine / RUN_NAME).write_text(json.dumps(run_json))
    assert _shown(mine, _requests(2)[0]) == "plain answer to q0"
    assert _shown(mine, _requests(2)[1]) is None  # the other model's answer to q1 is not shown as this run's
    with pytest.warns(UserWarning, match="line 2: answers of model 'echo:other'"):
        RunStore.open(mine, backend=backend)
