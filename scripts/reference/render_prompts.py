#!/usr/bin/python3
"""Renders HealthBench grader prompts the way the reference (simple-evals healthbench_eval.py)
does, as an independent cross-check of the C++ rendering (tests/common/healthbench/
prompts_test.cc). Standard library only; run with /usr/bin/python3.

For every record of DATA (JSONL, plain or gzip) and every rubric item, prints one JSON line
  {"prompt_id": ..., "item": <index in rubrics>, "prompt": <filled grader prompt>}
where the graded conversation is [system?] + prompt + [assistant: REPLY], each message
rendered as "role: content" and joined by a blank line, the item as "[points] criterion",
and the template filled by replacing <<conversation>> first, then <<rubric_item>>.
"""

import argparse
import gzip
import json
import sys


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def render_conversation(messages):
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


def render_item(item):
    # str() of the parsed JSON number: 10 -> "10", 5.0 -> "5.0".
    return f"[{item['points']}] {item['criterion']}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--template", required=True)
    parser.add_argument("--reply-file", required=True,
                        help="UTF-8 file holding the assistant reply to grade")
    parser.add_argument("--system-file", help="UTF-8 file holding a policy system prompt")
    parser.add_argument("--system-every", type=int, default=0,
                        help="give the system prompt to records whose 0-based index is a "
                             "multiple of this (0: never)")
    args = parser.parse_args()

    template = read_text(args.template)
    reply = read_text(args.reply_file)
    system = read_text(args.system_file) if args.system_file else None

    # Lines as a line reader sees them: split on "\n" only (str.splitlines would also split
    # on U+2028 and friends inside the JSON text).
    lines = read_text(args.data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = sys.stdout
    for index, line in enumerate(lines):
        record = json.loads(line)
        conversation = list(record["prompt"])
        if system is not None and args.system_every > 0 and index % args.system_every == 0:
            conversation = [{"role": "system", "content": system}] + conversation
        conversation = conversation + [{"role": "assistant", "content": reply}]
        rendered = render_conversation(conversation)
        for item_index, item in enumerate(record["rubrics"]):
            prompt = template.replace("<<conversation>>", rendered).replace(
                "<<rubric_item>>", render_item(item))
            out.write(json.dumps({"prompt_id": record["prompt_id"], "item": item_index,
                                  "prompt": prompt}) + "\n")


if __name__ == "__main__":
    main()
