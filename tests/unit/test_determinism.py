"""Same seed, same bytes: across runs, process counts, and group splits."""

import json
from collections import Counter

import pytest
from click.testing import CliRunner

from tsbench.commands.cli import cli

from conftest import generate_bytes, lift_process_plan

CASES = {
    "devops": ["--use-case", "devops", "--scale", "7", "--end", "2016-01-01T02:00:00Z"],
    "iot": ["--use-case", "iot", "--scale", "9", "--end", "2016-01-01T03:00:00Z"],
    "synthetic": ["--use-case", "synthetic", "-P", "tags=3,2,2", "-P", "points=50", "-P", "fields=2"],
    "custom": ["--use-case", "custom", "--schema", "experiments/schemas/replication_lag.yaml",
               "--scale", "5", "--end", "2016-01-01T06:00:00Z"],
}


@pytest.mark.parametrize("fmt", ["influx", "csv"])
@pytest.mark.parametrize("case", list(CASES))
def test_same_seed_same_bytes_across_runs_and_processes(tmp_path, case, fmt):
    args = CASES[case] + ["--seed", "123", "--format", fmt]
    one = generate_bytes(tmp_path, *args, name="a")
    assert len(one) > 10_000
    assert generate_bytes(tmp_path, *args, name="b") == one
    for p in ("2", "3"):
        assert generate_bytes(tmp_path, *args, "--processes", p, name=f"p{p}") == one, f"--processes {p}"


def _generate_in_processes(tmp_path, monkeypatch, args, processes: int) -> bytes:
    """generate in exactly `processes` processes however little the work (in this
    process, so that the plan's threshold can be lifted)."""
    lift_process_plan(monkeypatch)
    out = tmp_path / f"forced{processes}"
    r = CliRunner().invoke(cli, ["generate", "-q", "-o", str(out), *args, "--processes", str(processes)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.with_name(out.name + ".manifest.json").read_text())["timing"]["processes"] == processes
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["influx", "csv"])
@pytest.mark.parametrize("case", list(CASES))
def test_merged_processes_give_the_bytes_of_one(tmp_path, monkeypatch, case, fmt):
    """The parallel path itself (ts_merge over the workers' slots), which the plan
    does not pick for these small cases."""
    args = CASES[case] + ["--seed", "123", "--format", fmt]
    one = generate_bytes(tmp_path, *args, name="one")
    for p in (2, 3):
        assert _generate_in_processes(tmp_path, monkeypatch, args, p) == one, f"{p} processes"


def test_other_seed_other_bytes(tmp_path):
    args = CASES["devops"]
    assert generate_bytes(tmp_path, *args, "--seed", "1", name="a") != generate_bytes(tmp_path, *args, "--seed", "2",
                                                                                      name="b")


@pytest.mark.parametrize("case", ["devops", "iot"])
@pytest.mark.parametrize("groups", [1, 2, 3, 7])
def test_groups_union_is_the_whole(tmp_path, case, groups):
    args = CASES[case] + ["--seed", "5"]
    whole = Counter(generate_bytes(tmp_path, *args, name="whole").splitlines())
    union = Counter()
    for g in range(groups):
        part = generate_bytes(tmp_path, *args, "--group", str(g), "--groups", str(groups), name=f"g{g}")
        union.update(part.splitlines())
    assert union == whole


def test_groups_without_group_write_one_file_each(tmp_path):
    from conftest import run_cli

    args = CASES["devops"] + ["--seed", "5"]
    whole = Counter(generate_bytes(tmp_path, *args, name="whole.lp").splitlines())
    run_cli("generate", "-q", *args, "--groups", "3", "--processes", "2", "-o", str(tmp_path / "f.lp"))
    union = Counter()
    for g in range(3):
        union.update((tmp_path / f"f.g{g}.lp").read_bytes().splitlines())
        assert (tmp_path / f"f.g{g}.lp.manifest.json").exists()
    assert union == whole


def test_compressed_output_holds_the_same_bytes(tmp_path):
    import gzip

    import zstandard

    args = CASES["devops"] + ["--seed", "9"]
    plain = generate_bytes(tmp_path, *args, name="p.lp")
    assert gzip.decompress(generate_bytes(tmp_path, *args, name="p.lp.gz")) == plain
    z = generate_bytes(tmp_path, *args, name="p.lp.zst")
    assert zstandard.ZstdDecompressor().stream_reader(z).read() == plain
