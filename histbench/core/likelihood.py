"""Prefix-shared log-likelihood scoring for causal language models.

Multiple-choice likelihood scoring (Chronologic 5.1, MCQ configs elsewhere) asks for
log P(answer | context) for 4-8 answers after the same, often long, context.
lm-evaluation-harness runs the whole context again for every answer of more than one
token. Here each distinct context is run once; the key/value cache it leaves is shared
by all of its continuations, which are scored together, and several questions are batched
in each forward pass.

Tokenisation is the harness's, so that numbers are comparable:

- trailing whitespace of the context moves to the front of the continuation;
- context tokens = encode(context); continuation tokens = encode(context + continuation)
  after the first len(context tokens) tokens. encode uses the tokenizer's own default for
  special tokens (so a BOS is added where the tokenizer adds one, except to a text that
  already starts with it), unless `add_bos_token` is True or False (as the harness's
  option of that name);
- an empty context: the continuation is encoded without special tokens, and one prefix
  token (BOS, else EOS) stands for the context, unless the continuation already starts
  with that token, which then serves as the context. A whitespace-only context (which
  the harness cannot score) is handled the same way, its whitespace kept on the
  continuation;
- the scored sequence is context tokens + continuation tokens, cut from the left to the
  model's window + 1 tokens (the last token is never fed in). Each cut is counted in the
  result's `truncated` (tokens dropped). A continuation longer than the window is an error.
- the window is the model config's n_positions / max_position_embeddings / n_ctx, else the
  tokenizer's model_max_length, else 2048 (also the harness's order), unless given.

A request with `boundary="context-length"` follows the other convention, that of the Chronologic authors'
evaluation code (benchmark_evaluation.py, _score_answer_ll_hf): the context is encoded as
it is (its trailing whitespace stays), the continuation's tokens are those of
context+continuation after as many tokens as the context alone has, and the model reads
the tokens before them. When the context ends in a space that the continuation's first
word absorbs (BPE and SentencePiece tokenizers), that first token is then read as context
and not scored; a continuation left with no token scores 0.0 over 0 tokens (their
sentinel). Never the default: it is there to reproduce their published numbers.

Computation (method "prefix"): each question (a distinct context with its continuations)
is one packed block: the context's tokens, then each continuation but its last token.
A 4D attention mask lets each continuation see its context and itself only, its position
ids restart after the context, and blocks of several questions share one pass (a
block-diagonal mask, at most `token_budget` tokens a pass; a longer question alone). The
output layer runs only on the scored rows (logits_to_keep): the context's last token,
read once for all of its continuations, and the continuations' own tokens. Every position
the result needs is computed once: no padding, no copy of a cache. Where the model cannot
take this (an attention that ignores a custom 4D mask, such as flash attention, or a
forward without position ids or logits_to_keep), the earlier computation runs: all but
the last context token once per batch of contexts (right-padded, cache kept), then
[last context token] + continuation[:-1] on top of each context's cached rows. Both equal
the full-sequence computation (method "naive", which is what the harness does) up to
float rounding; tests/engine/test_likelihood.py pins 1e-5 on its tiny model in float32
and 1e-10 in float64.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from histbench.core.errors import EvalError

from .backends.base import LoglikelihoodRequest, LoglikelihoodResult

DEFAULT_MAX_LENGTH = 2048
_HUGE_TOKENIZER_LENGTH = 10**17
METHODS = ("prefix", "naive")
#: most padding a continuation row may carry in a shared pass (share of the pass's width)
PAD_SHARE = 0.2


@dataclass(frozen=True)
class Encoded:
    """One request after tokenisation and left truncation."""

    context: tuple[int, ...]
    continuation: tuple[int, ...]
    truncated: int = 0


# --------------------------------------------------------------------------- tokenisation


def model_max_length(model: Any, tokenizer: Any = None) -> int:
    """The context window, found the way lm-evaluation-harness finds it (a nested
    text_config first, then the config, then the tokenizer, then 2048)."""
    config = getattr(model, "config", None)
    config = getattr(config, "text_config", None) or config
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    length = getattr(tokenizer, "model_max_length", None)
    if isinstance(length, int) and 0 < length < _HUGE_TOKENIZER_LENGTH:
        return length
    return DEFAULT_MAX_LENGTH


def prefix_token_id(tokenizer: Any) -> int:
    """The token that stands for an empty context (BOS, else EOS)."""
    for attr in ("bos_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if value is not None:
            return int(value)
    raise EvalError("the tokenizer has neither a BOS nor an EOS token to stand for an empty context")


def encode_requests(
    tokenizer: Any,
    requests: Sequence[LoglikelihoodRequest],
    *,
    max_length: int,
    add_bos_token: bool | None = None,
    prefix_id: int | None = None,
) -> list[Encoded]:
    """Tokenise (context, continuation) pairs with each request's boundary convention (the
    harness's, or "context-length", see the module) and cut each from the left to
    max_length + 1 tokens."""
    prefix_id = prefix_token_id(tokenizer) if prefix_id is None else prefix_id
    bos_text = tokenizer.decode([prefix_id])
    contexts: list[str] = []
    wholes: list[str] = []
    alone: list[str] = []
    plan: list[tuple[str, int, bool]] = []  # ("alone", i, keep) or ("pair", i, keep)
    for request in requests:
        context, continuation = request.context, request.continuation
        keep_spaces = request.boundary == "context-length"
        if context == "":
            plan.append(("alone", len(alone), keep_spaces))
            alone.append(continuation)
            continue
        spaces = len(context) - len(context.rstrip())
        if spaces and not keep_spaces:
            continuation = context[-spaces:] + continuation
            context = context[:-spaces]
        if context == "":  # a whitespace-only context: nothing but the prefix token
            plan.append(("alone", len(alone), keep_spaces))
            alone.append(continuation)
            continue
        plan.append(("pair", len(contexts), keep_spaces))
        contexts.append(context)
        wholes.append(context + continuation)
    unique_contexts = list(dict.fromkeys(contexts))

    def encode(texts: list[str], special: bool | None) -> list[list[int]]:
        """special None: the tokenizer's default, but none for a text already starting with BOS."""
        out: list[list[int] | None] = [None] * len(texts)
        groups: dict[bool | None, list[int]] = {}
        for n, text in enumerate(texts):
            flag = special
            if flag is None and bos_text and text.startswith(bos_text):
                flag = False
            groups.setdefault(flag, []).append(n)
        for flag, members in groups.items():
            kwargs = {} if flag is None else {"add_special_tokens": flag}
            for n, ids in zip(members, tokenizer([texts[n] for n in members], **kwargs)["input_ids"], strict=True):
                out[n] = list(ids)
        return out  # type: ignore[return-value]

    context_ids = dict(zip(unique_contexts, encode(unique_contexts, add_bos_token), strict=True))
    whole_ids = encode(wholes, add_bos_token)
    alone_ids = encode(alone, False)
    out: list[Encoded] = []
    for n, (how, i, keep_spaces) in enumerate(plan):
        if how == "alone":
            cont = alone_ids[i]
            ctx, cont = ([prefix_id], cont) if not cont or cont[0] != prefix_id else (cont[:1], cont[1:])
        else:
            ctx = context_ids[contexts[i]]
            if keep_spaces:  # the model reads whatever the whole text holds before the cut
                ctx, cont = whole_ids[i][: len(ctx)], whole_ids[i][len(ctx):]
                if not cont:
                    out.append(Encoded(tuple(ctx), (), 0))
                    continue
            else:
                cont = whole_ids[i][len(ctx):]
        if not cont:
            raise EvalError(
                "the continuation has no tokens of its own after tokenisation (it merged into the context)",
                row=n, field="continuation",
            )
        if len(cont) > max_length:
            raise EvalError(
                f"the continuation has {len(cont)} tokens, more than the model's window of {max_length}",
                row=n, field="continuation",
            )
        keep = max_length + 1 - len(cont)
        dropped = max(0, len(ctx) - keep)
        out.append(Encoded(tuple(ctx[dropped:]), tuple(cont), dropped))
    return out


# --------------------------------------------------------------------------- model plumbing


def _forward_names(model: Any) -> tuple[str, bool]:
    params = inspect.signature(model.forward).parameters
    cache_arg = "cache" if "cache" in params else "past_key_values"
    return cache_arg, "logits_to_keep" in params


#: attention implementations that apply a 4D mask as given
_MASKED_ATTENTION = ("sdpa", "eager")


def _packs(model: Any) -> bool:
    """Whether the packed computation applies: the forward takes position ids and
    logits_to_keep (row indices), and the attention applies a custom 4D mask as given
    (sdpa or eager; flash attention, for one, does not take one)."""
    params = inspect.signature(model.forward).parameters
    attention = getattr(model.config, "_attn_implementation", None) or "eager"
    return "position_ids" in params and "logits_to_keep" in params and attention in _MASKED_ATTENTION


def _output_cache(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


def _select_cache(cache: Any, index: Any) -> Any:
    """A cache whose batch rows are cache[index] (repeats allowed); the original is untouched."""
    new = copy.copy(cache)
    if hasattr(cache, "layers"):
        new.layers = [copy.copy(layer) for layer in cache.layers]
    else:  # transformers < 4.54: lists of tensors
        for attr in ("key_cache", "value_cache"):
            if hasattr(cache, attr):
                setattr(new, attr, list(getattr(cache, attr)))
    new.batch_select_indices(index)
    return new


def _score_flat(logits: Any, targets: Any, starts: Sequence[int], lengths: Sequence[int]) -> list[tuple[float, bool]]:
    """_score_rows for scored rows laid end to end: item k is rows starts[k]..+lengths[k]."""
    import torch

    if logits.dtype != torch.float64:
        logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logprobs = (picked - torch.logsumexp(logits, dim=-1)).double().tolist()
    greedy = (logits.argmax(dim=-1) == targets).tolist()
    return [(math.fsum(logprobs[s : s + n]), all(greedy[s : s + n])) for s, n in zip(starts, lengths, strict=True)]


def _score_rows(logits: Any, targets: Any, lengths: Sequence[int]) -> list[tuple[float, bool]]:
    """Sum of log-softmax at target tokens over each row's first `length` positions, and
    whether every target was the argmax. The log-softmax keeps the logits' precision,
    float32 at least (half-precision logits are widened; float64 ones were once narrowed to
    float32, which alone put a float64 model 1.8e-6 from the exact value)."""
    import torch

    if logits.dtype != torch.float64:
        logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logprobs = picked - torch.logsumexp(logits, dim=-1)
    greedy = logits.argmax(dim=-1) == targets
    out = []
    for row, length in enumerate(lengths):
        out.append((float(logprobs[row, :length].double().sum()), bool(greedy[row, :length].all())))
    return out


# --------------------------------------------------------------------------- scorers


class PrefixSharedScorer:
    """Log-likelihoods of (context, continuation) token pairs, one model pass per context.

    batch_size: distinct contexts scored (and yielded) together; token_budget: most tokens
    in one packed pass (bounds the logits' memory, token_budget x vocabulary x 4 bytes, and
    the mask's, token_budget squared); in the cached fallback, most (rows x padded length)
    positions in one continuation pass.
    """

    def __init__(self, model: Any, *, batch_size: int = 8, token_budget: int = 1024, device: Any = None) -> None:
        self.model = model
        self.batch_size = max(1, int(batch_size))
        self.token_budget = max(1, int(token_budget))
        self.device = device if device is not None else next(model.parameters()).device
        self.cache_arg, self.has_logits_to_keep = _forward_names(model)
        window = getattr(model.config, "sliding_window", None)
        self.sliding_window = window if isinstance(window, int) and window > 0 else None
        self.dtype = next(model.parameters()).dtype
        self.packed = _packs(model)

    def score(self, encoded: Sequence[Encoded]) -> list[tuple[float, bool]]:
        """(logprob, is_greedy) per encoded pair, in order."""
        results: list[tuple[float, bool] | None] = [None] * len(encoded)
        for indices, values in self.iter_chunks(encoded):
            for i, value in zip(indices, values, strict=True):
                results[i] = value
        return results  # type: ignore[return-value]

    def iter_chunks(self, encoded: Sequence[Encoded]) -> Iterator[tuple[list[int], list[tuple[float, bool]]]]:
        """(indices, values) for each batch of `batch_size` groups (longest first) as soon as
        it is scored; every continuation of a context is in its context's batch. A group is
        one distinct context; in the packed computation, every context that shares all but
        its last token (so that a tokenisation that ends each answer's context in a token of
        its own, as the Chronologic authors' does, still computes the shared part once)."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for n, item in enumerate(encoded):
            groups.setdefault(item.context[:-1] if self.packed else item.context, []).append(n)
        ordered = sorted(groups.items(), key=lambda kv: -len(kv[0]))
        for start in range(0, len(ordered), self.batch_size):
            chunk = ordered[start : start + self.batch_size]
            longest = max(len(encoded[i].context) + len(encoded[i].continuation) for _, idx in chunk for i in idx)
            if self.sliding_window is not None and longest > self.sliding_window:
                # Padded rows and a window that drops old keys do not mix: score these plainly.
                flat = [i for _, idx in chunk for i in idx]
                yield flat, score_naive(self.model, [encoded[i] for i in flat], batch_size=self.batch_size)
            else:
                score = self._score_packed if self.packed else self._score_chunk
                pairs = score(chunk, encoded)
                yield [i for i, _ in pairs], [value for _, value in pairs]

    def _score_packed(self, chunk, encoded):
        """The chunk's groups packed into passes of at most `token_budget` tokens (a group
        longer than that alone). A group's block: the shared prefix (every context token but
        the last), then each distinct last context token, each followed by its
        continuations but their last token. A 4D mask lets a token see the prefix, its own
        context's last token and its own continuation only; position ids restart where each
        context or continuation begins. The output layer runs on the scored rows only (a
        context's last token, read once for all of its continuations, and the
        continuations' own tokens)."""
        blocks = []  # (tokens, positions, tails, answers, scored: [(request index, rows, targets)])
        for prefix, idx in chunk:
            n = len(prefix)
            tokens, positions = list(prefix), list(range(n))
            tails, answers = [-1] * n, [-1] * n
            tail_rows: dict[int, tuple[int, int]] = {}  # last context token -> (tail id, row)
            scored = []
            for a, i in enumerate(idx):
                last, cont = encoded[i].context[-1], encoded[i].continuation
                if last not in tail_rows:
                    tail_rows[last] = (len(tail_rows), len(tokens))
                    tokens.append(last)
                    positions.append(n)
                    tails.append(tail_rows[last][0])
                    answers.append(-1)
                tail, row = tail_rows[last]
                start = len(tokens)
                tokens += cont[:-1]
                positions += range(n + 1, n + len(cont))
                tails += [tail] * (len(cont) - 1)
                answers += [a] * (len(cont) - 1)
                scored.append((i, [row, *range(start, start + len(cont) - 1)], cont))
            blocks.append((tokens, positions, tails, answers, scored))
        out = []
        start = 0
        while start < len(blocks):
            end, width = start, 0
            while end < len(blocks) and (end == start or width + len(blocks[end][0]) <= self.token_budget):
                width += len(blocks[end][0])
                end += 1
            out += self._packed_pass(blocks[start:end], width)
            start = end
        return out

    def _packed_pass(self, blocks, width):
        import torch

        ids, positions, group, tail, answer = [], [], [], [], []
        rows, targets, owners = [], [], []
        offset = 0
        for g, (tokens, block_positions, tails, answers, scored) in enumerate(blocks):
            ids += tokens
            positions += block_positions
            group += [g] * len(tokens)
            tail += tails
            answer += answers
            for i, block_rows, cont in scored:
                rows += [offset + r for r in block_rows]
                targets += cont
                owners.append((i, len(cont)))
            offset += len(tokens)
        group_t, tail_t, answer_t = torch.tensor(group), torch.tensor(tail), torch.tensor(answer)
        # row r sees column c: same group, c <= r, and c is the shared prefix, or r's own
        # context's last token, or a token of r's own continuation
        allowed = (group_t[:, None] == group_t[None, :]) & torch.ones((width, width), dtype=torch.bool).tril()
        same_tail = tail_t[:, None] == tail_t[None, :]
        allowed &= (tail_t[None, :] == -1) | (same_tail & ((answer_t[None, :] == -1) | (answer_t[:, None] == answer_t[None, :])))
        mask = torch.zeros((1, 1, width, width), dtype=self.dtype)
        mask.masked_fill_(~allowed, torch.finfo(self.dtype).min)
        device = self.device
        with torch.inference_mode():
            logits = self.model(
                input_ids=torch.tensor([ids], device=device),
                position_ids=torch.tensor([positions], device=device),
                attention_mask=mask.to(device),
                use_cache=False,
                logits_to_keep=torch.tensor(rows, device=device),
            ).logits[0]
        lengths = [n for _, n in owners]
        starts = [0]
        for n in lengths[:-1]:
            starts.append(starts[-1] + n)
        scored = _score_flat(logits, torch.tensor(targets, device=device), starts, lengths)
        return [(i, value) for (i, _), value in zip(owners, scored, strict=True)]

    def _score_chunk(self, chunk, encoded):
        import torch

        model, device = self.model, self.device
        # Stage 1: every context but its last token, once, for the groups that have one.
        prefixed = [g for g, (ctx, _) in enumerate(chunk) if len(ctx) > 1]
        cache = None
        prefix_len = 0
        prefix_mask = None
        row_of_group: dict[int, int] = {}
        if prefixed:
            prefix_len = max(len(chunk[g][0]) - 1 for g in prefixed)
            ids = torch.zeros((len(prefixed), prefix_len), dtype=torch.long)
            prefix_mask = torch.zeros((len(prefixed), prefix_len), dtype=torch.long)
            for row, g in enumerate(prefixed):
                ctx = chunk[g][0][:-1]
                ids[row, : len(ctx)] = torch.tensor(ctx)
                prefix_mask[row, : len(ctx)] = 1
                row_of_group[g] = row
            ids, prefix_mask = ids.to(device), prefix_mask.to(device)
            kwargs = {"attention_mask": prefix_mask, "use_cache": True}
            if self.has_logits_to_keep:
                kwargs["logits_to_keep"] = 1
            with torch.inference_mode():
                cache = _output_cache(model(input_ids=ids, **kwargs))
        # Stage 2: [last context token] + continuation[:-1] on top of the cached context.
        rows = [(g, i) for g, (_, idx) in enumerate(chunk) for i in idx]
        rows.sort(key=lambda gi: -len(encoded[gi[1]].continuation))
        out = []
        start = 0
        while start < len(rows):
            # Rows sorted longest first; a pass takes rows of similar length (at most
            # PAD_SHARE of padding each) within the token budget (rows x width logits).
            width = len(encoded[rows[start][1]].continuation)
            limit = max(1, self.token_budget // max(1, width))
            end = start + 1
            while (
                end < len(rows)
                and end - start < limit
                and len(encoded[rows[end][1]].continuation) >= (1 - PAD_SHARE) * width
            ):
                end += 1
            batch = rows[start:end]
            start = end
            out += self._continuations(chunk, encoded, batch, width, cache, prefix_len, prefix_mask, row_of_group)
        return out

    def _continuations(self, chunk, encoded, batch, width, cache, prefix_len, prefix_mask, row_of_group):
        import torch

        device = self.device
        n = len(batch)
        ids = torch.zeros((n, width), dtype=torch.long)
        targets = torch.zeros((n, width), dtype=torch.long)
        mask = torch.zeros((n, prefix_len + width), dtype=torch.long)
        positions = torch.zeros((n, width), dtype=torch.long)
        select = torch.zeros(n, dtype=torch.long)
        lengths = []
        for r, (g, i) in enumerate(batch):
            ctx, cont = chunk[g][0], encoded[i].continuation
            seq = (ctx[-1], *cont[:-1])
            ids[r, : len(seq)] = torch.tensor(seq)
            targets[r, : len(cont)] = torch.tensor(cont)
            if g in row_of_group:
                select[r] = row_of_group[g]
                mask[r, :prefix_len] = prefix_mask[row_of_group[g]].cpu()
            # rows without a cached prefix attend to none of the cache (row 0 stands in, masked out)
            mask[r, prefix_len : prefix_len + len(seq)] = 1
            positions[r] = torch.arange(len(ctx) - 1, len(ctx) - 1 + width)
            lengths.append(len(cont))
        kwargs: dict[str, Any] = {
            "attention_mask": mask.to(device),
            "position_ids": positions.to(device),
            "use_cache": cache is not None,
        }
        if cache is not None:
            kwargs[self.cache_arg] = _select_cache(cache, select.to(device))
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(device), **kwargs).logits
        scored = _score_rows(logits, targets.to(device), lengths)
        return [(i, value) for (_, i), value in zip(batch, scored, strict=True)]


def score_naive(model: Any, encoded: Sequence[Encoded], *, batch_size: int = 8) -> list[tuple[float, bool]]:
    """The full-sequence computation (what lm-evaluation-harness does): each pair's
    context + continuation[:-1] in one right-padded batch row."""
    results: list[tuple[float, bool] | None] = [None] * len(encoded)
    for indices, values in iter_naive(model, encoded, batch_size=batch_size):
        for i, value in zip(indices, values, strict=True):
            results[i] = value
    return results  # type: ignore[return-value]


def iter_naive(model: Any, encoded: Sequence[Encoded], *, batch_size: int = 8) -> Iterator[tuple[list[int], list]]:
    """score_naive, one batch of `batch_size` pairs (longest first) at a time."""
    import torch

    device = next(model.parameters()).device
    order = sorted(range(len(encoded)), key=lambda i: -(len(encoded[i].context) + len(encoded[i].continuation)))
    for start in range(0, len(order), max(1, batch_size)):
        batch = order[start : start + batch_size]
        width = max(len(encoded[i].context) + len(encoded[i].continuation) - 1 for i in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, i in enumerate(batch):
            seq = (*encoded[i].context, *encoded[i].continuation)[:-1]
            ids[r, : len(seq)] = torch.tensor(seq)
            mask[r, : len(seq)] = 1
        with torch.inference_mode():
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        cont_width = max(len(encoded[i].continuation) for i in batch)
        picked = torch.zeros((len(batch), cont_width, logits.shape[-1]), dtype=logits.dtype, device=logits.device)
        targets = torch.zeros((len(batch), cont_width), dtype=torch.long)
        for r, i in enumerate(batch):
            ctx_len, cont = len(encoded[i].context), encoded[i].continuation
            picked[r, : len(cont)] = logits[r, ctx_len - 1 : ctx_len - 1 + len(cont)]
            targets[r, : len(cont)] = torch.tensor(cont)
        yield batch, _score_rows(picked, targets.to(logits.device), [len(encoded[i].continuation) for i in batch])


def loglikelihood(
    model: Any,
    tokenizer: Any,
    requests: Sequence[LoglikelihoodRequest],
    **options: Any,
) -> list[LoglikelihoodResult]:
    """Score (context, continuation) requests on a transformers causal LM; the results in
    request order (options: those of iter_loglikelihood)."""
    requests = list(requests)
    out: list[LoglikelihoodResult | None] = [None] * len(requests)
    for indices, results in iter_loglikelihood(model, tokenizer, requests, **options):
        for i, result in zip(indices, results, strict=True):
            out[i] = result
    return out  # type: ignore[return-value]


def iter_loglikelihood(
    model: Any,
    tokenizer: Any,
    requests: Sequence[LoglikelihoodRequest],
    *,
    method: str = "prefix",
    batch_size: int = 8,
    max_length: int | None = None,
    add_bos_token: bool | None = None,
    token_budget: int = 1024,
) -> Iterator[tuple[list[int], list[LoglikelihoodResult]]]:
    """Score requests and yield (request indices, results) as each batch completes (a
    batch of `batch_size` distinct contexts with all their continuations for method
    "prefix", which shares each context's computation among its continuations; a batch
    of `batch_size` pairs for "naive", which runs every pair in full, as
    lm-evaluation-harness does). A caller that stores every batch it receives loses at
    most the batch in flight. A "context-length" request whose continuation is left with no
    token of its own comes back first, as 0.0 over 0 tokens."""
    if method not in METHODS:
        raise EvalError(f"unknown likelihood method {method!r} (known: {', '.join(METHODS)})", field="loglikelihood_method")
    requests = list(requests)
    if not requests:
        return
    window = max_length or model_max_length(model, tokenizer)
    encoded = encode_requests(tokenizer, requests, max_length=window, add_bos_token=add_bos_token)
    empty = [i for i, item in enumerate(encoded) if not item.continuation]
    if empty:
        yield empty, [LoglikelihoodResult(logprob=0.0, n_tokens=0, is_greedy=False) for _ in empty]
    scored = [i for i, item in enumerate(encoded) if item.continuation]
    subset = [encoded[i] for i in scored]
    if method == "prefix":
        chunks = PrefixSharedScorer(model, batch_size=batch_size, token_budget=token_budget).iter_chunks(subset)
    else:
        chunks = iter_naive(model, subset, batch_size=batch_size)
    for local, values in chunks:
        indices = [scored[k] for k in local]
        results = []
        for i, (logprob, greedy) in zip(indices, values, strict=True):
            if not math.isfinite(logprob):
                raise EvalError(f"non-finite log-likelihood ({logprob}); is the model's dtype too narrow?")
            item = encoded[i]
            results.append(LoglikelihoodResult(logprob=logprob, n_tokens=len(item.continuation), is_greedy=greedy,
                                               truncated=item.truncated))
        yield list(indices), results
