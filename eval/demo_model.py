"""The model runs of `make demo`: each benchmark's demo scores the offline SmolLM2 (or the
model it is given) and says on its page when it could not."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from histbench.core.backends.offline import SMOLLM2_NAME
from histbench.core.progress import log

#: the demo's model, and what every benchmark's demo calls it (one name on the index:
#: the model's, never the spec), with how it was scored where a benchmark scores two ways
DEMO_MODEL = "offline:smollm2"
#: its options, the same for every benchmark so that one loaded model serves them all
#: (`shared_demo_models`): float32, and a token budget of 256, so that each question is a
#: packed pass of its own. Before the engine packed questions (issue 45), the default budget
#: let Historical Italian's ranking questions (contexts of about 880 tokens, 24 orderings
#: each) copy the context's key/value cache into 72 rows at once: 4.9 GB peak memory against
#: 2.2 GB, for the same CPU time (issue 44); the scores differ by float rounding only (the
#: engine's passes change, not what is computed).
DEMO_MODEL_OPTIONS = {"dtype": "float32", "token_budget": 256}


def demo_label(method: str | None = None) -> str:
    """`SmolLM2-135M-Instruct`, or `SmolLM2-135M-Instruct (likelihood)`."""
    return f"{SMOLLM2_NAME} ({method})" if method else SMOLLM2_NAME


#: the backends loaded so far by score_with_demo_model within `shared_demo_models()`, by
#: spec and options; None outside it (each benchmark loads and closes its own)
_SHARED: dict[tuple[str, str], Any] | None = None


@contextmanager
def shared_demo_models() -> Iterator[None]:
    """Within it, `score_with_demo_model` loads a model once and hands the same backend to
    every benchmark that asks for the same spec and options (`histbench demo`: one SmolLM2
    for ChronoCulture, Chronologic and Italian); every backend is closed at the end."""
    global _SHARED
    if _SHARED is not None:   # already inside: the outer one closes
        yield
        return
    _SHARED = {}
    try:
        yield
    finally:
        shared, _SHARED = _SHARED, None
        for backend in shared.values():
            backend.close()


def score_with_demo_model(benchmark: str, label: str, spec: str, options: Mapping[str, Any],
                          score: Callable[[Any], None]) -> str:
    """Call `score(backend)` with the backend of `spec`, closed afterwards (within
    `shared_demo_models()`: the one loaded for an earlier benchmark, closed at its end). Returns "" when
    it ran, else the sentence for the demo page saying why `label` was not scored (the
    engine's backends cannot be imported, or the offline model's package is not
    installed; the latter is also logged). Any other error propagates."""
    try:
        from histbench.core.backends import load_backend
        from histbench.core.backends.offline import OfflineModelUnavailable
    except ImportError as exc:  # the evaluator engine is missing pieces
        return f"{label} was not scored: the model backends are unavailable ({exc})."
    key = (spec, json.dumps(dict(options), sort_keys=True, default=str))
    try:
        if _SHARED is None:
            backend = load_backend(spec, dict(options))
            try:
                score(backend)
            finally:
                backend.close()
        else:
            backend = _SHARED.get(key) or load_backend(spec, dict(options))
            _SHARED[key] = backend
            score(backend)
    except OfflineModelUnavailable as exc:
        note = f"{label} was not scored: {exc}"
        log(f"[{benchmark}] {note}")
        return note
    return ""
