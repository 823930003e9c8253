"""A TSBS devops file imports as is, and the import's schema is known for devops's
(tsbench.data.usecase_detect): the checked-in sample of tsbs_generate_data's output, tsbench's
own devops data, and imports that are not devops."""

from __future__ import annotations

import copy
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tsbench.data import lpimport
from tsbench.data.usecase_detect import detect_use_case

OWN = Path(__file__).parent.parent / "data" / "own"
SAMPLE = OWN / "tsbs-devops.lp"
DEVOPS = ["cpu", "disk", "diskio", "kernel", "mem", "net", "nginx", "postgresl", "redis"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> dict:
    return lpimport.import_file(str(SAMPLE), str(tmp_path_factory.mktemp("tsbs") / "d"), "ns")


def test_the_sample_is_the_one_its_provenance_names():
    prov = (OWN / "tsbs-devops.lp.provenance").read_text()
    assert re.search(r"^sha256: +(\w+)$", prov, re.MULTILINE).group(1) == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert "--seed 123 --scale 2" in prov and re.search(r"^tsbs commit: +[0-9a-f]{40}", prov, re.MULTILINE)


def test_a_tsbs_devops_file_imports_as_is(sample):
    assert sample["errors"] == [] and sample["source"]["lines"] == 324
    assert sample["rows"] == dict.fromkeys(DEVOPS, 36)
    cpu = sample["schema"]["measurements"]["cpu"]
    assert {f["type"] for f in cpu["fields"].values()} == {"integer"}
    assert (cpu["series"], cpu["interval"]["median_ns"], cpu["out_of_order"]) == (2, 10 ** 10, 0)
    assert sample["schema"]["time"] == {"min_ns": 1451606400 * 10 ** 9, "max_ns": (1451606400 + 170) * 10 ** 9}


def test_the_sample_is_devops_with_integer_cpu_fields(sample):
    name, why = detect_use_case(sample["schema"]["measurements"])
    assert name == "devops" and "cpu fields integer (as TSBS writes them)" in why


def test_tsbench_devops_data_is_devops(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    lp = tmp_path / "d.lp"
    subprocess.run([sys.executable, "-m", "tsbench", "generate", "--end", "2016-01-01T00:00:30Z", "-o", str(lp)],
                   env=env, check=True, capture_output=True, timeout=120)
    m = lpimport.import_file(str(lp), str(tmp_path / "d"), "ns")
    assert detect_use_case(m["schema"]["measurements"]) == \
        ("devops", "devops: its nine measurements, tag keys and fields; cpu fields float (as tsbench writes them)")


def _changed(sample: dict, change) -> dict:
    meas = copy.deepcopy(sample["schema"]["measurements"])
    change(meas)
    return meas


@pytest.mark.parametrize("change,why", [
    (lambda m: m.pop("redis"), "not devops: measurements redis missing"),
    (lambda m: m.update(extra=m["cpu"]), "not devops: measurements not in devops: extra"),
    (lambda m: m["disk"]["tags"].pop("fstype"), "not devops: disk: tag keys"),
    (lambda m: m["net"]["fields"].pop("err_in"), "not devops: net: fields differ from devops's (err_in)"),
    (lambda m: m["mem"]["fields"]["free"].update(type="string"), "not devops: mem.free is string, not a number"),
])
def test_what_is_not_devops(sample, change, why):
    name, reason = detect_use_case(_changed(sample, change))
    assert name is None and reason.startswith(why)


def test_another_import_is_not_devops(tmp_path):
    src = tmp_path / "m.lp"
    src.write_text("weather,city=x temp=1.5 1000\n")
    m = lpimport.import_file(str(src), str(tmp_path / "d"), "ns")
    assert detect_use_case(m["schema"]["measurements"]) == \
        (None, "not devops: measurements cpu, disk, diskio, kernel, mem, net, nginx, postgresl, redis missing")
