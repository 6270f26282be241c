"""`histbench export lm-eval`: the task folders render exactly histbench's prompts from the
raw build (ClassLabel ids and all), never read another build's rows, and
lm-evaluation-harness run on them gives the contexts, log-likelihoods and accuracies that
`histbench eval ... --mode likelihood` gives on the same (tiny) model."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import uuid
from pathlib import Path

import pytest
import yaml

from histbench.core.dataset import BuiltDataset
from histbench.eval.lm_eval_export import export

CHAT_FOLDERS = ("chronoculture", "italian")


def _tasks_of(benchmark: str):
    module = importlib.import_module(f"histbench.eval.{benchmark}.lm_eval_export")
    return module.harness_tasks


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def task_yaml(folder: Path, name: str) -> dict:
    return yaml.load((folder / f"{name}.yaml").read_text(encoding="utf-8"), Loader=_Loader)


def utils_of(folder: Path):
    spec = importlib.util.spec_from_file_location(f"lm_eval_utils_{uuid.uuid4().hex}", folder / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def docs(folder: Path, name: str) -> list[dict]:
    """The documents lm-evaluation-harness gets: custom_dataset(**metadata, **dataset_kwargs)."""
    config = task_yaml(folder, name)
    assert config["custom_dataset"] == "!function utils.load_docs"
    loaded = utils_of(folder).load_docs(**config["metadata"], **config["dataset_kwargs"], pretrained="ignored")
    return loaded[config["test_split"]].to_list()


def export_folder(benchmark: str, build: Path, out: Path, **kwargs) -> Path:
    return export(str(build), _tasks_of(benchmark), benchmark=benchmark, out=out, **kwargs)


# --------------------------------------------------------------------------- the folders


def test_yaml_points_at_the_build_relative_to_the_task_folder(sample_builds, tmp_path):
    folder = export_folder("italian", sample_builds["italian"], tmp_path / "lm-eval" / "italian")
    config = task_yaml(folder, "italian_wsd")
    assert not Path(config["dataset_path"]).is_absolute()
    assert (folder / config["dataset_path"]).resolve() == sample_builds["italian"].resolve()
    assert config["dataset_name"] == "wsd" and config["test_split"] == "test" and config["output_type"] == "multiple_choice"
    # datasets caches a local folder by its name (docs/building.md): the tasks re-read it
    assert config["dataset_kwargs"] == {"download_mode": "force_redownload"}
    assert config["tag"] == ["histbench_italian"] and config["metadata"]["histbench"]["local"] is True
    assert (folder / "utils.py").read_text() == (Path(__file__).parents[2] / "eval" / "lm_eval_utils.py").read_text()
    assert str(sample_builds["italian"].parent) not in (folder / "italian_wsd.yaml").read_text()  # no local path
    exported = {p.stem for p in folder.glob("*.yaml")}
    assert exported == {f"italian_{t}" for t in ("wsd", "chrono_ranking", "authorship", "head", "deprel", "intertext")}
    ranking = task_yaml(folder, "italian_chrono_ranking")
    assert ranking["process_results"] == "!function utils.process_results_order"
    assert [m["metric"] for m in ranking["metric_list"]] == ["mean_spearman"]


def test_hub_build_is_loaded_at_the_commit_exported(sample_builds, tmp_path, monkeypatch):
    """A Hub id stays the dataset_path, pinned to the snapshot's commit (no later push can change it)."""
    import histbench.core.dataset as dataset_module

    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "hub" / "snapshots" / commit
    shutil.copytree(sample_builds["chronoculture"], snapshot)
    monkeypatch.setattr(dataset_module, "resolve_dataset_path", lambda path, revision=None: snapshot)
    folder = export("histbench-org/chronoculture", _tasks_of("chronoculture"), benchmark="chronoculture",
                    out=tmp_path / "task")
    config = task_yaml(folder, "chronoculture_mcq")
    assert config["dataset_path"] == "histbench-org/chronoculture"
    assert config["dataset_kwargs"] == {"dataset_revision": commit}
    assert config["metadata"]["histbench"]["local"] is False


def test_chronologic_documents_are_histbench_prompts(sample_builds, tmp_path):
    """The harness reads ClassLabel ids (reasoning_type); the reminder line of the authors'
    prompt depends on it, so the documents are rendered from the names (an id never
    matches 'knowledge': rendered from ids, the knowledge question without an
    'insufficient information' option lost its reminder)."""
    from histbench.eval.chronologic.data import PromptTemplate

    folder = export_folder("chronologic", sample_builds["chronologic"], tmp_path / "task")
    config = task_yaml(folder, "chronologic_en_likelihood")
    assert config["target_delimiter"] == "" and "description" not in config
    template = PromptTemplate.load()
    assert config["metadata"]["histbench"]["prompt_sha256"] == template.sha256
    rows = BuiltDataset.open(sample_builds["chronologic"]).load("questions", "test").to_list()
    got = docs(folder, "chronologic_en_likelihood")
    assert len(got) == len(rows) == 24
    assert sum(template.gets_reminder(r) for r in rows) == 9  # knowledge, inference, abstention: 3 each
    assert sum(template.reminder.text in d["histbench_text"] for d in got) == 9
    for row, doc in zip(rows, got, strict=True):
        assert doc["question_number"] == row["question_number"] and doc["reasoning_type"] == row["reasoning_type"]
        assert doc["histbench_text"] == template.render_context(row)
        assert [config["target_delimiter"] + c for c in doc["histbench_choices"]] == [
            template.render_continuation(a) for a in row["answer_strings"]]
        assert doc["histbench_target"] == row["ground_truth_indices"]


@pytest.mark.parametrize("prompt_format", ["chat", "plain"])
def test_italian_documents_are_histbench_prompts(sample_builds, tmp_path, prompt_format):
    from histbench.eval.italian.tasks import (
        LIKELIHOOD_TASKS,
        answer_options,
        gold_choice,
        load_prompts,
        messages,
        orders,
    )

    folder = export_folder("italian", sample_builds["italian"], tmp_path / "task", prompt_format=prompt_format)
    built = BuiltDataset.open(sample_builds["italian"])
    prompts = load_prompts()
    for task in LIKELIHOOD_TASKS:
        rows = built.load(task, "test").to_list()
        got = docs(folder, f"italian_{task}")
        assert len(got) == len(rows) > 0
        for row, doc in zip(rows, got, strict=True):
            system, user = messages(task, row, prompts)
            separator = "" if prompt_format == "chat" else "\n\n"
            assert doc["histbench_description"] == system["content"] + separator
            assert doc["histbench_text"] == user["content"]
            assert doc["histbench_choices"] == answer_options(task, row)
            if task == "chrono_ranking":
                assert len(doc["histbench_choices"]) == 24
                assert orders(4)[doc["histbench_target"]] == tuple(row["gold_order"])
            else:
                assert doc["histbench_target"] == gold_choice(task, row)
                assert doc["histbench_choices"][doc["histbench_target"]] == json.dumps({"answer": "ABCDEF"[gold_choice(task, row)]})


def test_chronoculture_documents_are_the_builds_modal_prompts(sample_builds, tmp_path):
    folder = export_folder("chronoculture", sample_builds["chronoculture"], tmp_path / "task")
    rows = BuiltDataset.open(sample_builds["chronoculture"]).load("mcq", "test").to_list()
    got = docs(folder, "chronoculture_mcq")
    assert len(got) == 2 * len(rows) > 0
    for n, row in enumerate(rows):
        for doc, period in zip(got[2 * n: 2 * n + 2], ("old", "new"), strict=True):
            system, user = row[f"messages_{period}"]
            assert doc["histbench_period"] == period and doc["pair_id"] == row["pair_id"]
            assert doc["shift_category"] == row["shift_category"]  # a ClassLabel id in the build, its name here
            assert (doc["histbench_description"], doc["histbench_text"]) == (system["content"], user["content"])
            assert doc["histbench_choices"] == [f'{{"answer": "{letter}"}}' for letter in row["option_letters"]]
            assert doc["histbench_target"] == row[f"mode_{period}"]


def test_a_rebuilt_folder_is_read_again_and_a_stale_export_refused(sample_builds, tmp_path):
    """A build rewritten in place with its card unchanged: datasets would serve the first
    build's cached rows; the exported task reads the new ones (force_redownload), and a
    task folder exported from the first build refuses the second."""
    import pyarrow.parquet as pq

    build = tmp_path / "build" / "chronologic-1.0.0"
    shutil.copytree(sample_builds["chronologic"], build)
    first = export_folder("chronologic", build, tmp_path / "lm-eval" / "first")
    assert docs(first, "chronologic_en_likelihood")[0]["main_question"] != "Rewritten?"
    (shard,) = (build / "data" / "questions").glob("*.parquet")
    table = pq.read_table(shard)
    questions = table.column("main_question").to_pylist()
    table = table.set_column(table.schema.get_field_index("main_question"), "main_question",
                             __import__("pyarrow").array(["Rewritten?", *questions[1:]]))
    pq.write_table(table, shard)
    manifest = json.loads((build / "histbench.json").read_text())
    # what a real rebuild with other rows records (a build is verified against its files before it is read)
    from histbench.core.dataset import combined_sha256
    from histbench.core.hashing import sha256_path

    for output in manifest["outputs"]:
        output["sha256"] = sha256_path(build / output["path"])
    manifest["data_sha256"] = combined_sha256(manifest["outputs"])
    (build / "histbench.json").write_text(json.dumps(manifest))
    with pytest.raises(Exception, match="re-run `histbench export lm-eval`"):
        docs(first, "chronologic_en_likelihood")
    second = export_folder("chronologic", build, tmp_path / "lm-eval" / "second")
    assert docs(second, "chronologic_en_likelihood")[0]["main_question"] == "Rewritten?"
    shutil.rmtree(build)
    with pytest.raises(Exception, match="no histbench build here"):
        docs(second, "chronologic_en_likelihood")


def test_export_cli(sample_builds, tmp_path, capsys):
    from histbench.cli import main

    out = tmp_path / "t"
    assert main(["export", "lm-eval", "italian", str(sample_builds["italian"]), "--out", str(out),
                 "--tasks", "wsd", "italian_intertext", "--prompt-format", "plain"]) == 0
    assert sorted(p.name for p in out.glob("*.yaml")) == ["italian_intertext.yaml", "italian_wsd.yaml"]
    readme = (out / "README.md").read_text()
    assert "pretrained=MODEL --include_path" in readme and "chat_template=never" in readme
    assert main(["export", "lm-eval", "italian", str(sample_builds["italian"]), "--tasks", "ner_bellini"]) == 2
    assert "no such task: ner_bellini" in capsys.readouterr().err
    assert main(["export", "lm-eval", "chronoculture", str(sample_builds["chronologic"])]) == 2
    assert "not 'chronoculture'" in capsys.readouterr().err
    bad = tmp_path / "tpl.yaml"
    bad.write_text('lines: ["$metadata_frame $main_question"]\ncontinuation: " $answer."\n')
    assert main(["export", "lm-eval", "chronologic", str(sample_builds["chronologic"]), "--prompt-template", str(bad)]) == 2
    assert "'<delimiter>$answer'" in capsys.readouterr().err


# --------------------------------------------------------------------------- in the harness


@pytest.fixture(scope="module")
def harness(sample_builds, wide_tiny_lm, tmp_path_factory):
    """Every exported task run once through lm-evaluation-harness (log_samples): the chat
    tasks with --apply_chat_template, Chronologic (a plain prompt) and the Italian plain
    export without; limited to the first rows of each task."""
    pytest.importorskip("lm_eval")
    import lm_eval
    from lm_eval.tasks import TaskManager

    root = tmp_path_factory.mktemp("lm-eval-tasks")
    folders = {name: export_folder(name, sample_builds[name], root / name) for name in ("chronologic", *CHAT_FOLDERS)}
    folders["italian-plain"] = export_folder("italian", sample_builds["italian"], root / "italian-plain",
                                             prompt_format="plain", only=["wsd", "intertext"])
    for task in (folders["italian-plain"]).glob("*.yaml"):   # the plain tasks get names of their own
        task.write_text(task.read_text().replace("task: italian_", "task: plain_italian_"))

    def run(tasks, include, chat):
        return lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={wide_tiny_lm},dtype=float32,device=cpu", tasks=tasks,
            task_manager=TaskManager(include_path=[str(folders[f]) for f in include]), batch_size=16,
            apply_chat_template=chat, log_samples=True, limit=LIMIT)

    chat = run(["histbench_chronoculture", "histbench_italian"], CHAT_FOLDERS, True)
    plain = run(["chronologic_en_likelihood", "plain_italian_wsd", "plain_italian_intertext"],
                ("chronologic", "italian-plain"), False)
    return {"results": {**chat["results"], **plain["results"]}, "samples": {**chat["samples"], **plain["samples"]}}


LIMIT = 4


def _backend(model, **options):
    from histbench.core.backends import load_backend

    return load_backend(f"hf:{model}", {"dtype": "float32", "device": "cpu", **options})


def _same_requests(samples: list[dict], requests: list, logliks: list[list[float]]) -> None:
    """Per document: the harness's (context, continuation) pairs are histbench's requests,
    and its log-likelihoods histbench's (float32; the engine's shared-prefix passes
    against the harness's full ones)."""
    start = 0
    for sample, ours in zip(sorted(samples, key=lambda s: s["doc_id"]), logliks, strict=True):
        pairs = [tuple(a) for a in sample["arguments"]]
        assert pairs == [(r.context, r.continuation) for r in requests[start:start + len(pairs)]]
        start += len(pairs)
        assert [r[0] for r in sample["filtered_resps"]] == pytest.approx(ours, abs=1e-4)


@pytest.mark.slow
def test_italian_tasks_agree_with_histbench_likelihood(harness, sample_builds, wide_tiny_lm, tmp_path):
    from histbench.eval.choices import ChoiceItem, requests_for
    from histbench.eval.italian.run import evaluate_likelihood
    from histbench.eval.italian.tasks import LIKELIHOOD_TASKS, answer_options, load_prompts, messages

    built = BuiltDataset.open(sample_builds["italian"])
    backend = _backend(wide_tiny_lm)
    try:
        ours = evaluate_likelihood(built, tmp_path / "run", backend=backend, limit=LIMIT)
        prompts = load_prompts()
        for task in LIKELIHOOD_TASKS:
            got = harness["results"][f"italian_{task}"]
            mine = ours["tasks"][task]
            if task == "chrono_ranking":
                assert got["mean_spearman,none"] == pytest.approx(mine["mean_spearman"], abs=1e-9)
            else:
                assert got["acc,none"] == pytest.approx(mine["accuracy"], abs=1e-9)
                assert got["acc_norm,none"] == pytest.approx(mine["accuracy_norm"], abs=1e-9)
            rows = built.load(task, "test").to_list()[:LIMIT]
            items = [ChoiceItem(tuple(messages(task, r, prompts)), tuple(answer_options(task, r))) for r in rows]
            requests, templated = requests_for(items, backend)
            assert all(templated)
            scored = [json.loads(line) for line in (tmp_path / "run" / "italian-items" / f"{task}.jsonl").read_text().splitlines()]
            _same_requests(harness["samples"][f"italian_{task}"], requests, [s["logliks"] for s in scored])
        assert set(ours["not_scored"]) == {"ner_classense", "ner_bellini"}
    finally:
        backend.close()


@pytest.mark.slow
def test_italian_plain_tasks_agree_with_histbench_without_a_chat_template(harness, sample_builds, wide_tiny_lm, tmp_path):
    from histbench.eval.italian.run import evaluate_likelihood

    backend = _backend(wide_tiny_lm, chat_template="never")
    try:
        ours = evaluate_likelihood(BuiltDataset.open(sample_builds["italian"]), tmp_path / "run", backend=backend,
                                   tasks=["wsd", "intertext"], limit=LIMIT)
    finally:
        backend.close()
    for task in ("wsd", "intertext"):
        got = harness["results"][f"plain_italian_{task}"]
        assert got["acc,none"] == pytest.approx(ours["tasks"][task]["accuracy"], abs=1e-9)
        assert got["acc_norm,none"] == pytest.approx(ours["tasks"][task]["accuracy_norm"], abs=1e-9)
        scored = [json.loads(line) for line in (tmp_path / "run" / "italian-items" / f"{task}.jsonl").read_text().splitlines()]
        samples = sorted(harness["samples"][f"plain_italian_{task}"], key=lambda s: s["doc_id"])
        for sample, mine in zip(samples, scored, strict=True):
            assert not mine["chat_template"]
            assert all(a[1].startswith("\n\n{") for a in sample["arguments"])
            assert [r[0] for r in sample["filtered_resps"]] == pytest.approx(mine["logliks"], abs=1e-4)


@pytest.mark.slow
def test_chronoculture_task_agrees_with_histbench_likelihood(harness, sample_builds, wide_tiny_lm, tmp_path):
    from histbench.eval.chronoculture.data import load_benchmark, read_run
    from histbench.eval.chronoculture.run import run_likelihood

    built = BuiltDataset.open(sample_builds["chronoculture"])
    bench = load_benchmark(built)
    first = built.load("mcq", "test").to_list()[: LIMIT // 2]    # the harness's first LIMIT documents
    pairs = [bench.index()[r["pair_id"]] for r in first]
    backend = _backend(wide_tiny_lm)
    try:
        info = run_likelihood(built, bench, backend, tmp_path / "run", pairs=pairs)
    finally:
        backend.close()
    got = harness["results"]["chronoculture_mcq"]
    summary = info["modal_likelihood"]
    assert summary["prompts"] == LIMIT
    assert got["acc,none"] == pytest.approx(summary["accuracy"], abs=1e-9)
    assert got["acc_norm,none"] == pytest.approx(summary["accuracy_norm"], abs=1e-9)
    _, rows = read_run(tmp_path / "run")
    samples = sorted(harness["samples"]["chronoculture_mcq"], key=lambda s: s["doc_id"])
    for sample, row in zip(samples, rows, strict=True):
        assert (sample["doc"]["pair_id"], "mcq_" + sample["doc"]["histbench_period"]) == (row["pair_id"], row["period"])
        assert [r[0] for r in sample["filtered_resps"]] == pytest.approx(row["logliks"], abs=1e-4)


@pytest.mark.slow
def test_chronologic_task_agrees_with_histbench_harness_tokenisation(harness, sample_builds, wide_tiny_lm, tmp_path):
    from histbench.eval.chronologic.likelihood import evaluate

    backend = _backend(wide_tiny_lm)
    try:
        ours = evaluate(BuiltDataset.open(sample_builds["chronologic"]), backend=backend, run_dir=tmp_path / "run",
                        n_resamples=10, tokenisation="harness", limit=LIMIT)
    finally:
        backend.close()
    got = harness["results"]["chronologic_en_likelihood"]
    assert got["acc,none"] == pytest.approx(ours["metrics"]["acc_sum"]["overall"]["estimate"], abs=1e-9)
    assert got["acc_norm,none"] == pytest.approx(ours["metrics"]["acc_norm"]["overall"]["estimate"], abs=1e-9)
    ledger = [json.loads(line) for line in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()]
    samples = sorted(harness["samples"]["chronologic_en_likelihood"], key=lambda s: s["doc_id"])
    for sample, question in zip(samples, ledger, strict=True):
        assert sample["doc"]["question_number"] == question["question_number"]
        assert [r[0] for r in sample["filtered_resps"]] == pytest.approx(question["loglik"], abs=1e-4)
