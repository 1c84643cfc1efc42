"""The suite runs in two pytest-xdist workers (`make test`: `pytest -n 2 --dist loadgroup`), each with its share of
the cores (tests/conftest.py). Tests that start a Ray cluster share one worker: two clusters on one machine would
share Ray's session folder and the address file `ray_address: auto` reads."""

import pytest

ONE_RAY = pytest.mark.xdist_group("ray")
"""Run in the worker that runs every other Ray test, one after another."""
