"""Fixtures of the interoperability tests (lm-evaluation-harness tasks, inspect_ai tasks):
the bundled samples built once per session, and a tiny causal LM whose window holds the
longest prompt (so that neither histbench nor the harness cuts a context)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sample_builds(built_sample) -> dict[str, Path]:
    """chronologic, chronoculture, mher and italian built from their bundled samples, once
    per test run (italian with the TF-IDF stand-in embeddings: no model load; read-only)."""
    return {
        "chronologic": built_sample("chronologic"),
        "chronoculture": built_sample("chronoculture"),
        "mher": built_sample("mher"),
        "italian": built_sample("italian", embedding_model="tfidf"),
    }


@pytest.fixture(scope="session")
def wide_tiny_lm(tmp_path_factory) -> Path:
    """The tiny llama-style LM of histbench.core.backends.tiny with a 4096-token window."""
    pytest.importorskip("torch")
    from histbench.core.backends.tiny import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("wide-tiny-lm"), max_positions=4096)
