"""S3 credentials, checkpoints, staging files, direct Polars reads and the `genenv sql` outputs."""

from __future__ import annotations

import json
import uuid

import polars as pl
import pytest

from genenv.cli import main
from genenv.pipeline.context import GenerationRef
from genenv.pipeline.staging import read_staged, staging_path, write_staged
from genenv.runtime.handle import ModelRuntime
from genenv.warehouse.checkpoints import adapter_exists, checkpoint_uri, fetch_adapter, publish_adapter
from genenv.warehouse.query import query
from genenv.warehouse.schemas import TABLES
from genenv.warehouse.store import Warehouse, WarehouseError
from tests.support import synthetic_warehouse as synthetic
from tests.warehouse.conftest import BUCKET, SECRET_KEY

SHAPE = synthetic.Shape(seeds=5, variations=2, k=2, pool_samples=2, prompt_tokens=4, text_chars=8)


def test_wrong_secret_gives_a_clear_error_without_the_secret(s3_env, monkeypatch):
    root = f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}/wh"
    synthetic.fill(Warehouse(root), "r", 1, SHAPE, evaluations=False)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-x9")
    for action in (
        lambda: Warehouse(root).read("tasks"),
        lambda: Warehouse(root).append("runs", [synthetic.run_row("r2")]),
        lambda: query(root, "SELECT count(*) FROM trajectories"),
    ):
        with pytest.raises(WarehouseError, match="S3 refused the credentials for s3://") as error:
            action()
        assert "AWS_SECRET_ACCESS_KEY" in str(error.value) and "not-the-secret-x9" not in str(error.value)
        assert len(str(error.value)) < 200


def test_missing_bucket_is_named(s3_env):
    with pytest.raises(WarehouseError, match="bucket 'no-such-bucket' does not exist"):
        Warehouse("s3://no-such-bucket/wh").read("tasks")


def test_the_secret_is_never_stored(s3_env, tmp_path):
    root = f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}/wh"
    main(["sql", "SELECT 1", "--warehouse", root])  # the CLI path too
    warehouse = Warehouse(root)
    synthetic.fill(warehouse, "r", 2, SHAPE)
    from genenv.config import GenEnvConfig
    from genenv.tasks.start_run import start_run

    start_run.fn(GenEnvConfig(warehouse_uri=root, data_dir=str(tmp_path)))
    for table in TABLES:
        assert SECRET_KEY not in str(warehouse.read(table).to_dicts()), table
    assert all(SECRET_KEY not in c for c in warehouse.read("runs")["config_json"])


def test_polars_reads_the_tables_directly(root_uri):
    warehouse = Warehouse(root_uri)
    synthetic.fill(warehouse, "r", 2, SHAPE, evaluations=False)
    committed = pl.scan_delta(warehouse.uri("generations"), storage_options=warehouse.storage_options)
    trajectories = pl.scan_delta(warehouse.uri("trajectories"), storage_options=warehouse.storage_options)
    direct = trajectories.join(committed.select("run_id", "generation"), on=["run_id", "generation"], how="semi")
    assert direct.select(pl.len()).collect().item() == query(warehouse, "SELECT * FROM trajectories").height


def test_as_of_version_is_the_warehouse_clock(root_uri):
    warehouse = Warehouse(root_uri)
    synthetic.fill(warehouse, "r", 3, SHAPE, evaluations=False)
    first_commit = 0  # generations version 0 holds generation 0 only
    as_of = query(warehouse, "SELECT DISTINCT generation FROM trajectories", as_of_version=first_commit)
    assert as_of["generation"].to_list() == [0]
    with pytest.raises(WarehouseError, match="no warehouse version 99"):
        query(warehouse, "SELECT 1", as_of_version=99)


def test_checkpoints_publish_and_fetch(root_uri, tmp_path):
    adapter = tmp_path / "adapter"
    (adapter / "sub").mkdir(parents=True)
    (adapter / "adapter_config.json").write_text('{"r": 8}')
    (adapter / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 1000)
    uri = checkpoint_uri(root_uri, "run-1", 3, "agent")
    assert uri.endswith("_checkpoints/run-1/gen-3/agent")
    assert not adapter_exists(uri)
    with pytest.raises(WarehouseError, match="no published adapter"):
        fetch_adapter(uri, tmp_path / "cache")
    publish_adapter(adapter, uri)
    assert adapter_exists(uri)
    folder = fetch_adapter(uri, tmp_path / "cache")
    assert (folder / "sub" / "weights.bin").read_bytes() == b"\x00\x01" * 1000
    assert json.loads((folder / "adapter_config.json").read_text()) == {"r": 8}
    (adapter / "adapter_config.json").write_text('{"r": 16}')
    publish_adapter(adapter, uri)  # a re-run of the generation replaces the adapter; the cache notices
    assert json.loads((fetch_adapter(uri, tmp_path / "cache") / "adapter_config.json").read_text()) == {"r": 16}


def test_staged_files_round_trip(root_uri):
    ref = GenerationRef(root_uri, "run-1", 2, ModelRuntime())
    uri = staging_path(ref, "rollouts")
    assert read_staged(uri) is None
    data = pl.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert write_staged(ref, "rollouts", data) == uri
    assert read_staged(uri).equals(data)
    assert query(root_uri, "SELECT count(*) AS n FROM tasks")["n"][0] == 0


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_sql_writes_files(root_uri, tmp_path, fmt):
    synthetic.fill(Warehouse(root_uri), "r", 2, SHAPE, evaluations=False)
    out = tmp_path / f"out.{fmt}"
    sql = "SELECT generation, count(*) AS n FROM batches GROUP BY 1 ORDER BY 1"
    assert main(["sql", sql, "--warehouse", root_uri, "--output", str(out)]) == 0
    read = {"csv": pl.read_csv, "json": pl.read_ndjson, "parquet": pl.read_parquet}[fmt]
    assert read(out).rows() == [(1, 4)]
    assert main(["sql", sql, "--warehouse", root_uri, "--format", "parquet"]) == 2
