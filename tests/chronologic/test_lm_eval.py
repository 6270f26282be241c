"""`histbench export lm-eval chronologic`: the task folder renders exactly our prompts and
targets, and lm-evaluation-harness's acc / acc_norm on it equal our acc_sum / acc_norm on
the same (tiny) model."""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml

from histbench.builders.core.dataset import BuiltDataset
from histbench.eval.chronologic.data import PromptTemplate
from histbench.eval.chronologic.lm_eval_export import export


class _FunctionLoader(yaml.SafeLoader):
    pass


_FunctionLoader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def _utils(folder):
    spec = importlib.util.spec_from_file_location("chronologic_lm_eval_utils", folder / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_renders_our_prompts(sample_build, tmp_path):
    folder = export(str(sample_build), tmp_path / "task")
    config = yaml.load((folder / "chronologic_en.yaml").read_text(), Loader=_FunctionLoader)
    assert config["dataset_path"] == str(sample_build.resolve()) and config["dataset_name"] == "questions"
    assert config["test_split"] == "test" and config["output_type"] == "multiple_choice"
    assert config["doc_to_target"] == "!function utils.doc_to_target" and config["target_delimiter"] == ""
    assert [m["metric"] for m in config["metric_list"]] == ["acc", "acc_norm"]
    template = PromptTemplate.load()
    assert config["metadata"]["prompt_template_sha256"] == template.sha256
    utils = _utils(folder)
    rows = BuiltDataset.open(sample_build).load("questions", "test").to_list()
    assert sum(template.gets_reminder(r) for r in rows) == 9  # knowledge, inference, abstention: 3 each
    for row in rows:
        assert utils.doc_to_text(row) == template.render_context(row)
        assert [config["target_delimiter"] + c for c in utils.doc_to_choice(row)] == [
            template.render_continuation(a) for a in row["answer_strings"]]
        assert utils.doc_to_target(row) == row["ground_truth_indices"]


def test_export_cli(sample_build, tmp_path, capsys):
    from histbench.builders.cli import main

    assert main(["export", "lm-eval", "chronologic", str(sample_build), "--out", str(tmp_path / "t")]) == 0
    assert (tmp_path / "t" / "utils.py").is_file() and "lm_eval --model hf" in (tmp_path / "t" / "README.md").read_text()
    bad = tmp_path / "tpl.yaml"
    bad.write_text('lines: ["$metadata_frame $main_question"]\ncontinuation: " $answer."\n')
    assert main(["export", "lm-eval", "chronologic", str(sample_build), "--prompt-template", str(bad)]) == 2
    assert "'<delimiter>$answer'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("lm_eval") is None, reason="lm-evaluation-harness (lm_eval) is not installed")
@pytest.mark.skipif(importlib.util.find_spec("histbench.eval.backends.hf") is None,
                    reason="the evaluator engine's hf backend is not available yet")
def test_lm_eval_accuracy_equals_ours(sample_build, tmp_path, tiny_causal_lm):
    import lm_eval
    from lm_eval.tasks import TaskManager

    from histbench.eval.backends import load_backend
    from histbench.eval.chronologic.likelihood import evaluate

    folder = export(str(sample_build), tmp_path / "task")
    harness = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={tiny_causal_lm},dtype=float32,device=cpu",
        tasks=["chronologic_en_likelihood"], task_manager=TaskManager(include_path=str(folder)), batch_size=8,
    )["results"]["chronologic_en_likelihood"]
    backend = load_backend(f"hf:{tiny_causal_lm}", {"dtype": "float32", "device": "cpu"})
    try:
        # the harness scores every answer token: compare with histbench's harness tokenisation
        ours = evaluate(BuiltDataset.open(sample_build), backend=backend, run_dir=tmp_path / "run", n_resamples=10,
                        tokenisation="harness")
    finally:
        backend.close()
    assert harness["acc,none"] == pytest.approx(ours["metrics"]["acc_sum"]["overall"]["estimate"], abs=1e-9)
    assert harness["acc_norm,none"] == pytest.approx(ours["metrics"]["acc_norm"]["overall"]["estimate"], abs=1e-9)
    json.dumps(ours)  # results stay JSON
