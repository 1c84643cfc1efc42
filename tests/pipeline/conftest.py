import os

import pytest


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """One real temporary Prefect server (SQLite, loopback) for the whole session."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield
