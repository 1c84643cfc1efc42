"""Resuming a run keeps the settings its generations were made with; a change is refused with the way to fork."""

from __future__ import annotations

from pathlib import Path

import pytest

from genenv.config import ConfigError, GenEnvConfig
from genenv.pipeline.run_records import register_run
from genenv.tasks.start_run import start_run
from genenv.warehouse.store import Warehouse


@pytest.fixture
def stored(tmp_path: Path) -> GenEnvConfig:
    config = GenEnvConfig(data_dir=str(tmp_path), generations=2)
    register_run(Warehouse(config.resolved_warehouse_uri), config, "r1")
    return config


def test_the_same_settings_resume(stored: GenEnvConfig) -> None:
    assert start_run.fn(stored, "r1") == "r1"
    assert start_run.fn(stored.replace(run_name="renamed", generations=5), "r1") == "r1"


def test_a_shaping_change_is_refused_naming_the_field_and_the_fork(stored: GenEnvConfig) -> None:
    with pytest.raises(ConfigError, match=r"alpha: 0\.5 -> 0\.3.*genenv rerun --run r1 --generation G"):
        start_run.fn(stored.replace(alpha=0.3), "r1")


def test_an_unknown_run_id_starts_a_new_run_under_that_id(stored: GenEnvConfig) -> None:
    assert start_run.fn(stored.replace(alpha=0.3), "r2") == "r2"
    assert Warehouse(stored.resolved_warehouse_uri).read("runs", run_id="r2").height == 1
