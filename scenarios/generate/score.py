#!/usr/bin/env python3
"""Reward of each sample output from the attorney verdicts in gold/verdicts.

    python3 scenarios/generate/score.py

reward = clamp((sum of weights of PASSed positive rubrics
                - sum of |weight| of PASSed negative rubrics) / sum of positive weights, 0, 1)
(a negative rubric PASSes when the undesirable edit is present); a rubric marked
"required" that is not met makes the reward 0.
"""
import glob
import json
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def reward(rubrics, verdicts):
    pos = sum(r["weight"] for r in rubrics if r["weight"] > 0)
    # A required rubric not met (a positive item failed, a penalty triggered) zeroes the reward.
    if any(r.get("required") and (verdicts[r["id"]]["verdict"] == "PASS") != (r["weight"] > 0) for r in rubrics):
        return 0.0
    got = sum(r["weight"] for r in rubrics if r["weight"] > 0 and verdicts[r["id"]]["verdict"] == "PASS")
    pen = sum(-r["weight"] for r in rubrics if r["weight"] < 0 and verdicts[r["id"]]["verdict"] == "PASS")
    return max(0.0, min(1.0, (got - pen) / pos))


def main():
    print("%-22s %3s %6s %6s %6s" % ("task", "n", "gold", "strong", "weak"))
    for path in sorted(glob.glob(os.path.join(ROOT, "rubrics", "*.json"))):
        name = os.path.basename(path)[: -len(".json")]
        task = json.load(open(path))
        v = json.load(open(os.path.join(ROOT, "gold", "verdicts", name + ".json")))
        r = [reward(task["rubrics"], v["outputs"][k]) for k in ("gold", "strong", "weak")]
        print("%-22s %3d %6.2f %6.2f %6.2f" % (name, len(task["rubrics"]), *r))


if __name__ == "__main__":
    main()
