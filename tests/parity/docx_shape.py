#!/usr/bin/env python3
"""Computes, with the reference benchmark's OWN docx_metrics.py
(salma-remyx/redline-bench, src/docx_metrics.py, which is not part of this
repository), what it reads from every bundled .docx — each output in
scenarios/outputs/ and each gold redline in gold/redlines/ — and writes
tests/parity/expected/docx_shape.json for tests/parity.rs:

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install lxml
    /tmp/refvenv/bin/python tests/parity/docx_shape.py --reference /path/to/redline-bench

Per file, unfiltered and filtered by its task's author (the reference's
substring filter): the event kinds and sizes, the edit-operation count,
touched paragraphs, redline clusters and touched paragraph indices.
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ap = argparse.ArgumentParser()
ap.add_argument("--reference", required=True, help="a checkout of salma-remyx/redline-bench")
args = ap.parse_args()
sys.path.insert(0, str(Path(args.reference) / "src"))
import docx_metrics as dm  # noqa: E402


def author_of(task: str) -> str:
    return json.loads((ROOT / "rubrics" / f"{task}.json").read_text())["author"]


def read(path: Path, author):
    raw = dm._collect_quality_for_docx(path, author_substring=author)
    return {
        "event_kinds": raw["event_kinds"],
        "event_sizes": raw["event_sizes"],
        "edit_op_count": raw["edit_op_count"],
        "touched_paras": raw["touched_paras"],
        "n_paragraphs": raw["n_paragraphs"],
        "clusters": dm._count_redline_clusters(path, author),
        "touched": sorted(dm._touched_paragraph_indices(path, author)),
    }


files = sorted((ROOT / "scenarios" / "outputs").glob("*/*.docx")) + sorted((ROOT / "gold" / "redlines").glob("*.docx"))
out = {}
for f in files:
    task = f.stem
    out[str(f.relative_to(ROOT))] = {"all": read(f, None), "author": author_of(task), "own": read(f, author_of(task))}
(Path(__file__).parent / "expected" / "docx_shape.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
print(len(out), "files")

# The run-level sections, for the strong and weak sample runs scored over
# every task in rubrics/: the reference's compute_surgicalness (the model's
# events filtered by each task's author: one call per author, the counts
# summed and the shares rounded as it rounds) and compute_verbosity_turn1,
# the expert row over the gold redlines of the run's tasks.
tasks = sorted(p.stem for p in (ROOT / "rubrics").glob("*.json"))
gold = {t: ROOT / "gold" / "redlines" / f"{t}.docx" for t in tasks if (ROOT / "gold" / "redlines" / f"{t}.docx").exists()}
runs = {}
for run in ("strong", "weak"):
    docs = {p.stem: p for p in sorted((ROOT / "scenarios" / "outputs" / run).glob("*.docx"))}
    by_author = {}
    for t, p in docs.items():
        by_author.setdefault(author_of(t), []).append(p)
    inline = block = n = 0
    for author, paths in by_author.items():
        s = dm.compute_surgicalness({"m": paths}, [], model_author_substring=author)["m"]
        inline, block, n = inline + s["n_inline"], block + s["n_block"], n + s["n_tasks"]
    total = inline + block
    surg = {
        "run": {"n_inline": inline, "n_block": block, "inline_share": round(inline / total, 4),
                "block_share": round(block / total, 4), "surgicalness_score": round(inline / total, 4), "n_tasks": n},
        "expert": dm.compute_surgicalness({}, list(gold.values()))["expert"],
    }
    first = [(t, p, gold.get(t)) for t, p in docs.items() if dm.turn_of(t) == 1]
    verb = dm.compute_verbosity_turn1({"run": first}, {t: p for t, p in gold.items() if dm.turn_of(t) == 1})
    runs[run] = {"surgicalness": surg, "verbosity_turn1": verb}
(Path(__file__).parent / "expected" / "docx_shape_runs.json").write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
