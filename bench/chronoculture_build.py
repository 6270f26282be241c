"""ChronoCulture build speed and memory on files shaped like the real WVS and ISSP releases.

    .venv/bin/python bench/chronoculture_build.py [--respondents 450000] [--width 1400] [--issp-respondents 1100]
        [--widths full,registry] [--runs 3]

Writes once (cached in bench/.cache/chronoculture/, git-ignored), with a fixed seed:

- a WVS time-series .sav with 450,000 respondents over 100 countries and waves 3-7 (about
  60 countries in wave 7), at the real file's width of some 1,400 variables: the
  registry's WVS questions plus labelled filler items, every variable with value labels
  and its negative codes declared as SPSS user-missing values; and the same respondents
  at the registry's width (identifiers and registry questions only);
- one file per ISSP module year of the registry (32 files, .dta and .sav, named like
  GESIS releases: ZA4700_v1-0-0.dta), 6-40 countries each with about 1,100 respondents,
  every question the module asks in that year (not those the registry marks `absent`)
  under the registry's pinned variable or else a label its pattern finds, value labels
  with the non-answer codes of the period (8/9 up to 2009, -8/-9 after), the registry's
  country and weight variables (pinned country codes, C_ALPHAN-style sample codes or
  numeric codes with labels; where the registry leaves them to the file, GESIS's names),
  and where the registry applies GESIS's reunification factors, the variable they are
  keyed on with West and East Germany under the codes they name.

Answers follow planned distributions whose shifts between the oldest and the newest
period are drawn in the proportions of the paper's Table 1, so the build's counts can be
compared with Tables 1 and 4 (their size depends on the registry and the planned country
coverage, not on the paper's data).

Then, each in a fresh process and for each width:

  baseline  pyreadstat of exactly the columns the build needs, from every file (usecols), nothing else;
  build     the whole `histbench build chronoculture` on the same files (hashing, metadata, variables
            found by label, reading, gold cells, rule 3.2, pairs, noise, prompts, schema check,
            parquet, card).

in the order baseline, build, baseline, build, ..., baseline (`--runs` builds, one bare read
more), and prints wall and CPU time, each build's ratio to the mean of the bare reads just
before and just after it (target: CPU <= 1.5; a machine whose speed drifts during the run
moves both), each process's peak RSS (target <= 4 GB), and the build's counts beside the
paper's. Each build also clocks its own pyreadstat reads of the same columns (the baseline's
call, in the same process and minute) and prints the build's CPU over theirs: the rest is the
build's own work, a figure the machine's drift between processes does not move.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache" / "chronoculture"
WAVES = (3, 4, 5, 6, 7)
WAVE_YEARS = {3: 1996, 4: 2001, 5: 2006, 6: 2012, 7: 2018}
WVS_MISSING = {-1: "Don't know", -2: "No answer", -3: "Not applicable", -4: "Not asked in survey", -5: "Missing; Unknown"}
# Table 1's shares of pairs by shift category, and the W ranges drawn within each
SHIFT_PLAN = ((0.252, 0.0, 0.025), (0.534, 0.035, 0.095), (0.176, 0.105, 0.19), (0.038, 0.21, 0.32))
WIDE_LATE_WAVE_ONLY = ("E233A", "E233B", "E265", "H009", "H010", "H011", "G255", "G256", "G257", "G062", "G063")


def _registry():
    from histbench.builders.chronoculture.registry import load_registry
    from histbench.core.resources import Resources

    return load_registry(Resources.default().source_dir("chronoculture") / "registry.yaml")


def _countries():
    from histbench.builders.chronoculture.countries import CountryTable
    from histbench.core.resources import Resources

    return CountryTable.load(Resources.default().source_dir("chronoculture") / "countries.csv")


def _planned_pair(rng, k: int, values) -> tuple[np.ndarray, np.ndarray]:
    """(p_old, p_new) with W(p_old, p_new) drawn from SHIFT_PLAN."""
    from histbench.builders.chronoculture.distance import normalised_wasserstein

    p_old = 0.8 * rng.dirichlet(np.full(k, 2.0)) + 0.2 / k
    shares = np.array([s for s, _, _ in SHIFT_PLAN])
    _, low, high = SHIFT_PLAN[rng.choice(len(SHIFT_PLAN), p=shares / shares.sum())]
    target = rng.uniform(low, high)
    end = np.zeros(k)
    end[0 if rng.random() < 0.5 else k - 1] = 1.0
    reach = normalised_wasserstein(p_old, end, values)
    if reach < target:
        end = end[::-1]
        reach = normalised_wasserstein(p_old, end, values)
    t = min(1.0, target / max(reach, 1e-9))
    return p_old, (1 - t) * p_old + t * end


def _sample(rng, dists: np.ndarray, group: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """One answer per respondent: code drawn from the distribution of its group."""
    cum = np.cumsum(dists, axis=1)[group]
    index = (rng.random(len(group))[:, None] > cum).sum(axis=1)
    return codes[np.minimum(index, len(codes) - 1)]


def make_wvs(folder: Path, respondents: int, width: int, n_countries: int = 100, seed: int = 0) -> dict:
    import pandas as pd
    import pyreadstat

    rng = np.random.default_rng(seed)
    registry = _registry()
    table = _countries()
    countries = [c.iso_numeric for c in table.countries][:n_countries]
    # participation: every country in wave 7 with probability 0.6, older waves 0.55 each
    plan = [(c, w) for c in countries for w in WAVES if rng.random() < (0.6 if w == 7 else 0.55)]
    sizes = rng.integers(int(0.75 * respondents / len(plan)), int(1.25 * respondents / len(plan)), len(plan))
    group = np.repeat(np.arange(len(plan)), sizes)[:respondents]
    n = len(group)
    wave_of = np.array([w for _, w in plan], float)
    columns = {
        "S002VS": wave_of[group], "S003": np.array([c for c, _ in plan], float)[group],
        "S020": np.array([WAVE_YEARS[w] for _, w in plan], float)[group],
        "S017": rng.uniform(0.3, 2.5, n).round(4),
    }
    labels = {"S003": {c.iso_numeric: c.name for c in table.countries},
              "S002VS": {w: f"Wave {w}" for w in range(1, 8)}}
    var_labels = {"S002VS": "Chronology of EVS-WVS waves", "S003": "ISO 3166-1 numeric country code",
                  "S020": "Year survey", "S017": "Weight"}
    span = {}
    for country, wave in plan:
        low, high = span.get(country, (wave, wave))
        span[country] = (min(low, wave), max(high, wave))
    questions = []
    for q in registry.wvs_questions:
        codes = np.array([o.codes[0] for o in q.options])
        late = q.variable.startswith(WIDE_LATE_WAVE_ONLY)
        dists = np.zeros((len(plan), len(codes)))
        pairs = {}
        for g, (country, wave) in enumerate(plan):
            if country not in pairs:
                pairs[country] = _planned_pair(rng, len(codes), q.values)
            old, new = pairs[country]
            first, last = span[country]  # the planned shift runs from the country's first wave to its last
            t = (wave - first) / max(1, last - first)
            dists[g] = (1 - t) * old + t * new
        values = _sample(rng, dists, group, codes).astype(np.int16)
        invalid = rng.random(n) < 0.04
        values[invalid] = rng.choice([-1, -2, -5], int(invalid.sum()))
        not_asked = rng.random(len(plan)) < 0.12
        if late:
            not_asked |= wave_of < 6
        values[not_asked[group]] = -4
        columns[q.variable] = values
        labels[q.variable] = {**{int(o.codes[0]): o.label for o in q.options}, **WVS_MISSING}
        var_labels[q.variable] = q.text[:120]
        questions.append(q.variable)
    filler = max(0, width - len(columns))
    for i in range(filler):
        k = 4 + i % 7
        columns[f"Z{i:04d}"] = rng.integers(1, k + 1, n, dtype=np.int8)
        labels[f"Z{i:04d}"] = {**{c: f"point {c}" for c in range(1, k + 1)}, **WVS_MISSING}
        var_labels[f"Z{i:04d}"] = f"Filler item {i}"
    frame = pd.DataFrame(columns)
    missing = {c: [{"lo": -5, "hi": -1}] for c in frame.columns if c in labels and c not in ("S002VS", "S003")}
    ids = ["S002VS", "S003", "S020", "S017"]
    files = {}
    for kind, subset in (("full", list(frame.columns)), ("registry", ids + questions)):
        path = folder / f"wvs_timeseries_{n}x{len(subset)}_{kind}.sav"
        tmp = path.with_suffix(".tmp.sav")
        pyreadstat.write_sav(frame[subset], tmp, column_labels={c: var_labels.get(c, c) for c in subset},
                             variable_value_labels={c: v for c, v in labels.items() if c in subset},
                             missing_ranges={c: v for c, v in missing.items() if c in subset}, row_compress=True)
        tmp.replace(path)
        files[kind] = {"path": path.name, "columns": ids + questions, "variables": len(subset)}
    return files


ISSP_POOL = ("AUS DEU GBR USA AUT ITA HUN IRL NLD NOR ISR NIR SWE CZE SVN POL BGR RUS NZL CAN PHL JPN ESP LVA FRA "
             "CYP CHE CHL DNK FIN PRT SVK ZAF KOR TWN MEX BEL HRV ISL LTU TUR VEN SUR IND THA GEO").split()
SAMPLE_CODES = {"DEU": ("DE-W", "DE-E"), "ISR": ("IL-J", "IL-A"), "GBR": ("GB-GBN",), "NIR": ("GB-NIR",),
                "BEL": ("BE-FLA", "BE-WAL")}


def _issp_countries(rng, year: int, first_year: int) -> list[str]:
    wanted = 6 if year < 1990 else 14 if year < 1995 else 22 if year < 2002 else 30 if year < 2010 else 36
    core = ISSP_POOL[:6] if first_year < 1990 else []
    rest = [c for c in ISSP_POOL if c not in core]
    more = list(rng.choice(rest[: max(wanted + 6, 12)], size=min(len(rest), wanted - len(core)), replace=False))
    return core + more


def make_issp(folder: Path, per_country: int, seed: int = 1) -> list[dict]:
    import pandas as pd
    import pyreadstat

    rng = np.random.default_rng(seed)
    registry = _registry()
    table = _countries()
    studies = [s for s in registry.studies if s.year.fixed is not None]
    first_year = {}
    for s in studies:
        first_year[s.module] = min(first_year.get(s.module, 9999), s.year.fixed)
    plans: dict = {}
    written = []
    chosen = {s.id: _issp_countries(rng, s.year.fixed, first_year[s.module]) for s in studies}
    years_of: dict = {}
    for s in studies:
        for alpha in (set(s.country.map.values()) if s.country.map else chosen[s.id]):
            low, high = years_of.get((s.module, alpha), (s.year.fixed, s.year.fixed))
            years_of[(s.module, alpha)] = (min(low, s.year.fixed), max(high, s.year.fixed))
    for index, study in enumerate(studies):
        year = study.year.fixed
        modern = year >= 2009
        countries = chosen[study.id]
        if study.country.map:  # pinned country codes: the registry's own map
            by_alpha = {}
            for code, alpha in study.country.map.items():
                by_alpha.setdefault(alpha, []).append(code)
            countries = list(by_alpha)
        samples = []  # (country alpha3, sample code or label key)
        for alpha in countries:
            if study.country.map:
                samples += [(alpha, code) for code in by_alpha[alpha]]
            else:
                samples += [(alpha, code) for code in SAMPLE_CODES.get(alpha, (table.by_alpha3[alpha].alpha2,))]
        sizes = rng.integers(int(0.8 * per_country), int(1.3 * per_country), len(samples))
        group = np.repeat(np.arange(len(samples)), sizes)
        n = len(group)
        columns, var_labels, value_labels = {}, {}, {}
        if study.country.map:
            country_var = study.country.variable
            columns[country_var] = np.array([code for _, code in samples], float)[group]
            var_labels[country_var] = "Country"
        elif study.country.coding == "alpha2" or (study.country.coding == "auto" and modern):
            country_var = study.country.variable or "C_ALPHAN"   # the registry's pinned name, else the GESIS one
            columns[country_var] = np.array([code for _, code in samples], dtype=object)[group]
            var_labels[country_var] = "Country Prefix ISO 3166 Code - alphanumeric"
        else:   # coding "label" (the pinned variable) or auto: numeric codes whose value labels name the samples
            country_var = study.country.variable or "V3"
            codes = {code: i + 1 for i, code in enumerate(dict.fromkeys(code for _, code in samples))}
            if study.reunification is not None and study.reunification.variable == country_var:
                codes = _reunification_codes(codes, study.reunification.factors)
            columns[country_var] = np.array([codes[code] for _, code in samples], float)[group]
            value_labels[country_var] = {i: f"{code}-{table.from_text(code).name}" for code, i in codes.items()}
            var_labels[country_var] = "Country"
        if study.reunification is not None and study.reunification.variable not in columns:
            # GESIS's numeric country variable beside the alphanumeric one: West and East Germany
            # under the codes the reunification factors name, other samples under the rest
            codes = _reunification_codes({code: i + 1 for i, code in enumerate(dict.fromkeys(c for _, c in samples))},
                                         study.reunification.factors)
            columns[study.reunification.variable] = np.array([codes[code] for _, code in samples], float)[group]
            var_labels[study.reunification.variable] = "Country"
        weight_var = study.weight or ("WEIGHT" if modern else "V200")
        columns[weight_var] = rng.uniform(0.5, 1.6, n).round(3)
        var_labels[weight_var] = "Weighting factor"
        needed = [country_var, weight_var]
        if study.reunification is not None and study.reunification.variable != country_var:
            needed.append(study.reunification.variable)
        invalid_codes = {-8: "Can't choose", -9: "No answer"} if year >= 2010 else {8: "Can't choose", 9: "NA"}
        for number, (question, pinned) in enumerate(registry.questions_of(study), start=300):
            variable = pinned.variable if pinned else f"V{number}"
            codes = np.array([o.codes[0] for o in question.options])
            dists = np.zeros((len(samples), len(codes)))
            for g, (alpha, _) in enumerate(samples):
                key = (question.id, alpha)
                if key not in plans:
                    plans[key] = _planned_pair(rng, len(codes), question.values)
                old, new = plans[key]
                first, last = years_of[(study.module, alpha)]  # the country's own first and last module year
                t = (year - first) / max(1, last - first)
                dists[g] = (1 - t) * old + t * new
            values = _sample(rng, dists, group, codes)
            bad = rng.random(n) < 0.03
            values[bad] = rng.choice(list(invalid_codes), int(bad.sum()))
            columns[variable] = values.astype(float)
            if question.is_scale:
                ends = {int(codes[0]): question.options[0].label, int(codes[-1]): question.options[-1].label}
                value_labels[variable] = {**ends, **({98: "Can't choose", 99: "NA"} if year < 2010 else invalid_codes)}
                if year < 2010:
                    columns[variable][bad] = 98
            else:
                value_labels[variable] = {**{int(c): o.label for c, o in zip(codes, question.options, strict=True)},
                                          **invalid_codes}
            var_labels[variable] = _short_label(f"Q{number - 299}", question)
            needed.append(variable)
        frame = pd.DataFrame(columns)
        suffix = ".dta" if index % 2 else ".sav"
        name = f"{study.id}{'_v1-0-0' if year >= 2005 else ''}{suffix}"
        path = folder / "issp" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name("tmp_" + name)
        if suffix == ".sav":
            pyreadstat.write_sav(frame, tmp, column_labels=var_labels, variable_value_labels=value_labels,
                                 row_compress=True)
        else:
            pyreadstat.write_dta(frame, tmp, column_labels=var_labels, variable_value_labels={
                c: {int(k): v for k, v in m.items()} for c, m in value_labels.items()})
        tmp.replace(path)
        written.append({"path": f"issp/{name}", "columns": needed, "respondents": n})
    return written


def _reunification_codes(codes: dict, factors: dict) -> dict:
    """Sample codes renumbered so that West and East Germany carry the two codes the study's
    reunification factors name (lower for the West, as in GESIS's files) and no other sample does."""
    west, east = sorted(int(k) for k in factors)
    rest = iter(c for c in range(1, len(codes) + 3) if c not in (west, east))
    return {code: west if code == "DE-W" else east if code == "DE-E" else next(rest) for code in codes}


def _short_label(prefix: str, question) -> str:
    """A label of at most 80 characters (Stata's limit) around the words the question's pattern finds,
    the way GESIS labels are short ("Q6a Govt responsibility: provide job for everyone")."""
    text = question.text
    match = question.label_pattern.search(text) if question.label else None
    if match is None or len(text) <= 74:
        return f"{prefix} {text[:74]}"
    # the first 74-character window the pattern still finds (an anchored "^(?!..).*(words)" matches at 0)
    for start in range(max(0, min(match.start(), len(text) - 74)), len(text) - 73):
        if question.label_pattern.search(text[start:start + 74]):
            return f"{prefix} {text[start:start + 74]}"
    # the pattern's words lie further apart ("crim.*detain"): the match's first and last words
    head = text[match.start():match.start() + 36]
    joined = f"{head} {text[max(match.start() + 36, match.end() - 37):match.end()]}"
    return f"{prefix} {joined}" if question.label_pattern.search(joined) else f"{prefix} {text[:74]}"


# ---------------------------------------------------------------- timing (everything above writes the files)
RECIPE_END = "# ---------------------------------------------------------------- timing"


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss it does not carry over
    the parent's peak across fork + exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_baseline(folder: Path, plan: dict, width: str) -> dict:
    import pyreadstat

    files = [plan["wvs"][width]] + plan["issp"]
    start, cpu = time.perf_counter(), _cpu()
    rows = 0
    for spec in files:
        path = folder / spec["path"]
        reader = pyreadstat.read_sav if path.suffix == ".sav" else pyreadstat.read_dta
        frame, _ = reader(str(path), usecols=spec["columns"], user_missing=True, apply_value_formats=False)
        rows += len(frame)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    return {"seconds": seconds, "cpu": cpu, "peak_rss_mb": _peak_rss_mb(), "rows": rows}


def child_build(folder: Path, plan: dict, width: str) -> dict:
    import pyreadstat  # imported before the clock starts, as in the baseline

    from histbench.builders.chronoculture import BUILDER
    from histbench.builders.machinery.build import run_build

    # The build's own data reads (the baseline's call: usecols, every file) are clocked where they
    # happen, so that the build's own work can be told from the read in the same process and minute.
    reads = {"cpu": 0.0, "files": 0}

    def clocked(reader):
        def read(path, *args, **kwargs):
            if kwargs.get("metadataonly"):
                return reader(path, *args, **kwargs)
            before = _cpu()
            try:
                return reader(path, *args, **kwargs)
            finally:
                reads["cpu"] += _cpu() - before
                reads["files"] += 1
        return read

    pyreadstat.read_sav, pyreadstat.read_dta = clocked(pyreadstat.read_sav), clocked(pyreadstat.read_dta)
    start, cpu = time.perf_counter(), _cpu()
    out = run_build(BUILDER, {"wvs": folder / plan["wvs"][width]["path"],
                              "issp": [folder / s["path"] for s in plan["issp"]]}, out_root=folder / f"build_{width}")
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    if reads["files"] != 1 + len(plan["issp"]):  # the build no longer reads through pyreadstat's module functions
        raise SystemExit(f"the build's own reads were clocked for {reads['files']} of {1 + len(plan['issp'])} "
                         f"files: bench/chronoculture_build.py must clock them where the build now calls pyreadstat")
    manifest = json.loads((out / "histbench.json").read_text())
    s = manifest["summary"]
    located = sum(len(f["questions_located_by_label"]) for f in s["exclusions"]["respondents_per_file"])
    not_found = sum(len(f["questions_not_found"]) for f in s["exclusions"]["respondents_per_file"])
    per_module = {}
    for topic, n in s["per_topic"].get("ISSP", {}).items():
        per_module[topic] = n
    return {"seconds": seconds, "cpu": cpu, "read_cpu": reads["cpu"], "read_files": reads["files"],
            "peak_rss_mb": _peak_rss_mb(), "pairs": s["pairs"],
            "per_survey": {k: v["pairs"] for k, v in s["per_survey"].items()},
            "questions": {k: v["questions_with_pairs"] for k, v in s["per_survey"].items()},
            "countries": s["countries"], "shift": s["shift_categories"]["default"],
            "topic_categories": s["per_topic_category"], "issp_modules": per_module,
            "located": located, "not_found": not_found, "scale_changes": len(s["scale_changes"])}


def _env() -> dict:
    import os

    return {**os.environ, "HISTBENCH_PROGRESS": "0"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--respondents", type=int, default=450_000)
    parser.add_argument("--width", type=int, default=1400, help="variables of the full-width WVS file")
    parser.add_argument("--countries", type=int, default=100, help="WVS countries (a smaller run: fewer)")
    parser.add_argument("--issp-respondents", type=int, default=1100, help="respondents per ISSP country sample")
    parser.add_argument("--widths", default="full,registry", help="which WVS files to time (full, registry)")
    parser.add_argument("--runs", type=int, default=1, help="builds per width, each between two bare reads (a "
                                                             "shared machine: several, and read the range)")
    parser.add_argument("--child", choices=["baseline", "build", "make"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    args = parser.parse_args()
    # the files depend on the registry and on the generator above the timing code: a change to either
    # writes them afresh
    import hashlib

    recipe = Path(__file__).read_text(encoding="utf-8").split(RECIPE_END)[0].encode("utf-8")
    made_from = hashlib.sha256(recipe + (ROOT / "sources" / "chronoculture" / "registry.yaml").read_bytes()
                               ).hexdigest()[:10]
    folder = args.folder or CACHE / (f"n{args.respondents}_w{args.width}_c{args.countries}_i{args.issp_respondents}"
                                     f"_{made_from}")
    if args.child == "make":
        folder.mkdir(parents=True, exist_ok=True)
        plan = {"wvs": make_wvs(folder, args.respondents, args.width, args.countries),
                "issp": make_issp(folder, args.issp_respondents)}
        (folder / "plan.json").write_text(json.dumps(plan, indent=1))
        return
    if args.child:
        plan = json.loads((folder / "plan.json").read_text())
        run = child_baseline if args.child == "baseline" else child_build
        print(json.dumps(run(folder, plan, args.kind)))
        return

    if not (folder / "plan.json").exists():
        print(f"writing the files once into {folder} ...", file=sys.stderr)
        start = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--child", "make", "--folder", str(folder), "--respondents",
                        str(args.respondents), "--width", str(args.width), "--countries", str(args.countries),
                        "--issp-respondents", str(args.issp_respondents)], check=True)
        print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr)
    plan = json.loads((folder / "plan.json").read_text())

    def child(kind: str, width: str) -> dict:
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--folder", str(folder), "--kind", width],
                             check=True, capture_output=True, text=True, env=_env())
        return json.loads(out.stdout.strip().splitlines()[-1])

    issp_bytes = sum((folder / s["path"]).stat().st_size for s in plan["issp"])
    issp_rows = sum(s["respondents"] for s in plan["issp"])
    print(f"ISSP: {len(plan['issp'])} module files, {issp_rows:,} respondents, {issp_bytes / 1e6:.0f} MB")
    results = {}
    for width in args.widths.split(","):
        spec = plan["wvs"][width]
        size = (folder / spec["path"]).stat().st_size / 1e6
        print(f"\nWVS {width} width: {spec['path']} ({spec['variables']:,} variables, {size:.0f} MB)")
        ratios, inside = [], []
        before = child("baseline", width)  # every build between two bare reads: a machine whose speed
        for run in range(1, args.runs + 1):  # drifts meets the build halfway between them
            build = child("build", width)
            after = child("baseline", width)
            results[width] = build
            bare_cpu, bare_wall = (before["cpu"] + after["cpu"]) / 2, (before["seconds"] + after["seconds"]) / 2
            ratios.append(build["cpu"] / bare_cpu)
            print(f"  run {run}: baseline  pyreadstat, needed columns only, before and after the build: "
                  f"{before['seconds']:.2f} and {after['seconds']:.2f} s wall, {before['cpu']:.2f} and "
                  f"{after['cpu']:.2f} s CPU, peak RSS {max(before['peak_rss_mb'], after['peak_rss_mb']):.0f} MB "
                  f"({after['rows']:,} rows)")
            print(f"         build     histbench build chronoculture:   {build['seconds']:.2f} s wall, "
                  f"{build['cpu']:.2f} s CPU, peak RSS {build['peak_rss_mb']:.0f} MB")
            print(f"         ratio     build / mean of the two bare reads = {build['seconds'] / bare_wall:.2f} wall, "
                  f"{ratios[-1]:.2f} CPU (target <= 1.5); peak RSS "
                  f"{'within' if build['peak_rss_mb'] <= 4096 else 'ABOVE'} 4 GB")
            inside.append(build["cpu"] / build["read_cpu"])
            print(f"         inside    the build's own reads of those columns ({build['read_files']} files): "
                  f"{build['read_cpu']:.2f} s CPU, the rest (the build's own work) "
                  f"{build['cpu'] - build['read_cpu']:.2f} s; build / its reads = {inside[-1]:.2f} CPU")
            before = after
        if len(ratios) > 1:
            print(f"  CPU ratio over {len(ratios)} runs: {min(ratios):.2f}-{max(ratios):.2f} "
                  f"(median {statistics.median(ratios):.2f}); build / its own reads: "
                  f"{min(inside):.2f}-{max(inside):.2f} (median {statistics.median(inside):.2f})")
    build = next(iter(results.values()))
    from histbench.builders.chronoculture.builder import PAPER_PAIRS, PAPER_TABLE_1, PAPER_TABLE_4

    print(f"\nbuild counts (generated files) beside the paper's: {build['pairs']:,} pairs (10,360) over "
          f"{build['countries']} countries (72); questions with pairs: "
          + ", ".join(f"{k} {v}" for k, v in build["questions"].items())
          + f" ({sum(build['questions'].values())} in all; paper 408); ISSP questions found by label: {build['located']:,}, not found: {build['not_found']:,}; "
            f"scale changes: {build['scale_changes']}")
    print("  by survey:  " + ", ".join(f"{k} {v:,} ({PAPER_PAIRS[k]:,})" for k, v in build["per_survey"].items()))
    total = sum(build["shift"].values())
    print("  Table 1:    " + ", ".join(
        f"{c} {build['shift'][c]:,} = {100 * build['shift'][c] / max(total, 1):.1f}% "
        f"({PAPER_TABLE_1[c]:,} = {100 * PAPER_TABLE_1[c] / 10360:.1f}%)" for c in PAPER_TABLE_1))
    print("  Table 4:    " + "; ".join(
        f"{re.sub(r',.*', '', c)} {v['questions']} questions ({PAPER_TABLE_4[c]}), {v['pairs']:,} pairs"
        for c, v in build["topic_categories"].items()))
    print("  ISSP pairs by module: " + ", ".join(f"{k} {v:,}" for k, v in sorted(build["issp_modules"].items())))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
