"""A client for `redjury serve` and the reward functions of the RL trainers
that call it — one file, standard library only, so a trainer can load it by
its path alone (verl and OpenRLHF load reward files with
`importlib.util.spec_from_file_location` and add nothing to `sys.path`).

    from redjury_client import Client
    client = Client("http://127.0.0.1:8080")            # token: REDJURY_TOKEN
    row = client.score("redline-s1-t2-g01a", path="/rollouts/17/contract.docx")
    row["reward"], row["status"], row["gate"], row["rubrics"]

The trainers (configurations that the tests run: clients/python/README.md):

* verl 0.9: `reward.custom_reward_function.path=/abs/path/redjury_client.py`,
  `reward.custom_reward_function.name=compute_score`. The same function
  takes verl's batch form (`data_sources=`, `solution_strs=`, ...) and
  sends the batch as one request.
* OpenRLHF 0.10 and later: `--reward.remote_url http://HOST:8080/openrlhf`
  (the server speaks OpenRLHF's protocol) or `--reward.remote_url
  /abs/path/redjury_client.py` (this file's `reward_func`), with
  `--data.label_key redjury_label`. Before 0.10 the flags were
  `--remote_rm_url` and `--label_key`.
* TRL (GRPOTrainer): `reward_funcs=[trl_reward_function()]`, or
  `trl_async_reward_function()` (TRL awaits async reward functions
  together).

Async forms (`AsyncClient`, `compute_score_async` for verl, the TRL one)
run the blocking calls on one thread pool per process
(`REDJURY_MAX_CONCURRENCY` threads, 64 by default), so a trainer's event
loop is never blocked and its samples go out at once rather than a few
executor threads at a time.

Requests refused for load (429) or not finished in time (503) are retried
after the server's Retry-After, with exponential backoff when it gives
none, until the call's deadline (170 s by default: under OpenRLHF's 180 s
per request). A call that ends at its deadline without rows (the judges
slower than the deadline, the server's queue full throughout) raises
IncompleteError, and every adapter turns that into its trainer's value for
an incomplete row (`incomplete_rows`); a server that cannot be reached at
all raises RedjuryError (status 0), as does anything else the server
refuses, with its message. A row the judges could not complete is never a
silent 0.
"""

import asyncio
import base64
import functools
import json
import os
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
import urllib.error
import urllib.request

__all__ = [
    "AsyncClient",
    "Client",
    "RedjuryError",
    "IncompleteError",
    "compute_score",
    "compute_score_async",
    "extra_info",
    "incomplete_rows",
    "reward_func",
    "trl_async_reward_function",
    "trl_reward_function",
]

DEFAULT_URL = "http://127.0.0.1:8080"
# One call's deadline, retries included: under OpenRLHF's 180 s per
# request and near the server's own --deadline (170 s).
DEFAULT_DEADLINE = 170.0


class RedjuryError(Exception):
    """The server refused a request; `status` and `message` say why."""

    def __init__(self, status, message, body=None):
        super().__init__(f"redjury answered {status}: {message}")
        self.status = status
        self.message = message
        self.body = body


class IncompleteError(RedjuryError):
    """No complete rows by the call's deadline: the judges could not
    complete them (a judge down, stopped, or failing on this output), or
    were slower than the deadline, or the server's queue stayed full."""


class Client:
    """One server; safe to share between threads."""

    def __init__(self, url=None, token=None, timeout=180.0, deadline=DEFAULT_DEADLINE,
                 max_wait=60.0):
        self.url = (url or os.environ.get("REDJURY_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("REDJURY_TOKEN")
        self.timeout = timeout
        self.deadline = deadline
        self.max_wait = max_wait

    def score(self, task, path=None, docx=None, trial=None, on_incomplete=None,
              task_spec=None, input_docx=None):
        """Scores one output: `path` (a file the server may read) or `docx`
        (the file's bytes). Returns the row: reward, status, gate, rubrics."""
        body = item(task, path, docx, trial, task_spec, input_docx)
        if on_incomplete is not None:
            body["on_incomplete"] = on_incomplete
        return self._post("/v1/score", body)

    def score_batch(self, items, on_incomplete=None):
        """Scores many outputs; `items` are dicts with the arguments of
        `score` (task, path or docx, trial, ...). Rows come back in the same
        order. A batch larger than the server takes in one request (its
        queue, or its body limit) is sent in parts."""
        bodies = [item(**i) for i in items]
        return self._batch(bodies, on_incomplete, time.monotonic() + self.deadline)

    def _batch(self, bodies, on_incomplete, until):
        body = {"items": bodies}
        if on_incomplete is not None:
            body["on_incomplete"] = on_incomplete
        try:
            return self._post("/v1/score/batch", body, until)["results"]
        except RedjuryError as e:
            if e.status != 413 or len(bodies) == 1:
                raise
            # The server says how many outputs one request may carry; a
            # body too large is halved.
            limit = e.body.get("max_outputs") if isinstance(e.body, dict) else None
            size = limit if isinstance(limit, int) and 0 < limit < len(bodies) else len(bodies) // 2
            rows = []
            for start in range(0, len(bodies), size):
                rows.extend(self._batch(bodies[start:start + size], on_incomplete, until))
            return rows

    def tasks(self):
        """The names of the tasks the server holds."""
        return self._request("GET", "/v1/tasks", None)["tasks"]

    def _post(self, route, body, until=None):
        return self._request("POST", route, json.dumps(body).encode(), until)

    def _request(self, method, route, data, until=None):
        until = until if until is not None else time.monotonic() + self.deadline
        attempt = 0
        while True:
            left = until - time.monotonic()
            try:
                return self._once(method, route, data, max(0.05, min(self.timeout, left)))
            except _Retry as r:
                wait = r.wait if r.wait is not None else backoff(attempt, self.max_wait)
                attempt += 1
                if time.monotonic() + wait >= until:
                    raise r.at_deadline(self.deadline) from None
                time.sleep(wait)

    def _once(self, method, route, data, timeout):
        req = urllib.request.Request(self.url + route, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            body = parse(e.read())
            message = body.get("error", e.reason) if isinstance(body, dict) else str(body)
            if e.code in (429, 503):
                raise _Retry(e.code, message, body, retry_after(e.headers, self.max_wait))
            raise RedjuryError(e.code, message, body) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            # urllib wraps what fails while connecting and sending in
            # URLError and lets a timeout waiting for the answer through
            # bare (socket.timeout is not TimeoutError before Python 3.10).
            if isinstance(e, (TimeoutError, socket.timeout)) and not isinstance(e, urllib.error.URLError):
                # The server took the request and did not answer in time:
                # the judges are slower than this call may wait.
                raise _Retry(0, f"no answer from {self.url} in {timeout:.1f} s", None, None,
                             reached=True) from None
            raise _Retry(0, f"cannot reach {self.url}: {reason}", None, None) from None


class _Retry(Exception):
    def __init__(self, status, message, body, wait, reached=None):
        super().__init__(message)
        self.status, self.message, self.body, self.wait = status, message, body, wait
        # Whether the server took the request (it answered 429/503, or took
        # it and was too slow) rather than refusing the connection.
        self.reached = reached if reached is not None else status != 0

    def at_deadline(self, deadline):
        """What the caller gets when the deadline passes on this failure:
        IncompleteError when the server took the request (no rows in
        time), RedjuryError when it could not be reached at all."""
        message = f"{self.message} (gave up at the call's deadline, {deadline:.0f} s)"
        if self.reached:
            return IncompleteError(self.status, message, self.body)
        return RedjuryError(self.status, message, self.body)


def item(task, path=None, docx=None, trial=None, task_spec=None, input_docx=None):
    """One output as the server takes it."""
    if (path is None) == (docx is None):
        raise ValueError("give the output as path= or docx= (bytes), one of them")
    out = {"task": task}
    if path is not None:
        out["path"] = os.path.abspath(os.fspath(path))
    else:
        out["docx_base64"] = base64.b64encode(docx).decode()
    if trial is not None:
        out["trial"] = str(trial)
    if task_spec is not None:
        out["task_spec"] = task_spec
    if input_docx is not None:
        out["input_base64"] = base64.b64encode(input_docx).decode()
    return out


def parse(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def retry_after(headers, cap):
    value = headers.get("Retry-After") if headers else None
    try:
        return min(float(value), cap) if value is not None else None
    except ValueError:
        return None


def backoff(attempt, cap):
    return min(cap, 0.5 * 2 ** attempt) * (0.5 + random.random() / 2)


# ---- async -------------------------------------------------------------------

_pool = None
_pool_lock = threading.Lock()


def _executor():
    """The one thread pool of this process for the async forms
    (REDJURY_MAX_CONCURRENCY threads, 64 by default)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            size = int(os.environ.get("REDJURY_MAX_CONCURRENCY") or 64)
            _pool = ThreadPoolExecutor(max_workers=max(1, size), thread_name_prefix="redjury")
        return _pool


class AsyncClient:
    """The client's calls as coroutines, for a trainer's event loop: each
    runs on the process's shared thread pool, so the loop is never blocked
    and many calls are in flight at once. Same arguments and errors as
    `Client`."""

    def __init__(self, client=None, **kwargs):
        self.client = client if client is not None else Client(**kwargs)

    async def _run(self, f, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_executor(), functools.partial(f, *args, **kwargs))

    async def score(self, task, **kwargs):
        return await self._run(self.client.score, task, **kwargs)

    async def score_batch(self, items, on_incomplete=None):
        return await self._run(self.client.score_batch, items, on_incomplete=on_incomplete)

    async def tasks(self):
        return await self._run(self.client.tasks)


_shared = None
_shared_lock = threading.Lock()


def shared_client():
    """The client the trainer adapters share (REDJURY_URL, REDJURY_TOKEN,
    REDJURY_DEADLINE in seconds)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            deadline = float(os.environ.get("REDJURY_DEADLINE", DEFAULT_DEADLINE))
            _shared = Client(deadline=deadline)
        return _shared


def incomplete_value():
    """REDJURY_ON_INCOMPLETE as a number, or None: what the verl and
    OpenRLHF adapters answer for a row the judges could not complete.
    Those trainers take no None, so without it such a row raises
    IncompleteError (never a silent 0)."""
    value = os.environ.get("REDJURY_ON_INCOMPLETE")
    return float(value) if value not in (None, "") else None


# ---- what a trainer gets for a row ---------------------------------------------

def incomplete_rows(n, on_incomplete, error):
    """The rows a call that ended at its deadline stands for: `n` rows
    with the caller's value for an incomplete row (`on_incomplete`: a
    number, or "null" for None), shaped as the server's own on_incomplete
    rows; with no value chosen, `error` (an IncompleteError) is raised.
    Every adapter comes through here, so the deadline means one thing."""
    if on_incomplete is None:
        raise error
    value = None if on_incomplete == "null" else float(on_incomplete)
    reason = f"no rows before the call's deadline: {error.message}"
    return [{"reward": value, "reward_from": "on_incomplete", "status": "incomplete",
             "gate": None, "penalty": None, "rubrics": [], "reason": reason}
            for _ in range(n)]


def _rows(call, n, on_incomplete):
    try:
        return call()
    except IncompleteError as e:
        return incomplete_rows(n, on_incomplete, e)


async def _rows_async(call, n, on_incomplete):
    try:
        return await call()
    except IncompleteError as e:
        return incomplete_rows(n, on_incomplete, e)


# The reference's rubric categories, each with its own pair of keys (a
# category outside them counts as "other"): the keys are the same for every
# sample, as verl requires.
CATEGORIES = {
    "Commercial Context": "commercial_context",
    "Counterparty Acceptance Prediction": "counterparty_acceptance",
    "Deal-closing Orientation": "deal_closing",
    "Legal correctness": "legal_correctness",
    "Negotiation Quality": "negotiation_quality",
}


def extra_info(row):
    """Per-sample numbers with the same keys for every row: gate_passed,
    incomplete (1.0 or 0.0), penalty (the weight of the penalties found),
    rubrics_passed / rubrics_failed / rubrics_undecided (positive rubrics
    by panel verdict), and per category `earned_<c>` and `possible_<c>`
    (passed and total positive weight: their batch means give the earned
    share). A row with no verdicts (incomplete, or a gate failure) has 0
    for all of them but the flags."""
    out = {
        "gate_passed": 1.0 if (row.get("gate") or {}).get("passed") else 0.0,
        "incomplete": 1.0 if row.get("reward_from") == "on_incomplete"
        or row.get("status") == "incomplete" else 0.0,
        "penalty": float(row.get("penalty") or 0.0),
        "rubrics_passed": 0.0,
        "rubrics_failed": 0.0,
        "rubrics_undecided": 0.0,
    }
    for key in list(CATEGORIES.values()) + ["other"]:
        out[f"earned_{key}"] = 0.0
        out[f"possible_{key}"] = 0.0
    for rubric in row.get("rubrics") or []:
        weight = rubric.get("weight") or 0
        if weight <= 0:
            continue
        verdict = rubric.get("verdict")
        count = {"PASS": "rubrics_passed", "FAIL": "rubrics_failed"}.get(verdict,
                                                                         "rubrics_undecided")
        out[count] += 1.0
        key = CATEGORIES.get(rubric.get("category"), "other")
        out[f"possible_{key}"] += float(weight)
        if verdict == "PASS":
            out[f"earned_{key}"] += float(weight)
    return out


# ---- verl ------------------------------------------------------------------

def _verl_item(ground_truth, solution_str, extra_info):
    label = json.loads(ground_truth) if isinstance(ground_truth, str) else dict(ground_truth)
    path = (extra_info or {}).get("docx_path") or label.get("path")
    if path is None and isinstance(solution_str, str) and solution_str.strip().endswith(".docx"):
        path = solution_str.strip()
    if path is None:
        raise ValueError("no .docx for this sample: put its path in extra_info['docx_path'] "
                         "or the label's 'path'")
    return {"task": label["task"], "path": path, "trial": label.get("trial")}


def _verl_score(row):
    # Every sample returns the same keys, numbers only: verl takes the keys
    # of the first and averages them in its validation metrics.
    return {"score": float(row["reward"]), **extra_info(row)}


def _verl_items(ground_truths, solution_strs, extra_infos):
    infos = extra_infos if extra_infos is not None else [None] * len(ground_truths)
    sols = solution_strs if solution_strs is not None else [None] * len(ground_truths)
    return [_verl_item(g, s, e) for g, s, e in zip(ground_truths, sols, infos)]


def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None,
                  *, data_sources=None, solution_strs=None, ground_truths=None, extra_infos=None,
                  **kwargs):
    """verl's custom reward function, per sample or per batch.

    Per sample (verl 0.9 reward loop, `verl/experimental/reward_loop/
    reward_manager/naive.py` and `limited.py` — the `rate_limited`
    manager): called with data_source=, solution_str=, ground_truth=,
    extra_info= (and the router's keywords, ignored); verl runs a sync
    function in its loop's default executor. Batch (the legacy `batch`
    manager, `verl/workers/reward_manager/batch.py`, which verl 0.9.1's
    reward loop no longer registers): called with data_sources=, solution_strs=,
    ground_truths=, extra_infos=; the batch goes as one request and a list
    comes back in order.

    The ground truth is a redjury label: a JSON object (or its text)
    naming the task, e.g. {"task": "redline-s1-t2-g01a"}. The rollout's
    .docx is, in order: extra_info["docx_path"], the label's "path", or the
    response itself when it is a path ending in .docx.
    """
    on_incomplete = incomplete_value()
    client = shared_client()
    if ground_truths is not None:
        items = _verl_items(ground_truths, solution_strs, extra_infos)
        rows = _rows(lambda: client.score_batch(items, on_incomplete=on_incomplete),
                     len(items), on_incomplete)
        return [_verl_score(r) for r in rows]
    it = _verl_item(ground_truth, solution_str, extra_info)
    rows = _rows(lambda: [client.score(it["task"], path=it["path"], trial=it["trial"],
                                       on_incomplete=on_incomplete)], 1, on_incomplete)
    return _verl_score(rows[0])


async def compute_score_async(data_source=None, solution_str=None, ground_truth=None,
                              extra_info=None, *, data_sources=None, solution_strs=None,
                              ground_truths=None, extra_infos=None, **kwargs):
    """`compute_score` as a coroutine: verl's reward managers await an
    async custom function on their event loop (`inspect.iscoroutinefunction`
    in naive.py and limited.py) instead of queueing it on a few executor
    threads. Name it with `reward.custom_reward_function.name=compute_score_async`."""
    on_incomplete = incomplete_value()
    client = AsyncClient(shared_client())
    if ground_truths is not None:
        items = _verl_items(ground_truths, solution_strs, extra_infos)
        rows = await _rows_async(lambda: client.score_batch(items, on_incomplete=on_incomplete),
                                 len(items), on_incomplete)
        return [_verl_score(r) for r in rows]
    it = _verl_item(ground_truth, solution_str, extra_info)

    async def one():
        return [await client.score(it["task"], path=it["path"], trial=it["trial"],
                                   on_incomplete=on_incomplete)]

    rows = await _rows_async(one, 1, on_incomplete)
    return _verl_score(rows[0])


# ---- OpenRLHF ----------------------------------------------------------------

def reward_func(queries, prompts, labels, **kwargs):
    """OpenRLHF's local reward function (`--reward.remote_url
    /abs/path/redjury_client.py`; `openrlhf/utils/agent.py`, 0.11.2, calls
    reward_func(queries, prompts, labels) in a thread, lists of one). Each
    label is a redjury label: {"task": NAME, "path": FILE} or with
    "docx_base64", as JSON or its text.

    Returns {"rewards", "scores", "extra_logs"} as torch tensors when torch
    is there (as OpenRLHF's examples do), plain lists otherwise.
    """
    r = request_rewards(queries, prompts, labels)
    try:
        import torch
    except ImportError:
        return r
    return {
        "rewards": torch.tensor(r["rewards"], dtype=torch.float),
        "scores": torch.tensor(r["scores"], dtype=torch.float),
        "extra_logs": {k: torch.tensor(v) for k, v in r["extra_logs"].items()},
    }


def request_rewards(queries, prompts, labels):
    """The server's answer to OpenRLHF's request, as plain lists, through
    the shared client (its retries and deadline). A row the judges could
    not complete, or not before the deadline, is REDJURY_ON_INCOMPLETE, or
    raises IncompleteError. `extra_logs` has the numbers of `extra_info`,
    each key prefixed `redjury_` (the server computes them)."""
    on_incomplete = incomplete_value()
    route = "/openrlhf" + (f"?on_incomplete={on_incomplete}" if on_incomplete is not None else "")
    body = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
    try:
        return shared_client()._post(route, body)
    except IncompleteError as e:
        rows = incomplete_rows(len(body["labels"]), on_incomplete, e)
        rewards = [r["reward"] for r in rows]
        logs = [extra_info(r) for r in rows]
        return {"rewards": rewards, "scores": rewards,
                "extra_logs": {f"redjury_{k}": [x[k] for x in logs] for k in logs[0]}}


# ---- TRL ---------------------------------------------------------------------

def docx_path_column(i, prompt, completion, kwargs):
    """The rollout's .docx: the dataset's `docx_path` column."""
    return kwargs["docx_path"][i]


def _trl_items(prompts, completions, kwargs, docx_from):
    items = []
    for i, (p, c) in enumerate(zip(prompts, completions)):
        doc = docx_from(i, p, c, kwargs)
        source = {"docx": doc} if isinstance(doc, (bytes, bytearray)) else {"path": doc}
        trial = kwargs["trial"][i] if "trial" in kwargs else None
        items.append({"task": kwargs["task"][i], "trial": trial, **source})
    return items


def _trl_rewards(rows, kwargs):
    """The rewards, with every row's numbers and reasons sent to TRL's
    completions table (`log_extra`) and their batch means to its metrics
    (`log_metric`), when TRL passes them."""
    log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
    infos = [extra_info(r) for r in rows]
    if callable(log_extra):
        for key in infos[0] if infos else []:
            log_extra(f"redjury_{key}", [x[key] for x in infos])
        log_extra("redjury_reason", [r.get("reason") or "" for r in rows])
    if callable(log_metric) and infos:
        for key in infos[0]:
            log_metric(f"redjury/{key}", sum(x[key] for x in infos) / len(infos))
    return [row["reward"] for row in rows]


def trl_reward_function(client=None, docx_from=docx_path_column):
    """A GRPOTrainer reward function (TRL 1.16, `trl/trainer/
    grpo_trainer.py` `_calculate_rewards`: called with prompts=,
    completions=, completion_ids=, trainer_state=, log_extra=, log_metric=
    and every dataset column as keyword lists).

    The dataset needs a `task` column (and may have `trial`); the rollout's
    .docx comes from `docx_from(i, prompt, completion, kwargs)`, by default
    the `docx_path` column. A row the judges could not complete, or not
    before the call's deadline, is None: TRL leaves it out of that
    sample's reward and of its group's baseline (never a silent 0).
    """
    client = client or shared_client()

    def redjury(prompts, completions, **kwargs):
        items = _trl_items(prompts, completions, kwargs, docx_from)
        rows = _rows(lambda: client.score_batch(items, on_incomplete="null"), len(items), "null")
        return _trl_rewards(rows, kwargs)

    return redjury


def trl_async_reward_function(client=None, docx_from=docx_path_column):
    """`trl_reward_function` as a coroutine function: TRL 1.16 awaits async
    reward functions together (`asyncio.gather` in `_calculate_rewards`),
    so the judges' wait overlaps the other reward functions'."""
    client = AsyncClient(client or shared_client())

    async def redjury(prompts, completions, **kwargs):
        items = _trl_items(prompts, completions, kwargs, docx_from)
        rows = await _rows_async(lambda: client.score_batch(items, on_incomplete="null"),
                                 len(items), "null")
        return _trl_rewards(rows, kwargs)

    return redjury
