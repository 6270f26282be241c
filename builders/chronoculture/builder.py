"""The ChronoCulture builder: WVS and ISSP files -> pairs, items, undated, mcq.

    histbench build chronoculture --wvs WVS_TimeSeries.sav --issp ZA1950.sav ZA2900.dta ZA4700_v1-0-0.dta
    histbench build chronoculture --wvs WVS_TimeSeries.sav --issp ZA*.sav --discover mine.yaml  # attach, no build

Flow: registry + country table + prompt templates -> each file's metadata (required
variables, registry codes against value labels; ISSP variables the registry does not pin
found by their labels, locate.py) -> only the needed columns -> per question a vectorised
tabulation into gold distributions per country x period (gold.py) and the answers of each
period (scales.py, rule 3.2) -> temporal pairs, noise, modal variant and prompts
(pairs.py) -> records + summary. Every respondent, cell and question x country that a
rule drops is counted in the summary (in the card and in histbench.json); those that
change what the user gets are printed on the console as well.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from histbench.builders.machinery.build import BenchmarkBuilder, BuildContext
from histbench.builders.machinery.writer import BuildOutput, sha256_path
from histbench.core.errors import SourceError, UsageError
from histbench.core.progress import progress

from .countries import CountryTable
from .gold import CELL_RULES, MIN_RESPONDENTS, tabulate
from .mcq_audit import mcq_shortcut_audit, mcq_shortcut_markdown
from .pairs import NOISE_DRAWS, Cell, build_records
from .prompts import PromptTemplates
from .readers import read_meta
from .registry import TOPIC_CATEGORIES, load_registry
from .scales import SCALE_POLICIES, period_scales
from .surveys import load_issp, load_wvs

REGISTRY_FILE = "registry.yaml"
COUNTRIES_FILE = "countries.csv"
PROMPTS_FILE = "prompts.yaml"
OFF_SCALE_SHARE = 0.01  # unregistered codes above this share of a variable's answers are printed


class ChronoCultureBuilder(BenchmarkBuilder):
    name = "chronoculture"
    version = "1.0.0"
    title = "ChronoCulture: survey attitudes across time (WVS + ISSP temporal pairs)"
    default_config = "pairs"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("chronoculture")
        group.add_argument("--registry", type=Path, metavar="YAML",
                           help="question registry to use instead of the shipped sources/chronoculture/registry.yaml")
        group.add_argument("--countries", type=Path, metavar="CSV",
                           help="country table to use instead of the shipped sources/chronoculture/countries.csv")
        group.add_argument("--min-respondents", type=int, default=MIN_RESPONDENTS,
                           help=f"valid respondents a gold distribution needs (paper: {MIN_RESPONDENTS})")
        group.add_argument("--noise-draws", type=int, default=NOISE_DRAWS,
                           help=f"sampling-noise draws per pair (paper F.4: {NOISE_DRAWS})")
        group.add_argument("--allow-missing-questions", action="store_true",
                           help="skip registry variables that a file lacks (listed in the summary) instead of failing")
        group.add_argument("--scale-change", choices=SCALE_POLICIES, default="drop",
                           help="paper 3.2, a question whose answer scale differs between the two periods of a pair: "
                                "drop the pair (default) or take the oldest period on the newer period's scale")
        group.add_argument("--discover", type=Path, metavar="OUT_YAML",
                           help="write a copy of the registry with the sources found in the given --wvs/--issp files "
                                "attached (and new candidates under 'candidates:') to OUT_YAML and exit without building")

    def options_from_args(self, args: argparse.Namespace) -> dict:
        if args.discover is not None:
            from .discover import run_discover

            run_discover(args)
            raise SystemExit(0)
        if args.min_respondents < 1:
            raise UsageError("--min-respondents must be at least 1")
        if args.noise_draws < 2:
            raise UsageError("--noise-draws must be at least 2")
        options = {"min_respondents": args.min_respondents, "noise_draws": args.noise_draws,
                   "allow_missing_questions": bool(args.allow_missing_questions), "scale_change": args.scale_change}
        if args.registry:
            options["registry"] = str(args.registry.expanduser().resolve())
        if args.countries:
            options["countries"] = str(args.countries.expanduser().resolve())
        return options

    def demo_options(self) -> dict:
        # The bundled sample holds nine of the registry's WVS variables; the others are listed as missing.
        return {"allow_missing_questions": True}

    def build(self, ctx: BuildContext) -> BuildOutput:
        registry_path = Path(ctx.options.get("registry") or ctx.source_file(REGISTRY_FILE))
        countries_path = Path(ctx.options.get("countries") or ctx.source_file(COUNTRIES_FILE))
        registry = load_registry(registry_path)
        countries = CountryTable.load(countries_path)
        templates = PromptTemplates.load(ctx.source_file(PROMPTS_FILE))
        _check_registry_countries(registry, countries)
        min_respondents = int(ctx.options.get("min_respondents", MIN_RESPONDENTS))
        allow_missing = bool(ctx.options.get("allow_missing_questions", False))
        scale_policy = str(ctx.options.get("scale_change", "drop"))
        if registry.candidates:
            ctx.log(f"registry {registry_path.name}: {registry.candidates} --discover candidate(s) under "
                    "'candidates:' are not built (move the ones you keep into 'questions:')")

        files = []
        for path in ctx.paths("wvs"):
            ctx.log(f"reading WVS {path.name}")
            files.append(load_wvs(read_meta(path), registry, countries, allow_missing))
        for path in ctx.paths("issp"):
            ctx.log(f"reading ISSP {path.name}")
            files.append(load_issp(read_meta(path), registry, countries, allow_missing))

        cells: dict[tuple[str, str], list[Cell]] = defaultdict(list)
        origin: dict[tuple[str, str, int], str] = {}
        cell_rules = {s: Counter() for s in ("WVS", "ISSP")}
        cells_ok = Counter()
        invalid = {s: Counter() for s in ("WVS", "ISSP")}
        unregistered: dict[str, dict] = {}
        off_scale: list[str] = []
        missing_weight_cells: dict[str, list[str]] = defaultdict(list)
        missing_answers = Counter()
        used_questions = set()
        wvs_negative = True
        for survey_file in files:
            report = survey_file.report
            survey = report.survey
            index = survey_file.index
            for question, source in progress(survey_file.questions, desc=f"gold {report.file}", unit="question"):
                variable = source.variable if source else question.variable
                if survey == "WVS":
                    table = tabulate(survey_file.columns[variable], index, question.codes_for(None),
                                     question.invalid_codes, registry.wvs.not_asked_codes,
                                     negative_invalid=wvs_negative, min_respondents=min_respondents)
                else:
                    table = tabulate(survey_file.columns[variable], index, question.codes_for(source),
                                     question.invalid_for(source), (), min_respondents=min_respondents)
                used_questions.add(question.id)
                invalid[survey].update(table.invalid_codes)
                missing_answers[survey] += table.missing_answers
                where = f"{report.file}:{variable}"
                if table.unregistered_codes:
                    unregistered[f"{question.id} ({where})"] = dict(table.unregistered_codes)
                    answers = int(table.counts.sum()) + sum(table.unregistered_codes.values())
                    share = sum(table.unregistered_codes.values()) / max(answers, 1)
                    if share > OFF_SCALE_SHARE:
                        codes = ", ".join(f"{c} x{n:,}" for c, n in sorted(table.unregistered_codes.items(),
                                                                           key=lambda kv: -kv[1])[:4])
                        off_scale.append(f"{question.id} ({where}): {100 * share:.1f}% of answers ({codes})")
                scales = period_scales(table, index.keys, survey, report.file, survey_file.label_scales.get(question.id),
                                       tuple(question.labels))
                for g, (country, year, wave) in enumerate(index.keys):
                    status = table.status[g]
                    if status is not None:
                        cell_rules[survey][status] += 1
                        if status == "missing_weight":
                            missing_weight_cells[report.file].append(
                                f"{question.id} {country.alpha3} {year if wave is None else f'wave {wave}'}")
                        continue
                    cells_ok[survey] += 1
                    key = (question.id, country.alpha3, year)
                    if survey == "ISSP" and key in origin:
                        raise SourceError(
                            f"question {question.id}, {country.name} {year} is in two ISSP files ({origin[key]} and "
                            f"{where}); give each module year once (a module file or a cumulation, not both)",
                            file=survey_file.meta.path, field=variable,
                        )
                    origin[key] = where
                    cells[(question.id, country.alpha3)].append(
                        Cell(year=year, wave=wave, gold=table.gold(g), n=int(table.n_valid[g]), source=where,
                             scale=scales.get(wave if survey == "WVS" else year))
                    )

        questions = {q.id: q for q in registry.questions}
        configs, stats = build_records(
            cells, questions, countries.by_alpha3, templates, seed=ctx.seed,
            newer_wave=registry.wvs.newer_wave if registry.wvs else None,
            noise_draws=int(ctx.options.get("noise_draws", NOISE_DRAWS)), progress=progress,
            scale_policy=scale_policy,
        )
        ctx.extra_manifest["chronoculture_sources"] = {
            "registry": {"path": registry_path.name, "sha256": sha256_path(registry_path),
                         "shipped": registry_path == Path(ctx.source_file(REGISTRY_FILE))},
            "countries": {"path": countries_path.name, "sha256": sha256_path(countries_path)},
            "prompt_templates": {"path": PROMPTS_FILE, "sha256": templates.sha256},
        }
        summary = _summary(configs, stats, files, registry, cell_rules, cells_ok, invalid, unregistered,
                           missing_answers, used_questions, min_respondents)
        summary["exclusions"]["off_scale_codes_above_1_percent"] = off_scale
        summary["exclusions"]["cells_missing_weight"] = {f: v for f, v in missing_weight_cells.items()}
        summary["scale_policy"] = scale_policy
        summary["scale_changes"] = stats["scale_changes"]
        _print_exclusions(ctx, files, summary, off_scale, missing_weight_cells, stats["scale_changes"])
        if not configs["pairs"]:
            raise SourceError(_why_no_pairs(files, summary, cell_rules, stats), file=", ".join(
                str(f.meta.path) for f in files) or None)
        for line in _comparison_lines(summary):
            ctx.log(line)
        for name, records in configs.items():  # columns in the schema's order (build_records keeps it)
            order = list(ctx.resources.schema(self.name, name)["properties"])
            if records and list(records[0]) != order:
                records[:] = [{key: record[key] for key in order} if set(record) == set(order) else record
                              for record in records]
        return BuildOutput(
            configs={name: {"test": records} for name, records in configs.items()},
            summary=summary,
            summary_markdown=_markdown(summary),
        )


def _print_exclusions(ctx, files, summary, off_scale, missing_weight_cells, scale_changes) -> None:
    """Exclusions that change what the user gets, on the console (details in histbench.json)."""
    # the bundled sample's synthetic files hold a few of the registry's variables and plant the
    # problems these checks look for: said so, so that `make demo` shows no unexplained warning
    sample_dir = Path(str(ctx.source_file("sample"))).resolve()
    inputs = [f.path for role in ctx.inputs.values() for f in role]
    from_sample = bool(inputs) and all(Path(path).resolve().is_relative_to(sample_dir) for path in inputs)
    warning = "expected for the bundled sample (synthetic files): " if from_sample else "warning: "
    for f in files:
        r = f.report
        if r.missing_questions:
            ctx.log(f"{warning}{r.file}: {len(r.missing_questions)} registry variable(s) are not in the file and were "
                    f"skipped: {_short(r.missing_questions, 10)}")
        if r.survey == "ISSP" and (r.located or r.not_located):
            ctx.log(f"{r.file} (study {r.study}): {len(r.located)} question(s) found by their label"
                    + (f"; {len(r.not_located)} not found ({_short(sorted(r.not_located), 6)})" if r.not_located else ""))
            for qid, found in sorted(r.located.items()):  # each one, so that a user can check it and pin it
                variable, how = found.split(" (", 1)
                ctx.log(f"  found by label: {qid} -> {r.file}:{variable} {r.located_labels.get(qid, '')!r} ({how}")
            for _, why in sorted(r.not_located.items()):  # refusals among candidates (not a plain absence)
                if "no variable label matches" not in why:
                    ctx.log(f"  refused: {why}")
        if r.german_samples_without_factors:
            ctx.log(f"{warning}{r.file}: the German samples {', '.join(r.german_samples_without_factors)} are pooled "
                    f"into one Germany without reunification factors (the registry documents none for study "
                    f"{r.study}), so each sample counts with its own weights only; give the study's "
                    "`reunification:` from its GESIS documentation")
        auto = [f"{role} {how}" for role, how in r.variables.items() if "found" in how or "none" in how]
        if auto:
            ctx.log(f"{r.file}: " + "; ".join(auto))
        if r.csv_text_answers:
            ctx.log(f"{r.file}: answers written as labels were mapped to codes through the registry in "
                    f"{len(r.csv_text_answers)} column(s) ({_short(sorted(r.csv_text_answers), 6)})")
        dropped = {k: sum(v.values()) for k, v in r.excluded.items()}
        if any(dropped.values()):
            ctx.log(f"{r.file}: respondents left out: " + ", ".join(f"{k.replace('_', ' ')} {v:,}"
                                                                    for k, v in dropped.items()))
        unusable = sum(r.weights.values())
        if unusable:
            ctx.log(f"{r.file}: {unusable:,} respondent(s) without a usable weight cannot count "
                    f"({', '.join(f'{k} {v:,}' for k, v in r.weights.items() if v)})")
    if off_scale:
        ctx.log(f"{warning}{len(off_scale)} variable(s) have answer codes that are neither options nor invalid above "
                f"{100 * OFF_SCALE_SHARE:.0f}% of their answers (read as invalid): " + "; ".join(off_scale[:5])
                + (" ..." if len(off_scale) > 5 else ""))
    for name, cells in missing_weight_cells.items():
        ctx.log(f"{warning}{name}: {len(cells)} question x country x period cell(s) dropped because none of their valid "
                f"answers has a usable weight ({_short(cells, 4)})")
    if scale_changes:
        total = sum(e["pairs_not_formed"] for e in scale_changes.values())
        ctx.log(f"rule 3.2 (consistent scale): {total} pair(s) not formed because the scale differs between their two "
                "periods:")
        for qid, entry in sorted(scale_changes.items(), key=lambda kv: -kv[1]["pairs_not_formed"]):
            ctx.log(f"  {qid}: {entry['pairs_not_formed']} pair(s); {entry['reasons'][0]['reason']}")


def _why_no_pairs(files, summary, cell_rules, stats) -> str:
    """The reason an input gives no pair at all, in one line."""
    parts = []
    for survey in ("WVS", "ISSP"):
        rules = {k: v for k, v in cell_rules[survey].items() if v}
        ok = summary["exclusions"]["cells"][survey]["with_gold"]
        if not rules and not ok:
            continue
        if not ok and set(rules) == {"all_answers_invalid"} | ({"not_asked"} & set(rules)):
            codes = summary["exclusions"]["invalid_answers"][survey]
            parts.append(f"{survey}: every answer is invalid (codes {', '.join(f'{c} x{n:,}' for c, n in codes.items())})")
        elif not ok:
            parts.append(f"{survey}: no question x country x period reached a gold distribution "
                         f"({', '.join(f'{k.replace(chr(95), chr(32))} {v:,}' for k, v in rules.items())})")
        else:
            parts.append(f"{survey}: {ok:,} gold distribution(s), but no question x country has two periods "
                         f"({json.dumps(stats['pairs_not_formed'])})")
    if not any(f.questions for f in files):
        parts.append("none of the registry's questions is in the input files")
    return "no temporal pair can be formed: " + ("; ".join(parts) or "the inputs hold no respondents")


PAPER_TABLE_1 = {"stable": 2607, "moderate": 5535, "strong": 1828, "very_strong": 390}
PAPER_TABLE_4 = {
    "Government, democracy, and institutions": 106,
    "Religion and national identity": 99,
    "Social inequality, work, and economic values": 83,
    "Family, health, and social attitudes": 74,
    "Environment, science, and technology": 46,
}
PAPER_PAIRS = {"WVS": 3228, "ISSP": 7132}


def _comparison_lines(summary: dict) -> list[str]:
    """The build's counts beside the paper's Table 1 (pairs by shift category), Table 4
    (questions by topic category) and Table 6 (pairs by survey)."""
    s = summary
    lines = [f"{s['pairs']:,} temporal pairs over {s['countries']} countries (paper: 10,360 over 72); "
             + ", ".join(f"{k} {v['pairs']:,} (paper {PAPER_PAIRS[k]:,})" for k, v in s["per_survey"].items())]
    lines.append("shift categories (paper Table 1): " + ", ".join(
        f"{c.replace('_', ' ')} {s['shift_categories']['default'][c]:,} ({PAPER_TABLE_1[c]:,})" for c in PAPER_TABLE_1))
    lines.append("questions with pairs by topic category (paper Table 4): " + ", ".join(
        f"{c.split(',')[0]} {v['questions']} ({PAPER_TABLE_4[c]})" for c, v in s["per_topic_category"].items()))
    return lines


def _check_registry_countries(registry, countries: CountryTable) -> None:
    for study in registry.studies:
        unknown = sorted({a for a in study.country.map.values() if a not in countries.by_alpha3})
        if unknown:
            raise SourceError(
                f"study {study.id}: country map names {unknown}, which the country table ({countries.path.name}) lacks",
                file=registry.path, field="country",
            )


def _summary(configs, stats, files, registry, cell_rules, cells_ok, invalid, unregistered,
             missing_answers, used_questions, min_respondents) -> dict:
    pairs = configs["pairs"]
    order = ["stable", "moderate", "strong", "very_strong"]
    per_survey = {}
    for survey in ("WVS", "ISSP"):
        rows = [p for p in pairs if p["survey"] == survey]
        per_survey[survey] = {
            "pairs": len(rows),
            "questions_with_pairs": len({p["question_id"] for p in rows}),
            "countries": len({p["country_iso3"] for p in rows}),
            "registry_questions": len(registry.wvs_questions if survey == "WVS" else registry.issp_questions),
            "questions_read": sum(1 for q in registry.questions if q.survey == survey and q.id in used_questions),
        }
    per_topic_category = {
        cat: {"questions": len({p["question_id"] for p in pairs if p["topic_category"] == cat}),
              "pairs": sum(p["topic_category"] == cat for p in pairs)}
        for cat in TOPIC_CATEGORIES
    }
    per_topic = defaultdict(Counter)
    for p in pairs:
        per_topic[p["survey"]][p["topic"]] += 1
    per_region = Counter(p["region"] for p in pairs)
    issp_unread = [q.id for q in registry.issp_questions if q.id not in used_questions]
    wvs_unread = [q.id for q in registry.wvs_questions if q.id not in used_questions]
    shift = {name: {c: counts.get(c, 0) for c in order} for name, counts in stats["shift_categories"].items()}
    return {
        "pairs": len(pairs),
        "dated_items": len(configs["items"]),
        "undated_rows": len(configs["undated"]),
        "mcq_rows": len(configs["mcq"]),
        "countries": len({p["country_iso3"] for p in pairs}),
        "country_list": sorted({p["country_iso3"] for p in pairs}),
        "min_respondents": min_respondents,
        "per_survey": per_survey,
        "shift_categories": shift,
        "per_topic_category": per_topic_category,
        "per_topic": {s: dict(sorted(c.items())) for s, c in sorted(per_topic.items())},
        "per_region": dict(sorted(per_region.items())),
        "mode_change": stats["mode_change"],
        "mcq": stats["mcq"],
        "mcq_shortcut_audit": mcq_shortcut_audit(configs["mcq"]),
        "sampling_noise": stats["noise"],
        "exclusions": {
            "respondents_per_file": [f.report.to_json() for f in files],
            "cells": {
                s: {"with_gold": cells_ok.get(s, 0), **{rule: cell_rules[s].get(rule, 0) for rule in CELL_RULES}}
                for s in ("WVS", "ISSP")
            },
            "question_country_without_pair": stats["pairs_not_formed"],
            "invalid_answers": {s: {str(k): v for k, v in sorted(c.items())} for s, c in invalid.items()},
            "missing_answers": dict(missing_answers),
            "unregistered_codes_treated_as_invalid": unregistered,
            "registry_questions_not_in_inputs": {"WVS": wvs_unread if files and any(
                f.report.survey == "WVS" for f in files) else [], "ISSP": issp_unread},
        },
    }


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _words(counts, empty: str = "none") -> str:
    """A mapping of counts (or shares, or mappings of them) as words, never a raw dict in
    prose (issue 43): {"wave_outside_range": 120, "missing_year": 3} -> "wave outside range
    120, missing year 3"; a nested mapping in parentheses. Keys come from the files and the
    registry: escaped as Markdown text."""
    from histbench.core.markdown import escape_markdown

    if not isinstance(counts, dict):
        return escape_markdown(counts)
    if not counts:
        return empty
    parts = []
    for key, value in counts.items():
        name = escape_markdown(str(key).replace("_", " "))
        if isinstance(value, dict):
            parts.append(f"{name} ({_words(value)})")
        elif isinstance(value, float):
            parts.append(f"{name} {value:.3g}")
        elif isinstance(value, int):
            parts.append(f"{name} {value:,}")
        else:
            parts.append(f"{name} {escape_markdown(value)}")
    return ", ".join(parts)


def _short(names: list[str], shown: int = 8) -> str:
    return ", ".join(names[:shown]) + (", ... (all in histbench.json)" if len(names) > shown else "")


def _cell(text) -> str:
    """A file's own text (a variable label) as one Markdown table cell: no pipe, backtick or line break
    ends the cell, and no HTML tag or link is made of it."""
    import html

    shown = _code(text).replace("[", "\\[").replace("]", "\\]")
    return html.escape(shown, quote=False)


def _code(text) -> str:
    """A file's own name inside a `code span` of a table cell (shown as written, one cell)."""
    return " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _markdown(s: dict) -> str:
    order = ["stable", "moderate", "strong", "very_strong"]
    out = [
        f"**{s['pairs']:,} temporal pairs** over **{s['countries']} countries** "
        f"({s['dated_items']:,} dated prompts, {s['undated_rows']:,} undated prompts, {s['mcq_rows']:,} modal-answer pairs); "
        f"gold distributions need >= {s['min_respondents']} valid respondents.",
        "",
        _table(["survey", "pairs", "questions", "countries"],
               [[k, v["pairs"], v["questions_with_pairs"], v["countries"]] for k, v in s["per_survey"].items()]),
        "",
        "Shift categories (paper Table 1; F.1 tighter/looser boundaries):",
        "",
        _table(["boundaries"] + order + ["total"],
               [[name] + [counts[c] for c in order] + [sum(counts.values())] for name, counts in s["shift_categories"].items()]),
        "",
        "Topic categories (paper Table 4):",
        "",
        _table(["topic category", "questions", "pairs"],
               [[c, v["questions"], v["pairs"]] for c, v in s["per_topic_category"].items()]),
        "",
    ]
    m = s["mode_change"]
    out += [
        f"Mode change (paper 3.6): {_pct(m['shifted_pairs_same_mode_share'])} of {m['shifted_pairs']} shifted pairs keep "
        f"their mode (paper 68.2%); {_pct(m['stable_pairs_mode_changed_share'])} of {m['stable_pairs']} stable pairs "
        f"change it (paper 8.5%). Modal-answer config: {s['mcq']['rows']} pairs "
        f"by shift category: {_words(s['mcq']['by_shift_category'])}; excluded: {_words(s['mcq']['excluded'])}.",
        "",
        mcq_shortcut_markdown(s["mcq_shortcut_audit"]),
        "",
    ]
    noise = s["sampling_noise"]
    if noise["median_of_noise_median"] is not None:
        out += [
            f"Sampling noise (F.4): median noise distance {noise['median_of_noise_median']:.4f} (paper 0.016), "
            f"median 95th percentile {noise['median_of_noise_p95']:.4f} (paper 0.034); share of pairs above their "
            f"own 95th percentile: {_words(noise['share_above_own_p95_by_category'])}.",
            "",
        ]
    ex = s["exclusions"]
    out += [
        "Exclusions (question x country x period cells):",
        "",
        _table(["survey", "with gold"] + list(CELL_RULES),
               [[k, v["with_gold"]] + [v[r] for r in CELL_RULES] for k, v in ex["cells"].items()]),
        "",
        f"Question x country combinations without a pair: {_words(ex['question_country_without_pair'])}.",
        "",
    ]
    for f in ex["respondents_per_file"]:
        dropped = {k: sum(v.values()) for k, v in f["excluded_respondents"].items()}
        out.append(
            f"- `{f['file']}` ({f['survey']}{', study ' + f['study'] if f['study'] else ''}): {f['respondents']:,} respondents; "
            f"excluded: {_words(dropped)}; unusable weights: {_words(f['unusable_weights'])}"
            + ("" if f["value_labels_checked"] else "; CSV: registry codes not checked against value labels")
            + (f"; {len(f['registry_variables_missing'])} registry variable(s) not in the file, skipped "
               f"({_short(f['registry_variables_missing'])})" if f["registry_variables_missing"] else "")
        )
    if ex["unregistered_codes_treated_as_invalid"]:
        out += ["", f"Unregistered answer codes treated as invalid: {_words(ex['unregistered_codes_treated_as_invalid'])}"]
    changes = s.get("scale_changes") or {}
    if changes:
        out += ["", f"Rule 3.2 (a consistent scale, `--scale-change {s.get('scale_policy', 'drop')}`): "
                    f"{sum(e['pairs_not_formed'] for e in changes.values())} pair(s) not formed: "
                    + "; ".join(f"{q} {e['pairs_not_formed']} ({e['reasons'][0]['reason']})" for q, e in changes.items())]
    found = [(f["file"], len(f["questions_located_by_label"]), len(f["questions_not_found"]))
             for f in ex["respondents_per_file"] if f["questions_located_by_label"] or f["questions_not_found"]]
    if found:
        out += ["", "ISSP variables found by their labels (the rest are pinned in the registry): "
                    + "; ".join(f"`{name}` {n} found, {m} not found" for name, n, m in found)
                    + " (variables and reasons in histbench.json)."]
        rows = [[f"`{_code(qid)}`", f"`{_code(f['file'])}:{_code(where.split(' (', 1)[0])}`",
                 _cell(f.get("variable_labels_of_questions_located", {}).get(qid, "")),
                 _cell(where.split(" (", 1)[1].rstrip(")")), len(f.get("questions_pinned", {}))]
                for f in ex["respondents_per_file"] for qid, where in sorted(f["questions_located_by_label"].items())]
        if rows:
            out += ["", "Each variable found by its label (check it against the codebook, then pin it in the "
                        "registry's `sources`), beside the number of questions the registry pins for the file's study "
                        "(`questions_pinned` in histbench.json):",
                    "", _table(["question", "file:variable", "variable label", "how", "pinned for the study"], rows)]
    return "\n".join(out)
