"""Per-task prompts, answer parsing, scoring and no-model baselines.

Prompts come from `sources/italian/prompts.yaml` (section `eval`). Answers are JSON parsed
with `histbench.eval.parsing.extract_json_object`; MCQ answers also accept a bare letter.
Unparsable answers count as wrong (MCQ), as a correlation of 0 (ranking) and as no
predicted entity (NER), and are counted in the results.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import numpy as np
import yaml

from histbench.builders.core.resources import Resources
from histbench.eval.parsing import extract_json_object

from .metrics import map_predictions, ner_scores, spearman

LETTERS = string.ascii_uppercase
MCQ_TASKS = ("wsd", "authorship", "head", "deprel", "intertext")
NER_TASKS = ("ner_classense", "ner_bellini")
TASKS = ("wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext")
MAX_TOKENS = {"ner_classense": 1500, "ner_bellini": 1500, "chrono_ranking": 64}
_BARE_LETTER = re.compile(r"\b([A-F])\b")


def load_prompts() -> dict:
    path = Resources.default().source_dir("italian") / "prompts.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))["eval"]


def prompt_text(prompts: dict) -> str:
    return yaml.safe_dump(prompts, allow_unicode=True, sort_keys=True)


def _options(texts: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {t}" for i, t in enumerate(texts))


def _where(word: dict) -> str:
    if word["occurrences"] > 1:
        return f" (occurrence {word['occurrence']} of {word['occurrences']})"
    return ""


def n_options(task: str, row: dict) -> int:
    return {"wsd": lambda r: len(r["candidates"]), "intertext": lambda r: 2}.get(task, lambda r: 4)(row)


def messages(task: str, row: dict, prompts: dict) -> list[dict]:
    spec = prompts["ner" if task in NER_TASKS else task]
    if task == "wsd":
        values = {"context": row["context"], "target_phrase": row["target_phrase"], "options": _options(row["candidates"])}
    elif task in NER_TASKS:
        values = {"text": row["text"], "types": ", ".join(row["entity_types"]), "type_list": "|".join(row["entity_types"])}
    elif task == "chrono_ranking":
        values = {"n": len(row["snippets"]), "options": "\n\n".join(f"{LETTERS[i]}.\n{s['text']}" for i, s in enumerate(row["snippets"]))}
    elif task == "authorship":
        values = {"options": "\n\n".join(f"{LETTERS[i]}.\n{s['text']}" for i, s in enumerate(row["snippets"]))}
    elif task == "head":
        values = {"text": row["text"], "token": row["token"]["form"], "token_where": _where(row["token"]),
                  "options": _options([o["form"] + _where(o) for o in row["options"]])}
    elif task == "deprel":
        values = {"text": row["text"], "token": row["token"]["form"], "token_where": _where(row["token"]),
                  "head": row["head"]["form"], "head_where": _where(row["head"]), "options": _options(row["options"])}
    elif task == "intertext":
        values = {"dante_text": row["dante_text"], "text_a": row["text_a"], "text_b": row["text_b"]}
    else:  # pragma: no cover
        raise KeyError(task)
    system = spec["system"].format(**values)
    return [{"role": "system", "content": system}, {"role": "user", "content": spec["user"].format(**values)}]


# ----------------------------------------------------------------------------- parsing


def parse_choice(text: str, n: int) -> int:
    """The chosen option index from {"answer": "B"} (or a bare letter / number)."""
    extracted = extract_json_object(text)
    value = extracted.value.get("answer") if extracted.ok else None
    if value is None and extracted.ok:
        value = next((v for v in extracted.value.values() if isinstance(v, str | int)), None)
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value - 1 < n:
            return value - 1
        raise ValueError(f"answer {value} out of range")
    if isinstance(value, str):
        letter = value.strip().strip(".):").upper()[:1]
        if letter and letter in LETTERS[:n]:
            return LETTERS.index(letter)
        raise ValueError(f"answer {value!r} is not one of {LETTERS[:n]}")
    found = _BARE_LETTER.findall((text or "").upper())
    found = [f for f in found if f in LETTERS[:n]]
    if len(set(found)) == 1:
        return LETTERS.index(found[0])
    raise ValueError("no answer letter found")


def parse_order(text: str, n: int) -> list[int]:
    extracted = extract_json_object(text)
    value = extracted.value.get("order") if extracted.ok else None
    if not isinstance(value, list):
        raise ValueError("no 'order' list in the answer")
    order = []
    for item in value:
        letter = str(item).strip().strip(".):").upper()[:1]
        if letter not in LETTERS[:n]:
            raise ValueError(f"{item!r} is not one of {LETTERS[:n]}")
        order.append(LETTERS.index(letter))
    if sorted(order) != list(range(n)):
        raise ValueError(f"the order must name each of {LETTERS[:n]} once")
    return order


def parse_entities(text: str) -> list[dict]:
    """[{"text", "type"}] from {"entities": [...]} or from {"<entity text>": "<type>", ...}."""
    extracted = extract_json_object(text)
    if not extracted.ok:
        raise ValueError(extracted.error or "no JSON object")
    value = extracted.value
    items = value.get("entities") if isinstance(value.get("entities"), list) else None
    out = []
    if items is not None:
        for item in items:
            if isinstance(item, dict) and item.get("text"):
                out.append({"text": str(item["text"]), "type": str(item.get("type") or "").upper()})
            elif isinstance(item, dict) and len(item) == 1:
                (k, v), = item.items()
                out.append({"text": str(k), "type": str(v).upper()})
        return out
    for key, type_ in value.items():
        if isinstance(type_, str):
            out.append({"text": str(key), "type": type_.upper()})
    return out


def parser_for(task: str, row: dict):
    if task in NER_TASKS:
        return lambda result: parse_entities(result.text)
    if task == "chrono_ranking":
        return lambda result: parse_order(result.text, len(row["snippets"]))
    n = n_options(task, row)
    return lambda result: parse_choice(result.text, n)


# ----------------------------------------------------------------------------- scoring


def gold_choice(task: str, row: dict) -> int:
    if task == "intertext":
        return 0 if row["gold"] == "A" else 1
    return int(row["gold_index"])


def score_task(task: str, rows: list[dict], predictions: list) -> tuple[dict, list[dict]]:
    """predictions: per row the parsed value or None (unparsed). Returns (metrics, items)."""
    from histbench.eval.stats import bootstrap_mean

    items = []
    failures = sum(1 for p in predictions if p is None)
    if task in NER_TASKS:
        letters = []
        for row, pred in zip(rows, predictions, strict=True):
            mapped = map_predictions(row["text"], pred or [])
            letters.append((row["entities"], mapped))
            items.append({"id": row["id"], "predicted": mapped, "unmapped": sum(1 for m in mapped if m["start"] is None),
                          "parsed": pred is not None})
        scores = ner_scores(letters)
        return {"letters": len(rows), "parse_failures": failures, **scores}, items
    values = []
    for row, pred in zip(rows, predictions, strict=True):
        if task == "chrono_ranking":
            value = spearman(pred, row["gold_order"]) if pred is not None else 0.0
            items.append({"id": row["id"], "predicted_order": pred, "gold_order": row["gold_order"], "spearman": value})
        else:
            gold = gold_choice(task, row)
            value = float(pred == gold) if pred is not None else 0.0
            items.append({"id": row["id"], "predicted": pred, "gold": gold, "correct": bool(value)})
        values.append(value)
    interval = bootstrap_mean(np.array(values, dtype=float)) if values else None
    name = "mean_spearman" if task == "chrono_ranking" else "accuracy"
    metrics = {"n": len(rows), "parse_failures": failures, name: interval.estimate if interval else float("nan"),
               "ci_low": interval.low if interval else float("nan"), "ci_high": interval.high if interval else float("nan")}
    genres = sorted({r.get("genre") for r in rows if r.get("genre")})
    if genres:
        metrics["by_genre"] = {g: float(np.mean([v for r, v in zip(rows, values, strict=True) if r.get("genre") == g])) for g in genres}
    return metrics, items


# ----------------------------------------------------------------------------- baselines

BASELINES = ("random", "first", "capitalised")
_CAPITALISED = re.compile(r"(?<![.!?\n]\s)(?<!^)\b([A-ZÀ-Ý][\wÀ-ÿ']+(?:\s+(?:di|de|del|della|da)?\s*[A-ZÀ-Ý][\wÀ-ÿ']+)*)")


def baseline_predictions(name: str, task: str, rows: list[dict], seed: int = 0) -> list:
    """No-model answers: `random` (seeded uniform choice / order; NER: capitalised words with a
    random type), `first` (always the first option / the shown order; NER: nothing),
    `capitalised` (NER: every capitalised word group not opening a sentence, typed with the
    corpus's most frequent type; other tasks: as `first`)."""
    rng = np.random.default_rng(seed)
    out = []
    for row in rows:
        if task in NER_TASKS:
            if name == "first":
                out.append([])
                continue
            found = [{"text": m.group(1), "type": None} for m in _CAPITALISED.finditer(row["text"])]
            types = row["entity_types"]
            if name == "random":
                for f in found:
                    f["type"] = types[int(rng.integers(len(types)))]
            else:
                counts = {t: 0 for t in types}
                for r in rows:
                    for e in r["entities"]:
                        counts[e["type"]] = counts.get(e["type"], 0) + 1
                common = max(types, key=lambda t: (counts.get(t, 0), -types.index(t)))
                for f in found:
                    f["type"] = common
            out.append(found)
        elif task == "chrono_ranking":
            n = len(row["snippets"])
            out.append([int(i) for i in rng.permutation(n)] if name == "random" else list(range(n)))
        else:
            n = n_options(task, row)
            out.append(int(rng.integers(n)) if name == "random" else 0)
    return out
