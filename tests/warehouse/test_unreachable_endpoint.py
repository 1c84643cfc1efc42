"""An S3 endpoint that does not answer is retried by the stage retry policy; a wrong one fails at once, saying so."""

from __future__ import annotations

import os
import signal
import socket
import socketserver
import threading
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import EndpointConnectionError
from prefect import flow

from genenv.infra import seaweedfs
from genenv.pipeline import options
from genenv.pipeline.options import is_transient, stage
from genenv.warehouse import store
from genenv.warehouse.storage import StorageUnreachable, translated
from genenv.warehouse.store import Warehouse, WarehouseError
from tests.warehouse.conftest import ACCESS_KEY, BUCKET, SECRET_KEY


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage retries without their delays, and no delta-rs retries inside an attempt: the stage's own retries are
    what is under test."""
    monkeypatch.setattr(options, "RETRY_DELAYS_SECONDS", [0] * options.RETRIES)
    monkeypatch.setattr(store, "REQUEST_LIMITS", {**store.REQUEST_LIMITS, "max_retries": "0"})


def _as_a_stage(body: Callable[[], int]) -> int:
    """Run `body` as the pipeline runs a stage: a task, with the shared retry policy, inside a flow run."""

    @flow(name="unreachable-endpoint")
    def one_stage() -> int:
        return stage("read-tasks")(body)()

    return one_stage()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the other side closed first


class _Relay(socketserver.ThreadingTCPServer):
    """Forwards 127.0.0.1:port to the S3 server: the endpoint coming back on the address the client uses."""

    allow_reuse_address = True
    daemon_threads = True

    handler: type[socketserver.BaseRequestHandler]

    def __init__(self, port: int, target: str) -> None:
        upstream = urlsplit(target)
        self.target = (upstream.hostname, upstream.port)
        super().__init__(("127.0.0.1", port), self.handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _RelayHandler(socketserver.BaseRequestHandler):
    server: _Relay

    def handle(self) -> None:
        with socket.create_connection(self.server.target) as upstream:
            back = threading.Thread(target=_pump, args=(upstream, self.request), daemon=True)
            back.start()
            _pump(self.request, upstream)
            back.join()


def test_an_endpoint_that_comes_back_is_retried_and_the_stage_succeeds(
    s3_env, prefect_server, fast_retries, monkeypatch
):
    port = _free_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    root = f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}/wh"
    attempts: list[int] = []
    relays: list[_Relay] = []

    def read_tasks() -> int:
        attempts.append(1)
        if len(attempts) == 2:  # the endpoint is back for the retry
            relays.append(_Relay(port, s3_env["AWS_ENDPOINT_URL"]))
        return Warehouse(root).read("tasks").height

    try:
        assert _as_a_stage(read_tasks) == 0
    finally:
        for relay in relays:
            relay.shutdown()
            relay.server_close()
    assert len(attempts) == 2


@pytest.mark.parametrize(
    ("setting", "attempts", "message"),
    [
        ("nothing-listens", options.RETRIES + 1, "cannot reach S3 at http://127.0.0.1:{port} for s3://"),
        ("unknown-host", 1, "S3 endpoint http://no-such-host.invalid:9000 is wrong"),
        ("wrong-secret", 1, "S3 refused the credentials for s3://.* at http://127.0.0.1:"),
        ("no-bucket", 1, "S3 bucket 'no-such-bucket' does not exist at http://127.0.0.1:"),
    ],
)
def test_a_wrong_endpoint_fails_naming_it_after_bounded_retries(
    s3_env, prefect_server, fast_retries, monkeypatch, setting, attempts, message
):
    port = _free_port()
    bucket = "no-such-bucket" if setting == "no-bucket" else BUCKET
    if setting == "nothing-listens":
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    elif setting == "unknown-host":
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://no-such-host.invalid:9000")
    elif setting == "wrong-secret":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-x9")
    tried: list[int] = []

    def read_tasks() -> int:
        tried.append(1)
        return Warehouse(f"s3://{bucket}/wh").read("tasks").height

    with pytest.raises(WarehouseError, match=message.format(port=port)) as error:
        _as_a_stage(read_tasks)
    assert len(tried) == attempts
    assert SECRET_KEY not in str(error.value) and "not-the-secret-x9" not in str(error.value)


@pytest.mark.parametrize(
    ("cause", "transient"),
    [
        (ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)"), True),
        (socket.gaierror(-2, "Name or service not known"), False),
    ],
)
def test_s3fs_connection_errors_are_told_apart_by_their_cause(s3_env, cause, transient):
    """s3fs raises botocore's EndpointConnectionError for both; only the cause says whether a retry can help."""
    with pytest.raises(WarehouseError) as error, translated(f"s3://{BUCKET}/wh/_staging/x.parquet"):
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9/x") from cause
    assert isinstance(error.value, StorageUnreachable) is transient
    assert is_transient(error.value) is transient


class _KillingRelay(_Relay):
    """Forwards to a real SeaweedFS server and SIGKILLs it while the first PUT passes through."""

    def __init__(self, port: int, weed: seaweedfs.S3Server) -> None:
        self.weed = weed
        self.killed_during_put = False
        super().__init__(port, weed.endpoint)

    def point_at(self, weed: seaweedfs.S3Server) -> None:
        upstream = urlsplit(weed.endpoint)
        self.target = (upstream.hostname, upstream.port)


class _KillingRelayHandler(_RelayHandler):
    server: _KillingRelay

    def handle(self) -> None:
        with socket.create_connection(self.server.target) as upstream:
            back = threading.Thread(target=_pump, args=(upstream, self.request), daemon=True)
            back.start()
            try:
                while data := self.request.recv(65536):
                    upstream.sendall(data)
                    if data.startswith(b"PUT ") and not self.server.killed_during_put:
                        self.server.killed_during_put = True
                        os.kill(self.server.weed.pid, signal.SIGKILL)  # the PID this test started
                        assert self.server.weed.process is not None
                        self.server.weed.process.wait()
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server is gone
            back.join()


_Relay.handler = _RelayHandler
_KillingRelay.handler = _KillingRelayHandler


def test_a_server_killed_during_a_write_and_brought_back_gets_the_write_once(
    tmp_path, prefect_server, fast_retries, monkeypatch
):
    """delta-rs's failed PUT ("Error performing PUT") was neither retried nor named; now the stage retries it.
    A SeaweedFS server of its own is SIGKILLed as the first PUT reaches it and restarted on the same data folder
    before the retry, behind the same address."""
    folder = tmp_path / "weed"
    servers = [seaweedfs.start(folder, ACCESS_KEY, SECRET_KEY, bucket=BUCKET)]
    port = _free_port()
    for key, value in servers[0].env(ACCESS_KEY, SECRET_KEY).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    root = f"s3://{BUCKET}/wh"
    relay = _KillingRelay(port, servers[0])
    attempts: list[int] = []
    row = {"run_id": "r1", "generation": 0, "pool": "train", "task_id": "t1", "weight": 1.0}

    def write_pool() -> int:  # idempotent, as every stage is: a retry finds what a landed attempt wrote
        attempts.append(1)
        if relay.killed_during_put and servers[-1].process.poll() is not None:
            servers.append(seaweedfs.start(folder, ACCESS_KEY, SECRET_KEY, bucket=BUCKET))
            relay.point_at(servers[-1])
        warehouse = Warehouse(root)
        if not warehouse.has_rows("pool", "r1", 0):
            warehouse.append("pool", [row])
        return warehouse.read("pool").height

    try:
        assert _as_a_stage(write_pool) == 1
    finally:
        relay.shutdown()
        relay.server_close()
        for server in servers:
            seaweedfs.stop(server)
    assert relay.killed_during_put and len(servers) == 2 and len(attempts) == 2


class _Silent(socketserver.ThreadingTCPServer):
    """An endpoint that accepts connections and never answers."""

    daemon_threads = True

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _SilentHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _SilentHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while self.request.recv(65536):
            pass


@pytest.mark.parametrize("operation", ["read", "write"])
def test_an_endpoint_that_never_answers_fails_within_30_seconds_naming_it(s3_env, monkeypatch, operation):
    port = _free_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    silent = _Silent(port)
    warehouse = Warehouse(f"s3://{BUCKET}/wh")
    row = {"run_id": "r1", "generation": 0, "pool": "train", "task_id": "t1", "weight": 1.0}
    started = time.monotonic()
    try:
        with pytest.raises(StorageUnreachable, match=f"cannot reach S3 at http://127.0.0.1:{port} for s3://"):
            warehouse.read("pool") if operation == "read" else warehouse.append("pool", [row])
    finally:
        silent.shutdown()
        silent.server_close()
    assert time.monotonic() - started < 30
