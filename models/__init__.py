"""Model layer: base-model resolution, the agent/simulator LoRA pair, batched generation and the two updates
(GRPO for the agent, reward-weighted regression for the simulator)."""
