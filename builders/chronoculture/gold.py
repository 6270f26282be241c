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

Everything is vectorised over respondents with numpy: integer answer codes index lookup
tables (code - lowest code), and `bincount` counts and sums them per group.
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

    def lookup(self):
        """(group per respondent with n_groups for those in none, 2 x that + usable weight,
        the weight where usable and 0.0 elsewhere), computed once per file."""
        cached = getattr(self, "_lookup", None)
        if cached is None or cached[0] != int((self.group >= 0).sum()):
            group = np.where(self.group >= 0, self.group, self.n_groups).astype(np.intp)
            ok = self.weight_ok & (self.group >= 0)
            cached = (int((self.group >= 0).sum()), group, group * 2 + ok, np.where(ok, self.weight, 0.0))
            self._lookup = cached
        return cached[1:]

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
        """Group g's weighted shares (a row of `golds`)."""
        return self.golds()[g]

    def golds(self) -> np.ndarray:
        """(G, K) weighted shares, every group at once; each row is bit for bit row / row.sum()
        (rows summed as contiguous rows are); NaN for a group without a weighted answer."""
        cached = self.__dict__.get("_golds")
        if cached is None:
            totals = np.ascontiguousarray(self.totals)
            with np.errstate(invalid="ignore", divide="ignore"):
                cached = self.__dict__["_golds"] = totals / totals.sum(axis=1, keepdims=True)
        return cached


def _counter(values: np.ndarray) -> Counter:
    if values.size == 0:
        return Counter()
    codes, counts = np.unique(values, return_counts=True)
    return Counter({_plain(c): int(n) for c, n in zip(codes, counts, strict=True)})


def _plain(code: float):
    code = float(code)
    return int(code) if code.is_integer() else code


LOOKUP_CELLS = 4_000_000  # group x code cells above which a column is tabulated through sorted codes


def _code_flags(option_codes, invalid_codes, not_asked_codes) -> dict[float, list]:
    """Every registered code -> [its option (or -1), invalid, not asked]."""
    table: dict[float, list] = {}
    for position, codes in enumerate(option_codes):
        for code in codes:
            table[float(code)] = [position, False, False]
    for code in invalid_codes:
        table.setdefault(float(code), [-1, False, False])[1] = True
    for code in not_asked_codes:
        table.setdefault(float(code), [-1, True, False])[2] = True
    return table


def _integer_slots(ans: np.ndarray, n_groups: int):
    """(lowest code, number of codes R, slot per respondent) where every answer is an integer or
    empty and the group x code table is small: slot = code - lowest, R for an empty answer.
    None otherwise (no answers, answers with decimals, infinities, a very wide range of codes).

    The answers are cast to integers once; an answer the cast changes is empty (NaN) or not an
    integer code, and only those few are looked at again."""
    if not ans.size:
        return None
    with np.errstate(invalid="ignore"):  # NaN and infinities have no integer: caught just below
        slots = ans.astype(np.intp)
    changed = slots != ans
    empty = None
    if changed.any():
        empty = np.flatnonzero(changed)
        if not np.isnan(ans[empty]).all():  # a code with decimals, an infinity or a code beyond intp
            return None
        present = np.delete(slots, empty) if empty.size < ans.size else np.zeros(1, dtype=np.intp)
        low, high = int(present.min()), int(present.max())
    else:
        low, high = int(slots.min()), int(slots.max())
    if (high - low + 2) * (n_groups + 1) > LOOKUP_CELLS:
        return None
    width = high - low + 1
    if low:
        slots -= low
    if empty is not None:
        slots[empty] = width
    return float(low), width, slots


def tabulate(
    answers: np.ndarray,
    index: GroupIndex,
    option_codes: list[tuple[float, ...]],
    invalid_codes: tuple[float, ...],
    not_asked_codes: tuple[float, ...] = (),
    negative_invalid: bool = False,
    min_respondents: int = MIN_RESPONDENTS,
) -> Tabulation:
    """Per-group tabulation of one question's answers.

    Integer answer codes (every real file) go through integer lookup tables: each
    respondent's code becomes a slot (code - lowest code) and one key, slot x group x
    usable weight. One unweighted bincount over the key gives every count; one weighted
    bincount over the same key gives the weighted totals of the codes, which are those of
    the options when each option has one code in the file. An option of several codes
    present together gets its own weighted bincount over option x group. Either way each
    bin is summed in respondent order, as a sum over the valid respondents alone would be
    (the others add 0.0). Other answers (decimals) take the sorted-code path; both give the
    same tabulation.
    """
    ans = np.asarray(answers, dtype=np.float64)
    flags = _code_flags(option_codes, invalid_codes, not_asked_codes)
    slots = _integer_slots(ans, index.n_groups)
    if slots is None:
        return _tabulate_sorted(ans, index, len(option_codes), flags, negative_invalid, min_respondents)
    low, width, slot = slots
    k, n_groups = len(option_codes), index.n_groups
    group_or_out, group_and_ok, weight_if_ok = index.lookup()
    # what each slot is: its option (k: none), invalid, not asked, empty
    code_of_slot = low + np.arange(width + 1, dtype=np.float64)
    option_of_slot = np.full(width + 1, k, dtype=np.intp)
    invalid_slot = np.zeros(width + 1, dtype=bool)
    not_asked_slot = np.zeros(width + 1, dtype=bool)
    for code, (position, invalid, not_asked) in flags.items():
        s = code - low
        if 0 <= s < width and float(s).is_integer():
            s = int(s)
            option_of_slot[s] = position if position >= 0 else k
            invalid_slot[s], not_asked_slot[s] = invalid, not_asked
    if negative_invalid:
        invalid_slot[:width] |= code_of_slot[:width] < 0
    empty_slot = np.zeros(width + 1, dtype=bool)
    empty_slot[width] = not_asked_slot[width] = True
    invalid_slot[width] = False
    is_option = option_of_slot < k
    option_slots = np.flatnonzero(is_option)
    one_code_each = np.bincount(option_of_slot[option_slots], minlength=k).max(initial=0) <= 1

    if not one_code_each:  # option x group (k: no option; the last group: respondents in none)
        option_key = option_of_slot[slot]
        option_key *= n_groups + 1
        option_key += group_or_out
    # slot x group x usable weight per respondent, computed in place
    size = (width + 1) * 2 * (n_groups + 1)
    slot *= 2 * (n_groups + 1)
    slot += group_and_ok
    table = np.bincount(slot, minlength=size).reshape(width + 1, n_groups + 1, 2)[:, :n_groups]
    if one_code_each:
        by_code = np.bincount(slot, weights=weight_if_ok, minlength=size).reshape(width + 1, n_groups + 1, 2)
        totals = np.zeros((n_groups, k))
        totals[:, option_of_slot[option_slots]] = by_code[option_slots, :n_groups, 1].T
    else:
        totals = np.bincount(option_key, weights=weight_if_ok,
                             minlength=(k + 1) * (n_groups + 1)).reshape(k + 1, n_groups + 1)[:k, :n_groups].T
    by_slot = table.sum(axis=2)  # (slots, groups)
    to_option = np.zeros((width + 1, k), dtype=np.int64)
    to_option[option_slots, option_of_slot[option_slots]] = 1
    counts = by_slot.T @ to_option
    n_valid = table[is_option, :, 1].sum(axis=0)
    n_answered = counts.sum(axis=1)
    n_all = by_slot.sum(axis=0)
    n_not_asked = by_slot[not_asked_slot].sum(axis=0)

    per_slot = by_slot.sum(axis=1)
    invalid_codes_seen = Counter({_plain(code_of_slot[s]): int(per_slot[s])
                                  for s in np.flatnonzero(invalid_slot & (per_slot > 0))})
    unregistered = ~is_option & ~invalid_slot & ~empty_slot & (per_slot > 0)
    unregistered_codes = Counter({_plain(code_of_slot[s]): int(per_slot[s]) for s in np.flatnonzero(unregistered)})
    unregistered_by_group = {_plain(code_of_slot[s]): by_slot[s].astype(np.int64) for s in np.flatnonzero(unregistered)}
    return Tabulation(
        totals=totals,
        n_valid=n_valid,
        counts=counts,
        unregistered_by_group=unregistered_by_group,
        status=_status(n_all, n_not_asked, n_answered, n_valid, min_respondents),
        invalid_codes=invalid_codes_seen,
        unregistered_codes=unregistered_codes,
        missing_answers=int(per_slot[width]),
    )


def _status(n_all, n_not_asked, n_answered, n_valid, min_respondents) -> list[str | None]:
    status: list[str | None] = []
    for all_, not_asked, answered, valid in zip(n_all.tolist(), n_not_asked.tolist(), n_answered.tolist(),
                                                n_valid.tolist(), strict=True):
        if all_ == not_asked:
            status.append("not_asked")
        elif answered == 0:
            status.append("all_answers_invalid")
        elif valid == 0:
            status.append("missing_weight")
        elif valid < min_respondents:
            status.append("too_few_respondents")
        else:
            status.append(None)
    return status


def _tabulate_sorted(ans, index, k, flags, negative_invalid, min_respondents) -> Tabulation:
    """The tabulation through a sorted table of the registered codes (searchsorted), for answers
    that are not all integers."""
    in_group, group, weight, weight_ok = index.compact()
    ans = ans[in_group]
    n_groups = index.n_groups
    keys = np.array(sorted(flags), dtype=np.float64)
    owner = np.array([flags[c][0] for c in keys], dtype=np.int64)
    is_invalid = np.array([flags[c][1] for c in keys], dtype=bool)
    is_not_asked = np.array([flags[c][2] for c in keys], dtype=bool)
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
    return Tabulation(
        totals=totals,
        n_valid=n_valid,
        counts=counts,
        unregistered_by_group=unregistered_by_group,
        status=_status(n_all, n_not_asked, n_answered, n_valid, min_respondents),
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
