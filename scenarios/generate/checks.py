#!/usr/bin/env python3
"""Reference implementation (Python, stdlib only) of the deterministic rubric
checks (`"kind": "check"`), used to write gold/verdicts for scenario s3.

    python3 scenarios/generate/checks.py rubrics/redline-s3-t2-g01a.json OUTPUT.docx [...]
    python3 scenarios/generate/checks.py --sections FILE.docx   # section of every paragraph

The Rust implementation is the product; this file fixes what each check means
on the bundled files. Definitions (see scenarios/README.md, "Check-based rubric items"):

Sections. Every paragraph with a list number (w:numPr, label computed from
word/numbering.xml, e.g. "12.", "12.1", "(a)") opens an address; the address
of a level-0 item is its label without the trailing dot ("12"), of a level-1
item its label ("12.1"), of a level-2 item parent + label ("1.1(a)").
A paragraph belongs to section S when S is its own address or one of its
ancestors' ("12" contains "12.1" and "12.1(a)"). Unnumbered paragraphs
(table cells, signature lines) belong to the sections of the last numbered
paragraph before them; paragraphs before the first numbered one to none.
The s3 outputs add no numbered paragraph before existing ones and delete
none, so labels in input and outputs agree.

Tracked changes: one per XML element. insertion = w:ins (run level),
deletion = w:del (run level), move_from / move_to = w:moveFrom / w:moveTo,
paragraph_inserted / paragraph_deleted = w:pPr/w:rPr/w:ins / w:del,
run_format = w:rPrChange (also in a paragraph mark's w:rPr),
paragraph_format = w:pPrChange, row_inserted / row_deleted = w:trPr/w:ins / w:del,
cell_inserted / cell_deleted = w:cellIns / w:cellDel; also table_format
(w:tblPrChange, w:trPrChange, w:tcPrChange, w:tblGridChange), section_format
(w:sectPrChange) and numbering_change (w:numberingChange). Format changes
(no_format_changes) = run_format, paragraph_format, table_format,
section_format, numbering_change.

Text. Inserted text = text inside w:ins / w:moveTo, deleted = inside w:del /
w:moveFrom (w:delText). Accepted text = everything except deleted text;
paragraphs joined by "\n"; whitespace-normalised (runs of whitespace -> one
space, trimmed) before comparing. Tokens = whitespace-separated words stripped
of leading/trailing non-alphanumerics, lower-cased. Inserted text that is
deleted again (w:del inside w:ins) counts as deleted only.
Token F1 is over multisets; for revision_set_f1 each token is tagged with
ins/del. contains / not_contains search each maximal inserted (deleted) span
(consecutive text of one author in one paragraph) for inserted/deleted, and
the accepted text of the whole section (paragraphs joined by "\n") for accepted.
"""
import json
import os
import re
import sys
import zipfile
from collections import Counter
import xml.etree.ElementTree as ET

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
W14 = "{http://schemas.microsoft.com/office/word/2010/wordml}"
W15 = "{http://schemas.microsoft.com/office/word/2012/wordml}"

FORMAT_KINDS = {"run_format", "paragraph_format", "table_format", "section_format", "numbering_change"}


def norm(s):
    return re.sub(r"\s+", " ", s.replace("\u200d", "")).strip()


def tokens(s):
    """Whitespace-separated words, stripped of leading/trailing non-alphanumerics,
    lower-cased ("(2%)" -> "2", "party's" stays "party's"), as in src/check.rs."""
    out = []
    for w in s.split():
        i, j = 0, len(w)
        while i < j and not w[i].isalnum():
            i += 1
        while j > i and not w[j - 1].isalnum():
            j -= 1
        if i < j:
            out.append(w[i:j].lower())
    return out


def f1(a, b):
    """Multiset F1 of two token lists (1.0 when both are empty)."""
    ca, cb = Counter(a), Counter(b)
    if not ca and not cb:
        return 1.0
    common = sum((ca & cb).values())
    if common == 0:
        return 0.0
    p, r = common / sum(ca.values()), common / sum(cb.values())
    return 2 * p * r / (p + r)


class Para:
    def __init__(self, idx):
        self.idx = idx
        self.label = ""
        self.address = ()      # ancestors' addresses + own, e.g. ("12", "12.1")
        self.segs = []         # (text, ins_author, del_author)
        self.mark_del = None


class Docx:
    def __init__(self, path):
        self.path = path
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            body = ET.fromstring(z.read("word/document.xml")).find(W + "body")
            comments = ET.fromstring(z.read("word/comments.xml")) if "word/comments.xml" in names else None
            cext = ET.fromstring(z.read("word/commentsExtended.xml")) if "word/commentsExtended.xml" in names else None
            numbering = ET.fromstring(z.read("word/numbering.xml")) if "word/numbering.xml" in names else None
        self.levels = self._levels(numbering)
        self.counters = {}
        self.paras = []
        self.revs = []          # (kind, author, para_idx)
        self.comment_para = {}  # comment id -> para idx of its anchor start
        self.path_stack = []
        self._block(body)
        self.comments = []
        done, parent = {}, {}
        if cext is not None:
            for ex in cext.iter(W15 + "commentEx"):
                done[ex.get(W15 + "paraId")] = ex.get(W15 + "done") == "1"
                if ex.get(W15 + "paraIdParent"):
                    parent[ex.get(W15 + "paraId")] = ex.get(W15 + "paraIdParent")
        if comments is not None:
            for c in comments.iter(W + "comment"):
                ps = list(c.iter(W + "p"))
                pid = ps[-1].get(W14 + "paraId") if ps else None
                cid = c.get(W + "id")
                self.comments.append(dict(
                    id=cid, author=c.get(W + "author") or "",
                    text="\n".join("".join(t.text or "" for t in p.iter(W + "t")) for p in ps),
                    para=self.comment_para.get(cid), reply=pid in parent, resolved=done.get(pid, False)))

    # ---- numbering ----
    def _levels(self, numbering):
        out = {}
        if numbering is None:
            return out
        absn = {}
        for a in numbering.iter(W + "abstractNum"):
            lv = {}
            for l in a.iter(W + "lvl"):
                g = lambda tag: l.find(W + tag)
                lv[int(l.get(W + "ilvl"))] = (
                    g("numFmt").get(W + "val") if g("numFmt") is not None else "decimal",
                    g("lvlText").get(W + "val") if g("lvlText") is not None else "",
                    int(g("start").get(W + "val")) if g("start") is not None else 1)
            absn[a.get(W + "abstractNumId")] = lv
        for n in numbering.iter(W + "num"):
            a = n.find(W + "abstractNumId")
            if a is not None:
                out[n.get(W + "numId")] = absn.get(a.get(W + "val"), {})
        return out

    def _label(self, numid, ilvl):
        lv = self.levels.get(numid)
        if not lv:
            return ""
        c = self.counters.setdefault(numid, [None] * 10)
        c[ilvl] = (c[ilvl] + 1) if c[ilvl] is not None else lv.get(ilvl, ("decimal", "", 1))[2]
        for k in range(ilvl + 1, 10):
            c[k] = None

        def render(m):
            k = int(m.group(1)) - 1
            f, _, start = lv.get(k, ("decimal", "", 1))
            v = c[k] if c[k] is not None else start
            if f == "lowerLetter":
                return chr(ord("a") + v - 1)
            if f == "upperLetter":
                return chr(ord("A") + v - 1)
            if f == "lowerRoman":
                return ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"][v - 1]
            return str(v)
        return re.sub(r"%(\d)", render, lv.get(ilvl, ("decimal", "%1.", 1))[1])

    # ---- walking ----
    def _rev(self, kind, el):
        self.revs.append((kind, el.get(W + "author") or "", len(self.paras)))

    def _block(self, el):
        for ch in el:
            if ch.tag == W + "p":
                self._para(ch)
            elif ch.tag == W + "tbl":
                tp = ch.find(W + "tblPr")
                if tp is not None and tp.find(W + "tblPrChange") is not None:
                    self._rev("table_format", tp.find(W + "tblPrChange"))
                tg = ch.find(W + "tblGrid")
                if tg is not None and tg.find(W + "tblGridChange") is not None:
                    self._rev("table_format", tg.find(W + "tblGridChange"))
                for tr in ch.findall(W + "tr"):
                    trpr = tr.find(W + "trPr")
                    if trpr is not None:
                        for tag, kind in (("ins", "row_inserted"), ("del", "row_deleted"), ("trPrChange", "table_format")):
                            if trpr.find(W + tag) is not None:
                                self._rev(kind, trpr.find(W + tag))
                    for tc in tr.findall(W + "tc"):
                        tcpr = tc.find(W + "tcPr")
                        if tcpr is not None:
                            for tag, kind in (("cellIns", "cell_inserted"), ("cellDel", "cell_deleted"), ("tcPrChange", "table_format")):
                                if tcpr.find(W + tag) is not None:
                                    self._rev(kind, tcpr.find(W + tag))
                        self._block(tc)
            elif ch.tag in (W + "sdt", W + "sdtContent", W + "customXml"):
                self._block(ch)
            elif ch.tag == W + "sectPr" and ch.find(W + "sectPrChange") is not None:
                self._rev("section_format", ch.find(W + "sectPrChange"))

    def _para(self, p):
        para = Para(len(self.paras))
        ppr = p.find(W + "pPr")
        if ppr is not None:
            if ppr.find(W + "pPrChange") is not None:
                self._rev("paragraph_format", ppr.find(W + "pPrChange"))
            rpr = ppr.find(W + "rPr")
            if rpr is not None:
                for tag, kind in (("ins", "paragraph_inserted"), ("del", "paragraph_deleted"), ("rPrChange", "run_format")):
                    if rpr.find(W + tag) is not None:
                        self._rev(kind, rpr.find(W + tag))
                if rpr.find(W + "del") is not None:
                    para.mark_del = rpr.find(W + "del").get(W + "author")
            numpr = ppr.find(W + "numPr")
            if numpr is not None:
                if numpr.find(W + "numberingChange") is not None:
                    self._rev("numbering_change", numpr.find(W + "numberingChange"))
                il, ni = numpr.find(W + "ilvl"), numpr.find(W + "numId")
                ilvl = int(il.get(W + "val")) if il is not None else 0
                numid = ni.get(W + "val") if ni is not None else None
                label = self._label(numid, ilvl) if numid and numid != "0" else ""
                if label:
                    para.label = label
                    own = label.rstrip(".")
                    stack = self.path_stack[:ilvl]
                    if ilvl >= 2 and stack:
                        own = stack[-1] + own
                    self.path_stack = stack + [own]
        para.address = tuple(self.path_stack)

        def walk(el, ins, dele):
            for ch in el:
                t = ch.tag
                if t in (W + "ins", W + "moveTo"):
                    self._rev("insertion" if t == W + "ins" else "move_to", ch)
                    walk(ch, ch.get(W + "author") or "", dele)
                elif t in (W + "del", W + "moveFrom"):
                    self._rev("deletion" if t == W + "del" else "move_from", ch)
                    walk(ch, ins, ch.get(W + "author") or "")
                elif t == W + "r":
                    rpr = ch.find(W + "rPr")
                    if rpr is not None and rpr.find(W + "rPrChange") is not None:
                        self._rev("run_format", rpr.find(W + "rPrChange"))
                    buf = []
                    for x in ch:
                        if x.tag in (W + "t", W + "delText"):
                            buf.append(x.text or "")
                        elif x.tag == W + "tab":
                            buf.append("\t")
                        elif x.tag in (W + "br", W + "cr"):
                            buf.append("\n")
                        elif x.tag == W + "commentReference":
                            self.comment_para.setdefault(x.get(W + "id"), para.idx)
                    if buf:
                        para.segs.append(("".join(buf), ins, dele))
                elif t == W + "commentRangeStart":
                    self.comment_para.setdefault(ch.get(W + "id"), para.idx)
                elif t in (W + "hyperlink", W + "smartTag", W + "sdt", W + "sdtContent", W + "fldSimple", W + "customXml"):
                    walk(ch, ins, dele)
        walk(p, None, None)
        self.paras.append(para)

    # ---- views ----
    def in_sections(self, pidx, sections):
        if pidx is None:
            return False
        if sections is None:
            return True
        addr = self.paras[pidx].address if pidx < len(self.paras) else ()
        return any(s.rstrip(".") in addr for s in sections)

    def accepted(self, sections=None):
        out = []
        for p in self.paras:
            if self.in_sections(p.idx, sections):
                out.append("".join(t for t, i, d in p.segs if d is None))
                if p.mark_del is None:
                    out.append("\n")
        return "".join(out)

    def spans(self, kind, sections=None, author=None):
        """Maximal inserted (kind='ins') or deleted ('del') spans: (author, text)."""
        res = []
        for p in self.paras:
            if not self.in_sections(p.idx, sections):
                continue
            cur, who = [], None
            for text, ins, dele in p.segs:
                # inserted text that was deleted again counts as deleted only
                a = (ins if dele is None else None) if kind == "ins" else dele
                if a is None or (author is not None and a != author):
                    a = None
                if cur and a != who:
                    res.append((who, "".join(cur)))
                    cur = []
                if a is not None:
                    cur.append(text)
                who = a
            if cur:
                res.append((who, "".join(cur)))
        return res

    def revisions(self, kinds=None, author=None):
        return [r for r in self.revs if (kinds is None or r[0] in kinds) and (author is None or r[1] == author)]


def _short(s, n=70):
    s = norm(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def _where(sections):
    return " in section %s" % ", ".join(sections) if sections else ""


def evaluate(task_path, task, check, out_path):
    """(passed, evidence) for one check on one output .docx."""
    base_dir = os.path.dirname(os.path.abspath(task_path))
    d = Docx(out_path)
    inp = Docx(os.path.join(base_dir, task["input"])) if task.get("input") else None
    t = check["type"]
    author = check.get("author")
    sec = check.get("section")
    sections = [sec] if sec else None

    if t == "author":
        names = set(check["authors"])
        mode = check.get("mode", "all")
        who = [r[1] for r in d.revs] + [c["author"] for c in d.comments]
        mine = sum(1 for a in who if a in names)
        others = sorted(set(a for a in who if a not in names))
        if mode == "all":
            ok = bool(who) and not others
        elif mode == "only":
            ok = not others
        else:
            ok = mine > 0
        ev = "%d tracked change(s)/comment(s) by %s" % (mine, "/".join(sorted(names)))
        if others:
            ev += ", others by %s" % ", ".join(others)
        return ok, ev

    if t == "scope":
        secs = check["sections"]
        who = author or task["author"]
        outside = [r for r in d.revisions(author=who) if not d.in_sections(r[2], secs)]
        if outside:
            kind, _, pidx = outside[0]
            p = d.paras[pidx] if pidx < len(d.paras) else None
            return False, "%d tracked change(s) by %s outside section %s (first: %s in paragraph %s)" % (
                len(outside), who, ", ".join(secs), kind, (p.label or "#%d" % pidx) if p else pidx)
        if inp is not None:
            keep = lambda doc: norm("".join(
                "".join(t for t, i, dl in p.segs if dl is None) + ("" if p.mark_del else "\n")
                for p in doc.paras if not doc.in_sections(p.idx, secs)))
            if keep(d) != keep(inp):
                return False, "the accepted text outside section %s differs from the input's" % ", ".join(secs)
        n = len(d.revisions(author=who))
        return True, "all %d tracked change(s) by %s lie in section %s; the rest of the text is unchanged" % (n, who, ", ".join(secs))

    if t == "no_format_changes":
        f = [r for r in d.revisions(kinds=FORMAT_KINDS, author=author)]
        if f:
            return False, "%d formatting revision(s) (%s by %s)" % (len(f), f[0][0], f[0][1])
        return True, "no formatting revisions"

    if t == "revisions_remaining":
        kinds = set(check["kinds"]) if check.get("kinds") else None
        n = len(d.revisions(kinds=kinds, author=author))
        lo, hi = check.get("min", 0), check.get("max")
        ok = n >= lo and (hi is None or n <= hi)
        return ok, "%d tracked change(s)%s%s remain (allowed %s..%s)" % (
            n, " of kind " + "/".join(sorted(kinds)) if kinds else "", " by " + author if author else "", lo,
            "" if hi is None else hi)

    if t == "accepted_text_equals":
        got = norm(d.accepted(sections))
        if "gold_docx" in check:
            want = norm(Docx(os.path.join(base_dir, check["gold_docx"])).accepted(sections))
        else:
            want = norm(check["text"])
        if "min_f1" in check:
            v = f1(tokens(got), tokens(want))
            return v >= check["min_f1"], "accepted text%s token F1 %.3f (min %.2f)" % (_where(sections), v, check["min_f1"])
        if got == want:
            return True, "accepted text%s equals the expected text" % _where(sections)
        i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
        return False, "accepted text%s differs from the expected text at \"%s\"" % (_where(sections), _short(got[max(0, i - 20):i + 40]))

    if t == "revision_set_f1":
        gold = Docx(os.path.join(base_dir, check["gold_docx"]))

        def bag(doc):
            b = []
            for kind in ("ins", "del"):
                for _, text in doc.spans(kind, author=author):
                    b += [kind + ":" + w for w in tokens(text)]
            return b
        v = f1(bag(d), bag(gold))
        return v >= check["min_f1"], "revision token F1 against the gold redline %.3f (min %.2f)" % (v, check["min_f1"])

    if t == "comment":
        hits = []
        for c in d.comments:
            if author and c["author"] != author:
                continue
            if sections and not d.in_sections(c["para"], sections):
                continue
            if "contains" in check and check["contains"].lower() not in c["text"].lower():
                continue
            if "equals" in check and norm(check["equals"]).lower() != norm(c["text"]).lower():
                continue
            if "reply" in check and c["reply"] != check["reply"]:
                continue
            if "resolved" in check and c["resolved"] != check["resolved"]:
                continue
            hits.append(c)
        lo, hi = check.get("min", 1), check.get("max")
        ok = len(hits) >= lo and (hi is None or len(hits) <= hi)
        desc = "%d matching comment(s)%s%s" % (len(hits), " by " + author if author else "", _where(sections))
        if hits:
            desc += ": \"%s\"" % _short(hits[0]["text"], 60)
        return ok, desc

    if t in ("contains", "not_contains"):
        rx = re.compile(check["pattern"])
        where = check.get("in", "accepted")
        if where == "accepted":
            hay = [(None, d.accepted(sections))]
        else:
            hay = d.spans("ins" if where == "inserted" else "del", sections, author)
        found = next((txt for _, txt in hay if rx.search(txt)), None)
        what = {"accepted": "accepted text", "inserted": "inserted text", "deleted": "deleted text"}[where]
        by = " by " + author if author and where != "accepted" else ""
        if found is not None:
            m = rx.search(found)
            ev = "/%s/ found in %s%s%s (\"%s\")" % (check["pattern"], what, by, _where(sections), _short(found[max(0, m.start() - 20):m.end() + 20], 60))
        else:
            ev = "/%s/ not found in %s%s%s" % (check["pattern"], what, by, _where(sections))
        return (found is not None) == (t == "contains"), ev

    raise ValueError("unknown check type %r" % t)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--sections":
        for path in args[1:]:
            d = Docx(path)
            print("==", path)
            for p in d.paras:
                print("  %-7s %-22s %s" % (p.label, "/".join(p.address), _short("".join(t for t, i, dl in p.segs if dl is None), 80)))
            for r in d.revs:
                print("  REV %-18s %-18s para %s" % (r[0], r[1], "/".join(d.paras[r[2]].address) if r[2] < len(d.paras) else r[2]))
            for c in d.comments:
                print("  CMT %-18s para %s: %s" % (c["author"], "/".join(d.paras[c["para"]].address) if c["para"] is not None else "-", _short(c["text"], 60)))
        return
    task_path = args[0]
    task = json.load(open(task_path))
    for out in args[1:]:
        print("==", out)
        for r in task["rubrics"]:
            if r.get("kind") == "check":
                ok, ev = evaluate(task_path, task, r["check"], out)
                print("  %s %-5s %s" % (r["id"], "PASS" if ok else "FAIL", ev))
            else:
                print("  %s (llm) %s" % (r["id"], _short(r["criteria"], 80)))


if __name__ == "__main__":
    main()
