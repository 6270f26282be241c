"""Fixtures of the interoperability tests (lm-evaluation-harness tasks, inspect_ai tasks):
the bundled samples built once per session, and a tiny causal LM whose window holds the
longest prompt (so that neither histbench nor the harness cuts a context)."""

from __future__ import annotations

from pathlib import Path

import pytest


def build_sample(name: str, out: Path, **options) -> Path:
    from histbench.builders.machinery.build import get_builder, run_build

    builder = get_builder(name)
    return run_build(builder, builder.manifest().sample_paths(), options={**builder.demo_options(), **options},
                     out_root=out)


@pytest.fixture(scope="session")
def sample_builds(tmp_path_factory) -> dict[str, Path]:
    """chronologic, chronoculture, mher and italian built from their bundled samples
    (italian with the TF-IDF stand-in embeddings: no model load)."""
    root = tmp_path_factory.mktemp("interop-builds")
    return {
        "chronologic": build_sample("chronologic", root),
        "chronoculture": build_sample("chronoculture", root),
        "mher": build_sample("mher", root),
        "italian": build_sample("italian", root, embedding_model="tfidf"),
    }


@pytest.fixture(scope="session")
def wide_tiny_lm(tmp_path_factory) -> Path:
    """The tiny llama-style LM of histbench.core.backends.tiny with a 4096-token window."""
    pytest.importorskip("torch")
    from histbench.core.backends.tiny import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("wide-tiny-lm"), max_positions=4096)
