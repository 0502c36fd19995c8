"""A client for `redjury serve`, standard library only.

    from redjury_client import Client
    client = Client("http://127.0.0.1:8080")            # token: REDJURY_TOKEN
    row = client.score("redline-s1-t2-g01a", path="/rollouts/17/contract.docx")
    row["reward"], row["status"], row["gate"], row["rubrics"]

Requests refused for load (429) or not finished in time (503) are retried
after the server's Retry-After, with exponential backoff when it gives
none. Anything else the server refuses raises RedjuryError with its
message. A row the judges could not complete is never a silent 0: by
default the server answers 503 for it (retried, then IncompleteError);
pass on_incomplete="null" or a number to get those rows back instead.
"""

import base64
import json
import os
import random
import time
import urllib.error
import urllib.request

__all__ = ["Client", "RedjuryError", "IncompleteError"]


class RedjuryError(Exception):
    """The server refused a request; `status` and `message` say why."""

    def __init__(self, status, message, body=None):
        super().__init__(f"redjury answered {status}: {message}")
        self.status = status
        self.message = message
        self.body = body


class IncompleteError(RedjuryError):
    """Rows stayed incomplete through every retry (a judge is down or stopped)."""


class Client:
    """One server; safe to share between threads."""

    def __init__(self, url, token=None, timeout=180.0, retries=6, max_wait=60.0):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("REDJURY_TOKEN")
        self.timeout = timeout
        self.retries = retries
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
        """Scores many outputs in one request; `items` are dicts with the
        arguments of `score` (task, path or docx, trial, ...). Rows come
        back in the same order."""
        body = {"items": [item(**i) for i in items]}
        if on_incomplete is not None:
            body["on_incomplete"] = on_incomplete
        return self._post("/v1/score/batch", body)["results"]

    def tasks(self):
        """The names of the tasks the server holds."""
        return self._request("GET", "/v1/tasks", None)["tasks"]

    def _post(self, route, body):
        return self._request("POST", route, json.dumps(body).encode())

    def _request(self, method, route, data):
        last = None
        for attempt in range(self.retries + 1):
            try:
                return self._once(method, route, data)
            except _Retry as r:
                last = r
                if attempt == self.retries:
                    break
                time.sleep(r.wait if r.wait is not None else backoff(attempt, self.max_wait))
        if last.status == 503 and last.body and "incomplete" in last.body:
            raise IncompleteError(last.status, last.message, last.body)
        raise RedjuryError(last.status, last.message, last.body)

    def _once(self, method, route, data):
        req = urllib.request.Request(self.url + route, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            body = parse(e.read())
            message = body.get("error", e.reason) if isinstance(body, dict) else str(body)
            if e.code in (429, 503):
                raise _Retry(e.code, message, body, retry_after(e.headers, self.max_wait))
            raise RedjuryError(e.code, message, body) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            raise _Retry(0, f"cannot reach {self.url}: {e}", None, None) from None


class _Retry(Exception):
    def __init__(self, status, message, body, wait):
        super().__init__(message)
        self.status, self.message, self.body, self.wait = status, message, body, wait


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
