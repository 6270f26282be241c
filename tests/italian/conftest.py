"""Fixtures of the Historical Italian tests: the bundled sample built once per test run
(TF-IDF embeddings: no model load), and the real files in ../shared/realdata/italian."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sources" / "italian" / "sample"
REALDATA = REPO.parent / "shared" / "realdata" / "italian"


def build(tmp: Path, given: dict, **options) -> Path:
    from histbench.builders.italian import BUILDER
    from histbench.builders.machinery.build import run_build

    opts = {"embedding_model": "tfidf", "chat_cache": str(tmp / "chat.jsonl"), **options}
    return run_build(BUILDER, given, options=opts, out_root=tmp)


def sample_inputs() -> dict:
    from histbench.builders.italian import BUILDER

    return {role: [str(p) for p in paths] if len(paths) > 1 else str(paths[0])
            for role, paths in BUILDER.manifest().sample_paths().items()}


def rows(folder: Path, config: str) -> list[dict]:
    import pyarrow.parquet as pq

    tables = sorted((folder / "data" / config).glob("*.parquet"))
    return [r for t in tables for r in pq.read_table(t).to_pylist()]


def manifest(folder: Path) -> dict:
    return json.loads((folder / "histbench.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def sample_build(run_cache) -> Path:
    """The bundled sample, built once for the test run (read-only)."""
    from histbench.builders.italian import BUILDER

    return BUILDER.output_dir(run_cache("italian-tests-sample", lambda tmp: build(
        tmp, sample_inputs(), wsd_questions=0, classense_subset=2, classense_subset_draws=200, questions_per_genre=6)))


@pytest.fixture(scope="session")
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(f"no real Italian sources at {REALDATA} (a user's clone has no ../shared/realdata)")
    return REALDATA


def held_out(names) -> set[str]:
    """The held-out half of the real files (docs/italian.md, "Measured items"): every other
    name in case-insensitive alphabetical order, from the second. Rules are written and
    tested on the rest; the acceptance figures are measured on these, which no test reads
    (bench/italian_items.py)."""
    ordered = sorted(names, key=str.lower)
    return set(ordered[1::2])


def development_copy(realdata: Path, target: Path) -> dict[str, Path]:
    """Copies of the development half of the real LeggoManzoni commentaries (with the
    chapter) and of the real Biblioteca Italiana books."""
    import shutil

    comments = realdata / "leggomanzoni" / "commenti"
    names = [p.name for p in comments.iterdir() if p.is_dir()]
    keep = sorted(set(names) - held_out(names), key=str.lower)
    lm = target / "leggomanzoni"
    shutil.copytree(realdata / "leggomanzoni" / "quarantana", lm / "quarantana")
    for name in keep:
        shutil.copytree(comments / name, lm / "commenti" / name)
    books = [p.name for p in (realdata / "biblioteca").iterdir() if p.is_file() and p.name.startswith("bibit")]
    bib = target / "biblioteca"
    bib.mkdir(parents=True)
    for name in sorted(set(books) - held_out(books)):
        shutil.copy(realdata / "biblioteca" / name, bib / name)
    return {"leggomanzoni": lm, "bibit": bib, "commentators": keep}


@pytest.fixture(scope="session")
def real_dev(realdata, tmp_path_factory) -> dict:
    return development_copy(realdata, tmp_path_factory.mktemp("italian-real-dev"))
