"""Which predicted words can each model produce at all?

A masked LM fills the slot with one vocabulary entry. A word its tokenizer splits into
several pieces (bert-base-uncased has no single entry for many Early Modern forms) can
never be among its top-k, so part of a model's bias comes from its vocabulary rather than
its training text. The report therefore lists, per model, how many of the whole words
predicted by any model of the run (and how many of those annotated as marked, sigma < 0
or > 0) are a single entry of that model's vocabulary. Models whose tokenizer cannot be
loaded (e.g. offline, answers all stored) are listed as not checked.
"""

from __future__ import annotations

from histbench.core.errors import EvalError


def pieces(tokenizer, word: str, marker_vocabulary: bool) -> list[str]:
    """The vocabulary entries a word becomes in the slot (a leading space for BPE/SentencePiece)."""
    return tokenizer.tokenize((" " + word) if marker_vocabulary else word)


def vocabulary_coverage(models: list[dict], candidates: list[dict], *, examples: int = 6) -> list[dict]:
    """One row per model: predicted whole words that are single vocabulary entries."""
    from .run import vocabulary_traits

    words: dict[str, set[str]] = {"all": set(), "early": set(), "modern": set()}
    for c in candidates:
        if c["kind"] != "word":
            continue
        words["all"].add(c["word"])
        if c["status"] == "scored" and c["sigma"] is not None:
            if c["sigma"] < 0:
                words["early"].add(c["word"])
            elif c["sigma"] > 0:
                words["modern"].add(c["word"])
    rows = []
    for model in models:
        row = {"model": model["label"], "checked": False, "words": len(words["all"])}
        try:
            from histbench.core.backends import load_backend

            backend = load_backend(model["spec"], {})
            markers, _ = vocabulary_traits(backend)
            tokenizer = backend.tokenizer
        except (EvalError, AttributeError, OSError, ValueError) as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            row["note"] = f"tokenizer not available: {first_line[:160]}"
            rows.append(row)
            continue
        split = {w for w in words["all"] if len(pieces(tokenizer, w, bool(markers))) > 1}
        row.update({
            "checked": True,
            "single_entry": len(words["all"]) - len(split),
            "split": len(split),
            "early_marked": len(words["early"]),
            "early_split": sorted(words["early"] & split),
            "modern_marked": len(words["modern"]),
            "modern_split": sorted(words["modern"] & split),
        })
        row["early_split_examples"] = ", ".join(row["early_split"][:examples])
        row["modern_split_examples"] = ", ".join(row["modern_split"][:examples])
        rows.append(row)
    return rows


def coverage_markdown(rows: list[dict]) -> str:
    from histbench.eval.report import markdown_table

    table = []
    for r in rows:
        if not r["checked"]:
            table.append([r["model"], r["words"], "-", "-", "-", r.get("note", "")])
            continue
        table.append([
            r["model"], r["words"], r["single_entry"],
            f"{len(r['early_split'])} of {r['early_marked']}" + (f" ({r['early_split_examples']})" if r["early_split"] else ""),
            f"{len(r['modern_split'])} of {r['modern_marked']}" + (f" ({r['modern_split_examples']})" if r["modern_split"] else ""),
            "",
        ])
    return markdown_table(
        table, ["model", "predicted words (run)", "single entries in its vocabulary", "early-marked words it splits",
                "modern-marked words it splits", "note"], "lrrlll",
    )
