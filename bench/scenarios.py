#!/usr/bin/env python3
"""End-to-end benchmark scenarios for the grading pipeline (standard library only).

Run through bench/run_scenarios.sh, which builds the Release binaries first. Each run starts a
fresh hb-llm-sim and fresh graders on 127.0.0.1, runs `hb-orchestrator run` over the workload,
measures every process (CPU seconds from /proc/<pid>/stat or wait4, peak RSS from VmHWM or
wait4), measures the scenario's limit in the same run, and appends one JSON line per run to
bench/results/<scenario>.jsonl. A markdown table of the medians goes to stdout.

Scenarios (see bench/run_scenarios.sh --help):
  overhead   simulator at 0 ms: rows/s, CPU s per 1,000 rows and peak RSS per process; the
             ceiling is the simulator's raw capacity for the same request bodies (wrk).
  latency    simulator at 1 s +- 20 %, 2,000 rows in flight; limit = in-flight / mean latency;
             added latency per row sampled by hb-row-latency-probe.
  ratelimit  simulator enforcing RPM and TPM (429 + Retry-After + x-ratelimit-*); sustained
             rate over full 60 s windows vs the limit, 429 share, failed rows.
  memory     1 grader, 2,000 rows in flight at 1 s: peak RSS of the orchestrator and the grader.
  reference  the same workload driven like the reference (hb-reference-pace: 120 task workers x
             min(CPUs, items) blocking calls) next to the pipeline, same simulator settings.
"""

import argparse
import datetime
import json
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")
MAIN_DATASET = "2025-05-07-06-14-12_oss_eval.jsonl"
HEAD30 = "2025-05-07-06-14-12_oss_eval.head30.jsonl"
SCENARIOS = ["overhead", "latency", "ratelimit", "memory", "reference"]


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Processes and /proc


def proc_cpu_s(pid):
    """utime + stime of a live process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A background server whose first stdout line is 'listening on HOST:PORT'."""

    def __init__(self, name, argv, log_dir, env=None):
        self.name = name
        self.argv = argv
        self.stderr_path = os.path.join(log_dir, f"{name}.stderr")
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                     cwd=ROOT, env=env, text=True)
        self.pid = self.proc.pid
        self.addr = None
        self.metrics_url = None
        deadline = time.time() + 30
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line or line.startswith("listening on "):
                break
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"{name} did not start ({' '.join(argv)}); see {self.stderr_path}")
        self.addr = line.split()[-1]
        # Keep draining stdout so the process never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.cpu_start = proc_cpu_s(self.pid)

    def snapshot(self):
        """CPU seconds since start (or the last mark) and VmHWM, read while alive."""
        return {"cpu_s": proc_cpu_s(self.pid) - self.cpu_start,
                "peak_rss_kb": proc_status_kb(self.pid, "VmHWM")}

    def mark_cpu(self):
        self.cpu_start = proc_cpu_s(self.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


def fetch(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def prom_values(text):
    """Prometheus text -> {'name{labels}': value}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            key, value = line.rsplit(" ", 1)
            out[key.strip()] = float(value)
        except ValueError:
            continue
    return out


def prom_sum(values, name, label_filter=None):
    total = 0.0
    for key, v in values.items():
        base = key.split("{", 1)[0]
        if base != name:
            continue
        if label_filter and label_filter not in key:
            continue
        total += v
    return total


class Sampler:
    """Polls /metrics of the simulator and graders while a job runs; keeps maxima."""

    def __init__(self, sim, graders, interval=0.5):
        self.sim, self.graders, self.interval = sim, graders, interval
        self.max_sim_in_flight = 0
        self.max_grader_upstream_in_flight = [0] * len(graders)
        self.max_orch_rss_kb = 0
        self.orch_pid = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, orch_pid):
        self.orch_pid = orch_pid
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                v = prom_values(fetch(f"http://{self.sim.addr}/metrics"))
                self.max_sim_in_flight = max(self.max_sim_in_flight,
                                             int(prom_sum(v, "hb_sim_in_flight")))
            except Exception:
                pass
            for i, g in enumerate(self.graders):
                if not g.metrics_url:
                    continue
                try:
                    v = prom_values(fetch(g.metrics_url))
                    self.max_grader_upstream_in_flight[i] = max(
                        self.max_grader_upstream_in_flight[i],
                        int(prom_sum(v, "hb_grader_upstream_in_flight")))
                except Exception:
                    pass
            try:
                self.max_orch_rss_kb = max(self.max_orch_rss_kb,
                                           proc_status_kb(self.orch_pid, "VmRSS"))
            except Exception:
                pass
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


# ---------------------------------------------------------------------------------------------
# The bench


class Bench:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.bin = {
            "sim": os.path.join(self.build, "simulator/hb-llm-sim"),
            "grader": os.path.join(self.build, "grader_service/hb-grader"),
            "orch": os.path.join(self.build, "orchestrator/hb-orchestrator"),
            "ref": os.path.join(self.build, "bench/hb-reference-pace"),
            "stats": os.path.join(self.build, "bench/hb-workload-stats"),
            "probe": os.path.join(self.build, "bench/hb-row-latency-probe"),
        }
        self.template = os.path.abspath(args.template)
        self.results_dir = os.path.abspath(args.results_dir)
        self.work = os.path.join(self.build, "bench-work")
        os.makedirs(self.work, exist_ok=True)
        os.makedirs(self.results_dir, exist_ok=True)
        self.ncpu = os.cpu_count() or 1

    # -- inputs

    def require(self, *names):
        missing = [self.bin[n] for n in names if not os.access(self.bin[n], os.X_OK)]
        if missing:
            raise RuntimeError("missing binaries: " + ", ".join(missing))

    def make_workload(self):
        a = self.args
        src = os.path.abspath(a.dataset)
        tag = f"{a.tasks}-{os.path.basename(src).split('.jsonl')[0][-24:]}"
        self.dataset = os.path.join(self.work, f"workload-{tag}.jsonl")
        self.responses = os.path.join(self.work, f"responses-{tag}.jsonl")
        self.bodies = os.path.join(self.work, f"bodies-{tag}.txt")
        stats_path = os.path.join(self.work, f"stats-{tag}.json")
        if not (os.path.exists(self.dataset) and os.path.exists(self.responses)
                and os.path.getmtime(self.dataset) > os.path.getmtime(src)):
            out = subprocess.run(
                [sys.executable, os.path.join(ROOT, "scripts/make_workload.py"), "--dataset", src,
                 "--tasks", str(a.tasks), "--out-dataset", self.dataset,
                 "--out-responses", self.responses], check=True, capture_output=True, text=True)
            log("workload: " + out.stdout.strip().replace("\n", ", "))
            if os.path.exists(stats_path):
                os.remove(stats_path)
        if not os.path.exists(stats_path):
            self.require("stats")
            out = subprocess.run(
                [self.bin["stats"], f"--dataset={self.dataset}", f"--responses={self.responses}",
                 f"--grader-template={self.template}", f"--dump-bodies={self.bodies}",
                 "--dump-limit=3000"], check=True, capture_output=True, text=True)
            with open(stats_path, "w") as f:
                f.write(out.stdout)
        with open(stats_path) as f:
            self.stats = json.loads(f.read())
        self.stats["source_dataset"] = src
        self.rows_total = self.stats["rows"]
        log(f"workload: {self.stats['tasks']} tasks, {self.rows_total} rows, "
            f"{self.stats['prompt_tokens_est']} prompt tokens (est.), prefix shared with the "
            f"previous request of the task {self.stats['prefix_shared_with_previous_share']:.1%}")
        # One line per distinct workload in results/workload.jsonl.
        wl_path = os.path.join(self.results_dir, "workload.jsonl")
        seen = set()
        if os.path.exists(wl_path):
            with open(wl_path) as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    seen.add((r.get("source_dataset"), r.get("tasks"), r.get("rows")))
        if (src, self.stats["tasks"], self.stats["rows"]) not in seen:
            self.append_result("workload", dict(self.stats, time=self.now()))

    # -- helpers

    @staticmethod
    def now():
        return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def append_result(self, scenario, record):
        with open(os.path.join(self.results_dir, f"{scenario}.jsonl"), "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")

    def run_dir(self, scenario, run):
        d = os.path.join(self.work, "runs",
                         f"{scenario}-{self.args.tasks}-r{run}-{time.strftime('%H%M%S')}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def start_sim(self, log_dir, flags, request_log=None, name="sim"):
        argv = [self.bin["sim"], "--listen=127.0.0.1:0", f"--threads={self.args.sim_threads}",
                "--log-level=warn"] + flags
        if request_log:
            argv.append(f"--request-log={request_log}")
        return Server(name, argv, log_dir)

    def start_graders(self, log_dir, n, sim_addr, max_upstream):
        graders = []
        for i in range(n):
            mport = free_port()
            argv = [self.bin["grader"], "--listen=127.0.0.1:0",
                    f"--metrics-listen=127.0.0.1:{mport}",
                    f"--llm-base-url=http://{sim_addr}/v1", f"--grader-template={self.template}",
                    f"--max-upstream-in-flight={max_upstream}", "--attempt-timeout=60s",
                    # Above a replica's share of the orchestrator's in-flight (round robin is
                    # not exact): a refusal would halve the orchestrator's window.
                    f"--max-concurrent-rpcs={max_upstream}",
                    "--log-level=warn"] + self.args.grader_flag
            g = Server(f"grader{i + 1}", argv, log_dir)
            g.metrics_url = f"http://127.0.0.1:{mport}/metrics"
            graders.append(g)
        return graders

    def run_orchestrator(self, log_dir, graders, sim, max_in_flight, extra=()):
        out_dir = os.path.join(log_dir, "out")
        target = "ipv4:" + ",".join(g.addr for g in graders)
        argv = [self.bin["orch"], "run", f"--dataset={self.dataset}",
                f"--responses=bench={self.responses}", f"--out={out_dir}", f"--grader={target}",
                f"--max-in-flight={max_in_flight}", "--progress=log", "--progress-interval=1s",
                f"--grader-template={self.template}", "--force-new"] + list(extra)
        stderr_path = os.path.join(log_dir, "orchestrator.stderr")
        for s in [sim] + graders:
            s.mark_cpu()
        sim_metrics_before = prom_values(fetch(f"http://{sim.addr}/metrics"))
        sampler = Sampler(sim, graders)
        with open(stderr_path, "w") as err:
            t0 = time.time()
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
            sampler.start(proc.pid)
            _, status, usage = self.wait4_with_timeout(proc, self.args.job_timeout)
            wall = time.time() - t0
        sampler.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        snaps = {s.name: s.snapshot() for s in [sim] + graders}
        sim_metrics = prom_values(fetch(f"http://{sim.addr}/metrics"))
        res = {
            "orchestrator_exit": proc.returncode,
            "wall_s": wall,
            "orchestrator_cpu_s": usage.ru_utime + usage.ru_stime,
            "orchestrator_peak_rss_kb": usage.ru_maxrss,
            "processes": snaps,
            "max_sim_in_flight": sampler.max_sim_in_flight,
            "max_grader_upstream_in_flight": sampler.max_grader_upstream_in_flight,
        }
        for key, name, flt in [
            ("sim_requests", "hb_sim_requests_total", None),
            ("sim_429", "hb_sim_responses_total", 'status="429"'),
            ("sim_200", "hb_sim_responses_total", 'status="200"'),
            ("sim_rate_limited", "hb_sim_rate_limited_total", None),
            ("prompt_tokens", "hb_sim_prompt_tokens_total", None),
            ("cached_tokens", "hb_sim_cached_tokens_total", None),
            ("completion_tokens", "hb_sim_completion_tokens_total", None),
        ]:
            res[key] = prom_sum(sim_metrics, name, flt) - prom_sum(sim_metrics_before, name, flt)
        res.update(self.parse_orchestrator(stderr_path, out_dir))
        if res.get("grade_start") and res.get("last_row_ms"):
            res["grade_s"] = res["last_row_ms"] / 1000.0 - res["grade_start"]
        else:
            res["grade_s"] = wall
        res["rows_per_s"] = res["ok_rows"] / res["grade_s"] if res["grade_s"] > 0 else 0
        res["rows_per_s_end_to_end"] = res["ok_rows"] / wall if wall > 0 else 0
        n = max(res["ok_rows"], 1)
        res["cpu_s_per_1000_rows"] = {"orchestrator": res["orchestrator_cpu_s"] * 1000 / n}
        res["peak_rss_mb"] = {"orchestrator": res["orchestrator_peak_rss_kb"] / 1024}
        for name, s in snaps.items():
            res["cpu_s_per_1000_rows"][name] = s["cpu_s"] * 1000 / n
            res["peak_rss_mb"][name] = s["peak_rss_kb"] / 1024
        total_cpu = res["orchestrator_cpu_s"] + sum(s["cpu_s"] for s in snaps.values())
        res["cpu_s_per_1000_rows"]["all"] = total_cpu * 1000 / n
        # CPU cores the whole pipeline kept busy over the orchestrator's lifetime.
        res["cores_busy"] = total_cpu / wall if wall > 0 else 0
        if proc.returncode != 0:
            log(f"orchestrator exited {proc.returncode}; see {stderr_path}")
            if res["ok_rows"] == 0:
                with open(stderr_path, errors="replace") as f:
                    tail = f.read().strip().splitlines()[-1:] or [""]
                raise RuntimeError(f"hb-orchestrator run exited {proc.returncode}: {tail[0]}")
        return res

    def wait4_with_timeout(self, proc, timeout):
        deadline = time.time() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                return pid, status, usage
            if time.time() > deadline:
                log(f"job timed out after {timeout}s: sending SIGTERM")
                proc.send_signal(signal.SIGTERM)
                deadline = time.time() + 60
                timeout = 60
            time.sleep(0.05)

    def parse_orchestrator(self, stderr_path, out_dir):
        res = {"grade_start": None, "last_progress": None}
        ts = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) ")
        with open(stderr_path, errors="replace") as f:
            for line in f:
                if "to grade" in line and res["grade_start"] is None:
                    m = ts.match(line)
                    if m:
                        dt = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
                        res["grade_start"] = time.mktime(dt.timetuple()) + dt.microsecond / 1e6
                elif line.startswith("progress: "):
                    res["last_progress"] = line.strip()
        journal = None
        for dirpath, _, files in os.walk(out_dir):
            if "journal.sqlite" in files:
                journal = os.path.join(dirpath, "journal.sqlite")
                break
        res.update(ok_rows=0, failed_rows=0, attempts=0, first_row_ms=None, last_row_ms=None)
        if journal:
            db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
            row = db.execute(
                "SELECT SUM(status='ok'), SUM(status!='ok'), SUM(attempts), MIN(time_unix_ms), "
                "MAX(time_unix_ms) FROM rows").fetchone()
            times = [t for (t,) in db.execute(
                "SELECT time_unix_ms FROM rows WHERE status='ok' ORDER BY time_unix_ms")]
            db.close()
            res.update(ok_rows=row[0] or 0, failed_rows=row[1] or 0, attempts=row[2] or 0,
                       first_row_ms=row[3], last_row_ms=row[4])
            # Steady state: rows recorded in the middle 80 % of the grading span (without the
            # ramp-up and the drain of the last rows in flight).
            if len(times) > 100 and times[-1] - times[0] > 1000:
                span = times[-1] - times[0]
                lo, hi = times[0] + 0.1 * span, times[-1] - 0.1 * span
                mid = sum(1 for t in times if lo <= t < hi)
                res["rows_per_s_steady"] = mid / ((hi - lo) / 1000.0)
        return res

    def stop_all(self, servers):
        for s in servers:
            try:
                s.stop()
            except Exception as e:
                log(f"stopping {s.name}: {e}")

    def base_record(self, scenario, run):
        return {"scenario": scenario, "run": run, "time": self.now(), "tasks": self.args.tasks,
                "rows_total": self.rows_total, "graders": self.args.graders, "ncpu": self.ncpu,
                "sim_threads": self.args.sim_threads}

    # -- scenarios

    def latency_flags(self, ms=None, jitter=None):
        ms = self.args.latency_ms if ms is None else ms
        jitter = self.args.latency_jitter if jitter is None else jitter
        return [f"--latency-ms={ms}", f"--latency-jitter={jitter}", "--seed=1"]

    def pipeline(self, d, sim_flags, graders, in_flight, request_log=None, probe=False):
        sim = self.start_sim(d, sim_flags, request_log=request_log)
        servers = [sim]
        probe_proc = None
        try:
            gs = self.start_graders(d, graders, sim.addr, max(2048, in_flight))
            servers += gs
            if probe:
                probe_out = open(os.path.join(d, "probe.csv"), "w")
                probe_proc = subprocess.Popen(
                    [self.bin["probe"], f"--target={gs[0].addr}", f"--dataset={self.dataset}",
                     f"--responses={self.responses}", "--concurrency=32", "--interval-ms=200"],
                    stdout=probe_out, stderr=subprocess.DEVNULL, cwd=ROOT)
            res = self.run_orchestrator(d, gs, sim, in_flight)
        finally:
            if probe_proc is not None:
                probe_proc.send_signal(signal.SIGTERM)
                try:
                    probe_proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    probe_proc.kill()
                    probe_proc.wait()
                probe_out.close()
            self.stop_all(servers)
        return res

    def ceiling(self, d):
        """The simulator's raw capacity for the workload's request bodies, measured with wrk."""
        sim = self.start_sim(d, ["--latency-ms=0"], name="sim-ceiling")
        try:
            secs = self.args.ceiling_seconds
            env = dict(os.environ, HB_BODIES_FILE=self.bodies)
            cmd = ["wrk", "-t2", "-c64", f"-d{secs}s", "-s",
                   os.path.join(ROOT, "bench/sim_bodies.lua"), f"http://{sim.addr}"]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
            cpu = sim.snapshot()["cpu_s"]
        finally:
            self.stop_all([sim])
        m = re.search(r"Requests/sec:\s*([\d.]+)", out)
        non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
        with open(os.path.join(d, "wrk.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
        return {"ceiling_rps": float(m.group(1)) if m else 0.0,
                "ceiling_non2xx": int(non2xx.group(1)) if non2xx else 0,
                "ceiling_sim_cpu_s": cpu, "ceiling_command": " ".join(cmd)}

    def scenario_overhead(self, run):
        self.require("sim", "grader", "orch", "stats")
        d = self.run_dir("overhead", run)
        res = self.pipeline(d, ["--latency-ms=0"], self.args.graders, self.args.overhead_in_flight)
        res["max_in_flight"] = self.args.overhead_in_flight
        res.update(self.ceiling(d))
        res["limit"] = res["ceiling_rps"]
        res["ratio"] = res["rows_per_s"] / res["ceiling_rps"] if res["ceiling_rps"] else None
        res["goal"] = ">= 0.50 of the simulator ceiling"
        return res

    def sim_log_latency(self, path):
        lat = []
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("status") == 200:
                    lat.append(r["latency_ms"])
        return statistics.fmean(lat) if lat else None

    @staticmethod
    def ramp_seconds(path, in_flight):
        """Seconds from the first request at the simulator to the in_flight-th one."""
        times = []
        with open(path) as f:
            for line in f:
                if len(times) >= in_flight:
                    break
                try:
                    t = json.loads(line)["time"]
                except (ValueError, KeyError):
                    continue
                times.append(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp())
        return times[-1] - times[0] if len(times) >= in_flight else None

    def scenario_latency(self, run):
        self.require("sim", "grader", "orch", "probe")
        d = self.run_dir("latency", run)
        reqlog = os.path.join(d, "sim-requests.jsonl")
        in_flight = self.args.latency_in_flight
        res = self.pipeline(d, self.latency_flags(), self.args.graders, in_flight,
                            request_log=reqlog, probe=True)
        mean_ms = self.sim_log_latency(reqlog) or self.args.latency_ms
        res["max_in_flight"] = in_flight
        res["sim_mean_latency_ms"] = mean_ms
        res["ramp_s"] = self.ramp_seconds(reqlog, in_flight)
        res["limit"] = in_flight / (mean_ms / 1000.0)
        res["ratio"] = res["rows_per_s"] / res["limit"]
        if res.get("rows_per_s_steady"):
            res["ratio_steady"] = res["rows_per_s_steady"] / res["limit"]
        res["goal"] = ">= 0.95 of in-flight / mean latency"
        # Little's law: mean time a row spends in flight, minus the simulator's own latency.
        if res["rows_per_s"] > 0:
            res["added_latency_mean_ms_littles_law"] = in_flight / res["rows_per_s"] * 1000 - mean_ms
        added = []
        start = res.get("grade_start") or 0
        end = (res.get("last_row_ms") or 0) / 1000.0
        with open(os.path.join(d, "probe.csv")) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) != 5 or parts[4] != "1":
                    continue
                t = int(parts[0]) / 1000.0
                if start <= t and t + float(parts[1]) / 1000.0 <= end:
                    added.append(float(parts[3]))
        added.sort()
        res["probe_samples"] = len(added)
        if added:
            res["added_latency_p50_ms"] = added[len(added) // 2]
            res["added_latency_p99_ms"] = added[min(len(added) - 1, int(len(added) * 0.99))]
        return res

    def ratelimit_limits(self):
        rpm = self.args.rpm or min(30000, math.ceil(self.rows_total / 1.9))
        per_req = self.stats["prompt_tokens_per_row"] + 2048  # prompt estimate + max_tokens
        tpm = self.args.tpm or int(math.ceil(rpm * per_req * 1.3 / 1000.0) * 1000)
        return rpm, tpm

    def scenario_ratelimit(self, run):
        self.require("sim", "grader", "orch")
        d = self.run_dir("ratelimit", run)
        rpm, tpm = self.ratelimit_limits()
        reqlog = os.path.join(d, "sim-requests.jsonl")
        res = self.pipeline(d, self.latency_flags() + [f"--rpm={rpm}", f"--tpm={tpm}"],
                            self.args.graders, self.args.latency_in_flight, request_log=reqlog)
        res.update(rpm=rpm, tpm=tpm, max_in_flight=self.args.latency_in_flight)
        # Rebuild the simulator's fixed windows from its request log: a window opens at the first
        # request arriving when none is open and lasts 60 s.
        events = []
        with open(reqlog) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                t = datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
                events.append((t, r["status"], r.get("prompt_tokens", 0)))
        events.sort()
        windows = []
        for t, status, ptok in events:
            if not windows or t >= windows[-1]["start"] + 60:
                windows.append({"start": t, "admitted": 0, "refused": 0, "tokens": 0})
            w = windows[-1]
            if status == 429:
                w["refused"] += 1
            else:
                w["admitted"] += 1
                w["tokens"] += ptok + 2048
        res["windows"] = [{"start_offset_s": round(w["start"] - windows[0]["start"], 3),
                           "admitted": w["admitted"], "refused_429": w["refused"],
                           "tokens": w["tokens"]} for w in windows]
        total_req = res["sim_requests"] or 1
        res["share_429"] = res["sim_429"] / total_req
        # The limit in rows/s: whichever of RPM and TPM binds for this workload's requests.
        charged = sum(w["tokens"] for w in windows) / max(1, sum(w["admitted"] for w in windows))
        limit_rpm = min(rpm, tpm / charged) if charged else rpm
        res["limit"] = limit_rpm / 60.0
        if len(windows) >= 2:
            full = windows[:-1]
            span = windows[-1]["start"] - windows[0]["start"]
            res["sustained_rows_per_s"] = sum(w["admitted"] for w in full) / span
            res["ratio"] = res["sustained_rows_per_s"] / res["limit"]
            res["ratio_basis"] = "admitted in full windows / time from first to last window start"
        else:
            res["ratio"] = None
            res["ratio_basis"] = "job fit in one 60 s window: no full window to measure"
        res["goal"] = ">= 0.90 of the limit, 429s <= 2% of requests, no failed rows"
        return res

    def scenario_memory(self, run):
        self.require("sim", "grader", "orch")
        d = self.run_dir("memory", run)
        in_flight = self.args.latency_in_flight
        res = self.pipeline(d, self.latency_flags(), 1, in_flight)
        res["graders"] = 1
        res["max_in_flight"] = in_flight
        orch_mb = res["peak_rss_mb"]["orchestrator"]
        grader_mb = res["peak_rss_mb"]["grader1"]
        res["limit"] = {"orchestrator_mb": 300, "grader_mb": 150}
        res["ratio"] = {"orchestrator": orch_mb / 300.0, "grader": grader_mb / 150.0}
        res["goal"] = "orchestrator <= 300 MB (58,000-row job), grader <= 150 MB at 2,000 in flight"
        return res

    def scenario_reference(self, run):
        self.require("sim", "grader", "orch", "ref")
        d = self.run_dir("reference", run)
        flags = self.latency_flags(self.args.ref_latency_ms, self.args.latency_jitter)
        res = self.pipeline(d, flags, self.args.graders, self.args.latency_in_flight)
        res["max_in_flight"] = self.args.latency_in_flight
        sim = self.start_sim(d, flags, name="sim-reference")
        try:
            sim.mark_cpu()
            t0 = time.time()
            out = subprocess.run(
                [self.bin["ref"], f"--base-url=http://{sim.addr}/v1", f"--dataset={self.dataset}",
                 f"--responses={self.responses}", f"--grader-template={self.template}",
                 "--outer-threads=120"], capture_output=True, text=True,
                timeout=self.args.job_timeout)
            ref_wall = time.time() - t0
            ref_sim = sim.snapshot()
        finally:
            self.stop_all([sim])
        with open(os.path.join(d, "reference.stdout"), "w") as f:
            f.write(out.stdout + out.stderr)
        lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
        ref = json.loads(lines[-1]) if lines else {}
        ref["wall_s"] = ref_wall
        ref["sim_cpu_s"] = ref_sim["cpu_s"]
        res["reference"] = ref
        res["sim_latency_ms"] = self.args.ref_latency_ms
        res["limit"] = ref.get("rows_per_s")
        res["ratio"] = res["rows_per_s"] / ref["rows_per_s"] if ref.get("rows_per_s") else None
        res["goal"] = "gain = pipeline rows/s / reference-pace rows/s (same simulator settings)"
        return res

    # -- driver

    def run(self, scenarios):
        summaries = []
        for scenario in scenarios:
            records = []
            for run in range(1, self.args.runs + 1):
                log(f"{scenario}: run {run}/{self.args.runs}")
                try:
                    res = getattr(self, f"scenario_{scenario}")(run)
                except Exception as e:  # a missing binary or flag: say so and go on
                    log(f"{scenario}: run {run} FAILED: {e}")
                    res = {"error": str(e)}
                record = self.base_record(scenario, run)
                record.update(res)
                self.append_result(scenario, record)
                records.append(record)
                if "error" not in res:
                    log(f"{scenario}: run {run}: {self.one_line(record)}")
            summaries.append(self.table(scenario, records))
        print("\n\n".join(s for s in summaries if s))

    @staticmethod
    def one_line(r):
        ratio = r.get("ratio")
        if isinstance(ratio, dict):
            ratio = ", ".join(f"{k} {v:.2f}" for k, v in ratio.items())
        elif isinstance(ratio, float):
            ratio = f"{ratio:.3f}"
        return (f"rows/s {r.get('rows_per_s', 0):.1f} (ok {r.get('ok_rows')}, failed "
                f"{r.get('failed_rows')}), ratio to limit {ratio}")

    def table(self, scenario, records):
        ok = [r for r in records if "error" not in r]
        if not ok:
            return f"### {scenario}\n\nno successful run: {records[-1].get('error')}"

        def med(values):
            values = [v for v in values if v is not None]
            return statistics.median(values) if values else None

        def fmt(v, spec=".1f"):
            return "-" if v is None else format(v, spec)

        rows = [("runs", str(len(ok))),
                ("rows (ok / failed)", f"{fmt(med([r['ok_rows'] for r in ok]), '.0f')} / "
                                       f"{fmt(med([r['failed_rows'] for r in ok]), '.0f')}"),
                ("rows/s (grading phase)", fmt(med([r['rows_per_s'] for r in ok]))),
                ("rows/s (steady state, middle 80 %)",
                 fmt(med([r.get('rows_per_s_steady') for r in ok]))),
                ("rows/s (process wall)", fmt(med([r['rows_per_s_end_to_end'] for r in ok])))]
        procs = sorted(k for k in ok[0]["cpu_s_per_1000_rows"] if k != "all")
        for p in procs:
            rows.append((f"CPU s / 1,000 rows: {p}",
                         fmt(med([r['cpu_s_per_1000_rows'].get(p) for r in ok]), ".3f")))
        rows.append(("CPU s / 1,000 rows: all processes",
                     fmt(med([r['cpu_s_per_1000_rows'].get('all') for r in ok]), ".3f")))
        rows.append((f"CPU cores busy (of {self.ncpu})", fmt(med([r.get('cores_busy') for r in ok]), ".2f")))
        for p in procs:
            rows.append((f"peak RSS MB: {p}", fmt(med([r['peak_rss_mb'].get(p) for r in ok]))))
        if scenario == "overhead":
            rows.append(("ceiling req/s (wrk, same bodies)", fmt(med([r['ceiling_rps'] for r in ok]))))
        if scenario in ("latency", "memory", "ratelimit", "reference"):
            rows.append(("max in flight at the simulator", fmt(med([r['max_sim_in_flight'] for r in ok]), ".0f")))
        if scenario == "latency":
            rows.append(("sim mean latency ms", fmt(med([r['sim_mean_latency_ms'] for r in ok]))))
            rows.append(("limit rows/s (in flight / mean latency)", fmt(med([r['limit'] for r in ok]))))
            rows.append(("ramp to full in-flight s (sim log)", fmt(med([r.get('ramp_s') for r in ok]), ".2f")))
            rows.append(("added latency p50 / p99 ms (probe)",
                         f"{fmt(med([r.get('added_latency_p50_ms') for r in ok]), '.2f')} / "
                         f"{fmt(med([r.get('added_latency_p99_ms') for r in ok]), '.2f')}"))
            rows.append(("ratio to limit, steady state", fmt(med([r.get('ratio_steady') for r in ok]), ".3f")))
            rows.append(("added latency mean ms (Little's law, incl. ramp and drain)",
                         fmt(med([r.get('added_latency_mean_ms_littles_law') for r in ok]))))
        if scenario == "ratelimit":
            rows.append(("rpm / tpm", f"{ok[0]['rpm']} / {ok[0]['tpm']}"))
            rows.append(("limit rows/s", fmt(med([r['limit'] for r in ok]))))
            rows.append(("sustained rows/s (full windows)",
                         fmt(med([r.get('sustained_rows_per_s') for r in ok]))))
            rows.append(("429 share of requests", fmt(med([r['share_429'] for r in ok]), ".4f")))
        if scenario == "reference":
            rows.append(("reference-pace rows/s", fmt(med([r['limit'] for r in ok]))))
            rows.append(("reference-pace max in flight",
                         fmt(med([r['reference'].get('max_in_flight') for r in ok]), ".0f")))
        if scenario == "memory":
            rows.append(("ratio orchestrator RSS / 300 MB", fmt(med([r['ratio']['orchestrator'] for r in ok]), ".3f")))
            rows.append(("ratio grader RSS / 150 MB", fmt(med([r['ratio']['grader'] for r in ok]), ".3f")))
        else:
            label = "gain (pipeline / reference)" if scenario == "reference" else "ratio to limit"
            rows.append((label, fmt(med([r.get('ratio') for r in ok]), ".3f")))
        rows.append(("tokens in (sim) / cached / out",
                     f"{fmt(med([r['prompt_tokens'] for r in ok]), '.0f')} / "
                     f"{fmt(med([r['cached_tokens'] for r in ok]), '.0f')} / "
                     f"{fmt(med([r['completion_tokens'] for r in ok]), '.0f')}"))
        rows.append(("goal", ok[0].get("goal", "")))
        out = [f"### {scenario} (tasks {self.args.tasks}, rows {self.rows_total}, "
               f"graders {ok[0]['graders']}, median of {len(ok)})", "",
               "| metric | value |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in rows]
        return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description="End-to-end benchmark scenarios (see module doc).")
    p.add_argument("--scenario", default="all", choices=SCENARIOS + ["all"])
    p.add_argument("--tasks", type=int, default=5000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--graders", type=int, default=2)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build-release"))
    p.add_argument("--dataset", required=True)
    p.add_argument("--template", default=os.path.join(ROOT, "data/grader_template.txt"))
    p.add_argument("--results-dir", default=os.path.join(ROOT, "bench/results"))
    p.add_argument("--sim-threads", type=int, default=2)
    p.add_argument("--overhead-in-flight", type=int, default=512)
    p.add_argument("--latency-in-flight", type=int, default=2000)
    p.add_argument("--latency-ms", type=int, default=1000)
    p.add_argument("--latency-jitter", type=float, default=0.2)
    p.add_argument("--ref-latency-ms", type=int, default=1000)
    p.add_argument("--rpm", type=int, default=0, help="default: min(30000, rows / 1.9)")
    p.add_argument("--tpm", type=int, default=0, help="default: 1.3 x what the RPM implies")
    p.add_argument("--ceiling-seconds", type=int, default=10)
    p.add_argument("--job-timeout", type=int, default=3600)
    p.add_argument("--grader-flag", action="append", default=[],
                   help="extra hb-grader flag, repeatable (e.g. --grader-flag=--backoff-cap=90s)")
    args = p.parse_args()
    bench = Bench(args)
    bench.make_workload()
    scenarios = SCENARIOS if args.scenario == "all" else [args.scenario]
    bench.run(scenarios)


if __name__ == "__main__":
    main()
