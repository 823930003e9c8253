"""Secrets in what tsbench writes or prints (every phase): credentials in URLs and
options named like password/token/secret are replaced by *** in results, reports
and messages. Secrets are registered as they are met (a target's URL and options,
session.open_target) and mask() removes every registered one from a text, the
server's words included; URL passwords and `password=...` / `"token": "..."`
pairs are masked by their shape, registered or not. With --redact, mask() also replaces
an imported dataset's tag values by stable hashes (redacting()). An option `<name>_env: VAR`
gives option <name> the value of the environment variable VAR (resolve_env).

Registered secrets shorter than MIN_LENGTH are masked by shape only: replacing
every "ab" in every text would garble results without hiding anything."""

from __future__ import annotations

import contextlib
import os
import re
from urllib.parse import unquote, urlsplit

from tsbench.core.errors import UserError

MASK = "***"
MIN_LENGTH = 4
_SECRET_WORDS = r"password|passwd|token|secret|api_?key"
SECRET_KEY = re.compile(_SECRET_WORDS, re.I)
# scheme://user:PASSWORD@ (the password runs to the authority's last @)
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/:@\s]*):(?P<pw>[^\s/?#'\"<>]+)@")
# password=VALUE, "token": "VALUE", 'secret'='VALUE' (keys ending in _env are names, kept); an
# unquoted value only after "=": "needs a password: export X" is prose
_KEY_VALUE = re.compile(r"(?P<key>[\w.-]*(?:" + _SECRET_WORDS + r")[\w.-]*)(?P<sep>[\"']?\s*[:=]\s*)"
                        r"(?P<val>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|"
                        r"(?P<key2>[\w.-]*(?:" + _SECRET_WORDS + r")[\w.-]*)(?P<sep2>\s*=\s*)[^\s,;&'\"}\])]+", re.I)

_known: set[str] = set()
_redactions: list = []        # core/redact.Redaction objects in force (--redact)


def register(secret: str | None) -> None:
    """Remember a secret so mask() hides it wherever it appears."""
    if secret and len(secret) >= MIN_LENGTH:
        _known.add(secret)


def is_secret_key(key) -> bool:
    """Whether an option named key holds a secret (password, token, secret, api_key; not *_env)."""
    return isinstance(key, str) and bool(SECRET_KEY.search(key)) and not key.lower().endswith("_env")


def _plain(value) -> str | None:
    """A secret option's value as text (pydantic's SecretStr unwrapped)."""
    if value is None or isinstance(value, (dict, list, tuple)):
        return None
    get = getattr(value, "get_secret_value", None)
    return str(get() if get else value)


def register_url(url: str | None) -> None:
    """Register the password of a URL (as written and percent-decoded) or of a
    key=value conninfo string."""
    if not url:
        return
    for m in _URL_USERINFO.finditer(url):
        register(m["pw"])
        register(unquote(m["pw"]))
    try:
        pw = urlsplit(url).password if "://" in url else None
    except ValueError:
        pw = None
    register(pw)
    register(unquote(pw) if pw else None)
    for m in re.finditer(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", url):
        register(m[1].strip("'"))


def register_options(options: dict | None) -> None:
    """Register the values of options named like a secret (nested dicts included)."""
    for k, v in (options or {}).items():
        if isinstance(v, dict):
            register_options(v)
        elif is_secret_key(k):
            register(_plain(v))


def resolve_env(options: dict | None, owner: str = "") -> dict:
    """options with every `<name>_env: VAR` replaced by `<name>: $VAR`; a
    UserError if VAR is unset or <name> is given too. owner prefixes messages."""
    out = dict(options or {})
    where = f"{owner}: " if owner else ""
    for key in [k for k in out if isinstance(k, str) and k.endswith("_env") and len(k) > 4]:
        name, var = key[:-4], out.pop(key)
        if not isinstance(var, str) or not var:
            raise UserError(f"{where}option {key}: give the name of an environment variable, got {var!r}")
        if name in out:
            raise UserError(f"{where}option {key}: option {name} is given too; give one of them")
        if var not in os.environ:
            raise UserError(f"{where}option {key}: environment variable {var} is not set")
        out[name] = os.environ[var]
    return out


def register_target(server: str | None, options: dict | None, server_options: dict | None = None) -> None:
    """Register a target's secrets: its URL's password and its secret-named options."""
    register_url(server)
    register_options(options)
    register_options(server_options)


def _mask_pair(m: re.Match) -> str:
    key, sep = (m["key"], m["sep"]) if m["key"] else (m["key2"], m["sep2"])
    if key.lower().endswith("_env"):
        return m[0]
    q = m["val"][0] if m["val"] else ""
    return f"{key}{sep}{q}{MASK}{q}"


def mask(text: str) -> str:
    """text with every registered secret, URL password and secret pair's value replaced by ***."""
    if not text or not isinstance(text, str):
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    text = _KEY_VALUE.sub(_mask_pair, text)
    for s in sorted(_known, key=len, reverse=True):
        text = text.replace(s, MASK)
    for r in _redactions:
        text = r.text(text)
    return text


@contextlib.contextmanager
def redacting(redaction):
    """Within the block mask() also replaces a dataset's tag values by their tokens (core/redact.py)."""
    _redactions.append(redaction)
    try:
        yield
    finally:
        _redactions.remove(redaction)


def mask_deep(obj):
    """obj with every string masked, walking dicts, lists and tuples; the value of a
    secret-named key becomes *** whatever it is (keys are kept)."""
    if isinstance(obj, str):
        return mask(obj)
    if isinstance(obj, dict):
        return {k: MASK if is_secret_key(k) and _plain(v) else mask_deep(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(mask_deep(v) for v in obj)
    return obj
