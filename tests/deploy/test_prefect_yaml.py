"""prefect.yaml, the work-pool templates, the retry policy and the artifact renderers, without a server."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import polars as pl
import pytest
import yaml
from prefect.states import Failed

from genenv.cli.commands.stack import CPU_POOL, GPU_POOL, GPU_TEMPLATE
from genenv.pipeline.artifacts import artifact_key, bar, loss_curves, loss_svg, p_hat_histogram, sparkline
from genenv.pipeline.options import is_transient, retry_on_transient_io

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENTS = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d["name"])
def test_every_deployment_entrypoint_resolves_to_a_flow_taking_its_parameters(deployment):
    from prefect.flows import load_flow_from_entrypoint

    path = deployment["entrypoint"].split(":")[0]
    assert (REPO / path).is_file(), f"{deployment['name']}: entrypoint file {path} is missing"
    flow = load_flow_from_entrypoint(str(REPO / deployment["entrypoint"]))
    accepted = set(flow.parameters.properties)
    assert set(deployment.get("parameters", {})) <= accepted, f"{deployment['name']}: unknown parameters"
    assert deployment["work_pool"]["name"] in {CPU_POOL, GPU_POOL}


def test_the_nightly_evolve_is_scheduled_from_a_config_file():
    nightly = next(d for d in DEPLOYMENTS if d["name"] == "evolve-nightly")
    assert nightly["schedules"][0]["cron"] and (REPO / nightly["parameters"]["config_file"]).is_file()
    assert nightly["work_pool"]["name"] == CPU_POOL


def test_gpu_job_templates_are_complete():
    from prefect.workers.process import ProcessWorker

    process = json.loads(GPU_TEMPLATE.read_text())
    default = ProcessWorker.get_default_base_job_template()
    assert process["job_configuration"] == default["job_configuration"]
    k8s = json.loads((REPO / "infra" / "gpu-kubernetes-job-template.json").read_text())
    container = k8s["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]["containers"][0]
    # One flow run holds one vLLM engine and one trainer on one device: a second GPU would sit idle.
    assert (
        container["resources"]["limits"]["nvidia.com/gpu"] == container["resources"]["requests"]["nvidia.com/gpu"] == 1
    )
    assert "gpus" not in k8s["variables"]["properties"]
    assert container["args"] == "{{ command }}"


def test_a_gpu_flow_run_gets_the_one_gpu_of_the_worker_that_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the pool's job variables nor its template pin a GPU: a process worker started with one GPU in its
    environment (CUDA_VISIBLE_DEVICES=3) hands that GPU, and only it, to each flow run it starts (Prefect's own job
    configuration computes the flow-run process's environment here)."""
    from prefect.client.schemas.objects import FlowRun
    from prefect.utilities.templating import apply_values
    from prefect.workers.process import ProcessJobConfiguration

    pool = yaml.safe_load((REPO / "prefect.yaml").read_text())["definitions"]["work_pools"]["gpu"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    template = json.loads(GPU_TEMPLATE.read_text())
    variables = {name: spec.get("default") for name, spec in template["variables"]["properties"].items()}
    job = ProcessJobConfiguration(**apply_values(template["job_configuration"], variables | pool["job_variables"]))
    job.prepare_for_flow_run(FlowRun(flow_id=uuid.uuid4()))
    assert job.env["CUDA_VISIBLE_DEVICES"] == "3"


def test_flows_that_load_models_have_gpu_deployments_and_maintenance_takes_any_warehouse() -> None:
    gpu = {d["entrypoint"] for d in DEPLOYMENTS if d["work_pool"]["name"] == GPU_POOL}
    assert gpu == {"flows/evolve.py:evolve", "flows/evaluate.py:evaluate", "flows/rerun.py:rerun_generation"}
    [maintenance] = [d for d in DEPLOYMENTS if d["entrypoint"] == "flows/maintenance.py:maintain_warehouse"]
    assert "warehouse_uri" not in maintenance["parameters"]  # each schedule names its warehouse
    assert all(schedule["parameters"]["warehouse_uri"] for schedule in maintenance["schedules"])


def test_the_gpu_image_and_its_jobs_keep_data_on_a_volume() -> None:
    """The image links the config's data_dir (data, under /opt/genenv) to its /data volume and sets the model caches
    there; the Kubernetes job mounts a persistent claim at /data, so no job downloads the model again."""
    image = (REPO / "infra" / "Dockerfile.gpu").read_text()
    assert "ln -s /data /opt/genenv/data" in image and "VOLUME /data" in image and "HF_HOME=/data/hf" in image
    assert "gcc" in image and "'.[gpu,ray]'" in image and "bfcl-eval==" in image  # Triton's compiler, Ray, BFCL
    k8s = json.loads((REPO / "infra" / "gpu-kubernetes-job-template.json").read_text())
    pod = k8s["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]
    claim = {v["name"]: v for v in pod["volumes"]}["data"]["persistentVolumeClaim"]["claimName"]
    assert claim == "{{ data_claim }}" and k8s["variables"]["properties"]["data_claim"]["default"] == "genenv-data"
    assert {"name": "data", "mountPath": "/data"} in pod["containers"][0]["volumeMounts"]
    manifest = yaml.safe_load((REPO / "infra" / "gpu-data-claim.yaml").read_text())
    assert manifest["kind"] == "PersistentVolumeClaim" and manifest["metadata"]["name"] == "genenv-data"


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (ConnectionResetError("peer reset"), True),
        (TimeoutError("read timed out"), True),
        (OSError("Generic S3 error: 503"), True),
        (FileNotFoundError("no such model"), False),
        (PermissionError("denied"), False),
        (ValueError("bad value"), False),
        (RuntimeError("a bug"), False),
    ],
)
def test_only_transient_io_errors_are_retried(exc, retried):
    assert is_transient(exc) is retried
    assert retry_on_transient_io(None, None, Failed(data=exc)) is retried


def test_an_error_can_declare_itself_transient():
    from deltalake.exceptions import CommitFailedError

    unreachable = RuntimeError("cannot reach S3")
    unreachable.transient = True
    assert is_transient(unreachable) and is_transient(CommitFailedError("conflict"))


def test_artifact_keys_are_lowercase_dash():
    assert artifact_key("My_Run.2026", "g1", "p-hat") == "genenv-my-run-2026-g1-p-hat"


def test_text_charts():
    assert bar(1.0, 4) == "████" and bar(0.0) == "" and bar(None) == ""
    assert sparkline([3.0, 2.0, 1.0]) == "█▅▁"
    batches = pl.DataFrame(
        {"p_hat": [0.45, 0.5, 0.95, None], "task_id": [None] * 4}, schema_overrides={"task_id": pl.String}
    )
    text = p_hat_histogram(batches, alpha=0.5, k_min=0.1)
    assert "| 0.4–0.5 ★ | 1 |" in text and "| 0.9–1.0 | 1 |" in text and "1 batch(es) had no valid" in text
    tasks = p_hat_histogram(batches.with_columns(task_id=pl.Series(["a", "b", "c", "d"])), alpha=0.5, k_min=0.1)
    assert "**p̂ per generated task**" in tasks and "| p̂ | tasks |" in tasks and "1 output(s) were rejected" in tasks
    assert "| 0.0–0.1 | 0 |  |" in text and "``" not in text  # an empty bin draws nothing, not a stray backtick
    svg = base64.b64decode(loss_svg({"agent grpo": [2.0, 1.0]}).split(",", 1)[1]).decode()
    assert svg.startswith("<svg") and "agent grpo" in svg
    assert ">step 0<" in svg and ">step 1<" in svg and ">2<" in svg and ">1<" in svg  # axes: steps and loss range


def test_loss_artifact_draws_a_chart_only_with_enough_steps():
    few = pl.DataFrame({"role": ["agent"] * 2, "phase": ["grpo"] * 2, "step": [0, 1], "loss": [2.0, 1.0]})
    many = pl.DataFrame({"role": ["agent"] * 6, "phase": ["grpo"] * 6, "step": range(6), "loss": [3.0, 2, 2, 1, 1, 0]})
    assert "| agent grpo | 2 | 2.0000 | 1.0000 |" in loss_curves(few) and "![loss curves]" not in loss_curves(few)
    assert "![loss curves](data:image/svg+xml;base64," in loss_curves(many)
