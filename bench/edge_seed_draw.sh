#!/bin/bash
# Issue 52: does drawing the simulator's seeds at the agent's edge (simulator_seed_draw=edge) grow D_env faster than
# the uniform draw? One generation 0 and 1 of configs/laptop.yaml (run l62, which goes on with the uniform draw), and
# a fork of its generation 2 with the edge draw (l62-edge); both to generation G, loop seed 0. Counts per generation
# at the end (D_env's growth and the agent's success on the fresh tasks). Idempotent: a run that exists is resumed
# where it stopped.   bench/edge_seed_draw.sh [--smoke]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke.sh  # --smoke: print the genenv commands instead of running them
D=data/l62
W=$D/warehouse
G=${GENERATIONS:-4}
parent=$(run_of $W l62)
$genenv evolve --config configs/laptop.yaml --set data_dir=$D --set run_name=l62 --set generations=$G ${parent:+--run-id "$parent"}
parent=$(found "$(run_of $W l62)" l62)
if [ -z "$(run_of $W l62-edge)" ]; then
  $genenv rerun --warehouse $W --run "$parent" --generation 2 --fork l62-edge --set simulator_seed_draw=edge
fi
edge=$(found "$(run_of $W l62-edge)" l62-edge)
$genenv evolve --run-id "$edge" --set data_dir=$D --set generations=$G
$genenv sql --warehouse $W "SELECT r.run_name, g.generation, json_extract(g.metrics, '\$.d_env') AS d_env,
  json_extract(g.metrics, '\$.d_env_added') AS joined, json_extract(g.metrics, '\$.fresh_success') AS fresh_success
  FROM generations g JOIN runs r USING (run_id) WHERE r.run_name LIKE 'l62%' ORDER BY 1, 2"
