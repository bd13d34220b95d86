#!/usr/bin/python3
"""The fleet's metrics against Debian's promtool and prometheus, with real processes on
127.0.0.1 (every port picked by the servers, or by the kernel for Prometheus). Run by ctest
(tests/monitoring/CMakeLists.txt):

  monitoring_test.py --hb-grader B --hb-env B --hb-llm-sim B --hb-orchestrator B
                     --promtool P --prometheus P lint|e2e

lint: `promtool check metrics` on the /metrics of hb-llm-sim, hb-grader, hb-env and a running
`hb-orchestrator run`, and the counters alerts rely on exist at 0 before their first increment.
e2e: a real Prometheus and faults injected by hb-llm-sim (see E2eTest). Needs HB_SHARED_DIR (default: ../shared beside the source tree) for the
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

    def orchestrator(self, grader_port, name, examples, *flags, metrics=True):
        out = os.path.join(self.tmp, "run-" + name)
        return self.start([ARGS.hb_orchestrator, "run", "--dataset=" + DATA,
                           "--responses=%s=%s" % (name, self.responses(name)),
                           "--examples=%d" % examples, "--out=" + out,
                           "--grader=ipv4:127.0.0.1:%d" % grader_port,
                           "--grader-template=" + TEMPLATE, "--progress=log",
                           "--progress-interval=1s",
                           "--metrics-listen=" + ("127.0.0.1:0" if metrics else "")] + list(flags))


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


def free_port():
    """A port no socket holds now (Prometheus takes no port 0); start() retries a lost race."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """Debian's prometheus on 127.0.0.1 with its storage in `fleet`'s folder, scraping `targets`
    ({(job, namespace): [(host:port, {label: value})]}) every second and evaluating the rules of
    deploy/monitoring/rules every second."""

    def __init__(self, fleet, targets):
        config = os.path.join(fleet.tmp, "prometheus.yml")
        scrape = []
        for (job, namespace), endpoints in sorted(targets.items()):
            scrape.append({"job_name": "%s-%s" % (job, namespace), "static_configs": [
                {"targets": [address], "labels": dict(labels, job=job, namespace=namespace)}
                for address, labels in endpoints]})
        rules = [os.path.join(MONITORING_DIR, "rules", f) for f in
                 ("hb-recording.rules.yaml", "hb-alerts.rules.yaml")]
        with open(config, "w", encoding="utf-8") as f:
            json.dump({"global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                                  "evaluation_interval": "1s"},
                       "rule_files": rules, "scrape_configs": scrape}, f)  # JSON is YAML
        for attempt in range(3):
            port = free_port()
            proc = fleet.start([ARGS.prometheus, "--config.file=" + config,
                                "--storage.tsdb.path=" + os.path.join(fleet.tmp, "tsdb-%d" % attempt),
                                "--web.listen-address=127.0.0.1:%d" % port, "--log.level=info"])
            try:
                proc.wait_line("stderr", "Server is ready to receive web requests", timeout=60)
                self.url = "http://127.0.0.1:%d" % port
                return
            except RuntimeError:  # the port was taken meanwhile: try another
                if attempt == 2:
                    raise

    def api(self, path, **params):
        body = json.loads(fetch(self.url + "/api/v1/" + path + "?" + urllib.parse.urlencode(params)))
        if body.get("status") != "success":
            raise AssertionError("%s %s: %s" % (path, params, body))
        return body["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def alerts(self):
        """{(alertname, namespace): state} of the pending and firing alerts."""
        return {(a["labels"]["alertname"], a["labels"].get("namespace", "")): a["state"]
                for a in self.api("alerts")["alerts"]}


def poll(what, predicate, timeout):
    """Polls Prometheus's HTTP API (an outside process's state: nothing to wait on) every
    0.5 s until predicate() returns a true value; fails naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("%s: not within %.0f s" % (what, timeout))
        tick.wait(0.5)


# Per namespace of the test, the alerts a fault there may raise: its own, and the grader RPC
# error budget (rows the upstream refused fail their RPCs). Any other alert fails the test.
ALLOWED = {
    "auth": {"HbUpstreamAuthRefused", "HbGraderErrorBudgetBurnFast", "HbGraderErrorBudgetBurnSlow"},
    "ratelimit": {"HbUpstreamRateLimited", "HbGraderErrorBudgetBurnFast",
                  "HbGraderErrorBudgetBurnSlow"},
    "failing": {"HbUpstreamFailing", "HbGraderErrorBudgetBurnFast", "HbGraderErrorBudgetBurnSlow"},
    "ok": set(),
}
EXPECTED = {("HbUpstreamAuthRefused", "auth"), ("HbUpstreamRateLimited", "ratelimit"),
            ("HbUpstreamFailing", "failing")}


def dashboard_queries():
    """(dashboard file, panel title, expr) of every panel target of deploy/monitoring/dashboards,
    with the template variables as Grafana's "All" sends them."""
    out = []
    folder = os.path.join(MONITORING_DIR, "dashboards")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            dashboard = json.load(f)
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                out.append((name, panel["title"], target["expr"].replace("$namespace", ".*")))
    return out


class E2eTest(unittest.TestCase):
    """A real Prometheus scraping real processes, with faults injected by hb-llm-sim: a key it
    refuses, 429s, 503s, each behind its own hb-grader and scraped as its own namespace beside a
    healthy one (hb-grader, hb-env and a running `hb-orchestrator run`). The matching alert of
    each fault goes pending or firing in its namespace and no other alert appears anywhere; then
    every query of the dashboards evaluates and returns data."""

    def setUp(self):
        self.fleet = Fleet()
        self.addCleanup(self.fleet.close)

    def start_fleet(self):
        f = self.fleet
        _, ok_sim = f.sim("--latency-ms=500")
        _, auth_sim = f.sim("--api-key=the-right-key")
        _, limit_sim = f.sim("--fault-429=0.5", "--retry-after-ms=50")
        _, failing_sim = f.sim("--fault-503=0.5")
        graders = {"ok": f.grader(ok_sim),
                   "auth": f.grader(auth_sim, env={"OPENAI_API_KEY": "a-revoked-key"}),
                   "ratelimit": f.grader(limit_sim), "failing": f.grader(failing_sim)}
        env, env_http, env_metrics = f.env(ok_sim)
        run = f.orchestrator(graders["ok"][1], "ckpt", 30, "--max-in-flight=2")
        address = lambda url: urllib.parse.urlparse(url).netloc
        targets = {("hb-grader", ns): [(address(g[2]), {})] for ns, g in graders.items()}
        targets[("hb-env", "ok")] = [(address(env_metrics), {})]
        targets[("hb-orchestrator", "ok")] = [
            (address(run.metrics_url()), {"checkpoint": "ckpt", "job_name": "hb-grade-ckpt"})]
        return graders, env_http, run, targets

    def post_rewards(self, env_http, count):
        with open(DATA, encoding="utf-8") as f:
            tasks = [json.loads(line) for line in list(f)[:count]]
        for task in tasks:
            body = json.dumps({"prompt": task["prompt"], "response": "Call emergency services now.",
                               "label": task["prompt_id"]}).encode()
            request = urllib.request.Request("http://127.0.0.1:%d/reward" % env_http, data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as r:
                self.assertIn("reward", json.loads(r.read()))

    def test_faults_fire_their_alerts_and_dashboards_have_data(self):
        graders, env_http, run, targets = self.start_fleet()
        prom = Prometheus(self.fleet, targets)
        # Traffic starts once Prometheus holds the counters at 0: increase() sees the first 401.
        for ns, status in (("auth", "401"), ("ratelimit", "429"), ("failing", "503")):
            poll("%s's upstream %s counter scraped at 0" % (ns, status), lambda: prom.query(
                'hb_grader_upstream_calls_total{namespace="%s",status="%s"} == 0' % (ns, status)),
                timeout=30)
        for ns in ("auth", "ratelimit", "failing"):
            self.fleet.orchestrator(graders[ns][1], "traffic-" + ns, 3, "--max-in-flight=4",
                                    metrics=False)
        self.post_rewards(env_http, 3)

        def expected_present():
            alerts = prom.alerts()
            for (name, ns), state in alerts.items():
                self.assertIn(name, ALLOWED.get(ns, set()),
                              "unrelated alert %s (%s) in namespace '%s'; all: %s" % (
                                  name, state, ns, alerts))
            return EXPECTED <= set(alerts) and alerts
        alerts = poll("alerts %s pending or firing" % sorted(EXPECTED), expected_present, 90)
        self.assertEqual(alerts[("HbUpstreamAuthRefused", "auth")], "firing")  # no `for`
        self.assertIsNone(run.proc.poll(), "the orchestrator must still be running")

        def all_have_data():
            return all(prom.query(expr) for _, _, expr in dashboard_queries())
        poll("every dashboard query returns data", all_have_data, 30)
        for name, title, expr in dashboard_queries():
            with self.subTest(dashboard=name, panel=title):
                self.assertTrue(prom.query(expr), "no data: %s" % expr)


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
    cases = {"lint": LintTest, "e2e": E2eTest}[ARGS.mode]
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cases)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
