"""What every stage stands on: the stage contract and its options, a generation's context (references, progress,
loading what earlier stages wrote), staging a stage's output until it commits, artifacts, adapter lineage, the
training log, run records and the config a run runs with. The stages themselves are tasks/, one module a step of the
pipeline."""
