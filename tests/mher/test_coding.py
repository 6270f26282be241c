"""Table 7 (section 8.2): the Source-grounded errors coded by a person in
source_grounded_errors.csv are read back into the report; a coded file is never
overwritten."""

from __future__ import annotations

import csv

import pytest

from histbench.core.errors import EvalError
from histbench.eval.mher.analysis import System, analyse_models
from histbench.eval.mher.coding import ERRORS_CSV, UNCODED, UNCODED_CSV, code_errors, coded_counts
from histbench.eval.mher.report import table7_coded

from .test_report import _predict

# Table 7 of the paper: Qwen3-8B's 13 false merges, 10 name-induced and 3 persistent
TABLE7 = [("Unsupported alias / transliteration", 5, 1), ("Decision–rationale inconsistency", 4, 0),
          ("Coarse role / chronology conflation", 1, 2)]


@pytest.fixture(scope="module")
def qwen_like(sample_bench):
    """A system with Qwen3-8B's Source-grounded error structure (section 8.2): 13 false same
    merges on different pairs, ten of them right under Context-only."""
    different = [r["pair_id"] for r in sample_bench.items("source_grounded", "test") if r["label"] == "different"]
    induced, persistent = different[:10], different[10:13]

    def rule(condition, record):
        pid = record["pair_id"] if condition != "unresolved" else None
        if condition == "unresolved":
            return "ambiguous"
        if condition == "source_grounded" and pid in induced + persistent:
            return "same"
        if condition == "context_only" and pid in persistent:
            return "same"
        return record["label"]

    analysis = analyse_models(sample_bench, [System("Qwen3-8B", "Qwen3-8B", _predict(sample_bench, "Qwen3-8B", rule))],
                              resamples=200, thinning=10)
    return analysis, induced, persistent


def _code(path, codes: dict[str, str]):
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["category"] = codes.get(row["pair_id"], row["category"])
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path.read_bytes()


def test_coded_categories_are_read_back_into_table7(qwen_like, tmp_path):
    analysis, induced, persistent = qwen_like
    first = code_errors(analysis, {}, tmp_path)
    listing = tmp_path / ERRORS_CSV
    assert first["written"] == [str(listing)] and first["uncoded"] == 13 and first["codes_file"] is None
    assert coded_counts(analysis, first)["Qwen3-8B"][UNCODED] == {"name_induced": 10, "persistent": 3, "total": 13}
    # a person codes the file (labels in any case, any dash, or the short keys)
    codes = {}
    for pid in induced[:5]:
        codes[pid] = "unsupported alias / transliteration"
    for pid in induced[5:9]:
        codes[pid] = "Decision-rationale inconsistency"
    codes[induced[9]] = "conflation"
    codes[persistent[0]] = "alias"
    for pid in persistent[1:]:
        codes[pid] = "Coarse role/chronology conflation"
    coded = _code(listing, codes)
    second = code_errors(analysis, {}, tmp_path)
    assert listing.read_bytes() == coded                      # the coded file is left as it is
    assert second["listing_was_coded"] and second["uncoded"] == 0 and str(listing) not in second["written"]
    counts = coded_counts(analysis, second)["Qwen3-8B"]
    for label, name_induced, persistent_count in TABLE7:
        assert counts[label] == {"name_induced": name_induced, "persistent": persistent_count,
                                 "total": name_induced + persistent_count}
    text = table7_coded(analysis, second)
    assert "| Qwen3-8B | Unsupported alias / transliteration | 5 | 1 | 6 |" in text
    assert "| Qwen3-8B | Decision–rationale inconsistency | 4 | 0 | 4 |" in text
    assert "| Qwen3-8B | Coarse role / chronology conflation | 1 | 2 | 3 |" in text
    assert "| Qwen3-8B | **Total** | 10 | 3 | 13 |" in text


def test_partly_coded_file_is_kept_and_the_rest_listed_apart(qwen_like, tmp_path):
    analysis, induced, _ = qwen_like
    code_errors(analysis, {}, tmp_path)
    coded = _code(tmp_path / ERRORS_CSV, {induced[0]: "other: a reading of the Persian script"})
    result = code_errors(analysis, {}, tmp_path)
    assert (tmp_path / ERRORS_CSV).read_bytes() == coded
    assert result["uncoded"] == 12 and str(tmp_path / UNCODED_CSV) in result["written"]
    with (tmp_path / UNCODED_CSV).open(encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == 12
    assert coded_counts(analysis, result)["Qwen3-8B"]["Other"]["total"] == 1
    # a person codes the uncoded list too: it is not overwritten either
    kept = _code(tmp_path / UNCODED_CSV, {induced[1]: "alias"})
    code_errors(analysis, {}, tmp_path)
    assert (tmp_path / UNCODED_CSV).read_bytes() == kept


def test_codes_for_errors_the_runs_no_longer_make_are_reported(qwen_like, sample_bench, tmp_path):
    analysis, induced, _ = qwen_like
    code_errors(analysis, {}, tmp_path)
    _code(tmp_path / ERRORS_CSV, {pid: "alias" for pid in induced})
    correct = analyse_models(sample_bench, [System("Qwen3-8B", "Qwen3-8B", _predict(
        sample_bench, "Qwen3-8B", lambda c, r: "ambiguous" if c == "unresolved" else r["label"]))],
        resamples=100, thinning=5)
    result = code_errors(correct, {}, tmp_path)
    assert result["errors"] == 0 and len(result["stale"]) == 10 and result["stale"][0]["model"] == "Qwen3-8B"


def test_codes_from_a_file_elsewhere_are_never_written(qwen_like, tmp_path):
    analysis, induced, _ = qwen_like
    code_errors(analysis, {}, tmp_path / "first")
    elsewhere = tmp_path / "coded.csv"
    elsewhere.write_bytes((tmp_path / "first" / ERRORS_CSV).read_bytes())
    coded = _code(elsewhere, {induced[0]: "rationale"})
    result = code_errors(analysis, {}, tmp_path / "report", codes_path=elsewhere)
    assert elsewhere.read_bytes() == coded and result["codes_file"] == str(elsewhere)
    assert coded_counts(analysis, result)["Qwen3-8B"]["Decision–rationale inconsistency"]["total"] == 1
    with pytest.raises(EvalError, match="no such file of Table 7 codes"):
        code_errors(analysis, {}, tmp_path / "r2", codes_path=tmp_path / "missing.csv")


def test_a_category_outside_table7_names_file_row_and_field(qwen_like, tmp_path):
    analysis, induced, _ = qwen_like
    code_errors(analysis, {}, tmp_path)
    _code(tmp_path / ERRORS_CSV, {induced[2]: "transliteration trouble"})
    with pytest.raises(EvalError) as caught:
        code_errors(analysis, {}, tmp_path)
    error = caught.value
    with (tmp_path / ERRORS_CSV).open(encoding="utf-8") as handle:
        line = 2 + [r["pair_id"] for r in csv.DictReader(handle)].index(induced[2])
    assert error.field == "category" and error.file.endswith(ERRORS_CSV) and error.row == line
    assert "'transliteration trouble' is not a Table 7 category" in error.message
