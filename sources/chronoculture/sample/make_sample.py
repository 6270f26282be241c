"""Write the bundled ChronoCulture sample: synthetic survey files in the real formats.

    .venv/bin/python sources/chronoculture/sample/make_sample.py

Writes, next to this script (fixed seed, so the respondents are the same on every run;
the .sav headers carry a creation time, so the bytes differ):

- wvs_timeseries_synthetic.sav: a WVS time-series-shaped file (S002VS wave, S003 ISO
  country, COUNTRY_ALPHA, S020 year, S017 weight, nine question variables with the
  time-series names and value labels);
- ZA1950_synthetic.sav: an ISSP 1990 Role of Government II-shaped module file (v3 ISSP
  country codes, v49-v55 government-responsibility items, v114 weight);
- ZA2900_synthetic.dta: an ISSP 1996 Role of Government III-shaped module file (v3, v36-v42,
  v325);
- ZA6900_synthetic.sav: an ISSP 2016 Role of Government V-shaped file in the layout of
  ZA6900_v2-0-0 (c_alphan sample codes such as DE-W and GB-NIR, WEIGHT, v21-v27 under the
  labels the real file gives them, e.g. "Q7g Government responsibility: reduce income
  differences rich/ poor", -8/-9 non-answers; see sources/chronoculture/issp_evidence.yaml):
  the registry pins v21-v24, v26 and v27 and the build finds the industry item (v25) by
  its label; the industry item offers a fifth, middle answer, a
  scale the older files lack (paper 3.2: that question gets no pair).

Every respondent is invented: answer counts are fixed per cell from planned
distributions (largest remainder), then shuffled. The plan covers every shift category
(stable, moderate, strong, very strong), cells just below and at the 500-respondent
cutoff, invalid codes (don't know, no answer, not asked, can't choose), weights (varied,
missing, zero, negative), West and East German samples pooled into one country, a
country code missing from the country table, a wave outside 3-7, a country without a
wave-7 survey, a fieldwork period spanning two years, a strong shift whose mode stays
the same and a stable pair whose mode changes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat

SEED = 20260401
HERE = Path(__file__).resolve().parent
TARGET = {"stable": 0.012, "moderate": 0.06, "strong": 0.145, "very_strong": 0.30}
CYCLE = ("stable", "moderate", "strong", "very_strong")


def w_norm(p, q):
    k = len(p)
    return float(np.abs(np.cumsum(p) - np.cumsum(q))[:-1].sum() / (k - 1))


def shifted(p_old, category, direction):
    """A distribution at normalised Wasserstein distance TARGET[category] from p_old."""
    p_old = np.asarray(p_old, float)
    k = len(p_old)
    end = np.zeros(k)
    end[0 if direction < 0 else k - 1] = 1.0
    reach = w_norm(p_old, end)
    if reach < TARGET[category] * 1.05:
        end = end[::-1]
        reach = w_norm(p_old, end)
    t = TARGET[category] / reach
    return (1 - t) * p_old + t * end


def counts(p, n):
    """Exact counts for n respondents (largest remainder)."""
    raw = np.asarray(p, float) * n
    base = np.floor(raw).astype(int)
    order = np.argsort(-(raw - base), kind="stable")
    base[order[: n - base.sum()]] += 1
    return base


def answers(rng, p, codes, n_valid, invalid):
    """Shuffled codes: exact valid counts plus the given invalid codes {code: count}."""
    values = np.repeat(codes, counts(p, n_valid)).astype(float)
    extra = np.concatenate([np.full(c, float(code)) for code, c in invalid.items()]) if invalid else np.array([])
    out = np.concatenate([values, extra])
    rng.shuffle(out)
    return out


def base_distribution(rng, k):
    p = rng.dirichlet(np.full(k, 2.0))
    return 0.85 * p + 0.15 / k


# ------------------------------------------------------------------------------ WVS
WVS_QUESTIONS = {  # variable: (label, codes in scale order, value labels of the answers)
    "A008": ("Feeling of happiness", [1, 2, 3, 4], ["Very happy", "Quite happy", "Not very happy", "Not at all happy"]),
    "A165": ("Most people can be trusted", [1, 2], ["Most people can be trusted", "Can't be too careful"]),
    "A170": ("Satisfaction with your life", list(range(1, 11)), ["Dissatisfied"] + [str(i) for i in range(2, 10)] + ["Satisfied"]),
    "E018": ("Future changes: Greater respect for authority", [1, 2, 3], ["Good thing", "Don't mind", "Bad thing"]),
    "E069_11": ("Confidence: The Government", [1, 2, 3, 4], ["A great deal", "Quite a lot", "Not very much", "None at all"]),
    "F063": ("How important is God in your life", list(range(1, 11)), ["Not at all important"] + [str(i) for i in range(2, 10)] + ["Very important"]),
    "F120": ("Justifiable: Abortion", list(range(1, 11)), ["Never justifiable"] + [str(i) for i in range(2, 10)] + ["Always justifiable"]),
    "G006": ("How proud of nationality", [1, 2, 3, 4], ["Very proud", "Quite proud", "Not very proud", "Not at all proud"]),
    "D059": ("Men make better political leaders than women do", [1, 2, 3, 4], ["Agree strongly", "Agree", "Disagree", "Strongly disagree"]),
}
WVS_MISSING_LABELS = {-1: "Don't know", -2: "No answer", -3: "Not applicable", -4: "Not asked in survey", -5: "Missing; Unknown"}
WVS_COUNTRIES = {124: ("CAN", "Canada"), 276: ("DEU", "Germany"), 392: ("JPN", "Japan"), 484: ("MEX", "Mexico"),
                 566: ("NGA", "Nigeria"), 999: ("ATL", "Atlantis (synthetic, not in the country table)")}
# country -> {wave: (year(s), respondents)}
WVS_SURVEYS = {
    124: {3: (1996, 560), 4: (2000, 540), 6: (2012, 530), 7: ((2017, 2018), 560)},
    276: {3: (1997, 540), 5: (2006, 545), 7: (2018, 550)},
    392: {3: (1995, 525), 4: (2000, 520), 5: (2005, 560), 7: (2019, 540)},
    484: {2: (1990, 120), 4: (2000, 530), 5: (2005, 530), 6: (2012, 520)},  # no wave 7; wave 2 is dropped
    566: {3: (1995, 540), 6: (2011, 535), 7: (2018, 545)},
    999: {6: (2013, 80), 7: (2019, 80)},
}
WVS_NOT_ASKED = {("E069_11", 3), ("D059", 3)}  # variable, wave: every answer -4


def make_wvs(rng, out: Path = HERE):
    rows = []
    plan_index = 0
    dists = {}
    for var, (_, codes, _) in WVS_QUESTIONS.items():
        for country, waves in WVS_SURVEYS.items():
            order = sorted(waves)
            p_old = base_distribution(rng, len(codes))
            category = CYCLE[plan_index % 4]
            plan_index += 1
            p_new = shifted(p_old, category, rng.choice([-1, 1]))
            for i, wave in enumerate(order):
                t = i / max(1, len(order) - 1)
                dists[(var, country, wave)] = (1 - t) * p_old + t * p_new
    # handcrafted cases (paper Figure 4): a strong shift that keeps its mode, a stable pair whose mode flips
    dists[("A008", 392, 3)] = np.array([0.12, 0.70, 0.13, 0.05])
    dists[("A008", 392, 4)] = dists[("A008", 392, 5)] = np.array([0.14, 0.62, 0.16, 0.08])
    dists[("A008", 392, 7)] = np.array([0.20, 0.45, 0.22, 0.13])
    dists[("G006", 124, 3)] = dists[("G006", 124, 4)] = dists[("G006", 124, 6)] = np.array([0.36, 0.34, 0.20, 0.10])
    dists[("G006", 124, 7)] = np.array([0.34, 0.36, 0.20, 0.10])
    dists[("E018", 276, 3)] = dists[("E018", 276, 5)] = np.array([0.62, 0.25, 0.13])
    dists[("E018", 276, 7)] = np.array([0.616, 0.254, 0.13])

    for country, waves in WVS_SURVEYS.items():
        alpha = WVS_COUNTRIES[country][0]
        for wave, (years, n) in waves.items():
            frame = {"S002VS": np.full(n, wave, float), "S003": np.full(n, country, float)}
            frame["COUNTRY_ALPHA"] = np.full(n, alpha, object)
            if isinstance(years, tuple):
                frame["S020"] = np.where(np.arange(n) < int(n * 0.7), years[0], years[1]).astype(float)
            else:
                frame["S020"] = np.full(n, years, float)
            if country == 276:
                weight = rng.uniform(0.6, 1.4, n).round(4)
            elif country == 566 and wave == 7:
                weight = rng.uniform(0.5, 1.5, n).round(4)
                weight[:3] = np.nan  # missing
                weight[3:5] = 0.0  # zero
                weight[5] = -1.0  # negative
            else:
                weight = np.ones(n)
            frame["S017"] = weight
            for var, (_, codes, _) in WVS_QUESTIONS.items():
                if (var, wave) in WVS_NOT_ASKED or wave == 2:
                    frame[var] = np.full(n, -4.0)
                    continue
                p = dists.get((var, country, wave), np.full(len(codes), 1 / len(codes)))
                invalid = {-1: int(rng.integers(3, 15)), -2: int(rng.integers(0, 5)), -5: int(var == "A008")}
                if (var, country, wave) == ("A170", 392, 4):
                    invalid = {-1: n - 499}  # 499 valid respondents: below the cutoff
                elif (var, country, wave) == ("A170", 392, 3):
                    invalid = {-1: n - 500}  # exactly 500: kept
                elif (var, country, wave) == ("F120", 484, 6):
                    invalid = {-1: n - 300, -2: 0}  # far too few
                elif (var, country, wave) == ("F063", 124, 6):
                    invalid = {-1: n}  # everyone answered don't know
                n_valid = n - sum(invalid.values())
                if n_valid <= 0:
                    frame[var] = answers(rng, p, codes, 0, {-1: n})
                else:
                    frame[var] = answers(rng, p, codes, n_valid, invalid)
            rows.append(pd.DataFrame(frame))
    df = pd.concat(rows, ignore_index=True)
    value_labels = {var: {**dict(zip(codes, labels, strict=True)), **WVS_MISSING_LABELS}
                    for var, (_, codes, labels) in WVS_QUESTIONS.items()}
    value_labels["S003"] = {code: name for code, (_, name) in WVS_COUNTRIES.items()}
    value_labels["S002VS"] = {w: f"Wave {w}" for w in range(1, 8)}
    labels = {"S002VS": "Chronology of EVS-WVS waves", "S003": "ISO 3166-1 numeric country code",
              "COUNTRY_ALPHA": "ISO 3166-1 alpha-3 country code", "S020": "Year survey", "S017": "Weight",
              **{var: label for var, (label, _, _) in WVS_QUESTIONS.items()}}
    for column in df.columns:
        if column not in ("COUNTRY_ALPHA", "S017"):
            df[column] = df[column].astype(float)
    pyreadstat.write_sav(df, out / "wvs_timeseries_synthetic.sav", column_labels=labels,
                         variable_value_labels=value_labels, compress=True,
                         file_label="Synthetic WVS time-series sample for histbench (invented respondents)")
    return df


# ------------------------------------------------------------------------------ ISSP
ROG_ITEMS = ["jobs", "prices", "health", "old", "industry", "unemployed", "income_gap"]
ROG_LABELS = {1: "Definitely should be", 2: "Probably should be", 3: "Probably should not be",
              4: "Definitely should not be", 8: "Can't choose", 9: "NA"}
ISSP_FILES = {
    "ZA1950_synthetic.sav": {
        "year": 1990, "vars": [f"v{n}" for n in range(49, 56)], "weight": "v114",
        "countries": {1: ("Australia", 560), 2: ("Germany-West", 310), 3: ("Germany-East", 250),
                      4: ("Great Britain", 540), 6: ("USA", 560), 7: ("Hungary", 530), 99: ("Unknown sample", 40)},
    },
    "ZA2900_synthetic.dta": {
        "year": 1996, "vars": [f"v{n}" for n in range(36, 43)], "weight": "v325",
        "countries": {1: ("Australia", 570), 2: ("Germany-West", 300), 3: ("Germany-East", 260),
                      4: ("Great Britain", 545), 6: ("USA", 555), 8: ("Hungary", 540), 5: ("Northern Ireland", 520)},
    },
}
ISSP_UNIT = {1: "AUS", 2: "DEU", 3: "DEU", 4: "GBR", 6: "USA", 7: "HUN", 8: "HUN", 5: "NIR", 99: None}
ZA6900_SAMPLES = {"AU": ("AUS", 720), "DE-W": ("DEU", 420), "DE-E": ("DEU", 330), "GB-GBN": ("GBR", 700),
                  "GB-NIR": ("NIR", 690), "US": ("USA", 710), "HU": ("HUN", 705)}
# the real ZA6900 labels: Q7g as a find_var() listing prints it, Q7a-f as CRI team 20 shows them
# (lower-cased, punctuation dropped), written in Q7g's form (issp_evidence.yaml)
ZA6900_LABELS = ["provide job for everyone", "control prices", "provide health care for sick",
                 "provide living standard for the old", "help industry grow",
                 "provide living standard for unemployed", "reduce income differences rich/ poor"]
ZA6900_MISSING = {-8: "Can't choose", -9: "No answer"}


def make_issp(rng, out: Path = HERE):
    plans = {}
    index = 0
    for item in ROG_ITEMS:
        for unit in ("AUS", "DEU", "GBR", "USA", "HUN", "NIR"):
            p_old = base_distribution(rng, 4)
            category = CYCLE[(index + 1) % 4]
            index += 1
            plans[(item, unit)] = (p_old, shifted(p_old, category, rng.choice([-1, 1])))
    for name, spec in ISSP_FILES.items():
        period = 0 if spec["year"] == 1990 else 1
        parts = []
        for code, (_, n) in spec["countries"].items():
            unit = ISSP_UNIT[code]
            frame = {"v3": np.full(n, code)}
            for var, item in zip(spec["vars"], ROG_ITEMS, strict=True):
                p = plans[(item, unit)][period] if unit else np.full(4, 0.25)
                invalid = {8: int(rng.integers(5, 25)), 9: int(rng.integers(0, 4))}
                if (item, unit, spec["year"]) == ("industry", "HUN", 1990):
                    invalid = {8: 60, 9: 5}  # 465 valid: below the cutoff
                frame[var] = answers(rng, p, [1, 2, 3, 4], n - sum(invalid.values()), invalid).astype(int)
            frame[spec["weight"]] = rng.uniform(0.7, 1.3, n).round(3) if unit in ("DEU", "GBR") else np.ones(n)
            parts.append(pd.DataFrame(frame))
        df = pd.concat(parts, ignore_index=True)
        value_labels = {var: ROG_LABELS for var in spec["vars"]}
        value_labels["v3"] = {code: label for code, (label, _) in spec["countries"].items()}
        labels = {"v3": "Country", spec["weight"]: "Weighting factor",
                  **{var: f"Govt responsibility: {item.replace('_', ' ')}" for var, item in zip(spec["vars"], ROG_ITEMS, strict=True)}}
        path = out / name
        if name.endswith(".sav"):
            pyreadstat.write_sav(df.astype({c: float for c in df.columns}), path, column_labels=labels,
                                 variable_value_labels=value_labels, compress=True,
                                 file_label=f"Synthetic ISSP {spec['year']} sample for histbench (invented respondents)")
        else:
            df = df.astype({c: "int16" for c in df.columns if c != spec["weight"]})
            pyreadstat.write_dta(df, path, column_labels=labels, variable_value_labels=value_labels,
                                 file_label=f"Synthetic ISSP {spec['year']} sample for histbench")
    make_za6900(rng, plans, out)


def make_za6900(rng, plans, out: Path = HERE):
    """2016: the 1996 plan again (a pair from 1990 to 2016 keeps its planned shift), in the recent layout."""
    parts = []
    for code, (unit, n) in ZA6900_SAMPLES.items():
        frame = {"c_alphan": np.full(n, code, dtype=object)}
        for number, item in enumerate(ROG_ITEMS):
            p = plans[(item, unit)][1]
            invalid = {-8: int(rng.integers(5, 20)), -9: int(rng.integers(0, 4))}
            codes = [1, 2, 3, 4]
            if item == "industry":  # five answers in 2016: a middle one the older files do not offer
                p, codes = np.append(0.85 * p, 0.15), [1, 2, 4, 5, 3]
            frame[f"v{21 + number}"] = answers(rng, p, codes, n - sum(invalid.values()), invalid)
        frame["WEIGHT"] = rng.uniform(0.6, 1.4, n).round(4)
        parts.append(pd.DataFrame(frame))
    df = pd.concat(parts, ignore_index=True)
    rog = {k: v for k, v in ROG_LABELS.items() if k < 8}
    value_labels = {f"v{21 + i}": {**rog, **ZA6900_MISSING} for i in range(len(ROG_ITEMS))}
    value_labels["v25"] = {1: "Definitely should be", 2: "Probably should be", 3: "Neither should nor should not be",
                           4: "Probably should not be", 5: "Definitely should not be", **ZA6900_MISSING}
    labels = {"c_alphan": "Country Prefix ISO 3166 Code - alphanumeric", "WEIGHT": "Weighting factor",
              **{f"v{21 + i}": f"Q7{'abcdefg'[i]} Government responsibility: {text}" for i, text in enumerate(ZA6900_LABELS)}}
    pyreadstat.write_sav(df.astype({c: float for c in df.columns if c != "c_alphan"}), out / "ZA6900_synthetic.sav",
                         column_labels=labels, variable_value_labels=value_labels, compress=True,
                         file_label="Synthetic ISSP 2016 sample for histbench (invented respondents)")


def main(out: Path = HERE) -> None:
    rng = np.random.default_rng(SEED)
    make_wvs(rng, out)
    make_issp(rng, out)
    for path in sorted(Path(out).glob("*_synthetic.*")):
        print(f"{path.name}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
