"""Gold response distributions per question x country x year (paper 3.3, appendix A.2).

For one question and one survey file, every respondent belongs to a *group* (a
country x year, or for WVS a country x wave) or to none (excluded and counted by the
survey frame: wave outside 3-7, unknown country, no year). Within a group:

    proportion(option) = total weight of respondents choosing the option
                         / total weight of respondents with a valid answer

Invalid answers (the registry's invalid codes; for WVS every negative code; codes that
are neither an option nor invalid, which are also counted as *unregistered*) and
respondents without a usable weight (missing, zero or negative) are left out. A cell
gets a gold distribution only with at least `min_respondents` (500) valid respondents,
counted unweighted. Every other cell is counted under the first rule it fails:

    not_asked            every answer is a not-asked code (WVS -4) or empty
    all_answers_invalid  no valid answer at all (don't know, no answer, ...)
    missing_weight       valid answers exist, but none has a usable weight
    too_few_respondents  1 <= valid respondents < 500

Everything is vectorised over respondents with numpy (`isin`, `bincount` with weights).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

MIN_RESPONDENTS = 500
CELL_RULES = ("not_asked", "all_answers_invalid", "missing_weight", "too_few_respondents")


@dataclass
class GroupIndex:
    """Respondent -> group (-1: excluded) and what each group is."""

    group: np.ndarray  # int64 per respondent
    keys: list[tuple]  # per group: (country, year, wave)
    weight: np.ndarray  # float64 per respondent
    weight_ok: np.ndarray  # bool per respondent: finite and > 0

    @property
    def n_groups(self) -> int:
        return len(self.keys)

    def compact(self):
        """(rows in a group, their group ids, weights, usable-weight mask), computed once per file."""
        cached = getattr(self, "_compact", None)
        if cached is None or cached[1].size != int((self.group >= 0).sum()):
            in_group = self.group >= 0
            cached = (in_group, self.group[in_group], self.weight[in_group], self.weight_ok[in_group])
            self._compact = cached
        return cached


@dataclass
class Tabulation:
    """Per-group results for one question in one file."""

    totals: np.ndarray  # (G, K) weighted totals per option
    n_valid: np.ndarray  # (G,) unweighted valid respondents with usable weight
    counts: np.ndarray  # (G, K) respondents per option, weight or not (the observed scale, paper 3.2)
    unregistered_by_group: dict  # code -> (G,) respondents answering a code that is neither option nor invalid
    status: list[str | None]  # per group: None (gold ok) or the CELL_RULES entry that failed
    invalid_codes: Counter  # code -> respondents (in groups), invalid answers
    unregistered_codes: Counter  # code -> respondents whose code is neither option nor invalid
    missing_answers: int  # NaN answers (Stata extended missing, empty CSV cells)

    def gold(self, g: int) -> np.ndarray:
        row = self.totals[g]
        return row / row.sum()


def _counter(values: np.ndarray) -> Counter:
    if values.size == 0:
        return Counter()
    codes, counts = np.unique(values, return_counts=True)
    return Counter({_plain(c): int(n) for c, n in zip(codes, counts, strict=True)})


def _plain(code: float):
    code = float(code)
    return int(code) if code.is_integer() else code


def tabulate(
    answers: np.ndarray,
    index: GroupIndex,
    option_codes: list[tuple[float, ...]],
    invalid_codes: tuple[float, ...],
    not_asked_codes: tuple[float, ...] = (),
    negative_invalid: bool = False,
    min_respondents: int = MIN_RESPONDENTS,
) -> Tabulation:
    in_group, group, weight, weight_ok = index.compact()
    ans = np.asarray(answers, dtype=np.float64)[in_group]
    k = len(option_codes)
    n_groups = index.n_groups

    # one sorted lookup table for every registered code: its option (or -1), invalid, not asked
    table: dict[float, list] = {}
    for position, codes in enumerate(option_codes):
        for code in codes:
            table[float(code)] = [position, False, False]
    for code in invalid_codes:
        table.setdefault(float(code), [-1, False, False])[1] = True
    for code in not_asked_codes:
        table.setdefault(float(code), [-1, True, False])[2] = True
    keys = np.array(sorted(table), dtype=np.float64)
    owner = np.array([table[c][0] for c in keys], dtype=np.int64)
    is_invalid = np.array([table[c][1] for c in keys], dtype=bool)
    is_not_asked = np.array([table[c][2] for c in keys], dtype=bool)
    slot = np.minimum(np.searchsorted(keys, ans), len(keys) - 1)
    hit = keys[slot] == ans  # NaN never hits
    option = np.where(hit, owner[slot], -1)
    missing = np.isnan(ans)
    invalid = hit & is_invalid[slot]
    if negative_invalid:
        invalid |= ans < 0
    unregistered = (option < 0) & ~invalid & ~missing
    not_asked = missing | (hit & is_not_asked[slot])

    answered = option >= 0
    valid = answered & weight_ok
    keys = group[valid] * k + option[valid]
    totals = np.bincount(keys, weights=weight[valid], minlength=n_groups * k).reshape(n_groups, k)
    n_valid = np.bincount(group[valid], minlength=n_groups)
    n_answered = np.bincount(group[answered], minlength=n_groups)
    n_all = np.bincount(group, minlength=n_groups)
    n_not_asked = np.bincount(group[not_asked], minlength=n_groups)
    counts = np.bincount(group[answered] * k + option[answered], minlength=n_groups * k).reshape(n_groups, k)
    unregistered_by_group = {}
    if unregistered.any():
        pairs, tallies = np.unique(np.stack([group[unregistered].astype(np.float64), ans[unregistered]]), axis=1,
                                   return_counts=True)
        for code in np.unique(pairs[1]):
            mine = pairs[1] == code
            per_group = np.zeros(n_groups, dtype=np.int64)
            per_group[pairs[0, mine].astype(np.int64)] = tallies[mine]
            unregistered_by_group[_plain(code)] = per_group

    status: list[str | None] = []
    for g in range(n_groups):
        if n_all[g] == n_not_asked[g]:
            status.append("not_asked")
        elif n_answered[g] == 0:
            status.append("all_answers_invalid")
        elif n_valid[g] == 0:
            status.append("missing_weight")
        elif n_valid[g] < min_respondents:
            status.append("too_few_respondents")
        else:
            status.append(None)
    return Tabulation(
        totals=totals,
        n_valid=n_valid,
        counts=counts,
        unregistered_by_group=unregistered_by_group,
        status=status,
        invalid_codes=_counter(ans[invalid & ~missing]),
        unregistered_codes=_counter(ans[unregistered]),
        missing_answers=int(missing.sum()),
    )


def weight_status(weight: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """Usable-weight mask and counts of missing, zero and negative weights."""
    weight = np.asarray(weight, dtype=np.float64)
    finite = np.isfinite(weight)
    counts = {
        "missing": int((~finite).sum()),
        "zero": int((finite & (weight == 0)).sum()),
        "negative": int((finite & (weight < 0)).sum()),
    }
    return finite & (weight > 0), counts
