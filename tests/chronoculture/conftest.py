"""Fixtures for the ChronoCulture builder: survey files written with pyreadstat, small registries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from histbench.builders.chronoculture import BUILDER
from histbench.builders.machinery.build import run_build

A008 = {1: "Very happy", 2: "Quite happy", 3: "Not very happy", 4: "Not at all happy"}
C001 = {1: "Agree", 2: "Disagree", 3: "Neither"}
NEG = {-1: "Don't know", -2: "No answer", -3: "Not applicable", -4: "Not asked in survey", -5: "Missing"}

REGISTRY = {
    "format": "chronoculture-registry/1",
    "wvs": {
        "questions": [
            {"id": "wvs_A008", "variable": "A008", "topic": "Perceptions of life",
             "category": "Family, health, and social attitudes", "text": "How happy are you?",
             "options": [{"code": c, "label": label} for c, label in A008.items()]},
            # scale order differs from code order: agree (1) < neither (3) < disagree (2)
            {"id": "wvs_C001", "variable": "C001", "topic": "Work",
             "category": "Social inequality, work, and economic values",
             "text": "When jobs are scarce, should men have more right to a job than women?",
             "options": [{"code": 1, "label": "Agree"}, {"code": 3, "label": "Neither"},
                         {"code": 2, "label": "Disagree"}]},
        ]
    },
    "issp": {
        "studies": [
            {"id": "ZA1950", "files": ["ZA1950*"], "year": 1990,
             "country": {"variable": "v3", "coding": "map", "map": {1: "AUS", 2: "DEU", 3: "DEU", 4: "GBR"}},
             "weight": "v114"},
            {"id": "ZA2900", "files": ["ZA2900*"], "year": 1996,
             "country": {"variable": "v3", "coding": "map", "map": {1: "AUS", 2: "DEU", 3: "DEU", 4: "GBR"}},
             "weight": "v325"},
            {"id": "ZA6900", "files": ["ZA6900*"], "year": 2016,
             "country": {"variable": "c_alphan", "coding": "alpha2"}, "weight": "WEIGHT"},
        ],
        "questions": [
            {"id": "issp_rog_jobs", "module": "Role of Government",
             "category": "Social inequality, work, and economic values",
             "text": "Should it be the government's responsibility to provide a job for everyone who wants one?",
             "options": [{"code": 1, "label": "Definitely should be"}, {"code": 2, "label": "Probably should be"},
                         {"code": 3, "label": "Probably should not be"}, {"code": 4, "label": "Definitely should not be"}],
             "invalid_codes": [0, 8, 9],
             "sources": {"ZA1950": "v49", "ZA2900": "v36",
                         "ZA6900": {"variable": "v21", "invalid_codes": [-8, -9]}}},
        ],
    },
}
ROG = {1: "Definitely should be", 2: "Probably should be", 3: "Probably should not be", 4: "Definitely should not be",
       8: "Can't choose", 9: "NA", 0: "NAP"}


def counts_to_codes(counts: dict, rng=None) -> np.ndarray:
    values = np.concatenate([np.full(n, float(code)) for code, n in counts.items()]) if counts else np.array([])
    if rng is not None:
        rng.shuffle(values)
    return values


@pytest.fixture
def registry_data() -> dict:
    """A fresh copy of the test registry, to modify."""
    import copy

    return copy.deepcopy(REGISTRY)


@pytest.fixture
def registry_file(tmp_path: Path):
    """Write a registry (the default one above, or a modified copy) and return its path."""

    def write(data: dict | None = None, name: str = "registry.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data or REGISTRY, sort_keys=False), encoding="utf-8")
        return path

    return write


@pytest.fixture
def wvs_file(tmp_path: Path):
    """Write a WVS time-series file from groups.

    Each group: {"country": 124, "wave": 3, "year": 1996 (or a list per respondent), "weight": 1.0 or array,
    "A008": {code: count}, "C001": {code: count}} (absent variables are -4, not asked). All variables of a
    group must give the same respondent count.
    """

    def write(groups: list[dict], name: str = "wvs.sav", fmt: str | None = None, drop: tuple = (),
              value_labels: dict | None = None, alpha_only: bool = False) -> Path:
        rng = np.random.default_rng(0)
        parts = []
        for g in groups:
            answers = {v: counts_to_codes(g[v], rng) for v in ("A008", "C001") if v in g}
            n = len(next(iter(answers.values())))
            assert all(len(a) == n for a in answers.values())
            part = {
                "S002VS": np.full(n, float(g["wave"])),
                "S003": np.full(n, float(g["country"])),
                "S020": np.asarray(g["year"], float) if np.ndim(g["year"]) else np.full(n, float(g["year"])),
                "S017": np.asarray(g.get("weight", 1.0), float) * np.ones(n),
            }
            for v in ("A008", "C001"):
                part[v] = answers.get(v, np.full(n, -4.0))
            parts.append(pd.DataFrame(part))
        df = pd.concat(parts, ignore_index=True)
        if alpha_only:
            from histbench.builders.chronoculture.countries import CountryTable
            from histbench.core.resources import Resources

            table = CountryTable.load(Resources.default().source_dir("chronoculture") / "countries.csv")
            df.insert(2, "COUNTRY_ALPHA", [table.from_numeric(c).alpha3 if table.from_numeric(c) else "ZZZ"
                                           for c in df["S003"]])
            df = df.drop(columns=["S003"])
        df = df.drop(columns=list(drop))
        labels = value_labels if value_labels is not None else {"A008": {**A008, **NEG}, "C001": {**C001, **NEG}}
        labels = {k: v for k, v in labels.items() if k in df.columns}
        path = tmp_path / name
        fmt = fmt or path.suffix.lstrip(".")
        if fmt == "sav":
            pyreadstat.write_sav(df, path, variable_value_labels=labels)
        elif fmt == "dta":
            pyreadstat.write_dta(df, path, variable_value_labels={k: {int(c): s for c, s in v.items()} for k, v in labels.items()})
        else:
            df.to_csv(path, index=False)
        return path

    return write


@pytest.fixture
def issp_file(tmp_path: Path):
    """Write an ISSP module file: groups of {"v3": code, "weight": w, "answers": {code: count}}."""

    def write(name: str, groups: list[dict], question_var: str = "v49", weight_var: str = "v114",
              country_var: str = "v3", labels: dict | None = None) -> Path:
        rng = np.random.default_rng(1)
        parts = []
        for g in groups:
            answers = counts_to_codes(g["answers"], rng)
            n = len(answers)
            parts.append(pd.DataFrame({
                country_var: [g[country_var]] * n,
                question_var: answers,
                weight_var: np.asarray(g.get("weight", 1.0), float) * np.ones(n),
            }))
        df = pd.concat(parts, ignore_index=True)
        value_labels = {question_var: labels or ROG}
        path = tmp_path / name
        if name.endswith(".sav"):
            pyreadstat.write_sav(df, path, variable_value_labels=value_labels)
        elif name.endswith(".dta"):
            pyreadstat.write_dta(df, path, variable_value_labels=value_labels)
        else:
            df.to_csv(path, index=False)
        return path

    return write


@pytest.fixture
def build(tmp_path: Path):
    """Run the real build (shipped schemas, card, country table, prompts) and load the result."""

    def run(wvs: Path | None = None, issp: list[Path] | None = None, registry: Path | None = None, seed: int = 0,
            **options) -> dict:
        opts = dict(options)
        if registry is not None:
            opts["registry"] = str(registry)
        folder = run_build(BUILDER, {"wvs": wvs, "issp": issp or None}, options=opts,
                           out_root=tmp_path / "out", seed=seed)
        return load_build(folder)

    return run


def load_build(folder: Path) -> dict:
    """Every config's test rows as histbench's evaluators read them (categorical columns as names)."""
    from histbench.core.dataset import load_build_config

    manifest = json.loads((folder / "histbench.json").read_text())
    data = {"folder": folder, "manifest": manifest, "summary": manifest["summary"]}
    for config in manifest["rows"]:
        data[config] = load_build_config(folder, config, "test", manifest["data_sha256"]).to_list()
    return data


def happy(n_valid: int, shares=(0.4, 0.3, 0.2, 0.1), invalid: dict | None = None) -> dict:
    """Counts for A008 with n_valid valid answers split by `shares` (largest remainder) plus invalid codes."""
    raw = np.asarray(shares, float) * n_valid
    base = np.floor(raw).astype(int)
    order = np.argsort(-(raw - base), kind="stable")
    base[order[: n_valid - base.sum()]] += 1
    out = {code: int(c) for code, c in zip((1, 2, 3, 4), base, strict=True) if c}
    out.update(invalid or {})
    return out


@pytest.fixture
def happy_counts():
    return happy
