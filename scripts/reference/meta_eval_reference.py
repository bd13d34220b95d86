#!/usr/bin/python3
"""Cross-check for the C++ meta-eval (common/healthbench/meta_eval_dataset.* and
common/grading/meta_eval.*): an independent re-implementation, in our own words, of the
reference's meta-eval (simple-evals `healthbench_meta_eval.py` and the `aggregate_results` of
`common.py` it calls; SPEC section 15), run under /usr/bin/python3 with numpy 1.24.

Given a meta-eval JSONL file and the grader's verdict on each of its rows, it writes the
meta_eval.json document the C++ code must write, value for value:
  * the selection: random.Random(0).sample(rows, N) when --examples N < len(rows), else every
    row in file order;
  * the grader prompt of every selected row: the template with <<conversation>> replaced by
    the row's prompt plus {assistant: completion}, each turn "role: content", turns joined by
    a blank line; then <<rubric_item>> replaced by the raw `rubric` string (no "[points] ");
  * per graded row: num_physician_labels, percent_physician_pos, model_predicted_positive
    (a bool), each again as "<category>: <name>", and the row's score (the verdict); the
    aggregation is common.aggregate_results with ("mean", "n_samples", "bootstrap_std"):
    plain np.mean (no clipping), len, and the population std of 1000 unclipped means of
    np.random.choice(values, len(values)), drawing from np.random.seed(--seed) key by key in
    first-appearance order; "score" is popped, its ":n_samples"/":bootstrap_std" stay;
  * the model's pairwise agreement with every physician label of its row, per class and per
    category, with F1 and balanced variants; each non-None value joins the metrics;
    score = pairwise_model_f1_balanced (null when absent: the reference would raise KeyError);
  * each physician's agreement with the other physicians of the same rows (the same function
    with role "physician"), keyed by metric then physician id; and, the project's addition,
    per metric the np.mean (over physicians in first-appearance order), min, max and count of
    the physicians' non-None values.
A row whose verdict is null failed (the reference retries forever, so it has none): it is left
out of the per-row means and the model's agreement, listed under "failed_rows", and still
counted for the physicians (their agreement does not depend on the grader).

Usage: meta_eval_reference.py --data FILE --verdicts FILE --template FILE --out FILE
                              [--examples N] [--seed S] [--samples B]
--verdicts: a JSON list with one true/false/null per row of FILE, in file order.
--out: {"selection": [0-based file indices], "prompts": [...], "document": {...}}.
Standard library and numpy only.
"""
import argparse
import json
import random
from collections import defaultdict

import numpy as np


def read_rows(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [json.loads(line) for line in lines]


def grader_prompt(template, row):
    turns = list(row["prompt"]) + [{"role": "assistant", "content": row["completion"]}]
    conversation = "\n\n".join(f"{t['role']}: {t['content']}" for t in turns)
    return template.replace("<<conversation>>", conversation).replace(
        "<<rubric_item>>", row["rubric"])


def row_metrics(row, verdict):
    labels = row["binary_labels"]
    base = {
        "num_physician_labels": len(labels),
        "percent_physician_pos": sum(labels) / len(labels),
        "model_predicted_positive": verdict,
    }
    out = dict(base)
    for name, value in base.items():
        out[row["category"] + ": " + name] = value
    return out


def aggregate(per_row, seed, samples):
    """common.aggregate_results(default_stats=("mean", "n_samples", "bootstrap_std"))."""
    np.random.seed(seed)
    values_by_name = {}
    for metrics, score in per_row:
        for name, value in metrics.items():
            values_by_name.setdefault(name, []).append(value)
        values_by_name.setdefault("score", []).append(score)
    final = {}
    for name, values in values_by_name.items():
        final[name] = np.mean(values)
        final[name + ":n_samples"] = len(values)
        final[name + ":bootstrap_std"] = np.std(
            [np.mean(np.random.choice(values, len(values))) for _ in range(samples)])
    final.pop("score", None)
    return final


def agreement(self_labels, other_label_lists, categories, role):
    """Pairwise agreement of one rater with every other label of the same row."""
    lists = defaultdict(list)
    for own, others, category in zip(self_labels, other_label_lists, categories, strict=True):
        for other in others:
            agree = own == other
            for metric, cls in (("precision", "pos" if own else "neg"),
                                ("recall", "pos" if other else "neg")):
                key = f"pairwise_{role}_{metric}_{cls}"
                lists[key].append(agree)
                lists[f"{category}: {key}"].append(agree)
    out = {}
    for key, entries in lists.items():
        out[key] = {"n": len(entries), "value": sum(entries) / len(entries) if entries else None}

    derived = {}
    for key, precision in out.items():
        if not key.endswith(("_precision_pos", "_precision_neg")):
            continue
        stem, cls = key.rsplit("_precision_", 1)
        recall = out.get(f"{stem}_recall_{cls}")
        if recall is None:
            continue
        p, r = precision["value"], recall["value"]
        if p is None or r is None:
            derived[f"{stem}_f1_{cls}"] = {"n": precision["n"] + recall["n"], "value": None}
            continue
        f1 = 0.0 if p == 0 and r == 0 else 2 * (p * r) / (p + r)
        derived[f"{stem}_f1_{cls}"] = {"n": precision["n"] + recall["n"] - p * precision["n"],
                                       "value": f1}
    out.update(derived)

    balanced = {}
    for key, pos in out.items():
        if not key.endswith("_pos"):
            continue
        stem = key[: -len("_pos")]
        neg = out.get(stem + "_neg")
        if neg is None:
            continue
        value = None
        if pos["value"] is not None and neg["value"] is not None:
            value = (pos["value"] + neg["value"]) / 2
        balanced[stem + "_balanced"] = {"n": pos["n"] + neg["n"], "value": value}
    out.update(balanced)
    return out


def physicians(rows):
    by_physician = {}  # first-appearance order
    for row in rows:
        labels = row["binary_labels"]
        for i, label in enumerate(labels):
            lists = by_physician.setdefault(row["anonymized_physician_ids"][i], ([], [], []))
            lists[0].append(label)
            lists[1].append(labels[:i] + labels[i + 1:])
            lists[2].append(row["category"])
    per_metric = {}
    for physician, (own, others, categories) in by_physician.items():
        for key, metric in agreement(own, others, categories, "physician").items():
            per_metric.setdefault(key, {})[physician] = metric
    summary = {}
    for key, by_id in per_metric.items():
        values = [m["value"] for m in by_id.values() if m["value"] is not None]
        summary[key] = {
            "mean": float(np.mean(values)) if values else None,
            "min": min(values) if values else None,
            "max": max(values) if values else None,
            "physicians": len(values),
        }
    return per_metric, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--verdicts", required=True)
    parser.add_argument("--template", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--examples", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()

    rows = read_rows(args.data)
    with open(args.verdicts, encoding="utf-8") as f:
        verdicts = json.load(f)
    assert len(verdicts) == len(rows)
    with open(args.template, "rb") as f:
        template = f.read().decode("utf-8")

    indexed = list(enumerate(rows))
    if args.examples is not None and len(indexed) > args.examples:
        indexed = random.Random(0).sample(indexed, args.examples)
    selected = [row for _, row in indexed]

    graded = [(i, row, verdicts[i]) for i, row in indexed if verdicts[i] is not None]
    per_row = []
    for _, row, verdict in graded:
        metrics = row_metrics(row, verdict)
        per_row.append((metrics, metrics["model_predicted_positive"]))
    metrics = aggregate(per_row, args.seed, args.samples) if per_row else {}
    model = agreement([v for _, _, v in graded], [r["binary_labels"] for _, r, _ in graded],
                      [r["category"] for _, r, _ in graded], "model")
    metrics.update({k: v["value"] for k, v in model.items() if v["value"] is not None})
    per_physician, summary = physicians(selected)

    document = {
        "score": metrics.get("pairwise_model_f1_balanced"),
        "metrics": {k: (v if isinstance(v, int) else float(v)) for k, v in metrics.items()},
        "model_agreement_metrics": model,
        "physician_agreement_metric_lists": per_physician,
        "physician_agreement_summary": summary,
        "rows": {"selected": len(selected), "graded": len(graded),
                 "failed": len(selected) - len(graded)},
        "failed_rows": [{"line": i + 1} for i, _ in indexed if verdicts[i] is None],
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"selection": [i for i, _ in indexed],
                   "prompts": [grader_prompt(template, row) for row in selected],
                   "document": document}, f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
