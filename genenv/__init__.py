"""GenEnv: co-evolve an LLM agent with an LLM environment simulator, orchestrated by Prefect."""
