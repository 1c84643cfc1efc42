"""bench/steering.py: its smoke mode on the tiny model runs every arm and the shift end to end, so the full benchmark
cannot rot unnoticed; its measure counts only NEW outputs at the target (a copy of a seed, of a training output or of
another output is reported apart), and its RWR arms pool exactly the outputs their reward admits, each once."""

from __future__ import annotations

import importlib.util
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from genenv.domains.base import get_domain
from genenv.models.policy import LoraSettings, PolicyPair

BENCH = Path(__file__).resolve().parents[2] / "bench" / "steering.py"
ARITHMETIC = get_domain("arithmetic")


@pytest.fixture(scope="module")
def steering():
    spec = importlib.util.spec_from_file_location("steering_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _seed(operators: int):
    return next(t for t in ARITHMETIC.load_seeds() if ARITHMETIC.difficulty(t) == operators)


def _written(steering, prompt: int, operators: int | None, reason: str | None = None, repeat: bool = False):
    task = None if operators is None else _seed(operators)
    return steering.Written(prompt, reason, repeat, operators, task, [1, 2], [3, 4])


def test_the_measure_counts_new_outputs_at_the_target_and_copies_apart(steering) -> None:
    written = [
        _written(steering, 0, 3),  # new, at the target
        _written(steering, 0, 3, repeat=True),  # the same output again in this call: a copy
        _written(steering, 0, 3, reason="duplicate"),  # a copy of a seed or a training output
        _written(steering, 0, None, reason="bad_expression"),
        _written(steering, 1, 2),
        _written(steering, 1, 4, reason="duplicate"),
    ]
    m = steering.measured(written, 2, [3, 4])
    assert m.valid == [0.75, 1.0]
    assert m.copies == [0.5, 0.5]
    assert m.at == {3: [0.25, 0.0], 4: [0.0, 0.0]}
    assert m.operators == [3.0, 2.0]


def test_the_bar_needs_the_target_up_beyond_its_interval_validity_kept_and_the_placebo_beaten(steering) -> None:
    change = steering.Change
    up, valid = change(0.05, 0.25, 0.05, 0.3), change(0.5, 0.48, -0.1, 0.05)
    assert steering.passes(up, valid, change(0.1, 0.25, 0.02, 0.3))
    assert not steering.passes(up, valid, change(0.2, 0.25, -0.1, 0.2))  # not beyond the placebo
    assert not steering.passes(up, change(0.5, 0.4, -0.2, 0.0), change(0.1, 0.25, 0.02, 0.3))  # validity lost
    assert not steering.passes(change(0.05, 0.25, -0.01, 0.4), valid, change(0.1, 0.25, 0.02, 0.3))  # interval


def _settings(steering, rescore: bool = False, min_records: int = 1):
    return steering.settings_from(
        steering.argparse.Namespace(
            smoke=True,
            rounds=2,
            prompts=2,
            variations=2,
            rollouts=8,
            confirm_rollouts=0,
            confirm_margin=0.25,
            eval_samples=2,
            lr=1e-3,
            kl=0.0,
            epochs=1,
            minibatch=8,
            max_records=64,
            reward="alpha_curriculum",
            beta=2.0,
            rwr_lambda=1.0,
            invalid_advantage=-1.0,
            rescore=rescore,
            min_records=min_records,
        ),
        steering.GenEnvConfig(),
    )


@pytest.mark.parametrize(("arm", "pooled"), [("rwr-oracle", [3]), ("placebo", [2, 3])])
def test_rwr_arms_pool_what_their_reward_admits_once_each(steering, tiny_model_dir: Path, arm, pooled) -> None:
    """The oracle admits only the output the agent solves half the time (3 operators), the placebo every new valid
    one; copies and rejected outputs never enter, and a pooled output written again is not pooled twice."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    trainer = steering.Trainer(steering.ARMS[arm], _settings(steering), ARITHMETIC, 0)
    prompts = [ARITHMETIC.simulator_messages(_seed(1), 0.9)] * 2
    written = [
        _written(steering, 0, 3),
        _written(steering, 1, 2),
        _written(steering, 0, 4, reason="duplicate"),
        _written(steering, 1, None, reason="bad_expression"),
    ]
    curve = steering.CURVES["base"]
    for round_ in range(2):
        trainer.round(policy, written, prompts, curve, round_, random.Random(0))
    assert sorted(trainer.pool) == sorted(ARITHMETIC.dedup_key(_seed(ops)) for ops in pooled)


def test_rescoring_takes_a_record_the_agent_outgrew_out_of_the_draw_and_keeps_it(
    steering, tiny_model_dir: Path
) -> None:
    """With --rescore, a record admitted at 3 operators is re-read when the agent gets better (3 operators now solved
    80% of the time): it stays pooled but is not trained on, while a new 4-operator record is; without --rescore the
    outgrown record keeps training the simulator."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    prompts = [ARITHMETIC.simulator_messages(_seed(1), 0.9)] * 2
    base, better = steering.CURVES["base"], steering.CURVES["better"]
    trained = {}
    for rescore in (True, False):
        trainer = steering.Trainer(steering.ARMS["rwr-oracle"], _settings(steering, rescore), ARITHMETIC, 0)
        trainer.round(policy, [_written(steering, 0, 3)], prompts, base, 0, random.Random(0))
        trained[rescore] = trainer.round(policy, [_written(steering, 1, 4)], prompts, better, 1, random.Random(0))
        assert len(trainer.pool) == 2
    assert "trained on 1 (by operators {4: 1})" in trained[True] and "1 p̂ re-read" in trained[True]
    assert "trained on 2 (by operators {3: 1, 4: 1})" in trained[False]


def test_the_steering_bench_runs_every_arm_and_the_shift(tiny_model_dir: Path) -> None:
    arms = "grpo-shipped,grpo-oracle,rwr-shipped,rwr-oracle,placebo"
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--smoke",
            "--model",
            str(tiny_model_dir),
            "--arms",
            arms,
            "--bench-seeds",
            "2",
            "--shift",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    number, moved = r"(\d\.\d{3}|nan)", r"([+-]\d\.\d{3}|\+?nan)"
    share = rf"{number} -> {number} \({moved} \[{moved}, {moved}\]\)"
    for arm in arms.split(","):
        line = rf"^{arm}\s+valid {share} \| copies {share} \| new at target {share} \| beyond placebo .* the bar"
        assert re.search(line, out, re.M), out
    assert re.search(rf"^  end\s+new at 3 {share} \| new at 4 {share}$", out, re.M), out
    assert "end against midway: new at 4" in out and out.rstrip().splitlines()[-1].startswith("total")


def test_rwr_waits_for_min_records_drawable(steering, tiny_model_dir: Path) -> None:
    """--min-records (the flow's simulator_min_records): one pooled record is not trained on when two are asked for."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    prompts = [ARITHMETIC.simulator_messages(_seed(1), 0.9)] * 2
    base = steering.CURVES["base"]
    for wanted, trained in ((2, "1 drawable: waits for 2"), (1, "trained on 1")):
        trainer = steering.Trainer(steering.ARMS["rwr-oracle"], _settings(steering, min_records=wanted), ARITHMETIC, 0)
        assert trained in trainer.round(policy, [_written(steering, 0, 3)], prompts, base, 0, random.Random(0))
