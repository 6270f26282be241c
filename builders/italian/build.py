"""The Historical Italian build: sources -> eight configs, with a summary of every rule."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from histbench.builders.machinery import shortcuts
from histbench.builders.machinery.build import BuildContext
from histbench.builders.machinery.writer import BuildOutput, sha256_path
from histbench.core.errors import BuildError, SourceError

from .authors import AuthorTable
from .embeddings import Embedder, pair_similarity
from .tei import BadFiles

SPLIT = "test"


class _Run:
    def __init__(self, ctx: BuildContext, options: dict) -> None:
        self.ctx = ctx
        self.o = options
        self.configs: dict[str, dict[str, list[dict]]] = {}
        self.summary: dict = {"sources": {}, "tasks": {}, "absent_tasks": {}}
        self.md: list[str] = []
        self._embedder: Embedder | None = None
        self.books = None
        self.book_stats: Counter | None = None
        self.citations = None
        self.chat = None
        self.bad = BadFiles(bool(options["skip_bad_files"]))
        self.repairs: list[str] = []       # repairs made while reading (NUL bytes removed), named per file
        self.audits: dict[str, dict] = {}  # config -> shortcut audit

    # -- shared ------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder.get(self.o["embedding_model"], int(self.o["embedding_batch_size"]))
            self.summary["embedding_model"] = self._embedder.identity()
        return self._embedder

    def source(self, *parts: str) -> Path:
        return self.ctx.source_file(*parts)

    def authors(self) -> AuthorTable:
        if getattr(self, "_authors", None) is not None:
            return self._authors
        table = AuthorTable()
        shipped = self.source("authors.csv")
        n = table.load(shipped, "shipped")
        info = {"shipped": {"file": "sources/italian/authors.csv", "rows": n, "rows_with_a_source": table.with_source(),
                            "sha256": sha256_path(shipped)}}
        user = self.ctx.path("authors")
        if user is not None:
            info["user"] = {"file": user.name, "rows": table.load(user, "user"), "merge": "user rows add to / replace shipped rows"}
        self.summary["authors_table"] = info
        self.ctx.extra_manifest["authors_table"] = info
        self._authors = table
        return table

    def load_books(self):
        if self.books is None:
            from .bibit import read_books

            self.books, self.book_stats = read_books(self.ctx.path("bibit"), self.bad, self.repairs)
            if not self.books:
                raise SourceError("no Biblioteca Italiana TEI books in this folder", file=self.ctx.path("bibit"))
        return self.books

    def add(self, config: str, rows: list[dict], stats: dict, md: str) -> None:
        from .audit import AUDITED, audit

        self.configs[config] = {SPLIT: rows}
        self.summary["tasks"][config] = {"questions": len(rows), **stats}
        if config in AUDITED:
            result = audit(config, rows, bool(self.o["allow_shortcuts"]))
            self.audits[config] = result
            self.summary["tasks"][config]["shortcut_audit"] = result
            md += "\n\n" + shortcuts.markdown(result, config)
            for rule in shortcuts.failing(result):
                self.ctx.log(f"{config}: shortcut audit: {rule['title']} beats chance")
        self.md.append(f"**{config}** ({len(rows)} rows): {md}")

    def absent(self, config: str, why: str) -> None:
        self.summary["absent_tasks"][config] = why
        self.md.append(f"**{config}**: not built ({why}).")

    # -- tasks -------------------------------------------------------------------

    def ner(self, corpus: str) -> None:
        from .letters import (
            EntityScheme,
            detect_language,
            letter_files,
            letter_kind,
            parse_tei,
            read_letter,
            select_subset,
        )

        config = f"ner_{corpus}"
        folder = self.ctx.path(corpus)
        where = self.source("ner_entities.yaml")
        scheme = EntityScheme.from_config(corpus, yaml.safe_load(where.read_text(encoding="utf-8")), where)
        xml, other = letter_files(folder)
        stats: Counter = Counter()
        stats["files that are not XML (README, templates; not read)"] = len(other)
        letters = []
        not_letters: list[str] = []
        for path in xml:
            try:
                root = parse_tei(path, self.repairs)
                kind = letter_kind(root)
                if kind != "letter":
                    stats[("TEI entity lists and other fragments (not letters; not read)" if kind == "fragment"
                           else "TEI documents without a correspDesc (not letters; not read)")] += 1
                    not_letters.append(str(path.relative_to(folder)))
                    continue
                letter = read_letter(path, scheme, root)
            except SourceError as exc:
                self.bad.handle(exc, corpus)
                stats["damaged files skipped (--skip-bad-files)"] += 1
                continue
            stats.update(letter.stats)
            letters.append(letter)
        if not letters:
            raise SourceError(f"no TEI letters (TEI files with a correspDesc) in the {corpus} folder", file=folder)
        stats["letters read"] = len(letters)
        if corpus == "bellini":
            keep_codes = [c.lower() for c in self.o["bellini_languages"]]
            kept = []
            for letter in letters:
                if letter.language is None:
                    letter.language = detect_language(letter.text)
                    letter.language_source = "detected (langdetect)" if letter.language else "unknown"
                lang = (letter.language or "").lower()
                if any(lang == c or lang.startswith(c + "-") for c in keep_codes):
                    kept.append(letter)
                else:
                    stats[f"letters in language {letter.language or 'unknown'} (excluded)"] += 1
            letters = kept
        labels = scheme.labels
        counts = np.array([letter.type_counts(labels) for letter in letters], dtype=float).reshape(len(letters), len(labels))
        totals = counts.sum(axis=0)
        extra: dict = {"entity_types": labels, "corpus_entity_counts": dict(zip(labels, map(int, totals), strict=True)),
                       "letters_in_corpus": len(letters), "tei_files_not_letters": not_letters}
        md = f"{len(letters)} letters"
        if corpus == "classense" and self.o["classense_subset"] and letters:
            chosen, test = select_subset(counts, int(self.o["classense_subset"]), self.ctx.seed, int(self.o["classense_subset_draws"]))
            extra["subset"] = {
                "size": len(chosen), "letters": [letters[i].id for i in chosen], **test,
                "subset_entity_counts": dict(zip(labels, map(int, counts[chosen].sum(axis=0)), strict=True)),
            }
            md += (f"; subset of {len(chosen)} chosen to keep the entity-type distribution: chi-square "
                   f"{test['chi2']:.3f} (df {test['dof']}, p {test['p_value']:.3f})")
            letters = [letters[i] for i in chosen]
        rows = []
        for letter in letters:
            rows.append({
                "id": letter.id, "file": letter.file, "title": letter.title, "text": letter.text,
                "entities": [{k: e[k] for k in ("text", "start", "end", "type", "element", "ref", "parts")} for e in letter.entities],
                "excluded_references": [{k: e[k] for k in ("text", "start", "end", "element", "reason")} for e in letter.excluded],
                "entity_types": labels,
                "sender": letter.sender, "recipient": letter.recipient, "date": letter.date, "place": letter.place,
                "language": letter.language, "language_source": letter.language_source, "n_chars": len(letter.text),
            })
        entity_counts = Counter(e["type"] for r in rows for e in r["entities"])
        md += "; entities " + ", ".join(f"{label} {entity_counts.get(label, 0)}" for label in labels)
        excluded = sum(len(r["excluded_references"]) for r in rows)
        md += f"; {excluded} indirect references kept apart"
        self.add(config, rows, {**extra, "counts": dict(stats)}, md + ".")

    def wsd(self) -> None:
        from . import wsd as W
        from .manzoni import NoteRules, group_phrases, read_leggomanzoni

        config = yaml.safe_load(self.source("wsd_rules.yaml").read_text(encoding="utf-8"))
        rules = W.Rules.from_config(config)
        read = read_leggomanzoni(self.ctx.path("leggomanzoni"), NoteRules.from_config(config), self.bad, self.repairs)
        stats = Counter(read.stats)
        distinct_spans = len({n.span for n in read.notes})
        phrases = group_phrases(read.notes, int(self.o["wsd_max_phrase_words"]), stats)
        entries = W.make_entries(read, phrases, self.o["wsd_context"], stats)
        entries = W.label_languages(entries, self.o.get("wsd_foreign_phrases", "drop"), stats)
        prompts = yaml.safe_load(self.source("prompts.yaml").read_text(encoding="utf-8"))["build"]
        chat = self.chat_client()
        refusals: Counter = Counter()     # offline screening: notes refused, by rule
        if chat is not None:
            W.chat_screen_and_answer(entries, chat, prompts, rules, stats)
        else:
            screen_lexicon = None
            if self.o.get("wsd_lexicon", "multiwordnet") == "multiwordnet":
                from . import lexicon as screen_lex

                screen_lexicon = screen_lex.shared_wordnet()
            for entry in entries:
                screened = W.offline_screen(entry, rules, stats, refusals, lexicon=screen_lexicon)
                entry.screening = {k: v for k, v in screened.items() if k != "answer"}
                if screened["kept"]:
                    entry.answer = screened["answer"]
                    entry.synthesis = W.OFFLINE_SYNTHESIS
        kept = [e for e in entries if e.screening["kept"]]
        stats["entries screened out (not about meaning)"] = len(entries) - len(kept)
        threshold = float(self.o["wsd_similarity_threshold"])
        sims = pair_similarity(self.embedder, [e.text for e in kept], [e.answer for e in kept])
        for entry, sim in zip(kept, sims, strict=True):
            entry.similarity = float(sim)
        passing = [e for e in kept if e.similarity < threshold]
        stats[f"entries whose phrase-answer similarity is >= {threshold} (too easy, left out)"] = len(kept) - len(passing)
        rng = np.random.default_rng(self.ctx.seed)
        reviews = self.wsd_reviews()
        if reviews is not None:
            from .review import check_keys

            check_keys(reviews, {W.item_key(e) for e in entries})
        usable, dropped_items = self.apply_reviews(passing, reviews, stats)
        limit = int(self.o["wsd_questions"]) or len(usable)
        wiktionary = None
        if self.ctx.path("wiktionary") is not None:
            wiktionary = W.Wiktionary(self.ctx.path("wiktionary"), {e.text for e in usable if W.is_single_word(e)})
            self.summary["wiktionary"] = dict(wiktionary.stats)
        wordnet = None
        if self.o.get("wsd_lexicon", "multiwordnet") == "multiwordnet":
            from . import lexicon

            wordnet = lexicon.shared_wordnet()
            self.summary["wsd_lexicon"] = {"name": "MultiWordNet (Italian)", "licence": lexicon.LICENCE}
            if limit < len(usable):
                usable = W.prefer_sense_inventory(usable, wordnet, rules, stats)
        ask_chat = (lambda needing: W.chat_distractors(needing, chat, prompts, W.N_CANDIDATES - 1)) if chat is not None else None
        distractor_rng = np.random.default_rng([self.ctx.seed, 3])
        chosen: list = []
        start = 0
        while len(chosen) < limit and start < len(usable):
            batch = usable[start:start + limit - len(chosen)]
            start += len(batch)
            W.choose_distractors(batch, passing, self.embedder, threshold, wiktionary, ask_chat, stats, rules,
                                 distractor_rng, self.o["wsd_distractor_choice"] == "length-balanced", lexicon=wordnet)
            for entry in batch:
                if len(entry.distractors) < W.N_CANDIDATES - 1:
                    stats["entries without five usable distractors (left out; the next entry is taken)"] += 1
                else:
                    chosen.append(entry)
        if start < len(usable):
            stats[f"entries not drawn among the {limit} questions"] = len(usable) - start
        rows = []
        sources: Counter = Counter()
        fallback_rows = 0
        similarity_model = self.embedder.identity()["model"]  # portable: no local directories
        for entry in chosen:
            kinds = [W.source_kind(s) for _, s in entry.distractors]
            sources.update(kinds)
            fallback_rows += any(k.startswith("offline fallback") for k in kinds)
            rows.append(W.to_record(entry, len(rows), rng, similarity_model))
        review_summary = self.review_summary(reviews, rows, dropped_items, {W.item_key(e) for e in entries})
        funnel = W.funnel(stats, distinct_spans, len(kept), len(passing), len(rows))
        methods = {
            "screening": "chat: " + chat.spec if chat else W.OFFLINE_SCREENING,
            "synthesis": "chat: " + chat.spec if chat else W.OFFLINE_SYNTHESIS,
            "distractors": dict(sources),
            "rows_with_offline_fallback_distractors": fallback_rows,
        }
        layout = read.layout
        md = (f"{len(read.commentators)} commentators ({', '.join(read.commentators)}) read from "
              f"`{layout.commentary_root}/`, {len(layout.chapters)} Quarantana chapters; not read: "
              + ("; ".join(f"{k} ({v} files)" for k, v in sorted(layout.not_read.items())) or "nothing") + ".\n\n"
              + "| step | this build | paper (3.1) |\n| --- | ---: | ---: |\n"
              + "".join(f"| {f['step']} | {f['this build']:,} | {'' if f['paper (3.1)'] is None else format(f['paper (3.1)'], ',')} |\n"
                        for f in funnel)
              + f"\nScreening: {methods['screening']}. Answers: {methods['synthesis']}. Distractors: "
              + ", ".join(f"{k} {v}" for k, v in sorted(sources.items())) + ".")
        if wordnet is not None:
            md += f" Sense inventory of single words: {lexicon.LICENCE}."
        if fallback_rows:
            missing = [o for o, given in (("--wiktionary", wiktionary is not None), ("--chat-model", chat is not None)) if not given]
            md += (f" **{fallback_rows} of {len(rows)} questions use offline-fallback distractors** (answers of other "
                   "entries, not the paper's method"
                   + (f": give {' and '.join(missing)} for the paper's distractors)." if missing
                      else ": the dictionary and the chat model gave fewer than five usable ones)."))
        if chat is None:
            md += " **Screening and answers are the offline stand-in**, not the paper's LLM steps (give --chat-model)."
        for line in [f"wsd funnel: {f['step']}: {f['this build']:,}" + ("" if f["paper (3.1)"] is None else f" (paper: {f['paper (3.1)']:,})")
                     for f in funnel]:
            self.ctx.log(line)
        if review_summary["sheet"]:
            md += (f" Reviews ({review_summary['sheet']}): {review_summary['questions_reviewed']} of {len(rows)} questions "
                   f"reviewed (every candidate seen by a reviewer), {review_summary['questions_partly_reviewed']} partly "
                   f"(a distractor offered since the review); {review_summary['gold_corrected']} answers corrected, {review_summary['items_dropped']} "
                   f"questions dropped, {review_summary['distractors_dropped']} distractors dropped and "
                   f"{review_summary['distractors_replaced']} replaced; decisions not applied (phrase not in this build): "
                   f"{review_summary['not_applied']}.")
        else:
            md += (" **No question has been reviewed** (the paper's last step): write a sheet with `histbench review "
                   "italian BUILD --out SHEET`, fill it, rebuild with `--reviews SHEET`.")
        self.add("wsd", rows, {"counts": dict(stats), "funnel": funnel, "methods": methods, "review": review_summary,
                               "offline_screening_refusals": dict(refusals.most_common()),
                               "commentators": read.commentators, "commentary_root": layout.commentary_root,
                               "not_read": layout.not_read, "excluded_note_examples": read.excluded_examples}, md)

    def wsd_reviews(self):
        from .review import read_reviews

        path = self.o.get("wsd_reviews")
        if not path:
            return None
        reviews = read_reviews(Path(path))
        self.ctx.log(f"wsd reviews: {reviews.stats['items_reviewed']} questions decided in {reviews.path.name}")
        return reviews

    def apply_reviews(self, passing: list, reviews, stats: Counter) -> tuple[list, list[dict]]:
        """The entries in the order questions are drawn (reviewed ones first, then a seeded
        order by phrase, stable across rebuilds), with the reviewers' corrections applied and
        their dropped questions left out (returned apart)."""
        import hashlib

        from . import wsd as W
        from .embeddings import pair_similarity
        from .review import NOT_REVIEWED

        seed = self.ctx.seed
        order = sorted(passing, key=lambda e: hashlib.sha256(f"{seed}:{W.item_key(e)}".encode()).hexdigest())
        usable, reviewed, dropped, corrected = [], [], [], []
        sheet = reviews.path.name if reviews else None
        for entry in order:
            review = reviews.get(W.item_key(entry)) if reviews else None
            entry.review = review
            if review is None:
                entry.review_record = dict(NOT_REVIEWED)
                usable.append(entry)
                continue
            if review.gold == "drop-item":
                stats["entries dropped by a reviewer"] += 1
                dropped.append({"item_key": W.item_key(entry), "target_phrase": entry.text, "answer": review.answer or entry.answer,
                                "reviewer": review.reviewer, "comment": review.comment})
                continue
            original = None
            if review.gold == "correct" and review.corrected != entry.answer:
                original = entry.answer
                entry.answer = review.corrected
                entry.synthesis = f"reviewer's correction ({review.reviewer})"
                corrected.append(entry)
            entry.review_record = review.record(original, sheet)
            reviewed.append(entry)
        if corrected:
            for entry, sim in zip(corrected, pair_similarity(self.embedder, [e.text for e in corrected],
                                                             [e.answer for e in corrected]), strict=True):
                entry.similarity = float(sim)
        return reviewed + usable, dropped

    def review_summary(self, reviews, rows: list[dict], dropped: list[dict], built_keys: set[str]) -> dict:
        made = {r["item_key"] for r in rows} | {d["item_key"] for d in dropped}
        summary = {"sheet": None, "questions_reviewed": 0, "questions_partly_reviewed": 0, "questions_not_reviewed": len(rows), "gold_kept": 0,
                   "gold_corrected": 0, "items_dropped": 0, "distractors_dropped": 0, "distractors_replaced": 0,
                   "distractors_offered_since_the_review": 0, "reviewers": [], "dropped_items": [], "not_applied": 0,
                   "not_applied_examples": []}
        if reviews is None:
            return summary
        decided = [r for r in rows if r["review"]["status"] == "reviewed"]
        reviewed = [r for r in decided if not r["review"]["distractors_new"]]     # every candidate seen by a reviewer
        missing = sorted(k for k in reviews.items if k not in made)
        summary.update(
            sheet=reviews.path.name, sheet_sha256=sha256_path(reviews.path), questions_reviewed=len(reviewed),
            questions_partly_reviewed=len(decided) - len(reviewed),
            questions_not_reviewed=len(rows) - len(reviewed),
            gold_kept=sum(1 for r in decided if r["review"]["gold"] == "keep"),
            gold_corrected=sum(1 for r in decided if r["review"]["gold"] == "correct"),
            items_dropped=len(dropped), distractors_dropped=sum(len(r["review"]["distractors_dropped"]) for r in decided),
            distractors_replaced=sum(len(r["review"]["distractors_replaced"]) for r in decided),
            distractors_offered_since_the_review=sum(len(r["review"]["distractors_new"]) for r in decided),
            reviewers=reviews.stats["reviewers"], dropped_items=dropped, not_applied=len(missing),
            not_applied_examples=[{"item_key": k, "why": ("the phrase is in the sources but not among this build's questions "
                                                           "(screened out, too close to its answer, not drawn, or without "
                                                           "five distractors)" if k in built_keys
                                                           else "no such phrase in this build's sources"),
                                   "target_phrase": reviews.items[k].target} for k in missing[:20]],
        )
        return summary

    def chat_client(self):
        if not self.o["chat_model"]:
            return None
        if self.chat is None:
            from .chat import ChatClient

            self.chat = ChatClient(self.o["chat_model"], self.o["chat_options"], Path(self.o["chat_cache"]))
            self.summary["chat_model"] = self.chat.identity()
        return self.chat

    def syntax(self) -> None:
        from .syntax import deprel_questions, head_questions, read_conllu

        sentences, stats = read_conllu(self.ctx.path("cavalcanti"), self.bad)
        names = yaml.safe_load(self.source("deprel_names.yaml").read_text(encoding="utf-8"))
        head_stats = Counter(stats)
        heads = head_questions(sentences, self.ctx.seed, head_stats)
        self.add("head", heads, {"counts": dict(head_stats)}, f"one question per sentence of {len(sentences)} sentences.")
        rel_stats = Counter(stats)
        rels = deprel_questions(sentences, names, int(self.o["deprel_per_relation"]), list(self.o["deprel_exclude"]),
                                self.ctx.seed, rel_stats, self.o["deprel_distractors"])
        types = len({q["deprel"] for q in rels})
        self.add("deprel", rels, {"counts": dict(rel_stats), "relation_types": types},
                 f"{self.o['deprel_per_relation']} questions per relation type, {types} types.")

    def chrono(self) -> None:
        from .bibit import cut_snippets
        from .chrono import Pool, authorship_questions, ranking_questions

        books = self.load_books()
        table = self.authors()
        excluded = table.excluded_names()
        if self.citations is not None:
            from .intertext import poets

            excluded |= poets(self.citations, self.o["intertext_types"], table)
        stats: Counter = Counter(self.book_stats)
        missing: dict[str, list[str]] = {}
        genres = [g for g in self.o["genres"]]
        per_genre: dict[str, list] = {g: [] for g in genres}
        used_authors: dict[str, set] = {g: set() for g in genres}
        from . import GENRES

        for book in books:
            genre = GENRES.get((book.genre or "").strip().lower())
            if genre is None or genre not in genres:
                stats[f"books of genre {book.genre or 'unknown'} (not used)"] += 1
                continue
            if book.languages and not any(lang.startswith("it") for lang in book.languages):
                stats["books not in Italian (langUsage; excluded)"] += 1
                continue
            if not book.author:
                stats["books that name no author (anonymous works; excluded)"] += 1
                continue
            author = table.find(book.author, book.author_alt)
            if author is None:
                missing.setdefault(book.author, []).append(book.id)
                stats["books whose author has no birth year in the authors table (excluded)"] += 1
                continue
            if author.name in excluded:
                stats["books by authors in other tasks (excluded)"] += 1
                continue
            snippets = cut_snippets(book, int(self.o["snippet_min_chars"]), int(self.o["snippet_max_chars"]), stats)
            if not snippets:
                stats["books with no snippet"] += 1
                continue
            for snippet in snippets:
                per_genre[genre].append((snippet, author))
            used_authors[genre].add(author.name)
        ranking, authorship = [], []
        genre_info = {}
        for genre in genres:
            items = per_genre[genre]
            genre_info[genre] = {"snippets": len(items), "authors": len(used_authors[genre])}
            if not items:
                stats[f"{genre}: no snippets (no book of this genre)"] += 1
                continue
            vectors = self.embedder.encode([s.text for s, _ in items])
            pool = Pool(genre, [s for s, _ in items], np.array([a.birth_year for _, a in items]), [a.name for _, a in items], vectors)
            n = int(self.o["questions_per_genre"])
            ranking += ranking_questions(pool, n, int(self.o["ranking_min_gap"]), self.ctx.seed, stats,
                                         self.o["snippet_choice"], float(self.o["ranking_max_length_spearman"]))
            authorship += authorship_questions(pool, n, int(self.o["authorship_max_gap"]), self.ctx.seed, stats,
                                               self.o["snippet_choice"])
        without_year = sum(len(v) for v in missing.values())
        common = {"counts": dict(stats), "genres": genre_info, "authors_missing_birth_year": missing,
                  "books_without_birth_year": without_year,
                  "excluded_authors_in_other_tasks": sorted(excluded)}
        missing_md = ""
        if missing:
            missing_md = (f" **{without_year} book(s) by {len(missing)} author(s) have no birth year in the authors table and "
                          "are left out of both tasks**: supply the years with `--authors FILE` (a CSV with name and "
                          "birth_year columns, added to the shipped table). Authors: " + "; ".join(sorted(missing)) + ".")
        by_genre = lambda qs: ", ".join(f"{g} {sum(1 for q in qs if q['genre'] == g)}" for g in genres)  # noqa: E731
        why_none = ""
        if not ranking:
            usable = {g: len(used_authors[g]) for g in genres}
            why_none = (" **No ranking question**: a question needs four authors born at least "
                        f"{self.o['ranking_min_gap']} years apart in one genre; authors with snippets per genre: "
                        + ", ".join(f"{g} {n}" for g, n in usable.items()) + ".")
        if missing:
            self.ctx.log(f"{without_year} Biblioteca Italiana book(s) have no author birth year (left out): give --authors FILE")
        self.add("chrono_ranking", ranking, common,
                 f"{by_genre(ranking)}; authors >= {self.o['ranking_min_gap']} years apart; snippet choice: "
                 f"{self.o['snippet_choice']}.{why_none}{missing_md}")
        self.add("authorship", authorship, common,
                 f"{by_genre(authorship)}; other author born < {self.o['authorship_max_gap']} years apart; snippet choice: "
                 f"{self.o['snippet_choice']}.{missing_md}")

    def intertext(self) -> None:
        from .intertext import intertext_questions

        stats: Counter = Counter()
        rows = intertext_questions(self.citations, self.load_books(), self.authors(), list(self.o["intertext_types"]),
                                   int(self.o["intertext_chunk_lines"]), float(self.o["intertext_min_score"]),
                                   self.ctx.seed, stats)
        stats.update(self.citation_stats)
        self.add("intertext", rows, {"counts": dict(stats)},
                 f"citation pairs of type {', '.join(self.o['intertext_types'])} located in Biblioteca Italiana poems; "
                 f"{self.o['intertext_chunk_lines']}-line chunks.")

    # -- driver ------------------------------------------------------------------

    def run(self) -> BuildOutput:
        given = {role: [f.path.name for f in files] for role, files in self.ctx.inputs.items()}
        for role in self.ctx.manifest.inputs:
            self.summary["sources"][role] = given.get(role) or ("shipped sources/italian/authors.csv" if role == "authors" else None)
        has = lambda role: self.ctx.path(role) is not None  # noqa: E731
        if has("dantesources"):
            from .intertext import load_citations

            query = Path(self.o["intertext_query"]) if self.o["intertext_query"] else self.source("dantesources.rq")
            self.citations, self.citation_stats = load_citations(self.ctx.paths("dantesources"), query,
                                                                 int(self.o["rdf_max_triples"]))
            self.summary["intertext_query"] = {"file": str(query) if self.o["intertext_query"] else "sources/italian/dantesources.rq",
                                               "sha256": sha256_path(query)}
        try:
            if has("leggomanzoni"):
                self.wsd()
            else:
                self.absent("wsd", "no --leggomanzoni folder given")
            for corpus in ("classense", "bellini"):
                if has(corpus):
                    self.ner(corpus)
                else:
                    self.absent(f"ner_{corpus}", f"no --{corpus} folder given")
            if has("bibit"):
                self.chrono()
            else:
                self.absent("chrono_ranking", "no --bibit folder given")
                self.absent("authorship", "no --bibit folder given")
            if has("cavalcanti"):
                self.syntax()
            else:
                self.absent("head", "no --cavalcanti folder given")
                self.absent("deprel", "no --cavalcanti folder given")
            if has("dantesources") and has("bibit"):
                self.intertext()
            else:
                missing = [f"--{r}" for r in ("dantesources", "bibit") if not has(r)]
                self.absent("intertext", f"no {' and '.join(missing)} given")
        finally:
            if self.chat is not None:
                self.summary["chat_requests"] = {"asked": self.chat.asked, "from_cache": self.chat.cached}
                self.chat.close()
        self.summary["damaged_files_skipped"] = self.bad.skipped
        self.summary["repairs_before_parsing"] = self.repairs
        if self.bad.skipped:
            self.md.append(f"**Damaged files skipped** (--skip-bad-files): {len(self.bad.skipped)}: "
                           + "; ".join(f"{b['file']} ({b['error']})" for b in self.bad.skipped[:20])
                           + (" ..." if len(self.bad.skipped) > 20 else "") + ".")
        if self.repairs:
            self.md.append("**Repaired before parsing**: " + "; ".join(self.repairs) + ".")
        if not self.configs:
            raise BuildError("no task could be built from the given sources")
        if not any(rows for splits in self.configs.values() for rows in splits.values()):
            raise BuildError("no task produced a question from the given sources; nothing was written",
                             details=[re.sub(r"\*\*", "", line.split("\n\n")[0]) for line in self.md if "no birth year" in line or
                                      "No ranking question" in line] or None)
        shortcuts.refuse(self.audits, allow=bool(self.o["allow_shortcuts"]), benchmark="italian")
        order = [c for c in ("wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext") if c in self.configs]
        configs = {c: self.configs[c] for c in order}
        json.dumps(self.summary, default=str)  # fail early on anything not JSON-able
        return BuildOutput(configs=configs, summary=self.summary, summary_markdown="\n\n".join(self.md))


def build_italian(ctx: BuildContext, options: dict) -> BuildOutput:
    return _Run(ctx, options).run()
