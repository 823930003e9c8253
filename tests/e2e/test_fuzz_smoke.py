"""The fuzz target's properties (tests/fuzz/properties.py) run for a few examples each, so
that they keep working between runs of `nox -s fuzz`, which runs them for minutes."""

from __future__ import annotations

import pytest
from fuzz.properties import PROPERTIES, check


@pytest.mark.parametrize("name", PROPERTIES)
def test_fuzz_property_holds_for_a_few_examples(name):
    check(name, 5)


# what the fuzz target found, each fixed: (file name, text, needle of the one-line error)
FOUND = [
    ("exp.yaml", "\x1f", "not valid YAML (unacceptable character #x001f"),      # yaml's reader error, two lines
    ("exp.yaml", "?\n", "name: Field required"),                                # a key that is null
    ("exp.yaml", "name: x\n1: 2\ndatasets: {d: {}}\ntargets: {a: {target: duckdb}}\n",
     "1: Keys should be strings"),                                                # a key that is a number
    ("q.jsonl", "null\n{}\n", "not a tsbench queries file"),                     # a head that is not an object
    ("q.jsonl", '{"tsbench_queries": 1}\nnull\n', "not a tsbench queries file"),  # a query that is not an object
    ("q.jsonl", '{"tsbench_queries": 1}\n[1]\n', "not a tsbench queries file"),
    ("q.jsonl", '{"tsbench_queries": 1}\n{"id": 1e999, "type": "x", "params": {}}\n', "not a tsbench queries file"),
]


@pytest.mark.parametrize("name,text,needle", FOUND)
def test_inputs_the_fuzzing_found_are_one_line(capsys, tmp_path, name, text, needle):
    from conftest import assert_one_line, call

    f = tmp_path / name
    f.write_text(text)
    argv = ["run", str(f), "--dry-run"] if name.endswith(".yaml") else ["execute", str(f), "-t", "duckdb"]
    assert_one_line(*call(capsys, *argv), needle)
