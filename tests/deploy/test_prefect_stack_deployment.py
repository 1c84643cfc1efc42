"""The evolve deployment through a real local stack: `genenv stack up` (server + worker on loopback), `prefect
deploy` from prefect.yaml, a worker-run flow on the tiny model, the UI, and a cancelled run.
About 100 s on an idle 2-core machine (server 10 s, deploy 10 s, each flow run 25-40 s).

Set GENENV_UI_SCREENSHOTS=docs/ui to refresh the documented screenshots.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterName,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.client.schemas.objects import FlowRun
from prefect.events.filters import EventFilter, EventNameFilter, EventRelatedFilter
from prefect.exceptions import PrefectHTTPStatusError
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Cancelling, Scheduled

from genenv.pipeline.artifacts import artifact_key
from genenv.pipeline.options import GPU_TAG
from genenv.warehouse.query import query
from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import assert_same_run, comparable

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENT = "genenv-evolve/evolve-nightly"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PER_GENERATION = ("summary", "p-hat", "losses", "snapshot")


@dataclass
class LocalStack:
    api: str
    ui: str
    client: SyncPrefectClient
    deployment_id: object


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _genenv(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "genenv.cli", *args], cwd=REPO, env=env, check=True, timeout=150)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data = tmp_path_factory.mktemp("stack")
    port = _free_port()
    env = {**os.environ, "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    _genenv("stack", "up", "--data-dir", str(data), "--port", str(port), env=env)
    try:
        api = f"http://127.0.0.1:{port}/api"
        deploy_env = {**env, "PREFECT_API_URL": api, "PREFECT_HOME": str(data / "prefect")}
        deploy = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--name", "evolve-nightly"]
        subprocess.run(deploy, cwd=REPO, env=deploy_env, check=True, timeout=150, capture_output=True)
        with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name(DEPLOYMENT)
            yield LocalStack(api, f"http://127.0.0.1:{port}", client, deployment.id)
    finally:
        _genenv("stack", "down", "--data-dir", str(data), env=env)


def tiny_overrides(model: Path, data_dir: Path, generations: int) -> dict[str, object]:
    """The nightly deployment's config file (configs/demo.yaml) shrunk to the tiny model, typed as the form sends."""
    return dict(
        run_name="deploy-test",
        model=str(model),
        data_dir=str(data_dir),
        benchmarks_dir="",
        precision="float32",
        generations=generations,
        seeds_per_generation=3,
        variations_per_seed=2,
        rollouts_per_task=2,
        pool_tasks_per_generation=2,
        simulator_max_new_tokens=24,
        agent_max_new_tokens=12,
        warm_start_epochs=1,
        warm_start_examples=8,
        max_heldout=4,
        train_batch_size=16,
        generation_batch_size=32,
    )


def start(stack: LocalStack, overrides: dict[str, object]) -> FlowRun:
    return stack.client.create_flow_run_from_deployment(stack.deployment_id, parameters={"overrides": overrides})


# Deadlines, not timings: a tiny run takes about a minute alone, and took 164 s in a fresh clone's two-worker suite
# while the other worker started a second stack and a Ray head; a slow machine must not fail these tests.
PATIENCE = 600


def wait_final(stack: LocalStack, flow_run_id, timeout: float = PATIENCE) -> FlowRun:
    deadline = time.monotonic() + timeout
    while not (run := stack.client.read_flow_run(flow_run_id)).state.is_final():
        assert time.monotonic() < deadline, f"flow run still {run.state.name} after {timeout:.0f} s"
        time.sleep(1)
    return run


def run_id_of(data_dir: Path, timeout: float = PATIENCE) -> str:
    """The genenv run id, once the flow has registered it in the warehouse."""
    deadline = time.monotonic() + timeout
    while (runs := Warehouse(str(data_dir / "warehouse")).read("runs")).is_empty():
        assert time.monotonic() < deadline, "the flow never registered its run"
        time.sleep(1)
    return runs["run_id"][0]


def generation_runs(stack: LocalStack, run_id: str, generations: int) -> dict[int, FlowRun]:
    names = [f"{run_id}-g{g}" for g in range(generations + 1)]
    found = stack.client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=names)))
    return {int(r.name.rsplit("-g", 1)[1]): r for r in found}


def stage_names(stack: LocalStack, flow_run: FlowRun) -> dict[str, str]:
    """Stage name -> state name of the task runs of one flow run."""
    runs = stack.client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
    return {r.name.rsplit("-", 1)[0]: r.state.name if r.state else "Pending" for r in runs}


def wait_for_stage(stack: LocalStack, run_id: str, generation: int, stage: str, timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while True:
        subflow = generation_runs(stack, run_id, generation).get(generation)
        if subflow and stage_names(stack, subflow).get(stage) == "Completed":
            return
        assert time.monotonic() < deadline, f"generation {generation} never completed {stage}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def completed(stack, tiny_model_dir, tmp_path_factory):
    data = tmp_path_factory.mktemp("completed")
    flow_run = wait_final(stack, start(stack, tiny_overrides(tiny_model_dir, data, generations=1)).id)
    return flow_run, run_id_of(data), Warehouse(str(data / "warehouse"))


def test_the_evolve_deployment_runs_every_stage_through_the_worker(stack, completed):
    flow_run, run_id, _ = completed
    assert flow_run.state.is_completed(), flow_run.state.message
    assert flow_run.work_pool_name == "genenv-cpu"
    assert stage_names(stack, flow_run) == {"start-run": "Completed", "genenv-generation": "Completed"}
    assert flow_run.name == run_id
    subflows = generation_runs(stack, run_id, 1)
    for run in (flow_run, *subflows.values()):
        assert {"run:deploy-test", "arm:genenv", "domain:tool_call"} <= set(run.tags), run.name
    # The run's tags stay on flow runs: a tagged task run asks the server for concurrency slots first.
    generation_ids = [run.id for run in subflows.values()]
    stages = stack.client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=generation_ids)))
    assert stages and all(set(stage.tags) <= {GPU_TAG} for stage in stages), [stage.tags for stage in stages]
    zero = ("seed-pool", "warm-start", "evaluate-heldout", "commit")
    genenv = ("generate", "rollout", "verify", "rewards", "grow-pools", "finetune", "evaluate-heldout", "commit")
    for generation, stages in ((0, zero), (1, genenv)):
        assert subflows[generation].state.is_completed()
        expected = dict.fromkeys(stages, "Completed")
        assert stage_names(stack, subflows[generation]) == expected


def test_each_generation_publishes_artifacts_and_logs_its_summary(stack, completed):
    _, run_id, _ = completed
    keys = [artifact_key(run_id, f"g{g}", what) for g in (0, 1) for what in PER_GENERATION]
    keys.append(artifact_key(run_id, "curriculum"))
    found = stack.client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
    assert {a.key for a in found} == set(keys)
    by_key = {a.key: a for a in found}
    assert by_key[artifact_key(run_id, "g1", "summary")].type == "table"
    assert "Across generations" in by_key[artifact_key(run_id, "curriculum")].data
    subflow = generation_runs(stack, run_id, 1)[1]
    assert by_key[artifact_key(run_id, "g1", "losses")].flow_run_id == subflow.id
    assert wait_for_log(stack, subflow.id, "generation 1: valid tasks")


def wait_for_log(stack, flow_run_id, prefix: str, seconds: float = 30.0) -> bool:
    """Logs reach the API in batches after the run ends: poll briefly instead of reading once."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        logs = stack.client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
        if any(log.message.startswith(prefix) for log in logs):
            return True
        time.sleep(1.0)
    return False


def test_the_run_form_is_typed_and_refuses_a_wrong_value_by_name(stack):
    schema = stack.client.read_deployment(stack.deployment_id).parameter_openapi_schema
    fields = schema["definitions"]["ConfigOverrides"]["properties"]
    assert {"type": "integer"} in fields["generations"]["anyOf"]
    assert fields["alpha"]["description"].startswith("Target success rate")
    assert fields["warm_start"]["description"].endswith("Default: True.")
    for wrong, field in (({"generations": "many"}, "generations"), ({"genrations": 1}, "genrations")):
        with pytest.raises(PrefectHTTPStatusError, match=f"Validation failed for field 'overrides.*{field}"):
            start(stack, wrong)


def dom_showing(browser: list[str], url: str, shown: str, limit: float = 600) -> str:
    """The page's DOM once it shows `shown`, loaded again until it does: a headless load ends when its virtual time
    runs out, which can be before the page's own fetches from the API have answered (seen once), so one load is no
    proof of what the page shows. `limit` only bounds a page that never shows it."""
    deadline = time.monotonic() + limit
    while shown not in (dom := _dump_dom(browser, url)):
        assert time.monotonic() < deadline, f"{url} never showed {shown!r}"
    return dom


def _dump_dom(browser: list[str], url: str) -> str:
    return subprocess.run([*browser, "--dump-dom", url], capture_output=True, text=True, timeout=90).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_the_ui_shows_the_runs_the_form_and_the_artifacts(stack, completed, tmp_path):
    evolve_run, run_id, _ = completed
    subflow = generation_runs(stack, run_id, 1)[1]
    summary = stack.client.read_artifacts(
        artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[artifact_key(run_id, "g1", "summary")]))
    )[0]
    pages = {  # screenshot name: (page, what its DOM must show)
        "runs": (f"{stack.ui}/runs", run_id),
        "run-form": (f"{stack.ui}/deployments/deployment/{stack.deployment_id}/run", "GenEnv generations T"),
        "flow-run": (f"{stack.ui}/runs/flow-run/{subflow.id}", subflow.name),
        "artifacts": (f"{stack.ui}/artifacts", artifact_key(run_id, "g1", "p-hat")),
        "summary-artifact": (f"{stack.ui}/artifacts/artifact/{summary.id}", "valid_rate"),
    }
    assert evolve_run.name == run_id
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1100"]
    browser += ["--virtual-time-budget=20000", "--run-all-compositor-stages-before-draw"]
    for name, (url, shown) in pages.items():
        dom_showing(browser, url, shown)
        shot = tmp_path / f"{name}.png"
        subprocess.run([*browser, f"--screenshot={shot}", url], capture_output=True, timeout=90, check=True)
        assert shot.stat().st_size > 20_000
        if folder := os.environ.get("GENENV_UI_SCREENSHOTS"):
            shutil.copy(shot, REPO / folder / f"{name}.png")


def test_retry_of_a_flow_run_killed_under_the_worker_continues_it_to_the_same_tables(
    stack, completed, tiny_model_dir, tmp_path
):
    """The worker's flow process is killed mid-generation; Retry (as the UI sends it) resumes the genenv run."""
    _, reference_run, reference = completed
    flow_run = start(stack, tiny_overrides(tiny_model_dir, tmp_path, generations=1))
    run_id = run_id_of(tmp_path)
    wait_for_stage(stack, run_id, 1, "rollout")
    os.kill(int(stack.client.read_flow_run(flow_run.id).infrastructure_pid), signal.SIGKILL)  # the process worker's pid
    assert wait_final(stack, flow_run.id).state.is_crashed()
    assert retry(stack, flow_run.id).state.is_completed()

    warehouse = Warehouse(str(tmp_path / "warehouse"))
    assert warehouse.read("runs")["run_id"].to_list() == [run_id]
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]
    for table in GENERATION_TABLES:
        retried, uninterrupted = warehouse.read(table, run_id=run_id), reference.read(table, run_id=reference_run)
        assert_same_run(comparable(retried, run_id), comparable(uninterrupted, reference_run))


def retry(stack: LocalStack, flow_run_id) -> FlowRun:
    """Retry as the UI's button does, once the worker is done with the killed process.

    A process worker reports a killed flow process twice: at once, then, after loading the flow for its crash hooks,
    seconds later ("Flow run infrastructure exited with non-zero status code -9"). A Retry sent in between is turned
    Crashed by the second report, while its process goes on writing and holds the run's lease against the next
    Retry. The worker ends its handling of a flow process with the event `prefect.worker.executed-flow-run`, after
    that report: the Retry waits for it, as a person waits for the run's page to settle."""
    wait_until(lambda: worker_done_with(stack, flow_run_id), "the worker's end of the killed flow process")
    stack.client.set_flow_run_state(flow_run_id, Scheduled(name="AwaitingRetry"), force=True)
    return wait_final(stack, flow_run_id)


def worker_done_with(stack: LocalStack, flow_run_id) -> bool:
    executed = EventFilter(
        event=EventNameFilter(name=["prefect.worker.executed-flow-run"]),
        related=EventRelatedFilter(id=[f"prefect.flow-run.{flow_run_id}"]),
    )
    return stack.client.read_events(filter=executed, limit=1).total > 0  # the server allows at most 50


def wait_until(condition, what: str, limit: float = 600) -> None:
    """Poll `condition`; `limit` only bounds a condition that never comes."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.5)


def test_a_cancelled_run_leaves_no_half_written_generation(stack, tiny_model_dir, tmp_path):
    flow_run = start(stack, tiny_overrides(tiny_model_dir, tmp_path, generations=1))
    run_id = run_id_of(tmp_path)
    wait_for_stage(stack, run_id, 0, "seed-pool")  # generation 0's seed rows are written, its warm start begins
    stack.client.set_flow_run_state(flow_run.id, Cancelling(), force=True)
    assert wait_final(stack, flow_run.id).state.is_cancelled()

    warehouse = Warehouse(str(tmp_path / "warehouse"))
    written = set(warehouse.read("tasks", run_id=run_id)["generation"].to_list())
    committed = set(query(warehouse, "SELECT generation FROM generations")["generation"].to_list())
    visible = set(query(warehouse, "SELECT DISTINCT generation FROM tasks")["generation"].to_list())
    assert written - committed, "the cancel should have landed inside a generation"
    assert visible == committed
