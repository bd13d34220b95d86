#!/usr/bin/python3
"""Cross-check for hb::Aggregate / hb::PairedBootstrap / hb::NumpyMean / hb::NumpyStd.

Re-implements, in our own words, the reference's aggregation (simple-evals HealthBench
`_aggregate_get_clipped_mean` and `_compute_clipped_stats`, SPEC section 9) with numpy's global
legacy RNG seeded first by np.random.seed(seed), so every digit is reproducible:
  * per metric key (first appearance across tasks; "score" = the task's overall_score, added
    right after each task's own metrics): clip(mean, 0, 1), n, and the population std of
    `samples` clipped means of np.random.choice(values, len(values));
  * "score" is popped from the final map (it is the top line), its ":n_samples" and
    ":bootstrap_std" stay.
The length-adjusted score of one task (simple-evals PR #108) is score minus
penalty_per_500_chars * ((len(reply) - center) / 500.0), with Python's len() of the reply str.
np.mean of a resample is taken on the numpy array itself; np.mean(list(resample)) (what the
reference writes) builds the same contiguous float64 array, so the result is identical.

Usage: aggregate_reference.py IN.json OUT.json
IN.json:  {"cases":  [{"seed": int, "samples": int, "tasks": [[[name, value], ...], ...]}],
           "vectors": [[float, ...], ...],
           "paired": [{"seed": int, "samples": int, "a": [float], "b": [float]}],
           "length": [{"score": float, "reply": str, "center": float, "penalty": float}]}
OUT.json: {"cases":  [{"score": hex, "metrics": [[key, hex], ...]}],
           "vectors": [{"mean": hex, "std": hex}],
           "paired": [{"difference": hex, "ci_low": hex, "ci_high": hex}],
           "length": [{"chars": int, "adjusted": hex}]}
where hex is float.hex() of the float64 result. numpy only (plus the standard library).
"""
import json
import sys

import numpy as np


def _hex(x):
    return float(x).hex()


def clipped_mean(values):
    return np.clip(np.mean(values), 0, 1)


def bootstrap_std(values, samples):
    values = np.asarray(values, dtype=np.float64)
    means = [clipped_mean(np.random.choice(values, len(values))) for _ in range(samples)]
    return np.std(means)


def aggregate(tasks, seed, samples):
    np.random.seed(seed)
    by_name = {}  # insertion-ordered, like the reference's defaultdict(list)
    for metrics in tasks:
        as_dict = {}
        for name, value in metrics:
            as_dict[name] = value
            by_name.setdefault(name, []).append(value)
        if "overall_score" in as_dict:
            by_name.setdefault("score", []).append(as_dict["overall_score"])
    final = {}
    for name, values in by_name.items():
        final[name] = clipped_mean(values)
        final[name + ":n_samples"] = len(values)
        final[name + ":bootstrap_std"] = bootstrap_std(values, samples)
    score = final.pop("score", None)
    return {
        "score": None if score is None else _hex(score),
        "metrics": [[key, _hex(value)] for key, value in final.items()],
    }


def paired(a, b, seed, samples):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    np.random.seed(seed)
    n = len(a)
    diffs = []
    for _ in range(samples):
        idx = np.random.choice(n, n)
        diffs.append(clipped_mean(b[idx]) - clipped_mean(a[idx]))
    low, high = np.percentile(diffs, [2.5, 97.5])
    return {
        "difference": _hex(clipped_mean(b) - clipped_mean(a)),
        "ci_low": _hex(low),
        "ci_high": _hex(high),
    }


def length_adjusted(score, reply, center, penalty):
    return {"chars": len(reply),
            "adjusted": _hex(score - penalty * ((len(reply) - center) / 500.0))}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    out = {
        "cases": [aggregate(c["tasks"], c["seed"], c["samples"]) for c in spec.get("cases", [])],
        "vectors": [{"mean": _hex(np.mean(np.asarray(v, dtype=np.float64))),
                     "std": _hex(np.std(np.asarray(v, dtype=np.float64)))}
                    for v in spec.get("vectors", [])],
        "paired": [paired(p["a"], p["b"], p["seed"], p["samples"]) for p in spec.get("paired", [])],
        "length": [length_adjusted(x["score"], x["reply"], x["center"], x["penalty"])
                   for x in spec.get("length", [])],
    }
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
