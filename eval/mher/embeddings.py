"""Embedding models for the MHER embedding baseline (section 5.2, Table 2).

The paper's embedding baseline is an API model (gemini-embedding-2) with separate DEV
thresholds for names and contexts. `--embedding-model` takes either

    PATH_OR_HUB_ID                 a local sentence-transformers model (runs offline from a path)
    api:MODEL@BASE_URL[#KEY_ENV]   an OpenAI-compatible `POST BASE_URL/embeddings` endpoint
                                   (OpenAI, a vLLM or llama.cpp server, a gateway to another
                                   provider); the key is read from $KEY_ENV (default
                                   $OPENAI_API_KEY) and never written anywhere

Both give an object with sentence-transformers' `encode(texts, ...)` (unit-length vectors)
and an `EmbeddingModelInfo`: the short name that tables show (not a path), the full spec
that the run records, and the language coverage read from the model card's `language`
field (or known model families), so that an English-only model is labelled as such on a
benchmark of Mongolian, Persian, Chinese and Latin names.

API requests send up to `batch_size` texts each; transport errors, timeouts, HTTP 429 and
5xx, and 200 replies without a complete embedding list (or with a value that is not a
finite number) are retried with exponential backoff and full jitter (at least the server's
Retry-After), at most `max_retries` times; 401/403/404 and other 4xx stop with an error
naming the endpoint. As for the api backend, each attempt is read as a stream under a
wall-clock `deadline` (checked as each piece arrives, so a server that drips bytes or
never ends is cut off within `timeout` of it) and a size cap `max_response_bytes`; the key
is registered as a secret (histbench.core.secrets) and refused when shorter than 8
characters.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from histbench.core.errors import EvalError
from histbench.core.extras import require
from histbench.core.secrets import MIN_SECRET_LENGTH, register_secret

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
ENGLISH_ONLY, MULTILINGUAL, UNKNOWN = "English-only", "multilingual", "language coverage unknown"
# Model families whose coverage is known when no card says it (lower-case substrings).
_ENGLISH_FAMILIES = ("all-minilm", "all-mpnet", "all-distilroberta", "multi-qa-", "msmarco-", "gtr-t5",
                     "sentence-t5", "bge-small-en", "bge-base-en", "bge-large-en", "e5-small-v2", "e5-base-v2",
                     "e5-large-v2", "nomic-embed-text-v1")
_MULTILINGUAL_FAMILIES = ("multilingual", "labse", "bge-m3", "gemini-embedding", "text-embedding-3",
                          "text-embedding-004", "text-multilingual-embedding", "embed-multilingual", "jina-embeddings-v3",
                          "gte-multilingual", "qwen3-embedding")


@dataclass(frozen=True)
class EmbeddingModelInfo:
    spec: str          # what the user gave (recorded in the run)
    name: str          # short name for tables
    backend: str       # "sentence-transformers" or "api"
    coverage: str      # ENGLISH_ONLY, MULTILINGUAL or UNKNOWN
    coverage_source: str

    @property
    def english_only(self) -> bool:
        return self.coverage == ENGLISH_ONLY

    @property
    def label(self) -> str:
        """The name tables show: short, with the English-only flag where it applies."""
        return f"{self.name}, English-only" if self.english_only else self.name

    def to_json(self) -> dict:
        return {**asdict(self), "label": self.label}


def coverage_from_card(languages) -> str | None:
    """The coverage a model card's `language` field declares (None when it says nothing)."""
    if languages is None:
        return None
    items = [languages] if isinstance(languages, str) else list(languages)
    items = [str(i).strip().lower() for i in items if str(i).strip()]
    if not items:
        return None
    if items in (["en"], ["eng"], ["english"]):
        return ENGLISH_ONLY
    if "multilingual" in items or len(items) > 1:
        return MULTILINGUAL
    return None


def coverage_from_name(name: str) -> str | None:
    lowered = name.lower()
    if any(f in lowered for f in _MULTILINGUAL_FAMILIES):
        return MULTILINGUAL
    if any(f in lowered for f in _ENGLISH_FAMILIES):
        return ENGLISH_ONLY
    return None


def _card(folder: Path) -> tuple[dict, str | None]:
    """(front matter, first '# ' heading) of a model folder's README.md."""
    readme = folder / "README.md"
    if not readme.is_file():
        return {}, None
    import yaml

    text = readme.read_text(encoding="utf-8", errors="replace")
    meta: dict = {}
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end > 0:
            try:
                loaded = yaml.safe_load(text[3:end])
            except yaml.YAMLError:
                loaded = None
            meta = loaded if isinstance(loaded, dict) else {}
    heading = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)
    return meta, heading


def describe_local(spec: str, model=None) -> EmbeddingModelInfo:
    """Name and coverage of a sentence-transformers model given by path or Hub id."""
    path = Path(spec).expanduser()
    meta, heading = _card(path) if path.is_dir() else ({}, None)
    if path.is_dir():
        name = heading or (path.name if path.name not in ("model", "models", "") else path.parent.name)
    else:
        name = spec.rstrip("/").split("/")[-1]
    coverage, source = coverage_from_card(meta.get("language")), "model card (README.md language)"
    if coverage is None:
        coverage, source = coverage_from_name(name) or coverage_from_name(spec), "model family name"
    if coverage is None:
        coverage, source = UNKNOWN, "neither the model card nor the name says"
    return EmbeddingModelInfo(spec, name, "sentence-transformers", coverage, source)


class ApiEmbeddings:
    """An OpenAI-compatible /embeddings endpoint with sentence-transformers' `encode`."""

    def __init__(self, spec: str, model: str, base_url: str, key_env: str | None = None, batch_size: int = 64,
                 timeout: float = 60.0, max_retries: int = 6, backoff_base: float = 1.0, backoff_max: float = 30.0,
                 deadline: float = 600.0, max_response_bytes: int = 32 * 2**20):
        self.spec, self.model, self.base_url, self.key_env = spec, model, base_url.rstrip("/"), key_env
        self.batch_size, self.timeout, self.max_retries = int(batch_size), float(timeout), int(max_retries)
        self.backoff_base, self.backoff_max = float(backoff_base), float(backoff_max)
        self.deadline, self.max_response_bytes = float(deadline), int(max_response_bytes)
        if self.batch_size < 1:
            raise EvalError("the embedding batch size must be at least 1", field="--embedding-model")
        self.stats = {"requests": 0, "retries": 0, "texts": 0}

    @property
    def url(self) -> str:
        return self.base_url + "/embeddings"

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.key_env:
            key = os.environ.get(self.key_env)
            if not key:
                raise EvalError(f"the embedding model spec names ${self.key_env} for the API key, but it is not set",
                                field="--embedding-model")
        else:
            key = os.environ.get(DEFAULT_KEY_ENV)
        if key and len(key.strip()) < MIN_SECRET_LENGTH:
            raise EvalError(f"the API key in ${self.key_env or DEFAULT_KEY_ENV} is shorter than {MIN_SECRET_LENGTH} "
                            "characters: histbench refuses keys that short (it could not keep them out of what it "
                            "writes); for a server that needs no key, leave the variable unset", field="--embedding-model")
        if key:
            register_secret(key)
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post(self, client, body: dict, headers: dict):
        """(status, headers, body bytes) of one attempt, read within the deadline and the size
        cap: httpx.ReadTimeout past the deadline (retried like a timeout), EvalError over the cap."""
        import httpx

        started = time.monotonic()
        with client.stream("POST", self.url, json=body, headers=headers) as response:
            length = response.headers.get("Content-Length", "")
            if length.isdigit() and int(length) > self.max_response_bytes:
                raise EvalError(f"{self.url} announced an answer of {int(length):,} bytes, above max_response_bytes "
                                f"({self.max_response_bytes:,} bytes)", field="--embedding-model")
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise EvalError(f"{self.url} sent an answer above max_response_bytes ({self.max_response_bytes:,} "
                                    "bytes)", field="--embedding-model")
                if time.monotonic() - started > self.deadline:
                    raise httpx.ReadTimeout(f"no complete answer within the deadline of {self.deadline} s")
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))
        try:
            delay = max(delay, min(float(retry_after), self.backoff_max)) if retry_after else delay
        except ValueError:
            pass
        time.sleep(delay)

    def _batch(self, client, headers: dict, texts: list[str]) -> np.ndarray:
        import httpx

        body = {"model": self.model, "input": texts}
        for attempt in range(1, self.max_retries + 2):
            self.stats["requests"] += 1
            retry_after = None
            try:
                status, answer_headers, content = self._post(client, body, headers)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                detail = f"{type(exc).__name__}: {exc}"
            else:
                text = content.decode("utf-8", errors="replace")
                if status == 200:
                    vectors = self._vectors(content, len(texts))
                    if vectors is not None:
                        return vectors
                    detail = f"HTTP 200 without {len(texts)} finite embeddings: {text[:200]!r}"
                elif status == 429 or status >= 500:
                    detail, retry_after = f"HTTP {status}: {text[:200]}", answer_headers.get("Retry-After")
                else:
                    hint = {401: "authentication failed", 403: "access refused", 404: "no such endpoint or model"}
                    raise EvalError(f"{hint.get(status, 'request refused')}: HTTP {status} from {self.url}: "
                                    f"{text[:300]}", field="--embedding-model")
            if attempt > self.max_retries:
                raise EvalError(f"no embeddings from {self.url} after {attempt} attempts; last: {detail}",
                                field="--embedding-model")
            self.stats["retries"] += 1
            self._wait(attempt, retry_after)
        raise AssertionError("unreachable")

    @staticmethod
    def _vectors(content: bytes, expected: int) -> np.ndarray | None:
        import json

        try:
            data = json.loads(content)["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            if [item["index"] for item in ordered] != list(range(expected)):  # each text's vector once
                return None
            vectors = np.array([item["embedding"] for item in ordered], dtype=np.float64)
        except (ValueError, KeyError, TypeError):
            return None
        if vectors.ndim != 2 or len(vectors) != expected or not np.isfinite(vectors).all():
            return None
        return vectors

    def encode(self, texts, batch_size: int | None = None, normalize_embeddings: bool = True, **_ignored) -> np.ndarray:
        import httpx

        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, 0))
        headers = self._headers()
        size = self.batch_size
        parts = []
        with httpx.Client(timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))) as client:
            for start in range(0, len(texts), size):
                parts.append(self._batch(client, headers, texts[start:start + size]))
        self.stats["texts"] += len(texts)
        if len({p.shape[1] for p in parts}) > 1:
            raise EvalError(f"{self.url} returned embeddings of different lengths in one run", field="--embedding-model")
        vectors = np.concatenate(parts)
        if normalize_embeddings:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            if (norms == 0).any():
                raise EvalError(f"{self.url} returned an all-zero embedding", field="--embedding-model")
            vectors = vectors / norms
        return vectors

    def info(self) -> EmbeddingModelInfo:
        coverage = coverage_from_name(self.model)
        return EmbeddingModelInfo(self.spec, self.model, "api", coverage or UNKNOWN,
                                  "model family name" if coverage else "an API model card is not available")


def load_embedding_model(spec: str):
    """(model, EmbeddingModelInfo) for `--embedding-model` (module docstring)."""
    if spec.startswith("api:"):
        from histbench.core.backends.spec import parse_api_target

        model, url, env = parse_api_target(spec[len("api:"):])
        client = ApiEmbeddings(spec, model, url, env)
        return client, client.info()
    SentenceTransformer = require("sentence_transformers", "the embedding baseline").SentenceTransformer
    try:
        model = SentenceTransformer(spec, device="cpu")
    except Exception as exc:  # noqa: BLE001 - the library raises many kinds; name the model
        raise EvalError(f"cannot load the sentence-transformers model {spec!r}: {exc}", field="--embedding-model") from exc
    return model, describe_local(spec, model)
