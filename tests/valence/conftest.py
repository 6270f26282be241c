"""Fixtures for the valence tests: small test sets written in the real input formats, and
run folders holding hand-made predictions (so the annotation loop and the scoring can be
tested without a model; the fill-mask path itself is tested with tiny BERTs)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

SENTENCES = [
    # sentence_id, sentence, group, rho
    ("s1", "Why wilt [MASK] be offended by that?", "EME", "-1"),
    ("s2", "Fare <mask> well, sir.", "EME", "-1"),
    ("s3", "Can [mask] help me with this?", "ME", "1"),
    ("s4", "The [MASK] was cold.", "neutral", "0"),
]


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with Path(path).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return Path(path)


@pytest.fixture
def sentences_csv(tmp_path) -> Path:
    return write_csv(tmp_path / "sentences.csv", ["sentence_id", "sentence", "group", "rho", "notes"],
                     [[*row, ""] for row in SENTENCES])


@pytest.fixture
def build_valence(tmp_path):
    """build_valence(sentences_path, annotations=None, **options) -> built folder."""
    from histbench.builders.machinery.build import run_build
    from histbench.builders.valence import BUILDER

    def build(sentences: Path, annotations: list[Path] | None = None, out: Path | None = None, **options):
        given = {"sentences": sentences}
        if annotations:
            given["annotations"] = annotations
        merged = {**BUILDER.demo_options(), "groups": None, **options}
        return run_build(BUILDER, given, options=merged, out_root=out or tmp_path / "build")

    return build


# Hand-made predictions: model -> sentence -> [(piece, probability)]
PREDICTIONS = {
    "early": {
        "s1": [("thou", 0.5), ("not", 0.2), ("you", 0.1), ("##st", 0.05)],
        "s2": [("you", 0.4), ("thee", 0.3), ("ye", 0.1), ("[UNK]", 0.05)],
        "s3": [("thou", 0.3), ("you", 0.3), ("ye", 0.2), ("!", 0.1)],
        "s4": [("night", 0.6), ("wind", 0.2), ("morrow", 0.1), ("air", 0.05)],
    },
    "modern": {
        "s1": [("you", 0.6), ("they", 0.2), ("not", 0.1), ("thou", 0.05)],
        "s2": [("you", 0.7), ("them", 0.1), ("ye", 0.05), ("##ll", 0.05)],
        "s3": [("you", 0.7), ("someone", 0.1), ("they", 0.1), ("u", 0.05)],
        "s4": [("weather", 0.5), ("night", 0.3), ("water", 0.1), ("air", 0.05)],
    },
}


def prediction_records(predictions=PREDICTIONS) -> list[dict]:
    from histbench.eval.valence.metrics import classify_piece

    rows = []
    for model, per_sentence in predictions.items():
        for sentence_id, cands in per_sentence.items():
            for rank, (piece, p) in enumerate(cands, start=1):
                kind = classify_piece(piece)
                rows.append({"sentence_id": sentence_id, "model": model, "rank": rank, "token": piece, "token_id": None,
                             "word": kind.word, "kind": kind.kind, "probability": p})
    return rows


@pytest.fixture
def synthetic_run(tmp_path, sentences_csv, build_valence):
    """A run folder with the hand-made predictions of two models on the four test sentences."""
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.valence.runfolder import RunFolder

    built = BuiltDataset.open(build_valence(sentences_csv))
    run = RunFolder.create_or_open(tmp_path / "run", dataset_identity=built.identity(),
                                   settings={"top_k": 4, "fold_case": True, "scale": [-1, -0.5, 0, 0.5, 1]})
    run.manifest["groups"] = ["EME", "neutral", "ME"]
    run.manifest["models"] = [{"label": m, "spec": f"hf:{m}"} for m in PREDICTIONS]
    run.save()
    run.write_sentences(built.load("sentences", "test").to_list())
    run.write_predictions(prediction_records())
    from histbench.eval.valence import EVALUATOR

    EVALUATOR.finish_run(run.path)   # the run format's files, as `histbench eval valence` writes them
    return run


# A complete manual annotation of the hand-made predictions (sentence, token, sigma or "skip").
ANNOTATION_ROWS = [
    ("s1", "thou", "-1"), ("s1", "not", "0"), ("s1", "you", "0"), ("s1", "they", "0"),
    ("s2", "you", "-1"), ("s2", "thee", "-1"), ("s2", "ye", "-1"), ("s2", "them", "0"),
    ("s3", "thou", "-1"), ("s3", "you", "0"), ("s3", "ye", "-1"), ("s3", "!", "skip"), ("s3", "someone", "0"),
    ("s3", "they", "0"), ("s3", "u", "1"),
    ("s4", "night", "0"), ("s4", "wind", "0"), ("s4", "morrow", "-1"), ("s4", "air", "0"), ("s4", "weather", "0"),
    ("s4", "water", "0"),
]


@pytest.fixture
def annotation_sheet(tmp_path):
    """annotation_sheet(rows=ANNOTATION_ROWS, annotator="ann1", name=...) -> a CSV in the import format."""

    def make(rows=ANNOTATION_ROWS, annotator: str | None = "ann1", name: str = "annotated.csv") -> Path:
        out = []
        for sentence_id, token, value in rows:
            skip = "yes" if value == "skip" else ""
            sigma = "" if value == "skip" else value
            out.append([sentence_id, token, sigma, skip, annotator or "", ""])
        return write_csv(tmp_path / name, ["sentence_id", "token", "sigma", "skip", "annotator", "comment"], out)

    return make
