"""The one run configuration: typed, documented, validated before any model loads.

Every field's `help` is the documentation: `genenv config` prints it, YAML files and `--set key=value`
overrides fill it, and the resolved config is stored with the run (minus nothing: it holds no secrets).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

import yaml


class ConfigError(ValueError):
    """A config value is wrong; the message names the field."""


REWARD_SCOPES = ("task", "batch")
"""The unit p̂ and R_env are computed over: one generated task's k rollouts, or one seed's n variations."""
SIMULATOR_UPDATES = ("grpo", "rwr")
"""How the simulator learns from its rewards (tasks/simulator_update.py)."""


VLLM_ADAPTER_MODES = ("merged", "lora")
"""How the vllm backend gets a role's adapter (models/vllm.py)."""


@dataclass(frozen=True)
class Placement:
    """Where a run's generation computes (the config's ray_address, rollout_workers, worker_cpus, worker_gpus,
    vllm_gpu_memory_utilization): the invoking command's choice, not the stored config's, since it changes where
    results are made, not what they are."""

    ray_address: str = ""
    rollout_workers: int = 2
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    vllm_gpu_memory_utilization: float = 0.5


def _f(default: Any, help: str, **kwargs: Any) -> Any:
    return field(default=default, metadata={"help": help, **kwargs})


@dataclass(frozen=True)
class GenEnvConfig:
    # --- run ---
    run_name: str = _f("genenv", "Human-readable name; the run id is derived from it and the start time.")
    generations: int = _f(2, "GenEnv generations T after generation 0 (paper: 10 epochs).")
    seed: int = _f(0, "Seed for every random choice (seed batches, sampling, adapter init).")
    data_dir: str = _f("data", "Project data folder: model cache, checkpoints, HF/Prefect homes.")
    warehouse_uri: str = _f("", "Root of the Delta tables; empty means <data_dir>/warehouse.")
    benchmarks_dir: str = _f(
        "",
        "Folder holding API-Bank and Bamboogle (genenv/benchmark_data.py); BFCL comes from the bfcl-eval package. "
        "Tasks are decontaminated against every set present; empty: BFCL only.",
    )
    # --- models ---
    model: str = _f(
        "embedded:smollm2-135m-instruct",
        "Base model of both agent and simulator: 'embedded:smollm2-135m-instruct', a hub id or a local folder.",
    )
    backend: str = _f(
        "transformers",
        "Generation backend (registry in models/backends.py): transformers, or vllm (one engine per run; needs "
        "vLLM installed, see docs/gpu.md).",
    )
    vllm_adapters: str = _f(
        "merged",
        "backend vllm: how a role's adapter reaches the engine. merged: merged into the base weights and pushed "
        "into the running engine after each update; lora: each published adapter folder served as a LoRA request.",
    )
    vllm_gpu_memory_utilization: float = _f(
        0.5,
        "backend vllm on a GPU: the share of the GPU the engine may take (weights and KV cache), leaving the rest "
        "to the trainer beside it (docs/gpu.md). Where results are made, not what they are: outside the hash.",
    )
    precision: str = _f(
        "float32", "Compute precision of forward passes: float32, or bfloat16 (about 2x faster on recent CPUs)."
    )
    generation_batch_size: int = _f(
        16,
        "Rows decoding at once, counted as rows of the longest prompt (shorter prompts fit more); finished rows "
        "make room for queued conversations.",
    )
    lora_r: int = _f(8, "LoRA rank of both adapters.")
    lora_alpha: int = _f(16, "LoRA alpha of both adapters.")
    lora_targets: str = _f(
        "q_proj,v_proj",
        "Layers both adapters adapt: comma-separated module names, or all-linear (every linear layer but the output "
        "layer, as PEFT reads it).",
    )
    # --- domain and seeds ---
    domain: str = _f("tool_call", "Task family (registry in domains/).")
    heldout_fraction: float = _f(0.2, "Share of seeds held out of all training, to measure the agent.")
    max_heldout: int = _f(0, "Cap on held-out seeds evaluated per generation (0 = all).")
    episode_max_turns: int = _f(
        8, "Multi-turn domains (text_game): the agent's turns per episode; a win or a loss ends it sooner."
    )
    show_admissible_commands: bool = _f(
        True, "Multi-turn domains (text_game): list the commands the game accepts after each observation."
    )
    # --- generation 0: warm start ---
    warm_start: bool = _f(True, "SFT both adapters on the seed set first (generation 0), for small models.")
    warm_start_epochs: int = _f(2, "Epochs of warm-start SFT over the seed set.")
    warm_start_examples: int = _f(0, "Cap on warm-start SFT examples per role, drawn from the seeds (0 = all).")
    warm_start_lr: float = _f(3e-4, "Learning rate of the warm-start SFT.")
    # --- simulator: task generation ---
    seeds_per_generation: int = _f(8, "Seed batches per generation (tasks drawn from the seed set and pool).")
    variations_per_seed: int = _f(4, "n: variations the simulator writes per seed (one batch).")
    simulator_max_new_tokens: int = _f(96, "Token cap for one simulator output.")
    simulator_temperature: float = _f(0.9, "Sampling temperature of the simulator.")
    simulator_top_p: float = _f(1.0, "Nucleus sampling of the simulator: sample from this top share of probability.")
    # --- agent: rollouts and verification ---
    rollouts_per_task: int = _f(4, "k: agent answers per fresh task, the GRPO group size.")
    pool_tasks_per_generation: int = _f(8, "Tasks sampled from the pool D_train and rolled out too.")
    agent_max_new_tokens: int = _f(
        128,
        "Token cap for one agent answer, in training and in the held-out measure: BFCL's scoring cap, so training "
        "never rewards an answer the benchmark would see cut off. A single-turn answer that reaches it scores 0.",
    )
    agent_temperature: float = _f(1.0, "Sampling temperature of agent rollouts (held-out eval is greedy).")
    agent_top_p: float = _f(
        1.0, "Nucleus sampling of agent rollouts; a small model sampled from its whole vocabulary writes noise."
    )
    abstention_share: float = _f(
        0.1,
        "Share of the GRPO groups the agent trains on that teach abstaining (tool_call: `[]`), whatever their source: "
        "tasks built by construction each generation (a training request offered functions that cannot serve it, "
        "unrelated or of the same family, or stripped of a required value), simulator-written or pool tasks whose "
        "answer is `[]`. Applied to what is trained, after dynamic sampling. Keeps abstention (BFCL irrelevance) "
        "without teaching it over calls; domains without abstention ignore it.",
    )
    dynamic_sampling: bool = _f(
        True,
        "DAPO's dynamic sampling: GRPO trains only on groups whose rewards differ, and pool and abstention tasks are "
        "drawn and rolled out again until the intended batch is full (every fresh task's count of call groups plus "
        "pool_tasks_per_generation, and their abstention share) or dynamic_sampling_draws rounds are spent; false "
        "trains on every group of one draw.",
    )
    dynamic_sampling_draws: int = _f(
        3, "With dynamic_sampling: rounds of drawing and rolling out at most (the summary line says when it stopped)."
    )
    p_hat_rollouts: int = _f(
        8,
        "Agent rollouts per fresh task that estimate its p̂ (at least rollouts_per_task; 0: rollouts_per_task). GRPO "
        "trains on the first rollouts_per_task of them. With 4, a task the agent solves half the time lands in the "
        "±0.1 band 37.5% of the time; with 8, 27% (p̂ = 0.5 only) but p̂ is resolved to 1/8.",
    )
    solved_threshold: float = _f(0.5, "A trajectory counts as solved when R_agent >= this.")
    agent_wrong_call_reward: float = _f(
        0.0,
        "tool_call: R_agent of an answer to a task that asks for calls which calls the right functions with wrong "
        "arguments (below solved_threshold, so never solved). Above 0 it separates trying from abstaining, which "
        "both score 0 otherwise, so GRPO groups that fail every way still teach calling over `[]`.",
    )
    probe_tasks: int = _f(
        16, "Fresh tasks answered greedily before and after the agent's update, to measure what the update did."
    )
    # --- curriculum (the GenEnv paper, Eqs. 2-3) ---
    generator_reward: str = _f(
        "alpha_curriculum",
        "Simulator reward of a valid task from its p̂ (registry in curriculum/generator_rewards.py): alpha_curriculum "
        "exp(-β(p̂-α)²), alpha_linear 1-|p̂-α|/max(α,1-α), r_zero min(p̂,1-p̂), absolute_zero.",
    )
    reward_scope: str = _f(
        "task",
        "Where p̂ comes from: 'task', each generated task's own k rollouts (the paper's batch read as one task's "
        "group, as the official GenEnv code scores prompts), or 'batch', a seed's n variations together (Eq. 2 "
        "read literally; the band then passed 2 of 48 batches in an 8-generation run). R_env and the α band apply "
        "to the same unit.",
    )
    simulator_training: bool = _f(
        True, "Update the simulator each generation (simulator_update); false freezes it (GenEnv-Random)."
    )
    simulator_update: str = _f(
        "grpo",
        "'grpo': GRPO over this generation's outputs, each seed's n variations a group, R_env per task as the "
        "reward and simulator_invalid_advantage for a rejected output, so the simulator learns which of its "
        "variations land nearer α (R-Zero's generator update); 'rwr': the paper's weighted SFT on D_env with "
        "w ∝ exp(λ R_env) (Alg. 1), which only sees in-band tasks and, with β = 2, weights differing by at most "
        "1.48x. grpo needs reward_scope=task.",
    )
    simulator_invalid_advantage: float = _f(
        -1.0,
        "GRPO advantage of a simulator output the domain rejected (also recorded as its reward). Valid outputs' "
        "advantages are normalised among the valid outputs of their seed's group only, so difficulty, not validity, "
        "decides between valid tasks, and invalidity is a penalty of its own.",
    )
    static_tasks: bool = _f(
        False, "Static augmentation: tasks are written once (generation 1) and every generation reuses that set."
    )
    alpha: float = _f(0.5, "Target success rate α of the α-Curriculum Reward.")
    beta: float = _f(2.0, "Sharpness β of R_env = exp(-β (p̂-α)^2).")
    k_min: float = _f(
        0.1, "Band half-width: units (tasks or batches, reward_scope) with |p̂-α| > k_min stay out of D_env."
    )
    rwr_lambda: float = _f(1.0, "λ of the RWR weights w ∝ exp(λ R_env).")
    # --- updates ---
    agent_lr: float = _f(5e-5, "GRPO learning rate (LoRA).")
    agent_kl_coef: float = _f(
        0.001, "GRPO KL coefficient to the initial agent: its adapter after the warm start (paper: 0.001)."
    )
    agent_replay_rows: int = _f(
        0,
        "Anchor against forgetting: after each GRPO update the agent takes supervised steps on the gold answers of "
        "this many D_train tasks (a quarter of them abstentions where the domain has them), in batches of "
        "train_batch_size, continuing the same AdamW; 0: off.",
    )
    agent_epochs: int = _f(1, "GRPO passes over this generation's rollouts (TRL's num_iterations).")
    agent_minibatch_size: int = _f(
        16, "Rollouts per GRPO optimizer step: a generation makes epochs x ceil(rollouts / this) steps."
    )
    agent_clip_epsilon: float = _f(0.2, "GRPO clip ε of the ratio to the rollout policy (TRL's epsilon).")
    simulator_lr: float = _f(5e-5, "Simulator learning rate (LoRA), either update.")
    simulator_kl_coef: float = _f(
        0.1, "Simulator KL coefficient to the initial simulator: its adapter after the warm start (k3 in GRPO)."
    )
    simulator_epochs: int = _f(
        1, "Simulator passes over its records: this generation's outputs (GRPO) or D_env's (RWR)."
    )
    simulator_minibatch_size: int = _f(8, "Simulator outputs per GRPO optimizer step.")
    simulator_max_records: int = _f(64, "RWR: cap on D_env records the simulator trains on per generation.")
    train_batch_size: int = _f(
        8,
        "Rows per optimizer step in SFT (warm start, RWR); rows of a micro-batch in GRPO, whose step is "
        "agent_minibatch_size rollouts. Either way cut into micro-batches of similar lengths.",
    )
    checkpoint_activations: bool = _f(
        False,
        "Recompute activations in GRPO and SFT backward passes instead of keeping them (gradient checkpointing): "
        "same results, less memory, more time (docs/performance.md, 'Measurements behind the code').",
    )
    # --- where the compute runs (not part of the config hash: results are the same in-process or on a cluster) ---
    ray_address: str = _f(
        "",
        "Ray cluster the stages that generate and train fan out to (docs/scale.md): empty runs them in this process; "
        "'auto' joins the cluster this machine belongs to (`ray start --head`), 'HOST:PORT' or 'ray://HOST:10001' "
        "a remote one, 'local' starts a private one for the run. Needs the ray extra.",
    )
    rollout_workers: int = _f(
        2,
        "With ray_address: Ray actors that generate, each holding the base model (a call's conversations are split "
        "among them in order and gathered back in order), and train as data-parallel ranks.",
    )
    worker_cpus: float = _f(1.0, "With ray_address: CPUs each rollout worker reserves (it runs that many threads).")
    worker_gpus: float = _f(0.0, "With ray_address: GPUs each rollout worker reserves (a fraction shares one).")
    trainer_shards: int = _f(
        1,
        "Planned, not built: GPUs one trainer's weights, adapters and AdamW states are sharded over (FSDP). `genenv "
        "plan` computes its effect on each GPU's memory; a run refuses values above 1 for now (docs/scale.md).",
    )
    vllm_tensor_parallel: int = _f(
        1,
        "Planned, not built: GPUs one vLLM engine's weights and KV cache are split over (tensor parallelism). `genenv "
        "plan` computes its effect on each GPU's memory; a run refuses values above 1 for now (docs/scale.md).",
    )

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):
            value = getattr(self, f.name)
            expected = hints[f.name]
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, f.name, float(value))
            elif not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise ConfigError(f"{f.name}: expected {expected.__name__}, got {value!r}")
        self._check()

    def _check(self) -> None:
        """What the values alone decide; names looked up in a registry are checked by `validate` at entry points."""

        def need(ok: bool, name: str, why: str) -> None:
            require(self, ok, name, why)

        need(self.generations >= 0, "generations", "must be >= 0")
        need(bool(self.run_name.strip()), "run_name", "must not be empty")
        need(0.0 <= self.heldout_fraction < 1.0, "heldout_fraction", "must be in [0, 1)")
        for name in (
            "seeds_per_generation",
            "variations_per_seed",
            "rollouts_per_task",
            "simulator_max_new_tokens",
            "agent_max_new_tokens",
            "generation_batch_size",
            "lora_r",
            "lora_alpha",
            "agent_epochs",
            "agent_minibatch_size",
            "train_batch_size",
            "simulator_max_records",
            "simulator_minibatch_size",
            "episode_max_turns",
            "dynamic_sampling_draws",
            "rollout_workers",
            "trainer_shards",
            "vllm_tensor_parallel",
        ):
            need(getattr(self, name) >= 1, name, "must be >= 1")
        need(self.worker_cpus > 0, "worker_cpus", "must be > 0")
        need(self.worker_gpus >= 0, "worker_gpus", "must be >= 0")
        need(self.precision in ("float32", "bfloat16"), "precision", "must be float32 or bfloat16")
        need(self.vllm_adapters in VLLM_ADAPTER_MODES, "vllm_adapters", f"must be one of {list(VLLM_ADAPTER_MODES)}")
        need(0.0 < self.vllm_gpu_memory_utilization <= 1.0, "vllm_gpu_memory_utilization", "must be in (0, 1]")
        need(all(self.lora_target_modules), "lora_targets", "must name modules, comma-separated, or all-linear")
        need(self.rollouts_per_task >= 2, "rollouts_per_task", "must be >= 2: GRPO learns from differences in a group")
        need(0.0 < self.agent_clip_epsilon < 1.0, "agent_clip_epsilon", "must be in (0, 1)")
        for name in ("agent_top_p", "simulator_top_p"):
            need(0.0 < getattr(self, name) <= 1.0, name, "must be in (0, 1]")
        at_least_zero = (
            "pool_tasks_per_generation",
            "warm_start_epochs",
            "warm_start_examples",
            "simulator_epochs",
            "probe_tasks",
            "agent_replay_rows",
            "p_hat_rollouts",
        )
        for name in (*at_least_zero, "max_heldout"):
            need(getattr(self, name) >= 0, name, "must be >= 0")
        need(0.0 < self.solved_threshold <= 1.0, "solved_threshold", "must be in (0, 1]")
        need(
            0.0 <= self.agent_wrong_call_reward < self.solved_threshold,
            "agent_wrong_call_reward",
            "must be in [0, solved_threshold): a wrong call is never solved",
        )
        need(0.0 <= self.abstention_share < 1.0, "abstention_share", "must be in [0, 1)")
        need(0.0 <= self.alpha <= 1.0, "alpha", "must be in [0, 1]")
        need(self.beta > 0, "beta", "must be > 0")
        need(0.0 <= self.k_min <= 1.0, "k_min", "must be in [0, 1]")
        band = f"the α band alpha ± k_min ({self.alpha} ± {self.k_min}) must lie inside [0, 1]"
        need(self.k_min <= min(self.alpha, 1.0 - self.alpha), "k_min", band)
        need(self.rwr_lambda >= 0, "rwr_lambda", "must be >= 0")
        need(self.reward_scope in REWARD_SCOPES, "reward_scope", f"must be one of {list(REWARD_SCOPES)}")
        need(
            self.simulator_update in SIMULATOR_UPDATES, "simulator_update", f"must be one of {list(SIMULATOR_UPDATES)}"
        )
        need(
            self.simulator_update != "grpo" or self.reward_scope == "task",
            "simulator_update",
            "grpo needs reward_scope=task: with one p̂ per seed batch every variation of a seed earns the same reward",
        )
        need(
            self.simulator_invalid_advantage <= 0,
            "simulator_invalid_advantage",
            "must be <= 0: a rejected output must not be pushed up",
        )
        for name in ("warm_start_lr", "agent_lr", "simulator_lr"):
            need(0 < getattr(self, name) < 1, name, "must be in (0, 1)")
        for name in ("agent_kl_coef", "simulator_kl_coef", "simulator_temperature", "agent_temperature"):
            need(getattr(self, name) >= 0, name, "must be >= 0")

    # --- derived values ---
    @property
    def resolved_warehouse_uri(self) -> str:
        return self.warehouse_uri or str(Path(self.data_dir) / "warehouse")

    @property
    def placement(self) -> Placement:
        return Placement(
            self.ray_address, self.rollout_workers, self.worker_cpus, self.worker_gpus, self.vllm_gpu_memory_utilization
        )

    @property
    def lora_target_modules(self) -> tuple[str, ...]:
        return tuple(name.strip() for name in self.lora_targets.split(","))

    @property
    def models_dir(self) -> Path:
        """Where base models are converted or downloaded to, once per data folder."""
        return Path(self.data_dir).resolve() / "models"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        """Identifies the settings that shape results (names and paths excluded)."""
        shaping = {k: v for k, v in self.to_dict().items() if k not in _NOT_SHAPING}
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]

    def replace(self, **changes: Any) -> GenEnvConfig:
        return load_config(None, {k: str(v) for k, v in changes.items()}, base=self)


_NOT_SHAPING = {
    "run_name",
    "vllm_gpu_memory_utilization",
    "data_dir",
    "warehouse_uri",
    "benchmarks_dir",
    "checkpoint_activations",
    "ray_address",
    "rollout_workers",
    "worker_cpus",
    "worker_gpus",
    "trainer_shards",
    "vllm_tensor_parallel",
}

RESUMABLE_CHANGES = frozenset({"generations"})
"""Shaping fields a resumed run may change: asking for more generations extends it; nothing made so far differs."""


def require(config: GenEnvConfig, ok: bool, name: str, why: str) -> None:
    """ConfigError naming the field, why, and its value, unless `ok`: the one form of every config check."""
    if not ok:
        raise ConfigError(f"{name}: {why} (got {getattr(config, name)!r})")


def resume_differences(stored: GenEnvConfig, requested: GenEnvConfig) -> list[str]:
    """'field: stored -> requested' for each shaping field a resume would change (empty: it may resume)."""
    a, b = stored.to_dict(), requested.to_dict()
    ignored = _NOT_SHAPING | RESUMABLE_CHANGES
    return [f"{name}: {a[name]!r} -> {b[name]!r}" for name in sorted(a) if name not in ignored and a[name] != b[name]]


def check_local_paths(config: GenEnvConfig) -> None:
    """Where a run will read and write on this machine, checked before anything loads or registers a run (not on
    every config: a stored config names paths of the machine that ran it). A model given as a path that does not
    exist is refused instead of being tried as a hub id; `data_dir` must be a writable folder or creatable, and
    `benchmarks_dir`, when given, a folder."""
    model = Path(config.model).expanduser()
    if _looks_local(config.model) and not (model / "config.json").is_file():
        missing = "does not exist" if not model.exists() else "has no config.json"
        raise ConfigError(
            f"model: local folder {config.model!r} {missing} (a hub id looks like org/name; the embedded model "
            "is embedded:smollm2-135m-instruct)"
        )
    data = Path(config.data_dir).expanduser()
    if data.exists() and not data.is_dir():
        raise ConfigError(f"data_dir: {config.data_dir!r} is a file, not a folder")
    try:  # the run makes the folder anyway; a file written and removed is the one sure test of writing there
        data.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=data).close()
    except OSError as exc:
        raise ConfigError(f"data_dir: {config.data_dir!r} is not writable ({exc.strerror or exc})") from None
    if config.benchmarks_dir and not Path(config.benchmarks_dir).is_dir():
        raise ConfigError(f"benchmarks_dir: folder does not exist (got {config.benchmarks_dir!r})")
    check_cluster(config)


def check_cluster(config: GenEnvConfig) -> None:
    """A `ray_address` needs Ray installed here, and when it names a cluster, its head's port must answer, before
    anything loads (not on every config: a stored config names the cluster of the machine that ran it)."""
    if not config.ray_address:
        return
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(f"ray_address: {RAY_INSTALL_HINT} (got {config.ray_address!r})")
    if config.ray_address == "local":
        return
    address = config.ray_address
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "") or _current_ray_cluster()
        if not address:
            raise ConfigError(f"ray_address: no Ray cluster runs on this machine (got 'auto'); {RAY_START_HINT}")
    host, port = ray_host_port(address)
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"ray_address: cannot reach the Ray cluster at {address!r} ({exc}); {RAY_START_HINT}"
        ) from None


def ray_host_port(address: str) -> tuple[str, str]:
    """('HOST', 'PORT') of 'HOST:PORT' or 'ray://HOST:PORT'."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return host, port


RAY_INSTALL_HINT = "needs Ray: pip install 'genenv-coevolve[ray]' (a checkout: make installs it)"
RAY_START_HINT = (
    "start one with `ray start --head --node-ip-address 127.0.0.1 --port 6379`, then ray_address: 127.0.0.1:6379"
)


def _current_ray_cluster() -> str:
    """The address `ray start` leaves for 'auto' to find (Ray's own file), or ''."""
    path = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    return path.read_text().strip() if path.is_file() else ""


def _looks_local(model: str) -> bool:
    """A path rather than a hub id (org/name) or the embedded model: absolute, relative with ./ or ../, from ~, or
    deeper than org/name."""
    return not model.startswith("embedded:") and (
        model.startswith(("/", ".", "~")) or model.count("/") > 1 or Path(model).exists()
    )


def field_help() -> list[tuple[str, str, Any, str]]:
    """(name, type, default, help) for every field, for `genenv config` and the docs."""
    hints = get_type_hints(GenEnvConfig)
    return [(f.name, hints[f.name].__name__, f.default, f.metadata["help"]) for f in fields(GenEnvConfig)]


def _coerce(name: str, text: str, kind: type) -> Any:
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in {"true", "1", "yes", "on"}:
            return True
        if lowered in {"false", "0", "no", "off"}:
            return False
        raise ConfigError(f"{name}: expected true/false, got {text!r}")
    try:
        return kind(text)
    except ValueError:
        raise ConfigError(f"{name}: expected {kind.__name__}, got {text!r}") from None


def load_config(
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    base: GenEnvConfig | None = None,
) -> GenEnvConfig:
    """YAML file (optional) then overrides on top of the defaults or `base`. An override is text as a `--set`
    gives it, or a typed value as the Prefect run form gives it (1, 0.3, true); both are checked by field type."""
    values: dict[str, Any] = base.to_dict() if base else {}
    hints = get_type_hints(GenEnvConfig)
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping of field: value")
        for name, value in loaded.items():
            # YAML 1.1 reads 5e-5 (no dot) as a string: numbers written that way are still numbers.
            kind = hints.get(name)
            values[name] = _coerce(name, value, kind) if isinstance(value, str) and kind not in (None, str) else value
    for name, text in (overrides or {}).items():
        if name not in hints:
            raise ConfigError(f"{name}: unknown config field")
        values[name] = _coerce(name, text if isinstance(text, str) else json.dumps(text), hints[name])
    unknown = sorted(set(values) - set(hints))
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown config field")
    return GenEnvConfig(**values)


_RETIRED = {
    "agent_steps": "replaced by agent_epochs and agent_minibatch_size",
    "simulator_invalid_reward": "replaced by simulator_invalid_advantage (valid outputs normalised among themselves)",
}
"""Fields older runs stored that no longer shape anything; their stored configs load without them."""


_BEFORE_ADDED = {"reward_scope": "batch", "simulator_update": "rwr", "p_hat_rollouts": 0}
"""Fields added since runs were stored, with what a stored config without them did: resuming an older run keeps its
simulator update rather than switching to the new default."""


def config_from_dict(values: dict[str, Any]) -> GenEnvConfig:
    """A config from every field's value (a stored run config, or a flow's `config` parameter).

    Retired fields are dropped; a field added since keeps the behaviour from before it (`_BEFORE_ADDED`); an unknown
    one is refused by name rather than with a TypeError.
    """
    hints = get_type_hints(GenEnvConfig)
    kept = {**_BEFORE_ADDED, **{name: value for name, value in values.items() if name not in _RETIRED}}
    unknown = sorted(set(kept) - set(hints))
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown config field")
    return GenEnvConfig(**kept)


def parse_overrides(items: list[str]) -> dict[str, str]:
    """['alpha=0.4', 'generations=3'] -> {'alpha': '0.4', 'generations': '3'}."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"override {item!r}: expected key=value")
        out[name.strip()] = value.strip()
    return out
