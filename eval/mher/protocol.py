"""The MHER generative protocol (paper section 5.4): one instruction and one JSON output
contract for every system, condition-specific instructions, parsing and the action rule.

Prompts are built from the model-visible fields only (surface, language, script, context)
through `visible_item`, so no id, label, person, stratum, challenge label, citation or
note can reach a model: `render_messages(condition, record)` never reads anything else.

Output contract: one JSON object
    {"same": p, "different": p, "ambiguous": p, "rationale": "..."}
Values may be numbers or numeric strings (percent signs allowed); they are normalised to
sum to one. A reply without the three non-negative values (or with all three zero) is a
format failure. The action is the argmax; an exact tie at the maximum is `ambiguous`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from histbench.core.parsing import extract_json_object, parse_number

ACTIONS = ("same", "different", "ambiguous")
CONDITIONS = ("name_only", "context_only", "source_grounded", "shuffled_a", "shuffled_b", "shuffled_c", "unresolved")
CONTEXTUAL = ("context_only", "source_grounded", "shuffled_a", "shuffled_b", "shuffled_c")
PROTOCOL_VERSION = "mher-protocol-1"

SYSTEM_INSTRUCTION = """\
You help historians reconcile person-name attestations. You will be shown two attestations \
of historical persons; their names may be written in different languages, scripts and \
transcription traditions, and each may come with historical evidence. Decide whether the two \
attestations refer to the same historical individual, using only what is shown to you.

Reply with one JSON object and nothing else, in exactly this form:
{"same": <number>, "different": <number>, "ambiguous": <number>, "rationale": "<one or two sentences>"}
"same" is your confidence that both attestations denote one person, "different" that they \
denote two distinct persons, and "ambiguous" that what is shown does not allow either \
conclusion. The three numbers are between 0 and 1 and sum to 1."""

CONDITION_INSTRUCTIONS = {
    "name_only": "Only the two name forms are shown, each with its language and script.",
    "context_only": (
        "Only historical evidence about each attestation is shown; the names, languages and scripts "
        "have been withheld."
    ),
    "source_grounded": (
        "Each name form is shown with its language and script and with historical evidence taken from "
        "the source that attests it."
    ),
    "shuffled": (
        "Control condition: the evidence printed under each name below was deliberately reassigned by a "
        "fixed rearrangement and comes from the records of other historical persons. It does not describe "
        "the person behind the name it is printed with."
    ),
    "unresolved": (
        "This identity question is regarded as unresolved in historical scholarship. A binary answer is not "
        "required: use \"ambiguous\" if you judge that the relation cannot be settled."
    ),
}

LANGUAGE_NAMES = {
    "en": "English", "fa": "Persian", "ar": "Arabic", "mn": "Mongolian", "xng": "Middle Mongol",
    "cmg": "Classical Mongolian", "lzh": "Literary Chinese", "zh": "Chinese", "la": "Latin",
    "fro": "Old French", "fr": "French", "it": "Italian", "de": "German", "es": "Spanish", "ru": "Russian",
    "tr": "Turkish", "ota": "Ottoman Turkish", "chg": "Chagatai", "syc": "Syriac", "bo": "Tibetan",
    "xbo": "Tibetan", "uig": "Uyghur", "oui": "Old Uyghur", "hy": "Armenian", "ka": "Georgian",
    "el": "Greek", "grc": "Ancient Greek", "ja": "Japanese", "ko": "Korean",
}
SCRIPT_NAMES = {
    "latn": "Latin", "cyrl": "Cyrillic", "hani": "Chinese characters", "hans": "Chinese characters (simplified)",
    "hant": "Chinese characters (traditional)", "arab": "Arabic", "mong": "Mongolian", "syrc": "Syriac",
    "tibt": "Tibetan", "phag": "Phags-pa", "ougr": "Old Uyghur", "armn": "Armenian", "geor": "Georgian",
    "grek": "Greek", "jpan": "Japanese", "kore": "Korean",
}


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code.lower(), code)


def script_name(code: str) -> str:
    return SCRIPT_NAMES.get(code.lower(), code)


def condition_family(condition: str) -> str:
    if condition not in CONDITIONS:
        raise ValueError(f"unknown MHER condition {condition!r} (known: {', '.join(CONDITIONS)})")
    return "shuffled" if condition.startswith("shuffled") else condition


def visible_item(condition: str, record: dict) -> dict:
    """Exactly the model-visible fields of a record for a condition (nothing else)."""
    family = condition_family(condition)
    if family == "context_only":
        return {"a": {"context": record["context_a"]}, "b": {"context": record["context_b"]}}
    sides = {}
    for side in ("a", "b"):
        src = record[side]
        view = {"surface": src["surface"], "language": src["language"], "script": src["script"]}
        if family in ("source_grounded", "shuffled"):
            view["context"] = src["context"]
        sides[side] = view
    return sides


def _render_side(label: str, view: dict) -> str:
    lines = []
    if "surface" in view:
        lines.append(f"Attestation {label}: {view['surface']}")
        lines.append(f"  language: {language_name(view['language'])}; script: {script_name(view['script'])}")
    else:
        lines.append(f"Attestation {label}")
    if "context" in view:
        lines.append(f"  evidence: {view['context']}")
    return "\n".join(lines)


def render_user(condition: str, view: dict) -> str:
    family = condition_family(condition)
    parts = [CONDITION_INSTRUCTIONS[family], "", _render_side("A", view["a"]), "", _render_side("B", view["b"]), "",
             "Return the JSON object now."]
    return "\n".join(parts)


def render_messages(condition: str, record: dict) -> list[dict]:
    """The chat messages for one item (system instruction + condition and item)."""
    view = visible_item(condition, record)
    return [{"role": "system", "content": SYSTEM_INSTRUCTION},
            {"role": "user", "content": render_user(condition, view)}]


def template_text() -> dict:
    """Everything that defines the prompts (hashed into result signatures)."""
    return {"version": PROTOCOL_VERSION, "system": SYSTEM_INSTRUCTION, "conditions": CONDITION_INSTRUCTIONS,
            "languages": LANGUAGE_NAMES, "scripts": SCRIPT_NAMES}


class ContractError(ValueError):
    """A reply that does not follow the JSON output contract (a format failure)."""


@dataclass(frozen=True)
class Judgement:
    probabilities: tuple[float, float, float]   # same, different, ambiguous (normalised)
    action: str
    rationale: str | None
    raw_values: tuple[float, float, float]
    route: str

    def to_json(self) -> dict:
        return {"probabilities": dict(zip(ACTIONS, self.probabilities, strict=True)), "action": self.action,
                "rationale": self.rationale, "raw_values": list(self.raw_values), "route": self.route}


_KEY_ALIASES = {
    "same": ("same", "p_same", "same_person", "prob_same"),
    "different": ("different", "p_different", "different_person", "prob_different", "diff"),
    "ambiguous": ("ambiguous", "p_ambiguous", "prob_ambiguous", "uncertain"),
}


def action_of(values) -> str:
    """argmax over (same, different, ambiguous); an exact tie at the maximum -> ambiguous."""
    values = [float(v) for v in values]
    best = max(values)
    winners = [a for a, v in zip(ACTIONS, values, strict=True) if v == best]
    return winners[0] if len(winners) == 1 else "ambiguous"


def normalise_values(values) -> tuple[float, float, float]:
    values = [float(v) for v in values]
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ContractError(f"probabilities must be finite and non-negative, got {values}")
    total = sum(values)
    if total <= 0:
        raise ContractError("all three probabilities are zero")
    return tuple(v / total for v in values)  # type: ignore[return-value]


def parse_reply(text: str | None) -> Judgement:
    """Parse a model reply under the contract (raises ContractError on a format failure)."""
    extracted = extract_json_object(text)
    if not extracted.ok:
        raise ContractError(extracted.error or "no JSON object")
    obj = {str(k).strip().lower(): v for k, v in extracted.value.items()}
    raw = []
    for action in ACTIONS:
        value = next((obj[k] for k in _KEY_ALIASES[action] if k in obj), None)
        number = parse_number(value) if value is not None else None
        if number is None:
            raise ContractError(f"missing or non-numeric {action!r} probability")
        raw.append(number)
    probabilities = normalise_values(raw)
    rationale = obj.get("rationale")
    rationale = rationale.strip() if isinstance(rationale, str) else None
    return Judgement(probabilities, action_of(raw), rationale, tuple(raw), extracted.route)  # type: ignore[arg-type]
