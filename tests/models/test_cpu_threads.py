"""The thread governor (models/cpu/threads.py): a thread fewer while tasks wait for a CPU, one back while a core is
idle, and nothing where the user fixed the count."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from genenv.models.cpu import threads
from genenv.models.cpu.threads import Reading, ThreadGovernor, next_threads, read_machine
from genenv.models.policy import LoraSettings, PolicyPair

PSI = pytest.mark.skipif(read_machine() is None, reason="the kernel reports no CPU pressure (/proc/pressure/cpu)")


@pytest.mark.parametrize(
    ("threads_now", "waited", "idle", "expected"),
    [
        (2, 0.9, 0.0, 1),  # tasks waited most of the window: one thread fewer
        (1, 0.9, 0.0, 1),  # never below one
        (4, 0.6, 1.5, 3),  # waiting wins over idle (a core idles between the waits)
        (1, 0.0, 0.9, 2),  # a core idle: one back
        (2, 0.0, 0.9, 2),  # never above the ceiling
        (1, 0.2, 0.3, 1),  # a little waiting, a little idle: as it is
    ],
)
def test_one_thread_fewer_while_tasks_wait_one_more_while_a_core_idles(threads_now, waited, idle, expected) -> None:
    assert next_threads(threads_now, 2 if threads_now <= 2 else 4, waited, idle) == expected


def test_the_counters_become_shares_of_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.4 s of waiting and 1.7 idle core-seconds over a 2 s window: a waited share of 0.2 and 0.85 idle cores."""
    readings = iter(
        [
            Reading(100.0, 5_000_000, 1_000, 7_000_000_000),
            Reading(102.0, 5_400_000, 1_000 + 170 * threads.TICKS_PER_S // 100, 7_100_000_000),
        ]
    )
    governor = ThreadGovernor(ceiling=2, window_s=0.0, read=lambda: next(readings))
    seen = {}
    monkeypatch.setattr(threads, "next_threads", lambda n, ceiling, w, i: seen.update(waited=w, idle=i) or n)
    governor()
    assert seen["waited"] == pytest.approx(0.2) and seen["idle"] == pytest.approx(1.7 / 2)


def test_the_process_own_threads_waiting_take_a_thread_away_where_the_machine_share_does_not() -> None:
    """The sentence encoder beside a busy core, traced: the machine's waited share 0.50-0.52 a window (under the
    threshold half the time), its own threads' wait 0.97-1.00 thread-seconds a second; one thread then encoded 80
    texts a second against 2-6 with two."""
    readings = iter([Reading(10.0, 0, 0, 0), Reading(10.5, 200_000, 0, 490_000_000)])  # machine 0.4, own 0.98
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        governor = ThreadGovernor(ceiling=2, window_s=0.0, read=lambda: next(readings))
        governor()
        assert (torch.get_num_threads(), governor.changes) == (1, 1)
    finally:
        torch.set_num_threads(torch_threads)


@pytest.mark.skipif(not Path("/proc/self/schedstat").exists(), reason="the kernel keeps no schedstat")
def test_the_process_own_wait_is_read_from_its_threads_schedstat() -> None:
    """More spinning processes than cores while this thread computes too: it waits for a CPU part of the time, and
    its own reading grows by that wait, not by its time on a CPU: a thread that never sleeps is either running or
    waiting, so its CPU time and its wait add up to the wall time (the kernel's schedstat; the suite runs on Linux)."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        time.sleep(0.2)  # the spinners running
        before, cpu_before, started = threads.own_waited_ns(), time.thread_time(), time.monotonic()
        while time.monotonic() - started < 1.0:
            pass
        waited_s = (threads.own_waited_ns() - before) / 1e9
        cpu_s, wall_s = time.thread_time() - cpu_before, time.monotonic() - started
    finally:
        for spinner in spinners:
            os.killpg(spinner.pid, 15)
            spinner.wait()
    assert waited_s > 0.05  # fair shares: about a third of the second on 2 cores, more on a busier machine
    assert cpu_s + waited_s == pytest.approx(wall_s, abs=0.1)  # the process's other threads sleep: they add no wait


@PSI
def test_a_crowded_machine_takes_a_thread_away() -> None:
    """More spinning processes than cores: tasks wait all the time, whatever else runs, so the count drops by one."""
    before = torch.get_num_threads()
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range((os.cpu_count() or 1) + 1)
    ]
    try:
        torch.set_num_threads(2)
        governor = ThreadGovernor(ceiling=2, window_s=0.3)
        time.sleep(0.6)
        governor()
        assert (torch.get_num_threads(), governor.changes) == (1, 1)
    finally:
        for spinner in spinners:
            os.killpg(spinner.pid, 15)
            spinner.wait()
        torch.set_num_threads(before)


@PSI
def test_every_forward_pass_asks_the_governor_unless_the_user_fixed_the_count(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "OMP_NUM_THREADS" in os.environ  # tests/conftest.py fixes it for every test
    fixed = PolicyPair.load(tiny_model_dir, LoraSettings(r=2, alpha=4))
    assert not fixed.model.get_input_embeddings()._forward_pre_hooks
    monkeypatch.delenv("OMP_NUM_THREADS")
    governed = PolicyPair.load(tiny_model_dir, LoraSettings(r=2, alpha=4))
    governor = threads.process_governor()  # one a process, whichever model it was fitted to first
    assert list(governed.model.get_input_embeddings()._forward_pre_hooks.values()) == [governor]
    before, count = governor.last, torch.get_num_threads()
    governor.last = replace(before, at=0.0)  # a window long past: the next pass reads
    try:
        with torch.no_grad():
            governed.model(input_ids=torch.tensor([[1, 2, 3]]))
        assert governor.last.at > before.at  # the forward pass asked, and the governor read the machine
        governor.last = stale = replace(before, at=0.0)
        with torch.no_grad():
            fixed.model(input_ids=torch.tensor([[1, 2, 3]]))
        assert governor.last is stale  # the model loaded under OMP_NUM_THREADS never asks
    finally:
        governor.last = before
        torch.set_num_threads(count)


def test_each_test_worker_computes_on_its_share_of_the_cores() -> None:
    """tests/conftest.py: two workers that each spun as many threads as the machine has cores made the suite 1.6x
    slower and its deploy tests miss their deadlines (each worker had inherited the controlling process's count)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    share = max(1, (os.cpu_count() or 1) // workers)
    assert os.environ["OMP_NUM_THREADS"] == str(share) and torch.get_num_threads() == share


@PSI
def test_the_label_checks_sentence_encoder_asks_the_governor_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoder runs in the loop's process beside the policy, and in bench/answer_check.py on its own: with
    PyTorch's count, a census check beside a busy core did not finish in 12 times its time alone (docs/performance.md,
    "The label checks' encoder")."""
    from genenv.models.sentence import SENTENCE_MODEL, SentenceEncoder, resolve_sentence_model

    folder = resolve_sentence_model(SENTENCE_MODEL, tmp_path)
    fixed = SentenceEncoder(folder)  # tests/conftest.py fixes OMP_NUM_THREADS
    assert not fixed.model.get_input_embeddings()._forward_pre_hooks
    monkeypatch.delenv("OMP_NUM_THREADS")
    governed = SentenceEncoder(folder)
    hooks = list(governed.model.get_input_embeddings()._forward_pre_hooks.values())
    assert hooks == [threads.process_governor()]
