"""OpenRLHF: redjury as the remote reward model.

Start the service, then point OpenRLHF at its /openrlhf route:

    redjury serve --tasks rubrics --allow-path /rollouts --out results/rl &
    python -m openrlhf.cli.train_ppo_ray ... \
        --remote_rm_url 'http://127.0.0.1:8080/openrlhf?on_incomplete=error' \
        --label_key redjury_label

Each prompt record carries a label naming the task and where the rollout's
.docx will be, e.g.
    {"prompt": "...", "redjury_label": "{\"task\": \"redline-s1-t2-g01a\", \"path\": \"/rollouts/s1-t2/contract.docx\"}"}
OpenRLHF retries a failed request five times, one second apart, ignoring
Retry-After; with on_incomplete=error an incomplete row fails that
sample. To score in-process from OpenRLHF's local-function mode instead
(--remote_rm_url clients/python/openrlhf_reward_func.py), this file's
reward_func forwards to the same route.
"""

import json
import os
import urllib.request


def reward_func(queries, prompts, labels, **kwargs):
    import torch

    r = request_rewards(queries, prompts, labels)
    return {
        "rewards": torch.tensor(r["rewards"], dtype=torch.float),
        "scores": torch.tensor(r["scores"], dtype=torch.float),
        "extra_logs": {k: torch.tensor(v) for k, v in r["extra_logs"].items()},
    }


def request_rewards(queries, prompts, labels):
    """The server's reply to OpenRLHF's request, as plain lists."""
    url = os.environ.get("REDJURY_URL", "http://127.0.0.1:8080") + "/openrlhf"
    body = json.dumps({"query": queries, "prompts": prompts, "labels": labels}).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    token = os.environ.get("REDJURY_TOKEN")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=170) as resp:
        return json.loads(resp.read())
