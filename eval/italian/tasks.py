"""Per-task prompts, answer parsing, scoring and no-model baselines.

Prompts come from `sources/italian/prompts.yaml` (section `eval`). Answers are JSON parsed
with `histbench.core.parsing.extract_json_object`; MCQ answers also accept a letter written
where an answer stands (`parse_choice`). Unparsable answers count as wrong (MCQ), as a
correlation of 0 (ranking) and as no predicted entity (NER), and are counted.

Token budgets: 32 tokens for a multiple-choice answer, 64 for an order; a letter's NER
answer gets `max(1500, ceil(NER_TOKENS_PER_CHAR x characters))` tokens. On the 44 real
letters we hold (43 Canneti-Fiacchi, 1 Bellini), the gold entities written as the prompt
asks take at most 0.25 tokens per letter character in compact JSON and 0.42 indented
(SmolLM2's tokenizer; the longest letter, 9,745 characters, needs 1,634 and 2,755 tokens),
so 0.5 leaves room for either; the paper gives each model the whole letter, so letters
are not chunked. An answer the backend reports as cut off (`finish_reason` "length") is a
failure whatever it contains: a truncated JSON list "repaired" into entities would be
scored as if the model had stopped there. Cut-off answers are counted (`cut_off`) and
shown beside the parse failures.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import string
from collections.abc import Sequence

import numpy as np
import yaml

from histbench.core.parsing import extract_json_object
from histbench.core.resources import Resources

from .metrics import ceiling, map_predictions, ner_scores, spearman

LETTERS = string.ascii_uppercase
MCQ_TASKS = ("wsd", "authorship", "head", "deprel", "intertext")
# the tasks with a likelihood form (`--mode likelihood`, `histbench export lm-eval italian`):
# every multiple-choice task, and the ranking task with every order of its snippets as an option
LIKELIHOOD_TASKS = ("wsd", "chrono_ranking", "authorship", "head", "deprel", "intertext")
NER_TASKS = ("ner_classense", "ner_bellini")
TASKS = ("wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext")
MAX_TOKENS = {"ner_classense": 1500, "ner_bellini": 1500, "chrono_ranking": 64}
DEFAULT_TOKENS = 32
NER_TOKENS_PER_CHAR = 0.5
# a letter where an answer stands: after an answer cue ("Risposta: B", "la risposta corretta
# è la B", "The answer is (C)"), alone on the whole answer ("B", "**B**", "(B)."), or opening
# a line as an option label ("B) ...", "C. ..."). Letters are upper case: Italian "a", "e",
# "è" are words, never answers.
_CUE = re.compile(
    r"(?i:\b(?:answer|risposta|opzione|option|choice|scelta|lettera|letter|soluzione)"
    r"(?:\s+(?:corretta|giusta|esatta|finale|correct|right|final))?"
    r"\s*(?:è|e'|is|was|sia|sarebbe|:|=|-)?\s*(?:(?:la|il|the|l')\s*)?(?:(?:option|opzione|lettera|letter)\s+)?)"
    r"[\(\[\*\"'«“]*([A-Z])(?![\w'’])"
)
_ALONE = re.compile(r"^[\s\W]*(?:(?i:la|il|the|l')\s*)?([A-Z])[\s\W]*$")
_LINE_LABEL = re.compile(r"(?m)^[\s\*\(\[]*([A-Z])[\)\]\.:](?:\s|$)")


def max_tokens(task: str, row: dict, ner_tokens_per_char: float = NER_TOKENS_PER_CHAR) -> int:
    """The answer's token budget (module doc)."""
    if task in NER_TASKS:
        return max(MAX_TOKENS[task], math.ceil(ner_tokens_per_char * len(row["text"])))
    return MAX_TOKENS.get(task, DEFAULT_TOKENS)


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


def answer_options(task: str, row: dict) -> list[str]:
    """Every answer the prompt admits, written as it asks for the answer (the options of
    the likelihood form): {"answer": "<letter>"} for each option shown, and for the
    ranking task {"order": [...]} for every order of the snippets (`orders`)."""
    if task == "chrono_ranking":
        return [json.dumps({"order": [LETTERS[i] for i in order]}) for order in orders(len(row["snippets"]))]
    shown = {"wsd": "candidates", "authorship": "snippets", "head": "options", "deprel": "options"}
    n = 2 if task == "intertext" else len(row[shown[task]])
    return [json.dumps({"answer": LETTERS[i]}) for i in range(n)]


def orders(n: int) -> list[tuple[int, ...]]:
    """Every order of n snippets, lexicographically (the ranking task's likelihood options)."""
    return list(itertools.permutations(range(n)))


# ----------------------------------------------------------------------------- parsing


def _letter_in(text: str, n: int) -> int:
    """The option letter written where an answer stands in free text (see `_CUE`)."""
    allowed = LETTERS[:n]
    for pattern in (_ALONE, _CUE, _LINE_LABEL):
        found = [m.group(1) for m in pattern.finditer(text or "")]
        if not found:
            continue
        letters = set(found)
        if len(letters) > 1:
            raise ValueError(f"several answer letters ({', '.join(sorted(letters))})")
        (letter,) = letters
        if letter not in allowed:
            raise ValueError(f"answer {letter!r} is not one of {allowed}")
        return LETTERS.index(letter)
    raise ValueError("no answer letter found")


def parse_choice(text: str, n: int) -> int:
    """The chosen option index from {"answer": "B"} (a number 1..n, or a letter in the
    value), else from a letter where an answer stands in the text (`_letter_in`)."""
    extracted = extract_json_object(text)
    value = extracted.value.get("answer") if extracted.ok else None
    if value is None and extracted.ok:
        value = next((v for v in extracted.value.values() if isinstance(v, str | int)), None)
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value - 1 < n:
            return value - 1
        raise ValueError(f"answer {value} out of range")
    if isinstance(value, str):
        alone = re.fullmatch(r"[\s\W]*([A-Za-z])[\s\W]*", value)
        if alone:                        # a JSON answer value of one letter is a letter, whatever its case
            letter = alone.group(1).upper()
            if letter in LETTERS[:n]:
                return LETTERS.index(letter)
            raise ValueError(f"answer {value!r} is not one of {LETTERS[:n]}")
        return _letter_in(value, n)
    return _letter_in(text or "", n)


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


CUT_OFF = "cut off (finish_reason length)"


def score_task(task: str, rows: list[dict], predictions: list, failures: list[str | None] | None = None) -> tuple[dict, list[dict]]:
    """predictions: per row the parsed value or None; failures: per row why there is no
    prediction (CUT_OFF, a parse error, a request error) or None. Returns (metrics, items)."""
    from histbench.eval.stats import bootstrap_mean, proportion_interval

    failures = list(failures) if failures is not None else [None if p is not None else "unparsed" for p in predictions]
    items = []
    cut_off = sum(1 for f in failures if f == CUT_OFF)
    unparsed = sum(1 for p, f in zip(predictions, failures, strict=True) if p is None and f != CUT_OFF)
    counts = {"parse_failures": unparsed, "cut_off": cut_off}
    if task in NER_TASKS:
        labels = list(rows[0]["entity_types"]) if rows else []
        letters = []
        for row, pred, failure in zip(rows, predictions, failures, strict=True):
            mapped = map_predictions(row["text"], pred or [])
            letters.append((row["entities"], mapped))
            items.append({"id": row["id"], "predicted": mapped, "not_found": sum(1 for m in mapped if m["start"] is None),
                          "parsed": pred is not None, "failure": failure})
        scores = ner_scores(letters, labels)
        limit = ceiling([(r["text"], r["entities"]) for r in rows], labels)
        return {"letters": len(rows), **counts, **scores, "ceiling": limit}, items
    values = []
    for row, pred, failure in zip(rows, predictions, failures, strict=True):
        if task == "chrono_ranking":
            value = spearman(pred, row["gold_order"]) if pred is not None else 0.0
            items.append({"id": row["id"], "predicted_order": pred, "gold_order": row["gold_order"], "spearman": value,
                          "failure": failure})
        else:
            gold = gold_choice(task, row)
            value = float(pred == gold) if pred is not None else 0.0
            items.append({"id": row["id"], "predicted": pred, "gold": gold, "correct": bool(value), "failure": failure})
        values.append(value)
    # accuracy is a proportion (Wilson); a mean Spearman is not (percentile bootstrap)
    ranking = task == "chrono_ranking"
    interval = None
    if values:
        interval = bootstrap_mean(np.array(values, dtype=float)) if ranking else proportion_interval(values)
    name = "mean_spearman" if ranking else "accuracy"
    metrics = {"n": len(rows), **counts, name: interval.estimate if interval else float("nan"),
               "ci_low": interval.low if interval else float("nan"), "ci_high": interval.high if interval else float("nan"),
               "ci_method": interval.method if interval else None}
    if interval is not None and interval.constant:
        metrics["ci_constant"] = True
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
