"""Every output option (issue 35, item 1): a failed write never removes or truncates what
was at the path. Each option writes over an existing file on a full file system (a small
tmpfs mounted here, as root) and into a device node that fails every write (a /dev/full
made with mknod in a temp folder, so that a failing test cannot remove the real one): the
file keeps its bytes, the device stays, no temporary file is left, and the error is one
line naming the option, exit 2. Also: a device that takes the bytes (/dev/null) is written
in place and stays; a file that is written is replaced whole, keeping its mode."""

from __future__ import annotations

import errno
import os
import pathlib
import stat
import subprocess

import pytest

from conftest import assert_one_line, call

END = "2016-01-01T00:10:00Z"
OLD = b"the user's file, not to be lost\n" * 100
DEV_FULL, DEV_NULL = os.makedev(1, 7), os.makedev(1, 3)


@pytest.fixture(scope="module")
def w(tmp_path_factory) -> pathlib.Path:
    """Inputs: data files, a queries file, a DuckDB database holding the data, an
    experiment and the run folder it made."""
    from tsbench import queries
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate
    from tsbench.experiments.experiment import load_experiment
    from tsbench.experiments.runner import Runner

    d = tmp_path_factory.mktemp("outputs")
    ds = resolve(DatasetSpec(scale=1, end=END))
    generate(ds, "influx", str(d / "data.lp"), show_progress=False)
    generate(ds, "csv", str(d / "data.csv"), show_progress=False)
    queries.write_queries(d / "q.jsonl", ds, 1, queries.generate(ds, ["max-cpu-1"], 1, 1, allow_empty=True))
    (d / "exp.yaml").write_text(f"name: outs\ndatasets:\n  d: {{scale: 1, end: \"{END}\"}}\n"
                                "targets:\n  a: {target: duckdb}\nphases: [generate, load]\n")
    (d / "run").symlink_to(Runner(load_experiment(str(d / "exp.yaml")), d / "results", quiet=True).run())
    assert call_ok("load", str(d / "data.csv"), "-t", "duckdb", "-s", str(d / "db.duckdb"), "-q")
    return d


def call_ok(*argv: str) -> bool:
    from tsbench.commands import cli

    try:
        cli.main(list(argv))
    except SystemExit as exc:
        return exc.code == 0
    return True


@pytest.fixture(scope="module")
def small_fs(tmp_path_factory):
    """A 512 kB tmpfs of this test's own (CI runs as root, as here)."""
    d = tmp_path_factory.mktemp("fullfs")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(d)], capture_output=True, text=True)
    assert p.returncode == 0, f"mounting a tmpfs needs root: {p.stderr}"
    yield d
    subprocess.run(["umount", "-l", str(d)], check=True)


def _fill(folder: pathlib.Path) -> None:
    """Fill the file system of folder to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as f:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    with pytest.raises(OSError):
        (folder / "probe").write_bytes(b"x")
    (folder / "probe").unlink()


@pytest.fixture
def full(small_fs):
    """A folder on a full file system; its files are removed after the test."""
    yield small_fs
    for p in small_fs.iterdir():
        subprocess.run(["rm", "-rf", str(p)], check=True)


GEN = ("generate", "--scale", "1", "--end", END, "-q")

# (argv with {w} for the inputs and {out} for the output, the option named, the file it writes when not {out})
CASES = [
    (GEN + ("-o", "{out}"), "--output", None),
    (GEN + ("-j", "2", "-o", "{out}"), "--output", None),
    (GEN + ("--compress", "gzip", "-o", "{out}"), "--output", None),
    (GEN + ("--scale", "2", "--groups", "2", "-o", "{dir}/x.lp"), "--output", "x.g0.lp"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "-n", "1", "--allow-empty", "-o", "{out}"),
     "--output", None),
    (("load", "{w}/data.lp", "-t", "null", "-q", "--json", "{out}"), "--json", None),
    (("stream", "-t", "null", "--scale", "1", "--points-per-series", "3", "-q", "--json", "{out}"), "--json", None),
    (("stream", "-t", "null", "--scale", "1", "--points-per-series", "3", "-q", "--seconds", "{out}"),
     "--seconds", None),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--load", "{w}/data.csv", "--no-validate", "-q", "--json", "{out}"),
     "--json", None),
    (("validate", "{w}/q.jsonl", "-t", "duckdb", "--load", "{w}/data.csv", "-q", "--json", "{out}"), "--json", None),
    (("verify", "{w}/data.csv", "-t", "duckdb", "-s", "{w}/db.duckdb", "--json", "{out}"), "--json", None),
    (("report", "{w}/run", "-o", "{out}"), "--output", None),
]
IDS = [" ".join(a[:1] + a[-2:-1]) + f" {i}" for i, (a, _, _) in enumerate(CASES)]


def _argv(argv, w, out, folder) -> list[str]:
    return [a.format(w=w, out=out, dir=folder) for a in argv]


def _mknod(path: pathlib.Path, dev: int) -> pathlib.Path:
    os.mknod(path, 0o666 | stat.S_IFCHR, dev)
    return path


@pytest.mark.parametrize("argv,option,name", CASES, ids=IDS)
def test_a_failed_write_to_a_full_disk_keeps_the_file(capsys, w, full, argv, option, name):
    keep = full / (name or "out.file")
    keep.write_bytes(OLD)
    keep.chmod(0o640)
    _fill(full)
    code, err = call(capsys, *_argv(argv, w, keep, full))
    assert_one_line(code, err, f"{option}: cannot write")
    assert keep.read_bytes() == OLD and stat.S_IMODE(keep.stat().st_mode) == 0o640
    assert sorted(p.name for p in full.iterdir()) == sorted({keep.name, "filler"})   # no temporary file left


@pytest.mark.parametrize("argv,option,name", [c for c in CASES if c[2] is None],
                         ids=[i for i, c in zip(IDS, CASES) if c[2] is None])
def test_a_failed_write_to_a_device_keeps_the_device(capsys, w, tmp_path, argv, option, name):
    dev = _mknod(tmp_path / "full", DEV_FULL)
    code, err = call(capsys, *_argv(argv, w, dev, tmp_path))
    assert_one_line(code, err, f"{option}: cannot write")
    st = dev.lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == DEV_FULL
    assert [p.name for p in tmp_path.iterdir()] == ["full"]


@pytest.mark.parametrize("argv,option,name", [c for c in CASES if c[2] is None][:8:3],
                         ids=[i for i, c in zip(IDS, CASES) if c[2] is None][:8:3])
def test_a_device_that_takes_the_bytes_is_written_in_place(capsys, w, tmp_path, argv, option, name):
    dev = _mknod(tmp_path / "null", DEV_NULL)
    code, err = call(capsys, *_argv(argv, w, dev, tmp_path))
    assert code == 0, err
    assert stat.S_ISCHR(dev.lstat().st_mode) and [p.name for p in tmp_path.iterdir()] == ["null"]


def test_a_written_file_replaces_the_old_one_whole_and_keeps_its_mode(capsys, w, tmp_path):
    out = tmp_path / "s.json"
    out.write_bytes(OLD * 100)
    out.chmod(0o604)
    code, err = call(capsys, "load", str(w / "data.lp"), "-t", "null", "-q", "--json", str(out))
    assert code == 0, err
    assert out.read_text().startswith("{") and out.read_text().endswith("}\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o604
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_run_results_on_a_full_disk_is_one_line(capsys, w, full):
    keep = full / "keep"
    keep.write_bytes(OLD)
    _fill(full)
    code, err = call(capsys, "run", str(w / "exp.yaml"), "--results", str(full), "-q")
    assert_one_line(code, err, "--results: cannot")
    assert keep.read_bytes() == OLD


def test_run_results_on_a_device_is_one_line(capsys, w, tmp_path):
    dev = _mknod(tmp_path / "full", DEV_FULL)
    code, err = call(capsys, "run", str(w / "exp.yaml"), "--results", str(dev), "-q")
    assert_one_line(code, err, "--results: cannot")
    assert stat.S_ISCHR(dev.lstat().st_mode) and dev.lstat().st_rdev == DEV_FULL


def test_dev_stdout_is_stdout_as_it_is(tmp_path):
    """-o /dev/stdout with stdout appending to a file: the file grows, nothing replaces it."""
    import sys

    out = tmp_path / "log"
    out.write_bytes(OLD)
    with open(out, "ab") as f:
        p = subprocess.run([sys.executable, "-m", "tsbench", *GEN, "-o", "/dev/stdout"], stdout=f,
                           stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 0, p.stderr
    data = out.read_bytes()
    assert data.startswith(OLD) and data[len(OLD):].startswith(b"cpu,") and data.endswith(b"\n")
