"""The shortcut audit of ChronoCulture's `mcq` config (builders/chronoculture/mcq_audit.py):
both years of every pair are audited with the questionnaire's categories as options and the
modal answer as the gold; reported in the summary and card, not enforced (the options and
their order are the questionnaire's)."""

from histbench.builders.chronoculture.mcq_audit import mcq_shortcut_audit, mcq_shortcut_markdown


def _row(labels, mode_old, mode_new):
    return {"option_labels": labels, "mode_old": mode_old, "mode_new": mode_new}


def test_both_years_of_each_pair_are_audited_and_reported_not_enforced():
    labels = ["Very happy", "Quite happy", "Not very happy", "Not at all happy"]
    rows = [_row(labels, 0, 1)] * 20 + [_row(labels, 1, 1)] * 5
    audit = mcq_shortcut_audit(rows)
    assert audit["items"] == 50 and audit["enforced"] is False
    rules = {r["rule"]: r for r in audit["rules"]}
    assert rules["most_common_gold_position"]["position"] == 1
    assert rules["most_common_gold_position"]["accuracy"] == 0.6          # 30 of 50 modal answers are the second
    assert rules["first_position"]["accuracy"] == 0.4
    text = mcq_shortcut_markdown(audit)
    assert "Reported, not enforced" in text and "questionnaire" in text and "Gold answers per position: 1: 20, 2: 30" in text
