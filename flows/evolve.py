"""The evolve flow: register (or resume) a run, then run every generation not yet committed."""

from __future__ import annotations

from typing import Any

from prefect import flow, tags

from genenv.arms import arm_of
from genenv.config import config_from_dict
from genenv.flows.generation import run_generation
from genenv.models.loading import check_base_model
from genenv.models.sentence import check_sentence_model
from genenv.parameters import ConfigOverrides, override_values
from genenv.pipeline.run_config import config_to_run
from genenv.pipeline.run_records import flow_run_run_id, name_flow_run
from genenv.runtime.handle import ModelRuntime, model_runtime
from genenv.tasks.start_run import start_run
from genenv.validation import validate
from genenv.warehouse.leases import run_lease
from genenv.warehouse.store import Warehouse


@flow(name="genenv-evolve")
def evolve(
    config: dict[str, Any] | None = None,
    config_file: str | None = None,
    overrides: ConfigOverrides | None = None,
    run_id: str | None = None,
    runtime: ModelRuntime | None = None,
) -> str:
    """Generation 0 (seeds, warm start) then generations 1..T; resumes after the last committed one.

    Without `run_id`, the run id comes from this flow run, so Retry in the UI (the same flow run again) resumes
    the same run.

    Args:
        config: Every config field at once (a resolved config, as `genenv config` prints it); when given, the
            file and overrides are ignored.
        config_file: YAML config file, relative to the deployment's working folder (e.g. configs/demo.yaml).
        overrides: Config fields to set on top of the file; empty fields keep the file's value.
        run_id: The genenv run. One in the warehouse resumes with its stored config (the file and overrides apply
            on top, and one that would change how results are made is refused); a new id starts that run.
        runtime: The calling flow's models (compare's, across its arms); without it, this flow loads its own.
    """
    changes = override_values(overrides)
    settings = validate(config_from_dict(config) if config is not None else config_to_run(config_file, changes, run_id))
    check_base_model(settings.model, settings.models_dir)  # before the run is registered: a hub id is fetched here
    if settings.domain == "tool_call" and settings.relevance_model:
        check_sentence_model(settings.relevance_model, settings.models_dir)
    run_id = run_id or flow_run_run_id(settings.run_name)
    warehouse_uri = settings.resolved_warehouse_uri
    with run_lease(warehouse_uri, run_id):  # one writer per run: a second evolve of it fails at once
        start_run(settings, run_id)
        run_tags = [f"run:{settings.run_name}", f"arm:{arm_of(settings)}", f"domain:{settings.domain}"]
        name_flow_run(run_id, run_tags)
        done = set(Warehouse(warehouse_uri).committed(run_id)["generation"].to_list())
        with (
            model_runtime(settings.placement, given=runtime) as models,
            tags(*run_tags),
        ):  # the generations' flow runs too
            for generation in range(settings.generations + 1):
                if generation not in done:
                    run_generation(warehouse_uri, run_id, generation, models)
    return run_id
