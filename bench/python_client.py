#!/usr/bin/python3
"""Rewards/s through the Python client (clients/python/healthbench_env) against hb-env and
hb-llm-sim on 127.0.0.1: what a trainer's reward function gets from one process.

  HB_SHARED_DIR=../shared bench/python_client.py --build build --concurrency 200 \
      --graded 1000 --cache-hits 5000 --latency-ms 1000

Starts hb-llm-sim (fixed --latency-ms, no jitter) and hb-env (--split test = the 30 real main
records, embedded grader), then with one HealthBenchEnv(max_concurrency=C):
  graded:     --graded unique replies (each graded: ~11.7 judge calls per task), after a
              warm-up of C replies, as submit_batch;
  cache hits: --cache-hits submissions of replies already graded (answered from the cache).
Prints one JSON line per phase: submissions, seconds, rewards/s, the ideal for the graded phase
(C / judge latency), the ratio, client latency p50/p99, and the load average before.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "clients"))

import python_client_test as harness  # noqa: E402  (process helpers: start_sim, start_env)
from healthbench_env import HealthBenchEnv  # noqa: E402


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed_batch(client, pairs):
    """submit_batch with each submission's own latency recorded."""
    latencies = []

    def one(task_id, reply):
        started = time.monotonic()
        result = client.submit(task_id, reply)
        latencies.append(time.monotonic() - started)
        return result

    pool = client._pool()
    started = time.monotonic()
    futures = [pool.submit(one, t, r) for t, r in pairs]
    results = [f.result() for f in futures]
    return results, time.monotonic() - started, latencies


def report(phase, n, seconds, latencies, load, ideal=None):
    line = {"phase": phase, "submissions": n, "seconds": round(seconds, 2),
            "rewards_per_s": round(n / seconds, 1),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 1), "loadavg_before": load}
    if ideal:
        line["ideal_rewards_per_s"] = ideal
        line["ratio"] = round(n / seconds / ideal, 3)
    print(json.dumps(line), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"))
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--graded", type=int, default=1000)
    parser.add_argument("--cache-hits", type=int, default=5000)
    parser.add_argument("--latency-ms", type=int, default=1000)
    args = parser.parse_args()
    harness.BINARIES.update({"hb-env": args.build + "/environment/hb-env",
                             "hb-llm-sim": args.build + "/simulator/hb-llm-sim"})
    sim, sim_url = harness.start_sim("--latency-ms=%d" % args.latency_ms, "--latency-jitter=0")
    env, url = harness.start_env(sim_url, "--max-pending=%d" % (4 * args.concurrency),
                                 cache_entries=100000)
    try:
        ids = harness.dataset_ids()
        client = HealthBenchEnv(url, max_concurrency=args.concurrency)
        pairs = [(ids[i % len(ids)], "reply %d" % i)
                 for i in range(args.concurrency + args.graded)]
        timed_batch(client, pairs[:args.concurrency])  # warm-up (connections, threads)
        load = os.getloadavg()[0]
        _, seconds, latencies = timed_batch(client, pairs[args.concurrency:])
        report("graded", args.graded, seconds, latencies, load,
               ideal=args.concurrency / (args.latency_ms / 1000.0))
        hits = [pairs[i % len(pairs)] for i in range(args.cache_hits)]
        load = os.getloadavg()[0]
        _, seconds, latencies = timed_batch(client, hits)
        report("cache_hits", args.cache_hits, seconds, latencies, load)
        client.close()
    finally:
        env.stop()
        sim.stop()


if __name__ == "__main__":
    main()
