"""A connection resolves its snapshot once: it answers from the same committed files however many queries it
runs, scans only the visible partitions, and reads files of older schemas and escaped partition values right."""

from __future__ import annotations

import polars as pl
import pytest
from deltalake import write_deltalake

from genenv.warehouse.query import IN_MEMORY_BYTES, connect, query
from genenv.warehouse.schemas import TABLES, polars_schema
from genenv.warehouse.storage import storage_options, table_uri, translated
from genenv.warehouse.store import Warehouse
from tests.support import synthetic_warehouse as synthetic

SHAPE = synthetic.Shape(seeds=4, variations=2, k=2, pool_samples=2, prompt_tokens=4, text_chars=8)
COUNTS = "SELECT generation, count(*) AS n FROM trajectories GROUP BY 1 ORDER BY 1"


@pytest.mark.parametrize("in_memory_bytes", [0, IN_MEMORY_BYTES], ids=["scanned", "held"])
def test_a_connection_keeps_its_snapshot_while_generations_are_committed(root_uri, in_memory_bytes):
    warehouse = Warehouse(root_uri)
    synthetic.fill(warehouse, "r1", 2, SHAPE, evaluations=False)
    con = connect(warehouse, in_memory_bytes=in_memory_bytes)
    before = con.sql(COUNTS).fetchall()
    synthetic.write_generation(warehouse, "r1", 2, SHAPE, evaluations=False)
    assert con.sql(COUNTS).fetchall() == before, "an open connection saw a later commit"
    assert [g for g, _ in con.sql(COUNTS).fetchall()] == [0, 1]
    assert [g for g, _ in query(warehouse, COUNTS).rows()] == [0, 1, 2]


def test_only_committed_partitions_of_the_run_are_opened(tmp_path):
    """Files of an uncommitted generation or of another run are never opened: garbling them changes nothing."""
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    synthetic.fill(warehouse, "r1", 2, SHAPE, evaluations=False)
    synthetic.fill(warehouse, "r2", 1, SHAPE, evaluations=False)
    for table, data in synthetic.generation_frames("r1", 2, SHAPE).items():
        warehouse.append(table, data)  # written, never committed
    expected = query(warehouse, "SELECT sum(reward) AS s FROM trajectories", run_id="r1")
    root = tmp_path / "warehouse" / "trajectories"
    for garbled in [*root.glob("run_id=r1/generation=2/*.parquet"), *root.glob("run_id=r2/*/*.parquet")]:
        garbled.write_bytes(b"not parquet")
    assert query(warehouse, "SELECT sum(reward) AS s FROM trajectories", run_id="r1").equals(expected)
    assert query(warehouse, COUNTS, run_id="r1")["generation"].to_list() == [0, 1]


def _commit(warehouse: Warehouse, generation: int) -> None:
    warehouse.commit_generation(
        "r1", generation, agent_checkpoint="a", simulator_checkpoint="s", config_hash="h", seed=0, metrics={}
    )


def test_rows_of_an_older_schema_read_new_columns_as_null(root_uri):
    """Files written before a column joined the schema lack it, first in every file, then in some."""
    warehouse = Warehouse(root_uri)
    old = {"run_id": "r1", "generation": 0, "role": "agent", "phase": "grpo", "step": 0, "loss": 0.5}
    old_columns = {name: dtype for name, dtype in polars_schema("training").items() if name in old}
    uri = table_uri(root_uri, "training")
    with translated(uri):
        write_deltalake(
            uri,
            pl.DataFrame([old], schema=old_columns).to_arrow(),
            partition_by=["run_id", "generation"],
            storage_options=storage_options(root_uri),
        )
    _commit(warehouse, 0)
    sql = "SELECT generation, loss, clip_ratio, zero_spread_share FROM training ORDER BY generation"
    assert query(warehouse, sql).rows() == [(0, 0.5, None, None)]
    new = {"kl": None, "grad_norm": 0.3, "entropy": 2.0, "clip_ratio": 0.1, "approx_kl": 0.0, "n_rows": 1}
    new |= {"weight_min": -1.0, "weight_median": 0.0, "weight_max": 1.0}
    warehouse.append(
        "training", [{**old, **new, "generation": 1, "lr": 1e-4, "seconds": 1.0, "zero_spread_share": 0.5}]
    )
    _commit(warehouse, 1)
    assert query(warehouse, sql).rows() == [(0, 0.5, None, None), (1, 0.5, 0.1, 0.5)]


def test_escaped_partition_values_read_back_exactly(root_uri):
    run_id = "exp 1/α:β%"
    warehouse = Warehouse(root_uri)
    synthetic.fill(warehouse, run_id, 1, SHAPE, evaluations=False)
    result = query(warehouse, "SELECT DISTINCT run_id, generation FROM trajectories")
    assert result.rows() == [(run_id, 0)]
    assert query(warehouse, "SELECT count(*) AS n FROM pool", run_id=run_id)["n"][0] > 0


def test_show_tables_lists_every_table(root_uri):
    warehouse = Warehouse(root_uri)
    synthetic.fill(warehouse, "r1", 1, SHAPE, evaluations=False)
    shown = set(query(warehouse, "SHOW TABLES")["name"])
    assert set(TABLES) <= shown
