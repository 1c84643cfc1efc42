"""Does the simulator's update steer? The project's simulator (the embedded model, warm-started on the arithmetic
domain as generation 0 does) writes problems for a scripted agent whose success falls with a problem's operator
count along a known curve, and learns from its rewards with the flow's own functions (simulator_advantages,
grpo_update). Three arms from one warm start, on the same prompts and sampling seeds:

- shipped: p̂ from `--rollouts` draws of the scripted agent, the configured generator reward;
- oracle:  the reward of the agent's true success rate (no sampling noise in p̂);
- placebo: every valid problem rewarded alike (validity only).

Before and after, each arm writes `--eval-samples` problems for every prompt: the valid share, the share of outputs
that are valid AND at the difficulty whose success is α (the target), and the valid problems' mean operator count,
each with a 95% interval clustered by prompt (prompts resampled, paired before/after). A second run (`--shift`)
makes the agent better halfway: the target should move with it.

    python bench/steering.py [--rounds 6] [--prompts 12] [--lr 1e-4] [--reward alpha_curriculum] [--beta 2]
        [--shift] [--smoke --model DIR]

Pass (issue 46): shipped raises the target share by at least 15 points beyond its interval with the valid share
within 10 points, and placebo moves it by less than 5. If oracle passes and shipped fails, the reward is the
problem; if both fail, the budget or the model's capacity is.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from genenv.config import GenEnvConfig
from genenv.curriculum.batches import simulator_advantages
from genenv.curriculum.generator_rewards import GENERATOR_REWARDS, CurriculumParams
from genenv.domains.base import TaskInstance, ValidationContext, get_domain
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import encode_example, weighted_sft
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend
from genenv.tasks.warm_start import sibling_pairs

CURVES = {"base": {1: 0.95, 2: 0.8, 3: 0.5, 4: 0.2}, "better": {1: 0.99, 2: 0.95, 3: 0.8, 4: 0.5}}
"""The scripted agent's success by operator count: α = 0.5 sits at 3 operators, then, better, at 4."""
ARMS = ("shipped", "oracle", "placebo")


@dataclass(frozen=True)
class Settings:
    rounds: int
    prompts: int
    variations: int
    rollouts: int
    eval_samples: int
    lr: float
    kl_coef: float
    epochs: int
    minibatch: int
    reward: str
    params: CurriculumParams
    invalid_advantage: float
    temperature: float
    top_p: float
    max_new_tokens: int


@dataclass(frozen=True)
class Written:
    """One output: its prompt, and its operator count when valid (None when rejected or a repeat)."""

    prompt: int
    difficulty: int | None
    repeat: bool
    prompt_ids: list[int]
    completion_ids: list[int]


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
    """`samples` outputs per prompt, parsed and validated as the generate stage does: a duplicate of `seen` (earlier
    rounds) is rejected, a repeat within this call shares its first copy's verdict; `seen` grows with this call's."""
    sampling = SamplingSettings(s.max_new_tokens, s.temperature, s.top_p, seed)
    conversations = [p for p in prompts for _ in range(samples)]
    completions = TransformersBackend(policy).generate("simulator", conversations, sampling)
    context = ValidationContext(seen_keys=set(seen))
    written, this_call = [], {}
    for index, completion in enumerate(completions):
        i = index // samples
        candidate = domain.parse_candidate(completion.text, seeds[i], f"w{index}", not completion.finished)
        candidate = domain.validate(candidate, context)
        difficulty, repeat = None, False
        if candidate.valid:
            key = domain.dedup_key(candidate.task)
            repeat = key in this_call
            difficulty = this_call.setdefault(key, int(domain.difficulty(candidate.task)))
        written.append(Written(i, difficulty, repeat, completion.prompt_ids, completion.completion_ids))
    seen |= set(this_call)
    return written


def rewarded(written: list[Written], arm: str, curve: dict[int, float], rng: random.Random, s: Settings) -> list:
    """Each output's reward (None when rejected): the arm's reading of the scripted agent's success."""
    reward = GENERATOR_REWARDS[s.reward]
    out = []
    for w in written:
        if w.difficulty is None:
            out.append(None)
        elif arm == "placebo":
            out.append(1.0)
        elif arm == "oracle":
            out.append(reward(curve[w.difficulty], s.params))
        else:
            p_hat = sum(rng.random() < curve[w.difficulty] for _ in range(s.rollouts)) / s.rollouts
            out.append(reward(p_hat, s.params))
    return out


def train_round(policy, domain, seeds, prompts, arm, curve, round_, s: Settings, seen, rng) -> str:
    """One round: write, reward, one GRPO update; returns what it trained on (outputs and the mean advantage by
    operator count, the rejected ones as 'x')."""
    written = write(policy, domain, seeds, prompts, s.variations, 1000 + round_, s, seen)
    rewards = rewarded(written, arm, curve, rng, s)
    groups = [str(w.prompt) for w in written]
    advantages = simulator_advantages(groups, rewards, s.invalid_advantage)
    by_kind: dict[str, list[float]] = {}
    for w, advantage in zip(written, advantages, strict=True):
        by_kind.setdefault("x" if w.difficulty is None else str(w.difficulty), []).append(advantage)
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
        seed=round_,
        temperature=s.temperature,
        advantages=advantages,
    )
    return " ".join(f"{kind}: {len(a)} ({sum(a) / len(a):+.2f})" for kind, a in sorted(by_kind.items()))


@dataclass(frozen=True)
class Paired:
    """A share (or mean) before and after, and the paired difference's 95% interval, prompts resampled as clusters."""

    before: float
    after: float
    low: float
    high: float

    @property
    def moved(self) -> float:
        return self.after - self.before

    def __str__(self) -> str:
        return f"{self.before:.3f} -> {self.after:.3f} ({self.moved:+.3f} [{self.low:+.3f}, {self.high:+.3f}])"


def paired(before: list[list[float]], after: list[list[float]], resamples: int = 2000) -> Paired:
    clusters = [(b, a) for b, a in zip(before, after, strict=True) if b and a]
    if not clusters:
        return Paired(float("nan"), float("nan"), float("nan"), float("nan"))

    def means(chosen: list[tuple[list[float], list[float]]]) -> tuple[float, float]:
        b = [v for pair in chosen for v in pair[0]]
        a = [v for pair in chosen for v in pair[1]]
        return sum(b) / len(b), sum(a) / len(a)

    rng = random.Random(0)
    moved = sorted(
        after - before for before, after in (means(rng.choices(clusters, k=len(clusters))) for _ in range(resamples))
    )
    return Paired(*means(clusters), moved[int(0.025 * resamples)], moved[int(0.975 * resamples) - 1])


def warm_started(
    base: Path, domain, seeds, lora: LoraSettings, precision: str, epochs: int, folder: Path, examples: int
) -> None:
    """Generation 0's simulator warm start (tasks/warm_start.py's sibling pairs, its SFT) on `examples` seeds (0: all),
    saved to `folder`."""
    policy = PolicyPair.load(base, lora, precision=precision)
    config = GenEnvConfig()
    chosen = seeds[:examples] if examples else seeds
    pairs = sibling_pairs(domain, seeds, chosen, random.Random(0), config.alpha, config.k_min)
    examples = [
        encode_example(
            policy.tokenizer,
            domain.simulator_messages(seed, rate, config.alpha, config.k_min),
            domain.simulator_target(sibling),
        )
        for seed, sibling, rate in pairs
    ]
    weighted_sft(policy, "simulator", examples, lr=1e-3, kl_coef=0.0, epochs=epochs, batch_size=4, persist=False)
    policy.save_adapter("simulator", folder)


@dataclass(frozen=True)
class Bench:
    """What every arm starts from: the base model, the warm-started simulator adapter, the prompts' seeds."""

    base: Path
    adapter: Path
    lora: LoraSettings
    precision: str
    domain: object
    seeds: list[TaskInstance]
    targets: list[int]
    settings: Settings
    verbose: bool = False

    def measure(self, policy: PolicyPair, curve: dict[int, float]) -> dict[str, list[list[float]]]:
        """Per prompt: each output's valid flag, at-target flags (one per target), valid outputs' difficulty."""
        prompts = prompts_for(self.domain, self.seeds, curve, self.settings)
        written = write(policy, self.domain, self.seeds, prompts, self.settings.eval_samples, 7, self.settings, set())
        measured: dict[str, list[list[float]]] = {"valid": [], "difficulty": []} | {f"at {t}": [] for t in self.targets}
        for i in range(len(prompts)):
            mine = [w for w in written if w.prompt == i]
            measured["valid"].append([float(w.difficulty is not None) for w in mine])
            measured["difficulty"].append([float(w.difficulty) for w in mine if w.difficulty is not None])
            for t in self.targets:
                measured[f"at {t}"].append([float(w.difficulty == t) for w in mine])
        return measured

    def run(self, arm: str, curves: list[dict[int, float]]) -> list[dict[str, list[list[float]]]]:
        """One arm trained from the warm start, `rounds` rounds split evenly over `curves` (the agent changing),
        measured at the end of each curve's rounds."""
        adapters = {"simulator": self.adapter}
        policy = PolicyPair.load(self.base, self.lora, adapters=adapters, references=adapters, precision=self.precision)
        seen = {self.domain.dedup_key(t) for t in self.seeds}
        rng = random.Random(arm)
        measured = []
        for phase, curve in enumerate(curves):
            prompts = prompts_for(self.domain, self.seeds, curve, self.settings)
            for round_ in range(self.settings.rounds // len(curves)):
                round_seed = phase * 100 + round_
                trained = train_round(
                    policy, self.domain, self.seeds, prompts, arm, curve, round_seed, self.settings, seen, rng
                )
                if self.verbose:
                    print(f"  {arm} round {round_seed}: {trained}", flush=True)
            measured.append(self.measure(policy, curve))
        return measured


def passes(target: Paired, valid: Paired) -> bool:
    """Issue 46's bar: the target share up by at least 15 points beyond its interval, the valid share within 10."""
    return target.moved >= 0.15 and target.low > 0 and abs(valid.moved) <= 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=Path("data") / "models", help="model cache folder")
    parser.add_argument("--model", type=Path, help="a local model folder instead of the embedded model")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--variations", type=int, default=4)
    parser.add_argument("--rollouts", type=int, default=GenEnvConfig.p_hat_rollouts)
    parser.add_argument("--eval-samples", type=int, default=8)
    parser.add_argument("--lr", type=float, default=GenEnvConfig.simulator_lr)
    parser.add_argument("--kl", type=float, default=GenEnvConfig.simulator_kl_coef)
    parser.add_argument("--epochs", type=int, default=GenEnvConfig.simulator_epochs)
    parser.add_argument("--minibatch", type=int, default=GenEnvConfig.simulator_minibatch_size)
    parser.add_argument("--reward", default=GenEnvConfig.generator_reward)
    parser.add_argument("--beta", type=float, default=GenEnvConfig.beta)
    parser.add_argument("--invalid-advantage", type=float, default=GenEnvConfig.simulator_invalid_advantage)
    parser.add_argument("--warm-start-epochs", type=int, default=3)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--shift", action="store_true", help="also run shipped with the agent getting better halfway")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for the test suite")
    parser.add_argument("--verbose", action="store_true", help="print what each round trains on")
    args = parser.parse_args()
    started = time.perf_counter()
    config = GenEnvConfig()
    small = args.smoke
    settings = Settings(
        rounds=2 if small else args.rounds,
        prompts=2 if small else args.prompts,
        variations=2 if small else args.variations,
        rollouts=args.rollouts,
        eval_samples=2 if small else args.eval_samples,
        lr=args.lr,
        kl_coef=args.kl,
        epochs=args.epochs,
        minibatch=args.minibatch,
        reward=args.reward,
        params=CurriculumParams(config.alpha, args.beta, config.k_min, config.rwr_lambda),
        invalid_advantage=args.invalid_advantage,
        temperature=0.7,
        top_p=0.9,
        max_new_tokens=8 if small else 64,
    )
    domain = get_domain("arithmetic")
    all_seeds = domain.load_seeds()
    base = args.model or resolve_base_model(EMBEDDED_MODEL, args.models)
    lora = LoraSettings(r=config.lora_r, alpha=config.lora_alpha, target_modules=config.lora_target_modules)
    precision = "float32" if small else "bfloat16"
    target, better = (target_of(CURVES[name], config.alpha) for name in ("base", "better"))
    with tempfile.TemporaryDirectory() as scratch:
        adapter = Path(scratch) / "simulator"
        epochs, examples = (1, 4) if small else (args.warm_start_epochs, 0)
        warm_started(base, domain, all_seeds, lora, precision, epochs, adapter, examples)
        seeds = random.Random(0).sample(all_seeds, settings.prompts)
        bench = Bench(base, adapter, lora, precision, domain, seeds, [target, better], settings, args.verbose)
        before = bench.measure(
            PolicyPair.load(base, lora, adapters={"simulator": adapter}, precision=precision), CURVES["base"]
        )
        print(
            f"{settings.prompts} prompts x {settings.variations} variations, {settings.rounds} rounds of "
            f"{settings.epochs} epoch(s), lr {settings.lr}, KL {settings.kl_coef}, reward {settings.reward} "
            f"(β {settings.params.beta}), invalid advantage {settings.invalid_advantage}, "
            f"p̂ from {settings.rollouts} rollouts; {settings.eval_samples} samples a "
            f"prompt measured; target {target} operators; warm start and first measure "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
        for arm in args.arms.split(","):
            after = bench.run(arm, [CURVES["base"]])[-1]
            valid, at_target = (
                paired(before["valid"], after["valid"]),
                paired(before[f"at {target}"], after[f"at {target}"]),
            )
            print(
                f"{arm:8s} valid {valid} | at target {at_target} | mean operators "
                f"{paired(before['difficulty'], after['difficulty'])} | "
                f"{'passes' if passes(at_target, valid) else 'does not pass'} the bar "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
        if args.shift:
            midway, end = bench.run("shipped", [CURVES["base"], CURVES["better"]])
            print(
                f"shift: shipped, the agent better after {settings.rounds // 2} rounds "
                f"(α moves from {target} to {better} operators)"
            )
            for name, measured in (("midway", midway), ("end", end)):
                print(
                    f"  {name:6s} at {target} {paired(before[f'at {target}'], measured[f'at {target}'])} | "
                    f"at {better} {paired(before[f'at {better}'], measured[f'at {better}'])}"
                )
            print(f"  end against midway: at {better} {paired(midway[f'at {better}'], end[f'at {better}'])}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
