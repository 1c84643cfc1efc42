import json
from pathlib import Path

import polars as pl
import pytest

from genenv.warehouse.query import check_read_only, connect, query
from genenv.warehouse.schemas import now
from genenv.warehouse.store import Warehouse, WarehouseError


def _run_row(run_id: str) -> dict:
    return {
        "run_id": run_id,
        "run_name": "t",
        "created_at": now(),
        "config_json": "{}",
        "config_hash": "h",
        "model": "m",
        "domain": "tool_call",
        "parent_run_id": None,
        "parent_generation": None,
        "schema_version": 1,
    }


def _pool_rows(run_id: str, generation: int, ids: list[str]) -> list[dict]:
    return [{"run_id": run_id, "generation": generation, "pool": "train", "task_id": t, "weight": 1.0} for t in ids]


def _commit(warehouse: Warehouse, run_id: str, generation: int) -> dict:
    return warehouse.commit_generation(
        run_id,
        generation,
        agent_checkpoint="a",
        simulator_checkpoint="s",
        config_hash="h",
        seed=0,
        metrics={"g": generation},
    )


@pytest.fixture
def warehouse(root_uri) -> Warehouse:
    w = Warehouse(root_uri)
    w.append("runs", [_run_row("r1")])
    return w


def test_rows_breaking_the_schema_are_refused_with_the_table_named(warehouse):
    bad = _pool_rows("r1", 0, ["t1"])
    bad[0]["pool"] = "elsewhere"
    with pytest.raises(WarehouseError, match="table 'pool'"):
        warehouse.append("pool", bad)
    assert warehouse.version("pool") is None
    with pytest.raises(WarehouseError, match="unknown table"):
        warehouse.append("nope", bad)


def test_generation_is_visible_only_after_its_commit(warehouse):
    warehouse.append("pool", _pool_rows("r1", 0, ["t1", "t2"]))
    assert query(warehouse, "SELECT count(*) AS n FROM pool")["n"][0] == 0
    _commit(warehouse, "r1", 0)
    warehouse.append("pool", _pool_rows("r1", 1, ["t3"]))
    assert query(warehouse, "SELECT count(*) AS n FROM pool")["n"][0] == 2
    _commit(warehouse, "r1", 1)
    assert query(warehouse, "SELECT generation, count(*) AS n FROM pool GROUP BY 1 ORDER BY 1").rows() == [
        (0, 2),
        (1, 1),
    ]


def test_commit_records_table_versions_and_is_idempotent(warehouse):
    warehouse.append("pool", _pool_rows("r1", 0, ["t1"]))
    first = _commit(warehouse, "r1", 0)
    again = _commit(warehouse, "r1", 0)
    assert first["committed_at"] == again["committed_at"]
    assert warehouse.committed("r1").height == 1
    assert json.loads(first["table_versions"])["pool"] == warehouse.version("pool")


def test_as_of_generation_reads_that_snapshot(warehouse):
    warehouse.append("pool", _pool_rows("r1", 0, ["t1"]))
    _commit(warehouse, "r1", 0)
    warehouse.append("pool", _pool_rows("r1", 1, ["t2", "t3"]))
    _commit(warehouse, "r1", 1)
    as_of_0 = query(warehouse, "SELECT task_id FROM pool ORDER BY 1", run_id="r1", as_of_generation=0)
    assert as_of_0["task_id"].to_list() == ["t1"]
    assert query(warehouse, "SELECT max(generation) AS g FROM generations", "r1", 0)["g"][0] == 0
    with pytest.raises(WarehouseError, match="no committed generation 5"):
        query(warehouse, "SELECT 1", run_id="r1", as_of_generation=5)
    with pytest.raises(WarehouseError, match="needs a run"):
        connect(warehouse, as_of_generation=0)


def test_runs_are_separated(warehouse):
    warehouse.append("runs", [_run_row("r2")])
    warehouse.append("pool", _pool_rows("r1", 0, ["a"]) + _pool_rows("r2", 0, ["b", "c"]))
    _commit(warehouse, "r1", 0)
    _commit(warehouse, "r2", 0)
    assert query(warehouse, "SELECT count(*) AS n FROM pool", run_id="r2")["n"][0] == 2
    assert query(warehouse, "SELECT count(*) AS n FROM runs")["n"][0] == 2


@pytest.mark.parametrize(
    "sql",
    [
        "COPY (SELECT 1) TO 'out.csv'",
        "ATTACH 'other.db'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET threads = 1",
        "CREATE TABLE x (a INT)",
        "INSERT INTO pool VALUES (1)",
        "DELETE FROM pool",
        "PRAGMA enable_profiling",
        "SELECT 1; DROP VIEW pool",
    ],
)
def test_sql_surface_is_read_only(sql):
    with pytest.raises(WarehouseError, match="read-only"):
        check_read_only(sql)


def test_queries_cannot_touch_files(warehouse, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    with pytest.raises(WarehouseError, match="query failed"):
        query(warehouse, f"SELECT * FROM read_csv('{secret}')")


def test_empty_warehouse_answers_with_empty_views(root_uri):
    if "://" not in root_uri:
        Path(root_uri).mkdir()  # an existing, empty folder; a missing one is an error (below)
    result = query(Warehouse(root_uri), "SELECT count(*) AS n FROM trajectories")
    assert result["n"][0] == 0


def test_a_missing_warehouse_folder_is_an_error_not_an_empty_answer(tmp_path):
    with pytest.raises(WarehouseError, match=f"no warehouse at {tmp_path / 'nowhere'}: the folder does not exist"):
        query(Warehouse(str(tmp_path / "nowhere")), "SELECT count(*) FROM runs")


def test_a_table_written_before_a_column_was_added_takes_the_new_rows(root_uri):
    """Tables of an older schema stay writable: new columns are merged in and read as null for old rows."""
    from deltalake import write_deltalake

    from genenv.warehouse.schemas import polars_schema
    from genenv.warehouse.storage import storage_options, table_uri, translated

    warehouse = Warehouse(root_uri)
    row = {
        "run_id": "r1",
        "generation": 1,
        "role": "agent",
        "phase": "grpo",
        "step": 0,
        "loss": 0.5,
        "kl": None,
        "n_rows": 4,
        "lr": 1e-4,
        "seconds": 1.0,
    }
    old_columns = {name: dtype for name, dtype in polars_schema("training").items() if name in row}
    uri = table_uri(root_uri, "training")
    with translated(uri):
        write_deltalake(
            uri,
            pl.DataFrame([row], schema=old_columns).to_arrow(),
            partition_by=["run_id", "generation"],
            storage_options=storage_options(root_uri),
        )
    new = {**row, "step": 1, "grad_norm": 0.3, "entropy": 2.0, "clip_ratio": 0.1, "approx_kl": 0.01}
    weights = {"weight_min": -1.0, "weight_median": 0.0, "weight_max": 1.0}
    warehouse.append("training", [{**new, "zero_spread_share": 0.5, **weights}])
    rows = warehouse.read("training", run_id="r1").sort("step")
    assert rows["step"].to_list() == [0, 1]
    assert rows["clip_ratio"].to_list() == [None, 0.1]
    assert rows["zero_spread_share"].to_list() == [None, 0.5]
    assert rows["weight_max"].to_list() == [None, 1.0]
