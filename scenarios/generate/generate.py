#!/usr/bin/python3
"""Build the bundled synthetic negotiation benchmark with LibreOffice Writer.

    bash scenarios/generate/install.sh          # once: libreoffice-writer, python3-uno
    /usr/bin/python3 scenarios/generate/generate.py

Starts its own headless soffice (private profile under the temp dir, named
pipe), builds every .docx from the content in scenario_s*.py next to this
file, writes the rubric task files, evaluates each rubric's check against the
produced files (verify.py) to write gold/verdicts/*.json, prints the reward of
each sample output, and stops soffice at the end. Scenario s3 (check-based
rubric items, checks.py) is built by scenario_s3.build() after the others;
scenario s4 (task-family checks) by scenario_s4.build(), which writes its
.docx files as WordprocessingML (ooxml.py) and makes its .xlsx files with a
soffice of its own. `generate.py s4` rebuilds only s4.

All paths are relative to the repository root (two levels above this file).
"""
import importlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import lo  # noqa: E402
import verify  # noqa: E402
from score import reward  # noqa: E402

SCENARIO_MODULES = ["scenario_s1", "scenario_s2"]
FIXED_ZIP_TIME = (2025, 1, 1, 0, 0, 0)


def rel(*parts):
    return os.path.join(ROOT, *parts)


# ---------------------------------------------------------------------------
# Base contract
# ---------------------------------------------------------------------------

def define_list_style(doc, name):
    """A 3-level Word-style list: "1." / "1.1" / "(a)"."""
    import uno
    ns = doc.createInstance("com.sun.star.style.NumberingStyle")
    doc.StyleFamilies.getByName("NumberingStyles").insertByName(name, ns)
    rules = ns.NumberingRules
    levels = [
        # type, prefix, suffix, parent levels shown, ListFormat, indent (1/100 mm), hanging
        (lo.ARABIC, "", ".", 1, "%1%.", 1000, 1000),
        (lo.ARABIC, "", "", 2, "%1%.%2%", 1000, 1000),
        (lo.CHARS_LOWER_LETTER, "(", ")", 1, "(%3%)", 2000, 1000),
    ]
    for i, (ntype, pre, suf, parent, fmt, indent, hang) in enumerate(levels):
        props = {p.Name: p.Value for p in rules.getByIndex(i)}
        props.update(NumberingType=ntype, Prefix=pre, Suffix=suf, ParentNumbering=parent,
                     ListFormat=fmt, PositionAndSpaceMode=1, LabelFollowedBy=0,
                     ListtabStopPosition=indent, IndentAt=indent, FirstLineIndent=-hang)
        pv = tuple(lo.prop(k, v) for k, v in props.items())
        uno.invoke(rules, "replaceByIndex", (i, uno.Any("[]com.sun.star.beans.PropertyValue", pv)))
    ns.NumberingRules = rules


def build_base(office, sc, path):
    from com.sun.star.text.ControlCharacter import PARAGRAPH_BREAK
    from com.sun.star.awt.FontWeight import BOLD, NORMAL
    from com.sun.star.style.ParagraphAdjust import CENTER, LEFT, BLOCK
    office.set_author(sc.SIDES[sc.TURNS[1]]["author"])
    doc = office.new_document()
    define_list_style(doc, "Contract Numbering")
    text = doc.Text
    cur = text.createTextCursor()
    need_break = False
    for block in sc.BASE:
        kind = block[0]
        if need_break:
            text.insertControlCharacter(cur, PARAGRAPH_BREAK, False)
        need_break = True
        if kind == "table":
            _, name, rows = block
            cur.setPropertyValue("NumberingStyleName", "")
            table = doc.createInstance("com.sun.star.text.TextTable")
            table.initialize(len(rows), len(rows[0]))
            table.Name = name
            text.insertTextContent(cur, table, False)
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    cell = table.getCellByPosition(c, r)
                    cc = cell.createTextCursor()
                    cc.CharWeight = BOLD if r == 0 else NORMAL
                    cell.insertString(cc, value, False)
            # the cursor now sits in the (empty) paragraph after the table: reuse it
            need_break = False
            continue
        _, s = block
        level = {"h": 0, "c": 1, "s": 2}.get(kind)
        if level is None:
            cur.setPropertyValue("NumberingStyleName", "")
        else:
            cur.setPropertyValue("NumberingStyleName", "Contract Numbering")
            cur.setPropertyValue("NumberingLevel", level)
        cur.setPropertyValue("ParaAdjust", CENTER if kind in ("title", "center") else (LEFT if kind in ("h", "p", "sig") else BLOCK))
        cur.setPropertyValue("ParaBottomMargin", 200)
        cur.setPropertyValue("ParaTopMargin", 300 if kind == "h" else 0)
        cur.setPropertyValue("CharWeight", BOLD if kind in ("title", "h") else NORMAL)
        cur.setPropertyValue("CharHeight", 14.0 if kind == "title" else 11.0)
        text.insertString(cur, s, False)
    office.save_docx(doc, path)
    doc.close(True)


# ---------------------------------------------------------------------------
# Edits
# ---------------------------------------------------------------------------

class EditError(RuntimeError):
    pass


def _search(doc, s):
    d = doc.createSearchDescriptor()
    d.SearchString = s
    d.SearchCaseSensitive = True
    d.SearchRegularExpression = False
    n = doc.findAll(d).Count
    if n != 1:
        raise EditError("anchor %r found %d times" % (s, n))
    # findFirst, not findAll: ranges from findAll cannot take annotations
    return doc.findFirst(d)


def _sub_range(doc, context, inner, occurrence=0):
    """Range of `inner` inside the unique text `context`."""
    r = _search(doc, context)
    idx = -1
    for _ in range(occurrence + 1):
        idx = context.find(inner, idx + 1)
    if idx < 0:
        raise EditError("%r not inside %r" % (inner, context))
    c = r.Text.createTextCursorByRange(r.Start)
    c.goRight(idx, False)
    c.goRight(len(inner), True)
    if c.String != inner:
        raise EditError("sub-range mismatch %r != %r" % (c.String, inner))
    return c


def apply_op(doc, action, author, date, record):
    from com.sun.star.text.ControlCharacter import PARAGRAPH_BREAK
    kind = action[0]
    if kind == "replace":            # ("replace", old, new)
        _search(doc, action[1]).setString(action[2])
    elif kind == "delete":           # ("delete", old)
        _search(doc, action[1]).setString("")
    elif kind == "replace_in":       # ("replace_in", context, old, new)
        _sub_range(doc, action[1], action[2]).setString(action[3])
    elif kind == "delete_in":        # ("delete_in", context, old)
        _sub_range(doc, action[1], action[2]).setString("")
    elif kind in ("insert_after", "insert_before"):   # (kind, anchor, new)
        r = _search(doc, action[1])
        c = r.Text.createTextCursorByRange(r.End if kind == "insert_after" else r.Start)
        r.Text.insertString(c, action[2], False)
    elif kind == "insert_para_after":  # ("insert_para_after", anchor, text)
        r = _search(doc, action[1])
        c = r.Text.createTextCursorByRange(r.End)
        c.gotoEndOfParagraph(False)
        r.Text.insertControlCharacter(c, PARAGRAPH_BREAK, False)
        r.Text.insertString(c, action[2], False)
    elif kind == "comment":          # ("comment", anchor, text)
        from com.sun.star.util import DateTime
        was = doc.RecordChanges
        doc.RecordChanges = False    # else the annotation itself becomes a tracked insertion
        r = _search(doc, action[1])
        a = doc.createInstance("com.sun.star.text.textfield.Annotation")
        a.Author = author
        a.Initials = "".join(w[0] for w in author.split())
        a.Content = action[2]
        y, mo, d, h = date
        a.DateTimeValue = DateTime(0, 0, 0, h, d, mo, y, True)
        c = r.Text.createTextCursorByRange(r)
        r.Text.insertTextContent(c, a, True)
        doc.RecordChanges = was
    else:
        raise EditError("unknown action %r" % (action,))


def make_redline(office, src, dst, author, date, ops, record=True, skip_comments=False):
    office.set_author(author)
    work = os.path.join(tempfile.gettempdir(), "redjury_work_%d.docx" % os.getpid())
    shutil.copyfile(src, work)
    doc = office.load(work)
    try:
        doc.RecordChanges = record
        for op_id, actions in ops:
            for action in actions:
                if skip_comments and action[0] == "comment":
                    continue
                try:
                    apply_op(doc, action, author, date, record)
                except EditError as e:
                    raise EditError("%s -> %s: %s" % (os.path.basename(dst), op_id, e))
        office.save_docx(doc, dst)
    finally:
        doc.close(True)
        os.remove(work)


# ---------------------------------------------------------------------------
# Reproducibility: LibreOffice stamps tracked changes with the wall clock.
# Rewrite those stamps to the turn's fixed date and re-zip with fixed times.
# ---------------------------------------------------------------------------

def normalize(path, date, keep_dates):
    stamp = "%04d-%02d-%02dT%02d:00:00Z" % date
    keep = tuple(keep_dates)

    def fix_date(m):
        v = m.group(2)
        return m.group(0) if v.startswith(keep) else '%s"%s"' % (m.group(1), stamp)

    buf = io.BytesIO()
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename in ("word/document.xml", "word/comments.xml"):
                data = re.sub(r'(w:date=)"([^"]*)"', fix_date, data.decode("utf-8")).encode("utf-8")
            elif info.filename == "docProps/core.xml":
                data = re.sub(r"(<dcterms:(?:created|modified)[^>]*>)[^<]*", r"\g<1>" + stamp,
                              data.decode("utf-8")).encode("utf-8")
            zi = zipfile.ZipInfo(info.filename, FIXED_ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            zout.writestr(zi, data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------

def task_name(sid, turn, group, variant):
    # Every reference reader wants one lower-case variant letter.
    return "redline-%s-t%d-%s%s" % (sid, turn, group, variant or "a")


def task_id(sid, turn, group, variant):
    """The reference schema's integer task_id, stable: S T GG V (v = a → 1)."""
    return int(sid[1:]) * 1000 + turn * 100 + int(group[1:]) * 10 + (ord(variant or "a") - ord("a") + 1)


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_scenario_toml(sc):
    lines = [
        "# Generated by scenarios/generate/generate.py from %s.py. SYNTHETIC example data:" % sc.__name__,
        "# fictional parties, not legal advice.",
        "id = %s" % toml_str(sc.ID),
        "label = %s" % toml_str(sc.LABEL),
        "description = %s" % toml_str(sc.DESCRIPTION),
        "base = \"base.docx\"",
        "",
    ]
    for side in ("A", "B"):
        s = sc.SIDES[side]
        lines += ["[sides.%s]" % side,
                  "party = %s" % toml_str(s["party"]),
                  "role = %s" % toml_str(s["role"]),
                  "author = %s" % toml_str(s["author"]),
                  "playbook = %s" % toml_str("playbook-%s.md" % side),
                  ""]
    for turn in sorted(sc.TURNS):
        lines += ["[[turns]]", "turn = %d" % turn, "side = %s" % toml_str(sc.TURNS[turn]),
                  "input_groups = [%s]" % ", ".join(
                      toml_str("%s-t%d-%s" % (sc.ID, t["turn"], t["group"])) for t in sc.TASKS if t["turn"] == turn),
                  ""]
    with open(rel("scenarios", sc.DIR, "scenario.toml"), "w") as f:
        f.write("\n".join(lines))


def main():
    only = set(a for a in sys.argv[1:] if not a.startswith("-"))
    office = lo.Office().start()
    print("using", office.version)
    summary = []
    tmp = tempfile.mkdtemp(prefix="redjury_gen_")
    try:
        for modname in SCENARIO_MODULES:
            if only and modname.split("_")[-1] not in only:
                continue
            sc = importlib.import_module(modname)
            sdir = rel("scenarios", sc.DIR)
            os.makedirs(os.path.join(sdir, "inputs"), exist_ok=True)
            base = os.path.join(sdir, "base.docx")
            build_base(office, sc, base)
            normalize(base, sc.BASE_DATE, [])
            write_scenario_toml(sc)
            all_dates = ["%04d-%02d-%02d" % sc.TURN_DATES[t][:3] for t in sc.TURN_DATES]
            prev_gold = base
            for task in sorted(sc.TASKS, key=lambda t: t["turn"]):
                turn, group = task["turn"], task["group"]
                side = sc.TURNS[turn]
                me, other = sc.SIDES[side], sc.SIDES["B" if side == "A" else "A"]
                author, date = me["author"], sc.TURN_DATES[turn]
                gid = "%s-t%d-%s" % (sc.ID, turn, group)
                inp = os.path.join(sdir, "inputs", gid + ".docx")
                shutil.copyfile(prev_gold, inp)
                ops = sc.OPS[turn]
                built = {}
                for kind in ("gold", "strong", "weak"):
                    out = os.path.join(tmp, "%s_%s.docx" % (gid, kind))
                    make_redline(office, inp, out, author, date, [(o, ops[o]) for o in task["outputs"][kind]])
                    normalize(out, date, all_dates)
                    built[kind] = out
                variants = task["variants"]
                for variant, rubric_rows in variants.items():
                    name = task_name(sc.ID, turn, group, variant)
                    for kind, folder in (("gold", rel("gold", "redlines")),
                                         ("strong", rel("scenarios", "outputs", "strong")),
                                         ("weak", rel("scenarios", "outputs", "weak"))):
                        os.makedirs(folder, exist_ok=True)
                        shutil.copyfile(built[kind], os.path.join(folder, name + ".docx"))
                    rubrics, checks = [], {}
                    for i, row in enumerate(rubric_rows, 1):
                        cat, weight, criteria, justification, check = row
                        rid = "r%02d" % i
                        rubrics.append(dict(id=rid, criteria=criteria, justification=justification,
                                            category=cat, weight=weight))
                        checks[rid] = check
                    taskobj = {
                        "task_id": task_id(sc.ID, turn, group, variant), "scenario_id": int(sc.ID[1:]),
                        "scenario_label": sc.LABEL,
                        "side": side, "level": turn, "input_group": gid, "variant": variant or "a",
                        "represented_party": me["party"], "counterparty": other["party"],
                        "author": author,
                        # redjury reads the input to tell an output's new
                        # changes from those it carried over.
                        "input": os.path.relpath(inp, rel("rubrics")),
                        # The gold redline is the task's expert redline
                        # (surgicalness and verbosity baselines).
                        "expert": "../gold/redlines/%s.docx" % name,
                        "rubrics": rubrics,
                    }
                    os.makedirs(rel("rubrics"), exist_ok=True)
                    with open(rel("rubrics", name + ".json"), "w") as f:
                        json.dump(taskobj, f, indent=2, ensure_ascii=False)
                        f.write("\n")
                    verdicts = {}
                    for kind in ("gold", "strong", "weak"):
                        d = verify.Doc(built[kind])
                        vs = {}
                        for r in rubrics:
                            ok, ev = verify.evaluate(d, checks[r["id"]])
                            vs[r["id"]] = {"verdict": "PASS" if ok else "FAIL", "reason": ev[0].upper() + ev[1:] + "."}
                        verdicts[kind] = vs
                    os.makedirs(rel("gold", "verdicts"), exist_ok=True)
                    with open(rel("gold", "verdicts", name + ".json"), "w") as f:
                        json.dump({"task_id": name, "outputs": verdicts}, f, indent=2, ensure_ascii=False)
                        f.write("\n")
                    summary.append((name, {k: reward(rubrics, verdicts[k]) for k in verdicts}))
                    for gf in sc.GATE_FAIL:
                        if gf[0] != name:
                            continue
                        folder = rel("scenarios", "outputs", "gate-fail")
                        os.makedirs(folder, exist_ok=True)
                        out = os.path.join(folder, name + ".docx")
                        gold_ops = [(o, ops[o]) for o in task["outputs"]["gold"]]
                        if gf[1] == "untracked":
                            make_redline(office, inp, out, author, date, gold_ops, record=False, skip_comments=True)
                        else:
                            make_redline(office, inp, out, gf[2], date, gold_ops)
                        normalize(out, date, all_dates)
                prev_gold = built["gold"]
        # s3 (check-based tasks) has its own builder; it runs after s1 and s2
        # and leaves their files alone.
        if not only or "s3" in only:
            import scenario_s3
            summary += scenario_s3.build(office, sys.modules[__name__], tmp)
        # s4 (task-family checks) writes its .docx files as OOXML itself
        # (ooxml.py) and runs its own soffice for the .xlsx files.
        if not only or "s4" in only:
            import scenario_s4
            summary += scenario_s4.build()
    finally:
        office.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n%-26s %6s %6s %6s" % ("task", "gold", "strong", "weak"))
    for name, r in summary:
        print("%-26s %6.2f %6.2f %6.2f" % (name, r["gold"], r["strong"], r["weak"]))


if __name__ == "__main__":
    main()
