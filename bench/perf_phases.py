#!/usr/bin/env python3
"""Shares of an hb-orchestrator profile by phase, from `perf script` output of a
`perf record --call-graph dwarf` run (BENCHMARKS.md, "CPU per row by phase"). A sample counts
for the first phase whose marker frame is on its stack.

    perf script -i perf.data > stacks.txt && bench/perf_phases.py stacks.txt
"""
import collections
import sys

# (phase, frames that mark it), in order of precedence.
PHASES = [
    ("reports: bootstrap (Aggregate)", ["hb::Aggregate"]),
    ("reports: rendering and writing", ["WriteReports"]),
    ("journal writer (SqliteVerdictStore::WriterLoop)", ["WriterLoop"]),
    ("grading loop: parsing the upstream reply", ["InterpretLlmResponse"]),
    ("grading loop: dispatch (queue, request, grader call set-up)",
     ["Dispatcher::StartRow", "Dispatcher::OnReply", "PacedQueue"]),
    ("grading loop: libcurl, sockets, the rest", ["CurlMultiHttpClient::Loop"]),
    ("main thread: loading, planning, other", ["RunWithOptions", "OrchestratorMain"]),
]


def main() -> None:
    counts = collections.Counter()
    total = 0
    for block in open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n\n"):
        frames = [line.strip() for line in block.strip().split("\n")[1:] if line.strip()]
        if not frames:
            continue
        total += 1
        stack = " ".join(frames)
        phase = next((name for name, marks in PHASES if any(m in stack for m in marks)),
                     "other threads")
        counts[phase] += 1
    print("samples", total)
    for name, _ in PHASES + [("other threads", [])]:
        print("%5.1f%% %s" % (100.0 * counts[name] / max(1, total), name))


if __name__ == "__main__":
    main()
