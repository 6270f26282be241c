"""`histbench eval italian|chronoculture --mode likelihood`: one way to score multiple-choice
prompts by likelihood, refused where it cannot apply, never mixed with a generate run."""

from __future__ import annotations

import pytest

from histbench.cli import main


def test_a_baseline_or_a_chat_api_without_its_tokenizer_cannot_be_scored_by_likelihood(sample_builds, chat_server,
                                                                                         capsys):
    italian, chronoculture = str(sample_builds["italian"]), str(sample_builds["chronoculture"])
    assert main(["eval", "italian", "--mode", "likelihood", "--baseline", "random", "--dataset", italian]) == 2
    assert "a baseline answers without one" in capsys.readouterr().err
    assert main(["eval", "chronoculture", "--mode", "likelihood", "--baseline", "uniform", "--dataset", chronoculture]) == 2
    assert "a baseline answers without one" in capsys.readouterr().err
    server = chat_server(lambda messages: '{"answer": "A"}')
    assert main(["eval", "italian", "--mode", "likelihood", "--model", server.spec(), "--dataset", italian]) == 2
    # the server applies the model's chat template: scoring its prompts needs that template here
    err = capsys.readouterr().err
    assert "chat template" in err and "--model-option tokenizer=PATH_OR_ID" in err and len(err.strip().splitlines()) == 1
    assert server.requests == 0


@pytest.mark.parametrize("benchmark, baseline", [("italian", "first"), ("chronoculture", "uniform")])
def test_a_generate_run_folder_is_not_overwritten_by_a_likelihood_run(sample_builds, tiny_causal_lm, tmp_path, capsys,
                                                                       benchmark, baseline):
    out = tmp_path / "run"
    dataset = str(sample_builds[benchmark])
    assert main(["eval", benchmark, "--baseline", baseline, "--dataset", dataset, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert main(["eval", benchmark, "--mode", "likelihood", "--model", f"hf:{tiny_causal_lm}", "--dataset", dataset,
                 "--out", str(out), "--limit", "1"]) == 2
    assert "holds a --mode generate run" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_italian_likelihood_run_skips_what_has_no_multiple_choice_form(sample_builds, tiny_causal_lm, tmp_path, capsys):
    import json

    out = tmp_path / "lik"
    assert main(["eval", "italian", "--mode", "likelihood", "--model", f"hf:{tiny_causal_lm}", "--dataset",
                 str(sample_builds["italian"]), "--out", str(out), "--limit", "2", "--tasks", "intertext", "ner_bellini"]) == 0
    results = json.loads((out / "italian.json").read_text())
    assert results["mode"] == "likelihood" and list(results["tasks"]) == ["intertext"]
    assert results["not_scored"] == {"ner_bellini": "no multiple-choice form (entities are free text)"}
    intertext = results["tasks"]["intertext"]
    assert intertext["n"] == 2 and intertext["parse_failures"] == 0 and 0 <= intertext["accuracy_norm"] <= 1
    items = [json.loads(line) for line in (out / "italian-items" / "intertext.jsonl").read_text().splitlines()]
    assert all(len(item["logliks"]) == 2 and item["predicted"] == item["choice"] for item in items)
