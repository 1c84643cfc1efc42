"""Every warehouse test runs twice: on a local folder and on a real S3 server (SeaweedFS on loopback)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from genenv.infra import seaweedfs

ACCESS_KEY = "genenvtest"
SECRET_KEY = "s3cr3t-Zq8vY2pLm4"
BUCKET = "genenv-test"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[seaweedfs.S3Server]:
    server = seaweedfs.start(tmp_path_factory.mktemp("seaweedfs"), ACCESS_KEY, SECRET_KEY, bucket=BUCKET)
    yield server
    seaweedfs.stop(server)


@pytest.fixture
def s3_env(s3_server: seaweedfs.S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = s3_server.env(ACCESS_KEY, SECRET_KEY)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture(params=["local", "s3"])
def root_uri(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh, empty warehouse root: a folder, or a prefix of the test bucket (with credentials in the env)."""
    if request.param == "local":
        return str(tmp_path / "warehouse")
    request.getfixturevalue("s3_env")
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/warehouse"
