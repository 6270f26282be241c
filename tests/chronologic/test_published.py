"""The authors' published Table 3 (issue 13, point 8): the bundled copy of their
leaderboard carries the paper's Table 3 figures unchanged, and their own leaderboard.md /
leaderboard.csv files are read as they publish them."""

from __future__ import annotations

import pytest

from histbench.core.errors import EvalError
from histbench.eval.chronologic.published_table3 import load_published_table3

# Table 3 of the paper: Brier, Cloze, Gen., Know.
PAPER_TABLE3 = {
    "Talkie 1930 base": (0.1574, 39.5, 24.9, 44.0),
    "Talkie 1930 it": (0.1593, 37.4, 23.8, 25.1),
    "Qwen 7B ft (ckpt-3500)": (0.1601, 36.2, 14.9, 34.4),
    "Qwen 72B": (0.1607, 10.8, 8.8, 38.0),
    "Qwen 3.5 35B-A3B base": (0.1623, 12.6, 8.0, 37.1),
    "Talkie web base": (0.1627, 18.2, 13.6, 34.1),
    "Qwen 7B": (0.1628, 8.6, 9.5, 37.0),
}


def test_bundled_leaderboard_is_the_papers_table3():
    table = load_published_table3()
    assert table.questions == 866 and table.source["commit"].startswith("ee0b705")
    assert table.citation == "GitHub Historical-AI-Lab/GPT-1914, chronologic/evalcode/prob_08/leaderboard.md at commit ee0b705"
    assert [row.label for row in table.rows] == list(PAPER_TABLE3)
    for row in table.rows:
        brier, cloze, gen, know = PAPER_TABLE3[row.label]
        assert row.cells["brier"]["overall"]["median"] == brier
        for scope, value in (("group:cloze", cloze), ("group:generation", gen), ("group:knowledge", know)):
            assert row.cells["acc"][scope]["median"] == pytest.approx(value / 100)
    talkie = table.rows[0].cells
    assert (talkie["brier"]["overall"]["low"], talkie["brier"]["overall"]["high"]) == (0.1551, 0.1596)
    assert talkie["brier"]["group:generation"] == {"median": 0.1703, "low": 0.1663, "high": 0.1746}
    assert talkie["acc"]["group:knowledge"]["low"] == pytest.approx(0.375)


def test_their_markdown_and_csv_files_are_read_as_published(tmp_path):
    md = tmp_path / "leaderboard.md"
    md.write_text(
        "| Model | Overall Brier | 95% CI | Cloze Acc | 95% CI |\n|---|---|---|---|---|\n"
        "| Gemma 4 31B base | 0.1606 | [0.1585, 0.1626] | 23.0% | [18.9%, 27.2%] |\n", encoding="utf-8")
    (row,) = load_published_table3(md).rows
    assert row.label == "Gemma 4 31B base" and row.cells["brier"]["overall"] == {"median": 0.1606, "low": 0.1585, "high": 0.1626}
    assert row.cells["acc"]["group:cloze"]["high"] == pytest.approx(0.272)
    csv = tmp_path / "leaderboard.csv"
    csv.write_text("model,overall_brier,cloze_acc\nGemma 4 31B base,0.1606,23.0\n", encoding="utf-8")
    (row,) = load_published_table3(csv).rows
    assert row.cells["acc"]["group:cloze"] == {"median": pytest.approx(0.23), "low": None, "high": None}


@pytest.mark.parametrize(("text", "message"), [
    ("| Model | Overall Brier | 95% CI |\n|---|---|---|\n| M | 0.16 | 0.15-0.17 |\n",
     r"row 3, column 'Overall Brier' \(95% CI\): expected an interval \[low, high\], got '0.15-0.17'"),
    ("| Model | Overall Brier |\n|---|---|\n| M | 0.16 | extra |\n", "row 3: 3 cells for 2 columns"),
    ("| Name | Overall Brier |\n|---|---|\n| M | 0.16 |\n", "the first column must be 'Model'"),
    ("| Model | Cloze Acc |\n|---|---|\n| M | 10% |\n", "no 'Overall Brier' column"),
    ("no table here\n", "no Markdown table"),
])
def test_malformed_files_name_row_and_column(tmp_path, text, message):
    path = tmp_path / "leaderboard.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EvalError, match=message):
        load_published_table3(path)
