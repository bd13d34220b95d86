#!/usr/bin/python3
"""The fleet's metrics against Debian's promtool and prometheus, with real processes on
127.0.0.1 (every port picked by the servers, or by the kernel for Prometheus). Run by ctest
(tests/monitoring/CMakeLists.txt):

  monitoring_test.py --hb-grader B --hb-env B --hb-llm-sim B --hb-orchestrator B
                     --promtool P --prometheus P lint|e2e

lint: `promtool check metrics` on the /metrics of hb-llm-sim, hb-grader, hb-env and a running
`hb-orchestrator run`, and the counters alerts rely on exist at 0 before their first increment.
e2e: see E2eTest. Needs HB_SHARED_DIR (default: ../shared beside the source tree) for the
HealthBench data and the grader template. Everything runs in a temporary folder, removed at the
end; every child process is stopped.
"""
import argparse
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED_DIR = os.environ.get("HB_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
DATA = os.path.join(SHARED_DIR, "data", "healthbench", "2025-05-07-06-14-12_oss_eval.head30.jsonl")
TEMPLATE = os.path.join(SHARED_DIR, "reference", "grader_template.txt")
MONITORING_DIR = os.path.join(SOURCE_DIR, "deploy", "monitoring")
ARGS = None


class Process:
    """A child process whose stdout and stderr lines are read by two threads into queues, so
    that waiting for a line has a deadline (queue.get) and a chatty child never blocks."""

    def __init__(self, argv, env=None):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=None if env is None else dict(os.environ, **env))
        self.lines = {"stdout": queue.Queue(), "stderr": queue.Queue()}
        self.seen = {"stdout": [], "stderr": []}
        for name in ("stdout", "stderr"):
            threading.Thread(target=self._drain, args=(name,), daemon=True).start()

    def _drain(self, name):
        for raw in getattr(self.proc, name):
            self.lines[name].put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines[name].put(None)

    def wait_line(self, stream, pattern, timeout=30.0):
        """The first match of `pattern` in a line of `stream` (its groups)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines[stream].get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError("%s: no line matching %r within %.0f s; %s so far: %s" % (
                    os.path.basename(self.argv[0]), pattern, timeout, stream, self.seen[stream][-5:]))
            if line is None:
                raise RuntimeError("%s exited (%s) before printing %r; %s: %s" % (
                    os.path.basename(self.argv[0]), self.proc.wait(), pattern, stream,
                    self.seen[stream][-10:]))
            self.seen[stream].append(line)
            m = re.search(pattern, line)
            if m:
                return m

    def port(self, stream, prefix):
        return int(self.wait_line(stream, re.escape(prefix) + r"\S*:(\d+)").group(1))

    def metrics_url(self):
        return self.wait_line("stderr", r"metrics on (http://\S+/metrics)").group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Fleet:
    """Starts processes and stops every one of them (reverse order) at close()."""

    def __init__(self):
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="hb-monitoring-")

    def close(self):
        for p in reversed(self.procs):
            p.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, argv, env=None):
        p = Process(argv, env)
        self.procs.append(p)
        return p

    def sim(self, *flags):
        p = self.start([ARGS.hb_llm_sim, "--listen=127.0.0.1:0", "--log-level=error"] + list(flags))
        port = p.port("stdout", "listening on ")
        return p, "http://127.0.0.1:%d" % port

    def grader(self, sim_url, *flags, env=None):
        p = self.start([ARGS.hb_grader, "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                        "--llm-base-url=" + sim_url + "/v1", "--grader-template=" + TEMPLATE,
                        "--log-level=warn"] + list(flags), env=env)
        port = p.port("stdout", "listening on ")
        return p, port, p.metrics_url()

    def env(self, sim_url, *flags):
        p = self.start([ARGS.hb_env, "--split=test=" + DATA, "--listen=127.0.0.1:0",
                        "--http-listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                        "--llm-base-url=" + sim_url + "/v1", "--grader-template=" + TEMPLATE,
                        "--log-level=warn"] + list(flags))
        p.port("stdout", "grpc listening on ")
        http_port = p.port("stdout", "http listening on ")
        return p, http_port, p.metrics_url()

    def responses(self, name):
        """A responses file for every task of DATA (--examples selects among them)."""
        path = os.path.join(self.tmp, name + ".jsonl")
        with open(DATA, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
            for line in f:
                out.write(json.dumps({"prompt_id": json.loads(line)["prompt_id"],
                                      "response": "Call emergency services now."}) + "\n")
        return path

    def orchestrator(self, grader_port, name, examples, *flags):
        out = os.path.join(self.tmp, "run-" + name)
        return self.start([ARGS.hb_orchestrator, "run", "--dataset=" + DATA,
                           "--responses=%s=%s" % (name, self.responses(name)),
                           "--examples=%d" % examples, "--out=" + out,
                           "--grader=ipv4:127.0.0.1:%d" % grader_port,
                           "--grader-template=" + TEMPLATE, "--progress=log",
                           "--progress-interval=1s", "--metrics-listen=127.0.0.1:0"] + list(flags))


def fetch(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def sample(text, name, **labels):
    """The value of series `name{labels}` in a /metrics text (exact label set), or None."""
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if got == labels:
            return float(m.group(3))
    return None


class LintTest(unittest.TestCase):
    """promtool check metrics on every binary's /metrics, and counters present at 0."""

    def setUp(self):
        self.fleet = Fleet()
        self.addCleanup(self.fleet.close)

    def promtool_check(self, name, text):
        r = subprocess.run([ARGS.promtool, "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, "%s /metrics: promtool check metrics: %s%s" % (
            name, r.stdout.decode(), r.stderr.decode()))

    def test_every_binary(self):
        _, sim_url = self.fleet.sim("--latency-ms=300")
        _, grader_port, grader_metrics = self.fleet.grader(sim_url)
        _, _, env_metrics = self.fleet.env(sim_url)
        run = self.fleet.orchestrator(grader_port, "ckpt", 5, "--max-in-flight=2")
        run_metrics = run.metrics_url()
        # Scraped while it runs: after its first progress report, before its last row.
        run.wait_line("stderr", r"^progress: ")
        texts = {"hb-llm-sim": fetch(sim_url + "/metrics"), "hb-grader": fetch(grader_metrics),
                 "hb-env": fetch(env_metrics), "hb-orchestrator run": fetch(run_metrics)}
        self.assertIsNone(run.proc.poll(), "the run ended before it was scraped")
        for name, text in texts.items():
            with self.subTest(binary=name):
                self.promtool_check(name, text)
        grader = texts["hb-grader"]
        for status in ("401", "403", "429", "503", "timeout"):
            self.assertEqual(sample(grader, "hb_grader_upstream_calls_total", status=status), 0.0,
                             "hb-grader exports upstream status %s at 0 before any" % status)
        self.assertEqual(sample(grader, "hb_grader_upstream_max_in_flight"), 2048.0)
        self.assertEqual(sample(texts["hb-env"], "hb_env_judge_failures_total",
                                code="unauthenticated"), 0.0)
        orch = texts["hb-orchestrator run"]
        self.assertEqual(sample(orch, "hb_orchestrator_rows_failed_total", reason="UNAVAILABLE"), 0.0)
        self.assertEqual(sample(orch, "hb_orchestrator_checkpoints_total", state="failed"), 0.0)
        self.assertGreater(sample(orch, "hb_orchestrator_rows_planned_total"), 0.0)
        self.assertGreater(sample(orch, "hb_orchestrator_job_rows"), 0.0)
        self.assertEqual(sample(orch, "hb_orchestrator_max_in_flight"), 2.0)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    for name in ("hb-grader", "hb-env", "hb-llm-sim", "hb-orchestrator", "promtool", "prometheus"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("mode", choices=["lint", "e2e"])
    ARGS, rest = parser.parse_known_args()
    for path in (DATA, TEMPLATE):
        if not os.path.exists(path):
            sys.exit("monitoring_test: %s is missing (set HB_SHARED_DIR)" % path)
    cases = {"lint": LintTest, "e2e": globals().get("E2eTest")}[ARGS.mode]
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cases)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
