"""What every histbench inspect task shares: opening the build, the prompts as inspect
chat messages, the solver that sends them with histbench's decoding, and flattening
histbench's metrics into the numbers an inspect metric reports."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import Generate, TaskState, solver

#: the sample metadata key holding the generation settings histbench uses for that prompt
GENERATE = "histbench_generate"


@lru_cache(maxsize=16)
def open_build(benchmark: str, dataset: str | None = None, revision: str | None = None):
    """The build a task reads: `dataset` (a folder or a Hub id), by default where
    `histbench build BENCHMARK` writes (build/<benchmark>-<version>)."""
    from histbench.core.dataset import BuiltDataset
    from histbench.eval.plugin import default_dataset

    return BuiltDataset.open(dataset or default_dataset(benchmark), revision=revision, benchmark=benchmark)


@lru_cache(maxsize=64)
def build_rows(benchmark: str, dataset: str | None, revision: str | None, config: str, split: str = "test") -> list[dict]:
    """One config of the build as histbench's evaluators read it (ClassLabel names, not ids)."""
    return open_build(benchmark, dataset, revision).load(config, split).to_list()


def chat_input(messages: Sequence[Mapping]) -> list:
    """histbench's chat messages ({"role", "content"}) as inspect's, word for word."""
    out = []
    for message in messages:
        if message["role"] == "system":
            out.append(ChatMessageSystem(content=message["content"]))
        elif message["role"] == "user":
            out.append(ChatMessageUser(content=message["content"]))
        else:
            raise ValueError(f"unexpected role {message['role']!r} in a histbench prompt")
    return out


def generate_config(*, max_tokens: int, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None) -> dict:
    """The decoding histbench asks with (GenerateRequest: max_new_tokens, temperature,
    top_p, seed), as inspect GenerateConfig arguments."""
    config = {"max_tokens": int(max_tokens), "temperature": float(temperature), "top_p": float(top_p)}
    if seed is not None:
        config["seed"] = int(seed)
    return config


@solver
def histbench_generate():
    """Generate once with the sample's own decoding (metadata `histbench_generate`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return await generate(state, **state.metadata[GENERATE])

    return solve


@solver
def histbench_generate_with_format_retries(parse, retries: int):
    """MHER's protocol (histbench.eval.mher.run): ask; while the reply breaks the output
    contract (`parse` raises ValueError), ask the same messages again, afresh, with
    seed = the attempt number, at most `retries` more times. The last reply is the
    sample's output; `histbench_tries` in the metadata counts the asks."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        config = dict(state.metadata[GENERATE])
        prompt = list(state.messages)
        for attempt in range(retries + 1):
            if attempt:
                config["seed"] = attempt
            output = await model.generate(prompt, config=GenerateConfig(**config))
            try:
                parse(output.completion)
                ok = True
            except ValueError:
                ok = False
            if ok or output.error:
                break
        state.output = output
        state.messages = [*prompt, output.message]
        state.metadata["histbench_tries"] = attempt + 1
        return state

    return solve


def cut_off(state: TaskState) -> bool:
    """The answer hit its token budget (histbench: finish_reason "length")."""
    return state.output.stop_reason == "max_tokens"


def flatten(metrics: Mapping, prefix: str = "", skip: tuple[str, ...] = ("per_type",)) -> dict[str, float]:
    """The numbers of a (nested) histbench metrics mapping as one flat {name: float}
    (nested names joined with '_'; lists, texts and `skip` keys left out)."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if key in skip:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, int | float):
            out[name] = float(value)
        elif isinstance(value, Mapping):
            out.update(flatten(value, f"{name}_", skip))
        elif value is None:
            out[name] = math.nan
    return out
