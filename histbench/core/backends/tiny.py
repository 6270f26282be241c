"""Tiny, randomly initialised models built from a config, for tests of the plumbing.

No Hub access is needed: a byte-level BPE tokenizer (causal) is trained with `tokenizers`
on a few lines, a WordPiece vocabulary (masked) is written out from the same lines, a
small llama-style causal LM or BERT masked LM is built from its config with a fixed seed,
and both are saved with `save_pretrained`.
The predictions mean nothing; the shapes, tokenisation, padding, caching, chat template
and masking behave like those of a real model of the same family.
"""

from __future__ import annotations

from pathlib import Path

TRAINING_LINES = [
    "The capital of France is Paris.",
    "In 1851 the Great Exhibition opened in London's Hyde Park.",
    "Steam engines drove the mills of Manchester and the looms of Lancashire.",
    "She wrote to her brother that the harvest had failed again this year.",
    "The railway reached the village in the spring of 1847.",
    "Il conte scrisse una lettera al suo amico di Firenze.",
    "What did the newspaper say about the election of 1880?",
    "Answer: yes. Answer: no. The answer is A, B, C or D.",
    '{"same": 0.7, "different": 0.2, "ambiguous": 0.1}',
    "Percentages: 10, 20, 30, 40 per cent of the people agreed.",
]

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_causal_lm(path: str | Path, *, seed: int = 0, vocab_size: int = 320, max_positions: int = 256) -> Path:
    """A 2-layer llama-style causal LM with grouped-query attention and a chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = Path(path)
    specials = ["<|endoftext|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(TRAINING_LINES * 3, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|end|>", pad_token="<|pad|>", unk_token=None
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # a wider spread of logits than the default init: less flat distributions
        model.lm_head.weight.mul_(8.0)
    model.eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_masked_lm(path: str | Path, *, seed: int = 0) -> Path:
    """A 2-layer BERT masked LM with a WordPiece vocabulary ([CLS] ... [SEP], [MASK]).

    The vocabulary is written out rather than trained: the specials, every whole word and
    character of the training lines, and every character as a `##` continuation, sorted.
    (The `tokenizers` WordPiece trainer breaks ties in a different order in each process,
    so a trained vocabulary, and with it the seeded weights, would differ between runs.)
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    path = Path(path)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words = {word for line in TRAINING_LINES
             for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line))}
    characters = {c for word in words for c in word}
    vocabulary = [*specials, *sorted(words | characters), *sorted("##" + c for c in characters)]
    tok = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(vocabulary)}, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"
    )
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    model.eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
