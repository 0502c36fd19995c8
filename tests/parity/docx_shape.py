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
