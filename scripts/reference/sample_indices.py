#!/usr/bin/python3
"""Prints CPython's random.Random(SEED).sample(range(N), K) as a JSON list, one line per
N,K[,SEED] argument (SEED defaults to 0): the reference's `--examples K` selection (SPEC §12),
for cross-checking hb::SampleIndices. Standard library only; run with /usr/bin/python3 (3.11).

Usage: sample_indices.py 5000,10 1000,10,12345 ...
"""

import json
import random
import sys


def main():
    for arg in sys.argv[1:]:
        parts = [int(x) for x in arg.split(",")]
        n, k = parts[0], parts[1]
        seed = parts[2] if len(parts) > 2 else 0
        print(json.dumps(random.Random(seed).sample(range(n), k)))


if __name__ == "__main__":
    main()
