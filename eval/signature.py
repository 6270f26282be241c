"""Result signatures, in the spirit of sacrebleu's: one line that says what produced a number.

    histbench:0.1.0|data:chronologic@1.0.0#3f2a9c1b7d0e|model:hf:/models/x@rev|decode:greedy,max_new_tokens=120|prompt:9c1e44a0b2f7

`make_signature` returns a `Signature` holding that text and the full dict behind it
(every field unabridged, for results JSON); two results with the same signature text
were computed by the same histbench version, on the same data, by the same model and
decoding, with the same prompt template.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SHORT = 12


def hash_text(value: Any) -> str:
    """sha256 hex digest of a text (or of the canonical JSON of a list/dict of texts, e.g.
    a system prompt plus a user template)."""
    if isinstance(value, bytes):
        data = value
    elif isinstance(value, str):
        data = value.encode("utf-8")
    else:
        data = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def _clean(value: Any) -> str:
    """A field value that cannot break the `|`/`:` layout."""
    return str(value).replace("|", "/").replace("\n", " ")


def _format_decoding(decoding: Mapping) -> str:
    if not decoding:
        return "none"
    parts = []
    items = dict(decoding)
    if items.get("temperature", None) == 0 or items.get("temperature") == 0.0:
        parts.append("greedy")
        items.pop("temperature")
        if items.get("top_p") in (1, 1.0):
            items.pop("top_p")
    for key in sorted(items):
        value = items[key]
        if value is None:
            continue
        if isinstance(value, list | tuple):
            value = "+".join(json.dumps(v, ensure_ascii=False) if isinstance(v, str) else str(v) for v in value)
        parts.append(f"{key}={value}")
    return ",".join(parts) or "none"


@dataclass(frozen=True)
class Signature:
    text: str
    data: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict:
        return {"text": self.text, **self.data}


def make_signature(
    dataset: Mapping | None = None,
    backend: Mapping | None = None,
    decoding: Mapping | None = None,
    prompt_template_hash: str | None = None,
    **extra: Any,
) -> Signature:
    """dataset: BuiltDataset.identity(); backend: Backend.identity(); decoding: the
    decoding parameters (e.g. GenerateRequest.decoding(), or {"method": "loglikelihood"});
    prompt_template_hash: hash_text(template). Extra keyword fields (e.g. metric="brier",
    config="questions") are appended in sorted order."""
    from histbench.core.version import histbench_version

    dataset = dict(dataset or {})
    backend = dict(backend or {})
    version = histbench_version()
    parts = [f"histbench:{_clean(version)}"]
    if dataset:
        sha = dataset.get("data_sha256") or ""
        parts.append(f"data:{_clean(dataset.get('benchmark', '?'))}@{_clean(dataset.get('version', '?'))}" + (f"#{sha[:SHORT]}" if sha else ""))
    if backend:
        model = backend.get("spec") or f"{backend.get('backend')}:{backend.get('model')}"
        revision = backend.get("revision")
        if revision and f"@{revision}" not in model:
            model += f"@{revision[:SHORT] if len(str(revision)) == 40 else revision}"
        parts.append(f"model:{_clean(model)}")
        dtype = (backend.get("options") or {}).get("dtype")
        if dtype:
            parts.append(f"dtype:{_clean(dtype)}")
    if decoding is not None:
        parts.append(f"decode:{_clean(_format_decoding(decoding))}")
    if prompt_template_hash:
        parts.append(f"prompt:{_clean(prompt_template_hash[:SHORT])}")
    for key in sorted(extra):
        parts.append(f"{_clean(key)}:{_clean(extra[key])}")
    data = {
        "histbench_version": version,
        "dataset": dataset or None,
        "backend": backend or None,
        "decoding": dict(decoding) if decoding is not None else None,
        "prompt_template_hash": prompt_template_hash,
        **{k: extra[k] for k in sorted(extra)},
    }
    return Signature("|".join(parts), data)
