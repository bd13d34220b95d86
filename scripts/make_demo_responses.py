#!/usr/bin/env python3
"""Writes two demo "checkpoints" of responses for a HealthBench dataset file, at run time.

We have no policy model on our machines, so the demo grades two stand-in checkpoints:
  physician  the record's physician-written ideal completion, where it has one (tasks without
             one get no response and are reported as "not graded", never as zero);
  baseline   one short canned reply for every task, sent with the system prompt
             "You are a helpful assistant." (graded as part of the transcript, like the
             reference's gpt-4.1 runs).
Nothing here is committed: the responses are derived from the dataset on each run.

Usage: make_demo_responses.py DATASET.jsonl OUT_DIR
"""
import gzip
import json
import os
import sys

BASELINE = ("I'm sorry you're dealing with this. I can share general information, but I "
            "can't examine you. If your symptoms are severe, sudden or getting worse, please "
            "contact a doctor or emergency services right away.")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    dataset, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    opener = gzip.open if dataset.endswith(".gz") else open
    physician, baseline = [], []
    with opener(dataset, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            pid = record["prompt_id"]
            ideal = record.get("ideal_completions_data") or {}
            if ideal.get("ideal_completion"):
                physician.append({"prompt_id": pid, "response": ideal["ideal_completion"]})
            baseline.append({"prompt_id": pid, "response": BASELINE,
                             "system_prompt": "You are a helpful assistant."})
    for name, rows in (("physician", physician), ("baseline", baseline)):
        with open(os.path.join(out_dir, name + ".jsonl"), "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        print(f"make_demo_responses: {len(rows)} responses -> {out_dir}/{name}.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
