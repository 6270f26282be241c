"""Which model owns a run folder, and when the folder comes to exist (issue 17, points 3 and 12).

The owner check compares what identifies the model's answers (backend, model, endpoint or
folder, revision), not how the key is found or how the host is spelt; and a folder is only
created once the model has answered, so a model that fails to load leaves nothing that
would lock the folder's options.
"""

from __future__ import annotations

import json

import pytest

from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.backends.spec import canonical_spec
from histbench.core.errors import EvalError
from histbench.core.runstore import RUN_NAME, RunStore

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5, "max_retries": 1}


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=20) for i in range(n)]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("api:m@http://127.0.0.1:8000/v1#KEY_A", "api:m@http://localhost:8000/v1/#KEY_B"),
        ("api:m@http://127.0.0.1:8000/v1", "api:m@http://[::1]:8000/v1/chat/completions"),
        ("api:gpt-4o", "api:gpt-4o@https://API.OpenAI.com:443/v1#OPENAI_API_KEY"),
        ("api:m@https://h.example/v1?api-version=2024-02-01&api-key=one",
         "api:m@https://h.example/v1?api-key=two&api-version=2024-02-01"),
        ("offline:smollm2", "offline:SmolLM2-135M-Instruct"),
    ],
)
def test_specs_that_reach_the_same_model_are_one_model(a, b):
    assert canonical_spec(a) == canonical_spec(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("api:m@http://127.0.0.1:8000/v1", "api:n@http://127.0.0.1:8000/v1"),
        ("api:m@http://127.0.0.1:8000/v1", "api:m@http://127.0.0.1:8001/v1"),
        ("api:m@https://h.example/v1?api-version=1", "api:m@https://h.example/v1?api-version=2"),
        ("hf:org/model@v1", "hf:org/model@v2"),
    ],
)
def test_other_models_stay_other_models(a, b):
    assert canonical_spec(a) != canonical_spec(b)


def test_a_local_folder_is_the_same_model_however_its_path_is_written(tmp_path, monkeypatch):
    (tmp_path / "models" / "x").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert canonical_spec("hf:models/x") == canonical_spec("hf:./models/x/") == canonical_spec(f"hf:{tmp_path}/models/x")


def test_resume_with_a_renamed_key_variable_and_localhost_asks_nothing(chat_server, tmp_path, monkeypatch):
    """Before the fix, both resumes were refused ('holds answers of model ...')."""
    monkeypatch.setenv("KEY_A", "sk-aaaaaaaaaaaa")
    monkeypatch.setenv("KEY_B", "sk-aaaaaaaaaaaa")
    server = chat_server(lambda m: "n " + m[-1]["content"][1:])
    run_dir = tmp_path / "run"
    RunStore.open(run_dir, backend=load_backend(server.spec(key_env="KEY_A"), FAST)).run(_requests(3))
    renamed = RunStore.open(run_dir, backend=load_backend(server.spec(key_env="KEY_B"), FAST))
    assert [r.text for r in renamed.run(_requests(3))] == ["n 0", "n 1", "n 2"]
    localhost = f"api:{server.model}@http://localhost:{server.port}/v1#KEY_A"
    again = RunStore.open(run_dir, backend=load_backend(localhost, FAST))
    again.run(_requests(3))
    assert server.requests == 3 and again.last_stats["reused"] == 3
    # another model is still refused
    with pytest.raises(EvalError, match="holds answers of model"):
        RunStore.open(run_dir, backend=load_backend(server.spec(model="other"), FAST))


def test_a_run_json_written_by_an_older_histbench_is_compared_canonically(chat_server, tmp_path):
    server = chat_server()
    run_dir = tmp_path / "run"
    backend = load_backend(server.spec(), FAST)
    RunStore.open(run_dir, backend=backend).run(_requests(1))
    info = json.loads((run_dir / RUN_NAME).read_text())
    info["backend"].pop("canonical_spec")
    info["backend"]["spec"] = server.spec(key_env="SOME_KEY").replace("127.0.0.1", "localhost")
    (run_dir / RUN_NAME).write_text(json.dumps(info))
    RunStore.open(run_dir, backend=backend).run(_requests(1))
    assert server.requests == 1


def test_a_model_that_never_answers_leaves_no_run_folder(chat_server, tmp_path):
    """HTTP 401 on the first request (a wrong key), then the right model in the same folder."""
    server = chat_server()
    server.fail("401", times=3)
    run_dir = tmp_path / "runs" / "first"
    store = RunStore.open(run_dir, backend=load_backend(server.spec(model="wrong"), FAST))
    with pytest.raises(EvalError, match="authentication failed"):
        store.run(_requests(3))
    assert not run_dir.exists()
    fixed = RunStore.open(run_dir, backend=load_backend(server.spec(model="right"), FAST))
    assert len(fixed.run(_requests(3))) == 3
    assert json.loads((run_dir / RUN_NAME).read_text())["backend"]["model"] == "right"


def test_a_folder_that_holds_no_answer_belongs_to_nobody(chat_server, tmp_path):
    """A run.json without answers (an older histbench wrote it on open) does not lock the folder."""
    server = chat_server()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / RUN_NAME).write_text(json.dumps({"backend": {"spec": "hf:/models/never-loaded"}, "sessions": []}))
    store = RunStore.open(run_dir, backend=load_backend(server.spec(), FAST))
    store.run(_requests(2))
    assert json.loads((run_dir / RUN_NAME).read_text())["backend"]["spec"] == server.spec()


def test_a_local_model_whose_weights_fail_to_load_leaves_no_run_folder(tiny_masked_lm, tmp_path):
    import shutil

    from histbench.core.backends import FillMaskRequest

    broken = tmp_path / "broken-model"
    shutil.copytree(tiny_masked_lm, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not a safetensors file")
    run_dir = tmp_path / "run"
    store = RunStore.open(run_dir, backend=load_backend(f"hf:{broken}", {"device": "cpu"}))
    with pytest.raises(EvalError, match="cannot load the model"):
        store.run([FillMaskRequest("the [MASK] was cold.")])
    assert not run_dir.exists()


def test_an_unwritable_place_is_refused_before_any_model_loads(chat_server, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(EvalError, match="is not a folder"):
        RunStore.open(blocker / "run", backend=load_backend(chat_server().spec(), FAST))
