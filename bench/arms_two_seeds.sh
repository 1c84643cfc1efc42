#!/bin/bash
# Issue 27's comparison: GenEnv (simulator GRPO, reward per task) and GenEnv-Random, two loop seeds each, all forked
# from the after run's generation 0 (data/after/warehouse), configs/laptop.yaml's agent (KL 0.04, no replay).
# Idempotent: an arm whose fork exists is resumed where it stopped.   bench/arms_two_seeds.sh [--smoke]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke.sh  # --smoke: print the genenv commands instead of running them
W=data/after/warehouse
P=laptop-genenv-20261201-210114-7a9b
G=${GENERATIONS:-8}
COMMON=(--set agent_kl_coef=0.04 --set agent_replay_rows=0 --set reward_scope=task --set simulator_update=grpo)
arm() {
  local name=$1; shift
  if [ -z "$(run_of $W "$name")" ]; then
    $genenv rerun --warehouse $W --run $P --generation 1 --fork "$name" "${COMMON[@]}" "$@"
  fi
  local id; id=$(found "$(run_of $W "$name")" "$name")
  echo "$(date) $name $id"
  $genenv evolve --run-id "$id" --set data_dir=data/after --set generations=$G
}
for arm_spec in ${ARMS:-genenv-s0 random-s0 genenv-s1 random-s1}; do
  seed=${arm_spec##*-s}
  case $arm_spec in
    genenv-*) arm "c27-$arm_spec" --set seed=$seed ;;
    random-*) arm "c27-$arm_spec" --set seed=$seed --set simulator_training=false ;;
  esac
done
date
