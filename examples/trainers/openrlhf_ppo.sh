#!/usr/bin/env bash
# OpenRLHF (train_ppo_ray) with its reward from hb-env's POST /get_reward.
#
# hb-env (see README.md here, "1. Start hb-env"), reachable from every OpenRLHF worker as
# hb-env:8080, with the token of --auth-token-file in $HB_ENV_TOKEN. OpenRLHF's client (aiohttp)
# sends no header of its own: the token goes in the URL's userinfo, which aiohttp sends as HTTP
# Basic auth; hb-env accepts a token as the Basic password. The token must be URL-safe (hex:
# `openssl rand -hex 32`), or percent-encoded.
#
# Rows: make_dataset.py --format trl (a "prompt" message list and a "prompt_id" label). OpenRLHF
# posts {"query": [prompt + response, decoded with special tokens], "prompts": [prompt],
# "labels": [prompt_id]}; hb-env grades query minus prompt minus trailing end-of-turn tokens
# (--strip-suffix) and answers {"rewards", "scores" (clipped to [0, 1]), "extra_logs"}. A reply
# the judge could not grade is a 503: OpenRLHF retries it (5 tries), and the step fails rather
# than train on a made-up reward.
set -euo pipefail
: "${HB_ENV_TOKEN:?the hb-env token (a line of its --auth-token-file)}"

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path Qwen/Qwen2.5-7B-Instruct \
  --reward.remote_url "http://hb:${HB_ENV_TOKEN}@hb-env:8080/get_reward" \
  --data.prompt_dataset healthbench_trl.jsonl \
  --data.input_key prompt \
  --data.label_key prompt_id \
  --data.apply_chat_template \
  --algo.advantage.estimator group_norm \
  --rollout.n_samples_per_prompt 8 \
  --rollout.batch_size 64 \
  --train.batch_size 64 \
  --data.max_len 4096 \
  --ckpt.output_dir ./healthbench-openrlhf
