#!/usr/bin/python3
"""GRPO with TRL on HealthBench, rewards from hb-env (examples/trainers/README.md).

  export HEALTHBENCH_ENV_URL=http://127.0.0.1:8080 HEALTHBENCH_ENV_TOKEN_FILE=/path/to/token
  python3 examples/trainers/make_dataset.py --input data/healthbench/...jsonl --format trl \
      --out healthbench_trl.jsonl
  python3 examples/trainers/trl_grpo.py --dataset healthbench_trl.jsonl \
      --model Qwen/Qwen2.5-0.5B-Instruct --output-dir grpo-healthbench

--dry-run checks the wiring without TRL: it grades --dry-run-rows rows of the dataset with
trl_reward exactly as GRPOTrainer calls it (conversational completions, the prompt_id column
and TRL's extra keywords) and prints one JSON line per row.
"""
import argparse
import json

from healthbench_env.rewards import trl_reward


def load_rows(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def dry_run(rows, count, reply):
    rows = rows[:count]
    completions = [[{"role": "assistant", "content": reply}] for _ in rows]
    rewards = trl_reward(prompts=[r["prompt"] for r in rows], completions=completions,
                         prompt_id=[r["prompt_id"] for r in rows], completion_ids=None,
                         trainer_state=None)
    for row, reward in zip(rows, rewards):
        print(json.dumps({"prompt_id": row["prompt_id"], "reward": reward}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="rows of make_dataset.py --format trl")
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--output-dir", default="grpo-healthbench")
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=1024)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--dry-run-rows", type=int, default=2)
    parser.add_argument("--dry-run-reply", default="Please call emergency services now.")
    args = parser.parse_args()
    rows = load_rows(args.dataset)
    if args.dry_run:
        return dry_run(rows, args.dry_run_rows, args.dry_run_reply)

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    config = GRPOConfig(output_dir=args.output_dir, num_generations=args.num_generations,
                        max_completion_length=args.max_completion_length,
                        per_device_train_batch_size=args.num_generations, logging_steps=1,
                        log_completions=True)
    # trl_reward answers None for a reply hb-env could not grade: TRL leaves that completion
    # out of its group's baseline and gives it no advantage (never a reward of 0).
    trainer = GRPOTrainer(model=args.model, reward_funcs=[trl_reward], args=config,
                          train_dataset=Dataset.from_list(rows))
    trainer.train()


if __name__ == "__main__":
    main()
