"""The real fill-mask path: tiny BERT/RoBERTa masked LMs built from configs, through the
evaluator engine's hf backend and the run store, driven by the `histbench` command."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from histbench import cli

pytest.importorskip("torch")

LINES_LOWER = ["why wilt thou be offended by that ?", "fare thee well , sir .", "can you help me with this ?",
               "the night was cold .", "thou art a knave .", "you are my friend ."]


@pytest.fixture(scope="module")
def toy_pair(tmp_path_factory):
    """An uncased and a cased tiny BERT, each trained briefly so that the slot in
    'Why wilt [MASK] be offended by that?' gets 'thou' (uncased) and 'Thou' (cased) on top."""
    from histbench.eval.valence.toy import train_masked_lm, train_tokenizer

    root = tmp_path_factory.mktemp("toy-pair")
    cased_lines = [line.replace("thou", "Thou") for line in LINES_LOWER]
    uncased = train_masked_lm(root / "uncased", train_tokenizer(LINES_LOWER), LINES_LOWER * 4, steps=200)
    cased = train_masked_lm(root / "cased", train_tokenizer(cased_lines, lowercase=False), cased_lines * 4, steps=200)
    return uncased, cased


@pytest.fixture
def built(sentences_csv, build_valence):
    return build_valence(sentences_csv)


def _eval(built, out, *models, top_k=5):
    args = ["eval", "valence", "--dataset", str(built), "--out", str(out), "--top-k", str(top_k)]
    for m in models:
        args += ["--model", m]
    return cli.main(args)


def _predictions(run):
    from histbench.eval.valence.runfolder import RunFolder

    return RunFolder.open(run).predictions()


def test_eval_runs_fill_mask_and_resumes(tiny_masked_lm, built, tmp_path, capsys):
    run = tmp_path / "run"
    assert _eval(built, run, f"tiny=hf:{tiny_masked_lm}") == 0
    out = capsys.readouterr().out
    assert "tiny: 4 sentences (4 asked, 0 reused, 0 failed)" in out
    assert "next: histbench valence export-vocabulary" in out
    rows = _predictions(run)
    assert len(rows) == 4 * 5 and {r["model"] for r in rows} == {"tiny"}
    for sid in ("s1", "s2", "s3", "s4"):
        mine = [r for r in rows if r["sentence_id"] == sid]
        assert [r["rank"] for r in mine] == [1, 2, 3, 4, 5]
        probabilities = [r["probability"] for r in mine]
        assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1 + 1e-6
    manifest = json.loads((run / "valence-run.json").read_text())
    assert manifest["top_k"] == 5 and manifest["models"][0]["spec"] == f"hf:{tiny_masked_lm}"
    records = (run / "models" / "tiny" / "records.jsonl").read_text().splitlines()
    assert len(records) == 4 and "[MASK]" in json.loads(records[1])["request"]["text"]
    # a second run asks nothing again
    assert _eval(built, run, f"tiny=hf:{tiny_masked_lm}") == 0
    assert "tiny: 4 sentences (0 asked, 4 reused, 0 failed)" in capsys.readouterr().out
    # settings of a run folder are fixed
    assert _eval(built, run, f"tiny=hf:{tiny_masked_lm}", top_k=3) == 2
    assert "uses top_k = 5, not 3 (--top-k)" in capsys.readouterr().err


def test_word_pieces_are_reported_and_never_exported(built, tmp_path, capsys):
    """An untrained toy BERT (seeded) spreads its top-20 over words and '##' pieces."""
    from histbench.eval.valence.toy import train_masked_lm, train_tokenizer

    model = train_masked_lm(tmp_path / "untrained", train_tokenizer(LINES_LOWER), LINES_LOWER, steps=0)
    run = tmp_path / "run"
    assert _eval(built, run, f"hf:{model}", top_k=20) == 0
    rows = _predictions(run)
    pieces = [r for r in rows if r["kind"] == "subword"]
    assert pieces and all(r["token"].startswith("##") and r["word"] == r["token"][2:] for r in pieces)
    assert all(not r["token"].startswith("##") for r in rows if r["kind"] == "word")
    capsys.readouterr()
    assert cli.main(["valence", "export-vocabulary", str(run), "--out", str(tmp_path / "sheet.csv")]) == 0
    printed = capsys.readouterr().out
    assert f"{len(pieces)} subword" in printed
    with (tmp_path / "sheet.csv").open(encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    assert not any(r["token"].startswith("##") for r in exported)


def test_cased_and_uncased_models_share_annotations(toy_pair, built, tmp_path, capsys):
    uncased, cased = toy_pair
    run = tmp_path / "run"
    assert _eval(built, run, f"uncased=hf:{uncased}", f"cased=hf:{cased}", top_k=3) == 0
    rows = _predictions(run)
    top = {(r["model"], r["sentence_id"]): r["word"] for r in rows if r["rank"] == 1}
    assert top[("uncased", "s1")] == "thou" and top[("cased", "s1")] == "Thou"
    sheet = tmp_path / "sheet.csv"
    assert cli.main(["valence", "export-vocabulary", str(run), "--out", str(sheet)]) == 0
    with sheet.open(encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    s1 = [r["token"] for r in exported if r["sentence_id"] == "s1"]
    assert [t.casefold() for t in s1].count("thou") == 1     # one row for 'thou' and 'Thou'
    for r in exported:
        r["sigma"] = "-1" if r["token"].casefold() in ("thou", "thee", "knave") else "0"
        r["annotator"] = "ann"
        if r["token"] in (",", ".", "?"):
            r["sigma"], r["skip"] = "", "yes"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(exported[0]))
        writer.writeheader()
        writer.writerows(exported)
    assert cli.main(["valence", "import-annotations", str(run), str(sheet)]) == 0
    assert cli.main(["report", "valence", str(run), "--bootstrap", "50", "--out", str(run / "report")]) == 0
    with (run / "report" / "candidates.csv").open(encoding="utf-8") as handle:
        cands = {(r["model"], r["sentence_id"], r["rank"]): r for r in csv.DictReader(handle)}
    assert cands[("cased", "s1", "1")]["sigma"] == "-1.0" and cands[("uncased", "s1", "1")]["sigma"] == "-1.0"
    # vocabulary coverage: the uncased model lower-cases 'Thou' into its own entry; the cased
    # model has no entry 'thou' (only 'Thou'), so it splits the word the uncased model predicts
    report = json.loads((run / "report" / "report.json").read_text())
    coverage = {r["model"]: r for r in report["Temporal valence of masked LMs"]["vocabulary_coverage"]}
    assert coverage["uncased"]["checked"] and "thou" not in coverage["uncased"]["early_split"]
    assert "thou" in coverage["cased"]["early_split"] and "Thou" not in coverage["cased"]["early_split"]
    assert "early-marked words it splits" in (run / "report" / "index.md").read_text()


def test_roberta_style_bpe_model_with_its_own_mask(built, tmp_path):
    """A byte-level BPE masked LM (mask token '<mask>', word starts marked 'Ġ'): the
    canonical [MASK] is rewritten by the backend; pieces without 'Ġ' are sub-words."""
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(LINES_LOWER * 3, trainer=trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                        cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    torch.manual_seed(0)
    model = RobertaForMaskedLM(RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=64,
                                             pad_token_id=tokenizer.pad_token_id))
    path = tmp_path / "roberta"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    run = tmp_path / "run"
    assert _eval(built, run, f"hf:{path}", top_k=100) == 0
    rows = _predictions(run)
    assert len(rows) == 4 * 100
    specials = set(tokenizer.all_special_tokens)
    for r in rows:   # every mask follows a space: a whole word must carry the word-start marker
        if r["token"] in specials or r["token"] == "\u0120":   # a bare marker spells no word
            assert r["kind"] == "special"
        elif r["token"].startswith("\u0120"):
            assert r["kind"] == "word" and r["word"] == r["token"][1:]
        else:
            assert r["kind"] == "subword"
    assert {r["kind"] for r in rows} >= {"word", "subword"}


def test_a_causal_model_is_refused_with_a_clear_error(tiny_causal_lm, built, tmp_path, capsys):
    assert _eval(built, tmp_path / "run", f"hf:{tiny_causal_lm}") == 2
    assert "cannot fill masks" in capsys.readouterr().err


def test_model_labels(tmp_path):
    from histbench.core.errors import UsageError
    from histbench.eval.valence.run import parse_model_specs

    specs = parse_model_specs(["hf:bert-base-uncased", "macberth=hf:emanjavacas/MacBERTh", f"hf:{tmp_path}"])
    assert [s.label for s in specs] == ["bert-base-uncased", "macberth", Path(tmp_path).name]
    assert specs[1].spec == "hf:emanjavacas/MacBERTh"
    assert parse_model_specs(["hf:org/model@v1"])[0].label == "model"
    with pytest.raises(UsageError, match="LABEL=SPEC"):
        parse_model_specs(["hf:a/bert", "hf:b/bert"])
    with pytest.raises(UsageError, match="at least one --model"):
        parse_model_specs([])
