"""Prefect tasks, one module per stage, plus what two stages share (agent_groups, answers) and finetune's simulator
part (simulator_update). Each stage reads its inputs from the warehouse, calls library code (curriculum, domains,
models) and writes its outputs; they pass each other small references only. What every stage stands on (the
contract, context, staging, lineage) is pipeline/."""
