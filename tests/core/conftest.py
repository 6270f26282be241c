"""A toy benchmark with two configs (two splits each) for testing the core in isolation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from histbench.builders.core.build import BenchmarkBuilder, BuildContext
from histbench.builders.core.resources import Resources
from histbench.builders.core.writer import BuildOutput

ITEMS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "toy.items",
    "type": "object",
    "properties": {
        "item_id": {"type": "string"},
        "year": {"type": "integer", "minimum": 1800},
        "score": {"type": ["number", "null"]},
        "options": {"type": "array", "items": {"type": "string"}},
        "gold": {
            "type": "object",
            "properties": {"index": {"type": "integer"}, "weight": {"type": "number"}},
            "required": ["index", "weight"],
            "additionalProperties": False,
        },
    },
    "required": ["item_id", "year", "score", "options", "gold"],
    "additionalProperties": False,
}

PAIRS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "toy.pairs",
    "type": "object",
    "properties": {
        "pair_id": {"type": "integer"},
        "left": {"type": "string"},
        "right": {"type": "string"},
        "same": {"type": "boolean"},
        # categorical: stored as a ClassLabel (null stays null)
        "relation": {"type": ["string", "null"], "enum": ["same_start", "different_start", None]},
    },
    "required": ["pair_id", "left", "right", "same", "relation"],
    "additionalProperties": False,
}

CARD = """---
pretty_name: Toy benchmark
license: cc-by-4.0
language: [en]
task_categories: [text-classification]
tags: [history]
---
# Toy $version

$row_table

$summary

## Uses

Testing histbench's core.

## Bias, risks and limitations

Twelve invented lines.

## Source data

`lines.txt`.

## Annotations

None.

## Citation

$citation
"""

CITATION = """@misc{toy2026,
  title = {A toy benchmark},
  year  = {2026}
}
"""


def make_records(lines: list[str]) -> BuildOutput:
    items = [
        {
            "item_id": f"i{n}",
            "year": 1850 + n,
            "score": None if n % 3 == 0 else n / 7,
            "options": line.split(),
            "gold": {"index": n % 2, "weight": 1.0},
        }
        for n, line in enumerate(lines)
    ]
    pairs = [
        {"pair_id": n, "left": a, "right": b, "same": a[0] == b[0],
         "relation": None if n % 4 == 3 else "same_start" if n % 2 else "different_start"}
        for n, (a, b) in enumerate(zip(lines, lines[1:], strict=False))
    ]
    half_i, half_p = len(items) // 2, len(pairs) // 2
    return BuildOutput(
        configs={
            "items": {"dev": items[:half_i], "test": items[half_i:]},
            "pairs": {"dev": pairs[:half_p], "test": pairs[half_p:]},
        },
        summary={"lines": len(lines)},
        summary_markdown=f"{len(lines)} lines read.",
    )


class ToyBuilder(BenchmarkBuilder):
    name = "toy"
    version = "1.0.0"
    title = "Toy benchmark"

    def build(self, ctx: BuildContext) -> BuildOutput:
        lines = []
        for path in ctx.paths("text"):
            lines += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return make_records(lines)


@pytest.fixture
def toy_resources(tmp_path: Path) -> Resources:
    root = tmp_path / "resources"
    (root / "schemas").mkdir(parents=True)
    (root / "cards").mkdir()
    (root / "sources" / "toy" / "sample").mkdir(parents=True)
    (root / "schemas" / "toy.items.schema.json").write_text(json.dumps(ITEMS_SCHEMA, indent=2))
    (root / "schemas" / "toy.pairs.schema.json").write_text(json.dumps(PAIRS_SCHEMA, indent=2))
    (root / "cards" / "toy.md").write_text(CARD)
    (root / "sources" / "toy" / "citation.bib").write_text(CITATION)
    sample = root / "sources" / "toy" / "sample" / "lines.txt"
    sample.write_text("\n".join(f"alpha beta {n} gamma" if n % 2 else f"delta {n}" for n in range(12)) + "\n")
    manifest = {
        "benchmark": "toy",
        "inputs": {
            "text": {
                "description": "text lines",
                "formats": ["txt"],
                "multiple": True,
                "required": True,
                "sample": ["sample/lines.txt"],
            }
        },
    }
    (root / "sources" / "toy" / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    return Resources(schemas=root / "schemas", cards=root / "cards", sources=root / "sources")


@pytest.fixture
def toy_builder() -> ToyBuilder:
    return ToyBuilder()


@pytest.fixture
def toy_sample(toy_resources: Resources) -> Path:
    return toy_resources.sources / "toy" / "sample" / "lines.txt"


@pytest.fixture
def make_toy_records():
    return make_records
