"""Secrets are masked (secrets.py): URL passwords, options named like
password/token/secret and `<name>_env` options read from the environment, in
texts and in nested results; a session registers a target's secrets before it
connects (a whole run leaving no secret in its output: tests/e2e/test_secrets_run.py)."""

from __future__ import annotations

import asyncio

import pytest

from tsbench.core import secrets
from tsbench.core.errors import UserError
from tsbench.databases.postgres.target import PostgresTarget
from tsbench.experiments import session

URL_PW, ENV_PW = "S3cr3tXYZ", "EnvS3cretQQ7"


@pytest.fixture(autouse=True)
def registry(monkeypatch):
    """A fresh process-wide registry per test."""
    monkeypatch.setattr(secrets, "_known", set())


@pytest.mark.parametrize("text, masked", [
    ("cannot reach postgresql://bob:hunter22@db:5432/x: refused", "cannot reach postgresql://bob:***@db:5432/x: refused"),
    ("http://:tok3n@h:8086/ping and https://a:b%40c@h/", "http://:***@h:8086/ping and https://a:***@h/"),
    ("postgresql://bob:p@ss@h/db", "postgresql://bob:***@h/db"),
    ("postgresql://bob@h/db", "postgresql://bob@h/db"),
    ("host=h password=hunter22 dbname=x", "host=h password=*** dbname=x"),
    ('{"index": "brin", "password": "a b\\"c", "password_env": "PGPASSWORD"}',
     '{"index": "brin", "password": "***", "password_env": "PGPASSWORD"}'),
    ("{'api_key': 'k1', 'Token': 'k2', 'n': 1}", "{'api_key': '***', 'Token': '***', 'n': 1}"),
    ("username 'u' needs a password: export INFLUX_PASSWORD", "username 'u' needs a password: export INFLUX_PASSWORD"),
    ("", ""),
])
def test_mask_by_shape(text, masked):
    assert secrets.mask(text) == masked


def test_mask_registered_secrets_longest_first_short_ones_by_shape_only():
    secrets.register("hunter22")
    secrets.register("hunter2233")
    secrets.register("ok")            # shorter than MIN_LENGTH: would garble "ok" everywhere
    secrets.register(None)
    assert secrets.mask("FATAL: bad 'hunter2233' or hunter22; status ok") == "FATAL: bad '***' or ***; status ok"
    assert secrets.mask(None) is None


def test_register_url_and_options():
    secrets.register_url("postgresql://bob:pa%2Fss99@h/db")
    secrets.register_url("host=h password='quoted pw' dbname=x")
    secrets.register_url("postgresql://bob@h/db")
    secrets.register_options({"password": "optpw1", "password_env": "PGPASSWORD", "index": "brin",
                              "auth": {"API_KEY": 123456}, "database": "tsbench"})
    assert secrets._known == {"pa%2Fss99", "pa/ss99", "quoted pw", "optpw1", "123456"}
    assert secrets.mask("pa/ss99 quoted pw optpw1 123456 PGPASSWORD tsbench") == "*** *** *** *** PGPASSWORD tsbench"


def test_mask_deep():
    secrets.register("hunter22")
    obj = {"server": "postgresql://u:hunter22@h/db", "status": "ok", "n": 3, "none": None,
           "options": {"password": "anything", "token": 42, "secret": "", "password_env": "PGPASSWORD"},
           "reasons": ["said hunter22", ("x", "hunter22")]}
    assert secrets.mask_deep(obj) == {
        "server": "postgresql://u:***@h/db", "status": "ok", "n": 3, "none": None,
        "options": {"password": "***", "token": "***", "secret": "", "password_env": "PGPASSWORD"},
        "reasons": ["said ***", ("x", "***")]}


def test_resolve_env(monkeypatch):
    monkeypatch.setenv("TSB_PW", "from-env")
    opts = {"password_env": "TSB_PW", "index": "brin"}
    assert secrets.resolve_env(opts) == {"index": "brin", "password": "from-env"}
    assert opts == {"password_env": "TSB_PW", "index": "brin"}          # not changed in place
    assert secrets.resolve_env({}) == {} and secrets.resolve_env(None) == {}
    monkeypatch.delenv("TSB_PW")
    with pytest.raises(UserError) as e:
        secrets.resolve_env(opts, "target postgres")
    assert str(e.value) == "target postgres: option password_env: environment variable TSB_PW is not set"
    with pytest.raises(UserError, match="option password is given too"):
        secrets.resolve_env({"password": "x", "password_env": "HOME"})
    with pytest.raises(UserError, match="name of an environment variable"):
        secrets.resolve_env({"token_env": ""})


def test_postgres_password_option_is_used_to_connect():
    t = PostgresTarget("postgresql://bob:urlpw99@h:5/db", {"password": "optpw99"})
    assert t._params["password"] == "optpw99" and "optpw99" not in repr(t.options)
    assert PostgresTarget("postgresql://bob:urlpw99@h:5/db", {})._params["password"] == "urlpw99"


def test_open_target_resolves_and_registers_before_connecting(monkeypatch):
    monkeypatch.setenv("TSB_PW", ENV_PW)
    reach = session.Reach("postgres", f"postgresql://bob:{URL_PW}@127.0.0.1:1/db", {"password_env": "TSB_PW"})

    async def go():
        async with session.open_target(reach, announce=False):
            pass

    with pytest.raises(UserError) as e:
        asyncio.run(go())
    assert URL_PW not in str(e.value) and {URL_PW, ENV_PW} <= secrets._known
    assert secrets.mask(f"{URL_PW} {ENV_PW}") == "*** ***"
    monkeypatch.delenv("TSB_PW")
    with pytest.raises(UserError, match="^target postgres: option password_env: environment variable TSB_PW is"):
        asyncio.run(go())
