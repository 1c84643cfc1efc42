"""Retry in the Prefect UI re-executes the same flow run: it must continue the same genenv run, not start a new one.

The flow run is executed the way a worker executes it (`python -m prefect.engine` with PREFECT__FLOW_RUN_ID), killed
mid-generation, set to Scheduled exactly as the UI's Retry button does, and executed again; its tables must equal
those of a run that was never interrupted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from prefect import get_client
from prefect.states import Scheduled

from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import assert_same_run, comparable

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def execute_flow_run(flow_run_id: str, crash_at: str = "") -> int:
    from prefect.settings import PREFECT_API_URL

    env = {
        **os.environ,
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT__FLOW_RUN_ID": flow_run_id,
        "GENENV_CRASH_AT": crash_at,
    }
    command = [sys.executable, "-m", "prefect.engine"]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, timeout=600).returncode


def test_retry_of_a_killed_flow_run_resumes_the_same_genenv_run(finished_run, prefect_server, tmp_path):
    from genenv.flows.evolve import evolve

    reference_config, reference_run, reference = finished_run
    config = reference_config.replace(data_dir=str(tmp_path), generations=1)
    deployment_id = evolve.to_deployment(name="retry-test").apply()
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run_from_deployment(deployment_id, parameters={"config": config.to_dict()})
        assert execute_flow_run(str(flow_run.id), crash_at="g1:end:rollout") == -signal.SIGKILL
        client.set_flow_run_state(flow_run.id, Scheduled(name="AwaitingRetry"), force=True)
        assert execute_flow_run(str(flow_run.id)) == 0
        finished = client.read_flow_run(flow_run.id)

    warehouse = Warehouse(config.resolved_warehouse_uri)
    runs = warehouse.read("runs")["run_id"].to_list()
    assert len(runs) == 1, runs
    assert warehouse.committed(runs[0])["generation"].to_list() == [0, 1]
    assert finished.state.is_completed()
    assert finished.name == runs[0]
    assert {f"run:{config.run_name}", "arm:genenv", "domain:tool_call"} <= set(finished.tags)
    for table in GENERATION_TABLES:
        retried = warehouse.read(table, run_id=runs[0])
        uninterrupted = reference.read(table, run_id=reference_run).filter(pl.col("generation") <= 1)
        assert_same_run(comparable(retried, runs[0]), comparable(uninterrupted, reference_run))
