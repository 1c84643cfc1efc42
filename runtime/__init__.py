"""Where the models of a flow run live and compute: in this process, beside a vLLM engine, or on Ray workers.

The stages (genenv.tasks) ask the flow's `ModelRuntime` (handle.py) for a generation backend or a policy to train;
it hands the request to one of three runtimes behind one interface (interface.py): `InProcessRuntime`
(in_process.py), `VllmRuntime` (vllm_runtime.py) and `RayRuntime` (ray_runtime.py, with the Ray actors in
workers.py and the pool that drives them in pool.py). Each keeps one policy per process and moves it between
checkpoints by swapping adapters only (slot.py).
"""
