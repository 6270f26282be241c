"""Fixtures for the MHER tests: registry folders written in the real formats (CSV via the
csv module, JSON arrays), the bundled sample, and one build of it per session."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from histbench.builders.mher.registry import TABLES

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sources" / "mher" / "sample"
CUES = REPO / "sources" / "mher" / "equivalence_cues.yaml"


def write_table(folder: Path, name: str, rows: list[dict], fmt: str = "csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = TABLES[name]
    if fmt == "json":
        path = folder / f"{name}.json"
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
        return path
    path = folder / f"{name}.csv"
    columns = list(spec.columns)
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return path


def synthetic_registry(n_persons: int = 12, mentions_per_person: int = 3, seed: int = 0) -> dict[str, list[dict]]:
    """A registry of invented persons with distinct names in three scripts, each mention
    attested in its own source with its own evidence sentence (all independent)."""
    scripts = [("Latn", "en"), ("Cyrl", "mn"), ("Arab", "fa")]
    cyr = str.maketrans("abdegiklmnorstuy", "абдэгиклмнорстуы")
    arab = str.maketrans("abdegiklmnorstuy", "ابدهگیکلمنورستوی")
    persons, mentions, sources, evidence = [], [], [], []
    roots = ["temur", "bolad", "qutlugh", "sartaq", "urung", "esen", "buqa", "tegin", "nogai", "kebek", "orda",
             "yisun", "kaidu", "tuda", "baidu", "gaikh", "marut", "silig", "ebugen", "tokta"]
    for i in range(n_persons):
        pid = f"X{i:02d}"
        root = roots[i % len(roots)] + ("" if i < len(roots) else str(i))
        persons.append({"person_id": pid, "preferred_name": root.title(), "status": "confirmed",
                        "prominence": ("head", "mid", "long-tail")[i % 3], "curator_notes": f"SECRET-NOTE-{pid}"})
        for k in range(mentions_per_person):
            script, lang = scripts[k % len(scripts)]
            surface = root.title()
            if script == "Cyrl":
                surface = root.translate(cyr).title()
            elif script == "Arab":
                surface = root.translate(arab)
            if k >= len(scripts):
                surface += f" {k}"
            sid = f"S{i:02d}{k}"
            mid = f"m_{pid}_{k}"
            sources.append({"source_id": sid, "citation": f"Invented chronicle {sid}", "tradition": lang,
                            "locator": None, "derived_from": None})
            mentions.append({"mention_id": mid, "person_id": pid, "surface": surface, "language": lang,
                             "script": script, "transcription": None, "source_id": sid})
            evidence.append({"evidence_id": f"E{i:02d}{k}", "mention_id": mid, "source_id": sid,
                             "text": f"Record {k} of person number {i}: served in district {i * 7 + k} in year {1200 + 3 * i + k}.",
                             "kind": "office", "locator": None, "language": "en"})
    return {"persons": persons, "mentions": mentions, "sources": sources, "evidence": evidence, "unresolved": []}


@pytest.fixture
def write_registry(tmp_path):
    def write(tables: dict[str, list[dict]], fmt: str = "csv", name: str = "registry") -> Path:
        folder = tmp_path / name
        for table, rows in tables.items():
            write_table(folder, table, rows, fmt)
        return folder

    return write


@pytest.fixture
def cues():
    from histbench.builders.mher.text import CueList

    return CueList.load(CUES)


@pytest.fixture(scope="session")
def sample_build(built_sample):
    """The bundled sample built once for the test run (the real CLI path: manifest, writer,
    schemas; read-only)."""
    return built_sample("mher")


@pytest.fixture(scope="session")
def sample_bench(sample_build):
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.mher.data import load_bench

    return load_bench(BuiltDataset.open(sample_build))


def add_person(tables: dict[str, list[dict]], pid: str, name: str, mentions: list[tuple[str, str, str, str, str]],
               prominence: str = "long-tail", status: str = "confirmed") -> None:
    """Add a person with mentions (mention_id, surface, language, script, evidence text);
    each mention gets its own source and one evidence row of its own."""
    tables["persons"].append({"person_id": pid, "preferred_name": name, "status": status,
                              "prominence": prominence if status == "confirmed" else None, "curator_notes": None})
    for mid, surface, lang, script, text in mentions:
        sid = f"SRC_{mid}"
        tables["sources"].append({"source_id": sid, "citation": f"Source of {mid}", "tradition": lang,
                                  "locator": None, "derived_from": None})
        tables["mentions"].append({"mention_id": mid, "person_id": pid, "surface": surface, "language": lang,
                                   "script": script, "transcription": None, "source_id": sid})
        tables["evidence"].append({"evidence_id": f"EV_{mid}", "mention_id": mid, "source_id": sid, "text": text,
                                   "kind": "office", "locator": None, "language": "en"})
