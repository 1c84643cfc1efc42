#!/usr/bin/env bash
# Issue 53 item 4: the agent's GRPO update chosen by measurement, on the warm start configs/laptop.yaml makes. Each
# variant forks one laptop.yaml run at generation 1 (its generation 0 snapshot: warm start, pools, seeds; default the
# run l64 of docs/results.md section 18), with other agent settings, and goes on to generation G (default 2). The
# first fork, "control", changes nothing: it reruns laptop.yaml's own update on this checkout's code, so each variant
# differs from it in its settings only (the base run may have been made by older code). Held-out seed success at
# generation G, paired over the same 270 items with the control's (bench/heldout_paired.py), and the probe before
# and after each update; never a benchmark. Variants run most informative first, so a sweep cut short still
# answers the issue's first question (laptop.yaml's update against the shrunk one). Idempotent: a fork that exists
# is resumed where it stopped.
#   bash bench/sweep_agent_update.sh [--smoke] [DATA_DIR] [BASE_RUN_NAME]   (default data/l64 l64; G=GENERATIONS;
#   DATA_DIR relative to the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke.sh  # --smoke: print the genenv commands instead of running them
data=${1:-data/l64}
base_name=${2:-l64}
G=${GENERATIONS:-2}
W=$data/warehouse
base=$(found "$(run_of "$W" "$base_name")" "$base_name")
# laptop.yaml's update is agent_lr 1e-4, agent_epochs 2, agent_kl_coef 0.04, dynamic_sampling_draws 3; "shrunk" is
# the update section 10's comparison ran (1 epoch, 2 rounds of drawing).
for variant in "control" "shrunk agent_epochs=1 dynamic_sampling_draws=2" "lr-3e-4 agent_lr=0.0003" \
               "epochs-4 agent_epochs=4" "kl-0 agent_kl_coef=0" "lr-3e-5 agent_lr=0.00003" "kl-0-1 agent_kl_coef=0.1"; do
  read -r label settings <<< "$variant"
  name="sweep-$label"
  if [ -z "$(run_of "$W" "$name")" ]; then
    sets=(); for kv in $settings; do sets+=(--set "$kv"); done
    $genenv rerun --warehouse "$W" --run "$base" --generation 1 --fork "$name" "${sets[@]}"
  fi
  fork=$(found "$(run_of "$W" "$name")" "$name")
  $genenv evolve --run-id "$fork" --set data_dir="$data" --set generations="$G"
done
$genenv sql --warehouse "$W" "
  SELECT r.run_name, g.generation,
         json_extract(g.metrics, '\$.probe_before')::DOUBLE AS probe_before,
         json_extract(g.metrics, '\$.probe_after')::DOUBLE AS probe_after,
         json_extract(g.metrics, '\$.heldout_success')::DOUBLE AS heldout,
         json_extract(g.metrics, '\$.fresh_success')::DOUBLE AS fresh,
         json_extract(g.metrics, '\$.groups_trained')::INT AS groups_trained
  FROM generations g JOIN runs r USING (run_id)
  WHERE r.run_name = '$base_name' OR r.run_name LIKE 'sweep-%' ORDER BY 1, 2"
if [ "$genenv" != printed ]; then
  .venv/bin/python bench/heldout_paired.py "$W" --against "$(run_of "$W" sweep-control)" --generation "$G"
fi
