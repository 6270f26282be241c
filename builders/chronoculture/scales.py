"""Paper 3.2, a consistent ordered scale: is a question answered on the same scale in two periods?

A *variable* is a question repeated in at least two waves "with a consistent, ordered
response scale". Releases change scales: an item coded on 3 points in WVS waves 3-6 and
on 5 in wave 7 keeps its variable name, and its codes 4 and 5 would be read as invalid
answers. Two sources of evidence are compared for the two periods of every pair:

- **observed codes**: per period (a WVS wave, or an ISSP file's year, over all its
  countries) the respondents answering each option and each code that is neither an
  option nor invalid. The scales differ when an answer category holds at least 1% of one
  period's answers and nobody in the other period gives it (a rare answer missing from a
  period is not a scale change; a whole answer box missing is).
- **value labels** (ISSP files, each with its own labels): the labelled answer codes of
  the variable that are neither options nor invalid. Two files whose extra labelled
  answers differ (one offers "Neither agree nor disagree", the other not) use different
  scales. The WVS time series has one set of labels for all waves, so only observed
  codes count there.

`--scale-change drop` (default, as the benchmark defines a variable): a pair whose older
and newer period differ in scale is not formed, counted and printed per question.
`--scale-change match`: the older period is instead the oldest one on the newer period's
scale, when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SCALE_SHARE = 0.01
SCALE_POLICIES = ("drop", "match")


@dataclass
class PeriodScale:
    """The answers one period gave to one question (all countries of the period together)."""

    where: str  # "wave 3", "ZA1950.sav 1990"
    options: np.ndarray  # (K,) respondents per option
    unregistered: dict = field(default_factory=dict)  # code -> respondents
    labelled_extras: tuple | None = None  # normalised labels of extra labelled answer codes (None: no labels)
    option_labels: tuple = ()

    @property
    def total(self) -> int:
        return int(self.options.sum()) + int(sum(self.unregistered.values()))

    def shares(self) -> dict:
        cached = self.__dict__.get("_shares")
        if cached is None:
            total = max(self.total, 1)
            cached = {("option", i): n / total for i, n in enumerate(self.options.tolist())}
            cached.update({("code", c): n / total for c, n in self.unregistered.items()})
            self.__dict__["_shares"] = cached
        return cached


def _name(category, labels) -> str:
    kind, value = category
    if kind == "option":
        return f"option {value + 1} ({labels[value]!r})" if labels else f"option {value + 1}"
    shown = int(value) if float(value).is_integer() else value
    return f"code {shown} (not an option)"


def scale_difference(a: PeriodScale | None, b: PeriodScale | None) -> str | None:
    """Why periods a and b are not on the same scale, or None when nothing says they differ
    (worked out once per two periods: every country of a question compares the same ones)."""
    if a is None or b is None or a is b:
        return None
    compared = a.__dict__.setdefault("_compared", {})  # id(b) -> (b, reason)
    known = compared.get(id(b))
    if known is None or known[0] is not b:
        known = compared[id(b)] = (b, _scale_difference(a, b))
    return known[1]


def _scale_difference(a: PeriodScale, b: PeriodScale) -> str | None:
    if a.labelled_extras is not None and b.labelled_extras is not None and a.labelled_extras != b.labelled_extras:
        def show(extras):
            return ", ".join(repr(e) for e in extras) or "none"

        return (f"labelled answers beyond the options differ: {a.where} has {show(a.labelled_extras)}, "
                f"{b.where} has {show(b.labelled_extras)}")
    share_a, share_b = a.shares(), b.shares()
    labels = a.option_labels or b.option_labels
    for first, second, s_first, s_second in ((a, b, share_a, share_b), (b, a, share_b, share_a)):
        if second.total == 0:
            continue
        for category, share in sorted(s_second.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            if share >= SCALE_SHARE and s_first.get(category, 0.0) == 0.0 and first.total > 0:
                return (f"{_name(category, labels)} holds {100 * share:.1f}% of the answers in {second.where} "
                        f"and none in {first.where}")
    return None


def period_scales(table, keys: list[tuple], survey: str, file_name: str, labelled_extras: tuple | None,
                  option_labels: tuple) -> dict:
    """{period: PeriodScale} of one question in one file; the period of a group is its wave
    (WVS) or its year (ISSP)."""
    periods: dict = {}
    for g, (_, year, wave) in enumerate(keys):
        period = wave if survey == "WVS" else year
        if period is None:
            continue
        periods.setdefault(period, []).append(g)
    out = {}
    for period, groups in periods.items():
        rows = np.asarray(groups, dtype=np.int64)
        unregistered = {code: int(counts[rows].sum()) for code, counts in table.unregistered_by_group.items()}
        unregistered = {c: n for c, n in unregistered.items() if n}
        where = f"wave {period}" if survey == "WVS" else f"{file_name} {period}"
        out[period] = PeriodScale(where, table.counts[rows].sum(axis=0), unregistered,
                                  None if survey == "WVS" else labelled_extras, option_labels)
    return out
