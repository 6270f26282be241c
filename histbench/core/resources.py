"""Where the shipped data lives: schemas/, cards/ and sources/.

The three folders are installed as the packages `histbench.schemas`, `histbench.cards`
and `histbench.sources`, so they are found the same way from a repository checkout, an
editable install or a wheel. `Resources` bundles the three roots; tests point it at
folders of their own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from .errors import BuildError


def _package_dir(package: str) -> Path:
    root = resources.files(package)
    # Installed packages are plain folders (never zipped); a MultiplexedPath from a
    # namespace portion also exposes a real directory.
    return Path(str(root))


@dataclass(frozen=True)
class Resources:
    schemas: Path
    cards: Path
    sources: Path

    @classmethod
    def default(cls) -> Resources:
        return cls(
            schemas=_package_dir("histbench.schemas"),
            cards=_package_dir("histbench.cards"),
            sources=_package_dir("histbench.sources"),
        )

    def schema_path(self, benchmark: str, config: str) -> Path:
        return self.schemas / f"{benchmark}.{config}.schema.json"

    def schema(self, benchmark: str, config: str) -> dict:
        path = self.schema_path(benchmark, config)
        if not path.is_file():
            raise BuildError(f"no JSON schema for config {config!r} of {benchmark}", file=path)
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)

    def card_template(self, benchmark: str) -> str:
        path = self.cards / f"{benchmark}.md"
        if not path.is_file():
            raise BuildError(f"no dataset card template for {benchmark}", file=path)
        return path.read_text(encoding="utf-8")

    def source_dir(self, benchmark: str) -> Path:
        return self.sources / benchmark

    def load_yaml(self, path: Path) -> dict:
        with path.open(encoding="utf-8") as handle:
            return yaml.safe_load(handle) or {}
