"""The per-item viewer: a static, offline HTML page for one run folder of any benchmark.

`histbench view RUN_DIR [--out DIR] [--open]` writes (default DIR: RUN_DIR/viewer)

    index.html              the page (one shared implementation, eval/viewer_page.html)
    items.jsonl             every item, one JSON object a line (for pandas, jq, other tools)
    items/index.js          each item's id and facets (config, group, system, outcome), compact
    items/chunk-NNNN.js     the items themselves, CHUNK_SIZE a file

Browsers refuse `fetch()` of file:// URLs, so the page never fetches: it adds a <script>
tag for items/index.js at start and for a chunk only when one of its items is shown (a
search loads every chunk once). A run of 20,000 items opens after reading the small index
and one chunk, not a multi-megabyte table. URL parameters after `#` (config, group, system,
outcome, q, item, page) select what is shown, so a report can link to the items behind one
of its table cells (`items_url`).

The items are the run folder's items.jsonl (histbench.core.runfolder), which each
benchmark's eval/<benchmark>/run_summary.py writes when a run finishes;
`BenchmarkEvaluator.view_items(run_dir) -> ViewerRun` (eval/plugin.py) reads them for every
benchmark alike, and this module only writes what it is given. An item is a dict:

    id, config, group, system (None when the run holds one model), outcome (OUTCOMES),
    score (number or None), score_label, messages ([{role, content}]: the prompt as sent)
    or prompt (one text: a likelihood context, a plain prompt), response (the raw answer),
    parsed (what the parser made of it) or parse_error (why it failed), gold, options
    (likelihood runs: [{text, loglik, tokens, gold, chosen, ...}]), details ({name: value}).

Decisions: no request header, backend option or API key is ever shown (items carry the
messages and the answer only), and every file is scrubbed of the credentials the process
read. The folder is written atomically: an interrupted write leaves the earlier viewer.
A folder that is not a viewer (no index.html with the viewer's marker) is never replaced.
"""

from __future__ import annotations

import json
import math
import re
import webbrowser
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from histbench.core.atomic import atomic_directory
from histbench.core.errors import EvalError, UsageError
from histbench.core.pages import csp_meta, escape
from histbench.core.runstore import RECORDS_NAME, RecordIndex, foreign_by_run_json, read_records
from histbench.core.secrets import scrub_text

OUTCOMES = ("correct", "wrong", "invalid", "abstained", "unscored")
OUTCOME_HELP = {
    "correct": "scored right",
    "wrong": "scored wrong",
    "invalid": "no usable answer: the parser failed, the answer was cut off or the request failed",
    "abstained": "the model declined to decide (where the benchmark scores abstention)",
    "unscored": "an item with no right or wrong of its own (e.g. an undated prompt; a valence sentence)",
}
FACETS = ("config", "group", "system", "outcome")
CHUNK_SIZE = 500
MARKER = "histbench per-item viewer"
ITEM_KEYS = frozenset({"id", "config", "group", "system", "outcome", "score", "score_label", "score_text", "messages",
                       "prompt", "prompt_label", "response", "parsed", "parse_error", "gold", "options", "details",
                       "kind"})
DEFAULT_OPTION_COLUMNS = (("text", "option"), ("loglik", "log-likelihood"), ("tokens", "tokens"),
                          ("gold", "gold"), ("chosen", "chosen"))


@dataclass
class ViewerRun:
    """What a benchmark gives the viewer for one run folder.

    items: the item dicts (see the module docstring), in the run's order; labels: display
    labels of facet values ({facet: {value: label}}), which are also the words a report's
    tables use for them, with `aliases` (other words for a value: an abbreviated column
    heading) used to link table cells to their items (eval/report.py); notes: lines shown under the title (what the run
    is, what is missing and why); option_columns: (key, heading) of the options table.
    """

    benchmark: str
    label: str
    run_dir: Path
    items: list[dict]
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    option_columns: Sequence[tuple[str, str]] = DEFAULT_OPTION_COLUMNS
    aliases: dict[str, dict[str, Sequence[str]]] = field(default_factory=dict)

    def words(self, facet: str) -> dict[str, str]:
        """{word a report's table uses: facet value}: each value's label and aliases."""
        out: dict[str, str] = {}
        values = {str(item.get(facet)) for item in self.items if item.get(facet) is not None}
        for value in values:
            out[value] = value
            out[str(self.labels.get(facet, {}).get(value, value))] = value
            for alias in self.aliases.get(facet, {}).get(value, ()):
                out[str(alias)] = value
        return out

    def facet_values(self) -> dict[str, list[dict]]:
        """Per facet: [{value, label, count}] in first-seen order (outcomes in OUTCOMES order)."""
        out: dict[str, list[dict]] = {}
        for facet in FACETS:
            counts = Counter(item.get(facet) for item in self.items)
            counts.pop(None, None)
            if facet == "outcome":
                order = [o for o in OUTCOMES if o in counts]
            else:
                order = list(dict.fromkeys(item.get(facet) for item in self.items if item.get(facet) is not None))
            names = self.labels.get(facet, {})
            out[facet] = [{"value": str(v), "label": str(names.get(v, v)), "count": counts[v]} for v in order]
        return out


def check_item(item: Mapping, where: str) -> None:
    """An error naming the item and field when a benchmark's viewer module gives a malformed item."""
    unknown = set(item) - ITEM_KEYS
    if unknown:
        raise EvalError(f"viewer item has unknown field(s) {', '.join(sorted(unknown))}", file=where, row=item.get("id"))
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise EvalError("viewer item without a text id", file=where, field="id")
    if item.get("outcome") not in OUTCOMES:
        raise EvalError(f"viewer item outcome {item.get('outcome')!r} is not one of {', '.join(OUTCOMES)}",
                        file=where, row=item["id"], field="outcome")


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _json_value(value.item())
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return _json_value(value.tolist())
    return value


def _dumps(value: Any) -> str:
    return json.dumps(_json_value(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str)


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element (no '</script>' can close it early)."""
    return _dumps(value).replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def check_viewer_folder(out: Path) -> None:
    check_page_folder(out, MARKER, "histbench viewer", "viewer")


def check_page_folder(out: Path, marker: str, what: str, short: str) -> None:
    """A folder a page is about to replace as a whole is new, empty, or a page of that kind
    (its index.html holds `marker`): anything else in it is never replaced."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError(f"the {short} folder is a file", file=out, field="--out")
    page = out / "index.html"
    if any(out.iterdir()) and not (page.is_file() and marker in page.read_text(encoding="utf-8", errors="replace")[:2000]):
        raise UsageError(f"this folder exists and holds no {what}; the {short} replaces its whole folder, "
                         "so choose a new or empty --out folder", file=out, field="--out")


def write_viewer(run: ViewerRun, out: Path, *, chunk_size: int = CHUNK_SIZE) -> Path:
    """Write the viewer of `run` into the folder `out` (replaced as a whole); returns index.html's path."""
    out = Path(out).expanduser()
    check_viewer_folder(out)
    where = str(run.run_dir)
    seen: set[str] = set()
    for item in run.items:
        check_item(item, where)
        if item["id"] in seen:
            raise EvalError(f"two viewer items share the id {item['id']!r}", file=where, field="id")
        seen.add(item["id"])
    facets = run.facet_values()
    position = {f: {v["value"]: k for k, v in enumerate(values)} for f, values in facets.items()}
    index_rows = [[position[f].get(str(item.get(f)), -1) if item.get(f) is not None else -1 for f in FACETS]
                  for item in run.items]
    n_chunks = max(1, math.ceil(len(run.items) / chunk_size))
    counts = Counter(item["outcome"] for item in run.items)
    meta = {
        "title": f"{run.label}: {len(run.items):,} items ({run.benchmark})",
        # the run folder by its name: the page is shared, and the folder's absolute path is the user's disk
        "subtitle": f"run folder {Path(run.run_dir).name or run.run_dir}; outcomes: "
                    + (", ".join(f"{counts[o]:,} {o}" for o in OUTCOMES if counts[o]) or "none"),
        "benchmark": run.benchmark, "label": run.label, "notes": list(run.notes),
        "n_items": len(run.items), "chunk_size": chunk_size, "n_chunks": n_chunks, "facets": facets,
        "option_columns": [{"key": k, "label": h} for k, h in run.option_columns],
        "outcomes": OUTCOME_HELP,
    }
    page = render_page(meta)
    with atomic_directory(out) as tmp:
        (tmp / "items").mkdir()
        _write(tmp / "index.html", page)
        with (tmp / "items.jsonl").open("w", encoding="utf-8") as handle:
            for item in run.items:
                handle.write(scrub_text(json.dumps(_json_value(item), ensure_ascii=False, default=str)) + "\n")
        _write(tmp / "items" / "index.js",
               f"window.histbenchViewer.index({script_json(index_rows)}, {script_json([i['id'] for i in run.items])});\n")
        for n in range(n_chunks):
            chunk = run.items[n * chunk_size:(n + 1) * chunk_size]
            _write(tmp / "items" / f"chunk-{n:04d}.js", f"window.histbenchViewer.chunk({n}, {script_json(chunk)});\n")
            texts = [search_text(item) for item in chunk]
            _write(tmp / "items" / f"search-{n:04d}.js", f"window.histbenchViewer.search({n}, {script_json(texts)});\n")
    return out / "index.html"


PLACEHOLDERS = re.compile(r"__(TITLE|META|CSP)__")
INLINE_SCRIPT = re.compile(r"<script>(\n.*?)</script>", re.DOTALL)   # the page's own script: "<script>" then a line break


def render_page(meta: Mapping) -> str:
    """The viewer page for `meta`: the template's placeholders filled in one pass, so that a
    label holding a placeholder's name ("__META__") stays text; the title escaped for HTML,
    the data a JSON block (no '<' inside it), and a Content-Security-Policy that allows only
    the template's own script (by its hash) and the item files it loads."""
    template = files("histbench.eval").joinpath("viewer_page.html").read_text(encoding="utf-8")
    scripts = INLINE_SCRIPT.findall(template)
    values = {"TITLE": _html_escape(meta["title"]), "META": script_json(meta), "CSP": csp_meta(scripts)}
    page = PLACEHOLDERS.sub(lambda m: values[m.group(1)], template)
    return page.replace("<!-- histbench per-item viewer.", f"<!-- {MARKER}.", 1)


def search_text(item: Mapping) -> str:
    """What the viewer's text search reads of an item: every text and number it holds (not
    its field names), lower-cased, joined by spaces; computed once here, so that a search
    reads these strings instead of parsing every item."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if value is None:
            return
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, bool):
            parts.append("true" if value else "false")
        else:
            parts.append(str(value))

    walk(_json_value(item))
    return " ".join(parts).lower()


def _write(path: Path, text: str) -> None:
    path.write_text(scrub_text(text), encoding="utf-8")


def _html_escape(text: str) -> str:
    return escape(text)


def items_url(viewer: str, **filters: str | None) -> str:
    """The viewer page `viewer` showing only the items that match `filters` (config, group,
    system, outcome, q, item)."""
    from urllib.parse import urlencode

    unknown = set(filters) - {*FACETS, "q", "item"}
    if unknown:
        raise ValueError(f"unknown viewer filter(s): {', '.join(sorted(unknown))}")
    params = {k: str(v) for k, v in filters.items() if v not in (None, "")}
    return viewer + ("#" + urlencode(params) if params else "")


# --------------------------------------------------------------------------- helpers for benchmarks


class StoredAnswers:
    """The answered records of a run folder's records.jsonl (the run store), looked up by the
    request they answer: a benchmark rebuilds each item's request from the build and finds
    what the model was asked and answered, exactly as stored.

    Lines are chosen by the run store's own rule (histbench.core.runstore.RecordIndex: the
    first valid answer of a key; duplicates, invalid answers and lines of another model or
    configuration are not shown), so the page shows the record the scores used."""

    def __init__(self, records: Iterable[dict] | RecordIndex):
        if isinstance(records, RecordIndex):
            index = records
        else:
            index = RecordIndex()
            for record in records:
                if not isinstance(record.get("key"), str):
                    record = {**record, "key": self.request_key(record.get("request") or {})}
                index.add(record)
        self.index = index
        self.by_request: dict[str, dict] = {}
        self.by_key: dict[str, dict] = {}
        for record in [*index.answered.values(), *index.failed.values()]:
            self.by_request.setdefault(self.request_key(record.get("request") or {}), record)
            self.by_key[record["key"]] = record

    @classmethod
    def open(cls, run_dir: Path) -> StoredAnswers:
        return cls(read_records(Path(run_dir) / RECORDS_NAME, foreign_by_run_json(Path(run_dir))))

    @staticmethod
    def request_key(request: Mapping) -> str:
        if request.get("kind") == "loglikelihood":
            return _dumps(["ll", request.get("context"), request.get("continuation")])
        return _dumps(["gen", request.get("messages"), request.get("prompt")])

    def __len__(self) -> int:
        return len(self.by_request)

    def generate(self, messages: Sequence[Mapping] | None = None, prompt: str | None = None) -> dict | None:
        key = _dumps(["gen", [dict(m) for m in messages] if messages is not None else None, prompt])
        return self.by_request.get(key)

    def loglikelihood(self, context: str, continuation: str) -> dict | None:
        return self.by_request.get(_dumps(["ll", context, continuation]))


def response_text(record: Mapping | None) -> str | None:
    """The raw text of a stored generate answer (None when there is none)."""
    if not record or record.get("response") is None:
        return None
    return record["response"].get("text")


def request_messages(record: Mapping | None, fallback: Sequence[Mapping] | None = None) -> list[dict] | None:
    """The messages a stored request sent (role and content only: nothing else of the request)."""
    messages = ((record or {}).get("request") or {}).get("messages") or fallback
    if messages is None:
        return None
    return [{"role": str(m.get("role")), "content": str(m.get("content"))} for m in messages]


def open_in_browser(page: Path) -> bool:
    """Open a written page in the default browser (returns whether one was found)."""
    return webbrowser.open(Path(page).resolve().as_uri())


def default_viewer_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "viewer"


def viewer_run(run_dir: Path, benchmark: str | None = None) -> tuple[Any, ViewerRun]:
    """(evaluator, its ViewerRun) for a run folder: the benchmark is `benchmark` or the one
    its run.json names."""
    from histbench.core.paths import confine_run_folder
    from histbench.eval.plugin import evaluator_of_folder

    run_dir = Path(run_dir).expanduser()
    if not run_dir.is_dir():
        raise UsageError("no such run folder", file=run_dir)
    confine_run_folder(run_dir)   # a shared run folder: no link out of it is read into the page
    chosen = evaluator_of_folder(run_dir, benchmark)
    return chosen, chosen.view_items(run_dir)


def run_view(args) -> Path:
    """`histbench view RUN_DIR [--out DIR] [--open]`."""
    _, run = viewer_run(args.run, getattr(args, "benchmark", None))
    out = Path(args.out) if args.out else default_viewer_dir(args.run)
    page = write_viewer(run, out)
    print(page)
    if args.open and not open_in_browser(page):
        print(f"no browser found; open {page.resolve().as_uri()}")
    return page


def add_view_command(subparsers) -> None:
    view = subparsers.add_parser(
        "view", help="an offline HTML page of one run's items: prompts, answers, parsing, gold and scores",
        description="Write a static, offline viewer of one run folder's items (opens from disk, no server): "
                    "each item's prompt, raw response, parsed answer or parse failure, gold and score, with "
                    "filters by config, group, outcome and a text search. URL parameters: docs/reports.md.",
    )
    view.add_argument("run", type=Path, metavar="RUN_DIR", help="a run folder of `histbench eval BENCHMARK`")
    view.add_argument("--out", type=Path, help="the viewer folder (default RUN_DIR/viewer; replaced as a whole)")
    view.add_argument("--open", action="store_true", help="open the page in your browser when written")
    view.add_argument("--benchmark", help="the run's benchmark, when it cannot be recognised from its files")
    view.set_defaults(func=run_view)


