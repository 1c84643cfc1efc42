"""genenv stack up|down|status: the local Prefect stack, a server (SQLite) and a worker on the CPU pool, and with
`--ray-port` a Ray head for `ray_address` (docs/scale.md).

Both listen on 127.0.0.1 only, keep their state under <data_dir>/prefect (PREFECT_HOME) and run with analytics
off. `up` also creates the two work pools and the `gpu` tag concurrency limit that prefect.yaml relies on, so
`prefect deploy` works right after it. Each process runs in its own session; `down` signals exactly those
process groups (a flow run the worker started goes with it) by the PIDs recorded at start.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from importlib import resources
from pathlib import Path

CPU_POOL = "genenv-cpu"
GPU_POOL = "genenv-gpu"
GPU_TEMPLATE = resources.files("genenv.infra") / "gpu-process-job-template.json"
"""Package data, so `genenv stack up` works from a non-editable install too."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("stack", help="start, stop or inspect the local Prefect server and worker")
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--data-dir", default="data", help="PREFECT_HOME, logs and PID files go under DIR/prefect")
    parser.add_argument("--port", type=int, default=4200, help="server port on 127.0.0.1 (up only)")
    parser.add_argument("--gpu-slots", type=int, default=1, help="concurrent GPU-tagged stages (up only)")
    parser.add_argument(
        "--ray-port", type=int, help="also start a Ray head on 127.0.0.1:PORT, for ray_address (up only; needs ray)"
    )
    parser.set_defaults(handler=run)


class Stack:
    """The PID files, logs and settings of one data folder's stack."""

    def __init__(self, data_dir: str) -> None:
        self.home = Path(data_dir).resolve() / "prefect"
        self.folder = self.home / "stack"

    def pid_file(self, name: str) -> Path:
        return self.folder / f"{name}.pid"

    @property
    def port(self) -> int | None:
        path = self.folder / "port"
        return int(path.read_text()) if path.exists() else None

    def api_url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}/api"

    def env(self, port: int) -> dict[str, str]:
        return {
            **os.environ,
            "PREFECT_HOME": str(self.home),
            "PREFECT_API_URL": self.api_url(port),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_API_HOST": "127.0.0.1",
            "PREFECT_SERVER_API_PORT": str(port),
            "TOKENIZERS_PARALLELISM": "false",
        }

    def pid(self, name: str) -> int | None:
        """The recorded PID if that process is still alive and still leads its own process group."""
        path = self.pid_file(name)
        if not path.exists():
            return None
        pid = int(path.read_text())
        try:
            alive = os.getpgid(pid) == pid
        except ProcessLookupError:
            alive = False
        return pid if alive else None

    def start(self, name: str, args: list[str], env: dict[str, str], module: str = "prefect") -> int:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_file(name).write_text(str(process.pid))
        return process.pid

    def stop(self, name: str) -> bool:
        """TERM, then INT (Prefect's worker needs a second signal), then KILL, to the process group; what is left of
        the group once its leader is gone is killed. True if it was running.

        The Ray head gets a TERM of its own first: it drains the node before stopping what it started, and signalled
        with its group it would wait 30 s for a GCS already gone (it stops in about 2 s alone)."""
        pid = self.pid(name)
        if pid is not None:
            steps = [(os.killpg, signal.SIGTERM, 10), (os.killpg, signal.SIGINT, 10), (os.killpg, signal.SIGKILL, 5)]
            if name == "ray":
                steps.insert(0, (os.kill, signal.SIGTERM, 40))
            for send, sig, wait in steps:
                try:
                    send(pid, sig)
                except ProcessLookupError:
                    break
                if _wait_exit(pid, wait):
                    break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        self.pid_file(name).unlink(missing_ok=True)
        return pid is not None


def _wait_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (started by an earlier `genenv stack up`)
            finished = 0 if _alive(pid) else pid
        if finished == pid:
            return True
        time.sleep(0.2)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _wait_for(check: Callable[[], bool], what: str, seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {seconds:.0f} s; see {log}")
        time.sleep(0.5)


def configure(api_url: str, gpu_slots: int) -> None:
    """Create (or update) the CPU and GPU work pools and the `gpu` tag concurrency limit."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.workers.process import ProcessWorker

    from genenv.pipeline.options import GPU_TAG

    pools = {
        CPU_POOL: ProcessWorker.get_default_base_job_template(),
        GPU_POOL: json.loads(GPU_TEMPLATE.read_text()),
    }
    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        for name, template in pools.items():
            pool = WorkPoolCreate(name=name, type="process", base_job_template=template)
            client.create_work_pool(pool, overwrite=True)
        client.create_concurrency_limit(tag=GPU_TAG, concurrency_limit=gpu_slots)


def worker_online(api_url: str) -> bool:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        return any(w.status == "ONLINE" for w in client.read_workers_for_work_pool(CPU_POOL))


def crash_in_flight(api_url: str) -> int:
    """Mark the flow runs the stopped worker was running as Crashed, so none stays "Running" for ever in the UI;
    returns how many. (Stopping the worker's process group ended their processes.)"""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Crashed

    in_flight = FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING, StateType.CANCELLING])
    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=in_flight)))
        for flow_run in runs:
            message = "stopped by `genenv stack down`; Retry resumes an evolve run"
            client.set_flow_run_state(flow_run.id, Crashed(message=message), force=True)
    return len(runs)


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def start_ray_head(stack: Stack, port: int, env: dict[str, str]) -> None:
    """`ray start --head --block` in its own session, so `down` stops it and every process it started by its PID."""
    if importlib.util.find_spec("ray") is None:
        raise RuntimeError("--ray-port needs Ray: pip install 'genenv-coevolve[ray]' (a checkout: make installs it)")
    head = ["start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port)]
    head += ["--include-dashboard", "false", "--disable-usage-stats"]
    # Ray's switch for one-machine clusters keeps the head on 127.0.0.1 (runtime/pool.py: keep_loopback). Token
    # authentication is off: only this machine reaches a loopback head, and a run's process would need the token.
    loopback = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
    stack.start("ray", head, {**env, **loopback}, module="ray.scripts.scripts")
    (stack.folder / "ray_port").write_text(str(port))
    _wait_for(lambda: stack.pid("ray") is not None and listening(port), "the Ray head", 90, stack.folder / "ray.log")


def up(stack: Stack, port: int, gpu_slots: int, ray_port: int | None = None) -> None:
    if stack.pid("server") is not None:
        raise RuntimeError(f"the stack is already up (port {stack.port}); run `genenv stack down` first")
    env = stack.env(port)
    api = stack.api_url(port)
    stack.folder.mkdir(parents=True, exist_ok=True)
    (stack.folder / "port").write_text(str(port))
    stack.start("server", ["server", "start", "--host", "127.0.0.1", "--port", str(port)], env)
    _wait_for(lambda: healthy(api), "the Prefect server", 90, stack.folder / "server.log")
    configure(api, gpu_slots)
    stack.start("worker", ["worker", "start", "--pool", CPU_POOL, "--type", "process"], env)
    _wait_for(lambda: worker_online(api), "the worker", 90, stack.folder / "worker.log")
    if ray_port is not None:
        start_ray_head(stack, ray_port, env)


def status(stack: Stack) -> dict[str, object]:
    port = stack.port
    return {
        "server_pid": stack.pid("server"),
        "worker_pid": stack.pid("worker"),
        "ray_pid": stack.pid("ray"),
        "ray_address": f"127.0.0.1:{(stack.folder / 'ray_port').read_text()}" if stack.pid("ray") else None,
        "api": stack.api_url(port) if port else None,
        "healthy": bool(port) and healthy(stack.api_url(port)),
        "prefect_home": str(stack.home),
    }


def run(args: argparse.Namespace) -> int:
    stack = Stack(args.data_dir)
    if args.action == "up":
        try:
            up(stack, args.port, args.gpu_slots, args.ray_port)
        except RuntimeError as exc:
            print(f"genenv stack: {exc}", file=sys.stderr)
            return 1
        api = stack.api_url(args.port)
        print(f"Prefect UI: http://127.0.0.1:{args.port}  (API {api}, PREFECT_HOME {stack.home})")
        print(f"Worker on pool {CPU_POOL!r}; pools {CPU_POOL!r} and {GPU_POOL!r}, tag limit 'gpu'={args.gpu_slots}.")
        if args.ray_port is not None:
            address = f"127.0.0.1:{args.ray_port}"
            print(f"Ray head on {address}: runs fan out to it with --set ray_address={address}")
        print("Register the deployments, then start one:")
        print(f"  export PREFECT_API_URL={api}")
        print("  prefect deploy --all")
        print("  prefect deployment run genenv-evolve/evolve-nightly")
        return 0
    if args.action == "down":
        stopped = ["ray head"] if stack.stop("ray") else []
        stopped += ["worker"] if stack.stop("worker") else []
        port = stack.port
        crashed = crash_in_flight(stack.api_url(port)) if port and healthy(stack.api_url(port)) else 0
        stopped += ["server"] if stack.stop("server") else []
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        if crashed:
            print(f"marked {crashed} flow run(s) in flight as Crashed; Retry in the UI resumes an evolve run")
        return 0
    info = status(stack)
    for key, value in info.items():
        print(f"{key}: {value}")
    return 0 if info["healthy"] else 1
