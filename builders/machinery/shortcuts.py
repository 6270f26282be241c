"""The shortcut audit of multiple-choice items: how far trivial rules get without reading.

Any builder calls it on its finished items, as the model will see them, and shows the
result in the build summary (and so in the dataset card). For each rule the audit reports
its accuracy, the chance level, the excess over chance and a one-sided binomial p-value:

- `longest` / `shortest`: the option with the most / fewest characters;
- `most_context_overlap`: the option sharing the largest share of its word types with the
  item's context (the passage the question is about), when the item has one;
- `least_overlap_with_other_options`: for odd-one-out items (which of these is by another
  author?), the option sharing the smallest share of its word types with the other options;
- `first_position` / `last_position`: always the first / the last option;
- `most_common_gold_position`: always the position where the gold answer stands most often
  in this build (gold-position balance; with the count of gold answers per position);
- for items about one target word or phrase (word sense disambiguation: `Choice.target`):
  `most_similar_spelling`, the option whose words are most alike in spelling to the target's
  (`spelling_similarity`: the best difflib ratio between a word of each, casefolded, words
  of four letters or more);
  `shares_target_ending`, the option with a word ending in the target's last two letters;
  and, when the builder gives a morphological agreement score per option
  (`Choice.agreement`: features shared with the target minus features in conflict),
  `agrees_with_target`, the option agreeing best in part of speech, gender and number.

A rule whose choice is tied between several options gets the expected credit of breaking
the tie at random (1/k for k tied options, if the gold is among them). Chance is the mean
over items of 1/(number of options).

A rule *beats chance* when its accuracy exceeds chance by more than `margin` (0.10, i.e.
ten percentage points: MARGIN) **and** the excess is unlikely to be luck: the one-sided
binomial p-value of its hits against chance is below `alpha` (0.01: ALPHA; for the gold
position rule, the p-value is multiplied by the number of positions it chose among). The
second condition keeps small builds (the bundled samples, a dozen items) from being
refused for noise; the first keeps a large build from being refused for a real but
negligible bias.

Ranking items (put these snippets in order) have no single gold option; `audit_rankings`
scores orders instead, by the mean Spearman correlation with the gold order (chance: 0):
`longest_first`, `shortest_first` (order by length), `as_shown`, `reversed`; it also
reports the mean |Spearman(length, gold rank)| per item, whose expectation when length and
order are independent is 0.5 for four items (not 0), and the position where the first item
of the gold order stands. An order rule beats chance when its |mean Spearman| exceeds
RANKING_MARGIN (0.15) and a one-sample t-test on the per-item correlations gives p < alpha.

Where histbench constructs the items, `enforce` refuses the build when a rule beats chance
(a BuildError naming each rule), unless the user passes `--allow-shortcuts` (the audit then
records that it was allowed); where the items are a released dataset, the builder reports
the audit and does not enforce it. A rule can be reported but exempt from enforcement for a
stated reason (`exempt`: e.g. lexical overlap is the very evidence of an intertextuality
task).

Multiple-choice audits need only the standard library and numpy (Chronologic-EN builds with
histbench's core dependencies alone): the binomial tail is the exact sum, equal to
scipy.stats.binomtest(..., alternative="greater") (the tests check it). Ranking audits use
scipy's one-sample t-test (the builders that make rankings have the build extra).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from histbench.core.errors import BuildError

MARGIN = 0.10
RANKING_MARGIN = 0.15
ALPHA = 0.01
ALLOW_OPTION = "--allow-shortcuts"
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)

RULE_TITLES = {
    "longest": "longest option",
    "shortest": "shortest option",
    "most_context_overlap": "most lexical overlap with the context",
    "least_overlap_with_other_options": "least lexical overlap with the other options",
    "first_position": "always the first option",
    "last_position": "always the last option",
    "most_common_gold_position": "always the most common gold position",
    "most_similar_spelling": "most similar in spelling to the target",
    "shares_target_ending": "shares the target's last two letters",
    "agrees_with_target": "agrees best with the target in part of speech, gender and number",
    "longest_first": "order by length, longest first",
    "shortest_first": "order by length, shortest first",
    "as_shown": "the order shown",
    "reversed": "the order shown, reversed",
}


@dataclass
class Choice:
    """One multiple-choice item as the model sees it. `also_correct`: other options that
    count as right (Chronologic-EN questions may have several ground truths); a rule is
    right when it picks any of them, and chance is their share of the options."""

    options: Sequence[str]
    gold: int
    context: str | None = None      # the passage the options are compared with (most_context_overlap)
    odd_one_out: bool = False       # the gold is the option unlike the others (least_overlap_with_other_options)
    also_correct: Sequence[int] = ()
    target: str | None = None       # the word or phrase the question is about (spelling and ending rules)
    agreement: Sequence[float] | None = None   # per option: morphological agreement with the target

    def __post_init__(self) -> None:
        if len(self.options) < 2:
            raise ValueError("a multiple-choice item needs at least two options")
        for index in (self.gold, *self.also_correct):
            if not 0 <= index < len(self.options):
                raise ValueError(f"gold index {index} outside the {len(self.options)} options")
        if self.agreement is not None and len(self.agreement) != len(self.options):
            raise ValueError(f"{len(self.agreement)} agreement scores for {len(self.options)} options")

    @property
    def golds(self) -> set[int]:
        return {self.gold, *self.also_correct}

    @property
    def chance(self) -> float:
        return len(self.golds) / len(self.options)


@dataclass
class Ranking:
    """One ranking item: texts as shown, and the gold rank of each (0 = first in the gold order)."""

    texts: Sequence[str]
    gold_rank: Sequence[int]


def word_types(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text or "")}


SPELLING_MIN_LETTERS = 4


def spelling_similarity(option: str, target: str) -> float:
    """The best difflib ratio between a word of `option` and a word of `target`, casefolded,
    words of four letters or more (articles and prepositions, "di" in both, are no clue to
    spelling; a target of short words only keeps them); 0 when either has none."""
    from difflib import SequenceMatcher

    def words(text: str) -> list[str]:
        found = _WORD.findall((text or "").casefold())
        return [w for w in found if len(w) >= SPELLING_MIN_LETTERS] or found

    a, b = words(option), words(target)
    return max((SequenceMatcher(None, x, y).ratio() for x in a for y in b), default=0.0)


def shares_ending(option: str, target: str) -> bool:
    """Whether a word of `option` ends in the last two letters of the target's last word."""
    words = _WORD.findall((target or "").casefold())
    if not words or len(words[-1]) < 2:
        return False
    end = words[-1][-2:]
    return any(w.endswith(end) for w in _WORD.findall((option or "").casefold()))


def _share(option: set[str], other: set[str]) -> float:
    return len(option & other) / len(option) if option else 0.0


TIE_TOLERANCE = 1e-12


def _credit(scores: Sequence[float], golds: set[int], pick_max: bool) -> float:
    """Credit of choosing the best-scoring option (ties broken at random, in expectation).

    Scores within TIE_TOLERANCE of the best tie (numpy.isclose with rtol=0, which this equals
    on every finite or infinite score; a test compares the two). Plain Python: an item has a
    handful of options, and numpy's per-call overhead made this the audit's whole cost."""
    values = [float(v) for v in scores]
    best = max(values) if pick_max else min(values)
    tied = [i for i, v in enumerate(values) if v == best or abs(v - best) <= TIE_TOLERANCE]
    return sum(1 for t in tied if t in golds) / len(tied)


def binomial_upper_tail(hits: int, n: int, p: float) -> float:
    """P(X >= hits) for X ~ Binomial(n, p): the one-sided binomial test's p-value."""
    if hits <= 0:
        return 1.0
    if hits > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q
             for k in range(hits, n + 1)]
    top = max(terms)
    return float(min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms)))


def _t_test_p(values: np.ndarray) -> float:
    """Two-sided p-value of a one-sample t-test of mean 0 (scipy.stats.ttest_1samp; ranking
    items come from builders that have the build extra)."""
    from scipy.stats import ttest_1samp

    if values.size < 2:
        return 1.0
    if float(values.std()) == 0.0:
        return 0.0 if float(values.mean()) != 0.0 else 1.0
    return float(ttest_1samp(values, 0.0).pvalue)


@dataclass
class Rule:
    name: str
    accuracy: float | None
    chance: float
    p_value: float | None
    margin: float
    exempt: str | None = None
    details: dict = field(default_factory=dict)

    @property
    def beats_chance(self) -> bool:
        if self.accuracy is None or self.p_value is None:
            return False
        return (self.accuracy - self.chance) > self.margin and self.p_value < ALPHA

    def to_dict(self) -> dict:
        return {
            "rule": self.name, "title": RULE_TITLES.get(self.name, self.name),
            "accuracy": None if self.accuracy is None else round(float(self.accuracy), 4),
            "chance": round(float(self.chance), 4),
            "excess_over_chance": None if self.accuracy is None else round(float(self.accuracy - self.chance), 4),
            "p_value": None if self.p_value is None else float(f"{self.p_value:.3g}"),
            "margin": self.margin, "beats_chance": self.beats_chance, "exempt": self.exempt, **self.details,
        }


def audit_choices(items: Iterable[Choice], *, margin: float = MARGIN, exempt: dict[str, str] | None = None) -> dict:
    """The rules of the module doc on multiple-choice items; a JSON-able dict."""
    items = list(items)
    exempt = exempt or {}
    n = len(items)
    result: dict = {"kind": "multiple choice", "items": n, "margin": margin, "alpha": ALPHA}
    if not n:
        result.update(rules=[], chance=None, gold_positions={})
        return result
    chance = float(np.mean([c.chance for c in items]))
    credits: dict[str, list[float]] = {"longest": [], "shortest": [], "first_position": [], "last_position": []}
    context_credit: list[float] = []
    odd_credit: list[float] = []
    spelling_credit: list[float] = []
    ending_credit: list[float] = []
    agreement_credit: list[float] = []
    for item in items:
        golds = item.golds
        lengths = [len(o) for o in item.options]
        credits["longest"].append(_credit(lengths, golds, True))
        credits["shortest"].append(_credit(lengths, golds, False))
        credits["first_position"].append(float(0 in golds))
        credits["last_position"].append(float(len(item.options) - 1 in golds))
        types = [word_types(o) for o in item.options]
        if item.context:
            context = word_types(item.context)
            context_credit.append(_credit([_share(t, context) for t in types], golds, True))
        if item.odd_one_out:
            shares = [_share(t, set().union(*(types[:i] + types[i + 1:]))) for i, t in enumerate(types)]
            odd_credit.append(_credit(shares, golds, False))
        if item.target:
            spelling_credit.append(_credit([spelling_similarity(o, item.target) for o in item.options], golds, True))
            ending_credit.append(_credit([float(shares_ending(o, item.target)) for o in item.options], golds, True))
        if item.agreement is not None:
            agreement_credit.append(_credit(list(item.agreement), golds, True))
    rules: list[Rule] = []

    def add(name: str, values: list[float], base: float, **details) -> None:
        if not values:
            return
        accuracy = float(np.mean(values))
        hits = int(round(sum(values)))
        rules.append(Rule(name, accuracy, base, binomial_upper_tail(hits, len(values), base), margin,
                          exempt.get(name), {"items_scored": len(values), **details}))

    add("longest", credits["longest"], chance)
    add("shortest", credits["shortest"], chance)
    if context_credit:
        add("most_context_overlap", context_credit, float(np.mean([c.chance for c in items if c.context])))
    if odd_credit:
        add("least_overlap_with_other_options", odd_credit, float(np.mean([c.chance for c in items if c.odd_one_out])))
    if spelling_credit:
        targeted = float(np.mean([c.chance for c in items if c.target]))
        add("most_similar_spelling", spelling_credit, targeted)
        add("shares_target_ending", ending_credit, targeted)
    if agreement_credit:
        add("agrees_with_target", agreement_credit, float(np.mean([c.chance for c in items if c.agreement is not None])))
    add("first_position", credits["first_position"], chance)
    add("last_position", credits["last_position"], chance)
    width = max(len(c.options) for c in items)
    positions = Counter(p for c in items for p in c.golds)
    top, count = max(sorted(positions.items()), key=lambda kv: kv[1])
    p = min(1.0, binomial_upper_tail(count, n, chance) * width)
    rules.append(Rule("most_common_gold_position", count / n, chance, p, margin, exempt.get("most_common_gold_position"),
                      {"items_scored": n, "position": top}))
    result.update(chance=round(chance, 4), rules=[r.to_dict() for r in rules],
                  gold_positions={str(k): positions.get(k, 0) for k in range(width)})
    return result


def _spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho with average ranks for ties; None when either side is constant."""
    def ranks(values):
        values = np.asarray(values, dtype=float)
        order = np.argsort(values, kind="stable")
        out = np.empty(len(values))
        i = 0
        while i < len(values):
            j = i
            while j + 1 < len(values) and values[order[j + 1]] == values[order[i]]:
                j += 1
            out[order[i:j + 1]] = (i + j) / 2.0
            i = j + 1
        return out

    a, b = ranks(x), ranks(y)
    if a.std() == 0 or b.std() == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def audit_rankings(items: Iterable[Ranking], *, margin: float = RANKING_MARGIN,
                   exempt: dict[str, str] | None = None) -> dict:
    """Order rules on ranking items (module doc); a JSON-able dict."""
    items = list(items)
    exempt = exempt or {}
    result: dict = {"kind": "ranking", "items": len(items), "margin": margin, "alpha": ALPHA, "chance": 0.0}
    if not items:
        result.update(rules=[], mean_abs_spearman_length_gold=None, first_in_gold_order_positions={})
        return result
    per_rule: dict[str, list[float]] = {"longest_first": [], "shortest_first": [], "as_shown": [], "reversed": []}
    length_abs: list[float] = []
    length_signed: list[float] = []
    first_positions: Counter = Counter()
    for item in items:
        k = len(item.texts)
        gold = list(item.gold_rank)
        lengths = [len(t) for t in item.texts]
        rho = _spearman(lengths, gold)
        rho = 0.0 if rho is None else rho
        length_abs.append(abs(rho))
        length_signed.append(rho)
        # "longest first": predicted rank grows as length falls, so its correlation with the gold rank is -rho
        per_rule["longest_first"].append(-rho)
        per_rule["shortest_first"].append(rho)
        shown = _spearman(list(range(k)), gold)
        per_rule["as_shown"].append(0.0 if shown is None else shown)
        per_rule["reversed"].append(0.0 if shown is None else -shown)
        first_positions[gold.index(min(gold))] += 1
    rules = []
    for name, values in per_rule.items():
        array = np.asarray(values)
        rule = Rule(name, float(array.mean()), 0.0, _t_test_p(array), margin, exempt.get(name),
                    {"items_scored": len(values), "metric": "mean Spearman with the gold order"})
        rules.append(rule)
    k = max(len(i.texts) for i in items)
    result.update(
        rules=[_ranking_dict(r) for r in rules],
        mean_abs_spearman_length_gold=round(float(np.mean(length_abs)), 4),
        mean_spearman_length_gold=round(float(np.mean(length_signed)), 4),
        independence_mean_abs_spearman=_expected_abs_spearman(k),
        first_in_gold_order_positions={str(p): first_positions.get(p, 0) for p in range(k)},
    )
    return result


def _ranking_dict(rule: Rule) -> dict:
    out = rule.to_dict()
    beats = (rule.accuracy is not None and abs(rule.accuracy) > rule.margin
             and (1.0 if rule.p_value is None else rule.p_value) < ALPHA)
    out["beats_chance"] = beats
    out["mean_spearman"] = out.pop("accuracy")
    return out


def _expected_abs_spearman(k: int) -> float | None:
    """E|rho| between a fixed order and a uniformly random one of k items (exact up to 7)."""
    import itertools

    if k < 2 or k > 7:
        return None
    values = [abs(_spearman(list(range(k)), list(p)) or 0.0) for p in itertools.permutations(range(k))]
    return round(float(np.mean(values)), 4)


def failing(result: dict) -> list[dict]:
    """The rules that beat chance and are not exempt."""
    return [r for r in result.get("rules", []) if r["beats_chance"] and not r.get("exempt")]


def record(result: dict, *, allow: bool, enforced: bool = True, why_not: str | None = None) -> dict:
    """Note on the audit whether it is enforced and which rules fail.

    `enforced` False (a released dataset): reported only, with `why_not`. `allow` True
    (`--allow-shortcuts`): failing rules are recorded as allowed by the user."""
    bad = failing(result)
    result["enforced"] = bool(enforced)
    if not enforced:
        result["not_enforced_because"] = why_not or "reported only"
    result["failing_rules"] = [r["rule"] for r in bad]
    result["allowed_by_user"] = bool(enforced and allow and bad)
    return result


def refuse(results: dict[str, dict], *, allow: bool, benchmark: str) -> None:
    """Raise one BuildError naming every enforced rule that beats chance, in every task
    (`results`: task -> audit after `record`), unless `allow`."""
    lines = [f"{task}: {_failure_line(rule, result)}"
             for task, result in results.items() if result.get("enforced", True)
             for rule in failing(result)]
    if lines and not allow:
        raise BuildError(
            f"{benchmark}: trivial rules answer some items better than chance (shortcut audit); nothing was written. "
            f"Pass {ALLOW_OPTION} to build anyway (the audit is then recorded in the summary and the card)",
            details=lines,
        )


def enforce(result: dict, task: str, *, allow: bool, enforced: bool = True, why_not: str | None = None) -> dict:
    """`record` and `refuse` for a single task."""
    record(result, allow=allow, enforced=enforced, why_not=why_not)
    if enforced:
        refuse({task: result}, allow=allow, benchmark=task)
    return result


def _failure_line(rule: dict, result: dict) -> str:
    if result["kind"] == "ranking":
        return (f"{rule['title']}: mean Spearman {rule['mean_spearman']:+.3f} (chance 0, margin {rule['margin']:.2f}, "
                f"p = {rule['p_value']:.2g}, {result['items']} items)")
    return (f"{rule['title']}: accuracy {rule['accuracy']:.3f} against chance {rule['chance']:.3f} "
            f"(margin {rule['margin']:.2f}, p = {rule['p_value']:.2g}, {rule['items_scored']} items)")


def markdown(result: dict, task: str) -> str:
    """The audit as a Markdown table for the build summary and the card."""
    if not result.get("items"):
        return f"Shortcut audit of {task}: no items."
    ranking = result["kind"] == "ranking"
    head = ("| rule | mean Spearman with gold | chance | p | result |\n| --- | ---: | ---: | ---: | --- |" if ranking else
            "| rule | accuracy | chance | p | result |\n| --- | ---: | ---: | ---: | --- |")
    lines = [f"Shortcut audit of {task} ({result['items']} items; a rule fails when it beats chance by more than "
             f"{result['margin']:.2f} with p < {result['alpha']}):", "", head]
    for rule in result["rules"]:
        if rule.get("exempt"):
            verdict = f"reported ({rule['exempt']})"
        elif rule["beats_chance"]:
            verdict = "**beats chance**" + (" (allowed by --allow-shortcuts)" if result.get("allowed_by_user") else "")
        else:
            verdict = "ok"
        value = rule["mean_spearman"] if ranking else rule["accuracy"]
        p = "" if rule["p_value"] is None else f"{rule['p_value']:.2g}"
        lines.append(f"| {rule['title']} | {value:.3f} | {rule['chance']:.3f} | {p} | {verdict} |")
    if ranking:
        lines += ["", f"Mean |Spearman(length, gold order)| per item: {result['mean_abs_spearman_length_gold']:.3f} "
                      f"(signed mean {result['mean_spearman_length_gold']:+.3f}; "
                      f"{result['independence_mean_abs_spearman']} when length and order are independent). "
                      "Position of the first item of the gold order: "
                      + ", ".join(f"{int(k) + 1}: {v}" for k, v in result["first_in_gold_order_positions"].items()) + "."]
    else:
        lines += ["", "Gold answers per position: "
                      + ", ".join(f"{int(k) + 1}: {v}" for k, v in result["gold_positions"].items()) + "."]
    if result.get("enforced") is False:
        lines.append(f"Reported, not enforced: {result['not_enforced_because']}.")
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """The `--allow-shortcuts` option, for builders that enforce the audit."""
    parser.add_argument(ALLOW_OPTION, action="store_true", dest="allow_shortcuts",
                        help="build even when the shortcut audit finds a trivial rule (longest/shortest option, lexical "
                             "overlap, answer position) beating chance by more than its margin; the audit is recorded")


__all__ = ["ALPHA", "ALLOW_OPTION", "MARGIN", "RANKING_MARGIN", "Choice", "Ranking", "add_arguments", "audit_choices",
           "audit_rankings", "binomial_upper_tail", "enforce", "failing", "markdown", "record", "refuse"]
