"""HealthBenchEnv: a client of hb-env's HTTP API (the Open Reward Standard routes).

Standard library only. One submission is one fresh ORS session, as the ORS Python SDK does it:

  POST /create_session            (SSE: "task_id" = the session id, then "end")
  POST /create                    X-Session-ID; {"task_spec": {"prompt_id": <task id>,
                                  "split": <split>}} (the split only when given)
  POST /{env}/call                X-Session-ID; {"name": "answer", "input": {"answer": <reply>}}
                                  (SSE: "task_id", ": ping" comments, "chunk"*, "end")
  POST /delete                    X-Session-ID (best effort)

Errors (all subclasses of HealthBenchEnvError):
  GradingError         hb-env could not grade the reply (a judge failure after hb-env's own
                       retries; {"ok": false} in the call stream). Never a reward of 0.
  AuthenticationError  401/403: no token or a wrong one. Not retried.
  RequestError         another 4xx (unknown task id, reply over the size limit...). Not retried.
  ServerError          5xx or 429 still failing after max_attempts, a connection that keeps
                       failing, or the submission's deadline passed.

Retries: 5xx, 429 and connection errors are retried up to max_attempts per request with full
jitter exponential backoff (backoff_base doubling up to backoff_cap); a Retry-After header
(seconds) is waited out instead when present. A failed step restarts the submission on a new
session (hb-env shares identical submissions in flight and caches results, so a retried
submission is not graded twice).

Splits may share prompt_ids (hb-env serving main, hard and consensus: a task is (split,
prompt_id), each split with its own rubric). Pass split= (or a task id "SPLIT/<prompt_id>") when
the prompt_id is in several splits: hb-env refuses a bare one with a RequestError (400) that
lists the splits holding it.

Thread-safety: a HealthBenchEnv is safe to share between threads and event loops; every
request opens its own connection.
"""

import asyncio
import concurrent.futures
import dataclasses
import http.client
import json
import os
import random
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Iterable, List, Optional, Tuple, Union

URL_ENV = "HEALTHBENCH_ENV_URL"
TOKEN_ENV = "HEALTHBENCH_ENV_TOKEN"
TOKEN_FILE_ENV = "HEALTHBENCH_ENV_TOKEN_FILE"


class HealthBenchEnvError(Exception):
    """Base class. `status` is the HTTP status when there was one (else None)."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


class GradingError(HealthBenchEnvError):
    """The reply could not be graded (e.g. "UNAVAILABLE: ..." after the judge kept failing)."""

    def __init__(self, task_id: str, error: str):
        super().__init__("task %s could not be graded: %s" % (task_id, error))
        self.task_id = task_id
        self.error = error
        # The absl status code name hb-env reports ("UNAVAILABLE", "DEADLINE_EXCEEDED", ...).
        self.code = error.split(":", 1)[0].strip() if ":" in error else ""


class AuthenticationError(HealthBenchEnvError):
    pass


class RequestError(HealthBenchEnvError):
    pass


class ServerError(HealthBenchEnvError):
    pass


@dataclasses.dataclass(frozen=True)
class Task:
    task_id: str
    tags: Tuple[str, ...]
    # The split it was listed from (pass it to get_task / submit when splits share ids).
    split: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class TaskPrompt:
    task_id: str
    # The conversation rendered as hb-env's prompt text (what `hb-orchestrator tasks` writes).
    prompt_text: str


@dataclasses.dataclass(frozen=True)
class SubmitResult:
    task_id: str
    # The reference's per-task score: signed points of met items over the positive points,
    # unclipped (can be negative).
    reward: float
    # `reward` clipped to [0, 1].
    reward_clipped: float
    points_met: float
    points_possible: float
    # [{"criterion", "points", "met", "explanation"}] in rubric order.
    items: Tuple[dict, ...]
    summary: str


class _Retryable(Exception):
    """A failed step worth another attempt; `retry_after` in seconds when the server said."""

    def __init__(self, message: str, status: Optional[int] = None,
                 retry_after: Optional[float] = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _retry_after_seconds(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: fall back to the backoff
    return max(0.0, seconds)


def _detail(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(parsed, dict) and "detail" in parsed:
        return str(parsed["detail"])
    return text.strip()


def _token_from_environment() -> Optional[str]:
    token = os.environ.get(TOKEN_ENV)
    if token:
        return token.strip()
    path = os.environ.get(TOKEN_FILE_ENV)
    if not path:
        return None
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    return line
    except OSError as e:
        raise ValueError("%s=%s: cannot read the token file: %s" % (TOKEN_FILE_ENV, path, e))
    raise ValueError("%s=%s: the file holds no token (one token per line, '#' comments)"
                     % (TOKEN_FILE_ENV, path))


class _Response:
    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body


class HealthBenchEnv:
    """A client of one hb-env.

    url: hb-env's HTTP base URL (its --http-listen address, e.g. "http://127.0.0.1:8080"),
        default $HEALTHBENCH_ENV_URL. https:// uses TLS (ca_file for a private CA).
    token: bearer token (one line of hb-env's --auth-token-file), default
        $HEALTHBENCH_ENV_TOKEN, else the first token in the file named by
        $HEALTHBENCH_ENV_TOKEN_FILE (same format as --auth-token-file, so that the secret stays
        off command lines); sent as "Authorization: Bearer <token>".
    timeout: deadline of one submission in seconds, retries and waits included.
    read_timeout: socket timeout of one read; hb-env pings an open call every 10 s.
    max_attempts: attempts per request, the first included.
    max_concurrency: submissions in flight at once in submit_batch / asubmit_batch.
    sleep: the function used to wait between attempts (tests pass a recorder).
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *,
                 env_name: str = "healthbench", timeout: float = 900.0,
                 read_timeout: float = 60.0, max_attempts: int = 5,
                 backoff_base: float = 0.5, backoff_cap: float = 30.0,
                 max_concurrency: int = 32, ca_file: Optional[str] = None,
                 sleep: Callable[[float], None] = time.sleep):
        url = url if url is not None else os.environ.get(URL_ENV, "")
        if not url:
            raise ValueError("HealthBenchEnv needs hb-env's HTTP URL: pass url= or set %s "
                             "(e.g. http://127.0.0.1:8080, hb-env's --http-listen)" % URL_ENV)
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("%s: expected http://HOST:PORT or https://HOST:PORT, got %r"
                             % (URL_ENV, url))
        if max_attempts < 1 or max_concurrency < 1:
            raise ValueError("max_attempts and max_concurrency must be >= 1")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._https else 80)
        self._prefix = parsed.path.rstrip("/")
        self.url = url
        self.token = token if token is not None else _token_from_environment()
        self.env_name = env_name
        self.timeout = timeout
        self.read_timeout = read_timeout
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_concurrency = max_concurrency
        self._sleep = sleep
        self._ssl = ssl.create_default_context(cafile=ca_file) if self._https else None
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._executor_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        with self._executor_lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None

    def __enter__(self) -> "HealthBenchEnv":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.max_concurrency, thread_name_prefix="healthbench-env")
            return self._executor

    # -- transport ---------------------------------------------------------------------------

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers(self, sid: Optional[str], sse: bool) -> dict:
        headers = {"Content-Type": "application/json", "Connection": "close",
                   "User-Agent": "healthbench-env-python/0.1"}
        if sse:
            headers["Accept"] = "text/event-stream"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if sid:
            headers["X-Session-ID"] = sid
        return headers

    @staticmethod
    def _check_status(status: int, headers, body: bytes, path: str) -> None:
        if 200 <= status < 300:
            return
        detail = _detail(body)
        message = "%s: HTTP %d: %s" % (path, status, detail)
        if status == 429 or status >= 500:
            raise _Retryable(message, status, _retry_after_seconds(headers.get("Retry-After")))
        if status in (401, 403):
            raise AuthenticationError(
                message + " (set HEALTHBENCH_ENV_TOKEN or pass token= with a token of hb-env's "
                "--auth-token-file)", status)
        raise RequestError(message, status)

    def _request(self, method: str, path: str, body: Any, sid: Optional[str],
                 deadline: float) -> _Response:
        """One HTTP exchange; non-SSE. Raises _Retryable / AuthenticationError / RequestError."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerError("%s: the submission's deadline passed" % path)
        conn = self._connect(min(self.read_timeout, remaining))
        try:
            data = None if body is None else json.dumps(body).encode("utf-8")
            conn.request(method, self._prefix + path, body=data, headers=self._headers(sid, False))
            resp = conn.getresponse()
            payload = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise _Retryable("%s: %s: %s" % (path, type(e).__name__, e))
        finally:
            conn.close()
        self._check_status(resp.status, resp.headers, payload, path)
        return _Response(resp.status, resp.headers, payload)

    def _sse(self, path: str, body: Any, sid: Optional[str], deadline: float) -> Tuple[str, str]:
        """POSTs and reads the event stream: (first "task_id" event data, joined chunk+end)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerError("%s: the submission's deadline passed" % path)
        conn = self._connect(min(self.read_timeout, remaining))
        try:
            conn.request("POST", self._prefix + path, body=json.dumps(body).encode("utf-8"),
                         headers=self._headers(sid, True))
            resp = conn.getresponse()
            if not 200 <= resp.status < 300:
                self._check_status(resp.status, resp.headers, resp.read(), path)
            first_id, pieces, event, data = "", [], None, []
            while True:
                if time.monotonic() > deadline:
                    raise ServerError("%s: the submission's deadline passed" % path)
                raw = resp.readline()
                if not raw:
                    raise _Retryable("%s: event stream ended before its end event" % path)
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    if event == "task_id" and not first_id:
                        first_id = "\n".join(data).strip()
                    elif event == "chunk":
                        pieces.append("\n".join(data))
                    elif event == "end":
                        pieces.append("\n".join(data))
                        return first_id, "".join(pieces)
                    elif event == "error":
                        raise RequestError("%s: %s" % (path, "\n".join(data) or "stream error"))
                    event, data = None, []
                    continue
                if line.startswith(":"):
                    continue  # a ping comment
                field, _, value = line.partition(":")
                value = value.lstrip()
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)
        except (OSError, http.client.HTTPException) as e:
            raise _Retryable("%s: %s: %s" % (path, type(e).__name__, e))
        finally:
            conn.close()

    def _backoff(self, attempt: int, error: _Retryable, deadline: float) -> None:
        if error.retry_after is not None:
            delay = error.retry_after
        else:
            delay = random.uniform(0, min(self.backoff_cap, self.backoff_base * (2 ** attempt)))
        if time.monotonic() + delay >= deadline:
            raise ServerError("%s (no time left to retry within %g s)" % (error, self.timeout),
                              error.status)
        self._sleep(delay)

    def _with_retries(self, step: Callable[[float], Any], deadline: Optional[float] = None) -> Any:
        deadline = deadline if deadline is not None else time.monotonic() + self.timeout
        for attempt in range(self.max_attempts):
            try:
                return step(deadline)
            except _Retryable as e:
                if attempt + 1 >= self.max_attempts:
                    raise ServerError("%s (after %d attempts)" % (e, self.max_attempts), e.status)
                self._backoff(attempt, e, deadline)
        raise AssertionError("unreachable")

    def _get_json(self, method: str, path: str, body: Any = None) -> Any:
        return self._with_retries(
            lambda deadline: json.loads(self._request(method, path, body, None, deadline).body))

    # -- tasks -------------------------------------------------------------------------------

    def health(self) -> dict:
        return self._get_json("GET", "/health")

    def splits(self) -> List[dict]:
        """[{"name", "type"}] in the order of hb-env's --split flags."""
        return self._get_json("GET", "/%s/splits" % self.env_name)

    def num_tasks(self, split: str) -> int:
        return int(self._get_json("POST", "/%s/num_tasks" % self.env_name,
                                  {"split": split})["num_tasks"])

    def list_tasks(self, split: Optional[str] = None, start: Optional[int] = None,
                   stop: Optional[int] = None) -> List[Task]:
        """Tasks of `split` ([start, stop) with Python slice rules), or of every split."""
        names = [split] if split is not None else [s["name"] for s in self.splits()]
        tasks = []
        for name in names:
            out = self._get_json("POST", "/%s/task_range" % self.env_name,
                                 {"split": name, "start": start, "stop": stop})
            tasks.extend(Task(t["prompt_id"], tuple(t.get("tags", ())), t.get("split", name))
                         for t in out["tasks"])
        return tasks

    def _open_session(self, task_id: str, split: Optional[str], deadline: float) -> str:
        created, end = self._sse("/create_session", {}, None, deadline)
        sid = created
        if end:
            parsed = json.loads(end)
            if isinstance(parsed, dict) and parsed.get("sid"):
                sid = str(parsed["sid"])
        if not sid:
            raise _Retryable("/create_session: no session id in the stream")
        spec = {"prompt_id": task_id}
        if split:
            spec["split"] = split
        self._request("POST", "/create", {"task_spec": spec, "env_name": self.env_name}, sid,
                      deadline)
        return sid

    def _close_session(self, sid: str, deadline: float) -> None:
        try:
            self._request("POST", "/delete", {"sid": sid}, sid,
                          min(deadline, time.monotonic() + 5.0))
        except HealthBenchEnvError:
            pass  # idle sessions are reaped by hb-env
        except _Retryable:
            pass

    def get_task(self, task_id: str, split: Optional[str] = None) -> TaskPrompt:
        """The prompt of task `task_id` (in `split`; RequestError 404 for an unknown id)."""

        def step(deadline: float) -> TaskPrompt:
            sid = self._open_session(task_id, split, deadline)
            try:
                blocks = json.loads(self._request(
                    "GET", "/%s/prompt" % self.env_name, None, sid, deadline).body)
            finally:
                self._close_session(sid, deadline)
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            return TaskPrompt(task_id, text)

        return self._with_retries(step)

    # -- submissions -------------------------------------------------------------------------

    def submit(self, task_id: str, reply: str, split: Optional[str] = None) -> SubmitResult:
        """Grades `reply` as the next assistant turn of task `task_id` (of `split`, against
        that split's rubric; needed when several splits hold the prompt_id)."""
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("task_id must be a non-empty string (a HealthBench prompt_id), "
                             "got %r" % (task_id,))
        if not isinstance(reply, str):
            raise ValueError("reply must be a string, got %s" % type(reply).__name__)

        def step(deadline: float) -> SubmitResult:
            sid = self._open_session(task_id, split, deadline)
            try:
                _, payload = self._sse("/%s/call" % self.env_name,
                                       {"name": "answer", "input": {"answer": reply}},
                                       sid, deadline)
            finally:
                self._close_session(sid, deadline)
            out = json.loads(payload)
            if not out.get("ok"):
                raise GradingError(task_id, str(out.get("error", "unknown error")))
            output = out["output"]
            meta = output.get("metadata") or {}
            if output.get("reward") is None:
                raise GradingError(task_id, "hb-env returned no reward")
            return SubmitResult(
                task_id=task_id, reward=float(output["reward"]),
                reward_clipped=float(meta.get("reward_clipped", 0.0)),
                points_met=float(meta.get("points_met", 0.0)),
                points_possible=float(meta.get("points_possible", 0.0)),
                items=tuple(meta.get("items", ())),
                summary="".join(b.get("text", "") for b in output.get("blocks", ())))

        return self._with_retries(step)

    def submit_batch(self, submissions: Iterable[Tuple[str, ...]],
                     return_exceptions: bool = False
                     ) -> List[Union[SubmitResult, HealthBenchEnvError]]:
        """Grades (task_id, reply) or (task_id, reply, split) tuples, at most max_concurrency at
        once, in input order.

        With return_exceptions, a failed submission's HealthBenchEnvError takes its place in
        the list; else the first failure (in input order) is raised after all have finished.
        """
        pool = self._pool()
        futures = [pool.submit(self.submit, *submission) for submission in submissions]
        results: List[Union[SubmitResult, HealthBenchEnvError]] = []
        for future in futures:
            try:
                results.append(future.result())
            except HealthBenchEnvError as e:
                results.append(e)
        if not return_exceptions:
            for r in results:
                if isinstance(r, HealthBenchEnvError):
                    raise r
        return results

    # -- asyncio -----------------------------------------------------------------------------

    async def asubmit(self, task_id: str, reply: str, split: Optional[str] = None
                      ) -> SubmitResult:
        """submit() on the client's thread pool, awaitable from any event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self.submit, task_id, reply, split)

    async def asubmit_batch(self, submissions: Iterable[Tuple[str, ...]],
                            return_exceptions: bool = False
                            ) -> List[Union[SubmitResult, HealthBenchEnvError]]:
        """submit_batch() for asyncio: at most max_concurrency submissions in flight."""
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def one(submission: Tuple[str, ...]):
            async with semaphore:
                try:
                    return await self.asubmit(*submission)
                except HealthBenchEnvError as e:
                    return e

        results = await asyncio.gather(*(one(s) for s in submissions))
        if not return_exceptions:
            for r in results:
                if isinstance(r, HealthBenchEnvError):
                    raise r
        return list(results)

    async def aget_task(self, task_id: str, split: Optional[str] = None) -> TaskPrompt:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self.get_task, task_id, split)

    async def alist_tasks(self, split: Optional[str] = None) -> List[Task]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self.list_tasks, split)
