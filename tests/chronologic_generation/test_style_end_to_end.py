"""Style judges end to end on tiny encoders (paper 5.2.1, A.1): grouped split, training both
judges on synthetic dated text, conformal scoring of a generation run against a parquet
reference corpus, exclusions of section 8. The encoders are built from a config with a
vocabulary trained on the synthetic lines (no Hub): this checks the plumbing and that a
strong synthetic date signal is learnt, not the quality of a real judge."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # trains two tiny encoders (about a minute on 2 shared CPU cores)

from histbench.core.errors import EvalError  # noqa: E402
from histbench.eval.chronologic.style import dating  # noqa: E402

FILLER = "the and of a in to was it that with for as by on at from this which".split()
DECADES = list(range(1800, 1960, 10))


def marker(decade: int) -> list[str]:
    return [f"w{decade}a", f"w{decade}b"]


def dated_passage(rng, decade: int, words: int) -> str:
    body = list(rng.choice(FILLER, size=max(words - 3, 1))) + marker(decade) + [str(rng.choice(marker(decade)))]
    rng.shuffle(body)
    return "The " + " ".join(body) + "."


def build_tiny_encoder(path: Path, lines: list[str]) -> Path:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import DebertaV2Config, DebertaV2Model, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(lines, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")
    config = DebertaV2Config(vocab_size=len(fast), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64, max_position_embeddings=256, pad_token_id=fast.pad_token_id)
    torch.manual_seed(0)
    DebertaV2Model(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def style_world(tmp_path_factory):
    """Synthetic corpora, a tiny base encoder, and both judges trained on them."""
    from histbench.eval.chronologic.style.train import train_judge

    root = tmp_path_factory.mktemp("style")
    rng = np.random.default_rng(0)
    rows = []
    for decade in DECADES:
        for author in range(3):
            for n in range(5):
                rows.append({"text": dated_passage(rng, decade, int(rng.integers(6, 30))), "date": decade + int(rng.integers(0, 10)),
                             "author": f"author-{decade}-{author}", "volume": f"vol-{decade}-{author}-{n % 2}"})
    rows.append({"text": "fragment without end", "date": 1850, "author": "x", "volume": "x"})  # not a sentence
    rows.append({"text": "The year is wrong.", "date": 1500, "author": "y", "volume": "y"})  # outside the bins
    dated = pd.DataFrame(rows)
    dated.to_parquet(root / "dated.parquet")
    auth_rows = []
    for i in range(160):
        decade = int(rng.choice(DECADES))
        authentic = i % 2 == 0
        words = list(rng.choice(FILLER, 12)) + (["quoth", "verily"] if authentic else ["delve", "tapestry"])
        rng.shuffle(words)
        auth_rows.append({"text": "The " + " ".join(words) + ".", "label": int(authentic), "author": f"a{i // 8}",
                          "volume": f"v{i // 4}", "generator": "" if authentic else ("gen-x" if i % 6 == 1 else "gen-y")})
    pd.DataFrame(auth_rows).to_parquet(root / "auth.parquet")
    lines = dated["text"].tolist() + [r["text"] for r in auth_rows]
    base = build_tiny_encoder(root / "base", lines)
    date_model = root / "date-judge"
    date_report = train_judge("date", root / "dated.parquet", date_model, base=str(base), epochs=5, batch_size=16, lr=5e-3,
                              max_length=64, seed=0, device="cpu", eval_batch_size=64)
    auth_model = root / "auth-judge"
    auth_report = train_judge("authenticity", root / "auth.parquet", auth_model, base=str(base), epochs=3, batch_size=16,
                              lr=3e-3, max_length=64, seed=0, device="cpu", holdout_generators=("gen-x",))
    reference = []
    for _ in range(600):
        year = int(rng.integers(1821, 1941))
        words = int(rng.integers(6, 90))
        decade = (year // 10) * 10
        reference.append({"text": dated_passage(rng, decade, words), "date": year})
    pd.DataFrame(reference).to_parquet(root / "reference.parquet")
    return {"root": root, "dated": dated, "date_model": date_model, "auth_model": auth_model,
            "date_report": date_report, "auth_report": auth_report, "reference": root / "reference.parquet"}


def test_training_writes_a_usable_date_predictor(style_world):
    report = style_world["date_report"]
    assert report["corpus"]["excluded"] == {"empty text": 0, "missing or non-integer date": 0, "date outside 1680-2039": 1,
                                            "not a complete sentence": 1}
    assert sum(report["split_sizes"].values()) == len(style_world["dated"]) - 2
    meta = json.loads((style_world["date_model"] / "histbench_style.json").read_text())
    assert meta["kind"] == "date" and meta["sigma_years"] == 15.0 and meta["bins"] == {"start": 1680, "end": 2040, "width": 10}
    from histbench.eval.chronologic.style.encoders import load_judge

    judge = load_judge(style_world["date_model"], "date", device="cpu")
    rng = np.random.default_rng(9)
    texts = [dated_passage(rng, d, 15) for d in (1750, 1850, 1950)]
    probs = judge.predict(texts)
    assert probs.shape == (3, 36) and np.allclose(probs.sum(axis=1), 1)
    # the synthetic decade markers are learnt: the test split's CRPS beats a flat distribution
    test = report["results"]["test"]
    flat = dating.crps(np.full((len(DECADES), 36), 1 / 36), np.array(DECADES) + 5).mean()
    assert test["crps"] < 0.8 * flat
    with pytest.raises(EvalError, match="not 'authenticity'"):
        load_judge(style_world["date_model"], "authenticity")


def test_training_writes_an_authenticity_detector_with_held_out_models(style_world):
    report = style_world["auth_report"]
    assert "heldout_models" in report["results"]
    assert report["results"]["heldout_models"]["n"] > 0
    assert report["results"]["test"]["accuracy"] >= 0.5
    meta = json.loads((style_world["auth_model"] / "histbench_style.json").read_text())
    assert meta["kind"] == "authenticity" and meta["text_normalisation"] == "punctuation-v1"


def test_style_scores_of_a_generation_run(style_world, built, chat_server, tmp_path):
    from histbench.core.backends import load_backend
    from histbench.eval.chronologic import generation as G
    from histbench.eval.chronologic.style.scoring import style_run

    questions = G.load_questions(built)
    rng = np.random.default_rng(1)
    replies = {}
    for q in questions:
        if q.answer_length == "sentence_plus":
            replies[q.question] = dated_passage(rng, (q.source_date // 10) * 10, 20)
        else:
            replies[q.question] = "a short phrase"
    server = chat_server(lambda m: next(r for k, r in replies.items() if k in m[-1]["content"]), model="styled")
    run_dir = tmp_path / "run"
    G.generate(built, load_backend(server.spec(), {"max_retries": 0}), run_dir)
    cache = tmp_path / "cache"
    result = style_run(built, run_dir, style_world["reference"], date_model=style_world["date_model"],
                       authenticity_model=style_world["auth_model"], min_window=5, null_draws=200, n_resamples=200,
                       device="cpu", cache_dir=cache)
    n_sentences = sum(q.answer_length == "sentence_plus" for q in questions)
    skipped = result["counts"]["skipped"]
    # answers under 6 words are scored by neither judge (the authors' min_words)
    assert skipped["date"].get("under 6 words") == len(questions) - n_sentences
    assert skipped["authenticity"].get("under 6 words") == len(questions) - n_sentences
    fidelity = result["scores"]["date_fidelity"]
    placed = fidelity["n"]
    assert 0 < placed <= n_sentences and 0 <= fidelity["estimate"] <= 100
    assert fidelity["low"] <= fidelity["high"] <= 100.0
    assert 0 < fidelity["W0"] < 0.5 and fidelity["null_draws"] == 200
    assert result["scores"]["error_years"]["n"] == placed
    authenticity = result["scores"]["human_authenticity"]
    assert 0 <= authenticity["estimate"] <= 100 and 0 < authenticity["mu0"] < 1
    assert result["reference"]["volumes"].startswith("none")
    answers = {a["question_number"]: a for a in result["answers"]}
    dated_one = next(a for a in answers.values() if a.get("date_percentile") is not None)
    assert 0 <= dated_one["date_percentile"] <= 1 and dated_one["date_window"] >= 5
    assert dated_one["residual"] == pytest.approx(dated_one["predicted_date"] - dated_one["target_date"])
    assert dated_one["corrected_residual"] == pytest.approx(dated_one["residual"] - dated_one["window_mean_residual"])
    assert set(result["reference"]["length_bin_edges"]) == {"date", "authenticity"}
    cached = list(cache.glob("reference-*.parquet"))
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    again = style_run(built, run_dir, style_world["reference"], date_model=style_world["date_model"],
                      authenticity_model=style_world["auth_model"], min_window=5, null_draws=200, n_resamples=200,
                      device="cpu", cache_dir=cache)
    assert cached[0].stat().st_mtime_ns == stamp  # the reference corpus was not scored again
    assert again["scores"]["date_fidelity"]["estimate"] == pytest.approx(fidelity["estimate"])
    # the report picks the style scores up next to the run
    from histbench.eval.chronologic.generation_report import collect, generation_markdown

    text = generation_markdown(collect(run_dir, G.read_generation(run_dir)))
    assert f"{fidelity['estimate']:.1f}" in text
    # the run format (issue 43): the style scores are metrics of the run folder
    from histbench.eval.chronologic import EVALUATOR

    EVALUATOR.finish_run(run_dir)
    folder = EVALUATOR.open_run(run_dir)
    metrics = {m["id"]: m for m in folder.metrics}
    assert metrics["style/date_fidelity"]["estimate"] == again["scores"]["date_fidelity"]["estimate"]
    assert metrics["style/date_fidelity"]["interval"] == [again["scores"]["date_fidelity"]["low"],
                                                          again["scores"]["date_fidelity"]["high"]]
    assert metrics["style/human_authenticity"]["n"] == authenticity["n"]
    assert metrics["style/error_years"]["higher_is_better"] is None
    assert any(name.startswith("style-") for name in folder.run["files"]["extras"])
