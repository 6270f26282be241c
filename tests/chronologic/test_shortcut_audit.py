"""The shortcut audit of Chronologic-EN's options (histbench.builders.machinery.shortcuts): the
released questions are audited as the likelihood evaluation offers their options (every
ground truth counts as right), reported in the summary and the card, never enforced."""

import json

from histbench.builders.chronologic import shortcut_audit


def test_the_sample_build_reports_the_audit_without_enforcing_it(sample_build):
    summary = json.loads((sample_build / "histbench.json").read_text())["summary"]
    audit = summary["shortcut_audit"]
    assert audit["enforced"] is False and "released dataset" in audit["not_enforced_because"]
    assert audit["items"] == summary["questions"]
    rules = {r["rule"]: r for r in audit["rules"]}
    # the release lists a ground truth first in every sample question: a position rule "beats chance",
    # but options are scored one at a time, so the order is reported as never seen
    assert rules["first_position"]["beats_chance"] and rules["first_position"]["exempt"]
    card = (sample_build / "README.md").read_text()
    assert "Shortcut audit of options" in card and "Reported, not enforced" in card


def test_every_ground_truth_counts_and_chance_is_their_share():
    rows = [{"answer_strings": ["1850", "1910", "circa 1850", "1700"], "ground_truth_indices": [0, 2],
             "metadata_frame": "A novel of", "main_question": "When was it written?"}] * 3
    audit = shortcut_audit(rows)
    assert audit["chance"] == 0.5
    longest = next(r for r in audit["rules"] if r["rule"] == "longest")
    assert longest["accuracy"] == 1.0                     # "circa 1850" is a ground truth
