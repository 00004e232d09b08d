#!/usr/bin/env bash
# Fig. 11's three entity assignments at the light settings of this page (README.md, "Runs"),
# as a lane of jobs run one after the other; start one lane per free core. A job is
# ARM:SEED:TOTAL_STEPS with ARM one of
#   masac   MASAC with the Arena's common critic (the seeds began from
#           configs/navigation_masac_arena_env.yaml with these overrides, which name their
#           run directories navigation_masac_arena_env-022dedc3/<seed>; the same settings as
#           configs/navigation_masac_common.yaml)
#   entity  SAC per entity, each entity a worker of its own (configs/navigation_sac_entity_common.yaml)
#   joint   one SAC agent over the three entities (configs/navigation_sac_joint_common.yaml)
# relayrl train resumes a run that has a checkpoint and raises its budget to TOTAL_STEPS.
# SIGTERM stops the running job (it saves a checkpoint) and starts no other.
# Usage: navigation_fig11.sh RELAYRL_CHECKOUT RUNS_ROOT JOB [JOB ...]
#   e.g. navigation_fig11.sh /work/exp /work/runs masac:0:8000000 masac:1:8000000
set -u
# Started with setsid, the lane is a scheduling group (autogroup) of its own, and Linux shares
# the CPU equally between groups whatever their processes' nice: lower the group's weight too.
echo 19 > /proc/self/autogroup 2>/dev/null || true
cd "$1" || exit 2
RUNS=$2
shift 2
CONFIGS=docs/results/centralised/configs
mkdir -p "$RUNS/logs"
child=""
trap '[ -n "$child" ] && kill -TERM $child 2>/dev/null; wait; exit 143' TERM INT
for job in "$@"; do
  IFS=: read -r arm seed total <<< "$job"
  case $arm in
    masac) args=("$CONFIGS/navigation_masac_arena_env.yaml" centralised.critic=common centralised.auto_alpha=false) out=nav-common ;;
    entity) args=("$CONFIGS/navigation_sac_entity_common.yaml") out=nav-arms ;;
    joint) args=("$CONFIGS/navigation_sac_joint_common.yaml") out=nav-arms ;;
    *) echo "unknown arm $arm in $job: masac, entity or joint" >&2; exit 2 ;;
  esac
  python -m relayrl.cli train "${args[@]}" "total_steps=$total" checkpoint_interval=100000 --seed "$seed" --out "$RUNS/$out" \
    >> "$RUNS/logs/navigation-$arm-s$seed.log" 2>&1 &
  child=$!
  wait $child || exit $?
done
