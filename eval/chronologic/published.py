"""The authors' published instruments and rows: scoring a new model on the paper's scale.

The authors of Chronologic-EN publish, with their results (GitHub
Historical-AI-Lab/GPT-1914, folder chronologic/):

- per-question judge reliability of the pass/fail judge
  (modelasjudge/llm_reliability/<judge>__<version>.json: per_question question_correct,
  question_total, question_invalid);
- the judgment log of every anchor and leave-one-out comparison of the partial-credit
  judge (modelasjudge/bt_artifacts/bt_judgments_<tag>.jsonl: qid, phase "anchor" or
  "loo:<item>", first, second, repeat, parse_ok, choice, dropped), the tournaments the
  anchors were fitted on;
- the calibration fit (modelasjudge/bt_artifacts/bt_calibration_<tag>.json: intercept,
  slope, prior_scale, ...), whose figures histbench also ships in
  sources/chronologic/published/instruments.yaml, and its cluster-bootstrap draws
  (bt_calib_draws_<tag>.npz, array cal_b), the instrument layer of their Table 7 bootstrap;
- the published rows of Tables 4 and 7 (results/freegen/free_gen_results_1.0.csv),
  shipped as sources/chronologic/published/table7.csv.

`histbench eval chronologic --mode anchors --published-reliability FILE
--published-judgments FILE --published-calibration [FILE]` builds the anchors folder from
these files instead of asking judges (items are matched by the authors' names gt0, gt1,
d0, ... in release order); the Bradley-Terry prior then takes the calibration's
prior_scale (3.0 for the published fit), since a slope only applies on the scale it was
fitted on. A candidate judged against such anchors (with the same judges: Claude Sonnet
4.6 for pass/fail, Claude Sonnet 5 for partial credit) sits on the paper's scale.
`histbench report chronologic RUN --published` prints the published rows beside the run.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.errors import EvalError

from .generation import Question
from .judge import PARTIAL, PASS_FAIL, QuestionReliability

SHIPPED = "shipped"


def published_dir() -> Path:
    from histbench.core.resources import Resources

    return Resources.default().source_dir("chronologic") / "published"


def shipped_figures() -> dict:
    import yaml

    return yaml.safe_load((published_dir() / "instruments.yaml").read_text(encoding="utf-8"))


def published_rows() -> tuple[list[dict], str]:
    """(the published Table 7 rows, the file they come from)."""
    figures = shipped_figures()["table7"]
    with (published_dir() / figures["file"]).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle)), figures["source"]


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot read the published {what}: {exc}", file=path) from exc
    if not isinstance(data, dict):
        raise EvalError(f"the published {what} is not a JSON object", file=path)
    return data


@dataclass
class PublishedInstruments:
    reliability: dict | None = None
    judgments: list[dict] | None = None
    calibration: dict | None = None
    calibration_draws: list[float] = field(default_factory=list)
    prior_sd: float | None = None
    files: dict = field(default_factory=dict)
    partial_judge: str | None = None
    pass_fail_judge: str | None = None

    @classmethod
    def load(cls, reliability: str | Path | None = None, judgments: str | Path | None = None,
             calibration: str | Path | None = None, calibration_draws: str | Path | None = None) -> PublishedInstruments:
        out = cls()
        if reliability:
            data = _read_json(Path(reliability), "reliability")
            if not isinstance(data.get("per_question"), dict):
                raise EvalError("the published reliability has no per_question table", file=reliability, field="per_question")
            out.reliability = data["per_question"]
            out.pass_fail_judge = data.get("judge_model")
            out.files["reliability"] = {"file": str(reliability), "sha256": _sha256(Path(reliability))}
        if judgments:
            out.judgments = _read_judgments(Path(judgments))
            out.partial_judge = next((r.get("judge") for r in out.judgments if r.get("judge")), None)
            out.files["judgments"] = {"file": str(judgments), "sha256": _sha256(Path(judgments))}
        if calibration:
            if str(calibration) == SHIPPED:
                data = shipped_figures()["calibration"]
                out.files["calibration"] = {"file": "sources/chronologic/published/instruments.yaml", "source": data["source"]}
            else:
                data = _read_json(Path(calibration), "calibration")
                out.files["calibration"] = {"file": str(calibration), "sha256": _sha256(Path(calibration))}
            for key in ("intercept", "slope"):
                if not isinstance(data.get(key), int | float):
                    raise EvalError(f"the published calibration has no numeric {key!r}", file=calibration, field=key)
            out.calibration = {"slope": float(data["slope"]), "intercept": float(data["intercept"]),
                               "target_at_zero": float(data.get("pin_p") or 0.9),
                               "weighting": "class-balance" if data.get("class_balance") else "unweighted",
                               "ridge": float(data.get("l2", 0.0)), "source": "published"}
            out.prior_sd = float(data["prior_scale"]) if data.get("prior_scale") is not None else None
        if calibration_draws:
            out.calibration_draws = _read_slope_draws(Path(calibration_draws))
            out.files["calibration_draws"] = {"file": str(calibration_draws), "sha256": _sha256(Path(calibration_draws))}
        return out

    def describe(self) -> dict:
        return dict(self.files)

    def judge_identity(self, path: str) -> dict:
        name = self.pass_fail_judge if path == PASS_FAIL else self.partial_judge
        return {"spec": f"published:{name or 'unknown'}", "published": True}

    # ---------------------------------------------------------------- reliability

    def reliability_for(self, questions: list[Question]) -> list[QuestionReliability]:
        out = []
        for q in questions:
            entry = (self.reliability or {}).get(str(q.number))
            if entry is None:
                out.append(QuestionReliability(q.number))
                continue
            total, correct = int(entry.get("question_total", 0)), int(entry.get("question_correct", 0))
            out.append(QuestionReliability(q.number, alpha_trials=total, alpha_failures=total - correct,
                                           unparsed=int(entry.get("question_invalid", 0))))
        return out

    # ---------------------------------------------------------------- tournaments

    def _records(self, question: Question, phase: str) -> list[dict]:
        return [r for r in self.judgments or () if str(r.get("qid")) == str(question.number) and r.get("phase") == phase]

    def _wins(self, question: Question, phase: str) -> tuple[list[tuple[int, int]], int]:
        index = {name: i for i, name in enumerate(question.item_ids)}
        wins, dropped = [], 0
        for r in self._records(question, phase):
            if r.get("dropped") or not r.get("parse_ok") or r.get("choice") not in ("A", "B"):
                dropped += 1
                continue
            try:
                first, second = index[r["first"]], index[r["second"]]
            except KeyError as exc:
                raise EvalError(f"question {question.number}: the published judgment names option {exc.args[0]!r}, which "
                                f"this build's question lacks (another release?)", field="first") from exc
            winner, loser = (first, second) if r["choice"] == "A" else (second, first)
            wins.append((winner, loser))
        return wins, dropped

    def anchor_wins(self, question: Question) -> tuple[list[tuple[int, int]], int]:
        wins, dropped = self._wins(question, "anchor")
        if not wins:
            raise EvalError(f"the published judgments hold no anchor comparison of question {question.number}",
                            file=self.files.get("judgments", {}).get("file"))
        return wins, dropped

    def loo_outcomes(self, question: Question, option: int) -> list[tuple[int, bool]]:
        wins, _ = self._wins(question, f"loo:{question.item_ids[option]}")
        return [(l_, True) for w, l_ in wins if w == option] + [(w, False) for w, l_ in wins if l_ == option]


def _read_slope_draws(path: Path) -> list[float]:
    """The slope column (cal_b) of the authors' calibration draw bank (bt_calib_draws_<tag>.npz)."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            if "cal_b" not in data.files:
                raise EvalError(f"the calibration draws have no cal_b array (arrays: {', '.join(data.files)})", file=path)
            draws = np.asarray(data["cal_b"], dtype=float)
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot read the published calibration draws: {exc}", file=path) from exc
    return [float(d) for d in draws[np.isfinite(draws)]]


def _read_judgments(path: Path) -> list[dict]:
    """The judgment log, one row per planned comparison (the last row of a repeated one
    wins, as the authors' dedupe_judgments does); only first repeats (repeat 0) are kept,
    as their `loo` step does with --repeats 1."""
    by_key: dict[tuple, dict] = {}
    try:
        with Path(path).open(encoding="utf-8") as handle:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise EvalError(f"not a JSON line: {exc}", file=path, row=n) from exc
                for key in ("qid", "phase", "first", "second"):
                    if key not in record:
                        raise EvalError(f"a judgment lacks {key!r}", file=path, row=n, field=key)
                if int(record.get("repeat", 0)) != 0:
                    continue
                by_key[(str(record["qid"]), record["phase"], record["first"], record["second"])] = record
    except OSError as exc:
        raise EvalError(f"cannot read the published judgments: {exc}", file=path) from exc
    return list(by_key.values())


__all__ = ["PARTIAL", "PASS_FAIL", "SHIPPED", "PublishedInstruments", "published_rows", "shipped_figures"]
