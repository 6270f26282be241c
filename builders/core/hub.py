"""`histbench push`: upload a built folder to the Hugging Face Hub as a dataset repo.

The token comes from the usual huggingface_hub places (HF_TOKEN, `huggingface-cli
login`). After the upload the commit is tagged `v<version>` so users can load exactly
that release with `revision=`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .validate import validate_build
from .writer import MANIFEST_NAME


@dataclass
class PushPlan:
    folder: Path
    repo_id: str
    private: bool
    tag: str
    files: list[tuple[str, int]]

    def describe(self) -> str:
        lines = [
            f"would upload {len(self.files)} files ({sum(s for _, s in self.files):,} bytes) "
            f"to dataset repo {self.repo_id} ({'private' if self.private else 'public'}) and tag {self.tag}:"
        ]
        lines += [f"  {name}  {size:,} bytes" for name, size in self.files]
        return "\n".join(lines)


def plan_push(folder: str | Path, repo_id: str, private: bool = False) -> PushPlan:
    folder = Path(folder)
    if repo_id.count("/") != 1:
        raise UsageError(f"--repo-id must look like ORG/NAME, got {repo_id!r}")
    validate_build(folder)
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    files = sorted(
        (p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*") if p.is_file()
    )
    return PushPlan(folder, repo_id, private, f"v{manifest['version']}", files)


def upload(plan: PushPlan) -> str:
    """The network part, kept thin: create the repo, upload the folder, tag the commit."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(plan.repo_id, repo_type="dataset", private=plan.private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(plan.folder), repo_id=plan.repo_id, repo_type="dataset",
        commit_message=f"histbench build {plan.folder.name}",
    )
    api.create_tag(plan.repo_id, tag=plan.tag, repo_type="dataset", revision=commit.oid, exist_ok=True)
    return commit.commit_url


def push_build(folder: str | Path, repo_id: str, private: bool = False, dry_run: bool = False) -> PushPlan | str:
    plan = plan_push(folder, repo_id, private)
    return plan if dry_run else upload(plan)
