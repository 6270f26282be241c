"""Synthetic ChronoCulture builds for the evaluator's tests.

Records follow the real schemas (schemas/chronoculture.*.schema.json) and are written
with the project's own writer, so the evaluator reads them exactly as it reads a real
build (BuiltDataset -> datasets.load_dataset). Every user prompt carries a marker
`[ref <pair_id> <period>]` so that a scripted loopback model can answer per prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from histbench.builders.chronoculture.distance import normalised_wasserstein, shift_category
from histbench.builders.machinery.writer import BuildOutput, write_build
from histbench.core.resources import Resources

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "You estimate survey response distributions. Answer with JSON only."
SCALES = {
    3: ["Yes", "Not sure", "No"],
    4: ["Strongly agree", "Agree", "Disagree", "Strongly disagree"],
    5: ["Very good", "Fairly good", "Neither", "Fairly bad", "Very bad"],
}
COUNTRIES = [
    ("DEU", 276, "Germany", "Western"), ("POL", 616, "Poland", "Eastern Europe and Central Asia"),
    ("MEX", 484, "Mexico", "Latin America"), ("JPN", 392, "Japan", "East Asia"),
    ("IND", 356, "India", "South and Southeast Asia"), ("EGY", 818, "Egypt", "Middle East and North Africa"),
    ("NGA", 566, "Nigeria", "Sub-Saharan Africa"), ("USA", 840, "United States", "Western"),
]
TOPICS = {"WVS": ["Perceptions of life", "Politics and society"], "ISSP": ["Role of Government", "Family and Gender Roles"]}
CATEGORY_OF_TOPIC = {
    "Perceptions of life": "Family, health, and social attitudes",
    "Politics and society": "Government, democracy, and institutions",
    "Role of Government": "Government, democracy, and institutions",
    "Family and Gender Roles": "Family, health, and social attitudes",
}
YEARS = {"WVS": [1996, 2001, 2007, 2012, 2018], "ISSP": [1990, 1996, 2006, 2016]}
SHIFT_TARGETS = [0.01, 0.02, 0.05, 0.08, 0.13, 0.17, 0.25, 0.35]


def _shifted(g: np.ndarray, amount: float) -> np.ndarray:
    """Move `amount` of probability mass one option to the right, from left to right."""
    out = g.copy()
    remaining = amount
    for j in range(len(out) - 1):
        move = min(out[j], remaining)
        out[j] -= move
        out[j + 1] += move
        remaining -= move
        if remaining <= 1e-12:
            break
    out = np.clip(out, 0.0, None)
    return out / out.sum()


def _messages(question: str, country: str, options: list[str], year: int | None, ref: str) -> list[dict]:
    when = f" in {year}" if year is not None else ""
    body = (f"[ref {ref}] Survey question asked in {country}{when}: {question}\n"
            f"Options: {'; '.join(options)}\nGive the percentage of people choosing each option as JSON.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


def make_records(n_pairs: int = 48, seed: int = 0) -> dict[str, list[dict]]:
    rng = np.random.default_rng(seed)
    pairs, items, undated, mcq = [], [], [], []
    for i in range(n_pairs):
        survey = "WVS" if i % 2 == 0 else "ISSP"
        iso3, iso_num, country, region = COUNTRIES[i % len(COUNTRIES)]
        k = (3, 4, 5)[i % 3]
        options = SCALES[k]
        topic = TOPICS[survey][(i // 2) % 2]
        question_id = f"{survey.lower()}_q{i // len(COUNTRIES)}_{k}"
        pair_id = f"{question_id}__{iso3}"
        n_years = 2 + i % 3
        years = YEARS[survey][-n_years:]
        g_old = rng.dirichlet(np.full(k, 4.0))
        g_old = 0.8 * g_old + 0.2 * np.eye(k)[0]
        g_new = _shifted(g_old, SHIFT_TARGETS[i % len(SHIFT_TARGETS)] * (k - 1))
        golds = [g_old + (g_new - g_old) * t / (n_years - 1) for t in range(n_years)]
        golds = [np.clip(g, 0.0, None) / np.clip(g, 0.0, None).sum() for g in golds]
        d_h = float(normalised_wasserstein(g_old, g_new))
        question = f"How do you feel about statement {i // len(COUNTRIES)}?"
        common = {"survey": survey, "question_id": question_id, "country_iso3": iso3, "country_name": country,
                  "region": region, "topic": topic, "topic_category": CATEGORY_OF_TOPIC[topic]}
        last = years[-1]

        def wave(year, survey=survey, last=last):
            return (7 if year == last else 3) if survey == "WVS" else None

        pairs.append({
            "pair_id": pair_id, **{k_: v for k_, v in common.items() if k_ != "country_name"}, "question_text": question,
            "country_iso_numeric": iso_num, "country_name": country, "option_labels": options,
            "option_values": [float(v) for v in range(1, k + 1)], "year_old": years[0], "year_new": years[-1],
            "wave_old": wave(years[0]), "wave_new": wave(years[-1]), "source_old": "synthetic.sav:V1",
            "source_new": "synthetic.sav:V1", "years_available": years, "G_old": golds[0].tolist(),
            "G_new": golds[-1].tolist(), "n_old": 800, "n_new": 900, "d_h": d_h,
            "shift_category": shift_category(d_h), "shift_category_tighter": shift_category(d_h, "tighter"),
            "shift_category_looser": shift_category(d_h, "looser"), "noise_median": 0.01, "noise_p95": 0.02,
            "above_noise_p95": d_h > 0.02,
        })
        for period, year, gold in (("old", years[0], golds[0]), ("new", years[-1], golds[-1])):
            items.append({
                "item_id": f"{pair_id}__{period}", "pair_id": pair_id, "period": period, "year": year, **common,
                "shift_category": shift_category(d_h), "d_h": d_h, "option_labels": options,
                "option_values": [float(v) for v in range(1, k + 1)], "gold": gold.tolist(), "n": 800,
                "messages": _messages(question, country, options, year, f"{pair_id} {period}"),
            })
        undated.append({
            "undated_id": pair_id, "pair_id": pair_id, **common, "option_labels": options,
            "option_values": [float(v) for v in range(1, k + 1)], "n_years": n_years,
            "years": [{"year": y, "wave": wave(y), "gold": g.tolist(), "n": 700} for y, g in zip(years, golds, strict=True)],
            "messages": _messages(question, country, options, None, f"{pair_id} undated"),
        })
        category = shift_category(d_h)
        mode_old, mode_new = int(np.argmax(golds[0])), int(np.argmax(golds[-1]))
        if category != "moderate" and (category == "stable" or mode_old != mode_new):
            letters = [chr(65 + j) for j in range(k)]

            def margin(g):
                top = np.sort(g)[::-1]
                return float(top[0] - top[1])

            mcq.append({
                "mcq_id": pair_id, "pair_id": pair_id, **common, "shift_category": category, "d_h": d_h,
                "year_old": years[0], "year_new": years[-1], "option_labels": options, "option_letters": letters,
                "G_old": golds[0].tolist(), "G_new": golds[-1].tolist(), "mode_old": mode_old, "mode_new": mode_new,
                "mode_label_old": options[mode_old], "mode_label_new": options[mode_new],
                "answer_old": letters[mode_old], "answer_new": letters[mode_new],
                "margin_old": margin(golds[0]), "margin_new": margin(golds[-1]), "mode_changed": mode_old != mode_new,
                "messages_old": _messages(question, country, [f"{a}. {o}" for a, o in zip(letters, options, strict=True)],
                                          years[0], f"{pair_id} mcq_old"),
                "messages_new": _messages(question, country, [f"{a}. {o}" for a, o in zip(letters, options, strict=True)],
                                          years[-1], f"{pair_id} mcq_new"),
            })
    return {"pairs": pairs, "items": items, "undated": undated, "mcq": mcq}


CARD = """---
pretty_name: ChronoCulture (test build)
license: other
---
# ChronoCulture test build $version

$row_table

$summary
"""


def write_synthetic_build(out_root: Path, records: dict[str, list[dict]]) -> Path:
    cards = out_root / "cards"
    cards.mkdir(parents=True, exist_ok=True)
    (cards / "chronoculture.md").write_text(CARD, encoding="utf-8")
    default = Resources.default()
    resources = Resources(schemas=default.schemas, cards=cards, sources=default.sources)
    output = BuildOutput(configs={name: {"test": [dict(r) for r in rows]} for name, rows in records.items()},
                         summary={"synthetic": True}, summary_markdown="Synthetic test build.")
    return write_build(benchmark="chronoculture", version="1.0.0", output=output, inputs={}, options={"seed": 0},
                       out_dir=out_root / "chronoculture-1.0.0", resources=resources)


@pytest.fixture(scope="session")
def synthetic_records():
    return make_records()


@pytest.fixture(scope="session")
def synthetic_build(tmp_path_factory, synthetic_records):
    root = tmp_path_factory.mktemp("chronoculture-build")
    return write_synthetic_build(root, json.loads(json.dumps(synthetic_records)))


@pytest.fixture(scope="session")
def benchmark(synthetic_build):
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.chronoculture.data import load_benchmark

    return load_benchmark(BuiltDataset.open(synthetic_build, benchmark="chronoculture"))


@pytest.fixture
def make_build():
    """write_synthetic_build(root, make_records(n_pairs, seed)) as a fixture."""

    def make(root: Path, n_pairs: int = 16, seed: int = 0) -> Path:
        return write_synthetic_build(Path(root), make_records(n_pairs, seed))

    return make


@pytest.fixture(scope="session")
def sample_build(built_sample):
    """The bundled sample built by the real builder, as `make demo` builds it (once per test
    run; read-only)."""
    return built_sample("chronoculture")
