"""Historical Italian WSD on the whole LeggoManzoni repository: the funnel, the distractor
sources, the other-sense rate, the shortcut audit and the reviewer's sample.

    .venv/bin/python bench/italian_wsd_repository.py --leggomanzoni ROOT [--out DIR] [--sample-out FILE]
    .venv/bin/python bench/italian_wsd_repository.py --built BUILD_FOLDER [--sample-out FILE]

ROOT is a clone (or export) of the LeggoManzoni repository (`quarantana/`, `commenti/xml/`),
whose licence allows personal and scientific use: keep it outside histbench's folder. The
build is the default offline path (offline screening stand-in, TF-IDF similarity,
MultiWordNet senses, the agreeing fallback), all questions (`--wsd-questions 0`), and the
default 200. Not a timing (CPU and wall time are printed all the same): the figures of
docs/italian.md, "WSD on the whole repository".

Held-out chapters: the tests read chapter 1 only (its real chapter from the real-data folder),
and no rule of this build was written while reading chapters 2-38 (but for the exceptions
docs/italian.md names: rules answering items of an earlier sample); the reviewer's sample is
drawn from the even-numbered chapters 2-38 (HELD_OUT), seeded (random.Random(42) over the
questions sorted by item key), 40 items. Their verdicts are in
`bench/italian_wsd_repository_review.csv` (item_key, phrase, verdict columns, no commentary
text): `gold` (meaning / not a meaning), `two_right` (yes when a distractor is also right),
and `class` (why not, when not). `--sample-out FILE` writes the sample (context, gold,
candidates and their sources) for a reviewer to read; it holds commentary-derived text, so
keep it out of the repository.

Printed: the funnel beside the paper's; distractor sources; single-word items, and those with
at least three distractors that are other senses of the target's lemma (MultiWordNet or
Wiktionary), in every question and in the default draw of 200 (a second build); Latin and Spanish phrases; the shortcut audit (every rule, chance, the margin);
the verdict counts of the sample when the review file holds them all.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REVIEW = REPO / "bench" / "italian_wsd_repository_review.csv"
HELD_OUT = {f"cap{n}" for n in range(2, 39, 2)}
SAMPLE_SEED = 42
SAMPLE_SIZE = 40


def build(out: Path, root: Path, **options) -> tuple[Path, dict]:
    from histbench.builders.italian import BUILDER
    from histbench.builders.machinery.build import run_build

    opts = {"embedding_model": "tfidf", "chat_cache": str(out / "chat.jsonl"), "allow_shortcuts": True,
            "skip_bad_files": True, **options}
    folder = run_build(BUILDER, {"leggomanzoni": str(root)}, options=opts, out_root=out)
    return folder, json.loads((folder / "histbench.json").read_text(encoding="utf-8"))


def rows_of(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return [r for t in sorted((folder / "data" / "wsd").glob("*.parquet")) for r in pq.read_table(t).to_pylist()]


def single_word(text: str) -> bool:
    return re.fullmatch(r"[^\W\d_]+(?:['’][^\W\d_]+)?", text) is not None


def other_senses(row: dict) -> int:
    return sum(1 for s in row["candidate_sources"]
               if s.startswith(("multiwordnet:", "wiktionary:")) and "spelt like the target" not in s)


def audit_lines(audit: dict) -> list[str]:
    return [f"  {r['rule']}: {r['accuracy']:.3f} (chance {r['chance']:.3f}, excess {r['excess_over_chance']:+.3f}"
            f"{', BEATS CHANCE' if r['beats_chance'] else ''})" for r in audit["rules"]]


def report(label: str, folder: Path, manifest: dict) -> list[dict]:
    task = manifest["summary"]["tasks"]["wsd"]
    rows = rows_of(folder)
    print(f"\n== {label}: {len(rows)} questions")
    for step in task["funnel"]:
        paper = step["paper (3.1)"]
        print(f"  {step['step']}: {step['this build']}" + ("" if paper is None else f" (paper {paper})"))
    print("  distractor sources: " + ", ".join(f"{k} {v}" for k, v in sorted(task["methods"]["distractors"].items())))
    singles = [r for r in rows if single_word(r["target_phrase"])]
    three = sum(1 for r in singles if other_senses(r) >= 3)
    print(f"  single-word questions: {len(singles)}; with >= 3 distractors that are other senses of the lemma: "
          f"{three} ({100 * three / max(len(singles), 1):.1f}%)")
    foreign = {k: v for k, v in task["counts"].items() if k.startswith(("Latin phrases", "Spanish phrases"))}
    print("  foreign phrases: " + (", ".join(f"{k} {v}" for k, v in foreign.items()) or "none"))
    for key, value in sorted(task["counts"].items()):
        if key.startswith(("MultiWordNet", "fallback candidates", "entries without five")):
            print(f"  {key}: {value}")
    print(f"  shortcut audit ({task['shortcut_audit']['items']} items, margin {task['shortcut_audit']['margin']}):")
    print("\n".join(audit_lines(task["shortcut_audit"])))
    return rows


def sample(rows: list[dict]) -> list[dict]:
    pool = sorted((r for r in rows if r["chapter"] in HELD_OUT), key=lambda r: r["item_key"])
    return random.Random(SAMPLE_SEED).sample(pool, min(SAMPLE_SIZE, len(pool)))


def verdicts(items: list[dict]) -> None:
    if not REVIEW.is_file():
        print(f"\nno verdicts yet ({REVIEW.name})")
        return
    with REVIEW.open(encoding="utf-8", newline="") as handle:
        judged = {r["item_key"]: r for r in csv.DictReader(handle)}
    missing = [r["item_key"] for r in items if r["item_key"] not in judged]
    if missing:
        print(f"\nUNJUDGED sample items (add them to {REVIEW.name}): {', '.join(missing)}")
        return
    rows = [judged[r["item_key"]] for r in items]
    good = sum(r["gold"] == "meaning" for r in rows)
    two = sum(r["two_right"] == "yes" for r in rows)
    singles = [r for r in items if single_word(r["target_phrase"])]
    three = sum(1 for r in singles if other_senses(r) >= 3)
    print(f"\n== reviewer's sample: {len(items)} items from held-out chapters (seed {SAMPLE_SEED})")
    print(f"  golds that are a meaning of the target: {good} of {len(items)}")
    borderline = sum(r["two_right"] == "borderline" for r in rows)
    print(f"  items with two right answers: {two} (and {borderline} borderline)")
    print(f"  single-word items with >= 3 distractors that are other senses of the lemma: {three} of {len(singles)}")
    classes = Counter(r["class"] for r in rows if r["class"])
    print("  classes: " + (", ".join(f"{k} {v}" for k, v in classes.most_common()) or "none"))


def write_sample(items: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for r in items:
            handle.write(json.dumps({k: r[k] for k in ("item_key", "target_phrase", "phrase_language", "context",
                                                       "answer", "candidates", "candidate_sources", "explanations")},
                                    ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leggomanzoni", type=Path, help="the LeggoManzoni repository root")
    parser.add_argument("--built", type=Path, help="instead: a finished build of it (histbench build italian "
                                                    "--leggomanzoni ROOT --embedding-model tfidf --wsd-questions 0)")
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one, removed)")
    parser.add_argument("--sample-out", type=Path, help="JSON Lines file for the reviewer's sample (outside the repository)")
    args = parser.parse_args(argv)
    started, cpu = time.perf_counter(), time.process_time()
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="italian-wsd-repo-"))
    try:
        if args.built:
            folder = args.built
            manifest = json.loads((folder / "histbench.json").read_text(encoding="utf-8"))
        elif args.leggomanzoni:
            folder, manifest = build(work / "all", args.leggomanzoni, wsd_questions=0)
        else:
            parser.error("give --leggomanzoni ROOT or --built FOLDER")
        rows = report("whole repository, every question (--wsd-questions 0)", folder, manifest)
        if args.leggomanzoni and not args.built:
            default_folder, default_manifest = build(work / "default", args.leggomanzoni)
            drawn = rows_of(default_folder)
            singles = [r for r in drawn if single_word(r["target_phrase"])]
            three = sum(1 for r in singles if other_senses(r) >= 3)
            print(f"\n== the default draw (--wsd-questions 200, words with three other senses drawn first): "
                  f"{len(drawn)} questions; single-word {len(singles)}, with >= 3 distractors that are other senses "
                  f"of the lemma: {three} ({100 * three / max(len(singles), 1):.1f}%)")
            print("\n".join(audit_lines(default_manifest["summary"]["tasks"]["wsd"]["shortcut_audit"])))
        items = sample(rows)
        if args.sample_out:
            write_sample(items, args.sample_out)
        verdicts(items)
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nwall {time.perf_counter() - started:.1f} s, CPU {time.process_time() - cpu:.1f} s, peak RSS {rss:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
