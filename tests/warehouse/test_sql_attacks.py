"""The read-only SQL surface holds against every statement a probe tried on it: nothing committed can be changed,
and no file outside the snapshot's committed Parquet can be read."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from genenv.warehouse.query import check_read_only, connect, query
from genenv.warehouse.store import Warehouse, WarehouseError
from tests.warehouse.test_warehouse import _commit, _pool_rows, _run_row


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    """Generation 0 committed, generation 1 written but not committed."""
    w = Warehouse(str(tmp_path / "warehouse"))
    w.append("runs", [_run_row("r1")])
    w.append("pool", _pool_rows("r1", 0, ["t1"]))
    _commit(w, "r1", 0)
    w.append("pool", _pool_rows("r1", 1, ["t2", "t3"]))
    return w


def _files(warehouse: Warehouse, pattern: str) -> list[Path]:
    return sorted(Path(warehouse.root_uri).glob(pattern))


def _weights(warehouse: Warehouse) -> float:
    return warehouse.read("pool", run_id="r1", generation=0)["weight"].sum()


def test_explain_analyze_cannot_rewrite_a_committed_file(warehouse):
    """The probe's attack: EXPLAIN ANALYZE runs the COPY it explains, over a committed Parquet file."""
    [committed] = _files(warehouse, "pool/run_id=r1/generation=0/*.parquet")
    before = committed.read_bytes()
    copy = f"COPY (SELECT * REPLACE (5.0::DOUBLE AS weight) FROM read_parquet('{committed}')) TO '{committed}'"
    for sql in (
        f"EXPLAIN ANALYZE {copy} (FORMAT parquet)",
        f"explain analyse {copy} (FORMAT parquet, USE_TMP_FILE false)",
        f"EXPLAIN (FORMAT json) {copy}",
        "EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1",
        "EXPLAIN ANALYZE INSERT INTO pool SELECT * FROM pool",
        "EXPLAIN /* a comment */ ANALYZE SELECT 1",
    ):
        with pytest.raises(WarehouseError, match="read-only"):
            query(warehouse, sql)
    assert committed.read_bytes() == before and _weights(warehouse) == 1.0


def test_the_connection_itself_cannot_write_even_past_the_statement_check(warehouse):
    """By construction: a connection from `connect` opens exactly the committed files, so a write straight to one
    of them (no temporary file) or anywhere else fails even when no statement filter ran."""
    [committed] = _files(warehouse, "pool/run_id=r1/generation=0/*.parquet")
    before = committed.read_bytes()
    con = connect(warehouse)
    for sql in (
        f"COPY (SELECT 1 AS a) TO '{committed}' (FORMAT parquet, USE_TMP_FILE false)",
        f"COPY (SELECT 1 AS a) TO '{committed.parent / 'new.parquet'}' (FORMAT parquet)",
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{committed}' (FORMAT parquet, USE_TMP_FILE false)",
        "SET allowed_directories = ['/']",
        "SET enable_external_access = true",
    ):
        with pytest.raises(Exception, match="Permission|lock|disabled|configuration"):
            con.execute(sql)
    con.close()
    assert committed.read_bytes() == before
    assert _files(warehouse, "pool/run_id=r1/generation=0/new.parquet") == []


def test_raw_readers_see_only_committed_files(warehouse):
    [uncommitted] = _files(warehouse, "pool/run_id=r1/generation=1/*.parquet")
    log = _files(warehouse, "pool/_delta_log/*.json")[0]
    for sql in (
        f"SELECT * FROM read_parquet('{uncommitted}')",
        f"SELECT * FROM read_parquet('{uncommitted.parent}/*.parquet')",
        f"SELECT * FROM read_json('{log}')",
        f"SELECT * FROM read_text('{log}')",
        f"SELECT * FROM glob('{Path(warehouse.root_uri)}/**')",
        f"SELECT * FROM read_parquet('{Path(warehouse.root_uri)}/pool/**/*.parquet')",
    ):
        with pytest.raises(WarehouseError, match="query failed"):
            query(warehouse, sql)
    assert query(warehouse, "SELECT count(*) AS n FROM pool")["n"][0] == 1


@pytest.mark.parametrize("sql", ["EXPLAIN SELECT * FROM pool", "EXPLAIN ANALYZE SELECT count(*) FROM pool"])
def test_explaining_a_query_is_allowed(warehouse, sql):
    check_read_only(sql)
    assert query(warehouse, sql).height >= 1


def test_a_runaway_query_is_stopped_at_the_time_limit(warehouse):
    recursive = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    started = time.monotonic()
    with pytest.raises(WarehouseError, match=r"query stopped after 2 s \(the limit; genenv sql --timeout\)"):
        query(warehouse, recursive, timeout=2)
    assert time.monotonic() - started < 30


def test_a_query_that_needs_too_much_memory_fails_naming_the_limit(warehouse):
    with pytest.raises(WarehouseError, match="more memory than 64MB"):
        query(warehouse, "SELECT list(range) FROM range(100000000)", memory_limit="64MB")
    with pytest.raises(WarehouseError, match="not a size DuckDB reads"):
        query(warehouse, "SELECT 1", memory_limit="lots")


def test_a_damaged_file_is_one_line_naming_its_table(warehouse):
    [committed] = _files(warehouse, "pool/run_id=r1/generation=0/*.parquet")
    committed.write_bytes(committed.read_bytes()[: committed.stat().st_size // 2])  # truncated, as by a full disk
    with pytest.raises(WarehouseError, match="table 'pool' cannot be read, a file of it is damaged: .*magic bytes"):
        query(warehouse, "SELECT count(*) FROM pool")
    with pytest.raises(WarehouseError, match="table 'pool' cannot be read, a file of it is damaged: .*magic bytes"):
        warehouse.read("pool", run_id="r1")
    done = subprocess.run(
        [sys.executable, "-m", "genenv.cli", "sql", "--warehouse", warehouse.root_uri, "SELECT count(*) FROM pool"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
