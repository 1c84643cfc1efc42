"""Does the simulator's update steer it towards NEW tasks at the agent's edge? The project's simulator (the embedded
model, warm-started on the arithmetic domain as generation 0 does, its sibling pairs across difficulty levels) writes
problems for a scripted agent whose success falls with a problem's operator count along a known curve, and learns
from its rewards with the flow's own functions. Arms, from one warm start per bench seed, on the same prompts and
sampling seeds:

- grpo-shipped, grpo-oracle: the flow's GRPO update (simulator_advantages, grpo_update) each round;
- rwr-shipped, rwr-oracle:   the paper's RWR (Algorithm 1): the in-band outputs join a deduplicated pool D_env across
                             rounds, and each round fine-tunes on it, w ∝ exp(λ R_env) (weighted_sft);
- placebo:                   the same fine-tuning on every valid output with equal weights (validity only).

shipped reads p̂ from `--rollouts` draws of the scripted agent, and `--confirm-rollouts` more where the first p̂ lies
within `--confirm-margin` of α (the flow's p_hat_confirm_rollouts); oracle reads the agent's true success rate.

Honest measure: before and after, each arm writes `--eval-samples` problems for every prompt. A valid output that
copies a seed, an output the arm trained on or an earlier output of the same measure is a copy, reported apart and
never counted at the target. Reported: the valid share, the copy share, the share of outputs that are NEW, valid and
at the difficulty whose success is α (the target), and the new valid problems' mean operator count; each change with a
95% interval from a hierarchical bootstrap over bench seeds, then prompts (paired before/after), and each arm's change
beyond the placebo's.

    python bench/steering.py [--arms rwr-shipped,rwr-oracle,placebo] [--bench-seeds 3] [--rounds 6] [--prompts 12]
        [--variations 8] [--lr 1e-3] [--min-records 1] [--rescore] [--shift] [--smoke --model DIR]

Pass (issue 52), for the update the flow ships with the shipped reward: new outputs at the target up by at least 15
points beyond the interval, the valid share not down by more than 5 points, and at least 10 points beyond the placebo's
change. `--shift` makes the agent better halfway: the new-at-target share should move to the new target.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genenv.config import GenEnvConfig
from genenv.curriculum.batches import simulator_advantages
from genenv.curriculum.generator_rewards import GENERATOR_REWARDS, CurriculumParams, in_band, near_band, rwr_weights
from genenv.domains.base import TaskInstance, ValidationContext, get_domain
from genenv.evaluation.bootstrap import seeds_and_items
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.precision import resolve_precision
from genenv.models.rwr import WeightedExample, encode_example, weighted_sft
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend
from genenv.tasks.warm_start import sibling_pairs

CURVES = {"base": {1: 0.95, 2: 0.8, 3: 0.5, 4: 0.2}, "better": {1: 0.99, 2: 0.95, 3: 0.8, 4: 0.5}}
"""The scripted agent's success by operator count: α = 0.5 sits at 3 operators, then, better, at 4."""


@dataclass(frozen=True)
class Arm:
    update: str
    """grpo (this round's outputs, advantages within each prompt) or rwr (weighted SFT on the pooled records)."""
    reward: str
    """shipped (p̂ sampled from the scripted agent), oracle (its true success) or placebo (every valid output alike)."""


ARMS = {
    "grpo-shipped": Arm("grpo", "shipped"),
    "grpo-oracle": Arm("grpo", "oracle"),
    "rwr-shipped": Arm("rwr", "shipped"),
    "rwr-oracle": Arm("rwr", "oracle"),
    "placebo": Arm("rwr", "placebo"),
}
SHIPPED = "rwr-shipped"
"""The arm whose update and reward the flow ships (configs/laptop.yaml: simulator_update rwr)."""


@dataclass(frozen=True)
class Settings:
    rounds: int
    prompts: int
    variations: int
    rollouts: int
    confirm_rollouts: int
    confirm_margin: float
    eval_samples: int
    lr: float
    kl_coef: float
    epochs: int
    minibatch: int
    max_records: int
    reward: str
    params: CurriculumParams
    invalid_advantage: float
    temperature: float
    top_p: float
    max_new_tokens: int
    min_records: int = 1
    """RWR trains only on a draw from at least this many drawable records (the flow's simulator_min_records)."""
    rescore: bool = False
    """Each round, re-read every pooled record's p̂ from the current agent (as it was admitted: rollouts, then
    confirmation): a record out of the band stays pooled but leaves the draw until it is back in."""


@dataclass(frozen=True)
class Written:
    """One output: its prompt, why it was rejected (None: valid and new; "duplicate": valid but a copy of something
    seen), whether it repeats a valid output of the same call, its operator count and task when it parses."""

    prompt: int
    reason: str | None
    repeat: bool
    difficulty: int | None
    task: TaskInstance | None
    prompt_ids: list[int]
    completion_ids: list[int]

    @property
    def valid(self) -> bool:
        return self.task is not None and self.reason in (None, "duplicate")

    @property
    def new(self) -> bool:
        """Valid, and no copy of a seed, an earlier output or another output of this call."""
        return self.reason is None and self.task is not None and not self.repeat


def target_of(curve: dict[int, float], alpha: float) -> int:
    return min(curve, key=lambda ops: abs(curve[ops] - alpha))


def prompts_for(domain, seeds: list[TaskInstance], curve: dict[int, float], s: Settings) -> list[list[dict]]:
    """One prompt per seed, its hint the agent's success on the seed's operator count (as the flow's per-family
    hint converges to)."""
    return [
        domain.simulator_messages(seed, curve[int(domain.difficulty(seed))], s.params.alpha, s.params.k_min)
        for seed in seeds
    ]


def write(policy, domain, seeds, prompts, samples: int, seed: int, s: Settings, seen: set[str]) -> list[Written]:
    """`samples` outputs per prompt, parsed and validated as the generate stage does: a copy of `seen` is rejected as
    a duplicate, a repeat within this call is marked; `seen` is not changed."""
    sampling = SamplingSettings(s.max_new_tokens, s.temperature, s.top_p, seed)
    conversations = [p for p in prompts for _ in range(samples)]
    completions = TransformersBackend(policy).generate("simulator", conversations, sampling)
    context = ValidationContext(seen_keys=set(seen))
    written, this_call = [], set()
    for index, completion in enumerate(completions):
        i = index // samples
        candidate = domain.parse_candidate(completion.text, seeds[i], f"w{index}", not completion.finished)
        candidate = domain.validate(candidate, context)
        task, repeat = candidate.task, False
        if task is not None and candidate.reject_reason is None:
            key = domain.dedup_key(task)
            repeat = key in this_call
            this_call.add(key)
        difficulty = int(domain.difficulty(task)) if task is not None else None
        written.append(
            Written(
                i, candidate.reject_reason, repeat, difficulty, task, completion.prompt_ids, completion.completion_ids
            )
        )
    return written


def estimated_success(difficulty: int, arm: Arm, curve: dict[int, float], rng: random.Random, s: Settings) -> float:
    """The arm's p̂ of a valid output: the agent's true success (oracle), or the share of sampled rollouts solved, with
    `confirm_rollouts` more where the first estimate is near α (shipped)."""
    if arm.reward == "oracle":
        return curve[difficulty]
    solved = sum(rng.random() < curve[difficulty] for _ in range(s.rollouts))
    if s.confirm_rollouts and near_band(solved / s.rollouts, s.params.alpha, s.confirm_margin):
        more = sum(rng.random() < curve[difficulty] for _ in range(s.confirm_rollouts))
        return (solved + more) / (s.rollouts + s.confirm_rollouts)
    return solved / s.rollouts


@dataclass
class Trainer:
    """One arm's simulator update across rounds: GRPO on each round's outputs, or RWR on the pool it keeps."""

    arm: Arm
    settings: Settings
    domain: object
    seed: int
    pool: dict[str, tuple[WeightedExample, float, int]] = field(default_factory=dict)
    """RWR's D_env: dedup key -> (the record, its R_env, its operator count); copies never enter (the writer rejects
    them)."""
    rescored: int = 0
    """p̂ estimates spent re-reading pooled records (`Settings.rescore`)."""

    def round(self, policy, written: list[Written], prompts, curve, round_: int, rng: random.Random) -> str:
        s = self.settings
        reward = GENERATOR_REWARDS[s.reward]
        p_hats = [
            estimated_success(w.difficulty, self.arm, curve, rng, s) if w.new and w.difficulty is not None else None
            for w in written
        ]
        if self.arm.update == "grpo":
            return self._grpo(policy, written, [None if p is None else reward(p, s.params) for p in p_hats], round_)
        drawable = self._rescored(curve, rng) if s.rescore else list(self.pool)
        for w, p_hat in zip(written, p_hats, strict=True):
            admitted = p_hat is not None and (self.arm.reward == "placebo" or in_band(p_hat, s.params))
            key = self.domain.dedup_key(w.task) if admitted else None
            if key is not None and key not in self.pool:
                example = encode_example(policy.tokenizer, prompts[w.prompt], self.domain.simulator_target(w.task))
                self.pool[key] = (example, reward(p_hat, s.params), w.difficulty)
                drawable.append(key)
        return self._rwr(policy, round_, sorted(drawable))

    def _rescored(self, curve: dict[int, float], rng: random.Random) -> list[str]:
        """The records pooled in earlier rounds that are still in the band by a fresh p̂ from the current agent, each
        with its new R_env (the placebo keeps every record: it has no band)."""
        if self.arm.reward == "placebo":
            return list(self.pool)
        s, reward, drawable = self.settings, GENERATOR_REWARDS[self.settings.reward], []
        for key in sorted(self.pool):
            example, _, difficulty = self.pool[key]
            p_hat = estimated_success(difficulty, self.arm, curve, rng, s)
            self.rescored += 1
            self.pool[key] = (example, reward(p_hat, s.params), difficulty)
            if in_band(p_hat, s.params):
                drawable.append(key)
        return drawable

    def _grpo(self, policy, written: list[Written], rewards: list[float | None], round_: int) -> str:
        s = self.settings
        groups = [str(w.prompt) for w in written]
        advantages = simulator_advantages(groups, rewards, s.invalid_advantage)
        samples = [
            GroupSample(w.prompt_ids, w.completion_ids, r or 0.0, g)
            for w, r, g in zip(written, rewards, groups, strict=True)
        ]
        grpo_update(
            policy,
            "simulator",
            samples,
            lr=s.lr,
            kl_coef=s.kl_coef,
            epochs=s.epochs,
            minibatch_size=s.minibatch,
            micro_batch_size=8,
            seed=self.seed * 1000 + round_,
            temperature=s.temperature,
            advantages=advantages,
        )
        return f"{sum(r is not None for r in rewards)} rewarded of {len(written)}"

    def _rwr(self, policy, round_: int, drawable: list[str]) -> str:
        """Weighted SFT on a draw of at most max_records of the drawable pool records, w ∝ exp(λ R_env) (placebo: all
        alike)."""
        s = self.settings
        if len(drawable) < max(s.min_records, 1):
            return f"pool {len(self.pool)}, {len(drawable)} drawable: waits for {s.min_records}"
        chosen = random.Random(f"{self.seed}/{round_}").sample(drawable, min(s.max_records, len(drawable)))
        records = [self.pool[key] for key in chosen]
        weights = (
            [1.0] * len(records) if self.arm.reward == "placebo" else rwr_weights([r for _, r, _ in records], s.params)
        )
        examples = [
            WeightedExample(e.prompt_ids, e.target_ids, w) for (e, _, _), w in zip(records, weights, strict=True)
        ]
        weighted_sft(
            policy,
            "simulator",
            examples,
            lr=s.lr,
            kl_coef=s.kl_coef,
            epochs=s.epochs,
            batch_size=8,
            seed=self.seed * 1000 + round_,
        )
        by_operators = dict(sorted(Counter(self.pool[key][2] for key in chosen).items()))
        return f"pool {len(self.pool)}, trained on {len(examples)} (by operators {by_operators})" + (
            f", {self.rescored} p̂ re-read so far" if s.rescore else ""
        )


def share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else float("nan")


@dataclass(frozen=True)
class Measured:
    """Per prompt: the share of its outputs that are valid, copies, new at each target; and the mean operator count of
    its new valid outputs (nan without one)."""

    valid: list[float]
    copies: list[float]
    at: dict[int, list[float]]
    operators: list[float]


def measured(written: list[Written], prompts: int, targets: list[int]) -> Measured:
    mine = [[w for w in written if w.prompt == i] for i in range(prompts)]
    return Measured(
        [share([w.valid for w in m]) for m in mine],
        [share([w.valid and not w.new for w in m]) for m in mine],
        {t: [share([w.new and w.difficulty == t for w in m]) for m in mine] for t in targets},
        [float(np.mean([w.difficulty for w in m if w.new])) if any(w.new for w in m) else float("nan") for m in mine],
    )


@dataclass(frozen=True)
class Change:
    """The mean over bench seeds and prompts before and after, and the change's hierarchical 95% interval."""

    before: float
    after: float
    low: float
    high: float

    @property
    def moved(self) -> float:
        return self.after - self.before

    def __str__(self) -> str:
        return f"{self.before:.3f} -> {self.after:.3f} ({self.moved:+.3f} [{self.low:+.3f}, {self.high:+.3f}])"


def change(before: list[list[float]], after: list[list[float]]) -> Change:
    """[bench seeds][prompts] before and after: prompts without a value on either side (no new valid output, for the
    operator count) are left out of every seed, so the seeds stay paired."""
    b, a = np.array(before, dtype=float), np.array(after, dtype=float)
    kept = ~(np.isnan(b).any(axis=0) | np.isnan(a).any(axis=0))
    if not kept.any():
        return Change(float("nan"), float("nan"), float("nan"), float("nan"))
    b, a = b[:, kept], a[:, kept]
    interval = seeds_and_items([a - b])
    return Change(float(b.mean()), float(a.mean()), interval.low, interval.high)


def passes(at_target: Change, valid: Change, beyond_placebo: Change | None) -> bool:
    """Issue 52's bar: new outputs at the target up at least 15 points beyond the interval, the valid share down by
    at most 5, and at least 10 points beyond the placebo's change."""
    beyond = beyond_placebo is not None and beyond_placebo.moved >= 0.10 and beyond_placebo.low > 0
    return at_target.moved >= 0.15 and at_target.low > 0 and valid.moved >= -0.05 and beyond


@dataclass(frozen=True)
class Bench:
    """What every arm of one bench seed starts from: the base model, the warm-started simulator adapter, the prompts."""

    base: Path
    adapter: Path
    lora: LoraSettings
    precision: str
    domain: object
    all_seeds: list[TaskInstance]
    seeds: list[TaskInstance]
    targets: list[int]
    settings: Settings
    seed: int
    verbose: bool = False

    def policy(self) -> PolicyPair:
        adapters = {"simulator": self.adapter}
        return PolicyPair.load(self.base, self.lora, adapters=adapters, references=adapters, precision=self.precision)

    def measure(self, policy: PolicyPair, curve: dict[int, float], seen: set[str]) -> Measured:
        prompts = prompts_for(self.domain, self.seeds, curve, self.settings)
        written = write(
            policy,
            self.domain,
            self.seeds,
            prompts,
            self.settings.eval_samples,
            self.seed * 7919 + 7,
            self.settings,
            seen,
        )
        return measured(written, len(prompts), self.targets)

    def seen_at_start(self) -> set[str]:
        return {self.domain.dedup_key(t) for t in self.all_seeds}

    def run(self, name: str, curves: list[dict[int, float]]) -> list[Measured]:
        """One arm trained from the warm start, `rounds` rounds split evenly over `curves` (the agent changing),
        measured at the end of each curve's rounds against everything it saw (seeds and every output it wrote)."""
        policy, trainer = self.policy(), Trainer(ARMS[name], self.settings, self.domain, self.seed)
        seen, rng = self.seen_at_start(), random.Random(f"{name}/{self.seed}")
        out = []
        for phase, curve in enumerate(curves):
            prompts = prompts_for(self.domain, self.seeds, curve, self.settings)
            for round_ in range(self.settings.rounds // len(curves)):
                number = phase * 100 + round_
                written = write(
                    policy,
                    self.domain,
                    self.seeds,
                    prompts,
                    self.settings.variations,
                    self.seed * 7919 + 1000 + number,
                    self.settings,
                    seen,
                )
                seen |= {self.domain.dedup_key(w.task) for w in written if w.new}
                trained = trainer.round(policy, written, prompts, curve, number, rng)
                if self.verbose:
                    counts = {d: sum(w.new and w.difficulty == d for w in written) for d in (1, 2, 3, 4)}
                    print(f"  seed {self.seed} {name} round {number}: new by operators {counts}; {trained}", flush=True)
            out.append(self.measure(policy, curve, seen))
        return out


def warm_started(
    base: Path, domain, seeds, lora: LoraSettings, precision: str, epochs: int, folder: Path, examples: int, seed: int
) -> None:
    """Generation 0's simulator warm start (tasks/warm_start.py's sibling pairs, its SFT) on `examples` seeds (0: all),
    its pairs and order drawn from `seed`, saved to `folder`."""
    policy = PolicyPair.load(base, lora, precision=precision)
    config = GenEnvConfig()
    chosen = seeds[:examples] if examples else seeds
    pairs = sibling_pairs(domain, seeds, chosen, random.Random(seed), config.alpha, config.k_min)
    examples_ = [
        encode_example(
            policy.tokenizer,
            domain.simulator_messages(seed_task, rate, config.alpha, config.k_min),
            domain.simulator_target(sibling),
        )
        for seed_task, sibling, rate in pairs
    ]
    weighted_sft(
        policy, "simulator", examples_, lr=1e-3, kl_coef=0.0, epochs=epochs, batch_size=4, seed=seed, persist=False
    )
    policy.save_adapter("simulator", folder)


def report(
    name: str, before: list[Measured], after: list[Measured], placebo: list[Measured] | None, target: int, t0: float
) -> str:
    """One arm's line, pooled over the bench seeds."""

    def over(ms: list[Measured], pick: Callable[[Measured], list[float]]) -> list[list[float]]:
        return [pick(m) for m in ms]

    valid = change(over(before, lambda m: m.valid), over(after, lambda m: m.valid))
    copies = change(over(before, lambda m: m.copies), over(after, lambda m: m.copies))
    at = change(over(before, lambda m: m.at[target]), over(after, lambda m: m.at[target]))
    operators = change(over(before, lambda m: m.operators), over(after, lambda m: m.operators))
    beyond = None
    if placebo is not None and name != "placebo":
        beyond = change(over(placebo, lambda m: m.at[target]), over(after, lambda m: m.at[target]))
    verdict = "passes" if passes(at, valid, beyond) else "does not pass"
    beyond_text = f"{beyond.moved:+.3f} [{beyond.low:+.3f}, {beyond.high:+.3f}]" if beyond else "-"
    return (
        f"{name:12s} valid {valid} | copies {copies} | new at target {at} | beyond placebo {beyond_text} | "
        f"mean operators of new {operators} | {verdict} the bar ({time.perf_counter() - t0:.0f} s)"
    )


def settings_from(args: argparse.Namespace, config: GenEnvConfig) -> Settings:
    small = args.smoke
    return Settings(
        rounds=2 if small else args.rounds,
        prompts=2 if small else args.prompts,
        variations=2 if small else args.variations,
        rollouts=args.rollouts,
        confirm_rollouts=args.confirm_rollouts,
        confirm_margin=args.confirm_margin,
        eval_samples=2 if small else args.eval_samples,
        lr=args.lr,
        kl_coef=args.kl,
        epochs=args.epochs,
        minibatch=args.minibatch,
        max_records=args.max_records,
        reward=args.reward,
        params=CurriculumParams(config.alpha, args.beta, config.k_min, args.rwr_lambda),
        invalid_advantage=args.invalid_advantage,
        temperature=0.7,
        top_p=0.9,
        max_new_tokens=8 if small else 64,
        rescore=args.rescore,
        min_records=args.min_records,
    )


def parse_args() -> argparse.Namespace:
    config = GenEnvConfig
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=Path("data") / "models", help="model cache folder")
    parser.add_argument("--model", type=Path, help="a local model folder instead of the embedded model")
    parser.add_argument("--arms", default=f"{SHIPPED},rwr-oracle,placebo", help=f"any of {','.join(ARMS)}")
    parser.add_argument("--bench-seeds", type=int, default=3, help="warm starts and sampling seeds 0..N-1")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--variations", type=int, default=8)
    parser.add_argument("--rollouts", type=int, default=config.p_hat_rollouts)
    parser.add_argument("--confirm-rollouts", type=int, default=config.p_hat_confirm_rollouts)
    parser.add_argument("--confirm-margin", type=float, default=config.p_hat_confirm_margin)
    parser.add_argument("--eval-samples", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--kl", type=float, default=config.simulator_kl_coef)
    parser.add_argument("--epochs", type=int, default=config.simulator_epochs)
    parser.add_argument("--minibatch", type=int, default=config.simulator_minibatch_size)
    parser.add_argument("--max-records", type=int, default=config.simulator_max_records)
    parser.add_argument("--reward", default=config.generator_reward)
    parser.add_argument("--beta", type=float, default=config.beta)
    parser.add_argument("--rwr-lambda", type=float, default=config.rwr_lambda)
    parser.add_argument("--invalid-advantage", type=float, default=config.simulator_invalid_advantage)
    parser.add_argument("--warm-start-epochs", type=int, default=3)
    parser.add_argument("--min-records", type=int, default=config.simulator_min_records)
    parser.add_argument(
        "--rescore", action="store_true", help="re-read each pooled record's p̂ every round; out of the band, not drawn"
    )
    parser.add_argument("--shift", action="store_true", help=f"also run {SHIPPED} with the agent better halfway")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for the test suite")
    parser.add_argument("--verbose", action="store_true", help="print what each round wrote and trained on")
    args = parser.parse_args()
    unknown = set(args.arms.split(",")) - set(ARMS)
    if unknown:
        parser.error(f"unknown arm(s) {sorted(unknown)}: choose from {', '.join(ARMS)}")
    return args


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    config = GenEnvConfig()
    settings = settings_from(args, config)
    arms = args.arms.split(",")
    domain = get_domain("arithmetic")
    all_seeds = domain.load_seeds()
    base = args.model or resolve_base_model(EMBEDDED_MODEL, args.models)
    lora = LoraSettings(r=config.lora_r, alpha=config.lora_alpha, target_modules=config.lora_target_modules)
    precision = "float32" if args.smoke else resolve_precision("auto")
    target, better = (target_of(CURVES[name], config.alpha) for name in ("base", "better"))
    prompt_seeds = random.Random(0).sample(all_seeds, settings.prompts)
    results: dict[str, list[Measured]] = {"before": [], **{arm: [] for arm in arms}}
    shifted: list[list[Measured]] = []
    print(
        f"{settings.prompts} prompts x {settings.variations} variations, {settings.rounds} rounds of {settings.epochs} "
        f"epoch(s), lr {settings.lr}, KL {settings.kl_coef}, reward {settings.reward} (β {settings.params.beta}, λ "
        f"{settings.params.rwr_lambda}), p̂ from {settings.rollouts} rollouts (+{settings.confirm_rollouts} within "
        f"{settings.confirm_margin} of α), at most {settings.max_records} records a round; {settings.eval_samples} "
        f"samples a prompt measured; target {target} operators; {args.bench_seeds} bench seed(s)",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as scratch:
        for bench_seed in range(args.bench_seeds):
            adapter = Path(scratch) / f"simulator-{bench_seed}"
            epochs, examples = (1, 4) if args.smoke else (args.warm_start_epochs, 0)
            warm_started(base, domain, all_seeds, lora, precision, epochs, adapter, examples, bench_seed)
            bench = Bench(
                base,
                adapter,
                lora,
                precision,
                domain,
                all_seeds,
                prompt_seeds,
                [target, better],
                settings,
                bench_seed,
                args.verbose,
            )
            results["before"].append(bench.measure(bench.policy(), CURVES["base"], bench.seen_at_start()))
            first = results["before"][-1]
            print(
                f"  seed {bench_seed} warm start: valid {np.mean(first.valid):.3f}, new at target "
                f"{np.mean(first.at[target]):.3f} ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
            for arm in arms:
                results[arm].append(bench.run(arm, [CURVES["base"]])[-1])
                print(f"  seed {bench_seed} {arm} done ({time.perf_counter() - started:.0f} s)", flush=True)
            if args.shift:
                shifted.append(bench.run(SHIPPED, [CURVES["base"], CURVES["better"]]))
    placebo = results.get("placebo")
    for arm in arms:
        print(report(arm, results["before"], results[arm], placebo, target, started), flush=True)
    if shifted:
        print(
            f"shift: {SHIPPED}, the agent better after {settings.rounds // 2} rounds "
            f"(α moves from {target} to {better})"
        )
        before = results["before"]
        for index, name in enumerate(("midway", "end")):
            at_target = change([m.at[target] for m in before], [s[index].at[target] for s in shifted])
            at_better = change([m.at[better] for m in before], [s[index].at[better] for s in shifted])
            print(f"  {name:6s} new at {target} {at_target} | new at {better} {at_better}")
        moved = change([s[0].at[better] for s in shifted], [s[1].at[better] for s in shifted])
        print(f"  end against midway: new at {better} {moved}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
