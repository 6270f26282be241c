"""The country table: ISO codes, names and the seven regions of paper appendix C.4.

`sources/chronoculture/countries.csv` (replace it with `--countries FILE`) has the
columns `iso_numeric, alpha3, alpha2, name, region, aliases`. `aliases` lists, separated
by `;`, other codes and names surveys use for the same unit: older numeric codes (280
West Germany), ISSP sample codes (`DE-W`, `GB-GBN`, `IL-J`), the vehicle codes of the
early ISSP files (`D`, `CDN`, `NIRL`) and other names (`WEST GERMANY`, `CZECH
REPUBLIC`); several survey samples that map to one row are pooled with their own
weights. Survey units that have no ISO
code carry the survey's own code (909 Northern Ireland, 915 Kosovo, 891 Serbia and
Montenegro).

Regions (C.4): Western (Western Europe, North America, Australia, New Zealand),
Eastern Europe and Central Asia, Latin America, East Asia, South and Southeast Asia,
Middle East and North Africa, Sub-Saharan Africa. The paper lists no country-by-country
assignment; ours is geographic (Cyprus, Malta and Greece are Western; Israel and Turkey
are in the Middle East and North Africa; Mongolia is in East Asia).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from histbench.core.errors import SourceError
from histbench.core.readers import read_text_utf8

REGIONS: tuple[str, ...] = (
    "Western",
    "Eastern Europe and Central Asia",
    "Latin America",
    "East Asia",
    "South and Southeast Asia",
    "Middle East and North Africa",
    "Sub-Saharan Africa",
)
COLUMNS = ("iso_numeric", "alpha3", "alpha2", "name", "region", "aliases")


@dataclass(frozen=True)
class Country:
    iso_numeric: int
    alpha3: str
    alpha2: str
    name: str
    region: str


class CountryTable:
    def __init__(self, countries: list[Country], aliases: dict[str, str], path: Path):
        self.path = path
        self.countries = countries
        self.by_alpha3 = {c.alpha3: c for c in countries}
        self.by_numeric = {c.iso_numeric: c for c in countries}
        self.by_alpha2 = {c.alpha2: c for c in countries if c.alpha2}
        self.by_name = {c.name.upper(): c for c in countries}
        self.aliases = aliases  # upper-case alias -> alpha3

    @classmethod
    def load(cls, path: Path) -> CountryTable:
        path = Path(path)
        reader = csv.DictReader(io.StringIO(read_text_utf8(path), newline=""))
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise SourceError(f"country table lacks columns {missing} (expected {list(COLUMNS)})", file=path)
        try:
            rows = list(reader)
        except csv.Error as exc:
            raise SourceError(f"the country table is not valid CSV: {exc}", file=path, row=reader.line_num) from exc
        countries: list[Country] = []
        aliases: dict[str, str] = {}
        seen: dict[str, int] = {}
        for line, row in enumerate(rows, start=2):
            try:
                numeric = int(row["iso_numeric"])
            except (TypeError, ValueError) as exc:
                raise SourceError("iso_numeric must be an integer", file=path, row=line, field="iso_numeric") from exc
            alpha3 = (row["alpha3"] or "").strip().upper()
            if len(alpha3) != 3:
                raise SourceError(f"alpha3 must have three letters, got {alpha3!r}", file=path, row=line, field="alpha3")
            region = (row["region"] or "").strip()
            if region not in REGIONS:
                raise SourceError(f"region {region!r} is not one of {list(REGIONS)}", file=path, row=line, field="region")
            name = (row["name"] or "").strip()
            if not name:
                raise SourceError("every country needs a name", file=path, row=line, field="name")
            for key in (f"n{numeric}", alpha3):
                if key in seen:
                    raise SourceError(f"{key.lstrip('n')} is listed twice (also row {seen[key]})", file=path, row=line)
                seen[key] = line
            countries.append(Country(numeric, alpha3, (row["alpha2"] or "").strip().upper(), name, region))
            for alias in (row.get("aliases") or "").split(";"):
                alias = alias.strip().upper()
                if alias:
                    if alias in aliases and aliases[alias] != alpha3:
                        raise SourceError(f"alias {alias} is used by {aliases[alias]} too", file=path, row=line, field="aliases")
                    aliases[alias] = alpha3
        return cls(countries, aliases, path)

    def numeric_by_text(self) -> dict[str, int]:
        """{name, alpha-3, alpha-2 or alias: numeric code} for a CSV export that writes countries as text."""
        table = {alias: self.by_alpha3[a3].iso_numeric for alias, a3 in self.aliases.items() if not alias.isdigit()}
        for c in self.countries:
            table.update({c.name: c.iso_numeric, c.alpha3: c.iso_numeric})
            if c.alpha2:
                table[c.alpha2] = c.iso_numeric
        return table

    def from_numeric(self, code) -> Country | None:
        """A numeric survey code (ISO numeric, or a numeric alias such as 280)."""
        try:
            number = int(code)
        except (TypeError, ValueError, OverflowError):
            return None
        if number != code and not (isinstance(code, float) and code.is_integer()):
            return None
        if number in self.by_numeric:
            return self.by_numeric[number]
        alias = self.aliases.get(str(number))
        return self.by_alpha3.get(alias) if alias else None

    def from_text(self, code: str, coding: str = "alpha2") -> Country | None:
        """An alphabetic code: an alias (e.g. 'DE-W') first, then alpha-2 or alpha-3.

        For alpha-2 codings a sample suffix falls back to its first two letters: 'FR-X', and
        the forms the GESIS files use besides 'IL-A': 'IL_A' and 'IL (A)' (C_ALPHAN of ZA4700
        v2.0.0 and ZA4950 as PilerDB lists them).
        """
        text = str(code).strip().upper().replace("_", "-")
        if not text:
            return None
        if text in self.aliases:
            return self.by_alpha3.get(self.aliases[text])
        if coding == "alpha3":
            return self.by_alpha3.get(text)
        if text in self.by_alpha2:
            return self.by_alpha2[text]
        head = re.match(r"([A-Z]{2})\s*[-(]", text)
        return self.by_alpha2.get(head.group(1)) if head else None
