"""--redact: a dataset's tag values replaced by stable keyed hashes wherever mask() runs."""

import os

import pytest

from tsbench.core import redact, secrets
from tsbench.core.errors import UserError

KEY = bytes(range(32))


def test_values_become_stable_tokens_as_whole_words_only():
    r = redact.Redaction(["web-17", "db 1, east", "hostA", "7", "1234567", "x"], KEY)
    text = 'query 3 on host=web-17 and "db 1, east": web-170 and hostAB kept; 7 of 9; id 1234567; 4 x 5'
    out = r.text(text)
    t = {v: redact.token(v, KEY) for v in ("web-17", "db 1, east", "1234567")}
    assert out == f'query 3 on host={t["web-17"]} and "{t["db 1, east"]}": web-170 and hostAB kept; 7 of 9; ' \
                  f'id {t["1234567"]}; 4 x 5'
    assert redact.Redaction(["web-17"], KEY).text("web-17") == t["web-17"]        # same key, same token
    assert redact.token("web-17", bytes(32)) != t["web-17"]                       # another key, another token
    assert t["web-17"].startswith("tag~") and len(t["web-17"]) == 16


def test_mask_redacts_within_the_block_only():
    r = redact.Redaction(["secret-host"], KEY)
    with secrets.redacting(r):
        assert secrets.mask_deep({"reason": "timeout on secret-host"}) == {"reason": f"timeout on {redact.token('secret-host', KEY)}"}
    assert secrets.mask("timeout on secret-host") == "timeout on secret-host"


def test_key_from_the_environment_or_made_once_in_home(tmp_path, monkeypatch):
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path))
    monkeypatch.delenv(redact.KEY_ENV, raising=False)
    k = redact.key()
    assert len(k) == 32 and redact.key() == k
    assert os.stat(tmp_path / "redact.key").st_mode & 0o777 == 0o600
    monkeypatch.setenv(redact.KEY_ENV, "00" * 32)
    assert redact.key() == bytes(32)
    monkeypatch.setenv(redact.KEY_ENV, "xyz")
    with pytest.raises(UserError, match="TSBENCH_REDACT_KEY: expected hex digits"):
        redact.key()
