"""The shortcut audit (histbench.builders.machinery.shortcuts) of the `mcq` config: each row
asks twice (the older and the newer year), with the question's answer categories as the
options and the modal answer as the gold. There is no context rule: the prompt lists every
option, so every option overlaps with it alike.

Reported, not enforced: the options are the questionnaire's own answer categories, in the
questionnaire's order, as the paper's prompt shows them; histbench selects which pairs
enter the config (the paper's modal-answer rules), it does not write or order the options.
A rule beating chance here (a questionnaire whose modal answer is often its first
category) is a property of the surveys that the card reports.
"""

from __future__ import annotations

from histbench.builders.machinery import shortcuts


def mcq_shortcut_audit(rows: list[dict]) -> dict:
    items = [shortcuts.Choice(row["option_labels"], int(row[f"mode_{period}"]))
             for row in rows for period in ("old", "new") if len(row["option_labels"]) >= 2]
    return shortcuts.record(shortcuts.audit_choices(items), allow=False, enforced=False,
                            why_not="the options are the questionnaire's answer categories in its own order, as the "
                                    "paper's prompt shows them; histbench only selects the pairs")


def mcq_shortcut_markdown(result: dict) -> str:
    return shortcuts.markdown(result, "mcq (older and newer year of each pair)")
