"""`precision: auto`: bfloat16 only where the device computes it natively, resolved once when a run starts."""

from __future__ import annotations

import pytest
import torch

from genenv.config import ConfigError, GenEnvConfig
from genenv.models.memory_plan import PlanSettings
from genenv.models.precision import native_bfloat16, resolve_precision
from genenv.pipeline.run_config import stored_config
from genenv.tasks.start_run import start_run
from genenv.validation import validate
from genenv.warehouse.store import Warehouse


def test_auto_is_bfloat16_only_where_the_cpu_runs_it_natively():
    """On a CPU, oneDNN's bf16 kernels (AVX-512 or AMX) decide: on an AVX2-only CPU a bf16 training step took 20x as
    long as in float32 (bench/precision.py). A concrete precision is kept as given."""
    if torch.cuda.is_available():
        pytest.skip("a GPU decides here, not the CPU")
    native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert native_bfloat16() is native
    assert resolve_precision("auto") == ("bfloat16" if native else "float32")
    assert [resolve_precision(p) for p in ("float32", "bfloat16")] == ["float32", "bfloat16"]


def test_a_run_stores_the_precision_auto_resolved_to_and_resumes_only_in_it(tmp_path):
    config = validate(GenEnvConfig(precision="auto", data_dir=str(tmp_path)))
    assert config.precision == resolve_precision("auto")
    run_id = start_run.fn(config, "r1")
    warehouse = Warehouse(config.resolved_warehouse_uri)
    assert stored_config(warehouse, run_id).precision == config.precision
    assert start_run.fn(validate(GenEnvConfig(precision="auto", data_dir=str(tmp_path))), run_id) == run_id
    other = "float32" if config.precision == "bfloat16" else "bfloat16"  # a machine where auto resolves otherwise
    with pytest.raises(ConfigError, match="cannot resume with other settings.*precision"):
        start_run.fn(config.replace(precision=other), run_id)


def test_a_gpu_memory_plan_reads_auto_as_bfloat16():
    """Every card the plan sizes computes bf16 natively."""
    assert PlanSettings.of(GenEnvConfig(precision="auto")).precision == "bfloat16"
    assert PlanSettings.of(GenEnvConfig(precision="float32")).precision == "float32"


def test_a_comparison_shares_a_generation_zero_stored_with_the_precision_auto_resolved_to(tmp_path):
    """`genenv compare --from-run` checks its arms against the stored run: a config saying `auto` matches the run
    that `auto` made on this machine once validated, and would not before (the stored precision is concrete)."""
    from genenv.arms import plan_arms
    from genenv.flows.compare import check_shared_run
    from genenv.validation import validate_plans

    config = validate(GenEnvConfig(precision="auto", data_dir=str(tmp_path)))
    start_run.fn(config, "r1")
    warehouse = Warehouse(config.resolved_warehouse_uri)
    warehouse.commit_generation(
        "r1", 0, agent_checkpoint="a", simulator_checkpoint="s", config_hash=config.hash(), seed=0, metrics={}
    )
    plans = plan_arms(["genenv"], None, {"precision": "auto", "data_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="changes .*precision"):
        check_shared_run(warehouse, "r1", plans)
    resolved = validate_plans(plans)
    assert [plan.config.precision for plan in resolved] == [config.precision]
    check_shared_run(warehouse, "r1", resolved)
