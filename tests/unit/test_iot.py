"""iot: imperfect delivery at the configured rates, deterministically."""

import pathlib
import re

import numpy as np
import pytest

import tsbench
from tsbench.core.errors import UserError
from tsbench.data.schema import FAULT_SETTINGS, fault_defaults
from tsbench.data.usecases.iot import Iot, IotParams

from conftest import columns, dataset

EPOCHS = 2000
TRUCKS = 20


def _ds(**params):
    import datetime as dt

    end = (dt.datetime(2016, 1, 1) + dt.timedelta(seconds=10 * EPOCHS)).isoformat() + "Z"
    return dataset(use_case="iot", scale=TRUCKS, end=end, seed=42, params=params)


def test_rates_match_the_configuration():
    ds = _ds()
    assert ds.epochs == EPOCHS
    cols, _ = columns(ds)
    entries = EPOCHS * TRUCKS * 2
    rows = len(cols["time"])
    assert rows == pytest.approx(entries * 0.99 * 0.90, rel=0.02)
    late = (cols["delay"] > 0).mean()
    assert late == pytest.approx(0.05 + 0.95 * 0.30, abs=0.015)
    width = cols["values"].shape[1]
    nulls = np.isnan(cols["values"]).sum(axis=1)
    # readings has 10 visible fields, diagnostics 6: padding NaNs are not nulls
    visible = np.where(cols["series"] == 0, 10, 6)
    null_field = (nulls - (width - visible)) == 1
    assert null_field.mean() == pytest.approx(0.10, abs=0.01)
    assert (cols["null_tag"] >= 0).mean() == pytest.approx(0.01, abs=0.003)
    assert (cols["null_tag"] != 0).all()                       # the truck's name is never null
    assert set(np.unique(cols["delay"])) <= set(range(0, 11))


def test_late_records_arrive_when_due():
    ds = _ds()
    cols, _ = columns(ds)
    epoch = (cols["time"] - ds.start_ns) // ds.interval_ns
    emitted = epoch + cols["delay"]
    assert (np.diff(emitted) >= 0).all()                       # the stream is in emission order
    # every (truck, measurement, epoch) appears at most once
    key = (cols["entity"] * 2 + cols["series"]) * (EPOCHS + 1) + epoch
    assert len(np.unique(key)) == len(key)


def test_perfect_delivery_when_probabilities_are_zero():
    ds = _ds(group_drop=0, group_late=0, missing=0, late=0, null_field=0, null_tag=0)
    cols, _ = columns(ds)
    assert len(cols["time"]) == EPOCHS * TRUCKS * 2
    assert (cols["delay"] == 0).all() and (cols["null_tag"] < 0).all()


def test_only_missing():
    ds = _ds(group_drop=0, group_late=0, missing=0.25, late=0, null_field=0, null_tag=0)
    cols, _ = columns(ds)
    assert len(cols["time"]) == pytest.approx(EPOCHS * TRUCKS * 2 * 0.75, rel=0.02)


def test_deterministic_and_split_invariant():
    ds = _ds()
    a, _ = columns(ds)
    b, _ = columns(ds)
    assert all((a[k] == b[k]).all() or np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    lo, _ = columns(ds, 0, 7)
    hi, _ = columns(ds, 7, TRUCKS)
    assert len(lo["time"]) + len(hi["time"]) == len(a["time"])
    whole = set(zip(a["entity"].tolist(), a["series"].tolist(), a["time"].tolist(), a["delay"].tolist()))
    parts = set(zip(lo["entity"].tolist(), lo["series"].tolist(), lo["time"].tolist(), lo["delay"].tolist())) | \
        set(zip(hi["entity"].tolist(), hi["series"].tolist(), hi["time"].tolist(), hi["delay"].tolist()))
    assert whole == parts


def test_model_constants_follow_the_model_tag():
    from tsbench.data.usecases.iot import MODELS

    ds = _ds()
    cols, sim = columns(ds)
    for e in range(TRUCKS):
        model = sim.tag_values(e, 0)[3]
        row = cols["values"][(cols["entity"] == e) & (cols["series"] == 0)]
        lc = row[:, 7]
        lc = lc[~np.isnan(lc)]
        assert (lc == MODELS[model][0]).all()


def test_fields_stay_in_range():
    ds = _ds(null_field=0)
    cols, _ = columns(ds)
    r = cols["values"][cols["series"] == 0]
    assert (np.abs(r[:, 0]) <= 90).all() and (np.abs(r[:, 1]) <= 180).all()
    assert (r[:, 2] == np.trunc(r[:, 2])).all() and (r[:, 3] >= 0).all() and (r[:, 3] <= 100).all()
    d = cols["values"][cols["series"] == 1]
    assert (d[:, 0] >= 0).all() and (d[:, 0] <= 1).all()
    assert set(np.unique(d[:, 2])) <= {0, 1, 2, 3, 4, 5}


def test_parameters_are_the_fault_settings_with_tsbs_defaults():
    assert list(IotParams.model_fields) == [s.name for s in FAULT_SETTINGS]
    assert IotParams().model_dump() == fault_defaults("iot") == {
        "group_size": 10, "group_drop": 0.01, "group_late": 0.05, "missing": 0.1, "late": 0.3,
        "null_field": 0.1, "null_tag": 0.01, "max_delay": 10}
    faults = Iot({"missing": "0.2", "max_delay": "3"}).schema().faults
    assert (faults.missing, faults.max_delay, faults.late) == (0.2, 3, 0.3)


def test_docs_list_the_declared_defaults():
    guide = " ".join((pathlib.Path(tsbench.__file__).parent.parent / "docs" / "guide" / "generate.md").read_text().split())
    listed = re.search(r"Parameters and defaults: `([^`]*)`", guide).group(1)
    assert {k: float(v) for k, v in (kv.split("=") for kv in listed.split())} == fault_defaults("iot")


@pytest.mark.parametrize("param,message", [
    ({"missing": "2"}, "--param missing: Input should be less than or equal to 1"),
    ({"late": "-1"}, "--param late: Input should be greater than or equal to 0"),
    ({"group_size": "0"}, "--param group_size: Input should be greater than or equal to 1"),
    ({"max_delay": "1.5"}, "--param max_delay: Input should be a valid integer"),
    ({"mising": "0.1"}, "--param mising: use case iot has no such parameter"),
])
def test_bad_parameter_is_one_line(param, message):
    with pytest.raises(UserError) as exc:
        Iot(param)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)
