#!/usr/bin/env python3
"""Builds a benchmark workload from real HealthBench records (standard library only).

Cycles the records of --dataset until --tasks tasks exist. Every copy gets a fresh, deterministic
prompt id, uuid5(namespace, "<original id>#<copy number>#<seed>"), so one file holds thousands of
distinct tasks with realistic conversations and rubrics. Writes a matching responses file with one
reply per task: the record's ideal completion when it has one, otherwise a canned reply of
realistic length (written for this script; it is not HealthBench text).

    scripts/make_workload.py --dataset data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl \
        --tasks 5000 --out-dataset W.jsonl --out-responses R.jsonl [--seed 0]

Prints "tasks N", "rubric_rows N" and "source_records N". The output files hold the records'
text: keep them out of the repository (bench/run_scenarios.sh writes them under build-release/).
"""

import argparse
import gzip
import json
import sys
import uuid

# A fixed namespace for the derived prompt ids (uuid5 of a project-specific name).
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://healthbench-grader/bench/make_workload")

# Used when a record has no ideal completion. About 1,200 bytes, the median length of the
# official ideal completions.
_CANNED_REPLY = (
    "Thanks for the details. From what you describe, this is most likely not an emergency, but a "
    "few points would help me give you a more useful answer: how long this has been going on, "
    "whether it is getting better or worse, your age, any long-term conditions, and the "
    "medicines you take.\n\n"
    "In the meantime, here is what usually helps:\n"
    "- Rest, drink enough fluids, and keep track of your symptoms in a short daily note.\n"
    "- An over-the-counter pain reliever at the dose on the label can ease discomfort, unless "
    "a doctor has told you to avoid it.\n"
    "- Avoid starting new supplements or stopping prescribed medicines without advice.\n\n"
    "Please seek urgent care (call your local emergency number) if you notice chest pain, "
    "trouble breathing, fainting, sudden weakness or numbness on one side, confusion, a severe "
    "headache unlike any before, or a high fever that does not come down.\n\n"
    "If things are not improving within a week, or you are unsure, book an appointment with "
    "your doctor or a pharmacist. They can examine you, review your history, and decide whether "
    "tests are needed. I can also help you prepare questions for that visit if that would be "
    "useful."
)


def _open_text(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, "r", encoding="utf-8")


def _load_records(path):
    records = []
    with _open_text(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"make_workload: {path}:{number}: invalid JSON: {e}")
            if not isinstance(record, dict) or "prompt_id" not in record:
                sys.exit(f"make_workload: {path}:{number}: not a record with a prompt_id")
            records.append(record)
    if not records:
        sys.exit(f"make_workload: {path}: no records")
    return records


def _reply_for(record):
    ideal = record.get("ideal_completions_data")
    if isinstance(ideal, dict):
        text = ideal.get("ideal_completion")
        if isinstance(text, str) and text.strip():
            return text
    return _CANNED_REPLY


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="HealthBench JSONL (plain or gzip)")
    parser.add_argument("--tasks", type=int, required=True, help="number of tasks to write")
    parser.add_argument("--out-dataset", required=True, help="workload dataset JSONL to write")
    parser.add_argument("--out-responses", required=True, help="responses JSONL to write")
    parser.add_argument("--seed", type=int, default=0,
                        help="mixed into the derived prompt ids (different seeds, disjoint ids)")
    args = parser.parse_args(argv)
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")

    records = _load_records(args.dataset)
    rows = 0
    with open(args.out_dataset, "w", encoding="utf-8") as out_d, \
         open(args.out_responses, "w", encoding="utf-8") as out_r:
        for t in range(args.tasks):
            copy, i = divmod(t, len(records))
            record = dict(records[i])
            prompt_id = str(uuid.uuid5(
                _NAMESPACE, f"{records[i]['prompt_id']}#{copy}#{args.seed}"))
            record["prompt_id"] = prompt_id
            rows += len(record.get("rubrics") or [])
            out_d.write(json.dumps(record, ensure_ascii=False) + "\n")
            out_r.write(json.dumps({"prompt_id": prompt_id, "response": _reply_for(record)},
                                   ensure_ascii=False) + "\n")
    print(f"tasks {args.tasks}")
    print(f"rubric_rows {rows}")
    print(f"source_records {len(records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
