"""`histbench push`: upload a built folder to the Hugging Face Hub as a dataset repo.

Uploads are private unless `public=True` (`--public`). The plan prints what every input's
terms say about redistribution (from `histbench.json`, which copies the source
manifests' `licence` and `redistribution`). When any input may not be redistributed (or
nobody knows), the card already carries gated-access fields (`card.gated_fields`); a
public upload then needs `confirm_redistribution=True` (`--confirm-redistribution-rights`)
and the repository is set to manual access approval. Before anything is uploaded, every
text file and every top-level text column is checked for local paths of the machine that built it,
and the card with `card.check_card`.

A repository that already exists keeps its own visibility, so before anything is uploaded
its visibility and gating are read from the Hub (`repo_info`), and the push is refused,
uploading nothing, when the build would become public without being asked for: an existing
public repo needs `--public`, and when a source forbids redistribution or does not say,
`--public --confirm-redistribution-rights` too (the repo is then set to manual approval,
as a new public one is). An existing private repo stays private (`--public` does not change
it). A repository that exists but that the token cannot read is refused too. After the
upload the repo is read again and the plan says what it really is. A dry run sends nothing
to the Hub, so it cannot say whether the repo exists; it says so.

Exactly the files histbench.json lists are uploaded, with the card, its licence file and
histbench.json itself: `validate` runs first (so an unlisted file, an absolute or escaping
manifest path, or a symbolic link leading out of the folder stops the push), and each data
file is hashed again from the very handle that is uploaded, so what reaches the Hub is what
the manifest records (a file changed in between is refused, naming it).

The token comes from the usual huggingface_hub places (HF_TOKEN, `hf auth login`). After
the upload the commit is tagged `v<version>` so users can load exactly that release with
`revision=`. A refusal or an unreachable Hub is one `PushError` line naming the repo.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from histbench.core.dataset import BUILD_FILES, MANIFEST_NAME, read_build_manifest
from histbench.core.errors import HistbenchError, UsageError, ValidationError
from histbench.core.paths import inside, local_paths, names_this_machine

from .card import GATED, REDISTRIBUTION, check_card, needs_gating
from .validate import validate_build

CONFIRM_OPTION = "--confirm-redistribution-rights"


class PushError(HistbenchError):
    """The Hub refused the push, could not be reached, or the target repo would publish a
    build that was not meant to be public."""


@dataclass(frozen=True)
class RepoState:
    """What the Hub says a dataset repo is."""

    private: bool
    gated: str | bool = False   # False, "auto" or "manual"

    @property
    def words(self) -> str:
        if self.private:
            return "private"
        return f"public, gated ({self.gated} approval of access requests)" if self.gated else "public, not gated"


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
    before: RepoState | None = None  # the repo as the Hub described it before the upload (None: new, or a dry run)
    after: RepoState | None = None   # the repo as the Hub describes it after the upload
    notes: list[str] = field(default_factory=list)

    @property
    def visibility(self) -> str:
        if self.after is not None:
            return self.after.words
        if self.private:
            return "private"
        return "public, gated (users request access; you approve each)" if self.gated else "public"

    def describe(self) -> str:
        size = f"{len(self.files)} files ({sum(s for _, s in self.files):,} bytes)"
        if self.url is None:
            lines = [f"would upload {size} to dataset repo {self.repo_id} ({self.visibility}) and tag {self.tag}:"]
        else:
            what = "an existing" if self.before is not None else "a new"
            lines = [f"uploaded {size} to dataset repo {self.repo_id}, {what} repo that is now {self.visibility}, "
                     f"and tagged {self.tag}:"]
        lines += [f"  {name}  {size:,} bytes" for name, size in self.files]
        lines += [f"note: {note}" for note in self.notes]
        if self.url is None:
            lines.append(f"note: a dry run does not ask the Hub; if {self.repo_id} exists, the push reads its visibility "
                         "and gating first, keeps them, and refuses a public repo this build is not meant for")
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
    manifest = read_build_manifest(folder)
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
    # exactly what the manifest lists, and the build's own files beside it (validate refused anything else)
    names = [o["path"] for o in manifest["outputs"]] + [n for n in BUILD_FILES[:3] if (folder / n).is_file()]
    files = sorted((name, inside(folder, name).stat().st_size) for name in names)
    problems = [f"README.md: {p}" for p in check_card((folder / "README.md").read_text(encoding="utf-8"))]
    problems += _local_paths_in_upload(folder, [name for name, _ in files])
    if problems:
        raise ValidationError(f"{folder} is not ready to publish: nothing was uploaded", details=problems[:20])
    return PushPlan(folder, repo_id, not public, gated, f"v{manifest['version']}", files, terms)


def _hub_errors(repo_id: str, doing: str):
    """A context manager turning the Hub's refusals and network failures into one PushError line."""
    from contextlib import contextmanager

    @contextmanager
    def wrapped():
        try:
            yield
        except HistbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - filtered below: only the Hub's and the network's errors
            if not _is_hub_error(exc):
                raise
            from histbench.core.secrets import redact

            status = getattr(getattr(exc, "response", None), "status_code", None)
            reason = redact(_hub_reason(exc)) or type(exc).__name__
            hint = {401: " (check your token: HF_TOKEN or `hf auth login`)",
                    403: " (your token may not write to this namespace)",
                    404: " (no such namespace, or the endpoint is wrong)"}.get(status, "")
            raise PushError(f"dataset repo {repo_id}: {doing} failed: {reason}{hint}") from exc

    return wrapped()


def _hub_reason(exc: BaseException) -> str:
    """What the Hub (or the network) said, on one line: huggingface_hub puts its own words
    ("Bad request:") on one line and the server's message on the next ones; both are kept."""
    lines = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()]
    server = " ".join(str(getattr(exc, "server_message", None) or "").split())
    if server and all(server not in line for line in lines):
        lines.append(server)
    if lines and lines[-1].endswith(":"):
        lines[-1] += " (the Hub gave no reason)"
    text = " ".join(lines)
    return text if len(text) <= 500 else text[:500] + "..."


def _upload_operations(plan: PushPlan, stack) -> list:
    """One CommitOperationAdd per file of the plan, each opened once (inside the folder,
    never through a link out of it) and, for a data file, hashed from that handle against
    the sha256 histbench.json records."""
    from hashlib import file_digest

    from huggingface_hub import CommitOperationAdd

    recorded = {o["path"]: o["sha256"] for o in read_build_manifest(plan.folder)["outputs"]}
    operations = []
    for name, _ in plan.files:
        handle = stack.enter_context(inside(plan.folder, name).open("rb"))
        if name in recorded:
            digest = file_digest(handle, "sha256").hexdigest()
            if digest != recorded[name]:
                raise PushError(f"sha256 {digest[:12]}... is not the {recorded[name][:12]}... recorded in {MANIFEST_NAME}: "
                                "the file changed since it was validated; nothing was uploaded", file=plan.folder / name)
            handle.seek(0)
        operations.append(CommitOperationAdd(path_in_repo=name, path_or_fileobj=handle))
    return operations


def _is_hub_error(exc: BaseException) -> bool:
    """The Hub answered with an error (HfHubHTTPError), could not be reached (httpx,
    requests or socket errors, offline mode) or rejected the card's metadata (ValueError
    from upload_folder's check)."""
    if isinstance(exc, OSError | ValueError):
        return True
    names = {cls.__module__.split(".")[0] for cls in type(exc).__mro__}
    return bool(names & {"httpx", "httpx2", "httpcore", "requests", "urllib3", "huggingface_hub"})


def repo_state(api, repo_id: str) -> RepoState | None:
    """The dataset repo as the Hub describes it, or None when it does not exist (or this
    token cannot see it: the Hub answers both the same)."""
    from huggingface_hub.utils import RepositoryNotFoundError

    with _hub_errors(repo_id, "reading the repository's settings"):
        try:
            info = api.repo_info(repo_id, repo_type="dataset")
        except RepositoryNotFoundError:
            return None
    return RepoState(private=bool(getattr(info, "private", False)), gated=getattr(info, "gated", False) or False)


def check_target(plan: PushPlan, state: RepoState | None, public: bool, confirm_redistribution: bool) -> None:
    """Refuse (PushError, nothing uploaded) an existing public repo that the build was not
    meant for; adjust the plan to an existing private repo. `state` None: a new repo."""
    if state is None:
        return
    plan.before = state
    if state.private:
        if public:
            plan.notes.append(f"{plan.repo_id} exists and is private: it stays private (histbench does not change "
                              "an existing repo's visibility; change it on the Hub once you are sure)")
        plan.private = True
        return
    restricted = sorted({f"{t.get('role')} ({t.get('redistribution', 'unknown')})" for t in plan.terms
                         if t.get("redistribution", "unknown") in GATED})
    if not public:
        raise PushError(
            f"dataset repo {plan.repo_id} already exists and is {state.words}: this push would publish the build, "
            f"and nothing was uploaded; pass --public to publish into it"
            + (f" ({CONFIRM_OPTION} too: the terms of {', '.join(restricted)} do not allow redistribution, "
               "or do not say)" if restricted else "")
            + ", or push to a new --repo-id (private by default)",
            details=terms_lines(plan.terms, plan.gated),
        )
    if restricted and not confirm_redistribution:   # plan_push refuses this already; kept for direct callers
        raise PushError(f"dataset repo {plan.repo_id} is {state.words} and the terms of {', '.join(restricted)} do not "
                        f"allow redistribution (or do not say): nothing was uploaded; a public push needs {CONFIRM_OPTION}")
    plan.private = False
    if restricted and not state.gated:
        plan.notes.append(f"{plan.repo_id} was public and not gated: it is set to manual approval of access requests")


def upload(plan: PushPlan, public: bool = False, confirm_redistribution: bool = False) -> str:
    """The network part: read the repo's state (refusing a public repo the build is not
    meant for), create it if new, gate it, upload the folder, tag the commit, read it again.
    The files are opened and their hashes checked first: a changed file uploads nothing."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        return _upload(plan, _upload_operations(plan, stack), public, confirm_redistribution)


def _upload(plan: PushPlan, operations: list, public: bool, confirm_redistribution: bool) -> str:
    from huggingface_hub import HfApi

    api = HfApi()
    state = repo_state(api, plan.repo_id)
    check_target(plan, state, public=public, confirm_redistribution=confirm_redistribution)
    if state is None:
        from huggingface_hub.utils import HfHubHTTPError

        with _hub_errors(plan.repo_id, "creating the repository"):
            try:
                api.create_repo(plan.repo_id, repo_type="dataset", private=plan.private, exist_ok=False)
            except HfHubHTTPError as exc:
                if getattr(exc.response, "status_code", None) != 409:
                    raise
                raise PushError(f"dataset repo {plan.repo_id} exists, but this token cannot read its settings: "
                                "nothing was uploaded (push with a token that can read it, or to another --repo-id)"
                                ) from None
    if plan.gated and not plan.private and not (state is not None and state.gated):
        with _hub_errors(plan.repo_id, "setting manual approval of access requests"):
            api.update_repo_settings(plan.repo_id, repo_type="dataset", gated="manual")
    with _hub_errors(plan.repo_id, "the upload"):
        commit = api.create_commit(
            repo_id=plan.repo_id, repo_type="dataset", operations=operations,
            commit_message=f"histbench build {plan.folder.name}",
        )
    with _hub_errors(plan.repo_id, f"tagging the uploaded commit {commit.oid} as {plan.tag}"):
        api.create_tag(plan.repo_id, tag=plan.tag, repo_type="dataset", revision=commit.oid, exist_ok=True)
    plan.after = repo_state(api, plan.repo_id)
    return commit.commit_url


def push_build(
    folder: str | Path, repo_id: str, public: bool = False, confirm_redistribution: bool = False,
    dry_run: bool = False,
) -> PushPlan:
    """The plan, carried out unless dry_run (then `plan.url` is the commit's address and
    `plan.after` what the Hub says the repo is)."""
    plan = plan_push(folder, repo_id, public, confirm_redistribution)
    if not dry_run:
        plan.url = upload(plan, public=public, confirm_redistribution=confirm_redistribution)
    return plan
