#!/usr/bin/python3
"""Peak RSS of hb-grader and hb-env under the hostile inputs of issue #12, against their idle RSS.

  /usr/bin/python3 bench/hostile_rss.py [--build build] [--shared ../shared] [--only REGEX]

For each input, starts a fresh hb-grader or hb-env (embedded grader) against a fake upstream
served by this script (normal verdicts unless the rubric item asks for a hostile body), warms it
with every real record once, records its idle RSS (VmRSS), sends the input, and records the
peak RSS it caused (VmHWM, reset first by writing 5 to /proc/PID/clear_refs). Prints one
Markdown row per input: process, input, the answer (gRPC code / HTTP status), the judge calls
it caused (requests to the fake upstream), idle MB, peak MB, peak / idle, the server's CPU
seconds (utime + stime), another client's latency before and after (hb-env: median of 20
GET /health on the ORS listener, each on a new connection), the log lines it wrote (hb-env, at
--log-level=info), and whether the process is still alive. hb-env runs with a bearer token
(--auth-token-file), which every input sends but the unauthenticated flood. The orchestrator, a
batch job, is run over the real records (its "idle") and then over them plus one hostile line.
Exits 1 when a process died, a peak passed 2x idle, or an hb-env input took a second of CPU.
HOSTILE_RSS_KEEP=1 keeps the scratch folder (the servers' logs) and prints its path.
Needs python3-grpcio and protoc's grpc_python_plugin (both in scripts/deps.txt).
"""
import argparse
import gzip
import http.client as http_client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import grpc

VERDICT = json.dumps({"explanation": "ok", "criteria_met": True})


def completion(content):
    return json.dumps({
        "id": "x", "object": "chat.completion", "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()


class Upstream(http.server.BaseHTTPRequestHandler):
    """A chat-completions endpoint: a normal verdict unless the prompt holds [[hostile:KIND]]."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, body, headers=()):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    calls = 0
    calls_lock = threading.Lock()

    def do_POST(self):
        with Upstream.calls_lock:
            Upstream.calls += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        kind = re.search(rb"\[\[hostile:([a-z_]+)\]\]", body)
        kind = kind.group(1).decode() if kind else ""
        try:
            if kind == "nested":
                self.send(b"[" * 200_000)
            elif kind == "huge":
                self.send(b"{\"x\":\"" + b"a" * (100 << 20) + b"\"}")
            elif kind == "gzip":
                self.send(Upstream.gzip_bomb, [("Content-Encoding", "gzip")])
            elif kind == "big_verdict":
                self.send(completion(json.dumps({"explanation": "e" * (6 << 20),
                                                 "criteria_met": True})))
            else:
                self.send(completion(VERDICT))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading at its limit, as it should


class QuietServer(http.server.ThreadingHTTPServer):
    """Connections reset by a process this script killed are expected: no traceback."""

    def handle_error(self, request, client_address):
        pass


def gzip_bomb():
    out = tempfile.SpooledTemporaryFile()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as z:
        chunk = b"\0" * (1 << 20)
        for _ in range(1024):  # 1 GiB inflated
            z.write(chunk)
    out.seek(0)
    return out.read()


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def line_count(path):
    if path is None:
        return None
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def start(cmd, ready_lines, stderr_path=None):
    stderr = open(stderr_path, "w") if stderr_path else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    lines = [proc.stdout.readline().strip() for _ in range(ready_lines)]
    if not all(lines):
        raise RuntimeError(f"{cmd[0]} did not start: {lines}")
    return proc, [line.rsplit(" ", 1)[1] for line in lines]


def compile_protos(root, out):
    plugin = shutil.which("grpc_python_plugin")
    for proto in ("healthbench/grader/v1/grader.proto", "healthbench/env/v1/env.proto"):
        subprocess.run(["protoc", "-I", f"{root}/protos", f"--python_out={out}",
                        f"--grpc_out={out}", f"--plugin=protoc-gen-grpc={plugin}",
                        f"{root}/protos/{proto}"], check=True)
    for d in ("healthbench", "healthbench/grader", "healthbench/grader/v1", "healthbench/env",
              "healthbench/env/v1"):
        open(f"{out}/{d}/__init__.py", "a").close()
    sys.path.insert(0, out)


class Probe:
    """Measures one process's peak RSS for one input against its idle RSS (VmRSS now), its CPU,
    the judge calls, the log lines (when `log` is its stderr file) and, with `other` (a
    function returning one request's latency in ms), another client's latency around it."""

    def __init__(self, name, pid, other=None, log=None, max_cpu=None):
        self.name, self.pid, self.other, self.log, self.max_cpu = name, pid, other, log, max_cpu
        self.idle_kb = rss_kb(pid, "VmRSS")

    def latency(self):
        if self.other is None:
            return None
        times = sorted(self.other() for _ in range(20))
        return times[len(times) // 2]

    def run(self, label, call):
        """Prints one table row; True when the process lived and stayed within its bounds."""
        before_ms = self.latency()
        lines = line_count(self.log)
        calls = Upstream.calls
        cpu = cpu_seconds(self.pid)
        reset_peak(self.pid)
        try:
            answer = call()
        except grpc.RpcError as e:
            answer = f"{e.code().name}: {e.details()[:100]}"
        except urllib.error.HTTPError as e:
            answer = f"HTTP {e.code}: {e.read()[:100].decode(errors='replace')}"
        except (ConnectionError, urllib.error.URLError) as e:
            answer = f"connection error: {e}"
        alive = os.path.exists(f"/proc/{self.pid}/status")
        peak = rss_kb(self.pid, "VmHWM") if alive else 0
        cpu = cpu_seconds(self.pid) - cpu if alive else float("inf")
        extra = Extra(judge_calls=Upstream.calls - calls, cpu=cpu)
        if alive and self.other is not None:
            extra.latency = f"{before_ms:.2f} / {self.latency():.2f}"
        if lines is not None:
            extra.log_lines = str(line_count(self.log) - lines)
        within = print_row(self.name, label, answer, self.idle_kb, peak, alive, extra)
        return within and (self.max_cpu is None or cpu < self.max_cpu)


class Extra:
    """The columns beside memory: judge calls, CPU seconds, other client's latency, log lines."""

    def __init__(self, judge_calls=None, cpu=None):
        self.judge_calls, self.cpu = judge_calls, cpu
        self.latency, self.log_lines = "-", "-"


def print_row(process, label, answer, idle_kb, peak_kb, alive, extra=None):
    """Prints one table row; True when the process lived and stayed within 2x idle."""
    extra = extra or Extra()
    ratio = peak_kb / idle_kb if alive else float("inf")
    calls = "-" if extra.judge_calls is None else str(extra.judge_calls)
    cpu = "-" if extra.cpu is None else f"{extra.cpu:.2f}"
    print(f"| {process} | {label} | {answer.replace('|', '/')} | {calls} | {idle_kb / 1024:.1f} | "
          f"{peak_kb / 1024:.1f} | {ratio:.2f} | {cpu} | {extra.latency} | {extra.log_lines} | "
          f"{'yes' if alive else 'NO'} |", flush=True)
    return alive and ratio <= 2.0


def grader_inputs(pb, stub, channel, task):
    conv = [pb.Message(role=m["role"], content=m["content"]) for m in task["prompt"]]
    items = [pb.RubricItem(criterion=r["criterion"], points=r["points"], tags=r["tags"])
             for r in task["rubrics"]]

    def reply(conversation=conv, rubric=items, **fields):
        return lambda: summary(stub.GradeReply(pb.GradeReplyRequest(
            conversation=conversation, reply="Call emergency services.", rubric_items=rubric,
            **fields), timeout=60))

    def hostile(kind):
        return reply(rubric=[pb.RubricItem(criterion=f"Says hi. [[hostile:{kind}]]", points=5)])

    mb = "x" * (1 << 20)
    return [
        ("GradeReply, 40 items x 500 distinct tags (859 KiB)", reply(rubric=[
            pb.RubricItem(criterion=f"c{i}", points=1, tags=[f"t{i}_{j}" for j in range(500)])
            for i in range(40)])),
        ("GradeReply, 15 MB (15 messages of 1 MB)",
         reply(conversation=[pb.Message(role="user", content=mb)] * 15)),
        ("GradeReply, 60 MB (60 messages of 1 MB)",
         reply(conversation=[pb.Message(role="user", content=mb)] * 60)),
        ("GradeReply, 4 MB conversation x 64 items",
         reply(conversation=[pb.Message(role="user", content=mb[:-4096])] * 4,
               rubric=[pb.RubricItem(criterion=f"c{i}", points=1) for i in range(64)])),
        ("GradeReply, 30 MB request_id", reply(request_id="r" * (30 << 20))),
        ("GradeReply, 20 MB points_text", reply(rubric=[
            pb.RubricItem(criterion="c", points=1, points_text="1" * (20 << 20))])),
        ("malformed protobuf bytes", lambda: channel.unary_unary(
            "/healthbench.grader.v1.Grader/GradeReply")(b"\xff" * 64, timeout=10)),
        ("upstream body of 200,000 '['", hostile("nested")),
        ("upstream body of 100 MB", hostile("huge")),
        ("upstream gzip inflating to 1 GiB", hostile("gzip")),
        ("upstream verdict with a 6 MB explanation", hostile("big_verdict")),
    ]


def summary(response):
    return f"OK score {response.score:.3f}" if hasattr(response, "score") else "OK"


def http_post(url, body, timeout=30):
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return f"HTTP {resp.status}"


TOKEN = "hostile-rss-bench-token-0123456789abcdef"
AUTH = [("authorization", f"Bearer {TOKEN}")]


def ors(http, method, path, body=b"", sid=None, token=True, headers=()):
    """One ORS request on a new connection: (status, body bytes)."""
    host, port = http.rsplit(":", 1)
    conn = http_client.HTTPConnection(host, int(port), timeout=60)
    try:
        sent = dict(headers)
        if token:
            sent["Authorization"] = f"Bearer {TOKEN}"
        if sid is not None:
            sent["X-Session-ID"] = sid
        if method == "POST":
            sent["Content-Type"] = "application/json"
        conn.request(method, path, body=body if method == "POST" else None, headers=sent)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def raw_http(http, data):
    """Sends `data` on a new socket (what the server refuses to read is not waited for) and
    returns the status line of the answer."""
    host, port = http.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        try:
            sock.sendall(data)
        except OSError:
            pass  # answered and closed before all of it was read, as it should be
        try:
            return sock.recv(200).split(b"\r\n", 1)[0].decode(errors="replace")
        except OSError as e:
            return f"connection error: {e}"


def health_ms(http):
    start = time.perf_counter()
    status, _ = ors(http, "GET", "/health", token=False)
    assert status == 200, status
    return (time.perf_counter() - start) * 1000


def tally(answers):
    """'2000 x HTTP 431: <first body>', one part per distinct answer, in order of first sight."""
    counts = {}
    for answer in answers:
        counts[answer] = counts.get(answer, 0) + 1
    return "; ".join(f"{n} x {answer}" for answer, n in counts.items())


def sse_events(body):
    """[(event, data)] of a server-sent-event stream (pings skipped)."""
    events, name = [], None
    for line in body.decode(errors="replace").split("\r\n"):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: ") and name is not None:
            events.append((name, line[len("data: "):]))
            name = None
    return events


def sse_data(body, event):
    for name, data in sse_events(body):
        if name == event:
            return data
    raise RuntimeError(f"no {event} event in {body[:200]!r}")


def sse_result(body):
    """A call's result: its "chunk" pieces, then the last piece carried by "end"."""
    events = sse_events(body)
    if events and events[-1][0] == "error":
        return "error event: " + events[-1][1]
    return "".join(data for name, data in events if name in ("chunk", "end"))


def ors_session(http, task_id):
    """A session on `task_id` (its id issued by /create_session), ready for an answer."""
    status, body = ors(http, "POST", "/create_session")
    sid = sse_data(body, "task_id")
    status, body = ors(http, "POST", "/create",
                       json.dumps({"task_spec": {"prompt_id": task_id}}).encode(), sid=sid)
    assert status == 200, (status, body)
    return sid


def ors_answer(http, sid, answer_bytes):
    """POST /healthbench/call with `answer_bytes` as the JSON string's contents."""
    body = b'{"name": "answer", "input": {"answer": "' + answer_bytes + b'"}}'
    status, text = ors(http, "POST", "/healthbench/call", body, sid=sid)
    if status != 200:
        return f"HTTP {status}: {text[:80].decode(errors='replace')}"
    result = sse_result(text)
    finished = (json.loads(result).get("output", {}).get("finished")
                if result.startswith("{") else None)
    return f"HTTP 200: {result[:60]}... finished {finished}"


def finished_session(http, task_id):
    sid = ors_session(http, task_id)
    first = ors_answer(http, sid, b"Call emergency services now.")
    assert first.endswith("finished True"), first
    return sid


def invalid_utf8_submit(epb, task_id):
    """A serialized SubmitRequest whose reply is not valid UTF-8 (Python's protobuf refuses to
    build one: the placeholder is replaced in the bytes)."""
    placeholder = "REPLY-PLACEHOLDER"
    request = epb.SubmitRequest(task=epb.TaskRef(task_id=task_id), reply=placeholder)
    invalid = b"caf\xc3( \xed\xa0\x80 \xff\xfe"
    invalid += b"x" * (len(placeholder) - len(invalid))
    return request.SerializeToString().replace(placeholder.encode(), invalid)


def env_inputs(epb, stub, channel, http, task_id):
    """(label, prepare, call): `prepare()` runs before the idle RSS is read (None: nothing), and
    `call(prepared)` is the input."""
    def submit(reply):
        def call(_):
            request = epb.SubmitRequest(task=epb.TaskRef(task_id=task_id), reply=reply)
            return f"OK reward {stub.Submit(request, timeout=60, metadata=AUTH).reward:.3f}"
        return call

    def flood(n, one):
        return lambda prepared: tally(one(prepared) for _ in range(n))

    def grpc_answer(method, data, metadata):
        try:
            channel.unary_unary(method)(data, timeout=10, metadata=metadata)
            return "OK"
        except grpc.RpcError as e:
            return f"{e.code().name}: {e.details()[:90]}"

    def http_answer(result):
        status, body = result
        return f"HTTP {status}: {body[:70].decode(errors='replace')}"

    submit_method = "/healthbench.env.v1.Environment/Submit"
    made_up = iter(range(10 ** 9))
    return [
        ("Submit, 60 MB reply", None, submit("x" * (60 << 20))),
        ("Submit, 1 MB of '[' as the reply", None, submit("[" * (1 << 20))),
        ("ORS /create, 1 MB of nested JSON, no session header", None, lambda _: http_post(
            f"http://{http}/create", b"[" * (1 << 20))),
        ("ORS /create, 30 MB body", None, lambda _: http_post(
            f"http://{http}/create", b"{\"x\":\"" + b"a" * (30 << 20) + b"\"}")),
        ("ORS 2,000 x /create with a 64 KB X-Session-ID", None, flood(2000, lambda _: http_answer(
            ors(http, "POST", "/create", b"{}", sid="s" * (64 << 10))))),
        ("ORS /create with a 1 MB X-Session-ID", None, lambda _: raw_http(
            http, b"POST /create HTTP/1.1\r\nHost: x\r\nX-Session-ID: " + b"s" * (1 << 20) +
            b"\r\nContent-Length: 2\r\n\r\n{}")),
        ("ORS 2,000 x /create with made-up 64-character ids", None, flood(
            2000, lambda _: http_answer(ors(http, "POST", "/create",
                                            b'{"task_spec": {"prompt_id": "%s"}}' % task_id.encode(),
                                            sid=f"{next(made_up):064d}")))),
        ("ORS 1,000 more answers in a finished episode", lambda: finished_session(http, task_id),
         flood(1000, lambda sid: ors_answer(http, sid, b"A better answer."))),
        ("ORS 1,000 answers with invalid UTF-8", lambda: ors_session(http, task_id),
         flood(1000, lambda sid: ors_answer(http, sid, b"caf\xc3( \xed\xa0\x80 \xff"))),
        ("gRPC 1,000 x Submit with an invalid UTF-8 reply", None, flood(
            1000, lambda _: grpc_answer(submit_method, invalid_utf8_submit(epb, task_id), AUTH))),
        ("gRPC 1,000 x Submit with an invalid UTF-8 reply, not authenticated", None, flood(
            1000, lambda _: grpc_answer(submit_method, invalid_utf8_submit(epb, task_id), []))),
        ("gRPC 2,000 x malformed protobuf, not authenticated", None, flood(
            2000, lambda _: grpc_answer(submit_method, b"\xff" * 64, []))),
        ("gRPC 2,000 x malformed protobuf, authenticated", None, flood(
            2000, lambda _: grpc_answer(submit_method, b"\xff" * 64, AUTH))),
    ]


def warm_grader(pb, stub, tasks):
    for task in tasks:  # every real record once
        stub.GradeReply(pb.GradeReplyRequest(
            conversation=[pb.Message(role=m["role"], content=m["content"])
                          for m in task["prompt"]],
            reply="ok", rubric_items=[pb.RubricItem(criterion=r["criterion"], points=r["points"],
                                                    tags=r["tags"]) for r in task["rubrics"]]),
            timeout=60)


def warm_env(epb, stub, tasks):
    for task in tasks:
        stub.Submit(epb.SubmitRequest(task=epb.TaskRef(task_id=task["prompt_id"]), reply="ok"),
                    timeout=60, metadata=AUTH)


def run_orchestrator(build, common, dataset_lines, work, name):
    """Runs `hb-orchestrator run` over `dataset_lines` (one "ok" response each) and returns
    (exit code, peak RSS in kB, last stderr line)."""
    dataset, responses = f"{work}/{name}.jsonl", f"{work}/{name}.responses.jsonl"
    with open(dataset, "w") as d, open(responses, "w") as r:
        for line in dataset_lines:
            d.write(line + "\n")
            try:
                prompt_id = json.loads(line)["prompt_id"]
            except (ValueError, RecursionError):
                continue
            r.write(json.dumps({"prompt_id": prompt_id, "response": "ok"}) + "\n")
    proc = subprocess.Popen(
        [f"{build}/orchestrator/hb-orchestrator", "run", f"--dataset={dataset}",
         f"--responses=c={responses}", f"--out={work}/{name}.out", "--progress=off"] + common,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # VmHWM, polled: getrusage's ru_maxrss would include this (large) Python process, whose
    # peak a vfork()ed child inherits at exec.
    peak = [0]

    def poll():
        while proc.poll() is None:
            try:
                peak[0] = max(peak[0], rss_kb(proc.pid, "VmHWM"))
            except (OSError, RuntimeError):
                pass  # exiting
            time.sleep(0.002)
    poller = threading.Thread(target=poll)
    poller.start()
    stderr = proc.stderr.read()
    proc.wait()
    poller.join()
    lines = [line for line in stderr.splitlines() if line.strip()]
    return proc.returncode, peak[0], (lines[-1] if lines else "")


def orchestrator_rows(build, common, tasks, work, wanted):
    """The orchestrator is a batch job: its 'idle' is the same run over the real records."""
    real = [json.dumps(task) for task in tasks]
    tagged = dict(tasks[0], prompt_id="hostile-tags")
    tagged["rubrics"] = [dict(criterion=f"c{i}", points=1,
                              tags=[f"cluster:t{i}_{j}" for j in range(64)]) for i in range(40)]
    inputs = [
        ("run, one task with 40 items x 64 distinct tags", real + [json.dumps(tagged)]),
        ("run, a 1 MB JSONL line of '['", real + ["[" * (1 << 20)]),
    ]
    inputs = [(label, lines) for label, lines in inputs if wanted.search(label)]
    if not inputs:
        return False
    code, idle_kb, _ = run_orchestrator(build, common, real, work, "baseline")
    failed = code != 0
    for i, (label, lines) in enumerate(inputs):
        code, peak_kb, last = run_orchestrator(build, common, lines, work, f"input{i}")
        alive = code in (0, 2, 3)  # finished, refused the input, or incomplete: not a crash
        failed |= not print_row("hb-orchestrator", label, f"exit {code}: {last[:100]}", idle_kb,
                                peak_kb, alive)
    return failed


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=f"{root}/build")
    parser.add_argument("--shared", default=os.environ.get("HB_SHARED_DIR", f"{root}/../shared"))
    parser.add_argument("--only", default="",
                        help="run only the inputs whose label matches this regular expression")
    args = parser.parse_args()
    wanted = re.compile(args.only)
    dataset = f"{args.shared}/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
    template = f"{args.shared}/reference/grader_template.txt"
    work = tempfile.mkdtemp(prefix="hostile-rss-")
    compile_protos(root, work)
    from healthbench.grader.v1 import grader_pb2 as pb, grader_pb2_grpc
    from healthbench.env.v1 import env_pb2 as epb, env_pb2_grpc

    Upstream.gzip_bomb = gzip_bomb()
    upstream = QuietServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    common = [f"--llm-base-url=http://127.0.0.1:{upstream.server_port}/v1",
              f"--grader-template={template}", "--metrics-listen=", "--max-attempts=2",
              "--log-level=error"]
    tasks = [json.loads(line) for line in open(dataset)]
    channel_options = [("grpc.max_send_message_length", 256 << 20),
                       ("grpc.max_receive_message_length", 256 << 20)]
    failed = False
    print("| process | input | answer | judge calls | idle MB | peak MB | peak / idle | CPU s | "
          "other client ms before / after | log lines | alive |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        # A fresh process for every input: glibc keeps freed memory, so one input's peak
        # would otherwise become the next one's baseline.
        for i, (label, _) in enumerate(grader_inputs(pb, None, None, tasks[0])):
            if not wanted.search(label):
                continue
            proc, (addr,) = start([f"{args.build}/grader_service/hb-grader",
                                   "--listen=127.0.0.1:0"] + common, 1)
            try:
                channel = grpc.insecure_channel(addr, options=channel_options)
                stub = grader_pb2_grpc.GraderStub(channel)
                warm_grader(pb, stub, tasks)
                label, call = grader_inputs(pb, stub, channel, tasks[0])[i]
                failed |= not Probe("hb-grader", proc.pid).run(label, call)
            finally:
                proc.kill()
                proc.wait()
        with open(f"{work}/tokens", "w") as f:
            f.write(TOKEN + "\n")
        env_flags = [a for a in common if not a.startswith("--log-level")] + [
            "--log-level=info", f"--auth-token-file={work}/tokens"]
        for i, (label, _, _) in enumerate(env_inputs(epb, None, None, "", "")):
            if not wanted.search(label):
                continue
            log = f"{work}/hb-env.{i}.log"
            proc, (grpc_addr, http_addr) = start(
                [f"{args.build}/environment/hb-env", f"--split=test={dataset}",
                 "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0"] + env_flags, 2, log)
            try:
                channel = grpc.insecure_channel(grpc_addr, options=channel_options)
                stub = env_pb2_grpc.EnvironmentStub(channel)
                warm_env(epb, stub, tasks)
                label, prepare, call = env_inputs(epb, stub, channel, http_addr,
                                                  tasks[0]["prompt_id"])[i]
                prepared = prepare() if prepare else None
                probe = Probe("hb-env", proc.pid, other=lambda: health_ms(http_addr), log=log,
                              max_cpu=1.0)
                failed |= not probe.run(label, lambda: call(prepared))
            finally:
                proc.kill()
                proc.wait()
        orchestrator_flags = [a for a in common if not a.startswith(("--metrics", "--log"))]
        failed |= orchestrator_rows(args.build, orchestrator_flags, tasks, work, wanted)
        return 1 if failed else 0
    finally:
        upstream.shutdown()
        if not os.environ.get("HOSTILE_RSS_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
