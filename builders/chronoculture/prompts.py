"""Prompt templates (sources/chronoculture/prompts.yaml) rendered as chat messages.

One file holds every template; its sha256 goes into histbench.json so that a result
can say which prompts it was scored with. Messages are lists of {role, content}: the
system message (appendix B.1's, word for word, in the shipped file), then one user
message. The system message is sent exactly as the file holds it (no stripping).

A file needs the `distribution` section (`system`, `option_line`, `dated`, `undated`)
and, unless loaded with `sections=("distribution",)` (the alternative wordings of F.3,
`histbench eval chronoculture --prompts FILE`), the `mcq` section (`system`,
`option_line`, `dated`). An optional `json_value` in a section replaces `<percent>`,
the placeholder shown for each number of the expected JSON object.
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from pathlib import Path

import yaml

from histbench.core.errors import SourceError

REQUIRED = {
    "distribution": ("system", "option_line", "dated", "undated"),
    "mcq": ("system", "option_line", "dated"),
}
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class _Compiled:
    """A string.Template turned once into a `str.format` pattern (its text with braces doubled,
    each placeholder as {name}): rendering is one `format_map`, with the result and the errors
    of `Template.substitute` (KeyError for an unknown placeholder, ValueError for a malformed
    one, which keeps the template itself) at a fraction of its cost. Placeholder names are
    identifiers (Template's pattern), so format reads no attribute or index out of them."""

    def __init__(self, template: string.Template):
        self.template = template
        pieces: list[str] = []
        last = 0
        self.pattern: str | None = None
        for match in template.pattern.finditer(template.template):
            pieces.append(template.template[last:match.start()].replace("{", "{{").replace("}", "}}"))
            last = match.end()
            if match.group("invalid") is not None:
                return  # substitute raises the ValueError
            name = match.group("named") or match.group("braced")
            pieces.append("$" if name is None else "{" + name + "}")
        pieces.append(template.template[last:].replace("{", "{{").replace("}", "}}"))
        self.pattern = "".join(pieces)

    def render(self, values: dict) -> str:
        if self.pattern is None:
            return self.template.substitute(**values)
        return self.pattern.format_map(values)


@dataclass(frozen=True)
class PromptTemplates:
    path: Path
    sha256: str
    data: dict

    @classmethod
    def load(cls, path: Path, sections: tuple[str, ...] = tuple(REQUIRED)) -> PromptTemplates:
        path = Path(path)
        try:
            raw = path.read_bytes()
            data = yaml.safe_load(raw.decode("utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise SourceError(f"cannot read the prompt templates: {exc}", file=path) from exc
        if not isinstance(data, dict):
            raise SourceError("prompt templates must be a YAML mapping of sections", file=path)
        # the sections asked for, and any other section the file defines, must be complete
        for section in (s for s in REQUIRED if s in sections or s in data):
            for key in REQUIRED[section]:
                if not isinstance((data.get(section) or {}).get(key), str):
                    raise SourceError(f"prompt templates need a string '{section}.{key}'", file=path, field=f"{section}.{key}")
        return cls(path, hashlib.sha256(raw).hexdigest(), data)

    def has(self, section: str) -> bool:
        """Whether the file defines `section` ("distribution" or "mcq")."""
        return isinstance(self.data.get(section), dict)

    def _template(self, section: str, key: str) -> _Compiled:
        cache = self.__dict__.setdefault("_templates", {})
        if (section, key) not in cache:
            cache[(section, key)] = _Compiled(string.Template(self.data[section][key]))
        return cache[(section, key)]

    def _render(self, section: str, key: str, **values) -> str:
        try:
            return self._template(section, key).render(values)
        except (KeyError, ValueError) as exc:
            raise SourceError(f"template '{section}.{key}' uses an unknown placeholder: {exc}", file=self.path) from exc

    def _options(self, section: str, labels: tuple[str, ...]) -> tuple[str, str]:
        """(option lines, JSON skeleton) for a label list, rendered once per distinct list."""
        cache = self.__dict__.setdefault("_option_blocks", {})
        key = (section, labels)
        if key not in cache:
            if section == "mcq":
                lines = [self._render("mcq", "option_line", letter=LETTERS[i], label=label) for i, label in enumerate(labels)]
            else:
                lines = [self._render(section, "option_line", label=label) for label in labels]
            value = self.data[section].get("json_value", "<percent>")
            skeleton = "{" + ", ".join(f"{json.dumps(label, ensure_ascii=False)}: {value}" for label in labels) + "}"
            cache[key] = ("\n".join(lines), skeleton)
        return cache[key]

    def distribution(self, country: str, question: str, labels: list[str], year: int | None) -> list[dict]:
        """Dated (year given) or undated distribution prompt."""
        options, skeleton = self._options("distribution", tuple(labels))
        key = "undated" if year is None else "dated"
        values = {"country": country, "question": question, "options": options, "json_skeleton": skeleton}
        if year is not None:
            values["year"] = str(year)
        return [
            {"role": "system", "content": self.data["distribution"]["system"]},
            {"role": "user", "content": self._render("distribution", key, **values)},
        ]

    def mcq(self, country: str, question: str, labels: list[str], year: int) -> list[dict]:
        options, _ = self._options("mcq", tuple(labels))
        return [
            {"role": "system", "content": self.data["mcq"]["system"]},
            {"role": "user", "content": self._render("mcq", "dated", country=country, question=question,
                                                      options=options, year=str(year))},
        ]
