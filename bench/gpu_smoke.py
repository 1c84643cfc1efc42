"""GPU smoke check: the project's own loading, generation, warm-start and GRPO code on random-initialised models of
real architectures (Qwen2.5-0.5B- and Qwen2.5-7B-sized, their config.json shipped in models/architectures/), in
bf16 on CUDA; each phase's measured peak printed beside the memory plan's figure, with tokens per second.

    python bench/gpu_smoke.py [--models 0.5b,7b] [--out DIR]     # on a GPU: about 3 minutes on one H100-class card
    python bench/gpu_smoke.py --tiny                             # a tiny Qwen2 on CPU in seconds (the suite runs it)

Needs only PyTorch, transformers, peft and accelerate (and what they bring: tokenizers, safetensors, pyyaml): no
network, no model hub, no vLLM, no Prefect. Run from a checkout; without genenv installed the script finds its
packages in the checkout's folders. Weights are random (seeded): the check is of memory and speed, not of answers.

Measured peaks are PyTorch's allocator on CUDA (`max_memory_allocated`, reset before each phase), so they leave out
the CUDA context the plan adds (`CUDA_CONTEXT`); the plan column is the plan's phase less that context. On CPU the
measured column is the growth of the process's peak resident memory, which the plan does not claim to predict.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("genenv") is None:  # not installed: the checkout's genenv/ folder is the package
    sys.path.insert(0, str(REPO))
import genenv  # noqa: E402

if importlib.util.find_spec("genenv.models") is None:  # and its other folders are its subpackages, as installed
    genenv.__path__.append(str(REPO))

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from genenv.models.grpo import GroupSample, grpo_update  # noqa: E402
from genenv.models.memory_plan import (  # noqa: E402
    ARCHITECTURES,
    CUDA_CONTEXT,
    GIB,
    Architecture,
    PlanSettings,
    memory_plan,
)
from genenv.models.policy import LoraSettings, PolicyPair  # noqa: E402
from genenv.models.rwr import encode_example, weighted_sft  # noqa: E402
from genenv.models.sampling import SamplingSettings  # noqa: E402
from genenv.models.transformers_backend import TransformersBackend  # noqa: E402
from genenv.runtime.device_plan import planned_checkpointing  # noqa: E402

MODELS = {"0.5b": "Qwen/Qwen2.5-0.5B-Instruct", "7b": "Qwen/Qwen2.5-7B-Instruct"}
TINY = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
WORDS = ("book", "a", "hotel", "in", "tokyo", "for", "three", "nights", "from", "paris", "with", "two", "bags")


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer with no merges (one token a byte, 259 in all): random weights need no better one."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: index for index, token in enumerate([*SPECIALS, *sorted(alphabet)])}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
    )


def random_model(config: dict, folder: Path, dtype: torch.dtype, device: str) -> Path:
    """The architecture with seeded random weights, initialised on the device (no host copy of a 7B model), saved
    with the byte tokenizer as a model folder `PolicyPair.load` reads."""
    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(config["model_type"], **fields), dtype=dtype)
    model.save_pretrained(folder)
    byte_tokenizer().save_pretrained(folder)
    del model
    return folder


class Peak:
    """Peak memory of a phase: PyTorch's CUDA allocator, or on CPU the growth of peak resident memory."""

    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda

    def __enter__(self) -> Peak:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self.base = self._now()
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self.started
        self.bytes = self._now() - (0 if self.cuda else self.base)

    def _now(self) -> float:
        if self.cuda:
            return torch.cuda.max_memory_allocated()
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def conversations(count: int, words: int) -> list[list[dict[str, str]]]:
    return [
        [{"role": "user", "content": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(words))}] for i in range(count)
    ]


def smoke(name: str, config: dict, sizes: dict[str, int], scratch: Path, cuda: bool) -> list[dict]:
    """Load, generate, one warm-start step, one GRPO step: each phase's measured peak, the plan's, and its speed."""
    precision = "bfloat16" if cuda else "float32"
    device = "cuda" if cuda else "cpu"
    folder = random_model(config, scratch / name, getattr(torch, precision), device)
    arch = Architecture.from_config(config)
    settings = PlanSettings(
        precision=precision,
        lora_r=16,
        rows=sizes["rows"],
        prompt_tokens=sizes["prompt"],
        completion_tokens=sizes["completion"],
        generation_rows=sizes["generate"],
        references=False,
    )
    card = torch.cuda.get_device_properties(0).total_memory if cuda else 2**40
    checkpointing = planned_checkpointing(settings, name, folder)
    plan = memory_plan(arch, settings, card)
    rows = []
    with Peak(cuda) as load:
        policy = PolicyPair.load(folder, LoraSettings(r=16, alpha=32), precision=precision)
    policy.checkpoint_activations = checkpointing
    rows.append(row(name, "load", load, plan, 0))
    sampling = SamplingSettings(max_new_tokens=sizes["completion"], temperature=1.0, seed=0)
    prompts = conversations(sizes["generate"], sizes["prompt"] // 6)
    with Peak(cuda) as generate:
        answers = TransformersBackend(policy, batch_size=sizes["generate"]).generate("agent", prompts, sampling)
    rows.append(row(name, "generate", generate, plan, sum(len(a.completion_ids) for a in answers)))
    tokenizer = policy.tokenizer
    examples = [encode_example(tokenizer, p, a.text) for p, a in zip(prompts, answers, strict=True)][: sizes["rows"]]
    with Peak(cuda) as warm:
        weighted_sft(policy, "simulator", examples, lr=1e-4, kl_coef=0.0, batch_size=sizes["rows"], epochs=1)
    rows.append(row(name, "warm start", warm, plan, sum(len(e.prompt_ids) + len(e.target_ids) for e in examples)))
    samples = [
        GroupSample(a.prompt_ids, a.completion_ids, float(i % 2), group=str(i // 4))
        for i, a in enumerate(answers[: sizes["rows"]])
    ]
    with Peak(cuda) as grpo:
        records = grpo_update(
            policy, "agent", samples, lr=1e-5, kl_coef=0.001, minibatch_size=len(samples), micro_batch_size=len(samples)
        )
    assert all(r["loss"] == r["loss"] for r in records), "a GRPO loss is NaN"
    rows.append(row(name, "GRPO", grpo, plan, sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)))
    for line in rows:
        line["checkpointing"] = checkpointing
    del policy
    if cuda:
        torch.cuda.empty_cache()
    return rows


def row(model: str, phase: str, peak: Peak, plan, tokens: int) -> dict:
    planned = plan.phase({"load": "load", "generate": "generate"}.get(phase, "train")).total - CUDA_CONTEXT
    return {
        "model": model,
        "phase": phase,
        "measured_gib": peak.bytes / GIB,
        "planned_gib": planned / GIB,
        "seconds": peak.seconds,
        "tokens_per_second": tokens / peak.seconds if tokens else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="0.5b,7b", help=f"comma-separated, of {sorted(MODELS)}")
    parser.add_argument("--tiny", action="store_true", help="a tiny Qwen2 instead, on CPU unless a GPU is here")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON to OUT/gpu_smoke.json")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    if args.tiny:
        targets = {"tiny-qwen2": TINY}
        sizes = {"rows": 4, "prompt": 96, "completion": 16, "generate": 8}
    else:
        if not cuda:
            sys.exit("gpu_smoke: no CUDA device here; run with --tiny on CPU")
        shipped = REPO / "models" / "architectures"
        targets = {
            MODELS[n]: json.loads((shipped / ARCHITECTURES[MODELS[n]]).read_text()) for n in args.models.split(",")
        }
        sizes = {"rows": 8, "prompt": 512, "completion": 128, "generate": 32}
    device = torch.cuda.get_device_name(0) if cuda else "CPU"
    print(f"{device}, torch {torch.__version__}, {'bfloat16' if cuda else 'float32'}, sizes {sizes}")
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, config in targets.items():
            rows += smoke(name, config, sizes, Path(scratch), cuda)
    unit, scale = ("GiB", 1) if cuda else ("MiB", 1024)
    measured = f"measured {unit}" if cuda else f"RSS growth {unit}"
    print(f"{'model':<28} {'phase':<11} {measured:>14} {'plan ' + unit:>9} {'ratio':>6} {'seconds':>8} {'tokens/s':>9}")
    for r in rows:
        speed = f"{r['tokens_per_second']:9.0f}" if r["tokens_per_second"] else f"{'-':>9}"
        ratio = r["measured_gib"] / r["planned_gib"]
        print(
            f"{r['model']:<28} {r['phase']:<11} {r['measured_gib'] * scale:14.2f} {r['planned_gib'] * scale:9.2f} "
            f"{ratio:6.2f} {r['seconds']:8.2f} {speed}"
        )
    print(f"activation checkpointing: {rows[-1]['checkpointing']}; total {time.perf_counter() - started:.0f} s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_smoke.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
