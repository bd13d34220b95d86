#!/usr/bin/python3
"""The Python client (clients/python/healthbench_env) against a real hb-env and hb-llm-sim on
127.0.0.1 (ports picked by the servers). Run by ctest (tests/clients/CMakeLists.txt):

  python_client_test.py --hb-env BUILD/environment/hb-env --hb-llm-sim BUILD/simulator/hb-llm-sim

Needs HB_SHARED_DIR (default: ../shared beside the source tree) for the HealthBench data and the
grader template. hb-env runs with --cache-entries=0, so that every submission below is graded
anew: the reward the client reads is compared with an independent read of hb-env's ORS answer.
"""
import asyncio
import base64
import http.server
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENT_DIR = os.path.join(SOURCE_DIR, "clients", "python")
sys.path.insert(0, CLIENT_DIR)
# The example scripts run as child processes import the client from the source tree too.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (CLIENT_DIR, os.environ.get("PYTHONPATH")) if p)

from healthbench_env import (AuthenticationError, GradingError, HealthBenchEnv,  # noqa: E402
                             RequestError, ServerError)
from healthbench_env import rewards  # noqa: E402

BINARIES = {}
SHARED_DIR = os.environ.get("HB_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
DATA = os.path.join(SHARED_DIR, "data", "healthbench", "2025-05-07-06-14-12_oss_eval.head30.jsonl")
# The Hard subset's head: its records are also in DATA (same prompt_ids).
HARD = os.path.join(SHARED_DIR, "data", "healthbench", "hard_2025-05-08-21-00-10.head4.jsonl")
TEMPLATE = os.path.join(SHARED_DIR, "reference", "grader_template.txt")
REPLY = "Call emergency services now."
TOKEN = "trainers-test-token-0123456789abcdef"


class Process:
    """A child process whose stdout lines are read with a deadline (select, no sleeps)."""

    def __init__(self, argv):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._buffer = b""

    def read_line(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("%s printed no line within %.0f s" % (self.argv[0], timeout))
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    err = self.proc.stderr.read().decode("utf-8", "replace")
                    raise RuntimeError("%s exited: %s" % (self.argv[0], err))
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def port_from_line(self, prefix):
        line = self.read_line()
        if not line.startswith(prefix):
            raise RuntimeError("%s printed %r, expected %r..." % (self.argv[0], line, prefix))
        return int(line.rsplit(":", 1)[1])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def start_sim(*flags):
    sim = Process([BINARIES["hb-llm-sim"], "--listen=127.0.0.1:0", "--log-level=error"]
                  + list(flags))
    return sim, "http://127.0.0.1:%d/v1" % sim.port_from_line("listening on ")


def start_env(sim_url, *flags, cache_entries=0):
    env = Process([BINARIES["hb-env"], "--split=test=" + DATA, "--listen=127.0.0.1:0",
                   "--http-listen=127.0.0.1:0", "--metrics-listen=", "--llm-base-url=" + sim_url,
                   "--grader-template=" + TEMPLATE, "--log-level=error",
                   "--cache-entries=%d" % cache_entries] + list(flags))
    env.port_from_line("grpc listening on ")
    return env, "http://127.0.0.1:%d" % env.port_from_line("http listening on ")


def ors_answer(base_url, task_id, reply, token=None):
    """hb-env's ORS answer read with urllib, independently of the client: the RunToolOutput."""

    def post(path, body, sid=None):
        headers = {"Content-Type": "application/json"}
        if sid:
            headers["X-Session-ID"] = sid
        if token:
            headers["X-API-Key"] = token
        req = urllib.request.Request(base_url + path, json.dumps(body).encode(), headers)
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.read().decode()

    def events(text):
        out = []
        for block in text.replace("\r\n", "\n").split("\n\n"):
            name, data = None, []
            for line in block.split("\n"):
                if line.startswith("event:"):
                    name = line[len("event:"):].strip()
                elif line.startswith("data:"):
                    data.append(line[len("data:"):].lstrip())
            if name:
                out.append((name, "\n".join(data)))
        return out

    sid = events(post("/create_session", {}))[0][1]
    post("/create", {"task_spec": {"prompt_id": task_id}}, sid)
    stream = events(post("/healthbench/call", {"name": "answer", "input": {"answer": reply}}, sid))
    return json.loads("".join(data for name, data in stream if name in ("chunk", "end")))


def post_like_aiohttp(url, body):
    """POSTs JSON to `url` as the trainers' aiohttp clients do: userinfo in the URL becomes an
    `Authorization: Basic` header (aiohttp's ClientRequest.update_host), no other auth header.
    Returns (status, parsed JSON answer)."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/json"}
    if parts.username is not None:
        credentials = "%s:%s" % (urllib.parse.unquote(parts.username),
                                 urllib.parse.unquote(parts.password or ""))
        headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    netloc = parts.hostname + (":%d" % parts.port if parts.port else "")
    bare = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    req = urllib.request.Request(bare, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())


class environment:
    """Sets environment variables (HEALTHBENCH_ENV_* cleared first) for a with block."""

    NAMES = ("HEALTHBENCH_ENV_URL", "HEALTHBENCH_ENV_TOKEN", "HEALTHBENCH_ENV_TOKEN_FILE")

    def __init__(self, **values):
        self.values = values

    def __enter__(self):
        self.saved = {k: os.environ.pop(k, None) for k in self.NAMES}
        os.environ.update(self.values)

    def __exit__(self, *exc):
        for k in self.NAMES:
            os.environ.pop(k, None)
            if self.saved[k] is not None:
                os.environ[k] = self.saved[k]


def dataset_ids():
    with open(DATA) as f:
        return [json.loads(line)["prompt_id"] for line in f if line.strip()]


class FlakyProxy:
    """An HTTP proxy in front of hb-env that answers the next `failures` requests itself with
    `status` (and Retry-After when given), then forwards. Counts requests per path."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.lock = threading.Lock()
        self.failures = 0
        self.status = 503
        self.retry_after = None
        self.injected = 0
        self.paths = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.paths.append(self.path)
                    fail = proxy.failures > 0
                    if fail:
                        proxy.failures -= 1
                        proxy.injected += 1
                if fail:
                    payload = b'{"detail":"injected by the test proxy"}'
                    self.send_response(proxy.status)
                    if proxy.retry_after is not None:
                        self.send_header("Retry-After", proxy.retry_after)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                req = urllib.request.Request(proxy.upstream + self.path, body, headers,
                                             method=self.command)
                try:
                    with urllib.request.urlopen(req, timeout=120) as resp:
                        status, ctype, payload = resp.status, resp.headers["Content-Type"], resp.read()
                except urllib.error.HTTPError as e:
                    status, ctype, payload = e.code, e.headers["Content-Type"], e.read()
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _handle
            do_POST = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def arm(self, failures, status=503, retry_after=None):
        with self.lock:
            self.failures, self.status, self.retry_after = failures, status, retry_after
            self.injected, self.paths = 0, []

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class HealthBenchEnvClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = []
        cls.sim, sim_url = start_sim()
        cls.sim_url = sim_url
        cls.processes.append(cls.sim)
        cls.env, cls.url = start_env(sim_url)
        cls.processes.append(cls.env)
        # Every judge call fails: hb-env gives up after one attempt per rubric item.
        cls.bad_sim, bad_sim_url = start_sim("--fault-500=1")
        cls.processes.append(cls.bad_sim)
        cls.bad_env, cls.bad_url = start_env(bad_sim_url, "--max-attempts=1")
        cls.processes.append(cls.bad_env)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.token_file = os.path.join(cls.tmp.name, "tokens")
        with open(cls.token_file, "w") as f:
            f.write("# test token\n%s\n" % TOKEN)
        cls.auth_env, cls.auth_url = start_env(sim_url, "--auth-token-file=" + cls.token_file)
        cls.processes.append(cls.auth_env)
        cls.ids = dataset_ids()

    @classmethod
    def tearDownClass(cls):
        for process in reversed(cls.processes):
            process.stop()
        cls.tmp.cleanup()

    def setUp(self):
        self.client = HealthBenchEnv(self.url, max_attempts=2, backoff_base=0.01)
        rewards.set_default_env(self.client)

    def tearDown(self):
        rewards.set_default_env(None)
        self.client.close()

    def test_lists_tasks_in_file_order_and_reads_a_prompt(self):
        self.assertEqual(self.client.splits(), [{"name": "test", "type": "test"}])
        self.assertEqual(self.client.num_tasks("test"), 30)
        tasks = self.client.list_tasks()
        self.assertEqual([t.task_id for t in tasks], self.ids)
        self.assertEqual([t.task_id for t in self.client.list_tasks("test", 2, 4)], self.ids[2:4])
        self.assertIn("theme:context_seeking", tasks[0].tags)
        with open(DATA) as f:
            first = json.loads(f.readline())
        prompt = self.client.get_task(self.ids[0])
        self.assertEqual(prompt.task_id, self.ids[0])
        self.assertEqual(prompt.prompt_text, first["prompt"][0]["content"])

    def test_overlapping_splits_resolve_a_task_within_its_split(self):
        env, url = start_env(self.sim_url, "--split=hard=" + HARD)
        self.addCleanup(env.stop)
        client = HealthBenchEnv(url, max_attempts=1)
        self.addCleanup(client.close)
        hard = client.list_tasks("hard")
        self.assertEqual([t.split for t in hard], ["hard"] * 4)
        task = hard[0]
        self.assertIn(task.task_id, self.ids)  # also in the main file's split "test"
        with self.assertRaises(RequestError) as refused:
            client.submit(task.task_id, REPLY)
        self.assertEqual(refused.exception.status, 400)
        self.assertIn("is in 2 splits ('test', 'hard'), each graded against its own rubric",
                      str(refused.exception))
        in_hard = client.submit(task.task_id, REPLY, split="hard")
        in_test = client.submit(task.task_id, REPLY, split="test")
        # The Hard file holds the main file's record: the same rubric, the same verdicts.
        self.assertEqual(in_hard.items, in_test.items)
        self.assertEqual(client.submit("hard/" + task.task_id, REPLY).reward, in_hard.reward)
        self.assertEqual(client.submit_batch([(task.task_id, REPLY, "hard")])[0].reward,
                         in_hard.reward)
        self.assertEqual(client.get_task(task.task_id, split="hard").prompt_text,
                         client.get_task(task.task_id, split="test").prompt_text)

    def test_reward_equals_hb_env_ors_answer_and_the_reference_formula(self):
        for task_id in self.ids[:3]:
            result = self.client.submit(task_id, REPLY)
            answer = ors_answer(self.url, task_id, REPLY)
            self.assertTrue(answer["ok"], answer)
            self.assertEqual(result.reward, answer["output"]["reward"])
            self.assertEqual(list(result.items), answer["output"]["metadata"]["items"])
            met = sum(i["points"] for i in result.items if i["met"])
            possible = sum(i["points"] for i in result.items if i["points"] > 0)
            self.assertEqual(result.points_possible, possible)
            self.assertAlmostEqual(result.reward, met / possible, places=12)
            self.assertEqual(result.reward_clipped, min(1.0, max(0.0, result.reward)))

    def test_reward_functions_return_the_submitted_reward(self):
        expected = [self.client.submit(t, REPLY + " " + t) for t in self.ids[:4]]
        self.assertEqual(
            rewards.compute_score("healthbench", REPLY + " " + self.ids[0], self.ids[0]),
            expected[0].reward)
        self.assertEqual(
            rewards.compute_score("healthbench", REPLY + " " + self.ids[0], self.ids[0],
                                  {"index": 0}, clipped=True, reward_router_address=None),
            expected[0].reward_clipped)
        as_strings = [REPLY + " " + t for t in self.ids[:4]]
        as_messages = [[{"role": "assistant", "content": s}] for s in as_strings]
        as_parts = [[{"role": "assistant", "content": [{"type": "text", "text": s}]}]
                    for s in as_strings]
        for completions in (as_strings, as_messages, as_parts):
            self.assertEqual(
                rewards.trl_reward(prompts=["p"] * 4, completions=completions,
                                   prompt_id=self.ids[:4], trainer_state=None,
                                   completion_ids=[[1]] * 4),
                [r.reward for r in expected])
        self.assertEqual(
            asyncio.run(rewards.trl_reward_async(prompts=["p"] * 4, completions=as_messages,
                                                 prompt_id=self.ids[:4], log_metric=None)),
            [r.reward for r in expected])
        self.assertEqual(
            asyncio.run(rewards.compute_score_async("healthbench", as_strings[1], self.ids[1],
                                                    clipped=True)),
            expected[1].reward_clipped)
        with self.assertRaises(ValueError):
            rewards.trl_reward(prompts=["p"], completions=as_strings, prompt_id=self.ids[:1])

    def test_batches_sync_and_async_answer_in_input_order(self):
        pairs = [(t, REPLY) for t in self.ids[:6]] + [("no-such-task", REPLY)]
        sync = self.client.submit_batch(pairs, return_exceptions=True)
        self.assertIsInstance(sync[6], RequestError)
        self.assertEqual(sync[6].status, 404)
        self.assertEqual([r.task_id for r in sync[:6]], self.ids[:6])
        expected = [self.client.submit(t, REPLY).reward for t in self.ids[:6]]
        self.assertEqual([r.reward for r in sync[:6]], expected)
        with self.assertRaises(RequestError):
            self.client.submit_batch(pairs)
        results = asyncio.run(self.client.asubmit_batch(pairs[:6]))
        self.assertEqual([r.reward for r in results], expected)
        with self.assertRaises(RequestError) as caught:
            rewards.compute_score("healthbench", REPLY, "no-such-task")
        self.assertEqual(caught.exception.status, 404)

    def test_judge_failure_raises_in_compute_score_and_is_none_in_trl_reward(self):
        bad = HealthBenchEnv(self.bad_url, max_attempts=1)
        rewards.set_default_env(bad)
        with self.assertRaises(GradingError) as caught:
            rewards.compute_score("healthbench", REPLY, self.ids[0])
        self.assertEqual(caught.exception.task_id, self.ids[0])
        self.assertEqual(caught.exception.code, "UNAVAILABLE")
        self.assertEqual(
            rewards.trl_reward(prompts=["p", "p"], completions=[REPLY, "Rest."],
                               prompt_id=self.ids[:2]),
            [None, None])
        self.assertEqual(
            asyncio.run(rewards.trl_reward_async(prompts=["p"], completions=[REPLY],
                                                 prompt_id=self.ids[:1])),
            [None])
        with self.assertRaises(GradingError):
            asyncio.run(rewards.compute_score_async("healthbench", REPLY, self.ids[0]))
        # hb-env's own ORS answer for the same reply is a failure, not a reward of 0.
        self.assertFalse(ors_answer(self.bad_url, self.ids[0], REPLY)["ok"])
        bad.close()

    def test_token_is_required_when_configured(self):
        no_token = HealthBenchEnv(self.auth_url, token="", max_attempts=3)
        for call in (lambda: no_token.list_tasks(), lambda: no_token.submit(self.ids[0], REPLY)):
            with self.assertRaises(AuthenticationError) as caught:
                call()
            self.assertEqual(caught.exception.status, 401)
        wrong = HealthBenchEnv(self.auth_url, token="x" * 32)
        with self.assertRaises(AuthenticationError):
            wrong.submit(self.ids[0], REPLY)
        rewards.set_default_env(no_token)
        with self.assertRaises(AuthenticationError):
            rewards.trl_reward(prompts=["p"], completions=[REPLY], prompt_id=self.ids[:1])
        expected = self.client.submit(self.ids[0], REPLY).reward
        # From the environment: the token itself, or hb-env's own token file.
        for variables in ({"HEALTHBENCH_ENV_TOKEN": TOKEN},
                          {"HEALTHBENCH_ENV_TOKEN_FILE": self.token_file}):
            with environment(HEALTHBENCH_ENV_URL=self.auth_url, **variables):
                rewards.set_default_env(None)  # rebuilt from the environment variables
                self.assertEqual(rewards.compute_score("healthbench", REPLY, self.ids[0]),
                                 expected)

    def test_a_silent_server_times_out_within_the_deadline(self):
        # A listener that never accepts: the request is sent into its backlog, no answer comes.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        self.addCleanup(silent.close)
        url = "http://127.0.0.1:%d" % silent.getsockname()[1]
        waits = []
        client = HealthBenchEnv(url, read_timeout=0.2, max_attempts=2, sleep=waits.append)
        with self.assertRaises(ServerError) as caught:
            client.submit(self.ids[0], REPLY)
        self.assertIn("/create_session: TimeoutError", str(caught.exception))
        self.assertIn("(after 2 attempts)", str(caught.exception))
        self.assertEqual(len(waits), 1)
        # The submission's deadline bounds the attempts and the waits between them.
        short = HealthBenchEnv(url, timeout=0.3, read_timeout=60, backoff_base=1.0,
                               backoff_cap=1.0, max_attempts=5, sleep=waits.append)
        started = time.monotonic()
        with self.assertRaises(ServerError) as caught:
            short.submit(self.ids[0], REPLY)
        self.assertLess(time.monotonic() - started, 30)
        self.assertIn("/create_session: TimeoutError", str(caught.exception))
        self.assertIn("(no time left to retry within 0.3 s)", str(caught.exception))

    def test_retries_5xx_and_429_honouring_retry_after(self):
        proxy = FlakyProxy(self.url)
        self.addCleanup(proxy.close)
        waits = []
        client = HealthBenchEnv(proxy.url, max_attempts=4, backoff_base=0.05, backoff_cap=0.2,
                                sleep=waits.append)
        expected = self.client.submit(self.ids[0], REPLY).reward

        proxy.arm(failures=3, status=503)
        self.assertEqual(client.submit(self.ids[0], REPLY).reward, expected)
        self.assertEqual(proxy.injected, 3)
        self.assertEqual(len(waits), 3)
        self.assertTrue(all(0 <= w <= 0.2 for w in waits), waits)

        waits.clear()
        proxy.arm(failures=1, status=429, retry_after="7")
        self.assertEqual(client.submit(self.ids[0], REPLY).reward, expected)
        self.assertEqual(waits, [7.0])

        waits.clear()
        proxy.arm(failures=100, status=500)
        with self.assertRaises(ServerError) as caught:
            client.submit(self.ids[0], REPLY)
        self.assertEqual(caught.exception.status, 500)
        self.assertEqual(proxy.paths, ["/create_session"] * 4)
        self.assertEqual(len(waits), 3)
        self.assertEqual(rewards.trl_reward.__name__, "trl_reward")
        rewards.set_default_env(client)
        proxy.arm(failures=100, status=503)
        self.assertEqual(rewards.trl_reward(prompts=["p"], completions=[REPLY],
                                            prompt_id=self.ids[:1]), [None])

        # A 4xx is not retried.
        proxy.arm(failures=0)
        with self.assertRaises(RequestError):
            client.submit("no-such-task", REPLY)
        self.assertEqual([p for p in proxy.paths if p == "/create"], ["/create"])
        client.close()


class TrainerExamplesTest(unittest.TestCase):
    """examples/trainers: the dataset rows, the verl reward config and the TRL script give the
    rewards hb-env gives for the same replies."""

    @classmethod
    def setUpClass(cls):
        cls.sim, sim_url = start_sim()
        cls.env, cls.url = start_env(sim_url)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.client = HealthBenchEnv(cls.url)
        cls.examples = os.path.join(SOURCE_DIR, "examples", "trainers")
        # The OpenRLHF, slime and NeMo-Gym examples pass hb-env's token in the URL.
        cls.token_file = os.path.join(cls.tmp.name, "tokens")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        cls.auth_env, cls.auth_url = start_env(sim_url, "--auth-token-file=" + cls.token_file)
        cls.auth_port = urllib.parse.urlsplit(cls.auth_url).port

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.auth_env.stop()
        cls.env.stop()
        cls.sim.stop()
        cls.tmp.cleanup()

    def example(self, name):
        with open(os.path.join(self.examples, name)) as f:
            return f.read()

    def flag(self, text, name):
        """The value of `name` in an example command line (quotes removed)."""
        match = re.search(r"(?m)^\s*%s\s+(\S+)" % re.escape(name), text)
        self.assertIsNotNone(match, name)
        return match.group(1).strip('"')

    def local(self, url):
        """The example's URL with hb-env:8080 replaced by the test's hb-env and the token set."""
        self.assertIn("${HB_ENV_TOKEN}@hb-env:8080/", url)
        return url.replace("${HB_ENV_TOKEN}", TOKEN).replace(
            "hb-env:8080", "127.0.0.1:%d" % self.auth_port)

    def test_openrlhf_example_gets_hb_env_rewards_with_the_token_in_its_url(self):
        script = self.example("openrlhf_ppo.sh")
        url = self.local(self.flag(script, "--reward.remote_url"))
        self.assertEqual(self.flag(script, "--data.label_key"), "prompt_id")
        self.assertEqual(self.flag(script, "--data.input_key"), "prompt")
        self.assertIn("--data.apply_chat_template", script)
        rows = self.make_rows("trl")
        # What OpenRLHF posts per sample: the templated prompt + response decoded with special
        # tokens, the prompt, and the label column.
        prompt = "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % (
            rows[0]["prompt"][-1]["content"])
        status, answer = post_like_aiohttp(url, {"query": [prompt + REPLY + "<|im_end|>"],
                                                 "prompts": [prompt],
                                                 "labels": [rows[0]["prompt_id"]]})
        self.assertEqual(status, 200, answer)
        expected = self.client.submit(rows[0]["prompt_id"], REPLY)
        self.assertEqual(answer["rewards"], [expected.reward])
        self.assertEqual(answer["scores"], [expected.reward_clipped])
        # Without the token in the URL: 401.
        status, answer = post_like_aiohttp(url.replace("hb:%s@" % TOKEN, ""),
                                           {"query": [], "prompts": [], "labels": []})
        self.assertEqual(status, 401, answer)

    def test_slime_example_gets_hb_env_rewards_under_its_reward_key(self):
        script = self.example("slime_grpo.sh")
        url = self.local(self.flag(script, "--rm-url"))
        self.assertEqual(self.flag(script, "--rm-type"), "remote_rm")
        self.assertEqual(self.flag(script, "--label-key"), "prompt_id")
        reward_key = self.flag(script, "--reward-key")
        rows = self.make_rows("trl")
        # slime's remote_rm body: the prompt (messages here), the response, the label.
        status, answer = post_like_aiohttp(url, {"prompt": rows[1]["prompt"],
                                                 "response": REPLY + "<|endoftext|>",
                                                 "label": rows[1]["prompt_id"]})
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer[reward_key], self.client.submit(rows[1]["prompt_id"], REPLY).reward)

    def test_nemo_gym_example_verifies_rows_as_its_simple_agent_posts_them(self):
        import yaml
        config = yaml.safe_load(self.example("nemo_gym_healthbench.yaml"))
        agent = config["healthbench_simple_agent"]["responses_api_agents"]["simple_agent"]
        name = agent["resources_server"]["name"]
        server = config[name]["resources_servers"][name]
        self.assertNotIn("entrypoint", server)  # Gym must not launch one
        # Gym's ServerClient: http://{host}:{port}{path}, the token in the host's userinfo.
        host = server["host"].replace("${oc.env:HB_ENV_TOKEN}", TOKEN)
        self.assertEqual((host, server["port"]), ("hb:%s@hb-env" % TOKEN, 8080))
        base = "http://%s@127.0.0.1:%d" % (host.split("@")[0], self.auth_port)
        rows = self.make_rows("nemo_gym")
        self.assertEqual(rows[0]["agent_ref"]["name"], "healthbench_simple_agent")
        row = dict(rows[0], _ng_task_index=0, _ng_rollout_index=0)
        status, answer = post_like_aiohttp(base + "/seed_session", row)
        self.assertEqual((status, answer), (200, {}))
        response = {"id": "resp_1", "object": "response", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}]}
        status, verified = post_like_aiohttp(base + "/ng-rollout/0-0/verify",
                                             dict(row, response=response))
        self.assertEqual(status, 200, verified)
        expected = self.client.submit(rows[0]["prompt_id"], REPLY)
        self.assertEqual(verified["reward"], expected.reward)
        self.assertEqual(verified["responses_create_params"], row["responses_create_params"])
        self.assertNotIn("_ng_failure_class", verified)
        status, metrics = post_like_aiohttp(base + "/aggregate_metrics",
                                            {"verify_responses": [verified]})
        self.assertEqual(status, 200, metrics)
        self.assertEqual(metrics["agent_metrics"]["mean/reward"], expected.reward)

    def make_rows(self, fmt):
        out = os.path.join(self.tmp.name, fmt + ".jsonl")
        subprocess.run([sys.executable, os.path.join(self.examples, "make_dataset.py"),
                        "--input", DATA, "--format", fmt, "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return [json.loads(line) for line in f]

    def test_verl_config_loads_compute_score_and_rows_carry_the_task_id(self):
        import importlib
        import yaml
        rows = self.make_rows("verl")
        with open(DATA) as f:
            records = [json.loads(line) for line in f if line.strip()]
        self.assertEqual(len(rows), len(records))
        self.assertEqual(rows[1]["reward_model"]["ground_truth"], records[1]["prompt_id"])
        self.assertEqual(rows[1]["prompt"], records[1]["prompt"])
        self.assertNotIn("rubrics", json.dumps(rows))
        with open(os.path.join(self.examples, "verl_reward.yaml")) as f:
            config = yaml.safe_load(f)
        reward = config["custom_reward_function"]
        self.assertTrue(reward["path"].startswith("pkg://"))
        # verl's load_module for "pkg://a/b" or "pkg://a.b": importlib.import_module("a.b").
        module = importlib.import_module(reward["path"][len("pkg://"):].replace("/", "."))
        compute_score = getattr(module, reward["name"])
        self.assertEqual(config["reward_manager"]["name"], "naive")
        rewards.set_default_env(self.client)
        self.addCleanup(rewards.set_default_env, None)
        for row in rows[:2]:
            score = compute_score(data_source=row["data_source"], solution_str=REPLY,
                                  ground_truth=row["reward_model"]["ground_truth"],
                                  extra_info=row["extra_info"], **reward["reward_kwargs"])
            self.assertEqual(score, self.client.submit(row["reward_model"]["ground_truth"],
                                                       REPLY).reward)

    def test_trl_script_dry_run_grades_conversational_completions(self):
        rows = self.make_rows("trl")
        self.assertEqual(rows[0]["prompt_id"], dataset_ids()[0])
        path = os.path.join(self.tmp.name, "trl.jsonl")
        with environment(HEALTHBENCH_ENV_URL=self.url):
            out = subprocess.run(
                [sys.executable, os.path.join(self.examples, "trl_grpo.py"), "--dataset", path,
                 "--dry-run", "--dry-run-rows", "3", "--dry-run-reply", REPLY],
                check=True, capture_output=True, text=True, timeout=120).stdout
        lines = [json.loads(line) for line in out.splitlines()]
        self.assertEqual([line["prompt_id"] for line in lines], dataset_ids()[:3])
        self.assertEqual([line["reward"] for line in lines],
                         [self.client.submit(t, REPLY).reward for t in dataset_ids()[:3]])


class ExamplesAndDocsTest(unittest.TestCase):
    """What needs no server: the dataset script's errors and the client README's links."""

    def test_parquet_without_pandas_is_a_one_line_error_saying_how_to_install_it(self):
        script = os.path.join(SOURCE_DIR, "examples", "trainers", "make_dataset.py")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rows.parquet")
            # pandas made unimportable, whether this machine has it or not.
            run = ("import runpy, sys; sys.modules['pandas'] = None; sys.argv = %r; "
                   "runpy.run_path(%r, run_name='__main__')"
                   % ([script, "--input", DATA, "--format", "verl", "--out", out], script))
            result = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True,
                                    timeout=60)
            self.assertFalse(os.path.exists(out))
        self.assertEqual(result.returncode, 1)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("writing parquet needs pandas and pyarrow", result.stderr)
        self.assertIn("pip install pandas pyarrow", result.stderr)

    def test_make_dataset_split_qualifies_every_task_id(self):
        script = os.path.join(SOURCE_DIR, "examples", "trainers", "make_dataset.py")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rows.jsonl")
            subprocess.run([sys.executable, script, "--input", HARD, "--format", "trl",
                            "--split", "hard", "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            with open(out) as f:
                ids = [json.loads(line)["prompt_id"] for line in f]
        with open(HARD) as f:
            self.assertEqual(ids, ["hard/" + json.loads(line)["prompt_id"] for line in f])

    def test_client_readme_refers_to_sections_by_links_only(self):
        # tests/docs/links_test.py resolves every link (file and heading anchor); a section
        # named in prose ("see the X section") is checked by nothing, and one such went stale.
        with open(os.path.join(CLIENT_DIR, "README.md")) as f:
            text = f.read()
        self.assertNotRegex(text, r'"[^"]+"\s+section')
        self.assertIn("](../../docs/environment.md#training-with-hb-env-rewards)", text)


def main():
    args = sys.argv[1:]
    rest = [sys.argv[0]]
    while args:
        arg = args.pop(0)
        if arg in ("--hb-env", "--hb-llm-sim"):
            BINARIES[arg[2:]] = args.pop(0)
        else:
            rest.append(arg)
    for name in ("hb-env", "hb-llm-sim"):
        if name not in BINARIES or not os.access(BINARIES[name], os.X_OK):
            sys.exit("pass --%s PATH to a built %s" % (name, name))
    for path in (DATA, TEMPLATE):
        if not os.path.exists(path):
            sys.exit("missing %s: set HB_SHARED_DIR to the folder holding reference/ and "
                     "data/healthbench/" % path)
    unittest.main(argv=rest)


if __name__ == "__main__":
    main()
