from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer

from tests.support.tiny_model import build_tiny_model


def test_build_is_deterministic(tiny_model_dir: Path, tmp_path: Path) -> None:
    again = build_tiny_model(tmp_path / "again")
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_model_dir / name).read_bytes()
    other = build_tiny_model(tmp_path / "other", seed=1)
    assert (other / "model.safetensors").read_bytes() != (tiny_model_dir / "model.safetensors").read_bytes()


def test_tokenizer_handles_tool_calls_and_chat(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    call = '[get_weather(city="Paris", days=3)] {"x": 1_000}'
    ids = tokenizer(call, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids
    assert len(ids) < len(call) / 2
    assert tokenizer.decode(ids) == call
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token_id is not None and tokenizer.pad_token_id != tokenizer.eos_token_id
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
