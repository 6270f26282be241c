"""Report building blocks shared by every benchmark: sections, Markdown tables, HTML.

A report is a list of `ReportSection`s written as `index.md` and `index.html` (the
Markdown converted with the `markdown` package) plus `report.json` with every number.

`histbench report <benchmark>` writes a report folder atomically (`run_report`): the
benchmark's reporter writes figures, tables and index into a hidden temporary sibling of
`--out`, which replaces the folder only when the reporter finished; a failed report leaves
the earlier one exactly as it was. An `--out` folder that holds something other than a
report (no index.md or report.json) is never replaced. Every file written by
`write_report` is scrubbed of the credentials the process read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from histbench.core.atomic import atomic_directory, write_text_atomic
from histbench.core.errors import UsageError
from histbench.core.markdown import format_ci, format_number, markdown_table  # noqa: F401 - used and re-exported
from histbench.core.pages import clean_element, csp_meta, escape, render_inline, render_markdown
from histbench.core.schema import to_native

if TYPE_CHECKING:
    import argparse

    from histbench.eval.plugin import BenchmarkEvaluator

#: the report folder being staged: (temporary folder, final folder)
_STAGING: ContextVar[tuple[Path, Path] | None] = ContextVar("histbench_report_staging", default=None)
REPORT_MARKERS = ("index.md", "report.json")

#: the site being written by `run_report`: the benchmark and the runs it reads (viewers written)
_SITE: ContextVar[SiteContext | None] = ContextVar("histbench_report_site", default=None)
ITEMS_SCHEME = "histbench-items:"


@dataclass
class ReportSection:
    """One section of a report: Markdown body (no top heading), figures, numbers, and the
    run folders whose results it shows (`runs`: the site writes their viewers)."""

    title: str
    markdown: str
    figures: list[Path] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    runs: list[Path] = field(default_factory=list)


@dataclass
class Headline:
    """One headline number of a run for the site's index: `value` is the formatted estimate
    with its interval; `metric` names it as the paper does. `estimate` (the number itself)
    and `higher_is_better` let the index card show a run's best systems first when it holds
    more than the card has room for."""

    run: str
    metric: str
    value: str
    estimate: float | None = None
    higher_is_better: bool | None = None
    #: what is measured ("accuracy"), whatever the subset: headlines are ranked only within one
    measure: str | None = None


@dataclass
class SiteRun:
    """A run shown on the site: its label, headline numbers and viewer (a path relative to
    the site's root), and the words of its facet values (see ViewerRun.words) by facet,
    used to link table cells to the items behind them."""

    label: str
    run_dir: Path
    viewer: str | None = None
    headlines: list[Headline] = field(default_factory=list)
    words: dict[str, dict[str, str]] = field(default_factory=dict)
    systems: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    #: other words a report's tables use for a system (ViewerRun.aliases["system"])
    system_aliases: dict[str, list[str]] = field(default_factory=dict)
    #: the configs each system has items in: a table row naming a system shared by two
    #: labels (MHER Table 2's embedding rows) is told apart by the config its cells name
    system_configs: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class SitePage:
    """One benchmark's page: `name` (the page is NAME.html), title, sections, what was built
    (a sentence for the index card) and the runs it reports."""

    name: str
    title: str
    sections: list[ReportSection]
    built: str = ""
    runs: list[SiteRun] = field(default_factory=list)
    intro: str = ""


@dataclass
class SiteContext:
    benchmark: str
    runs: list[SiteRun]
    #: sections every page of the report starts with (several runs: the leaderboard)
    lead: list[ReportSection] = field(default_factory=list)

def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 76rem; margin: 0 auto; padding: 0 1.2rem 3rem 1.2rem;
       line-height: 1.45; color: #1f2328; }
header.site { display: flex; gap: 1rem; align-items: baseline; border-bottom: 1px solid #d0d7de; padding: 0.7rem 0; }
header.site a { color: #0969da; text-decoration: none; }
h1 { font-size: 1.8rem; } h2 { border-bottom: 1px solid #d8dee4; padding-bottom: 0.2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.4rem 0 1.2rem 0; font-size: 0.9rem; }
caption { caption-side: top; text-align: left; font-weight: 600; font-size: 0.9rem; padding: 0.2rem 0; color: #24292f; }
th, td { border: 1px solid #d0d7de; padding: 0.22rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td { font-variant-numeric: tabular-nums; }
td a, th a { color: #0969da; text-decoration: none; } td a:hover { text-decoration: underline; }
code, pre { background: #f6f8fa; }
code { overflow-wrap: anywhere; }   /* a run's signature is one long word */
pre { padding: 0.6rem; overflow-x: auto; }
figure { margin: 1rem 0 1.6rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: 0.9rem; font-weight: 600; margin-top: 0.3rem; color: #24292f; }
nav.toc { background: #f6f8fa; border: 1px solid #d0d7de; padding: 0.5rem 1rem; margin: 1rem 0; font-size: 0.92rem; }
nav.toc ul { margin: 0.2rem 0; padding-left: 1.2rem; }
nav.toc > div > ul { columns: 2; column-gap: 2rem; }
nav.toc a { color: #0969da; text-decoration: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(32rem, 1fr)); gap: 1rem; margin: 1.2rem 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.8rem 1rem; }
.card h2 { font-size: 1.15rem; margin: 0 0 0.4rem 0; border: 0; }
.card h2 a { color: #0969da; text-decoration: none; }
.card p { margin: 0.3rem 0; font-size: 0.9rem; }
.card table { width: 100%; font-size: 0.85rem; }
.card .more { color: #57606a; font-size: 0.85rem; }
.card td small { color: #57606a; }
.card td { vertical-align: top; }
dl.row { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 0.8rem; font-size: 0.88rem;
         border: 1px solid #d0d7de; padding: 0.5rem 0.8rem; margin: 0.5rem 0 1rem 0; }
dl.row dt { font-weight: 600; color: #57606a; } dl.row dd { margin: 0; white-space: pre-wrap; word-break: break-word; }
"""
CARD_HEADLINES = 3


def _page(title: str, body: str, home: str | None = None) -> str:
    nav = f'<header class="site"><a href="{escape(home)}">&larr; all benchmarks</a></header>\n' if home else ""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n{csp_meta()}\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{escape(title)}</title>\n'
            f"<style>{_CSS}</style></head><body>\n{nav}{body}\n</body></html>\n")


def _convert(markdown_text: str) -> tuple[str, str]:
    """(body HTML, contents list HTML) of a page's Markdown; headings get the anchors the
    contents list links to. Raw HTML is off and links are cleaned (histbench.core.pages)."""
    return render_markdown(markdown_text, clean=False)   # _finish cleans, after resolving item links


def markdown_to_html(markdown_text: str, title: str, *, home: str | None = None, runs: Sequence[SiteRun] = (),
                     contents: bool = True) -> str:
    """One page of the site: the Markdown as HTML with a contents list, every figure and
    table captioned (see `_finish`), table cells linked to the items behind them."""
    body, toc = _convert(markdown_text)
    body = _finish(body, runs)
    if contents and "<li>" in toc:
        nav = f'<nav class="toc" aria-label="contents"><strong>Contents</strong>{toc}</nav>\n'
        head, sep, rest = body.partition("</h1>")
        body = head + sep + "\n" + nav + rest if sep else nav + body
    return _page(title, body, home)


_CAPTION_HEADINGS = ("h2", "h3", "h4", "h5")


def _finish(body: str, runs: Sequence[SiteRun]) -> str:
    """Captions and links, once for every benchmark:

    - an image becomes a <figure> whose visible <figcaption> is its alt text (the reporters
      name the paper's figure there);
    - a table gets a <caption>: the line just above it when that line introduces it ("Shift
      categories (paper Table 1):", moved into the caption), else the nearest heading above
      it (which names the paper's table or section), with the table's panel when a bold line
      names one ("Table 8 ...: Both periods accurate"); a table right under its heading is
      labelled by that heading (aria-labelledby) instead of repeating it;
    - `histbench-items:` links (`items_link`) point at the run's viewer, or become plain
      text when the run has none; a table row whose first cell is a run's (or system's)
      label links that cell to the run's items, and its cells under a heading that names a
      config or group of the run to those items (e.g. the Cloze column of Table 3).
    """
    from lxml import html as lhtml

    if not body.strip():
        return body
    root = lhtml.fragment_fromstring(body, create_parent="div")
    by_dir = {str(Path(r.run_dir).resolve()): r for r in runs}
    for link in list(root.iter("a")):
        href = link.get("href") or ""
        if href.startswith(ITEMS_SCHEME):
            _resolve_items_link(link, href, by_dir)
    for img in list(root.iter("img")):
        _figure(img)
    clean_element(root)   # the figures' links carry their image's target: checked again
    heading = heading_element = None
    panel = None
    for element in list(root.iter()):
        if element.tag in _CAPTION_HEADINGS:
            heading, heading_element, panel = element.text_content().strip(), element, None
        elif element.tag == "p":
            children = list(element)
            text = element.text_content().strip()
            if len(children) == 1 and children[0].tag == "strong" and children[0].text_content().strip() == text:
                panel = text
        elif element.tag == "table":
            if element.find("caption") is None:
                _caption_table(element, heading, heading_element, panel)
            panel = None
            if runs:
                _link_table(element, runs)
    out = escape(root.text or "") + "".join(lhtml.tostring(child, encoding="unicode") for child in root)
    return out


def _caption_table(table, heading: str | None, heading_element, panel: str | None) -> None:
    """A table's caption, from what stands above it (see `_finish`): the line just above that
    introduces it ("... (paper Table 1):") or names its panel (bold) moves into the caption."""
    previous = table.getprevious()
    before = previous.text_content().strip() if previous is not None and previous.tag == "p" else ""
    if before and panel == before:
        text = f"{heading}: {panel}" if heading else panel
    elif before.endswith(":") and len(before) <= 160 and len(previous) == 0:
        text = before[:-1].strip()
    elif previous is not None and previous is heading_element and heading_element.get("id"):
        table.set("aria-labelledby", heading_element.get("id"))   # its heading, just above, is its caption
        return
    elif heading:
        text = f"{heading}: {panel}" if panel else heading
    else:
        return
    if text in (before, before[:-1].strip()) and previous is not None:
        _drop(previous)
    caption = table.makeelement("caption", {})
    caption.text = text
    table.insert(0, caption)


def _drop(element) -> None:
    """Remove an element, keeping the text that follows it."""
    parent = element.getparent()
    tail = element.tail or ""
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + tail
    else:
        parent.text = (parent.text or "") + tail
    parent.remove(element)


def _figure(img) -> None:
    alt = (img.get("alt") or "").strip()
    parent = img.getparent()
    figure = img.makeelement("figure", {})
    link = img.makeelement("a", {"href": img.get("src", "")})
    img.set("loading", "lazy")
    target = parent if parent is not None and parent.tag == "p" and len(parent) == 1 and not (parent.text or "").strip() \
        else img
    container = target.getparent()
    index = container.index(target)
    tail = target.tail
    container.remove(target)
    if target is not img:
        target.remove(img)
    img.tail = None
    link.append(img)
    figure.append(link)
    caption = img.makeelement("figcaption", {})
    caption.text = alt or "Figure"
    figure.append(caption)
    figure.tail = tail
    container.insert(index, figure)


def _resolve_items_link(link, href: str, by_dir: dict) -> None:
    from urllib.parse import unquote

    path, _, fragment = href[len(ITEMS_SCHEME):].partition("#")
    run = by_dir.get(unquote(path))
    if run is not None and run.viewer:
        link.set("href", run.viewer + ("#" + fragment if fragment else ""))
        link.set("title", f"the items behind this cell ({run.label})")
        return
    parent = link.getparent()   # no viewer: the text stays, the link goes
    previous = link.getprevious()
    text = (link.text_content() or "") + (link.tail or "")
    if previous is not None:
        previous.tail = (previous.tail or "") + text
    else:
        parent.text = (parent.text or "") + text
    parent.remove(link)


def _table_title(table) -> str:
    caption = table.find("caption")
    if caption is not None:
        return caption.text_content()
    label = table.get("aria-labelledby")
    if label:
        for element in table.getroottree().iter():
            if element.get("id") == label:
                return element.text_content()
    return ""


def _named_in(title: str, words: dict[str, str]) -> str | None:
    """The one facet value whose label (or alias, 3 characters at least) the title names as a
    whole word; None when it names none or several.

    Words match case-sensitively, and a word inside a hyphenated compound does not count
    ("Name" in "Name-only", "generative" in "non-generative"). When no word matches, a label
    of several parts (with a hyphen or a space) matches regardless of case: a caption in
    sentence case writes "expert-unresolved" for the label "Expert-unresolved"."""

    def found(flags: int, wanted) -> set[str]:
        return {value for word, value in words.items()
                if len(word) >= 3 and wanted(word) and re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", title, flags)}

    hits = found(0, lambda word: True) or found(re.IGNORECASE, lambda word: re.search(r"[\s-]", word.strip()))
    return hits.pop() if len(hits) == 1 else None


def _link_table(table, runs: Sequence[SiteRun]) -> None:
    """Link a table's run rows and their config / group cells to the run's items: a config or
    group the table's caption names (a task, a split) filters every link of the table, one
    that another cell of the row names (a group column, MHER's Evidence column) every link of
    the row. A row label that names systems of several configs (MHER Table 2 calls both
    embedding baselines "Sentence embedding") is the system of the config its row names."""
    from histbench.eval.viewer import items_url

    headers = [th.text_content().strip() for th in table.iterfind(".//thead/tr/th")]
    title = _table_title(table)
    labels: dict[str, list[tuple[SiteRun, str | None]]] = {}

    def add(text: str, entry: tuple[SiteRun, str | None]) -> None:
        entries = labels.setdefault(text, [])
        if entry not in entries:
            entries.append(entry)

    for run in runs:
        if run.viewer:
            add(run.label, (run, None))
            for system, label in run.systems.items():
                for text in (label, system, *run.system_aliases.get(system, ())):
                    add(text, (run, system))
    for tr in table.iterfind(".//tbody/tr"):
        cells = tr.findall("td")
        at = next((k for k, cell in enumerate(cells[:2]) if cell.text_content().strip() in labels
                   and cell.find(".//a") is None), None)
        if at is None:
            continue
        chosen = None
        for run, system in labels[cells[at].text_content().strip()]:
            base = {facet: _named_in(title, run.words.get(facet, {})) for facet in ("config", "group")}
            for facet in ("config", "group"):   # a cell of the row that is a config or group ("EME") narrows it
                named = {run.words.get(facet, {}).get(c.text_content().strip())
                         for k, c in enumerate(cells) if k != at} - {None}
                if len(named) == 1:
                    base[facet] = named.pop()
            fits = system is None or base["config"] is None or base["config"] in run.system_configs.get(system, [base["config"]])
            if fits:
                chosen = (run, system, base)
                break
            chosen = chosen or (run, system, base)
        run, system, base = chosen
        _wrap(cells[at], items_url(run.viewer, system=system, **base), f"the items of {cells[at].text_content().strip()}")
        for header, cell in zip(headers[at + 1:], cells[at + 1:], strict=False):
            text = cell.text_content().strip()
            if cell.find(".//a") is not None or not text or text == "-":
                continue
            for facet in ("config", "group"):
                value = run.words.get(facet, {}).get(header)
                if value is not None:
                    _wrap(cell, items_url(run.viewer, system=system, **{**base, facet: value}),
                          "the items behind this cell")
                    break


def _wrap(cell, href: str, title: str) -> None:
    link = cell.makeelement("a", {"href": href, "title": title})
    link.text = cell.text
    cell.text = None
    for child in list(cell):
        cell.remove(child)
        link.append(child)
    cell.append(link)


def items_link(text: str, run_dir: Path, **filters: str | None) -> str:
    """Markdown for `text` linked to the items of the run folder `run_dir` that match
    `filters` (config, group, system, outcome, q): the site points it at the run's viewer;
    where the run has none (e.g. `histbench report` printing only) it stays plain text."""
    from urllib.parse import quote, urlencode

    params = urlencode({k: v for k, v in filters.items() if v not in (None, "")})
    return f"[{text}]({ITEMS_SCHEME}{quote(str(Path(run_dir).resolve()))}{'#' + params if params else ''})"


def _strip_items_links(markdown_text: str, runs: Sequence[SiteRun]) -> str:
    """The Markdown copy of a page: item links become the viewer's relative path, or plain text."""
    from urllib.parse import unquote

    by_dir = {str(Path(r.run_dir).resolve()): r for r in runs}

    def replace(match: re.Match) -> str:
        text, target = match.group(1), match.group(2)
        path, _, fragment = target.partition("#")
        run = by_dir.get(unquote(path))
        if run is not None and run.viewer:
            return f"[{text}]({run.viewer}{'#' + fragment if fragment else ''})"
        return text

    return re.sub(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(" + re.escape(ITEMS_SCHEME) + r"([^)\s]*)\)", replace, markdown_text)


def _page_markdown(page: SitePage, level: int) -> str:
    hashes = "#" * level
    parts = [f"{hashes} {page.title}", ""]
    if page.intro:
        parts += [page.intro, ""]
    for section in page.sections:
        parts += [f"{hashes}# {section.title}", "", section.markdown.strip(), ""]
    return "\n".join(parts)


def _card(page: SitePage) -> str:
    """One benchmark's card: what was built, each run with its headline numbers (at most
    CARD_HEADLINES a run; the rest are on the page) and a link to its items."""
    parts = [f'<section class="card" id="card-{escape(page.name)}">',
             f'<h2><a href="{escape(page.name)}.html">{escape(page.title)}</a></h2>']
    if page.built:
        parts.append(f"<p>{_inline(page.built)}</p>")
    if not page.runs:
        parts += ["<p>No run scored.</p>", "</section>"]
        return "\n".join(parts)
    parts.append("<table><thead><tr><th>run</th><th>headline</th><th>value [95% interval]</th></tr></thead><tbody>")
    for run in page.runs:
        ranked = _best_first(run.headlines)
        shown = ranked[:CARD_HEADLINES] or [Headline(run.label, run.note or "", "")]
        more = len(run.headlines) - len(shown)
        name = escape(run.label)
        if run.viewer:
            name = f'<a href="{escape(run.viewer)}" title="every item of this run">{name}</a><br><small>items</small>'
        rows = len(shown) + (1 if more > 0 else 0)
        for k, h in enumerate(shown):
            metric = h.metric if h.run == run.label else f"{h.run}: {h.metric}"
            first = f'<td rowspan="{rows}">{name}</td>' if k == 0 else ""
            parts.append(f"<tr>{first}<td>{escape(metric)}</td><td>{escape(h.value)}</td></tr>")
        if more > 0:
            best = "the best shown; " if ranked is not run.headlines else ""
            parts.append(f'<tr><td colspan="2" class="more">{best}and {more} more on <a href="{escape(page.name)}.html">'
                         "the page</a></td></tr>")
    parts += ["</tbody></table>", "</section>"]
    return "\n".join(parts)


def _best_first(headlines: list[Headline]) -> list[Headline]:
    """A run's headlines, best first, when it has more than the card shows and each is the
    same measure with an estimate (MHER's 16 baselines, each an accuracy); otherwise as
    the run gives them (the same list object)."""
    if len(headlines) <= CARD_HEADLINES:
        return headlines
    if any(h.estimate is None or h.higher_is_better is None for h in headlines) \
            or len({h.higher_is_better for h in headlines}) != 1 or len({h.measure for h in headlines}) != 1:
        return headlines   # measures of different things (a run's tasks) are not ranked against each other
    sign = -1 if headlines[0].higher_is_better else 1
    return sorted(headlines, key=lambda h: sign * h.estimate)


def _inline(markdown_text: str) -> str:
    return render_inline(markdown_text)


def write_site(pages: Sequence[SitePage], out_dir: Path, title: str, intro: str = "") -> Path:
    """The report site: index.html (one card per benchmark: what was built, its runs and
    their headline numbers), NAME.html per benchmark (contents list, captions, links to the
    viewers), and index.md (every page as Markdown) and report.json (every number) beside
    them. Returns index.md's path (where it will be once a staged folder is in place)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = [p.name for p in pages]
    if len(set(names)) != len(names) or any(not re.fullmatch(r"[a-z0-9_-]+", n) or n == "index" for n in names):
        raise UsageError(f"report page names must be distinct lower-case words other than 'index': {names}")
    if len(pages) == 1 and pages[0].title == title and not intro:   # one benchmark's report: its page as it is
        markdown_text = _strip_items_links(_page_markdown(pages[0], 1), pages[0].runs)
    else:
        parts = [f"# {title}", ""]
        if intro:
            parts += [intro, ""]
        for page in pages:
            parts += [_strip_items_links(_page_markdown(page, 2), page.runs), ""]
        markdown_text = "\n".join(parts)
    rendered = {"index.md": markdown_text}
    for page in pages:
        text = _page_markdown(page, 1)
        rendered[f"{page.name}.html"] = markdown_to_html(text, page.title, home="index.html", runs=page.runs)
    cards = "\n".join(_card(page) for page in pages)
    intro_html = _inline(intro) if intro else ""
    rendered["index.html"] = _page(title, f"<h1>{escape(title)}</h1>\n"
                                          + (f"<p>{intro_html}</p>\n" if intro_html else "")
                                          + f'<div class="cards">\n{cards}\n</div>')
    if len(pages) == 1:
        data = {s.title: to_native(s.data) for s in pages[0].sections}
    else:
        data = {p.title: {s.title: to_native(s.data) for s in p.sections} for p in pages}
    rendered["report.json"] = _report_json(data, out_dir)
    for name, content in rendered.items():
        write_text_atomic(out_dir / name, content)
    return final_path(out_dir / "index.md")


def write_report(sections: list[ReportSection], out_dir: Path, title: str, intro: str = "") -> Path:
    """One benchmark's report: inside `histbench report BENCHMARK` (`run_report`) a site of
    one card and one page (see `write_site`), with the viewers of the runs it reads; called
    on its own, index.html is the page itself. Returns index.md's path (where it will be
    once a staged report folder is in place, see `run_report`)."""
    site = _SITE.get()
    if site is not None:
        page = SitePage(site.benchmark, title, [*site.lead, *sections], runs=site.runs, intro=intro,
                        built=_built_from_runs(site.runs))
        return write_site([page], out_dir, title)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    page = SitePage("report", title, sections, intro=intro)
    text = _page_markdown(page, 1)
    rendered = {
        "index.md": _strip_items_links(text, []),
        "index.html": markdown_to_html(text, title),
        "report.json": _report_json({s.title: to_native(s.data) for s in sections}, out_dir),
    }
    for name, content in rendered.items():
        write_text_atomic(out_dir / name, content)
    return final_path(out_dir / "index.md")


def _report_json(data, out_dir: Path) -> str:
    """report.json: every number, with the local paths the runs recorded (their dataset
    folders, run folders) made relative to the report folder, since a report is shared and
    its folder's place on the user's disk is nobody else's business."""
    return json.dumps(_relative_paths(data, final_path(Path(out_dir))), indent=2, ensure_ascii=False,
                      default=str) + "\n"


def _relative_paths(value, root: Path):
    import os

    if isinstance(value, dict):
        return {k: _relative_paths(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative_paths(v, root) for v in value]
    if (isinstance(value, str) and os.path.isabs(value) and "\n" not in value and len(value) < 4096
            and Path(value).exists()):
        return Path(os.path.relpath(final_path(Path(value)).resolve(), Path(root).resolve())).as_posix()
    return value


def _built_from_runs(runs: Sequence[SiteRun]) -> str:
    return f"{len(runs)} run folder{'s' if len(runs) != 1 else ''} reported" if runs else ""

def final_path(path: Path) -> Path:
    """Where a path inside the report folder being staged will be once it is in place."""
    staging = _STAGING.get()
    path = Path(path)
    if staging is None:
        return path
    tmp, final = staging
    try:
        return final / path.relative_to(tmp)
    except ValueError:
        return path


def check_report_folder(out: Path) -> None:
    """A clear error when `out` exists and is not a report folder (it would be replaced)."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError("the report folder is a file", file=out, field="--out")
    if any(out.iterdir()) and not any((out / name).is_file() for name in REPORT_MARKERS):
        raise UsageError(
            "this folder exists and holds no report (no index.md or report.json); a report replaces its whole "
            "folder, so choose a new or empty --out folder", file=out, field="--out",
        )


@contextmanager
def staged_report(out: Path) -> Iterator[Path]:
    """A temporary folder to write a whole report into; it replaces `out` only when the
    block succeeds (an error leaves `out` as it was)."""
    out = Path(out).expanduser()
    check_report_folder(out)
    with atomic_directory(out) as tmp:
        token = _STAGING.set((tmp, out))
        try:
            yield tmp
        finally:
            _STAGING.reset(token)
        _retarget(tmp, out)


TEXT_SUFFIXES = frozenset({".md", ".html", ".json", ".jsonl", ".csv", ".tsv", ".txt", ".yaml", ".yml"})


def _retarget(tmp: Path, final: Path) -> None:
    """Paths of the staging folder that a reporter wrote into its text files (e.g. "the
    ledger is in OUT/ledger.csv") become the final folder's paths."""
    forms = sorted({(str(tmp), str(final)), (str(tmp.resolve()), str(final.resolve()))}, key=lambda f: -len(f[0]))
    for path in tmp.rglob("*"):
        if path.suffix.lower() not in TEXT_SUFFIXES or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if any(old in text for old, _ in forms):
            for old, new in forms:
                text = text.replace(old, new)
            write_text_atomic(path, text)


def run_report(evaluator: BenchmarkEvaluator, args: argparse.Namespace) -> None:
    """`histbench report <benchmark>`: the evaluator's report, written atomically into the
    folder its `report_out(args)` names (nothing staged when it names none), as a site: an
    index card, the benchmark's page, and a viewer of every run it reads (viewer/RUN/)."""
    from histbench.core.paths import confine_run_folder

    for run_dir in evaluator.report_runs(args):   # shared run folders: no link out of them is read
        confine_run_folder(run_dir)
        evaluator.open_run(run_dir)   # in the run format (an older folder: the command that converts it)
    check_runs_dataset(evaluator, evaluator.report_runs(args), getattr(args, "dataset", None),
                       getattr(args, "revision", None))
    out = evaluator.report_out(args)
    if out is None:
        evaluator.run_report(args)
        return
    with staged_report(Path(out)) as tmp:
        runs = site_runs(evaluator, evaluator.report_runs(args), tmp, Path("viewer"))
        lead = compared_runs(evaluator, evaluator.report_runs(args), tmp)
        token = _SITE.set(SiteContext(evaluator.name, runs, lead))
        try:
            args.out = tmp
            evaluator.run_report(args)
        finally:
            _SITE.reset(token)


def compared_runs(evaluator: BenchmarkEvaluator, run_dirs: Sequence[Path], site_root: Path,
                  compare_dir: Path = Path("compare")) -> list[ReportSection]:
    """With two runs or more: the leaderboard section, and the side-by-side item view
    (site_root/compare_dir/index.html) it links to (histbench.eval.compare)."""
    from histbench.eval.compare import leaderboard_markdown, write_comparison

    if len(run_dirs) < 2:
        return []
    folders = [evaluator.open_run(Path(run_dir)) for run_dir in run_dirs]
    write_comparison(folders, site_root / compare_dir, evaluator.name)
    text = (leaderboard_markdown(evaluator.name, folders)
            + "\nEvery item of these runs side by side, with a filter for the items on which they disagree: "
              f"[the run comparison]({(compare_dir / 'index.html').as_posix()}).\n")
    data = {"runs": [{"label": f.label, "metrics": [m for m in f.metrics if m.get("headline")]} for f in folders]}
    return [ReportSection("Leaderboard", text, data=data)]


def check_runs_dataset(evaluator: BenchmarkEvaluator, run_dirs: Sequence[Path], dataset: str | None,
                       revision: str | None) -> None:
    """`histbench report --dataset BUILD`: every run must have been made on that build (the
    data_sha256 each run records). Without --dataset nothing is checked here (a benchmark's
    report that reads the build checks its runs against the build it opens)."""
    if not dataset:
        return
    from histbench.core.dataset import BuiltDataset
    from histbench.core.errors import EvalError

    expected = BuiltDataset.open(dataset, revision=revision, benchmark=evaluator.name).identity().get("data_sha256")
    for run_dir in run_dirs:
        recorded = (evaluator.open_run(Path(run_dir)).run.get("build") or {}).get("data_sha256")
        if recorded is None:
            raise EvalError("the run records no build (data_sha256), so it cannot be checked against --dataset",
                            file=run_dir)
        if recorded != expected:
            raise EvalError(f"the run was made on build data {recorded[:12]}, not on {dataset} "
                            f"(data {str(expected)[:12]}): report runs of one build together", file=run_dir)


def site_runs(evaluator: BenchmarkEvaluator, run_dirs: Sequence[Path], site_root: Path, viewer_dir: Path) -> list[SiteRun]:
    """A viewer (site_root/viewer_dir/NAME/) and the headline numbers of each run folder.

    A run the viewer cannot read is still listed, with the reason, and its report is
    written all the same (the viewer is an addition to the report, not a condition of it)."""
    from histbench.core.errors import HistbenchError
    from histbench.core.progress import log
    from histbench.eval.viewer import write_viewer

    runs: list[SiteRun] = []
    used: set[str] = set()
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        name = slug(run_dir.name)
        while name in used:
            name += "-2"
        used.add(name)
        try:
            viewed = evaluator.view_items(run_dir)
        except HistbenchError as exc:
            log(f"[{evaluator.name}] no viewer for {run_dir}: {exc}")
            runs.append(SiteRun(run_dir.name, run_dir, note=f"no viewer: {exc}"))
            continue
        relative = (viewer_dir / name).as_posix()
        write_viewer(viewed, site_root / viewer_dir / name)
        systems = {v["value"]: v["label"] for v in viewed.facet_values()["system"]}
        try:
            headlines = evaluator.headlines(run_dir)
        except HistbenchError as exc:
            headlines, note = [], f"no headline: {exc}"
        else:
            note = None
        configs: dict[str, set[str]] = {}
        for item in viewed.items:
            if item.get("system") is not None and item.get("config") is not None:
                configs.setdefault(str(item["system"]), set()).add(str(item["config"]))
        runs.append(SiteRun(viewed.label, run_dir, f"{relative}/index.html", headlines,
                            {f: viewed.words(f) for f in ("config", "group")}, systems, note,
                            system_aliases={str(k): [str(a) for a in v] for k, v in viewed.aliases.get("system", {}).items()},
                            system_configs={k: sorted(v) for k, v in configs.items()}))
    return runs
