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
