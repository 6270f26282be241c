"""Text into pages (docs/security.md): hostile strings through the page writers.

Properties, on hypothesis-generated hostile text (HTML tags and event handlers, Markdown
links to javascript:, headings after line breaks, table pipes, the viewer's placeholders):

- escaped for Markdown (`escape_markdown`), untrusted text renders as exactly its own text,
  with no element of its own, in a paragraph and in a table cell (where it stays one cell);
- rendered Markdown (`render_markdown`) never holds an element the text wrote itself (no
  raw HTML), no `on...` attribute and no link or image to a scheme other than http(s);
- `safe_url` refuses javascript:, data: and vbscript: however they are spelled;
- a report site and a viewer written with hostile labels, run names, item texts and answers
  carry a Content-Security-Policy whose only allowed script is the page's own, and show the
  hostile text as text.
The browser tests (tests/report_site/test_hostile.py) prove nothing executes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import html as lhtml

from histbench.core.markdown import CONTROL_CHARACTERS, code_span, escape_markdown, markdown_table
from histbench.core.pages import csp, render_inline, render_markdown, safe_url, script_hash
from histbench.eval.report import Headline, ReportSection, SitePage, SiteRun, markdown_to_html, write_site
from histbench.eval.viewer import ViewerRun, render_page, write_viewer

PAYLOADS = [
    "<img src=x onerror=window.__pwned=1>",
    "<script>window.__pwned=2</script>",
    "[click me](javascript:window.__pwned=3)",
    "[x](JaVa\tScRiPt:alert(1))",
    "![i](javascript:alert(1))",
    "<a href='javascript:alert(1)'>a</a>",
    "\n# injected heading\n",
    "\r\n## injected\r\n",
    "a | b | c",
    "a \\| b",
    "__META__", "__TITLE__", "__CSP__",
    "</script><script>window.__pwned=4</script>",
    "<svg onload=window.__pwned=5>",
    "<!-- comment",
    "<http://example.org/x>",
    "<x@y.z>",
    "&lt;script&gt;",
    "[ref]: javascript:alert(1)",
    "    indented code",
    "`code` *em* _u_ **b**",
    "<iframe src=javascript:alert(1)>",
    "<style>body{display:none}</style>",
]
#: the elements Markdown itself makes (nothing a text can add by writing HTML)
MARKDOWN_TAGS = {"div", "p", "a", "em", "strong", "code", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
                 "blockquote", "hr", "br", "img", "table", "thead", "tbody", "tr", "th", "td"}

hostile = st.lists(st.one_of(st.sampled_from(PAYLOADS), st.text(max_size=12)), min_size=1, max_size=5).map("".join)


def _fragment(html_text: str):
    return lhtml.fragment_fromstring(html_text, create_parent="div")


def _normal(text: str) -> str:
    """Text as a paragraph shows it: line breaks are spaces, other control characters are
    shown as U+FFFD, and whitespace is not significant in HTML."""
    text = re.sub("[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]", " ", text)
    return " ".join(CONTROL_CHARACTERS.sub("\ufffd", text).split())


@settings(max_examples=300, deadline=None)
@given(hostile)
def test_escaped_text_renders_as_itself(text):
    rendered = render_inline("Run " + escape_markdown(text) + " ends.")
    root = _fragment(rendered)
    assert len(root) == 0, rendered          # no element: no link, heading, emphasis, image or HTML
    assert _normal(root.text_content()) == _normal("Run " + text + " ends.")


@settings(max_examples=300, deadline=None)
@given(hostile.map(lambda t: t + "`" * (len(t) % 3)).filter(lambda t: t.strip()))
def test_a_code_span_holds_the_whole_text(text):
    root = _fragment(render_inline("Run " + code_span(text) + " ends."))
    assert [child.tag for child in root] == ["code"]
    assert _normal(root[0].text_content()) == _normal(text)


@settings(max_examples=200, deadline=None)
@given(hostile, hostile)
def test_escaped_text_stays_in_its_table_cell(first, second):
    body, _ = render_markdown(markdown_table([[escape_markdown(first), escape_markdown(second), "1"]], ["run", "b", "n"]))
    root = _fragment(body)
    rows = root.findall(".//tbody/tr")
    assert len(rows) == 1
    cells = rows[0].findall("td")
    assert len(cells) == 3, body
    assert [_normal(c.text_content()) for c in cells] == [_normal(first), _normal(second), "1"]
    assert all(len(c) == 0 for c in cells[:2])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(PAYLOADS), st.text(max_size=20),
                          st.sampled_from(["\n\n", "\n", "| a | b |\n|---|---|\n| ", "# ", "- ", "> "])),
                min_size=1, max_size=8).map("".join))
def test_rendered_markdown_has_no_raw_html_and_no_unsafe_link(text):
    body, toc = render_markdown(text)
    for fragment in (body, toc):
        root = _fragment(fragment)
        for element in root.iter():
            if not isinstance(element.tag, str):
                continue
            assert element.tag in MARKDOWN_TAGS, (element.tag, text)
            assert not any(name.lower().startswith("on") for name in element.attrib), text
            for name in ("href", "src"):
                assert safe_url(element.get(name)), (element.get(name), text)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JAVASCRIPT:alert(1)", " javascript:x", "java\tscript:x",
                                 "java\nscript:x", "\x00javascript:x", "jav&#x09;ascript:x".replace("&#x09;", "\t"),
                                 "data:text/html,<script>x</script>", "vbscript:msgbox", "file:///etc/passwd",
                                 "mailto:x@y.z"])
def test_unsafe_urls_are_refused(url):
    assert not safe_url(url)


@pytest.mark.parametrize("url", ["https://example.org/x", "HTTP://x", "viewer/index.html#q=a:b", "#anchor",
                                 "?a=1", "../items.html", "figures/fig:1.png".replace(":", "_")])
def test_safe_urls_are_kept(url):
    assert safe_url(url)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["javascript", "data", "vbscript", "file"]), st.lists(st.booleans(), min_size=12, max_size=12),
       st.text(alphabet="\t\n\r \x00\x01\x1f", max_size=3), st.text(alphabet="\t\n\r", max_size=2))
def test_unsafe_schemes_are_refused_however_spelled(scheme, upper, before, inside):
    spelled = "".join(c.upper() if u else c for c, u in zip(scheme, upper, strict=False))
    cut = len(spelled) // 2
    assert not safe_url(before + spelled[:cut] + inside + spelled[cut:] + ":payload")


def test_a_javascript_link_in_markdown_keeps_its_text_but_not_its_target():
    page = markdown_to_html("See [the items](javascript:window.__pwned=1) and [ok](https://example.org).", "t")
    root = lhtml.document_fromstring(page)
    links = {a.text_content(): a.get("href") for a in root.iter("a")}
    assert links == {"the items": None, "ok": "https://example.org"}


# ----------------------------------------------------------------------------- whole pages


def _csp_of(page: str) -> str:
    root = lhtml.document_fromstring(page)
    metas = [m for m in root.iter("meta") if (m.get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(metas) == 1
    head = root.find("head")
    assert head is not None and head.index(metas[0]) <= 1, "the policy comes first in <head>"
    return metas[0].get("content")


def _executable_scripts(page: str) -> list[str]:
    root = lhtml.document_fromstring(page)
    return [s.text or "" for s in root.iter("script") if (s.get("type") or "text/javascript") != "application/json"]


def _site(tmp_path: Path, label: str, run_name: str) -> dict[str, str]:
    run_dir = tmp_path / run_name
    run_dir.mkdir()
    section = ReportSection("Results", markdown_table([[escape_markdown(label), "0.5"]], ["Model", "acc"])
                            + f"\n\nRuns compared: {escape_markdown(label)}.\n\n**{escape_markdown(label)}**\n")
    run = SiteRun(label=label, run_dir=run_dir, viewer=None, headlines=[Headline(label, label, "0.5 [0.4, 0.6]")],
                  note=label)
    page = SitePage("chronologic", "Chronologic-EN", [section], built=escape_markdown(label), runs=[run])
    write_site([page], tmp_path / "site", "All benchmarks", intro=escape_markdown(label))
    return {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "site").glob("*.html")}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=hostile, run_name=st.sampled_from(["run", "<b>run</b>", "run \"quoted\"", "__META__"]))
def test_report_site_pages_keep_hostile_labels_as_text(tmp_path_factory, label, run_name):
    pages = _site(tmp_path_factory.mktemp("site"), label, run_name.replace("/", "_"))
    assert set(pages) == {"index.html", "chronologic.html"}
    for name, page in pages.items():
        policy = _csp_of(page)
        assert "script-src 'none'" in policy and "default-src 'none'" in policy
        assert _executable_scripts(page) == []
        root = lhtml.document_fromstring(page)
        for element in root.iter():
            if not isinstance(element.tag, str):
                continue
            assert element.tag not in {"script", "iframe", "svg", "object", "embed"}, (name, element.tag)
            assert not any(a.lower().startswith("on") for a in element.attrib), name
            assert safe_url(element.get("href")) and safe_url(element.get("src")), name
        headings = [h.text_content() for h in root.iter("h1", "h2", "h3", "h4")]
        assert not any("injected" in h for h in headings), headings
    # the label is shown, as text, in the page's table and in the index card
    page = lhtml.document_fromstring(pages["chronologic.html"])
    first_cells = [_normal(tr.find("td").text_content()) for tr in page.iter("tr") if tr.find("td") is not None]
    assert _normal(label) in first_cells


def _viewer_run(tmp_path: Path, text: str) -> ViewerRun:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    item = {"id": "q-" + text, "config": text, "group": text, "system": None, "outcome": "wrong", "score": 0,
            "messages": [{"role": "user", "content": text}], "response": text, "parsed": {"answer": text},
            "gold": text, "details": {text: text}}
    return ViewerRun("chronologic", text, run_dir, [item], labels={"config": {text: text}}, notes=[text])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hostile)
def test_viewer_page_fills_its_placeholders_once_and_allows_only_its_own_script(tmp_path_factory, text):
    tmp_path = tmp_path_factory.mktemp("viewer")
    page_path = write_viewer(_viewer_run(tmp_path, text), tmp_path / "viewer")
    page = page_path.read_text(encoding="utf-8")
    scripts = _executable_scripts(page)
    assert len(scripts) == 1
    assert csp(scripts) == _csp_of(page)
    assert script_hash(scripts[0]) in _csp_of(page) and "'unsafe-inline'" not in _csp_of(page).split("script-src")[1]
    root = lhtml.document_fromstring(page)
    meta = json.loads(root.get_element_by_id("histbench-meta").text)
    assert meta["label"] == text                                # the data is intact ...
    title = root.find(".//title").text or ""                 # ... and the title is the run's, as text
    assert title.split() == CONTROL_CHARACTERS.sub("\ufffd", f"{text}: 1 items (chronologic)").split()
    assert "</script" not in root.get_element_by_id("histbench-meta").text


def test_a_label_holding_the_placeholders_does_not_pull_the_data_into_the_title():
    meta = {"title": "__META__ __CSP__ __TITLE__", "label": "x"}
    page = render_page(meta)
    title = lhtml.document_fromstring(page).find(".//title").text
    assert title == "__META__ __CSP__ __TITLE__"
    assert page.count('http-equiv="Content-Security-Policy"') == 1
    assert len(re.findall(r'id="histbench-meta">', page)) == 1
