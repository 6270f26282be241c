"""Historical Italian: the items a reviewer would accept, measured on held-out real files.

    .venv/bin/python bench/italian_items.py --realdata FOLDER [--out DIR]

FOLDER holds the real sources as histbench reads them: `leggomanzoni/` (the Quarantana
chapter and the commentaries), `biblioteca/` (Biblioteca Italiana TEI books), `cavalcanti/`
(CoNLL-U). Not a timing (CPU and wall time are printed all the same): the figures of
docs/italian.md, "Measured items".

The held-out half: every other name in case-insensitive alphabetical order, from the
second, of the commentators and of the books (the rules were written on the other half,
which the tests read; tests/italian/conftest.py `held_out` is the same rule). Printed:

- WSD (offline path, TF-IDF): the funnel on the 20 held-out commentators; a seeded sample of
  40 screened entries (random.Random(24) over the entries kept by screening, sorted by
  phrase) judged against `bench/italian_wsd_heldout_review.csv`, the reviewer's verdict per
  phrase (written by reading each gold with its context and notes: is it a meaning of the
  target phrase?), with the count per class of the issue; the distractor checks (form class
  of the entry each distractor comes from, a distractor repeating a commentator's gloss:
  rapidfuzz token-set ratio >= 80 against each note's opening segment); the shortcut audit.
- Authorship and ranking (3.3) on the held-out books and on all books, with the default
  length-balanced choice and with the paper's literal choice: "longest" / "shortest" rates,
  mean |Spearman(length, year)|, and every audit rule.
- Head and relation (3.4): the audits with length-balanced and most-frequent distractors.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SAMPLE_SEED = 24
SAMPLE_SIZE = 40


def held_out(names) -> set[str]:
    ordered = sorted(names, key=str.lower)
    return set(ordered[1::2])


def split_copy(realdata: Path, target: Path, half: str) -> dict[str, Path]:
    comments = realdata / "leggomanzoni" / "commenti"
    names = [p.name for p in comments.iterdir() if p.is_dir()]
    chosen = held_out(names) if half == "held-out" else set(names) - held_out(names)
    lm = target / "leggomanzoni"
    shutil.copytree(realdata / "leggomanzoni" / "quarantana", lm / "quarantana")
    for name in sorted(chosen):
        shutil.copytree(comments / name, lm / "commenti" / name)
    books = [p.name for p in (realdata / "biblioteca").iterdir() if p.is_file() and p.name.startswith("bibit")]
    keep = held_out(books) if half == "held-out" else set(books) - held_out(books)
    bib = target / "biblioteca"
    bib.mkdir(parents=True)
    for name in sorted(keep):
        shutil.copy(realdata / "biblioteca" / name, bib / name)
    return {"leggomanzoni": lm, "bibit": bib, "commentators": sorted(chosen, key=str.lower), "books": sorted(keep)}


def build(out: Path, given: dict, **options) -> dict:
    from histbench.builders.italian import BUILDER
    from histbench.builders.machinery.build import run_build

    opts = {"embedding_model": "tfidf", "chat_cache": str(out / "chat.jsonl"), "allow_shortcuts": True,
            "wsd_questions": 0, **options}
    folder = run_build(BUILDER, {k: str(v) for k, v in given.items()}, options=opts, out_root=out)
    manifest = json.loads((folder / "histbench.json").read_text(encoding="utf-8"))
    return {"folder": folder, "manifest": manifest}


def config_rows(folder: Path, config: str) -> list[dict]:
    import pyarrow.parquet as pq

    return [r for t in sorted((folder / "data" / config).glob("*.parquet")) for r in pq.read_table(t).to_pylist()]


def audit_line(audit: dict) -> str:
    key = "mean_spearman" if audit["kind"] == "ranking" else "accuracy"
    rules = ", ".join(f"{r['rule']} {r[key]:.3f}" + (" FAILS" if r["beats_chance"] and not r.get("exempt") else "")
                      for r in audit["rules"])
    extra = (f"; mean |Spearman(length, order)| {audit['mean_abs_spearman_length_gold']:.3f}"
             if audit["kind"] == "ranking" else "")
    return f"{audit['items']} items, chance {audit['chance']:.3f}: {rules}{extra}"


def wsd_figures(held: dict, out: Path) -> None:
    from rapidfuzz import fuzz

    from histbench.builders.italian import wsd as W
    from histbench.builders.italian.manzoni import NoteRules, group_phrases, read_leggomanzoni

    config = yaml.safe_load((REPO / "sources" / "italian" / "wsd_rules.yaml").read_text(encoding="utf-8"))
    rules = W.Rules.from_config(config)
    read = read_leggomanzoni(held["leggomanzoni"], NoteRules.from_config(config))
    stats: Counter = Counter()
    entries = W.make_entries(read, group_phrases(read.notes, 8, stats), "sentence", stats)
    kept = sorted(((W.item_key(e), e) for e in entries if W.offline_screen(e, rules)["kept"]), key=lambda t: t[0])
    sample = random.Random(SAMPLE_SEED).sample(kept, SAMPLE_SIZE)
    verdicts = {}
    with (REPO / "bench" / "italian_wsd_heldout_review.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            verdicts[row["item_key"]] = row
    judged = [verdicts.get(key) for key, _ in sample]
    missing = [key for (key, _), v in zip(sample, judged, strict=True) if v is None]
    print(f"\n== WSD, offline path, {len(held['commentators'])} held-out commentators: {', '.join(held['commentators'])}")
    print(f"phrases explained by two or more commentators: {stats['phrases explained by at least two commentators']}; "
          f"kept by screening: {len(kept)}")
    if missing:
        print(f"UNJUDGED sample items (add them to bench/italian_wsd_heldout_review.csv): {', '.join(missing)}")
    else:
        accepted = sum(v["verdict"] == "meaning" for v in judged)
        classes = Counter(v["class"] for v in judged if v["verdict"] != "meaning")
        print(f"gold a meaning of the target: {accepted} of {SAMPLE_SIZE} ({100 * accepted / SAMPLE_SIZE:.1f}%)")
        for name in ("a dictionary entry", "a literary or stylistic remark", "the older text",
                     "a paraphrase of the story", "a fragment", "a gloss of a neighbouring word"):
            print(f"  not a meaning, {name}: {classes.get(name, 0)}")
        notes = Counter(v["note"].split(" (")[0] for v in judged if v["verdict"] == "meaning" and v["note"])
        print("  accepted with a note: " + ("; ".join(f"{k} {n}" for k, n in notes.items()) or "none"))
    built = build(out / "wsd", {"leggomanzoni": held["leggomanzoni"]})
    task = built["manifest"]["summary"]["tasks"]["wsd"]
    print("funnel: " + "; ".join(f"{f['step']} {f['this build']}" for f in task["funnel"]))
    checks: Counter = Counter()
    for row in config_rows(built["folder"], "wsd"):
        own = W.form_class(row["target_phrase"])
        glosses = [W.first_segment(e["text"], rules).lower() for e in row["explanations"]]
        for candidate, source in zip(row["candidates"], row["candidate_sources"], strict=True):
            if source == "gold":
                continue
            checks["distractors"] += 1
            if not source.startswith("offline fallback"):
                checks["from the lexicon (MultiWordNet), not the fallback"] += 1
                continue
            other = source.split("(", 1)[1].split(";", 1)[0] if "(" in source else ""
            checks["from an entry of the same form class"] += W.form_class(other) == own
            checks["same single word / phrase"] += (" " in other.strip()) == (" " in row["target_phrase"].strip())
            checks["form class kept, final vowel relaxed"] += "another ending" in source
            checks["repeating a commentator's gloss (token-set >= 80)"] += any(
                fuzz.token_set_ratio(candidate.lower(), g) >= 80 for g in glosses if g)
            checks["from an entry of the same phrase"] += other.lower() == row["target_phrase"].lower()
    print("distractors: " + "; ".join(f"{k} {v}" for k, v in checks.items()))
    print("audit: " + audit_line(task["shortcut_audit"]))


def snippet_figures(label: str, books: Path, out: Path) -> None:
    for choice in ("length-balanced", "paper"):
        built = build(out / f"bibit-{label}-{choice}", {"bibit": books}, snippet_choice=choice)
        tasks = built["manifest"]["summary"]["tasks"]
        authorship = {r["rule"]: r["accuracy"] for r in tasks["authorship"]["shortcut_audit"]["rules"]}
        ranking = tasks["chrono_ranking"]["shortcut_audit"]
        print(f"{label}, {choice}: authorship longest {authorship['longest']:.2f}, shortest {authorship['shortest']:.2f} "
              f"({tasks['authorship']['questions']} items); ranking mean |Spearman(length, year)| "
              f"{ranking['mean_abs_spearman_length_gold']:.3f} ({tasks['chrono_ranking']['questions']} items)")
        print("  authorship audit: " + audit_line(tasks["authorship"]["shortcut_audit"]))
        print("  ranking audit: " + audit_line(ranking))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--realdata", type=Path, required=True, help="folder with leggomanzoni/, biblioteca/, cavalcanti/")
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    started, cpu = time.perf_counter(), time.process_time()
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="italian-items-"))
    try:
        held = split_copy(args.realdata, work / "held-out", "held-out")
        wsd_figures(held, work)
        print(f"\n== Authorship and ranking (3.3); held-out books: {', '.join(held['books'])}")
        snippet_figures("held-out books", held["bibit"], work)
        snippet_figures("all books", args.realdata / "biblioteca", work)
        print("\n== Head and relation (3.4), the real treebank")
        for choice in ("length-balanced", "most-frequent"):
            tasks = build(work / f"syntax-{choice}", {"cavalcanti": args.realdata / "cavalcanti"},
                          deprel_distractors=choice)["manifest"]["summary"]["tasks"]
            print(f"deprel, {choice}: " + audit_line(tasks["deprel"]["shortcut_audit"]))
            if choice == "length-balanced":
                print("head: " + audit_line(tasks["head"]["shortcut_audit"]))
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nwall {time.perf_counter() - started:.1f} s, CPU {time.process_time() - cpu:.1f} s, peak RSS {rss:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
