"""The MHER builder: registry folder -> name_only, context_only, source_grounded,
shuffled_a/b/c, unresolved and entities configs (paper section 4, Table 1)."""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from histbench.builders.machinery.build import BenchmarkBuilder, BuildContext
from histbench.builders.machinery.writer import BuildOutput
from histbench.core.errors import BuildError, UsageError

from . import construct as C
from .audit import AUDIT_MIN_DEV_ITEMS, SHORTCUT_CEILINGS, audit_failures, audit_markdown, run_audit
from .registry import Mention, Registry, read_registry
from .text import NEAR_SURFACE_THRESHOLD, CueList

CUES_FILE = "equivalence_cues.yaml"
CONFIGS = ("name_only", "context_only", "source_grounded", "shuffled_a", "shuffled_b", "shuffled_c",
           "unresolved", "entities")


def _side(mention: Mention, keys: dict[str, str], transcription: bool = True) -> dict:
    side = {"key": keys[mention.mention_id], "surface": mention.surface, "language": mention.language,
            "script": mention.script}
    if transcription:
        side["transcription"] = mention.transcription
    return side


def _hidden(pair: C.Pair, registry: Registry) -> dict:
    pa, pb = pair.persons
    return {
        "label": pair.label,
        "person_a": pa,
        "person_b": pb,
        "prominence_a": registry.persons[pa].prominence,
        "prominence_b": registry.persons[pb].prominence,
        "challenge": dict(pair.challenge),
    }


def _evidence_list(registry: Registry, context: C.MentionContext) -> list[dict]:
    out = []
    for ev in context.evidence:
        source = registry.sources[ev.source_id]
        out.append({"evidence_id": ev.evidence_id, "source_id": ev.source_id, "citation": source.citation,
                    "locator": ev.locator or source.locator, "kind": ev.kind})
    return out


def build_mher(registry: Registry, cues: CueList, options: C.BuildOptions,
               ceilings: dict[str, float] | None = None, audit_min_items: int = AUDIT_MIN_DEV_ITEMS):
    """Returns (configs, summary, summary_markdown). Raises BuildError when the audit fails."""
    persons = C.primary_persons(registry)
    if len(persons) < 4:
        raise BuildError(f"the registry has {len(persons)} confirmed person(s) with mentions; MHER needs at least 4 "
                         "(two per split) to form same and different pairs", file=registry.folder)
    components = C.hard_negative_components(registry, persons)
    split_of, placed_in_test = C.split_with_unresolved(registry, components, persons, options)

    name_pairs: dict[str, list[C.Pair]] = {}
    name_counts: dict[str, dict] = {}
    for split in C.SPLITS:
        selection = C.select_name_only(registry, split_of, split, options)
        name_pairs[split] = C.assign_pair_ids(selection.pairs, split, options.seed)
        name_counts[split] = selection.counts
        if not name_pairs[split]:
            raise BuildError(f"no name-only pairs could be formed in {split.upper()}: the split needs persons with "
                             "two or more distinct surface forms", file=registry.folder)

    context_result = C.build_contexts(registry, cues)
    contexts = context_result.contexts
    grounded: dict[str, list[C.Pair]] = {}
    grounded_counts: dict[str, dict] = {}
    for split in C.SPLITS:
        selection = C.select_source_grounded(registry, name_pairs[split], contexts, split, options)
        if not selection.pairs:
            n_same = sum(1 for p in name_pairs[split] if p.label == "same")
            raise C.empty_grounded_error(split, selection, n_same, context_result, registry)
        grounded[split], grounded_counts[split] = selection.pairs, selection.counts

    used_mentions = [m for pairs in name_pairs.values() for p in pairs for m in (p.a.mention_id, p.b.mention_id)]
    used_mentions += [m for q in registry.unresolved for m in (q.mention_a, q.mention_b)]
    keys = C.mention_keys(used_mentions, options.seed)

    configs: dict[str, dict[str, list[dict]]] = {c: {} for c in CONFIGS}
    in_grounded = {p.pair_id for pairs in grounded.values() for p in pairs}
    masked_total = 0
    for split in C.SPLITS:
        configs["name_only"][split] = [
            {"pair_id": p.pair_id, "a": _side(p.a, keys), "b": _side(p.b, keys), **_hidden(p, registry),
             "surface_similarity": round(p.similarity, 4), "in_source_grounded": p.pair_id in in_grounded}
            for p in name_pairs[split]
        ]
        sg, co = [], []
        for p in grounded[split]:
            ca, cb = contexts[p.a.mention_id], contexts[p.b.mention_id]
            sg.append({
                "pair_id": p.pair_id,
                "a": {**_side(p.a, keys, transcription=False), "context": ca.text, "evidence": _evidence_list(registry, ca)},
                "b": {**_side(p.b, keys, transcription=False), "context": cb.text, "evidence": _evidence_list(registry, cb)},
                **_hidden(p, registry),
                "surface_similarity": round(p.similarity, 4),
                "context_similarity": round(float(p.context_similarity or 0.0), 6),
                "selection": p.selection,
            })
            text_a, count_a = C.mask_own_surface(ca.text, p.a.surface)
            text_b, count_b = C.mask_own_surface(cb.text, p.b.surface)
            masked_total += count_a + count_b
            co.append({"pair_id": p.pair_id, "context_a": text_a, "context_b": text_b, **_hidden(p, registry),
                       "masked_names": count_a + count_b})
        configs["source_grounded"][split] = sg
        configs["context_only"][split] = co

        slots = C.derangement_slots(grounded[split], contexts)
        for r_name, mapping in zip(C.DERANGEMENTS, C.derangements(registry, grounded[split], contexts, split,
                                                                   options.seed), strict=True):
            records = []
            for index, p in enumerate(grounded[split]):
                sides = {}
                for side_name, mention in (("a", p.a), ("b", p.b)):
                    r = next(i for i, s in enumerate(slots) if s.pair_index == index and s.side == side_name)
                    donor = slots[mapping[r]]
                    donor_pair = grounded[split][donor.pair_index]
                    sides[side_name] = {
                        **_side(mention, keys, transcription=False), "context": donor.text,
                        "donor": {"pair_id": donor_pair.pair_id, "side": donor.side, "person": donor.person_id},
                    }
                records.append({"pair_id": p.pair_id, "derangement": r_name, **sides, **_hidden(p, registry)})
            configs[f"shuffled_{r_name.lower()}"][split] = records

    configs["unresolved"]["test"] = [
        {"question_id": q.question_id,
         "a": _side(registry.mentions[q.mention_a], keys), "b": _side(registry.mentions[q.mention_b], keys),
         "person_a": registry.mentions[q.mention_a].person_id, "person_b": registry.mentions[q.mention_b].person_id,
         "scholarly_note": q.note}
        for q in registry.unresolved
    ]

    grounded_context = {}
    for split in C.SPLITS:
        for rec in configs["source_grounded"][split]:
            for side in ("a", "b"):
                grounded_context[(split, rec[side]["key"])] = rec[side]["context"]
    for split in C.SPLITS:
        mention_ids = {m for p in name_pairs[split] for m in (p.a.mention_id, p.b.mention_id)}
        if split == "test":
            mention_ids |= {m for q in registry.unresolved for m in (q.mention_a, q.mention_b)}
        rows = []
        for mid in sorted(mention_ids, key=keys.get):
            m = registry.mentions[mid]
            rows.append({"key": keys[mid], "surface": m.surface, "language": m.language, "script": m.script,
                         "context": grounded_context.get((split, keys[mid]))})
        configs["entities"][split] = rows

    key_person = {key: registry.mentions[mid].person_id for mid, key in keys.items()}
    C.check_entity_disjointness(configs, key_person, registry.folder)
    audit = run_audit({c: configs[c] for c in CONFIGS}, registry, cues, ceilings, audit_min_items,
                      {key: mid for mid, key in keys.items()})
    summary = _summary(registry, persons, components, split_of, name_pairs, name_counts, grounded, grounded_counts,
                       context_result, configs, masked_total, audit, options, placed_in_test)
    markdown = _summary_markdown(summary, audit)
    if not audit["passed"]:
        raise BuildError("the leakage audit failed; nothing was written", file=registry.folder,
                         details=audit_failures(audit))
    return configs, summary, markdown


def _summary(registry, persons, components, split_of, name_pairs, name_counts, grounded, grounded_counts,
             context_result, configs, masked_total, audit, options, placed_in_test) -> dict:
    def label_counts(pairs):
        c = Counter(p.label for p in pairs)
        return {"total": len(pairs), "same": c["same"], "different": c["different"]}

    entities = {s: sum(1 for p in persons if split_of[p] == s) for s in C.SPLITS}
    table1 = {
        "primary_entities": {**entities, "total": len(persons)},
        "name_only": {s: label_counts(name_pairs[s]) for s in C.SPLITS},
        "source_grounded": {s: label_counts(grounded[s]) for s in C.SPLITS},
        "context_only": {s: len(grounded[s]) for s in C.SPLITS},
        "shuffled_per_derangement": {s: len(grounded[s]) for s in C.SPLITS},
        "unresolved": {"test": len(registry.unresolved)},
    }
    slices = {}
    for config, pairs in (("name_only", name_pairs), ("source_grounded", grounded)):
        slices[config] = {s: {c: sum(1 for p in pairs[s] if p.challenge[c]) for c in C.CHALLENGES} for s in C.SPLITS}
    prominence = {s: dict(Counter(registry.persons[p].prominence for p in persons if split_of[p] == s))
                  for s in C.SPLITS}
    status = Counter(p.status for p in registry.persons.values())
    without_mentions = [pid for pid, p in registry.persons.items()
                        if p.status == "confirmed" and pid not in set(persons)]
    mentions_of_unresolved = sum(1 for m in registry.mentions.values()
                                 if registry.persons[m.person_id].status != "confirmed")
    return {
        "table1": table1,
        "registry": {
            "files": registry.files, "persons": len(registry.persons), "confirmed": status["confirmed"],
            "unresolved_persons": status["unresolved"], "mentions": len(registry.mentions),
            "sources": len(registry.sources), "evidence_rows": len(registry.evidence),
            "unresolved_questions": len(registry.unresolved),
            "aliases": sum(len(v) for v in registry.aliases.values()),
        },
        "split": {
            "seed": options.seed, "dev_fraction": options.dev_fraction,
            "hard_negative_components": [c for c in components if len(c) > 1],
            "dev_entities": sorted(p for p in persons if split_of[p] == "dev"),
            "unresolved_placement": options.unresolved_placement,
            "placed_in_test_for_unresolved": {p: [{"question_id": q, "mention_id": m} for q, m in refs]
                                              for p, refs in placed_in_test.items()},
        },
        "pairs": {
            "max_pairs_per_entity_pair": options.max_pairs_per_entity_pair,
            "near_surface_threshold": options.near_surface_threshold,
            "identical_surface_overflow": options.identical_surface_overflow,
            "name_only": name_counts, "source_grounded": grounded_counts,
        },
        "exclusions": {
            "unresolved_persons_outside_binary_core": status["unresolved"],
            "mentions_of_unresolved_persons": mentions_of_unresolved,
            "confirmed_persons_without_mentions": without_mentions,
            "evidence_rows_excluded": context_result.counts(),
            "mentions_with_context": len(context_result.contexts),
            "mentions_without_context": len(registry.mentions) - len(context_result.contexts),
            "own_surface_masked_in_context_only": masked_total,
        },
        "evidence_excluded": context_result.excluded,
        "challenge_slices": slices,
        "prominence_entities": prominence,
        "leakage_audit": audit,
        "options": asdict(options),
    }


def _summary_markdown(summary: dict, audit: dict) -> str:
    t = summary["table1"]
    no, sg = t["name_only"], t["source_grounded"]

    def row(name, dev, test):
        total = (dev if isinstance(dev, int) else 0) + (test if isinstance(test, int) else 0)
        return f"| {name} | {dev} | {test} | {total} |"

    lines = [
        "Benchmark composition (the layout of the paper's Table 1):",
        "",
        "| component | DEV | TEST | total |",
        "| --- | ---: | ---: | ---: |",
        row("Primary entities", t["primary_entities"]["dev"], t["primary_entities"]["test"]),
        row("Name-only pairs", no["dev"]["total"], no["test"]["total"]),
        row("&nbsp;&nbsp;same", no["dev"]["same"], no["test"]["same"]),
        row("&nbsp;&nbsp;different", no["dev"]["different"], no["test"]["different"]),
        row("Source-grounded pairs", sg["dev"]["total"], sg["test"]["total"]),
        row("&nbsp;&nbsp;same", sg["dev"]["same"], sg["test"]["same"]),
        row("&nbsp;&nbsp;different", sg["dev"]["different"], sg["test"]["different"]),
        row("Context-only", t["context_only"]["dev"], t["context_only"]["test"]),
        f"| Shuffled context A/B/C | 3 x {t['shuffled_per_derangement']['dev']} | "
        f"3 x {t['shuffled_per_derangement']['test']} | "
        f"{3 * (t['shuffled_per_derangement']['dev'] + t['shuffled_per_derangement']['test'])} |",
        f"| Expert-unresolved | - | {t['unresolved']['test']} | {t['unresolved']['test']} |",
        "",
    ]
    ex = summary["exclusions"]
    evidence = ex["evidence_rows_excluded"]
    nc, gc = summary["pairs"]["name_only"], summary["pairs"]["source_grounded"]

    def both(counts, key):
        return sum(counts[s].get(key, 0) for s in C.SPLITS)

    lines += [
        "What the construction rules excluded (every count, nothing silent):",
        "",
        "| rule | count |",
        "| --- | ---: |",
        f"| persons with unresolved status (outside the binary core) | {ex['unresolved_persons_outside_binary_core']} |",
        f"| confirmed persons without any mention | {len(ex['confirmed_persons_without_mentions'])} |",
        f"| same-person pairs with identical surfaces (the surface key: NFKC, casefold, script-aware folds) | {both(nc, 'same_identical_surface_dropped')} |",
        f"| same pairs over the per-entity-pair cap ({summary['pairs']['max_pairs_per_entity_pair']}) | "
        f"{both(nc, 'same_over_cap')} |",
        f"| same pairs dropped to balance name-only | {both(nc, 'same_dropped_for_balance')} |",
        f"| identical-surface different pairs dropped to balance name-only (more than same pairs) | "
        f"{both(nc, 'different_identical_surface_dropped_for_balance')} |",
        f"| evidence rows stating equivalence (cue list) | {evidence.get('equivalence_cue', 0)} |",
        f"| evidence rows naming the person by another registered name | {evidence.get('alias_leakage', 0)} |",
        f"| evidence rows copied between persons | {evidence.get('copied_between_persons', 0)} |",
        f"| evidence rows copied between mentions of one person | {evidence.get('copied_between_mentions', 0)} |",
        f"| mentions left without model-visible context | {ex['mentions_without_context']} |",
        f"| name-only same pairs without context on a side | {both(gc, 'same_without_context')} |",
        f"| name-only same pairs not independently sourced | {both(gc, 'same_not_independent')} |",
        f"| name-only different pairs without context on a side | {both(gc, 'different_without_context')} |",
        f"| eligible different pairs not selected (less confusable contexts) | "
        f"{both(gc, 'different_eligible_not_selected')} |",
        f"| source-grounded same pairs dropped to balance | {both(gc, 'same_dropped_for_balance')} |",
        f"| source-grounded identical-surface different pairs dropped to balance | "
        f"{both(gc, 'different_identical_surface_dropped_for_balance')} |",
        f"| persons placed in TEST because an expert-unresolved question cites them | "
        f"{len(summary['split']['placed_in_test_for_unresolved'])} |",
        f"| own surface forms masked in Context-only contexts | {ex['own_surface_masked_in_context_only']} |",
        "",
        "Challenge slices (assigned at build time, before any evaluation):",
        "",
        "| config | split | cross-language | cross-script | near-surface | identical-surface |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for config, splits in summary["challenge_slices"].items():
        for split, counts in splits.items():
            lines.append(f"| {config} | {split} | {counts['cross_language']} | {counts['cross_script']} | "
                         f"{counts['near_surface']} | {counts['identical_surface']} |")
    lines += ["", "Leakage audit:", "", audit_markdown(audit)]
    return "\n".join(lines)


def _parse_ceiling(text: str) -> tuple[str, float]:
    name, _, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if name not in SHORTCUT_CEILINGS or not value:
        raise UsageError(f"--shortcut-ceiling expects NAME=VALUE with NAME one of {', '.join(SHORTCUT_CEILINGS)}")
    try:
        number = float(value)
    except ValueError as exc:
        raise UsageError(f"--shortcut-ceiling {name}: {value!r} is not a number") from exc
    return name, number


class MherBuilder(BenchmarkBuilder):
    name = "mher"
    version = "1.0.0"
    title = "MHER: historical entity reconciliation in the Mongol world"
    default_config = "name_only"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("MHER construction (paper section 4)")
        group.add_argument("--dev-fraction", type=float, default=17 / 84,
                           help="share of primary entities in DEV (default 17/84, the paper's 17 of 84)")
        group.add_argument("--max-pairs-per-entity-pair", type=int, default=3,
                           help="cap on name-only pairs per unordered pair of persons (default 3)")
        group.add_argument("--near-surface-threshold", type=float, default=NEAR_SURFACE_THRESHOLD,
                           help="rapidfuzz ratio (0-100) of Unidecode-folded surfaces at or above which a "
                                f"different-person pair is near-surface (default {NEAR_SURFACE_THRESHOLD:g})")
        group.add_argument("--equivalence-cues", type=Path, metavar="FILE",
                           help="extra equivalence-cue phrases (YAML, same format as "
                                "sources/mher/equivalence_cues.yaml), added to the shipped list")
        group.add_argument("--shortcut-ceiling", action="append", default=[], metavar="NAME=VALUE",
                           help="override a shortcut ceiling of the leakage audit "
                                f"({', '.join(f'{k}={v}' for k, v in SHORTCUT_CEILINGS.items())})")
        group.add_argument("--identical-surface-overflow", choices=C.OVERFLOW_RULES, default="drop",
                           help="when a split has more identical-surface different pairs than same pairs: keep a "
                                "seeded subset spread over person pairs (drop, default, counted) or stop (fail)")
        group.add_argument("--unresolved-placement", choices=C.PLACEMENT_RULES, default="test",
                           help="confirmed persons cited by an expert-unresolved question (TEST-only): place them "
                                "in TEST (test, default, reported) or refuse a split that puts one in DEV (refuse)")
        group.add_argument("--audit-min-dev-items", type=int, default=AUDIT_MIN_DEV_ITEMS,
                           help="DEV source-grounded items needed before shortcut ceilings are enforced "
                                f"(default {AUDIT_MIN_DEV_ITEMS})")

    def options_from_args(self, args: argparse.Namespace) -> dict:
        return {
            "dev_fraction": args.dev_fraction,
            "max_pairs_per_entity_pair": args.max_pairs_per_entity_pair,
            "near_surface_threshold": args.near_surface_threshold,
            "identical_surface_overflow": args.identical_surface_overflow,
            "unresolved_placement": args.unresolved_placement,
            "equivalence_cues": str(args.equivalence_cues) if args.equivalence_cues else None,
            "shortcut_ceilings": dict(_parse_ceiling(t) for t in args.shortcut_ceiling),
            "audit_min_dev_items": args.audit_min_dev_items,
        }

    def build(self, ctx: BuildContext) -> BuildOutput:
        folder = ctx.path("registry")
        if folder is None:
            raise UsageError("mher: --registry DIR is required")
        ctx.log(f"reading the registry in {folder}")
        registry = read_registry(folder)
        extra = ctx.options.get("equivalence_cues")
        cues = CueList.load(ctx.source_file(CUES_FILE), Path(extra) if extra else None)
        options = C.BuildOptions(
            seed=ctx.seed,
            dev_fraction=float(ctx.options.get("dev_fraction", 17 / 84)),
            max_pairs_per_entity_pair=int(ctx.options.get("max_pairs_per_entity_pair", 3)),
            near_surface_threshold=float(ctx.options.get("near_surface_threshold", NEAR_SURFACE_THRESHOLD)),
            identical_surface_overflow=ctx.options.get("identical_surface_overflow", "drop"),
            unresolved_placement=ctx.options.get("unresolved_placement", "test"),
        )
        configs, summary, markdown = build_mher(
            registry, cues, options, ctx.options.get("shortcut_ceilings") or None,
            int(ctx.options.get("audit_min_dev_items", AUDIT_MIN_DEV_ITEMS)),
        )
        t1 = summary["table1"]
        ctx.log(f"{t1['primary_entities']['dev']}/{t1['primary_entities']['test']} DEV/TEST entities; "
                f"name-only {t1['name_only']['dev']['total']}/{t1['name_only']['test']['total']}, "
                f"source-grounded {t1['source_grounded']['dev']['total']}/{t1['source_grounded']['test']['total']} "
                "pairs; leakage audit passed")
        return BuildOutput(configs=configs, summary=summary, summary_markdown=markdown)
