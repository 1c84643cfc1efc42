#!/bin/bash
# Issue 52: does drawing the simulator's seeds at the agent's edge (simulator_seed_draw=edge) grow D_env faster than
# the uniform draw? A fork of a configs/laptop.yaml run's generation 1 (default run l64, docs/results.md section 18)
# with the edge draw (NAME-edge), against bench/sweep_agent_update.sh's control fork of the same generation (the
# uniform draw, same code, same loop seed), both to generation G. Counts per generation at the end (D_env's growth
# and the agent's success on the fresh tasks). Idempotent: a run that exists is resumed where it stopped.
#   bench/edge_seed_draw.sh [--smoke] [DATA_DIR] [BASE_RUN_NAME]   (default data/l64 l64; G=GENERATIONS, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke.sh  # --smoke: print the genenv commands instead of running them
D=${1:-data/l64}
base_name=${2:-l64}
W=$D/warehouse
G=${GENERATIONS:-2}
base=$(found "$(run_of "$W" "$base_name")" "$base_name")
if [ -z "$(run_of "$W" "$base_name-edge")" ]; then
  $genenv rerun --warehouse "$W" --run "$base" --generation 1 --fork "$base_name-edge" --set simulator_seed_draw=edge
fi
edge=$(found "$(run_of "$W" "$base_name-edge")" "$base_name-edge")
$genenv evolve --run-id "$edge" --set data_dir="$D" --set generations="$G"
$genenv sql --warehouse "$W" "SELECT r.run_name, g.generation, json_extract(g.metrics, '\$.d_env') AS d_env,
  json_extract(g.metrics, '\$.d_env_added') AS joined, json_extract(g.metrics, '\$.fresh_success') AS fresh_success,
  json_extract(g.metrics, '\$.valid_rate') AS valid, json_extract(g.metrics, '\$.band_share') AS band
  FROM generations g JOIN runs r USING (run_id)
  WHERE r.run_name IN ('$base_name', '$base_name-edge', 'sweep-control') ORDER BY 1, 2"
