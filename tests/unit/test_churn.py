"""Series churn (issue 40 item 4): `--churn FRACTION/INTERVAL` renews that share of the
entities every interval of data time in the C simulator; the same seed makes the same
bytes (golden sha256); each batch's series_created is exactly the distinct series it
writes first (checked against the text itself), and the run's total is the epoch's series
plus each replaced entity's; bad values and datasets it cannot apply to are one line."""

from __future__ import annotations

import hashlib
import pathlib
import re

import pytest
from pydantic import ValidationError

from tsbench.core.errors import UserError
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.stream.churn import churn_of, parse_churn
from tsbench.stream.options import StreamSettings
from tsbench.stream.source import BatchSource
from tsbench.stream.stats import Stats

ROOT = pathlib.Path(__file__).resolve().parents[2]

DEVOPS = DatasetSpec(use_case="devops", scale=10, seed=1)
EPOCHS = 20                                   # 10 s apart: 200 s of data time


def _batches(spec=DEVOPS, churn="0.2/20s", lo=0, hi=None, rows=100, fmt="influx"):
    ds = resolve(spec)
    src = BatchSource(ds, fmt, lo, ds.entities if hi is None else hi, EPOCHS, rows, churn and parse_churn(churn))
    out = []
    while (b := src.next()) is not None:
        out.append((bytes(b.data), b.rows, src.created))
    return out


def _series_key(line: bytes) -> bytes:
    return line.split(b" ", 1)[0]              # measurement and tag set


def test_the_same_seed_makes_the_same_bytes_golden():
    text = b"".join(b for b, _, _ in _batches())
    assert text == b"".join(b for b, _, _ in _batches())
    assert hashlib.sha256(text).hexdigest() == GOLDEN_SHA
    other = resolve(DatasetSpec(use_case="devops", scale=10, seed=2))
    src = BatchSource(other, "influx", 0, 10, EPOCHS, 10**6, parse_churn("0.2/20s"))
    assert bytes(src.next().data) != text                    # another seed, another cycle start


def test_every_interval_that_share_of_the_hosts_gets_a_new_generation():
    lines = b"".join(b for b, _, _ in _batches()).splitlines()
    hosts_by_epoch: dict[int, set] = {}
    for line in lines:
        t = int(line.rsplit(b" ", 1)[1])
        hosts_by_epoch.setdefault(t, set()).add(re.search(rb"hostname=([^,]+)", line).group(1).decode())
    epochs = [hosts_by_epoch[t] for t in sorted(hosts_by_epoch)]
    assert len(epochs) == EPOCHS and all(len(h) == 10 for h in epochs)
    assert epochs[0] == {f"host_{i}" for i in range(10)}
    for t in range(1, EPOCHS):
        renewed = epochs[t] - epochs[t - 1]
        assert len(renewed) == (2 if t % 2 == 0 else 0), (t, renewed)     # 2 of 10 hosts every 20 s
    assert sorted(epochs[-1]) == GOLDEN_LAST_HOSTS


def test_series_created_is_exactly_the_series_each_batch_writes_first():
    seen: set = set()
    total = 0
    for text, _, created in _batches(rows=37):
        first = {_series_key(x) for x in text.splitlines()} - seen
        assert created == len(first)
        seen |= first
        total += created
    # 90 series in epoch 0, then 2 hosts x 9 series at epochs 2, 4, ... 18
    assert total == len(seen) == 90 + 9 * 2 * 9 == 252


def test_a_writers_share_counts_its_own_new_series_and_csv_renews_the_same_tag():
    whole = sum(c for _, _, c in _batches(rows=1000))
    shares = sum(c for lo, hi in ((0, 3), (3, 10)) for _, _, c in _batches(lo=lo, hi=hi, rows=1000))
    assert whole == shares == 252
    csv = b"".join(b for b, _, _ in _batches(fmt="csv", rows=10**6))
    assert csv.count(b"_g1") == b"".join(b for b, _, _ in _batches(rows=10**6)).count(b"_g1") > 0


def test_without_churn_series_created_is_the_first_epoch_and_the_bytes_are_the_same():
    plain = _batches(churn=None, rows=1000)
    assert sum(c for _, _, c in plain) == 90
    ds = resolve(DEVOPS)
    src = BatchSource(ds, "influx", 0, 10, EPOCHS, 10**6)
    assert bytes(src.next().data) == b"".join(b for b, _, _ in plain)


def test_a_whole_share_renewed_every_interval_and_a_fraction_rounded_to_at_least_one():
    spec = DatasetSpec(use_case="synthetic", seed=3, params={"tags": "10,10", "fields": "1"})   # 100 series
    assert sum(c for _, _, c in _batches(spec, "1/10s", rows=10**6)) == 100 * EPOCHS
    assert sum(c for _, _, c in _batches(spec, "0.001/10s", rows=10**6)) == 100 + (EPOCHS - 1)
    assert parse_churn("0.001/10s").per_period(100) == 1 and parse_churn("0.1/1m").per_period(1000) == 100


def test_stats_count_the_new_series_per_second_and_in_all():
    st = Stats(1, [90])
    st.answered(0, 0.01, 100, 1100, 5000, created=90)
    st.answered(0, 0.01, 100, 1100, 5000, created=18)
    row = st.roll(0)[0]
    assert (row["series_created"], row["series"]) == (108, 108)
    st.answered(0, 0.01, 100, 1100, 5000)
    assert [(r["series_created"], r["series"]) for r in st.roll(1)] == [(0, 108)]


@pytest.mark.parametrize("text, words", [
    ("0/60s", "a fraction in (0, 1]"), ("1.5/60s", "a fraction in (0, 1]"), ("x/60s", "got 'x/60s'"),
    ("0.1", "FRACTION/INTERVAL"), ("0.1/0s", "must be positive"), ("0.1/-5s", "must be positive"),
    ("0.1/soon", "cannot parse duration")])
def test_bad_values_are_one_line(text, words):
    with pytest.raises(UserError) as exc:
        parse_churn(text)
    assert words in str(exc.value) and "\n" not in str(exc.value) and str(exc.value).startswith("--churn")
    with pytest.raises(ValidationError, match=re.escape(words)):
        StreamSettings(churn=text)


def test_datasets_it_cannot_apply_to_are_refused(tmp_path):
    with pytest.raises(UserError, match="missing or late points"):
        churn_of(resolve(DatasetSpec(use_case="iot", scale=10)), "0.1/60s")
    schema = ROOT / "experiments" / "schemas" / "replication_lag.yaml"          # its one tag taken out
    no_tags = tmp_path / "no-tags.yaml"
    no_tags.write_text(schema.read_text().replace("tags:\n  host: mytesthost\n", ""))
    with pytest.raises(UserError, match="the schema 'replication-lag' has no entity tag"):
        churn_of(resolve(DatasetSpec(use_case="custom", schema_file=str(no_tags))), "0.1/60s")
    assert churn_of(resolve(DEVOPS), None) is None
    assert StreamSettings(churn="0.1/60s").churn_rule() == parse_churn("0.1/1m")


GOLDEN_SHA = "0fc1fa0e05e177cde1e9eb2aab7c23538b384707e6beb05a1e9e6a6b427a1ba1"
# the seed's cycle starts at host_8: by epoch 19 (9 periods, 18 renewals) hosts 8, 9, 0 .. 5
# were renewed twice, 6 and 7 once
GOLDEN_LAST_HOSTS = [f"host_{i}_g2" for i in range(6)] + ["host_6_g1", "host_7_g1", "host_8_g2", "host_9_g2"]
