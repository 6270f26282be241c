"""The one way text is put into a page (the report site and the per-item viewer).

Run folders and builds are shared between colleagues, and models write what they like, so
every string that is not the project's own literal is untrusted where it enters HTML:

- plain text is escaped where it enters HTML (`escape`);
- untrusted text that enters Markdown is escaped for Markdown first
  (`histbench.core.markdown.escape_markdown`), so that a label cannot start a heading, a
  link or a table cell;
- Markdown is rendered by the `markdown` package with raw HTML off (`render_markdown`): its
  raw-HTML block and inline parsers are removed, so `<script>` or `<img onerror=...>` in
  the text comes out as text;
- every link and image of a rendered page goes through `safe_url`: only http(s) and
  relative targets are kept (a `javascript:`, `data:` or `vbscript:` link loses its target
  and stays text), and any `on...` attribute is dropped (`clean_fragment`);
- every page carries a Content-Security-Policy (`csp_meta`) that allows no script but the
  page's own (by its SHA-256 hash, and the scripts it loads itself) and no inline event
  handler, so that whatever slipped past the above still cannot run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Sequence

#: schemes a link or image of a page may point at; a target without a scheme is relative
SAFE_SCHEMES = frozenset({"http", "https"})
#: attributes whose value is a URL the browser follows or loads
URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href", "poster", "background", "cite")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
# browsers ignore ASCII control characters and spaces inside and around a scheme ("java\tscript:")
_IGNORED_IN_URL = re.compile(r"[\x00-\x20\x7f]")


def escape(text: object) -> str:
    """Text (or anything, as str) made safe inside an HTML element or a quoted attribute
    (control characters, which no page may hold, as U+FFFD)."""
    from histbench.core.markdown import CONTROL_CHARACTERS

    return html.escape(CONTROL_CHARACTERS.sub("\ufffd", str(text)), quote=True)


def safe_url(url: str | None) -> bool:
    """Whether a page may link to (or load) `url`: http(s), or relative (a path, a query, a
    fragment). `javascript:`, `data:`, `vbscript:`, `file:` and every other scheme are refused,
    however they are spelled (case, embedded tabs or newlines, leading spaces)."""
    if url is None:
        return True
    cleaned = _IGNORED_IN_URL.sub("", url)
    match = _SCHEME.match(cleaned)
    return match is None or match.group(1).lower() in SAFE_SCHEMES


def _markdown():
    import markdown

    md = markdown.Markdown(extensions=["tables", "fenced_code", "toc"], extension_configs={"toc": {"toc_depth": "2-4"}})
    # raw HTML off: the block and inline raw-HTML parsers go, so '<' is always text
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return md


def render_markdown(text: str, *, clean: bool = True) -> tuple[str, str]:
    """(body HTML, contents list HTML) of Markdown, rendered with raw HTML off and its links
    and images cleaned (`clean_fragment`). Headings get the anchors the contents list uses.
    clean=False leaves the body's links to a caller that resolves links of its own scheme
    first and then applies `clean_element` itself (the report site's `_finish`)."""
    from histbench.core.markdown import CONTROL_CHARACTERS

    md = _markdown()
    body = md.convert(CONTROL_CHARACTERS.sub("\ufffd", text))   # no page may hold a control character
    return (clean_fragment(body) if clean else body), clean_fragment(md.toc)


def render_inline(text: str) -> str:
    """One paragraph of Markdown as inline HTML (no enclosing <p>), rendered as `render_markdown`."""
    body, _ = render_markdown(text)
    return body[3:-4] if body.startswith("<p>") and body.endswith("</p>") and body.count("<p>") == 1 else body


def clean_element(root) -> None:
    """In an lxml tree: drop every `on...` attribute and every URL attribute whose target
    `safe_url` refuses (a link keeps its text, an image its alt text)."""
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for name in list(element.attrib):
            lowered = name.lower()
            if lowered.startswith("on") or (lowered in URL_ATTRIBUTES and not safe_url(element.get(name))):
                del element.attrib[name]


def clean_fragment(fragment: str) -> str:
    """An HTML fragment with `clean_element` applied (the fragment is the project's own
    renderer's output; this is the last line behind raw HTML being off)."""
    if not fragment.strip() or ("<" not in fragment):
        return fragment
    from lxml import html as lhtml

    root = lhtml.fragment_fromstring(fragment, create_parent="div")
    clean_element(root)
    return (escape(root.text) if root.text else "") + "".join(lhtml.tostring(child, encoding="unicode") for child in root)


def script_hash(source: str) -> str:
    """The CSP source expression that allows exactly the inline script `source`."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def csp(scripts: Sequence[str] = ()) -> str:
    """The Content-Security-Policy of a page: nothing from elsewhere; images from the page's
    own folder; no script at all, or only the inline `scripts` given (by hash) and the
    scripts they add themselves ('strict-dynamic'); inline event handlers never (they match
    no hash). Inline styles are allowed: the pages style themselves (tables align cells with
    a style attribute), and CSS runs no script."""
    script = " ".join(script_hash(s) for s in scripts) + " 'strict-dynamic'" if scripts else "'none'"
    return ("default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
            f"script-src {script}; object-src 'none'; base-uri 'none'; form-action 'none'")


def csp_meta(scripts: Sequence[str] = ()) -> str:
    """The <meta> element carrying `csp(scripts)`; it goes first in the page's <head>."""
    return f'<meta http-equiv="Content-Security-Policy" content="{csp(scripts)}">'   # no quote or angle bracket in it
