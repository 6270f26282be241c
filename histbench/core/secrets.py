"""Keeping credentials out of every file histbench writes.

Two rules, applied to whatever describes a model (spec strings, backend identities, run
folders, results, reports):

- by name: a header, query parameter or option whose name says it holds a credential
  (`Authorization`, `api-key`, `x-api-key`, `api_key`, `access_token`, `client_secret`,
  `password`, `Cookie`, ...: see `is_secret_name`) keeps its name, and its text value
  becomes `<redacted>`. A URL's query parameters follow a wider rule
  (`is_secret_query_name`): also `code` (Azure Functions keys), `sig` and `signature`
  (Azure SAS, AWS presigned URLs), `hmac`, `session`, ... And a URL's whole user part
  (`https://TOKEN@host`, `https://user:PASSWORD@host`) is always `<redacted>`, user name
  included: a token is often passed as the user name;
- by value: a backend registers every credential it reads (the API key from the
  environment variable the spec names, header values with secret names, the Hugging Face
  token, and from a URL its user name, password, secret query values and the
  `Authorization: Basic ...` header that httpx derives from `user:password@`) with
  `register_secret`; `scrub_text` replaces any occurrence of one of them in a text about
  to be written. `write_text_atomic` (atomic.py), the run store's records.jsonl, the
  dataset writer, the report writer and viewer, status lines (`progress.log`) and the
  command line's error lines pass everything they write through it.

- by looks: a value under a name that says nothing (`x-portkey-config: {"api_key":
  "sk-..."}`, `extra_body.user`) is searched for credentials: a JSON text in it is read and
  its secret-named values taken, `name: value` and `name=value` pairs with a secret name
  (`is_secret_name`), an Authorization scheme with its credential (`Bearer ...`), and the
  shapes providers give their keys (`key_like_values`: `sk-...`, `hf_...`, `ghp_...`,
  `xoxb-...`, `AKIA...`, `AIza...`, JSON web tokens). What is found is registered, so it is
  scrubbed from every file, log line and error like the key itself; `redact` also replaces
  such shapes in the texts it is given (identities, status lines, error lines), registered
  or not. Answers stored in run folders are scrubbed of registered values only: a model's
  text is not rewritten because it looks like a key.

Values shorter than MIN_SECRET_LENGTH characters are not registered: replacing a short
string everywhere would corrupt ordinary text (and a model's answers). A credential that
short is refused instead, before anything is sent (`short_credentials`; the api backend's
key and headers): it could not be kept out of what histbench writes.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

REDACTED = "<redacted>"
MIN_SECRET_LENGTH = 8

#: a name is secret when its last word is one of these ...
_SECRET_LAST_WORDS = frozenset({
    "authorization", "auth", "token", "secret", "password", "passwd", "pwd", "apikey", "key", "cookie",
    "credential", "credentials", "sig", "jwt", "bearer",
})
#: ... or when it is one of these (any spelling: case, dashes, underscores)
_SECRET_NAMES = frozenset({"apikey", "xapikey", "setcookie", "proxyauthorization"})
#: a URL query parameter is also secret when it is one of these (any spelling) ...
_SECRET_QUERY_NAMES = frozenset({"code", "sig", "session", "sessionid", "sid", "otp", "ticket", "hmac", "authcode"})
#: ... or when its last word is one of these (names too common elsewhere, e.g. a record's
#: code field, to be secret as option or field names; `country_code` in a query is not)
_SECRET_QUERY_LAST_WORDS = frozenset({"signature", "sig", "hmac"})

#: the shapes of providers' keys and tokens (not anchored: found inside longer texts)
_KEY_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk[-_][A-Za-z0-9_\-]{12,}"                 # OpenAI, Anthropic (sk-ant-), OpenRouter (sk-or-), Stripe (sk_live_)
    r"|hf_[A-Za-z0-9]{20,}"                      # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"            # Slack
    r"|AKIA[0-9A-Z]{16}"                         # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{30,}"                  # Google
    r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # JSON web token
    r")")
#: an Authorization scheme and its credential (with a digit: "bearer of bad news" is prose)
_SCHEME_RE = re.compile(r"(?i)(?<![A-Za-z0-9])(?:bearer|basic)\s+(?P<value>(?=[^\s]*[0-9])[A-Za-z0-9._~+/=\-]{8,})")
#: name: value / name=value / "name": "value" (the name decides: is_secret_name; values of at
#: least MIN_SECRET_LENGTH characters with a digit, or 16 characters: `add_bos_token=True` or
#: "field 'token': expected a string" in a status or error line is no secret)
_PAIR_RE = re.compile(r"""(?P<name>[A-Za-z][A-Za-z0-9_\-]*)["']?\s*[:=]\s*["']?(?P<value>(?=[^\s"',;&{}\[\]]*[0-9]|[^\s"',;&{}\[\]]{16})[^\s"',;&{}\[\]]{8,})""")

_lock = threading.Lock()
_values: set[str] = set()


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """Whether a header, query parameter or option of this name holds a credential.

    True for Authorization, Proxy-Authorization, api-key, X-Api-Key, api_key, apiKey, key,
    access_token, X-Auth-Token, client_secret, password, Cookie, sig, ...; False for
    max_tokens_field, token_budget, api_key_env (the variable's name, not its value).
    """
    words = _words(name)
    if not words:
        return False
    return "".join(words) in _SECRET_NAMES or words[-1] in _SECRET_LAST_WORDS


def is_secret_query_name(name: str) -> bool:
    """Whether a URL query parameter of this name holds a credential: `is_secret_name`
    (token, key, access_token, api-key, ...), or the name code, sig, session, session_id,
    sid, otp, ticket, hmac or authcode, or a last word signature, sig or hmac (`?code=` of
    Azure Functions, `?sig=` of Azure SAS, `X-Amz-Signature` of AWS presigned URLs).
    False for api-version, model, format, country_code, ..."""
    words = _words(name)
    if not words:
        return False
    return is_secret_name(name) or "".join(words) in _SECRET_QUERY_NAMES or words[-1] in _SECRET_QUERY_LAST_WORDS


def register_secret(value: Any) -> None:
    """Remember a credential this process read, so that no written text will hold it
    (an `Authorization` value also registers its credential alone: `Bearer KEY` -> KEY,
    `Basic B64` -> B64)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_LENGTH:
        value = value.strip()
        with _lock:
            _values.add(value)
            scheme, _, credential = value.partition(" ")
            if scheme.lower() in ("bearer", "basic", "token") and len(credential.strip()) >= MIN_SECRET_LENGTH:
                _values.add(credential.strip())


def key_like_values(text: str) -> list[str]:
    """The credentials a text holds by their looks, whatever name holds the text: values
    under secret names in a JSON text, secret-named `name: value` / `name=value` pairs, an
    Authorization scheme's credential, and providers' key shapes (see the module docstring)."""
    if not isinstance(text, str):
        return []
    found: list[str] = []
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, Mapping | list):
            found += _secret_strings_in(data)
    found += [m.group(0) for m in _KEY_RE.finditer(text)]
    found += [m["value"] for m in _SCHEME_RE.finditer(text)]
    found += [m["value"] for m in _PAIR_RE.finditer(text) if is_secret_name(m["name"]) and m["value"] != REDACTED]
    return list(dict.fromkeys(found))


def looks_like_key(text: str) -> bool:
    """Whether a text has a provider's key shape (`sk-...`, `hf_...`, ...: key_like_values)."""
    return isinstance(text, str) and bool(_KEY_RE.search(text))


def _secret_strings_in(value: Any) -> list[str]:
    """Strings held under secret names in a JSON-like value (any depth), and credentials
    found by looks in every other string."""
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if is_secret_name(str(key)):
                out += list(_strings(item))
            else:
                out += _secret_strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            out += _secret_strings_in(item)
    elif isinstance(value, str):
        out += key_like_values(value)
    return out


def short_credentials(value: Any, where: str = "") -> list[str]:
    """Where a JSON-like value (options, headers) holds a credential shorter than
    MIN_SECRET_LENGTH characters: a non-empty text under a secret name (also inside a JSON
    text). Such a credential cannot be scrubbed from what histbench writes without
    corrupting ordinary text, so it is refused (the places are named; values never)."""
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if is_secret_name(str(key)):
                out += [path for text in _strings(item) if text.strip() and len(text.strip()) < MIN_SECRET_LENGTH]
            else:
                out += short_credentials(item, path)
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            out += short_credentials(item, f"{where}[{n}]")
    elif isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            data = json.loads(value)
        except ValueError:
            return out
        out += short_credentials(data, where)
    return out


def short_url_credentials(url: str) -> list[str]:
    """Which credentials a URL carries that are shorter than MIN_SECRET_LENGTH characters:
    its password, its user part when it has no password (a token passed as the user name),
    and its secret query values (`is_secret_query_name`). A user name beside a password is
    a name, not a credential."""
    out: list[str] = []
    match = _AUTHORITY_RE.match(url)
    if match:
        user, colon, password = match["userinfo"].partition(":")
        if colon and 0 < len(unquote(password)) < MIN_SECRET_LENGTH:
            out.append("the URL's password")
        if not colon and 0 < len(unquote(user)) < MIN_SECRET_LENGTH:
            out.append("the URL's user part")
    try:
        query = urlsplit(url).query
    except ValueError:
        query = url.partition("?")[2]
    for key, item in parse_qsl(query, keep_blank_values=True):
        if is_secret_query_name(key) and 0 < len(item) < MIN_SECRET_LENGTH:
            out.append(f"the URL's query parameter {key!r}")
    return out


def forget_registered_secrets() -> None:
    """Forget every registered credential, as a new process would know none (tests use it to
    run `report` and `view` the way a later command does)."""
    with _lock:
        _values.clear()


def registered_secrets() -> frozenset[str]:
    with _lock:
        return frozenset(_values)


def scrub_text(text: str) -> str:
    """`text` with every registered credential (as written, or JSON-escaped) replaced by <redacted>."""
    secrets = registered_secrets()
    if not secrets or not isinstance(text, str):
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        for form in {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}:
            if form and form in text:
                text = text.replace(form, REDACTED)
    return text


_AUTHORITY_RE = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#]*)@")


def redact_url(url: str) -> str:
    """A URL with its whole user part (`TOKEN@`, `user:password@`) and the values of its
    secret query parameters (`is_secret_query_name`) replaced by <redacted>. A URL that
    does not parse still loses its user part."""
    url = _AUTHORITY_RE.sub(lambda m: f"{m['scheme']}{REDACTED}@", url, count=1)
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_query_name(k) for k, _ in pairs):
            query = urlencode([(k, REDACTED if is_secret_query_name(k) else v) for k, v in pairs],
                              safe="<>", quote_via=quote)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def redact(value: Any) -> Any:
    """A copy of a JSON-like value in which every text held under a secret name is <redacted>
    (recursively: option mappings, their `headers`, ...) and every URL has its credentials
    removed; registered credentials are scrubbed from every string."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if is_secret_name(str(key)) and isinstance(item, str) and item:
                out[key] = REDACTED
            elif is_secret_name(str(key)) and isinstance(item, Mapping | list | tuple):
                out[key] = _redact_all_strings(item)
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        if "://" in value:
            value = _redact_urls_in(value)
        return _redact_key_like(scrub_text(value))
    return value


def _redact_key_like(text: str) -> str:
    """`text` with every credential found by its looks (key_like_values) replaced by <redacted>."""
    text = _KEY_RE.sub(REDACTED, text)
    text = _SCHEME_RE.sub(lambda m: m.group(0)[: m.start("value") - m.start(0)] + REDACTED, text)
    return _PAIR_RE.sub(lambda m: m.group(0)[: m.start("value") - m.start(0)] + REDACTED
                        if is_secret_name(m["name"]) else m.group(0), text)


def _redact_all_strings(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _redact_all_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_all_strings(v) for v in value]
    return REDACTED if isinstance(value, str) and value else value


_URL_RE = re.compile(r"https?://[^\s#\"'<>]+")


def _redact_urls_in(text: str) -> str:
    return _URL_RE.sub(lambda m: redact_url(m.group(0)), text)


def register_secrets_in(value: Any) -> None:
    """Register every text held under a secret name in a JSON-like value (e.g. the headers
    and extra_body options), so that it is scrubbed wherever else it shows up."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if is_secret_name(str(key)):
                for text in _strings(item):
                    register_secret(text)
            else:
                register_secrets_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            register_secrets_in(item)
    elif isinstance(value, str):
        if "://" in value:
            for match in _URL_RE.finditer(value):
                register_url_secrets(match.group(0))
        for text in key_like_values(value):
            register_secret(text)


def register_url_secrets(url: str) -> None:
    """Register what a URL carries as credentials: its user name and password (as written
    and percent-decoded), the `Authorization: Basic ...` header httpx derives from them,
    and the values of its secret query parameters (`is_secret_query_name`)."""
    match = _AUTHORITY_RE.match(url)
    if match:
        userinfo = match["userinfo"]
        user, _, password = userinfo.partition(":")
        for text in {userinfo, user, password, unquote(user), unquote(password)}:
            register_secret(text)
        derived = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
        register_secret(f"Basic {derived}")
    try:
        query = urlsplit(url).query
    except ValueError:
        query = url.partition("?")[2]
    for key, item in parse_qsl(query, keep_blank_values=True):
        if is_secret_query_name(key):
            register_secret(item)
            register_secret(quote(item, safe=""))


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


#: loggers of the HTTP libraries that log request URLs (httpx at INFO: "HTTP Request: POST URL")
HTTP_LOGGERS = ("httpx", "httpcore", "urllib3.connectionpool")


class RedactingFilter:
    """A `logging` filter that passes a record's text through `redact` (a URL's user part,
    secret query values, registered credentials), so that a program that shows library
    logs (`logging.basicConfig(level=logging.INFO)`) shows no credential."""

    def filter(self, record) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is left to logging's own handling
            return True
        cleaned = redact(text)
        if cleaned != text:
            record.msg, record.args = cleaned, ()
        return True


_FILTER = RedactingFilter()


def redact_http_logs() -> None:
    """Add the redacting filter to the HTTP libraries' loggers (once; idempotent)."""
    import logging

    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
