#!/usr/bin/env bash
# slime with its reward from hb-env's POST /reward: the reward flags to add to a slime run
# (model, parallelism and rollout engine flags as in slime's own scripts).
#
# hb-env (see README.md here, "1. Start hb-env"), reachable as hb-env:8080, with the token of
# --auth-token-file in $HB_ENV_TOKEN. slime's remote_rm posts with aiohttp and no header of its
# own: the token goes in the URL's userinfo (sent as HTTP Basic auth, which hb-env accepts with
# the token as password). Use a URL-safe token (hex).
#
# slime posts {"prompt", "response", "label"} (label = the row's prompt_id via --label-key) and
# keeps the JSON answer as the sample's reward dict; --reward-key reward picks hb-env's
# unclipped reward (reward_clipped is beside it). A reply the judge could not grade is a 503:
# slime retries it (10 tries with backoff), then fails the rollout instead of scoring 0.
set -euo pipefail
: "${HB_ENV_TOKEN:?the hb-env token (a line of its --auth-token-file)}"

SLIME_REWARD_ARGS=(
  --prompt-data healthbench_trl.jsonl
  --input-key prompt
  --label-key prompt_id
  --apply-chat-template
  --rm-type remote_rm
  --rm-url "http://hb:${HB_ENV_TOKEN}@hb-env:8080/reward"
  --reward-key reward
  --n-samples-per-prompt 8
  --rollout-batch-size 32
)

python3 train.py "${SLIME_REWARD_ARGS[@]}" "$@"
