"""verl custom reward function backed by `redjury serve`.

In the verl config:

    custom_reward_function:
      path: clients/python/redjury_verl.py
      name: compute_score

Each sample's `reward_model.ground_truth` is a redjury label: a JSON
object (or its text) naming the task, e.g. {"task": "redline-s1-t2-g01a"}.
The rollout's .docx is found, in order, at: extra_info["docx_path"], the
label's "path", or the response itself when it is a path ending in .docx.
Set REDJURY_URL (default http://127.0.0.1:8080) and, off loopback,
REDJURY_TOKEN. verl needs a number for every sample: a row the judges
could not complete raises IncompleteError unless REDJURY_ON_INCOMPLETE
names the number to use instead (never a silent 0).
"""

import json
import os

from redjury_client import Client

_client = None


def client():
    global _client
    if _client is None:
        _client = Client(os.environ.get("REDJURY_URL", "http://127.0.0.1:8080"))
    return _client


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    label = json.loads(ground_truth) if isinstance(ground_truth, str) else dict(ground_truth)
    path = (extra_info or {}).get("docx_path") or label.get("path")
    if path is None and solution_str.strip().endswith(".docx"):
        path = solution_str.strip()
    if path is None:
        raise ValueError("no .docx for this sample: put its path in extra_info['docx_path'] or the label's 'path'")
    on_incomplete = os.environ.get("REDJURY_ON_INCOMPLETE")
    row = client().score(label["task"], path=path, trial=label.get("trial"),
                         on_incomplete=float(on_incomplete) if on_incomplete else None)
    return {
        "score": float(row["reward"]),
        "gate_passed": 1.0 if row["gate"]["passed"] else 0.0,
        "incomplete": 1.0 if row["reward_from"] == "on_incomplete" else 0.0,
    }
