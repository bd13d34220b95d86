#!/usr/bin/python3
"""Turns a HealthBench JSONL file into training rows for a trainer that gets its reward from
hb-env: the conversation and the task id only (the rubric stays with hb-env).

  make_dataset.py --input data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl \
      --format verl --out healthbench_verl.jsonl      # or .parquet (needs pandas + pyarrow)
  make_dataset.py --input ... --format trl --out healthbench_trl.jsonl   # also OpenRLHF, slime
  make_dataset.py --input ... --format nemo_gym --out healthbench_nemo_gym.jsonl

verl row: {"data_source": "healthbench", "prompt": [messages], "ability": "medical",
           "reward_model": {"style": "rule", "ground_truth": <prompt_id>},
           "extra_info": {"index": i, "prompt_id": <prompt_id>, "tags": [example_tags]}}
TRL row:  {"prompt": [messages], "prompt_id": <prompt_id>}  (OpenRLHF and slime read it too:
          input key "prompt" with the chat template applied, label key "prompt_id")
NeMo-Gym row: {"prompt_id": <prompt_id>, "agent_ref": {"type": "responses_api_agents",
               "name": "healthbench_simple_agent"},
               "responses_create_params": {"input": [messages, each with "type": "message"]}}

--split NAME writes every task id as "NAME/<prompt_id>": hb-env resolves that id within its split
NAME, which is needed when hb-env serves splits that share prompt_ids (main, hard and consensus:
a bare prompt_id held by two splits is refused, their rubrics differ).
"""
import argparse
import json
import sys


def rows(path, fmt, split=None):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                messages = [{"role": m["role"], "content": m["content"]} for m in record["prompt"]]
                prompt_id = record["prompt_id"]
                if split:
                    prompt_id = split + "/" + prompt_id
            except (ValueError, KeyError, TypeError) as e:
                sys.exit("%s:%d: expected a HealthBench record with 'prompt' (a list of "
                         "{role, content}) and 'prompt_id': %s" % (path, number, e))
            if fmt == "trl":
                yield {"prompt": messages, "prompt_id": prompt_id}
            elif fmt == "nemo_gym":
                yield {"prompt_id": prompt_id,
                       "agent_ref": {"type": "responses_api_agents",
                                     "name": "healthbench_simple_agent"},
                       "responses_create_params": {
                           "input": [dict(m, type="message") for m in messages]}}
            else:
                yield {"data_source": "healthbench", "prompt": messages, "ability": "medical",
                       "reward_model": {"style": "rule", "ground_truth": prompt_id},
                       "extra_info": {"index": number - 1, "prompt_id": prompt_id,
                                      "tags": record.get("example_tags", [])}}


def write_parquet(out, path):
    """Parquet (which verl's RLHFDataset reads) through pandas and pyarrow, or a one-line exit
    saying how to get them."""
    try:
        import pandas
        import pyarrow  # noqa: F401 (pandas' parquet engine)
    except ImportError as e:
        sys.exit("make_dataset.py: --out %s: writing parquet needs pandas and pyarrow (%s): "
                 "install them (pip install pandas pyarrow, or apt-get install python3-pandas "
                 "python3-pyarrow) or write .jsonl instead" % (path, e))
    pandas.DataFrame(out).to_parquet(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="a HealthBench JSONL file")
    parser.add_argument("--format", required=True, choices=["verl", "trl", "nemo_gym"])
    parser.add_argument("--out", required=True, help="output .jsonl (or .parquet)")
    parser.add_argument("--split", help="hb-env split NAME of the rows: task ids NAME/<prompt_id>")
    args = parser.parse_args()
    out = list(rows(args.input, args.format, args.split))
    if args.out.endswith(".parquet"):
        write_parquet(out, args.out)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            for row in out:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("%d rows -> %s" % (len(out), args.out))


if __name__ == "__main__":
    main()
