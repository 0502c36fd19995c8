#!/usr/bin/env python3
"""Computes the expected figures of the parity suite with the reference
benchmark's OWN code (salma-remyx/redline-bench, src/), which is not part
of this repository:

    python3 tests/parity/generate.py --reference /path/to/redline-bench

For each tests/parity/runs/<run>.jsonl (redjury rows), it builds the rows
the reference's panel reader would produce — reward = round(weighted_score,
4) from the panel verdicts, a gate failure's rubrics all FAIL with reward
0.0, rows without a verdict on every rubric absent (the reference drops a
task a judge did not answer) — in the file's order, and writes the
reference's leaderboard row (build_leaderboard) plus summarize_model's
extra figures to tests/parity/expected/<run>.json.
"""
import argparse
import json
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = {"ties": "gpt55", "trials": "modelA", "categories": "opus48", "random": "claude-fable-5"}

ap = argparse.ArgumentParser()
ap.add_argument("--reference", required=True, help="a checkout of salma-remyx/redline-bench")
args = ap.parse_args()
sys.path.insert(0, str(Path(args.reference) / "src"))
try:
    import lxml  # noqa: F401  (docx_metrics imports it; no .docx is read here)
except ImportError:
    lx = types.ModuleType("lxml")
    lx.etree = types.ModuleType("lxml.etree")
    sys.modules["lxml"], sys.modules["lxml.etree"] = lx, lx.etree

import aggregate  # noqa: E402
import metrics_summary  # noqa: E402
import panel  # noqa: E402
import runs_reader  # noqa: E402

for path in sorted((HERE / "runs").glob("*.jsonl")):
    run = path.stem
    model = MODELS[run]
    rows = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if any(x["verdict"] is None for x in r["rubrics"]) and r["gate"]["passed"]:
            continue
        gate = r["gate"]["passed"]
        per = [{"rubric_id": x["id"], "verdict": x["verdict"] if gate else "FAIL", "weight": x["weight"],
                "is_penalty": x["weight"] < 0, "category": x["category"]} for x in r["rubrics"]]
        reward = round(panel.weighted_score({p["rubric_id"]: p["verdict"] for p in per},
                                            {p["rubric_id"]: p["weight"] for p in per}), 4) if gate else 0.0
        m = runs_reader._TASK_NAME_RE.match(r["task"])
        sid, turn, group, variant = m.groups()
        rows.append({"model": model, "task": r["task"], "scenario": int(sid), "turn": int(turn), "side": r["side"],
                     "input_group": f"s{sid}-t{turn}-g{group}", "variant": variant, "reward": reward,
                     "trial": int(r["trial"]), "gate_passed": gate, "_per_rubric": per,
                     **{k: None for k in aggregate.DIAG_KEYS}})
    by_model = runs_reader.rows_by_model(rows)
    board = metrics_summary.build_leaderboard(by_model)[0]
    s = aggregate.summarize_model(rows)
    expected = {
        "model": model,
        "python": sys.version.split()[0],
        "leaderboard": board,
        "overall_score": s["overall_score"],
        "mean_per_task_reward": s["mean_per_task_reward"],
        "by_scenario_turn": s["by_scenario_turn"],
        "model_seed": metrics_summary._model_seed(model),
    }
    (HERE / "expected" / f"{run}.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(run, board["overall_turn_weighted"], board["ci"])
