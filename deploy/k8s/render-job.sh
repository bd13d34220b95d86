#!/usr/bin/env bash
# Renders the Job that grades one checkpoint: an Indexed grading Job (hb-grade-CHECKPOINT) from
# jobs/grade-checkpoint/grade-job.yaml.in. Its shards write /results/CHECKPOINT/shard-<i> and
# the last one to complete merges them into /results/CHECKPOINT/merged (`run
# --merge-when-complete`): no merge Job to start by hand.
# Ten checkpoints are ten renders; put the outputs in an overlay (see overlays/grade-example).
#
#   deploy/k8s/render-job.sh [options] CHECKPOINT RESPONSES_PATH > ckpt.yaml
#   deploy/k8s/render-job.sh [options] --policy-url URL --policy-model MODEL CHECKPOINT > ckpt.yaml
#
#   CHECKPOINT       the checkpoint's name: lowercase letters, digits and '-', at most 40
#                    characters (it names the Jobs, the result folder and the responses).
#   RESPONSES_PATH   its responses file on the hb-inputs volume: absolute under /inputs, or
#                    relative to /inputs.
#   --shards N                     completions of the Indexed Job (default 8; 1 with --policy-url)
#   --parallelism N                shards running at once (default: all of them)
#   --max-in-flight N              gRPC calls in flight per shard (default 64)
#   --dataset PATH                 dataset on hb-inputs (default
#                                  /inputs/healthbench/2025-05-07-06-14-12_oss_eval.jsonl)
#   --backoff-limit-per-index N    counted failures allowed per shard (default 3)
#   --deadline-seconds N           activeDeadlineSeconds of the grading Job (default 86400)
#   --policy-url URL               sample the replies from this served checkpoint (an
#                                  OpenAI-compatible endpoint such as vLLM's, e.g.
#                                  http://hb-policy-ckpt-0300:8000/v1) and grade them in the same
#                                  Job (`run --policy CHECKPOINT=MODEL@URL`); no RESPONSES_PATH.
#                                  One shard (the replies of a checkpoint are one file)
#   --policy-model MODEL           the served model name (vLLM --served-model-name)
#   --queue NAME                   submit the grading Job to Kueue: label it
#                                  kueue.x-k8s.io/queue-name=NAME (a LocalQueue of the namespace)
#                                  and create it suspended, for Kueue to admit (unsuspend) once
#                                  the ClusterQueue has quota for its requests (parallelism x the
#                                  pod's cpu/memory requests)
#   --priority-class NAME          with --queue: label kueue.x-k8s.io/priority-class=NAME (a
#                                  WorkloadPriorityClass)
#
# Exit status: 0, or 2 on bad usage (message on stderr, nothing on stdout).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
templates=$here/jobs/grade-checkpoint

usage() { sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "render-job: $*" >&2; exit 2; }
positive_int() {  # name value
  [[ $2 =~ ^[1-9][0-9]{0,5}$ ]] || die "$1 must be a positive integer, got '$2'"
}

shards=""
parallelism=""
max_in_flight=64
dataset=/inputs/healthbench/2025-05-07-06-14-12_oss_eval.jsonl
backoff_limit_per_index=3
deadline_seconds=86400
policy_url=""
policy_model=""
queue=""
priority_class=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shards) [ $# -ge 2 ] || die "$1 needs a value"; shards=$2; shift 2 ;;
    --parallelism) [ $# -ge 2 ] || die "$1 needs a value"; parallelism=$2; shift 2 ;;
    --max-in-flight) [ $# -ge 2 ] || die "$1 needs a value"; max_in_flight=$2; shift 2 ;;
    --dataset) [ $# -ge 2 ] || die "$1 needs a value"; dataset=$2; shift 2 ;;
    --backoff-limit-per-index) [ $# -ge 2 ] || die "$1 needs a value"; backoff_limit_per_index=$2; shift 2 ;;
    --deadline-seconds) [ $# -ge 2 ] || die "$1 needs a value"; deadline_seconds=$2; shift 2 ;;
    --policy-url) [ $# -ge 2 ] || die "$1 needs a value"; policy_url=$2; shift 2 ;;
    --policy-model) [ $# -ge 2 ] || die "$1 needs a value"; policy_model=$2; shift 2 ;;
    --queue) [ $# -ge 2 ] || die "$1 needs a value"; queue=$2; shift 2 ;;
    --priority-class) [ $# -ge 2 ] || die "$1 needs a value"; priority_class=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --*) die "unknown option '$1' (see --help)" ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -n "$policy_url$policy_model" ]; then
  shards=${shards:-1}
  [ -n "$policy_url" ] && [ -n "$policy_model" ] || die "--policy-url and --policy-model go together"
  [ ${#args[@]} -eq 1 ] || die "with --policy-url, expected only CHECKPOINT (the replies are sampled, see --help)"
  [ "$shards" = 1 ] || die "--policy-url samples and grades in one pod: --shards must be 1, got $shards"
  # Both go into a YAML plain scalar and a sed replacement: keep them to a safe alphabet.
  [[ $policy_url =~ ^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$ ]] ||
    die "--policy-url '$policy_url' must be http(s)://HOST[:PORT][/PATH] (letters, digits and ._~/- only)"
  [[ $policy_model =~ ^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$ ]] ||
    die "--policy-model '$policy_model' must be 1-128 letters, digits or ._/:- (no '=' or '@')"
  checkpoint=${args[0]}
  responses=/inputs/unused
else
  [ ${#args[@]} -eq 2 ] || die "expected CHECKPOINT RESPONSES_PATH (see --help)"
  checkpoint=${args[0]}
  responses=${args[1]}
fi
shards=${shards:-8}
parallelism=${parallelism:-$shards}

[[ $checkpoint =~ ^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$ ]] ||
  die "CHECKPOINT '$checkpoint' must be 1-40 lowercase letters, digits or '-', starting and ending with a letter or digit"
positive_int --shards "$shards"
positive_int --parallelism "$parallelism"
positive_int --max-in-flight "$max_in_flight"
positive_int --deadline-seconds "$deadline_seconds"
[[ $backoff_limit_per_index =~ ^[0-9]{1,3}$ ]] ||
  die "--backoff-limit-per-index must be an integer >= 0, got '$backoff_limit_per_index'"
[ "$parallelism" -le "$shards" ] || die "--parallelism ($parallelism) exceeds --shards ($shards)"
# Kueue names: DNS labels (they become label values and object names).
dns_label='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'
if [ -n "$queue" ] && ! [[ $queue =~ $dns_label ]]; then
  die "--queue '$queue' must be a LocalQueue name: 1-63 lowercase letters, digits or '-'"
fi
if [ -n "$priority_class" ]; then
  [ -n "$queue" ] || die "--priority-class needs --queue (Kueue reads it only from queued Jobs)"
  [[ $priority_class =~ $dns_label ]] ||
    die "--priority-class '$priority_class' must be a WorkloadPriorityClass name: 1-63 lowercase letters, digits or '-'"
fi
for name in responses dataset; do
  value=${!name}
  case "$value" in /*) ;; *) value=/inputs/$value ;; esac
  # Paths go into YAML plain scalars and a sed replacement: keep them to a safe alphabet.
  if ! [[ $value =~ ^/inputs/[A-Za-z0-9._/+-]+$ ]] || [[ $value == *..* ]]; then
    die "$name path '$value' must lie under /inputs and use only letters, digits and ._/+-"
  fi
  printf -v "$name" '%s' "$value"
done
if [ -n "$policy_url" ]; then
  checkpoint_input="--policy=$checkpoint=$policy_model@$policy_url"
else
  checkpoint_input="--responses=$checkpoint=$responses"
fi

render() {  # template
  sed -e "s|@CHECKPOINT@|$checkpoint|g" \
      -e "s|@CHECKPOINT_INPUT@|$checkpoint_input|g" \
      -e "s|@DATASET_PATH@|$dataset|g" \
      -e "s|@SHARDS@|$shards|g" \
      -e "s|@PARALLELISM@|$parallelism|g" \
      -e "s|@MAX_IN_FLIGHT@|$max_in_flight|g" \
      -e "s|@BACKOFF_LIMIT_PER_INDEX@|$backoff_limit_per_index|g" \
      -e "s|@DEADLINE_SECONDS@|$deadline_seconds|g" "$1"
}

# With --queue: the Kueue labels after the Job's own labels, and `suspend: true` first in its spec.
queue_labels() {
  awk -v queue="$queue" -v priority="$priority_class" '
    !labeled && /^    healthbench.openai\/checkpoint: / {
      print
      printf "    kueue.x-k8s.io/queue-name: %s\n", queue
      if (priority != "") printf "    kueue.x-k8s.io/priority-class: %s\n", priority
      labeled = 1
      next
    }
    !suspended && $0 == "spec:" {
      print
      print "  # Kueue admits (unsuspends) it when its ClusterQueue has quota for the requests."
      print "  suspend: true"
      suspended = 1
      next
    }
    { print }'
}

if [ -n "$queue" ]; then
  render "$templates/grade-job.yaml.in" | queue_labels
else
  render "$templates/grade-job.yaml.in"
fi
