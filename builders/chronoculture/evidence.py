"""How much of the ISSP part of the registry public documents pin (issue 25's coverage figures).

`sources/chronoculture/issp_evidence.yaml` records, study by study, the variable names and
labels public documents show in the real GESIS files; the registry pins a variable only
where an entry says `pin: true`, and marks a question `absent` from a study whose whole
variable list a document shows without it. For every module file of the registry (the
cumulations are left out: they repeat the module years) and every question of its module,
the combination is one of:

    pinned   the registry names the variable (a document shows it, or it is one of the
             evidence's `first_version_pins`, which is empty now)
    absent   a document of the whole file shows the item is not asked there (or not on the
             question's scale): the build does not look for it
    pattern  left to the question's label pattern at build time

`coverage()` counts them per module file and in all; docs/chronoculture.md prints the result
(a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from histbench.core.readers import read_text_utf8

from .registry import Registry


@dataclass
class StudyCoverage:
    study: str
    module: str
    year: int
    questions: int
    pinned: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    pattern: list[str] = field(default_factory=list)
    labels_checked: int = 0
    why: str = ""  # why the pattern-found questions are not pinned (the evidence's `unconfirmed`)


@dataclass
class Coverage:
    studies: list[StudyCoverage]

    @property
    def combinations(self) -> int:
        """Questions x module files: every question of a module in every file of the module."""
        return sum(s.questions for s in self.studies)

    @property
    def pinned(self) -> int:
        return sum(len(s.pinned) for s in self.studies)

    @property
    def absent(self) -> int:
        return sum(len(s.absent) for s in self.studies)

    @property
    def pattern(self) -> int:
        return sum(len(s.pattern) for s in self.studies)

    @property
    def asked(self) -> int:
        """Combinations a file asks (every combination minus the documented absences)."""
        return self.combinations - self.absent


def load_evidence(path: Path) -> dict:
    return yaml.safe_load(read_text_utf8(Path(path))) or {}


def coverage(registry: Registry, evidence: dict) -> Coverage:
    studies = []
    for study in registry.studies:
        if study.year.fixed is None or not study.module:
            continue
        questions = [q for q in registry.issp_questions if q.topic == study.module]
        row = StudyCoverage(study.id, study.module, study.year.fixed, len(questions))
        for question in questions:
            if question.source_for(study.id) is not None:
                row.pinned.append(question.id)
            elif study.id in question.absent:
                row.absent.append(question.id)
            else:
                row.pattern.append(question.id)
        recorded = (evidence.get("studies") or {}).get(study.id) or {}
        row.labels_checked = sum(1 for e in recorded.get("variables") or [] if e.get("label") and e.get("question"))
        row.why = str(recorded.get("unconfirmed") or "").strip()
        studies.append(row)
    return Coverage(studies)
