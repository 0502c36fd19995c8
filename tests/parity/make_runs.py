#!/usr/bin/env python3
"""Writes the synthetic judged runs of the parity suite, as redjury
results.jsonl rows (tests/parity/runs/<run>.jsonl), deterministically:

- ties: 12 (scenario, turn) cells, two input groups each, a/b variants,
  rewards in sixteenths and thirds so that cell and headline means hit
  exact rounding ties;
- trials: three trials per task (best@k differs from the mean), gate
  failures, incomplete rows, a cell whose groups all failed the gate;
- categories: category names in two spellings that differ only in case,
  penalties triggered and not, gate failures carrying rubrics;
- random: 140 tasks over 12 cells with random verdicts.

Run: python3 tests/parity/make_runs.py   (then generate.py for the expected figures)
"""
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIDE = {1: "A", 2: "B", 3: "A", 4: "B"}


def row(task, trial, rubrics, gate=True, incomplete=()):
    s, t, g, v = task_parts(task)
    out_rubrics = []
    for rid, weight, category, verdict in rubrics:
        if rid in incomplete:
            verdict = None
        out_rubrics.append({"id": rid, "kind": "llm", "weight": weight, "category": category, "verdict": verdict,
                            "votes": {"j1": verdict, "j2": verdict, "j3": verdict}})
    return {"task": task, "trial": str(trial), "scenario": str(s), "turn": t, "side": SIDE[t], "group": f"s{s}-t{t}-g{g:02d}",
            "variant": v, "status": "pending", "gate": {"passed": gate, "reason": "" if gate else "no tracked change or comment"},
            "reward": None, "earned": None, "penalty": None, "total_positive": 0, "rubrics": out_rubrics}


def task_parts(task):
    _, s, t, g = task.split("-")
    return int(s[1:]), int(t[1:]), int(g[1:-1]), g[-1]


def verdicts_for(fraction, weights):
    """Rubrics whose reward is `fraction` of 16 positive points: weights
    sum to 16, PASS on the first `fraction` points."""
    out, left = [], fraction
    for i, w in enumerate(weights):
        out.append((f"r{i + 1}", w, "Legal correctness", "PASS" if left >= w else "FAIL"))
        if left >= w:
            left -= w
    return out


def ties():
    rows = []
    weights = [8, 4, 2, 1, 1]
    for s in (1, 2, 3):
        for t in (1, 2, 3, 4):
            for g in (1, 2):
                for v, shift in (("a", 0), ("b", 3)):
                    sixteenths = (s * 5 + t * 3 + g * 7 + shift) % 17
                    rows.append(row(f"redline-s{s}-t{t}-g{g:02d}{v}", 1, verdicts_for(sixteenths, weights)))
    # Thirds: one task of weights 1, 1, 1.
    rows.append(row("redline-s1-t1-g03a", 1, [("r1", 1, "Negotiation Quality", "PASS"), ("r2", 1, "Negotiation Quality", "FAIL"), ("r3", 1, "Negotiation Quality", "FAIL")]))
    return rows


def trials():
    rng = random.Random(7)
    rows = []
    for s in (1, 2):
        for t in (1, 2, 3):
            for g in (1, 2):
                for v in ("a", "b"):
                    task = f"redline-s{s}-t{t}-g{g:02d}{v}"
                    for trial in (1, 2, 3):
                        rubrics = [(f"r{i}", w, "Commercial Context", rng.choice(["PASS", "FAIL"])) for i, w in enumerate([5, 3, 2, -4], 1)]
                        gate = not (t == 3 and s == 2) and rng.random() > 0.15
                        incomplete = ("r2",) if rng.random() < 0.1 else ()
                        rows.append(row(task, trial, rubrics, gate=gate, incomplete=incomplete))
    return rows


def categories():
    rng = random.Random(11)
    rows = []
    cats = ["Legal correctness", "legal correctness", "Commercial Context", "Deal-closing Orientation"]
    for s in (1, 2, 3):
        for t in (1, 2):
            for g in (1,):
                task = f"redline-s{s}-t{t}-g{g:02d}a"
                rubrics = [(f"r{i}", w, cats[i % 4], rng.choice(["PASS", "FAIL"])) for i, w in enumerate([6, 4, 3, -5, -2, 2], 1)]
                rows.append(row(task, 1, rubrics, gate=(s, t) != (2, 2)))
    return rows


def random_run():
    rng = random.Random(2026)
    rows = []
    for n in range(140):
        s, t = 1 + n % 3, 1 + (n // 3) % 4
        g = 1 + (n // 12) % 5
        v = "ab"[(n // 60) % 2]
        task = f"redline-s{s}-t{t}-g{g:02d}{v}"
        weights = [rng.choice([1, 2, 3, 5, 8, 10]) for _ in range(rng.randrange(4, 12))] + [-rng.choice([2, 4, 6])]
        rubrics = [(f"r{i}", w, rng.choice(["Legal correctness", "Commercial Context", "Negotiation Quality"]), rng.choice(["PASS", "FAIL"])) for i, w in enumerate(weights, 1)]
        rows.append(row(task, 1 + n // 120, rubrics, gate=rng.random() > 0.05))
    # One row per task × trial.
    seen, out = set(), []
    for r in rows:
        if (r["task"], r["trial"]) not in seen:
            seen.add((r["task"], r["trial"]))
            out.append(r)
    return out


for name, rows in (("ties", ties()), ("trials", trials()), ("categories", categories()), ("random", random_run())):
    with open(HERE / "runs" / f"{name}.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(name, len(rows))
