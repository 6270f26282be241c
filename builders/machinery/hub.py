"""`histbench push`: upload a built folder to the Hugging Face Hub as a dataset repo.

Uploads are private unless `public=True` (`--public`). The plan prints what every input's
terms say about redistribution (from `histbench.json`, which copies the source
manifests' `licence` and `redistribution`). When any input may not be redistributed (or
nobody knows), the card already carries gated-access fields (`card.gated_fields`); a
public upload then needs `confirm_redistribution=True` (`--confirm-redistribution-rights`)
and the repository is set to manual access approval. Before anything is uploaded, every
text file and every top-level text column is checked for local paths of the machine that built it,
and the card with `card.check_card`.

The token comes from the usual huggingface_hub places (HF_TOKEN, `hf auth login`). After
the upload the commit is tagged `v<version>` so users can load exactly that release with
`revision=`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.dataset import MANIFEST_NAME
from histbench.core.errors import UsageError, ValidationError
from histbench.core.paths import local_paths, names_this_machine

from .card import GATED, REDISTRIBUTION, check_card, needs_gating
from .validate import validate_build

CONFIRM_OPTION = "--confirm-redistribution-rights"


@dataclass
class PushPlan:
    folder: Path
    repo_id: str
    private: bool
    gated: bool
    tag: str
    files: list[tuple[str, int]]
    terms: list[dict] = field(default_factory=list)
    url: str | None = None  # the commit's address, once uploaded

    @property
    def visibility(self) -> str:
        if self.private:
            return "private"
        return "public, gated (users request access; you approve each)" if self.gated else "public"

    def describe(self) -> str:
        lines = [
            f"would upload {len(self.files)} files ({sum(s for _, s in self.files):,} bytes) "
            f"to dataset repo {self.repo_id} ({self.visibility}) and tag {self.tag}:"
        ]
        lines += [f"  {name}  {size:,} bytes" for name, size in self.files]
        lines += ["", *terms_lines(self.terms, self.gated)]
        return "\n".join(lines)


def terms_lines(terms: list[dict], gated: bool) -> list[str]:
    """What the inputs' terms say about redistribution, one line each."""
    lines = ["what the sources' terms say about redistribution:"]
    for item in terms:
        policy = item.get("redistribution", "unknown")
        licence = " ".join(str(item.get("licence") or "terms not recorded").split())
        lines.append(f"  {item.get('role')} ({item.get('name')}): {licence} -> {policy}: {REDISTRIBUTION.get(policy, policy)}")
    if not terms:
        lines.append("  (no inputs recorded)")
    if gated:
        lines.append(f"the card carries gated-access fields; a public upload needs {CONFIRM_OPTION}")
    return lines


def _local_paths_in_upload(folder: Path, files: list[str]) -> list[str]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    found = []
    for name in files:
        path = folder / name
        if name.endswith(".parquet"):
            table = pq.read_table(path)
            for column_name, column in zip(table.column_names, table.columns, strict=True):
                if pa.types.is_string(column.type):
                    flagged = pc.or_(pc.starts_with(column, "/"), pc.starts_with(column, "~"))
                    values = pc.unique(column.filter(pc.fill_null(flagged, False))).to_pylist()
                    found += [f"{name}, column {column_name!r}: {v}" for v in values if names_this_machine(v)]
        elif name.endswith(".json"):
            found += [f"{name} {where}: {value}" for where, value in local_paths(json.loads(path.read_text(encoding="utf-8")))]
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{name}: {word}" for word in set(text.split()) if names_this_machine(word.strip("`'\"()[],;"))]
    return found


def plan_push(folder: str | Path, repo_id: str, public: bool = False, confirm_redistribution: bool = False) -> PushPlan:
    folder = Path(folder)
    if repo_id.count("/") != 1:
        raise UsageError(f"--repo-id must look like ORG/NAME, got {repo_id!r}")
    validate_build(folder)
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    terms = list(manifest.get("inputs") or [])
    gated = needs_gating(terms)
    if public and gated and not confirm_redistribution:
        restricted = sorted({f"{t.get('role')} ({t.get('redistribution', 'unknown')})" for t in terms
                             if t.get("redistribution", "unknown") in GATED})
        raise UsageError(
            f"the terms of {', '.join(restricted)} do not allow redistribution (or do not say): a public "
            f"upload needs {CONFIRM_OPTION} (you confirm you may publish this build; it will be gated)",
            details=terms_lines(terms, gated),
        )
    files = sorted(
        (p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*") if p.is_file()
    )
    problems = [f"README.md: {p}" for p in check_card((folder / "README.md").read_text(encoding="utf-8"))]
    problems += _local_paths_in_upload(folder, [name for name, _ in files])
    if problems:
        raise ValidationError(f"{folder} is not ready to publish: nothing was uploaded", details=problems[:20])
    return PushPlan(folder, repo_id, not public, gated, f"v{manifest['version']}", files, terms)


def upload(plan: PushPlan) -> str:
    """The network part, kept thin: create the repo, gate it, upload the folder, tag the commit."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(plan.repo_id, repo_type="dataset", private=plan.private, exist_ok=True)
    if plan.gated and not plan.private:
        api.update_repo_settings(plan.repo_id, repo_type="dataset", gated="manual")
    commit = api.upload_folder(
        folder_path=str(plan.folder), repo_id=plan.repo_id, repo_type="dataset",
        commit_message=f"histbench build {plan.folder.name}",
    )
    api.create_tag(plan.repo_id, tag=plan.tag, repo_type="dataset", revision=commit.oid, exist_ok=True)
    return commit.commit_url


def push_build(
    folder: str | Path, repo_id: str, public: bool = False, confirm_redistribution: bool = False,
    dry_run: bool = False,
) -> PushPlan:
    """The plan, carried out unless dry_run (then `plan.url` is the commit's address)."""
    plan = plan_push(folder, repo_id, public, confirm_redistribution)
    if not dry_run:
        plan.url = upload(plan)
    return plan
