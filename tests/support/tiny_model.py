"""A tiny random Llama with a trained BPE tokenizer, so tests exercise the real code paths in seconds."""

from __future__ import annotations

import itertools
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
VOCAB_SIZE = 1024

# SmolLM2-135M-Instruct's template, so prompts look like the real model's.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_WORDS = [
    "the",
    "a",
    "an",
    "is",
    "are",
    "was",
    "be",
    "to",
    "of",
    "and",
    "or",
    "in",
    "on",
    "at",
    "for",
    "with",
    "from",
    "by",
    "what",
    "which",
    "who",
    "where",
    "when",
    "how",
    "why",
    "you",
    "your",
    "I",
    "we",
    "it",
    "this",
    "that",
    "there",
    "here",
    "yes",
    "no",
    "not",
    "answer",
    "question",
    "task",
    "tool",
    "call",
    "function",
    "city",
    "country",
    "weather",
    "temperature",
    "date",
    "time",
    "today",
    "tomorrow",
    "name",
    "value",
    "number",
    "result",
    "search",
    "find",
    "get",
    "set",
    "book",
    "order",
    "flight",
    "hotel",
    "train",
    "price",
    "cost",
    "total",
    "add",
    "subtract",
    "multiply",
    "divide",
    "sum",
    "count",
    "list",
    "item",
    "user",
    "assistant",
    "system",
    "helpful",
    "please",
    "thank",
    "capital",
    "France",
    "Paris",
    "London",
    "Tokyo",
    "Berlin",
    "unit",
    "celsius",
    "fahrenheit",
    "true",
    "false",
    "none",
    "null",
    "correct",
    "wrong",
    "solve",
    "step",
    "first",
    "then",
    "next",
    "final",
    "output",
    "input",
    "variation",
    "seed",
    "environment",
    "agent",
    "named",
    "SmolLM",
    "trained",
    "Hugging",
    "Face",
    "AI",
]
_SNIPPETS = (
    '[get_weather(city="Paris")]',
    "[search(query='capital of France', limit=3)]",
    '{"name": "book_hotel", "arguments": {"city": "Tokyo", "nights": 2}}',
    "x_1 = 42; y_2 = x_1 * 3 - 7 / 2 + (5 % 4)",
    "Answer: 3.14, 2,718 & 1e-3 <= 0.5 >= -1 != 7 ?! #tag @user ~ ^ | \\ `code`",
    "<tool_call>[add(a=1, b=2)]</tool_call>",
)


def _corpus() -> list[str]:
    digits = [" ".join(str(i) for i in range(start, start + 50)) for start in range(0, 1000, 50)]
    pairs = [" ".join(p) for p in itertools.islice(itertools.permutations(_WORDS, 3), 0, 20000, 7)]
    return list(_SNIPPETS) * 20 + digits + pairs + [" ".join(_WORDS), " ".join(w.capitalize() for w in _WORDS)]


def _train_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE: every string encodes (no unknown tokens), and decoding round-trips."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=4096,
    )


def build_tiny_model(folder: Path, seed: int = 0) -> Path:
    """Write a random 2-layer Llama and its tokenizer to `folder`; same seed -> same weights."""
    folder = Path(folder)
    tokenizer = _train_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        # Room for BFCL's prompt with the longest held-out functions: this small BPE writes it in 2,207 tokens
        # (SmolLM2's tokenizer in under 1,000), and vLLM refuses a prompt longer than the model's context.
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        initializer_range=0.1,  # the default 0.02 makes greedy decoding repeat one token: useless for tests
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
