"""--print-responses' shared printers (databases/printable.py) and the base target's
answer_lines(): JSON printed as JSON with its names, result sets and Arrow tables as
tables with their column names, text as its lines, each cut with how many were left
out. Each target's own answer is checked against its real server in test_contract.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tsbench.databases.shared import printable
from tsbench.databases.shared.target import Target
from tsbench.queries.base import Answer, RowSet

INFLUX = (b'{"results":[{"statement_id":0,"series":[{"name":"cpu","tags":{"hostname":"h1"},'
          b'"columns":["time","max_usage_user"],"values":[' +
          b",".join(b'["2016-01-01T00:%02d:00Z",%d.25]' % (i, 50 + i) for i in range(30)) + b"]}]}]}")


def test_a_json_body_is_its_json_with_every_name_and_long_lists_cut():
    lines = printable.body_lines(INFLUX, 3)
    text = "\n".join(lines)
    assert '"columns": ["time", "max_usage_user"]' in text and '"tags": {"hostname": "h1"}' in text
    assert '            ["2016-01-01T00:00:00Z", 50.25],' in lines and "... 27 more items" in text
    assert "79.25" not in text and lines[0] == "{" and lines[-1] == "}"
    assert printable.body_lines(b'{"a": [1, 2]}', 1) == ['{"a": [1, 2]}']         # short: one line, whole
    assert printable.json_lines({"k": "x" * 120}, 5) == ["{", '  "k": "' + "x" * 120 + '"', "}"]


def test_text_is_its_lines_and_an_empty_body_says_so():
    csv = b"#datatype,string,long\n,result,table,_value\n,,0,1.5\n,,0,2.5\n"
    assert printable.body_lines(csv, 2) == ["#datatype,string,long", ",result,table,_value", "... 2 more lines"]
    assert printable.body_lines(b"", 2) == ["(empty body)"]


def test_a_result_set_is_a_table_with_its_column_names():
    rows = [(1, "h1", 0.1 + 0.2), (2, None, np.float64(3.5)), (3, "h3", float("nan"))]
    assert printable.table_lines(["t", "hostname", "max(usage_user)"], rows, 2) == [
        "t | hostname | max(usage_user)", "1 | h1 | 0.30000000000000004", "2 | NULL | 3.5", "... 1 more rows"]
    assert printable.table_lines(["t"], [], 2) == ["t", "(no rows)"]
    assert printable.table_lines(["t"], [(1,)], 1, total=10) == ["t", "1", "... 9 more rows"]


def test_an_arrow_table_is_a_table_not_bytes():
    t = pa.table({"t": pa.array(range(5), pa.int64()), "max_usage_user": [1.5, 2.5, 3.5, 4.5, 5.5]})
    assert printable.arrow_lines(t, 2) == ["t | max_usage_user", "0 | 1.5", "1 | 2.5", "... 3 more rows"]


def test_several_responses_each_under_a_heading_cut():
    assert printable.responses_lines([b"[1]", b"[2]", b"[3]"], 2) == [
        "# response 1 of 3", "[1]", "# response 2 of 3", "[2]", "... 1 more responses"]
    assert printable.responses_lines([], 2) == ["(no response: nothing was sent)"]


def test_the_base_targets_hook_prints_each_kind_of_raw_answer():
    t = Target()
    assert t.answer_lines(None, Answer(RowSet(["t", "v"], [(1, 2.5)])), 5) == ["t | v", "1 | 2.5"]
    assert t.canonical(None, Answer(RowSet(["t", "v"], [(1, 2.5)]))) == [(1, 2.5)]
    assert t.answer_lines(None, Answer(b'{"v": 1}'), 5) == ['{"v": 1}']
    assert t.answer_lines(None, Answer([b'{"v": 1}']), 5) == ["# response 1 of 1", '{"v": 1}']
    assert t.answer_lines(None, Answer(None), 5) == ["(no answer kept: no request was sent)"]
