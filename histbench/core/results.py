"""What one evaluation run gave, as `histbench.evaluate` returns it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Results:
    """The results of one run folder.

    benchmark: its name; path: the run folder (everything is also on disk there, and a rerun
    of the same evaluation resumes it); label: the model or baseline as reports name it;
    metrics: the benchmark's own metrics (nested plain values: the numbers its report
    tabulates, with their intervals where the benchmark computes them); records: one dict per
    scored item (question, pair, row, sentence x model...), as the run folder stores them;
    signature: the text that identifies data, model, decoding and prompt (None where a
    benchmark has none); info: what else the run recorded (dataset identity, model, counts,
    options).
    """

    benchmark: str
    path: Path
    label: str
    metrics: dict[str, Any]
    records: list[dict] = field(default_factory=list)
    signature: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_pandas(self):
        """The per-item records as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame.from_records(self.records)

    def to_json(self) -> dict:
        from histbench.core.schema import to_native

        return to_native({"benchmark": self.benchmark, "path": str(self.path), "label": self.label,
                          "signature": self.signature, "metrics": self.metrics, "records": self.records,
                          "info": self.info})

    def __repr__(self) -> str:
        headline = json.dumps(self.metrics, default=str)
        if len(headline) > 160:
            headline = headline[:157] + "..."
        return (f"Results({self.benchmark}, {self.label!r}, {len(self.records)} records, path={str(self.path)!r}, "
                f"signature={self.signature!r}, metrics={headline})")
