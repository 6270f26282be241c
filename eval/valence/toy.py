"""Two toy masked LMs for `make demo`: one trained on an early, one on a modern toy corpus.

No BERT-style masked LM ships as an offline Python package, and an
untrained model's predictions are random: its beta and delta say nothing. The demo
therefore trains two tiny BERTs (2 layers, 64 dimensions, a WordPiece vocabulary
trained on the same lines) for a few seconds each, with a fixed seed, on the two toy
corpora bundled in sources/valence/sample/: `toy_corpus_early.txt` (imitation Early
Modern English written for histbench) and `toy_corpus_modern.txt` (present-day
English). They are a known-answer check of the method: the early toy should show a
lower bias than the modern toy, most clearly on the EME sentences. They are not real
models and their numbers are not results about any real model.

Training is deterministic for a given machine (seeded initialisation and masking); on
another CPU the last digits of the probabilities, hence the order of near-tied fillers,
may differ. The bundled annotations cover the top 30 fillers of both toys on the machine
they were written on, and the demo scores what is annotated and reports any unannotated
mass instead of failing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

TOY_VERSION = 2
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def train_tokenizer(lines: list[str], *, lowercase: bool = True):
    """A BERT-style WordPiece tokenizer ([CLS] ... [SEP], [MASK]) whose vocabulary is every
    word of `lines` plus every character alone and as a '##' continuation piece.

    The vocabulary is built here, in sorted order, rather than by the `tokenizers`
    WordPiece trainer: the trainer orders its alphabet differently from run to run, which
    would change the token ids, hence the seeded model, on every build.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words = sorted({w for line in lines for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line))})
    chars = sorted({c for w in words for c in w})
    entries = SPECIALS + chars + [f"##{c}" for c in chars] + [w for w in words if w not in set(chars)]
    vocab = {token: i for i, token in enumerate(entries)}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", do_lower_case=lowercase,
    )


def train_masked_lm(path: Path, tokenizer, lines: list[str], *, seed: int = 0, steps: int = 200,
                    hidden: int = 64, mask_probability: float = 0.2, learning_rate: float = 3e-3) -> Path:
    """Build a tiny BertForMaskedLM from a config, train it on `lines` (steps=0: untrained), save it."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    # One thread: the model is tiny, and on a busy machine several OpenMP threads spin-wait
    # each other (seen here: 25x slower with 2 threads on 2 shared cores).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _train(model, tokenizer, lines, seed=seed, steps=steps, mask_probability=mask_probability, learning_rate=learning_rate)
    finally:
        torch.set_num_threads(threads)
    model.eval()
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _train(model, tokenizer, lines: list[str], *, seed: int, steps: int, mask_probability: float, learning_rate: float) -> None:
    import torch

    if steps > 0:
        encoded = tokenizer(lines, padding=True, return_tensors="pt")
        special = torch.zeros_like(encoded["input_ids"], dtype=torch.bool)
        for token_id in tokenizer.all_special_ids:
            special |= encoded["input_ids"] == token_id
        generator = torch.Generator().manual_seed(seed)
        optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
        model.train()
        for _ in range(steps):
            ids = encoded["input_ids"].clone()
            chosen = (torch.rand(ids.shape, generator=generator) < mask_probability) & ~special
            labels = torch.where(chosen, ids, torch.full_like(ids, -100))
            ids[chosen] = tokenizer.mask_token_id
            loss = model(input_ids=ids, attention_mask=encoded["attention_mask"], labels=labels).loss
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()


def build_demo_models(cache_dir: Path, sample_dir: Path, *, seed: int = 0, steps: int = 200) -> dict[str, Path]:
    """{"toy-early": path, "toy-modern": path}, trained once and cached by content hash."""
    early = _lines(Path(sample_dir) / "toy_corpus_early.txt")
    modern = _lines(Path(sample_dir) / "toy_corpus_modern.txt")
    from histbench.builders.valence.masks import mask_regex
    from histbench.core.sheets import read_table

    regex = mask_regex()
    _, rows = read_table(Path(sample_dir) / "sentences.csv")
    sentences = [regex.sub(" ", row.get("sentence", "text") or "") for row in rows]
    digest = hashlib.sha256(
        json.dumps({"v": TOY_VERSION, "early": early, "modern": modern, "sentences": sentences, "seed": seed, "steps": steps}).encode()
    ).hexdigest()[:16]
    paths = {name: Path(cache_dir) / f"{name}-{digest}" for name in ("toy-early", "toy-modern")}
    if all((p / "config.json").is_file() for p in paths.values()):
        return paths
    # one shared vocabulary (both corpora and the test sentences), so that both toys can
    # predict every word of either variety as one token
    vocab_lines = early + modern + sentences
    tokenizer = train_tokenizer(vocab_lines)
    train_masked_lm(paths["toy-early"], tokenizer, early, seed=seed, steps=steps)
    train_masked_lm(paths["toy-modern"], tokenizer, modern, seed=seed, steps=steps)
    return paths
