#!/usr/bin/env python3
"""Start-up, grading and reports of one hb-orchestrator run, in seconds, from the sample times
of a `perf record` of it (BENCHMARKS.md): start-up runs from the first sample to the first of
the busiest thread (the HTTP loop, which grades), reports from that thread's last sample to the
process's last.

    perf record -F 499 -o perf.data -- build-release/orchestrator/hb-orchestrator run ...
    perf script -i perf.data -F tid,time > times.txt && bench/perf_timeline.py times.txt
"""
import collections
import sys


def main() -> None:
    first, last, samples = {}, {}, collections.Counter()
    for line in open(sys.argv[1], encoding="utf-8"):
        fields = line.split()
        if len(fields) < 2:
            continue
        tid, time = fields[0], float(fields[1].rstrip(":"))
        first.setdefault(tid, time)
        last[tid] = time
        samples[tid] += 1
    loop = samples.most_common(1)[0][0]
    start, end = min(first.values()), max(last.values())
    print(f"startup={first[loop] - start:.3f} grading={last[loop] - first[loop]:.3f} "
          f"reports={end - last[loop]:.3f} total={end - start:.3f}")


if __name__ == "__main__":
    main()
