"""The free-generation modes through the `histbench` command, as a user runs them."""

from __future__ import annotations

import json

from histbench.cli import main


def test_generate_anchors_judge_report_from_the_command_line(sample_build, chat_server, scripted_judge, tmp_path, capsys):
    candidate = chat_server(lambda m: "[q=9.5] An answer the judge accepts.", model="cli-candidate")
    judge = chat_server(scripted_judge, model="cli-judge")
    run = tmp_path / "runs" / "cand"
    anchors = tmp_path / "anchors"
    common = ["--dataset", str(sample_build)]
    assert main(["eval", "chronologic", "--mode", "generate", *common, "--model", candidate.spec(),
                 "--model-option", "max_retries=0", "--out", str(run)]) == 0
    assert "24 answers" in capsys.readouterr().out
    assert main(["eval", "chronologic", "--mode", "judge", *common, "--run", str(run), "--judge", judge.spec()]) == 2
    assert "--anchors" in capsys.readouterr().err
    assert main(["eval", "chronologic", "--mode", "anchors", *common, "--judge", judge.spec(),
                 "--judge-option", "max_retries=0", "--bt-draws", "800", "--out", str(anchors)]) == 0
    out = capsys.readouterr().out
    assert "judge reliability: pooled alpha 0.0" in out and "calibration (fitted): p_fit = sigmoid(2.1972" in out
    assert "Bradley-Terry prior sd 1.0" in out
    assert main(["eval", "chronologic", "--mode", "judge", *common, "--run", str(run), "--judge", judge.spec(),
                 "--judge-option", "max_retries=0", "--anchors", str(anchors), "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    assert "Table 4 layout" in out and "cli-candidate" in out
    # generate, anchors and judge each leave their folder in the run format (issue 43)
    from histbench.core.runfolder import RunFolder

    assert RunFolder.open(anchors).metrics[0]["id"] == "reliability/alpha"
    judged = RunFolder.open(run)
    assert any(m["id"].startswith("substantive/judged-") for m in judged.metrics)
    assert any(name.startswith("judged-") for name in judged.run["files"]["extras"])
    # another partial-credit judge than the anchors' is refused
    other = chat_server(scripted_judge, model="other-judge")
    assert main(["eval", "chronologic", "--mode", "judge", *common, "--run", str(run), "--judge", judge.spec(),
                 "--partial-judge", other.spec(), "--anchors", str(anchors)]) == 2
    assert "use the same judge" in capsys.readouterr().err
    report_dir = tmp_path / "report"
    assert main(["report", "chronologic", str(run), "--out", str(report_dir)]) == 0
    out = capsys.readouterr().out
    assert "Free generation (Table 4, Table 7)" in out
    ledger = (report_dir / "generation_ledger.csv").read_text().splitlines()
    assert len(ledger) == 25 and "delta" in ledger[0] and "auto_verdict" in ledger[0]
    assert main(["report", "chronologic", str(run), "--published", "--out", str(tmp_path / "published")]) == 0
    assert "GPT-6-Astra (published)" in capsys.readouterr().out
    data = json.loads((report_dir / "report.json").read_text())
    scores = data["Free generation (Table 4, Table 7)"]
    assert set(next(iter(scores.values()))["substantive"]["groups"]) == {"cloze", "generation", "knowledge"}
    # a folder holding another mode's run is not overwritten by generation
    # (chronologic.json, or results.json in a folder written before the run format)
    for name in ("chronologic.json", "results.json"):
        (tmp_path / name).mkdir()
        (tmp_path / name / name).write_text(json.dumps({"benchmark": "chronologic", "mode": "likelihood"}))
        assert main(["eval", "chronologic", "--mode", "generate", *common, "--model", candidate.spec(),
                     "--out", str(tmp_path / name)]) == 2
        assert "its own --out folder" in capsys.readouterr().err
