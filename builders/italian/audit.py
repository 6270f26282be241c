"""The shortcut audit (histbench.builders.machinery.shortcuts) on every Italian task with
options, as the evaluation prompts show them (eval/italian/tasks.py):

| config | options | context (lexical overlap) | extra rule |
| --- | --- | --- | --- |
| wsd | the six candidate meanings | the context sentence | spelling similarity to the target, shared ending, agreement in part of speech, gender and number (lexicon.py's analysis) |
| authorship | the four snippets | none | least overlap with the other snippets (odd one out) |
| chrono_ranking | the four snippets (a ranking) | | order by length, as shown |
| head | the four candidate heads (their forms) | the sentence | |
| deprel | the four relation names | the sentence | |
| intertext | the two chunks | Dante's passage | |

histbench makes all these items, so the build refuses when a rule beats chance (unless
`--allow-shortcuts`), with one exemption: in `intertext` the positive chunk holds the
lines the commentators cite as a *verbal* correspondence (concordanza stringente), so
lexical overlap with Dante's passage is the evidence the task is about, not a shortcut of
the construction; it is reported, not enforced. In `head` every option is a word of the
sentence, so context overlap ties and scores chance by construction.
"""

from __future__ import annotations

from histbench.builders.machinery import shortcuts as S

EXEMPT = {
    "intertext": {"most_context_overlap": "verbal correspondence is what the task asks about"},
}
AUDITED = ("wsd", "authorship", "chrono_ranking", "head", "deprel", "intertext")


def items(config: str, rows: list[dict]) -> list:
    if config == "wsd":
        from . import lexicon

        wordnet = lexicon.shared_wordnet() if rows and lexicon.available() else None
        out = []
        for r in rows:
            agreement = None
            if wordnet is not None:
                target = wordnet.features(r["target_phrase"])
                agreement = [float(wordnet.features(c).agreement(target)) for c in r["candidates"]]
            out.append(S.Choice(r["candidates"], int(r["gold_index"]), r["context"], target=r["target_phrase"],
                                agreement=agreement))
        return out
    if config == "authorship":
        return [S.Choice([s["text"] for s in r["snippets"]], int(r["gold_index"]), None, odd_one_out=True) for r in rows]
    if config == "chrono_ranking":
        out = []
        for r in rows:
            rank = [0] * len(r["snippets"])
            for position, index in enumerate(r["gold_order"]):
                rank[index] = position
            out.append(S.Ranking([s["text"] for s in r["snippets"]], rank))
        return out
    if config == "head":
        return [S.Choice([o["form"] for o in r["options"]], int(r["gold_index"]), r["text"]) for r in rows]
    if config == "deprel":
        return [S.Choice(list(r["options"]), int(r["gold_index"]), r["text"]) for r in rows]
    if config == "intertext":
        return [S.Choice([r["text_a"], r["text_b"]], 0 if r["gold"] == "A" else 1, r["dante_text"]) for r in rows]
    raise KeyError(config)


def audit(config: str, rows: list[dict], allow: bool) -> dict:
    """The audit of one config, recorded as enforced (the build refuses at its end, with
    every failing task named, through `shortcuts.refuse`)."""
    found = items(config, rows)
    exempt = EXEMPT.get(config)
    result = S.audit_rankings(found, exempt=exempt) if config == "chrono_ranking" else S.audit_choices(found, exempt=exempt)
    return S.record(result, allow=allow)
