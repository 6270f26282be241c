"""MHER construction rules (paper section 4), as pure functions on a `Registry`.

Order of the build (nothing here looks at a model or at any evaluation output):

1. primary entities: confirmed persons with at least one mention;
2. exact-surface hard-negative components: persons sharing a surface (the same
   `surface_key`: NFKC, casefold and the script-aware folds of text.py) are linked, and
   each connected component goes to one split;
3. entity-disjoint DEV/TEST split of the components (seeded, default 17/84 to DEV);
   confirmed persons cited by an expert-unresolved question (a TEST-only set) are placed
   in TEST with their component (`unresolved_placement="test"`), or such a registry is
   refused when the seeded split would put one in DEV (`"refuse"`);
4. name-only pairs per split: same pairs from two mentions of one person (pairs with
   identical surfaces are dropped: they are duplicates, not reconciliation questions), at
   most `cap` per person; different pairs with identical-surface ones first, then
   near-surface ones, then a seeded random draw, at most `cap` per unordered pair of
   persons, as many as same pairs. Balance is kept: when a split has more
   identical-surface different pairs than same pairs, a seeded subset spread over the
   pairs of persons is kept (`identical_surface_overflow="drop"`, counted) or the build
   stops with the counts (`"fail"`);
5. challenge labels (before any evaluation): cross-language, cross-script,
   near-surface (different persons whose folded surfaces are at least
   `near_surface_threshold` similar, identical surfaces included), identical-surface;
6. mention contexts from mention x source evidence, after excluding evidence that states
   equivalence, names the person otherwise than by the side's own surface, or is copied
   between mentions;
7. the source-grounded subset: every name-only same pair whose sides both have context
   and independent evidence sources; identical-surface different pairs obligatorily (the
   same balance rule as in 4); the other different pairs ranked by a frozen rule
   (character 2-5-gram TF-IDF cosine of the two contexts, highest first, i.e. the most
   contextually confusable). An empty subset is an error naming the rules that emptied it;
8. three deterministic derangements A/B/C of each split's context pool.

`check_entity_disjointness` re-checks the finished configs: no person in both splits.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from histbench.core.errors import BuildError, SourceError

from .registry import Evidence, Mention, Registry
from .text import (
    NEAR_SURFACE_THRESHOLD,
    CueList,
    find_names,
    normalise,
    phrase_pattern,
    surface_key,
    surface_similarity,
)

SPLITS = ("dev", "test")
LABELS = ("same", "different")
DERANGEMENTS = ("A", "B", "C")
CHALLENGES = ("cross_language", "cross_script", "near_surface", "identical_surface")
NAME_MASK = "[name withheld]"
OVERFLOW_RULES = ("drop", "fail")
MAX_DETAILS = 20
PLACEMENT_RULES = ("test", "refuse")

# Sub-seeds: every random step draws from its own stream, so changing one step never
# shifts another.
_STEP = {"split": 1, "same": 2, "different": 3, "order": 4, "sides": 5, "keys": 6, "balance": 7, "derange": 8}


def rng_for(seed: int, step: str, *extra: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), _STEP[step], *extra])


@dataclass(frozen=True)
class BuildOptions:
    seed: int = 0
    dev_fraction: float = 17 / 84
    max_pairs_per_entity_pair: int = 3
    near_surface_threshold: float = NEAR_SURFACE_THRESHOLD
    identical_surface_overflow: str = "drop"      # or "fail"
    unresolved_placement: str = "test"            # or "refuse"

    def __post_init__(self) -> None:
        if self.identical_surface_overflow not in OVERFLOW_RULES:
            raise BuildError(f"identical_surface_overflow must be one of {', '.join(OVERFLOW_RULES)}, "
                             f"not {self.identical_surface_overflow!r}")
        if self.unresolved_placement not in PLACEMENT_RULES:
            raise BuildError(f"unresolved_placement must be one of {', '.join(PLACEMENT_RULES)}, "
                             f"not {self.unresolved_placement!r}")


# ---------------------------------------------------------------------------- entities


def primary_persons(registry: Registry) -> list[str]:
    """Confirmed persons with at least one mention, in registry order."""
    with_mentions = {m.person_id for m in registry.mentions.values()}
    return [pid for pid, p in registry.persons.items() if p.status == "confirmed" and pid in with_mentions]


def hard_negative_components(registry: Registry, persons: list[str]) -> list[list[str]]:
    """Connected components of persons linked by a shared surface key (identical surfaces)."""
    parent = {p: p for p in persons}

    def find(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    by_surface: dict[str, set[str]] = defaultdict(set)
    for mention in registry.mentions.values():
        if mention.person_id in parent:
            by_surface[surface_key(mention.surface)].add(mention.person_id)
    for owners in by_surface.values():
        owners = sorted(owners)
        for other in owners[1:]:
            parent[find(other)] = find(owners[0])
    groups: dict[str, list[str]] = defaultdict(list)
    for p in persons:
        groups[find(p)].append(p)
    order = {p: i for i, p in enumerate(persons)}
    return sorted((sorted(g, key=order.get) for g in groups.values()), key=lambda g: order[g[0]])


def split_entities(components: list[list[str]], seed: int, dev_fraction: float,
                   pinned_test: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """Person -> 'dev' | 'test'. Components are shuffled (seeded) and go to DEV while it
    stays within round(n * dev_fraction) persons; a component never straddles splits.
    A component holding a person of `pinned_test` goes to TEST (it still counts in n)."""
    if not 0.0 < dev_fraction < 1.0:
        raise BuildError(f"--dev-fraction must be between 0 and 1, got {dev_fraction}")
    total = sum(len(c) for c in components)
    target = int(round(total * dev_fraction))
    if total >= 2:
        target = min(max(target, 1), total - 1)
    order = rng_for(seed, "split").permutation(len(components))
    assignment: dict[str, str] = {}
    dev_count = 0
    for index in order:
        component = components[index]
        pinned = any(person in pinned_test for person in component)
        split = "dev" if not pinned and dev_count + len(component) <= target else "test"
        if split == "dev":
            dev_count += len(component)
        for person in component:
            assignment[person] = split
    return assignment


def unresolved_citations(registry: Registry, persons: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Primary person -> [(question_id, mention_id)] for every expert-unresolved question
    that cites one of the person's mentions."""
    primary = set(persons)
    cited: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for question in registry.unresolved:
        for mention_id in (question.mention_a, question.mention_b):
            person = registry.mentions[mention_id].person_id
            if person in primary:
                cited[person].append((question.question_id, mention_id))
    return dict(cited)


def split_with_unresolved(registry: Registry, components: list[list[str]], persons: list[str],
                          options: BuildOptions) -> tuple[dict[str, str], dict[str, list[tuple[str, str]]]]:
    """The entity split with the expert-unresolved rule applied (module docstring, step 3).
    Returns the split and the cited persons that were placed in TEST by the rule (those the
    seeded draw would have put in DEV), with the questions citing them."""
    cited = unresolved_citations(registry, persons)
    free = split_entities(components, options.seed, options.dev_fraction)
    moved = {p: cited[p] for p in sorted(cited) if free[p] == "dev"}
    if not moved:
        return free, {}
    if options.unresolved_placement == "refuse":
        raise BuildError(
            f"{len(moved)} DEV person(s) are cited by expert-unresolved questions, which are TEST-only: no "
            "person may occur in both splits (pass --unresolved-placement test to place them in TEST)",
            file=registry.folder,
            details=[f"person {p}: " + ", ".join(f"question {q} cites mention {m}" for q, m in refs)
                     for p, refs in moved.items()],
        )
    return split_entities(components, options.seed, options.dev_fraction, pinned_test=set(cited)), moved


# ---------------------------------------------------------------------------- pairs


@dataclass
class Pair:
    split: str
    a: Mention
    b: Mention
    label: str
    similarity: float
    challenge: dict[str, bool]
    pair_id: str = ""
    selection: str = ""
    context_similarity: float | None = None

    @property
    def persons(self) -> tuple[str, str]:
        return self.a.person_id, self.b.person_id

    @property
    def entity_pair(self) -> tuple[str, str]:
        return tuple(sorted(self.persons))  # type: ignore[return-value]

    @property
    def mention_ids(self) -> tuple[str, str]:
        return tuple(sorted((self.a.mention_id, self.b.mention_id)))  # type: ignore[return-value]


def challenge_labels(a: Mention, b: Mention, label: str, similarity: float, threshold: float) -> dict[str, bool]:
    """Pair properties fixed before any evaluation (section 4.2).

    identical_surface and near_surface concern different-person pairs only (surface and
    identity point in opposite directions). near_surface includes identical surfaces: the
    paper's slices overlap (section 8.1 has GPT-5.6 Sol abstain on one near-surface and on
    one identical-surface item, section 8.3 on one paired item in all), see docs/mher.md.
    """
    identical = surface_key(a.surface) == surface_key(b.surface)
    different = label == "different"
    return {
        "cross_language": a.language.casefold() != b.language.casefold(),
        "cross_script": a.script.casefold() != b.script.casefold(),
        "near_surface": different and (identical or similarity >= threshold),
        "identical_surface": different and identical,
    }


def make_pair(split: str, a: Mention, b: Mention, threshold: float) -> Pair:
    a, b = sorted((a, b), key=lambda m: m.mention_id)
    label = "same" if a.person_id == b.person_id else "different"
    similarity = surface_similarity(a.surface, b.surface)
    return Pair(split, a, b, label, similarity, challenge_labels(a, b, label, similarity, threshold))


@dataclass
class NameOnlySelection:
    pairs: list[Pair]
    counts: dict


def spread_draw(pairs: list[Pair], keep: int, rng: np.random.Generator) -> list[Pair]:
    """`keep` pairs drawn (seeded) so that they spread over the unordered pairs of persons:
    round robin over the person pairs, in a random order within each."""
    order = rng.permutation(len(pairs))
    rank: Counter = Counter()
    keyed = []
    for position, index in enumerate(order):
        pair = pairs[index]
        keyed.append((rank[pair.entity_pair], position, pair))
        rank[pair.entity_pair] += 1
    keyed.sort(key=lambda item: (item[0], item[1]))
    kept = {id(item[2]) for item in keyed[:keep]}
    return [p for p in pairs if id(p) in kept]


def balance_identical(obligatory: list[Pair], n_same: int, options: BuildOptions, config: str, split: str,
                      counts: Counter, stream: int) -> list[Pair]:
    """Identical-surface different pairs are kept first, but never more than the same pairs
    (balance, Table 1): beyond that, `identical_surface_overflow` "drop" keeps a seeded
    spread subset (the rest counted), "fail" stops the build with the counts."""
    if len(obligatory) <= n_same:
        return obligatory
    if options.identical_surface_overflow == "fail":
        raise BuildError(
            f"{split.upper()} {config}: {len(obligatory)} identical-surface different pairs but only {n_same} same "
            "pairs; the pair sets cannot be balanced while keeping every identical-surface pair (pass "
            "--identical-surface-overflow drop to keep a seeded subset of them)",
            details=[f"{p.a.mention_id} / {p.b.mention_id} ({p.a.person_id} / {p.b.person_id})" for p in obligatory],
        )
    kept = spread_draw(obligatory, n_same, rng_for(options.seed, "balance", stream))  # streams 20+, 30+
    counts["different_identical_surface_dropped_for_balance"] += len(obligatory) - len(kept)
    return kept


def select_name_only(
    registry: Registry, split_of: dict[str, str], split: str, options: BuildOptions
) -> NameOnlySelection:
    persons = [p for p, s in split_of.items() if s == split]
    mentions = {p: sorted(registry.mentions_of(p), key=lambda m: m.mention_id) for p in persons}
    cap = options.max_pairs_per_entity_pair
    if cap < 1:
        raise BuildError(f"--max-pairs-per-entity-pair must be at least 1, got {cap}")
    counts: Counter = Counter()

    same: list[Pair] = []
    for index, person in enumerate(sorted(persons)):
        candidates = []
        for a, b in itertools.combinations(mentions[person], 2):
            if surface_key(a.surface) == surface_key(b.surface):
                counts["same_identical_surface_dropped"] += 1
                continue
            candidates.append(make_pair(split, a, b, options.near_surface_threshold))
        counts["same_candidates"] += len(candidates)
        order = rng_for(options.seed, "same", SPLITS.index(split), index).permutation(len(candidates))
        kept = [candidates[i] for i in order[:cap]]
        counts["same_over_cap"] += len(candidates) - len(kept)
        same.extend(kept)

    candidates = []
    for p, q in itertools.combinations(sorted(persons), 2):
        for a in mentions[p]:
            for b in mentions[q]:
                candidates.append(make_pair(split, a, b, options.near_surface_threshold))
    candidates.sort(key=lambda pair: pair.mention_ids)
    counts["different_candidates"] = len(candidates)
    per_entity_pair: Counter = Counter()
    chosen: list[Pair] = []
    target = len(same)

    def take(pool: list[Pair], reason: str, limit: int | None) -> None:
        for pair in pool:
            if limit is not None and len(chosen) >= limit:
                return
            if per_entity_pair[pair.entity_pair] >= cap:
                counts[f"different_{reason}_over_cap"] += 1
                continue
            per_entity_pair[pair.entity_pair] += 1
            pair.selection = reason
            chosen.append(pair)

    identical = [p for p in candidates if p.challenge["identical_surface"]]
    take(identical, "identical_surface", None)
    chosen = balance_identical(chosen, target, options, "name-only", split, counts, 20 + SPLITS.index(split))
    per_entity_pair = Counter(p.entity_pair for p in chosen)
    near = sorted(
        (p for p in candidates if p.challenge["near_surface"] and not p.challenge["identical_surface"]),
        key=lambda p: (-p.similarity, p.mention_ids),
    )
    take(near, "near_surface", target)
    taken = {id(p) for p in chosen}
    rest = [p for p in candidates if id(p) not in taken and not p.challenge["identical_surface"]]
    order = rng_for(options.seed, "different", SPLITS.index(split)).permutation(len(rest))
    take([rest[i] for i in order], "random", target)

    # Balance: too few different candidates -> the same pairs are cut back (seeded, counted)
    if len(same) > len(chosen):
        order = rng_for(options.seed, "balance", SPLITS.index(split)).permutation(len(same))
        counts["same_dropped_for_balance"] += len(same) - len(chosen)
        same = [same[i] for i in sorted(order[: len(chosen)])]
    for pair in same:
        pair.selection = "same"
    _check_balanced(same, chosen, "name-only", split)
    return NameOnlySelection(same + chosen, dict(counts))


def _check_balanced(same: list[Pair], different: list[Pair], config: str, split: str) -> None:
    if len(same) != len(different):  # the rules above make this impossible; a guard, not a rule
        raise BuildError(f"{split.upper()} {config}: {len(same)} same vs {len(different)} different pairs after "
                         "selection; the pair sets must be balanced")


def assign_pair_ids(pairs: list[Pair], split: str, seed: int) -> list[Pair]:
    """Shuffle (seeded) so that order and ids carry no label information, then number."""
    pairs = sorted(pairs, key=lambda p: p.mention_ids)
    order = rng_for(seed, "order", SPLITS.index(split)).permutation(len(pairs))
    ordered = [pairs[i] for i in order]
    flips = rng_for(seed, "sides", SPLITS.index(split)).random(len(ordered)) < 0.5
    for number, (pair, flip) in enumerate(zip(ordered, flips, strict=True), start=1):
        if flip:
            pair.a, pair.b = pair.b, pair.a
        pair.pair_id = f"{split}-{number:04d}"
    return ordered


def mention_keys(mention_ids: list[str], seed: int) -> dict[str, str]:
    """Opaque model-facing keys (M0001...) for mentions, in a seeded order."""
    ordered = sorted(set(mention_ids))
    order = rng_for(seed, "keys").permutation(len(ordered))
    width = max(4, len(str(len(ordered))))
    return {ordered[i]: f"M{n:0{width}d}" for n, i in enumerate(order, start=1)}


# ---------------------------------------------------------------------------- contexts


@dataclass
class MentionContext:
    mention_id: str
    evidence: list[Evidence]

    @property
    def text(self) -> str:
        return " ".join(e.text.strip() for e in self.evidence)

    @property
    def sources(self) -> set[str]:
        return {e.source_id for e in self.evidence}


@dataclass
class ContextResult:
    contexts: dict[str, MentionContext]
    excluded: list[dict] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(e["rule"] for e in self.excluded))


def evidence_key(text: str) -> str:
    """Normalised evidence text for duplicate detection (NFKC, casefold, spaces)."""
    return normalise(text)


def build_contexts(registry: Registry, cues: CueList) -> ContextResult:
    """Apply the evidence rules of sections 4.3-4.4 to every evidence row."""
    missing = sorted({e.language for e in registry.evidence} - cues.languages)
    if missing:
        first = next(e for e in registry.evidence if e.language in missing)
        raise SourceError(
            f"no equivalence-cue list for evidence language(s) {', '.join(missing)}; evidence in a language "
            "the leakage audit cannot read would go unchecked (add phrases with --equivalence-cues FILE)",
            file=first.where, field="language",
        )
    owners: dict[str, set[str]] = defaultdict(set)
    mentions_by_text: dict[str, set[str]] = defaultdict(set)
    for ev in registry.evidence:
        key = evidence_key(ev.text)
        owners[key].add(registry.mentions[ev.mention_id].person_id)
        mentions_by_text[key].add(ev.mention_id)
    names = {pid: registry.registered_names(pid) for pid in registry.persons}

    contexts: dict[str, MentionContext] = {}
    excluded: list[dict] = []
    for ev in registry.evidence:
        mention = registry.mentions[ev.mention_id]
        record = {"evidence_id": ev.evidence_id, "mention_id": ev.mention_id, "where": ev.where}
        hits = cues.find(ev.text)
        if hits:
            excluded.append({**record, "rule": "equivalence_cue", "detail": ", ".join(f"{h.language}: {h.phrase}" for h in hits)})
            continue
        leaked = find_names(ev.text, names[mention.person_id], exclude=[mention.surface])
        if leaked:
            excluded.append({**record, "rule": "alias_leakage", "detail": ", ".join(leaked)})
            continue
        key = evidence_key(ev.text)
        if len(mentions_by_text[key]) > 1:
            rule = "copied_between_persons" if len(owners[key]) > 1 else "copied_between_mentions"
            excluded.append({**record, "rule": rule, "detail": ", ".join(sorted(mentions_by_text[key]))})
            continue
        contexts.setdefault(ev.mention_id, MentionContext(ev.mention_id, [])).evidence.append(ev)
    return ContextResult(contexts, excluded)


def independent(registry: Registry, a: MentionContext, b: MentionContext) -> bool:
    """Two sides are independently sourced when no evidence source of one side is, or
    derives from (transitively), or is an ancestor of, an evidence source of the other."""
    ancestry_a = set().union(*(registry.source_ancestry(s) for s in a.sources))
    ancestry_b = set().union(*(registry.source_ancestry(s) for s in b.sources))
    return not (ancestry_a & ancestry_b)


def context_similarities(pairs: list[Pair], contexts: dict[str, MentionContext]) -> list[float]:
    """Character 2-5-gram TF-IDF cosine of the two contexts, fitted on the pairs' own
    contexts (the frozen, model-independent confusability rule)."""
    if not pairs:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = sorted({contexts[m].text for p in pairs for m in (p.a.mention_id, p.b.mention_id)})
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True).fit(texts)
    left = vectorizer.transform([contexts[p.a.mention_id].text for p in pairs])
    right = vectorizer.transform([contexts[p.b.mention_id].text for p in pairs])
    return [float(v) for v in np.asarray(left.multiply(right).sum(axis=1)).ravel()]


@dataclass
class GroundedSelection:
    pairs: list[Pair]
    counts: dict
    without_context: list[tuple[Pair, list[str]]] = field(default_factory=list)  # (pair, mentions lacking it)


def select_source_grounded(
    registry: Registry, pairs: list[Pair], contexts: dict[str, MentionContext], split: str, options: BuildOptions
) -> GroundedSelection:
    counts: Counter = Counter()
    same, different = [], []
    without_context = []
    for pair in pairs:
        ca, cb = contexts.get(pair.a.mention_id), contexts.get(pair.b.mention_id)
        if ca is None or cb is None:
            counts[f"{pair.label}_without_context"] += 1
            without_context.append((pair, [m.mention_id for m, c in ((pair.a, ca), (pair.b, cb)) if c is None]))
            continue
        if pair.label == "same":
            if not independent(registry, ca, cb):
                counts["same_not_independent"] += 1
                continue
            same.append(pair)
        else:
            different.append(pair)
    for pair, value in zip(different, context_similarities(different, contexts), strict=True):
        pair.context_similarity = value
    for pair, value in zip(same, context_similarities(same, contexts), strict=True):
        pair.context_similarity = value
    obligatory = balance_identical([p for p in different if p.challenge["identical_surface"]], len(same), options,
                                   "source-grounded", split, counts, 30 + SPLITS.index(split))
    ranked = sorted(
        (p for p in different if not p.challenge["identical_surface"]),
        key=lambda p: (-(p.context_similarity or 0.0), p.pair_id),
    )
    keep = max(len(same) - len(obligatory), 0)
    chosen = obligatory + ranked[:keep]
    counts["different_eligible_not_selected"] += len(ranked) - min(keep, len(ranked))
    if len(same) > len(chosen):
        order = rng_for(options.seed, "balance", 10 + SPLITS.index(split)).permutation(len(same))
        counts["same_dropped_for_balance"] += len(same) - len(chosen)
        same = [same[i] for i in sorted(order[: len(chosen)])]
    for pair in obligatory:
        pair.selection = "identical_surface_obligatory"
    for pair in ranked[:keep]:
        pair.selection = "context_confusable"
    _check_balanced(same, chosen, "source-grounded", split)
    selected = sorted(same + chosen, key=lambda p: p.pair_id)
    return GroundedSelection(selected, dict(counts), without_context)


def empty_grounded_error(split: str, selection: GroundedSelection, n_same: int, context_result: ContextResult,
                         registry: Registry) -> BuildError:
    """The error for an empty Source-grounded subset, naming the rules that removed it:
    for the same pairs without context on a side, the evidence rules that excluded the
    evidence of that side (or that it has no evidence row at all)."""
    rules_of: dict[str, Counter] = defaultdict(Counter)
    for excluded in context_result.excluded:
        rules_of[excluded["mention_id"]][excluded["rule"]] += 1
    by_rule: Counter = Counter()
    lacking: set[str] = set()
    for pair, mentions in selection.without_context:
        if pair.label != "same":
            continue
        lacking.update(mentions)
        reasons = set()
        for mention in mentions:
            reasons.update(rules_of[mention] or {"no evidence row": 1})
        for reason in reasons:
            by_rule[reason] += 1
    counts = selection.counts
    parts = []
    if counts.get("same_without_context"):
        rules = ", ".join(f"{rule}: {n}" for rule, n in by_rule.most_common())
        parts.append(f"{counts['same_without_context']} lost the context of a side (evidence rule that removed it, "
                     f"pairs: {rules})")
    if counts.get("same_not_independent"):
        parts.append(f"{counts['same_not_independent']} are not independently sourced (source independence, "
                     "derived_from)")
    if not parts and n_same:
        parts.append(f"no different pair has context on both sides ({counts.get('different_without_context', 0)} "
                     "without), so balance removed the same pairs")
    reason = "; ".join(parts) if parts else "the split has no name-only same pair"
    return BuildError(
        f"{split.upper()} has no Source-grounded pairs: of its {n_same} name-only same pairs, {reason}. The "
        "paired conditions (Context-only, Source-grounded, shuffled) and the baselines need them in DEV and TEST",
        file=registry.folder,
        details=[f"{e['where']}: evidence {e['evidence_id']} of mention {e['mention_id']} excluded by {e['rule']}"
                 f" ({e['detail']})" for e in context_result.excluded if e["mention_id"] in lacking][:MAX_DETAILS],
    )


def mask_own_surface(text: str, surface: str) -> tuple[str, int]:
    """Replace the side's own surface in its context by NAME_MASK (Context-only hides
    names); matching is case-insensitive on the NFKC text, with the same word-boundary
    rule as the alias check. Returns the text and the number of replacements."""
    pattern = re.compile(phrase_pattern(surface, allow_prefix=False).pattern, re.IGNORECASE)
    masked, count = pattern.subn(NAME_MASK, unicodedata.normalize("NFKC", text))
    return (masked, count) if count else (text, 0)


# ---------------------------------------------------------------------------- derangements


@dataclass(frozen=True)
class Slot:
    pair_index: int
    side: str          # "a" or "b"
    mention_id: str
    person_id: str
    text: str


def derangements(
    registry: Registry, pairs: list[Pair], contexts: dict[str, MentionContext], split: str, seed: int,
    count: int = len(DERANGEMENTS),
) -> list[dict[int, int]]:
    """`count` derangements of the split's context slots (slot -> donor slot).

    Constraints: no fixed point; the donor context never belongs to either person of the
    receiving item (no self-donation); it names no registered name of either person of
    the receiving item (no alias leakage). Each context is used exactly once (the pool is
    preserved). Later derangements avoid donors used for the same slot earlier when
    possible. Solved as a seeded random-cost assignment (scipy linear_sum_assignment).
    """
    from scipy.optimize import linear_sum_assignment

    slots = []
    for index, pair in enumerate(pairs):
        for side, mention in (("a", pair.a), ("b", pair.b)):
            slots.append(Slot(index, side, mention.mention_id, mention.person_id, contexts[mention.mention_id].text))
    n = len(slots)
    if n == 0:
        return [{} for _ in range(count)]
    item_persons = {p for pair in pairs for p in pair.persons}
    names = {pid: registry.registered_names(pid) for pid in item_persons}
    # which persons of the pool each context names (n x P checks instead of n x n)
    named = [{pid for pid in item_persons if find_names(slot.text, names[pid])} for slot in slots]
    allowed = np.ones((n, n), dtype=bool)
    for r, recipient in enumerate(slots):
        persons = set(pairs[recipient.pair_index].persons)
        for d, donor in enumerate(slots):
            if d == r or donor.person_id in persons or donor.pair_index == recipient.pair_index or named[d] & persons:
                allowed[r, d] = False
    results: list[dict[int, int]] = []
    used = np.zeros((n, n), dtype=bool)
    forbidden_cost, reuse_cost = 1e9, 1e4
    for r_index in range(count):
        costs = rng_for(seed, "derange", SPLITS.index(split), r_index).random((n, n))
        costs = np.where(allowed, costs, forbidden_cost) + np.where(used, reuse_cost, 0.0)
        rows, cols = linear_sum_assignment(costs)
        if not allowed[rows, cols].all():
            raise BuildError(
                f"{split}: no derangement {DERANGEMENTS[r_index]} of the {n} source-grounded contexts satisfies "
                "the rules (no fixed point, no self-donation, no alias leakage); the split's context pool is "
                "too small or too homogeneous"
            )
        mapping = {int(r): int(c) for r, c in zip(rows, cols, strict=True)}
        used[rows, cols] = True
        results.append(mapping)
    return results


def derangement_slots(pairs: list[Pair], contexts: dict[str, MentionContext]) -> list[Slot]:
    slots = []
    for index, pair in enumerate(pairs):
        for side, mention in (("a", pair.a), ("b", pair.b)):
            slots.append(Slot(index, side, mention.mention_id, mention.person_id, contexts[mention.mention_id].text))
    return slots


# ---------------------------------------------------------------------------- disjointness


def persons_in_record(config: str, record: dict, key_person: dict[str, str]) -> list[tuple[str, str]]:
    """(person, where) for every person a finished record involves: both persons of a pair
    or question, the donor of each shuffled context, the person behind an entity row."""
    if config == "entities":
        return [(key_person[record["key"]], f"entities {record['key']}")]
    item = record.get("pair_id") or record.get("question_id")
    found = [(record["person_a"], f"{config} {item}"), (record["person_b"], f"{config} {item}")]
    if config.startswith("shuffled"):
        for side in ("a", "b"):
            found.append((record[side]["donor"]["person"], f"{config} {item} (context donated to side {side})"))
    return found


def check_entity_disjointness(configs: dict[str, dict[str, list[dict]]], key_person: dict[str, str],
                              folder=None) -> None:
    """Section 4.2: no historical person occurs in both DEV and TEST, in any config. Raises
    a BuildError naming each such person and where it occurs on either side."""
    where: dict[str, dict[str, list[str]]] = {split: defaultdict(list) for split in SPLITS}
    for config, splits in configs.items():
        for split, records in splits.items():
            for record in records:
                for person, place in persons_in_record(config, record, key_person):
                    where[split][person].append(place)
    both = sorted(set(where["dev"]) & set(where["test"]))
    if both:
        raise BuildError(
            f"{len(both)} person(s) occur in both DEV and TEST; the splits must be entity-disjoint (section 4.2)",
            file=folder,
            details=[f"person {p}: DEV in {', '.join(where['dev'][p][:3])}; TEST in {', '.join(where['test'][p][:3])}"
                     for p in both][:MAX_DETAILS],
        )
