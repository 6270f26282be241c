"""Dataset cards: the template's front matter and body plus what is computed from the build.

A card template (`cards/<benchmark>.md`) holds what does not change between builds: the
pretty name, languages, tasks, tags, the licence kind and the prose. The build computes
the rest, so the card never claims what the data does not hold:

- `configs` (data files per split, one config marked `default`) and `dataset_info`
  (features, ClassLabel names, sizes);
- `size_categories`, from the rows of the largest config;
- `license_name` / `license_link` when the licence is `other`: the link is `LICENSE.md`,
  written next to the card from the licences of the inputs actually used;
- gated-access fields (`extra_gated_*`) when any input's terms do not allow
  redistribution (`redistribution: forbidden` or `unknown` in the source manifest), so a
  public upload asks every user to confirm their own access to the sources.

`check_card` re-reads a card with `huggingface_hub`'s card classes and lists what is
missing; `histbench push` refuses a card that lacks anything (a test checks every
shipped template).
"""

from __future__ import annotations

import re
from string import Template

import yaml

from histbench.core.errors import BuildError

# Hugging Face's size buckets, by number of rows.
SIZE_CATEGORIES = (
    (1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
)

# How the source manifests describe redistribution (`redistribution:` of each input).
REDISTRIBUTION = {
    "open": "the licence allows redistribution",
    "conditions": "redistribution is allowed under the licence's conditions (attribution, non-commercial, share-alike ...)",
    "own": "your own data: you decide whether it may be shared",
    "forbidden": "the terms do not allow redistribution",
    "unknown": "the terms do not say whether redistribution is allowed: treat it as not allowed until you know",
}
GATED = frozenset({"forbidden", "unknown"})

# Sections every card body must have (the Hugging Face dataset card template's).
REQUIRED_SECTIONS = ("Uses", "Bias, risks and limitations", "Source data", "Annotations", "Citation")

LICENCE_FILE = "LICENSE.md"


def size_category(rows: int) -> str:
    for bound, label in SIZE_CATEGORIES:
        if rows < bound:
            return label
    return "n>1B"


def needs_gating(inputs: list[dict]) -> bool:
    """Whether any input of the build may not be redistributed (or nobody knows)."""
    return any(item.get("redistribution", "unknown") in GATED for item in inputs)


def gated_fields(pretty_name: str, inputs: list[dict]) -> dict:
    restricted = sorted({f"{i['role']} ({i.get('licence') or 'terms not recorded'})"
                         for i in inputs if i.get("redistribution", "unknown") in GATED})
    return {
        "extra_gated_heading": f"Access to {pretty_name} requires your own access to its sources",
        "extra_gated_prompt": (
            "This dataset was rebuilt with histbench from sources whose terms do not allow "
            "redistribution: " + "; ".join(restricted) + ". Request access only if you hold your own "
            "licence to these sources and will use the data under their terms."
        ),
        "extra_gated_fields": {
            "Name": "text",
            "Affiliation": "text",
            "I hold my own licence to the sources named above and will use this data under their terms": "checkbox",
        },
        "extra_gated_button_content": "I hold a licence to the sources: request access",
    }


def licence_file(pretty_name: str, benchmark: str, version: str, inputs: list[dict]) -> str:
    """LICENSE.md: the terms of every input this build was made from."""
    lines = [
        f"# Terms of use: {pretty_name} {version}",
        "",
        f"This dataset was rebuilt by histbench (`histbench build {benchmark}`) from the files below. "
        "Each keeps its own terms; the rebuilt data may be used only within all of them. "
        "histbench's own code is MIT-licensed; that licence does not extend to this data.",
        "",
        "| input | file | terms | redistribution |",
        "| --- | --- | --- | --- |",
    ]
    for item in inputs:
        policy = item.get("redistribution", "unknown")
        terms = " ".join(str(item.get("licence") or "not recorded").split())
        lines.append(f"| {item['role']} | `{item['name']}` | {terms} | {policy}: {REDISTRIBUTION[policy]} |")
    return "\n".join(lines) + "\n"


def render_card(
    template: str,
    *,
    benchmark: str,
    version: str,
    infos: dict,
    data_files: dict[str, dict[str, str]],
    row_counts: dict[str, dict[str, int]],
    summary_markdown: str,
    inputs: list[dict] | None = None,
    default_config: str | None = None,
) -> str:
    """The card: the template's front matter plus the computed metadata (module doc).

    The body may use $benchmark, $version, $row_table and $summary (the builder's
    summary_markdown, kept between `<!-- summary -->` markers so the demo can show it).
    """
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    where = f"cards/{benchmark}.md"
    if not template.startswith("---\n"):
        raise BuildError("card template must start with YAML front matter ('---')", file=where)
    try:
        _, front, body = template.split("---\n", 2)
    except ValueError as exc:
        raise BuildError("card template front matter is not closed by '---'", file=where) from exc
    meta = yaml.safe_load(front) or {}
    inputs = inputs or []
    default_config = default_config if default_config in data_files else next(iter(data_files))
    meta["configs"] = [
        {"config_name": config, **({"default": True} if config == default_config else {}),
         "data_files": [{"split": split, "path": pattern} for split, pattern in splits.items()]}
        for config, splits in data_files.items()
    ]
    meta["size_categories"] = [size_category(max(sum(splits.values()) for splits in row_counts.values()))]
    if meta.get("license") == "other":
        meta.setdefault("license_name", f"{benchmark}-source-terms")
        meta["license_link"] = LICENCE_FILE
    if needs_gating(inputs):
        meta.update(gated_fields(meta.get("pretty_name", benchmark), inputs))
    card_data = DatasetCardData(**meta)
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    rows = ["| config | split | rows |", "| --- | --- | ---: |"]
    for config, splits in row_counts.items():
        for split, count in splits.items():
            rows.append(f"| {config}{' (default)' if config == default_config else ''} | {split} | {count:,} |")
    body = Template(body).safe_substitute(
        benchmark=benchmark, version=version, row_table="\n".join(rows),
        summary=f"<!-- summary -->\n{summary_markdown.strip()}\n<!-- /summary -->",
    )
    return f"---\n{card_data.to_yaml()}\n---\n{body}"


def check_card(text: str) -> list[str]:
    """What a published card lacks, read back with huggingface_hub's DatasetCard."""
    from huggingface_hub import DatasetCard

    card = DatasetCard(text)
    data = card.data.to_dict()
    problems = []
    for key in ("pretty_name", "license", "language", "task_categories", "size_categories", "configs"):
        if not data.get(key):
            problems.append(f"card metadata has no {key}")
    if data.get("license") == "other" and not (data.get("license_name") and data.get("license_link")):
        problems.append("license: other needs license_name and license_link")
    sizes = data.get("size_categories") or []
    known = {label for _, label in SIZE_CATEGORIES} | {"n>1B"}
    problems += [f"unknown size category {size!r}" for size in sizes if size not in known]
    defaults = [c["config_name"] for c in data.get("configs") or [] if c.get("default")]
    if len(defaults) != 1:
        problems.append(f"exactly one config must be marked default, found {len(defaults)}")
    headings = {h.strip().lower() for h in re.findall(r"^#{2,3} (.+)$", card.text, flags=re.MULTILINE)}
    problems += [f"card body has no section {name!r}" for name in REQUIRED_SECTIONS if name.lower() not in headings]
    if "```bibtex" not in card.text:
        problems.append("card body has no BibTeX citation")
    return problems
