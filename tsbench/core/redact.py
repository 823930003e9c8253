"""Redacting a user's tag values (privacy of imported data, wherever tsbench writes): with
--redact, every tag value of an imported dataset is replaced, in results, manifests, messages
and the report, by a stable keyed hash `tag~` + 12 hex digits. secrets.mask() applies the
redaction after its own masking, so every path that masks secrets redacts too.

The hash is BLAKE2b keyed with TSBENCH_REDACT_KEY (hex), else with a key kept in tsbench's
home (made once, readable by its owner only): the same value gives the same token in every
run on a machine, and nobody without the key can test a guess of a value against a token.

A value is replaced where it stands as a whole word (not inside a longer name). Values of one
or two characters and short numbers (fewer than MIN_DIGITS digits and nothing else) are left:
replacing every "3" or "x" would garble the figures and messages without hiding anything."""

from __future__ import annotations

import hashlib
import os
import re
from typing import Iterable

from tsbench.core import homedir
from tsbench.core.errors import UserError

PREFIX = "tag~"
MIN_DIGITS = 6
MIN_CHARS = 3
KEY_ENV = "TSBENCH_REDACT_KEY"
_WORD = re.compile(r"[\w\-]+")          # what a simple value is made of


def key() -> bytes:
    """The redaction key: from TSBENCH_REDACT_KEY, else the home's key file (made once)."""
    text = os.environ.get(KEY_ENV)
    if text:
        try:
            k = bytes.fromhex(text)
        except ValueError:
            raise UserError(f"{KEY_ENV}: expected hex digits (e.g. from: openssl rand -hex 32)") from None
        if not 16 <= len(k) <= 64:
            raise UserError(f"{KEY_ENV}: expected 16 to 64 bytes (32 to 128 hex digits), got {len(k)}")
        return k
    path = os.path.join(homedir.root(), "redact.key")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, "rb") as f:
            return f.read()
    with os.fdopen(fd, "wb") as f:
        k = os.urandom(32)
        f.write(k)
    return k


def token(value: str, k: bytes) -> str:
    """The stable hash standing for a value."""
    return PREFIX + hashlib.blake2b(value.encode(), key=k, digest_size=6).hexdigest()


def redactable(value: str) -> bool:
    """Whether a value is replaced: not a short number, not one or two characters."""
    return len(value) >= MIN_CHARS and not (value.isdigit() and len(value) < MIN_DIGITS)


class Redaction:
    """Replaces known values by their tokens in a text. Values made of word characters are
    looked up per word (any number of values); others (with spaces, commas, quotes) go into
    one alternation, longest first."""

    def __init__(self, values: Iterable[str], k: bytes):
        vals = {v for v in values if isinstance(v, str) and redactable(v)}
        self.words = {v: token(v, k) for v in vals if _WORD.fullmatch(v)}
        others = sorted((v for v in vals if v not in self.words), key=len, reverse=True)
        self.other_tokens = {v: token(v, k) for v in others}
        self.others = re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, others)) + r")(?![\w])") \
            if others else None

    def __len__(self) -> int:
        return len(self.words) + len(self.other_tokens)

    def text(self, s: str) -> str:
        if self.others is not None:
            s = self.others.sub(lambda m: self.other_tokens[m[0]], s)
        return _WORD.sub(lambda m: self.words.get(m[0], m[0]), s)
