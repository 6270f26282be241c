"""The chat backend used by build steps that the paper ran with an LLM (WSD screening,
answer synthesis, distractors), with an answer cache so an interrupted or repeated build
never asks the same question twice.

The cache is a JSON Lines file (`--chat-cache`, default `build/.cache/italian-chat.jsonl`):
one `{"key", "text"}` line per answer, keyed by the backend's request key (model spec,
revision, options and the full request). Answers are appended as they arrive.
"""

from __future__ import annotations

import json
from pathlib import Path

from histbench.core.errors import BuildError
from histbench.core.progress import progress


class ChatClient:
    def __init__(self, spec: str, options: dict | None, cache: Path, max_new_tokens: int = 400) -> None:
        from histbench.core.backends import GenerateRequest, load_backend  # noqa: F401 - import check

        self.spec = spec
        self.backend = load_backend(spec, options=options or {})
        if "generate" not in self.backend.supports:
            raise BuildError(f"the chat model {spec!r} cannot generate text", field="--chat-model")
        self.cache_path = Path(cache)
        self.cache: dict[str, str] = {}
        self.max_new_tokens = max_new_tokens
        if self.cache_path.is_file():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    try:
                        item = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by an interruption
                    self.cache[item["key"]] = item["text"]
        self.asked = 0
        self.cached = 0

    def identity(self) -> dict:
        return self.backend.identity()

    def ask(self, conversations: list[list[dict]], desc: str) -> list[str]:
        """One answer text per conversation (list of {"role", "content"} messages)."""
        from histbench.core.backends import GenerateRequest
        from histbench.core.backends.base import RequestFailed

        requests = [GenerateRequest(messages=c, max_new_tokens=self.max_new_tokens, temperature=0.0) for c in conversations]
        keys = [self.backend.key(r) for r in requests]
        answers: list[str | None] = [self.cache.get(k) for k in keys]
        todo = [i for i, a in enumerate(answers) if a is None]
        self.cached += len(requests) - len(todo)
        if todo:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            with self.cache_path.open("a", encoding="utf-8") as handle, progress(total=len(todo), desc=desc) as bar:
                for index, result in self.backend.stream([requests[i] for i in todo]):
                    n = todo[index]
                    if isinstance(result, RequestFailed):
                        raise BuildError(f"the chat model failed on a {desc} request: {result}", field="--chat-model")
                    answers[n] = result.text
                    self.cache[keys[n]] = result.text
                    handle.write(json.dumps({"key": keys[n], "text": result.text}, ensure_ascii=False) + "\n")
                    handle.flush()
                    bar.update(1)
            self.asked += len(todo)
        return [a or "" for a in answers]

    def close(self) -> None:
        self.backend.close()
