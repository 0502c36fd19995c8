#!/usr/bin/env python3
"""Scenario s5: exhibits for a motion (PDF outputs), built with real tools.

    python3 scenarios/generate/scenario_s5.py

Needs Ghostscript (`gs`, pages drawn from PostScript) and qpdf (merging,
overlays, and outline/annotation objects added through qpdf's JSON
update); `apt-get install ghostscript qpdf` (and LibreOffice Writer for
tests/fixtures/pdf/writer-export.pdf). Writes, under scenarios/s5-exhibits/,
the input PDFs (inputs/), the gold, strong and weak outputs (outputs/),
the four task files (rubrics/) and their check verdicts (verdicts/): a
task folder of its own beside the reference-shaped example of s1-s4.
Byte-for-byte reproducible: Ghostscript omits dates, IDs and XMP, and qpdf
writes deterministic IDs.

Tasks (Side A, counsel for the movant, Northwind Logistics):
  t1  Bates-stamp a 3-page production ACME000101-103, legend "CONFIDENTIAL"
  t2  combine three exhibits with slip sheets and one bookmark per exhibit
  t3  a tabbed binder whose first page is a linked table of contents
  t4  an exhibit sticker and highlighted designations on a transcript page
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCEN = os.path.join(ROOT, "scenarios", "s5-exhibits")
INPUTS = os.path.join(SCEN, "inputs")
TMP = tempfile.mkdtemp(prefix="redjury-s5-")


def rel(*parts):
    return os.path.join(ROOT, *parts)


def run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def ps_string(s):
    return "(" + s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def draw(path, pages):
    """A PDF whose pages show text: each page a list of (x, y, size, text, rgb)."""
    ps = ["%!PS", "<< /PageSize [612 792] >> setpagedevice"]
    for items in pages:
        for x, y, size, text, rgb in items:
            ps.append("%g %g %g setrgbcolor" % rgb)
            ps.append("/Helvetica findfont %g scalefont setfont" % size)
            ps.append("%g %g moveto %s show" % (x, y, ps_string(text)))
        ps.append("showpage")
    src = os.path.join(TMP, os.path.basename(path) + ".ps")
    with open(src, "w") as f:
        f.write("\n".join(ps) + "\n")
    run("gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite",
        "-dOmitInfoDate", "-dOmitID", "-dOmitXMP", "-o", path, src)


BLACK = (0, 0, 0)
RED = (0.8, 0, 0)


def body(title, lines):
    page = [(72, 700, 16, title, BLACK)]
    page += [(72, 660 - 20 * i, 11, t, BLACK) for i, t in enumerate(lines)]
    return page


def requalify(path):
    """Re-saves through qpdf with a deterministic ID."""
    out = path + ".tmp"
    run("qpdf", "--deterministic-id", path, out)
    os.replace(out, path)


def overlay(base, stamps, out):
    run("qpdf", "--deterministic-id", base, "--overlay", stamps, "--", out)


def merge(parts, out):
    args = ["qpdf", "--deterministic-id", "--empty", "--pages"]
    for f, r in parts:
        args += [f, r]
    run(*args, "--", out)


def update(path, edit):
    """Adds objects through qpdf's JSON update: `edit(objects, pages, next_id)`
    returns the objects to write (as qpdf JSON v2 values)."""
    raw = subprocess.run(["qpdf", "--json-output=2", "--json-stream-data=none", path],
                         check=True, capture_output=True).stdout
    q = json.loads(raw)["qpdf"]
    objs = q[1]
    catalog = objs[objs["trailer"]["value"]["/Root"].join(["obj:", ""])]
    root_ref = objs["trailer"]["value"]["/Root"]
    pages, kids = [], [objs["obj:" + catalog["value"]["/Pages"]]["value"]]
    while kids:
        node = kids.pop(0)
        for k in node.get("/Kids", []):
            v = objs["obj:" + k]["value"]
            if v.get("/Type") == "/Page":
                pages.append(k)
            else:
                kids.append(v)
    new = edit(objs, pages, q[0]["maxobjectid"] + 1, root_ref)
    upd = os.path.join(TMP, "update.json")
    top = max(int(k.split()[0][4:]) for k in new if k.startswith("obj:"))
    with open(upd, "w") as f:
        json.dump({"qpdf": [{"jsonversion": 2, "pushedinheritedpageresources": False,
                             "calledgetallpages": False, "maxobjectid": top}, new]}, f)
    out = path + ".tmp"
    run("qpdf", "--deterministic-id", path, "--update-from-json=" + upd, out)
    os.replace(out, path)


def ref(n):
    return "%d 0 R" % n


def with_outline(titles_pages):
    def edit(objs, pages, n, root_ref):
        new = {}
        root = dict(objs["obj:" + root_ref]["value"])
        outline = n
        items = list(range(n + 1, n + 1 + len(titles_pages)))
        new["obj:" + ref(outline)] = {"value": {"/Type": "/Outlines", "/First": ref(items[0]),
                                                "/Last": ref(items[-1]), "/Count": len(items)}}
        for i, (title, page) in enumerate(titles_pages):
            item = {"/Title": "u:" + title, "/Parent": ref(outline),
                    "/Dest": [pages[page - 1], "/Fit"]}
            if i > 0:
                item["/Prev"] = ref(items[i - 1])
            if i + 1 < len(items):
                item["/Next"] = ref(items[i + 1])
            new["obj:" + ref(items[i])] = {"value": item}
        root["/Outlines"] = ref(outline)
        new["obj:" + root_ref] = {"value": root}
        return new
    return edit


def with_annotations(per_page):
    """per_page: {page: [annotation dict with "@dest": page or "@ap": text]}"""
    def edit(objs, pages, n, root_ref):
        new = {}
        for page, annots in per_page.items():
            refs = []
            for a in annots:
                a = dict(a)
                if "@dest" in a:
                    a["/Dest"] = [pages[a.pop("@dest") - 1], "/Fit"]
                if "@ap" in a:
                    text = a.pop("@ap")
                    x0, y0, x1, y1 = a["/Rect"]
                    draw_ops = "q 0.8 0 0 RG 2 w 1 1 %g %g re S Q BT /Helv 11 Tf 0.8 0 0 rg 8 %g Td %s Tj ET" % (
                        x1 - x0 - 2, y1 - y0 - 2, (y1 - y0) / 2 - 4, ps_string(text))
                    font = n
                    new["obj:" + ref(font)] = {"value": {"/Type": "/Font", "/Subtype": "/Type1",
                                                       "/BaseFont": "/Helvetica",
                                                       "/Encoding": "/WinAnsiEncoding"}}
                    new["obj:" + ref(n + 1)] = {"stream": {
                        "dict": {"/Type": "/XObject", "/Subtype": "/Form", "/BBox": [0, 0, x1 - x0, y1 - y0],
                                 "/Resources": {"/Font": {"/Helv": ref(font)}}},
                        "data": __import__("base64").b64encode(draw_ops.encode()).decode()}}
                    a["/AP"] = {"/N": ref(n + 1)}
                    n += 2
                new["obj:" + ref(n)] = {"value": a}
                refs.append(ref(n))
                n += 1
            p = dict(objs["obj:" + pages[page - 1]]["value"])
            p["/Annots"] = refs
            new["obj:" + pages[page - 1]] = {"value": p}
        return new
    return edit


def link(rect, page):
    return {"/Type": "/Annot", "/Subtype": "/Link", "/Rect": rect, "/Border": [0, 0, 0], "@dest": page}


def inputs():
    draw(os.path.join(INPUTS, "production.pdf"), [
        body("Letter from Acme Freight, 4 February 2025", [
            "Dear Ms. Okafor,", "We confirm the delay of shipment NW-2291 by eleven days.",
            "The container was held at Rotterdam pending customs inspection.", "Yours sincerely, P. Lund"]),
        body("Invoice 88-1402", ["Freight, Rotterdam to Leeds: EUR 14,200",
                                 "Demurrage, 11 days: EUR 6,050", "Total due: EUR 20,250"]),
        body("Email, 12 February 2025, 09:14", ["From: P. Lund", "To: A. Okafor",
                                               "The demurrage is for your account under clause 7."]),
    ])
    draw(os.path.join(INPUTS, "exhibit-1.pdf"), [
        body("Master Services Agreement (extract)", ["Clause 7. Demurrage is borne by the party at fault.",
                                                     "Clause 9. Notices in writing."]),
        body("Master Services Agreement, signature page", ["Signed for Northwind Logistics Ltd",
                                                           "Signed for Acme Freight BV"]),
    ])
    draw(os.path.join(INPUTS, "exhibit-2.pdf"), [
        body("Customs hold notice, Port of Rotterdam", ["Container MSKU 7781204 held 3-14 February 2025.",
                                                        "Reason: documentary inspection requested by the carrier."]),
    ])
    draw(os.path.join(INPUTS, "exhibit-3.pdf"), [
        body("Declaration of A. Okafor", ["1. I am the operations director of Northwind Logistics Ltd.",
                                          "2. The inspection was requested by Acme Freight BV."]),
        body("Declaration of A. Okafor (continued)", ["3. Northwind paid EUR 6,050 under protest.",
                                                      "Signed: A. Okafor, 20 March 2025"]),
    ])
    lines = ["Q. Who asked for the inspection?", "A. The carrier did.", "Q. Acme Freight?",
             "A. Yes, Acme asked the port on the third.", "Q. Did Northwind know?",
             "A. Not until the ninth.", "Q. Who paid the demurrage?",
             "A. Northwind paid it, under protest.", "Q. Why under protest?",
             "A. Because the hold was Acme's doing.", "Q. Anything else?", "A. No."]
    depo = [(72, 740, 10, "Deposition of Per Lund, 2 June 2025 - Page 41", BLACK)]
    depo += [(72, 700 - 24 * i, 12, "%2d   %s" % (i + 1, t), BLACK) for i, t in enumerate(lines)]
    draw(os.path.join(INPUTS, "deposition-p41.pdf"), [depo])


def stamps(path, numbers, legend_pages):
    pages = []
    for i, n in enumerate(numbers):
        items = [(470, 24, 10, n, BLACK)]
        if i + 1 in legend_pages:
            items.append((36, 24, 9, "CONFIDENTIAL", RED))
        pages.append(items)
    draw(path, pages)


def slip(path, title):
    draw(path, [[(220, 400, 28, title, BLACK)]])


OUT = {kind: os.path.join(SCEN, "outputs", kind) for kind in ("gold", "strong", "weak")}


def t1():
    name = "redline-s5-t1-g01a"
    prod = os.path.join(INPUTS, "production.pdf")
    s = os.path.join(TMP, "stamps-gold.pdf")
    stamps(s, ["ACME%06d" % n for n in (101, 102, 103)], {1, 2, 3})
    overlay(prod, s, os.path.join(OUT["gold"], name + ".pdf"))
    s = os.path.join(TMP, "stamps-strong.pdf")
    stamps(s, ["ACME%06d" % n for n in (101, 102, 103)], {1, 2})  # legend missing on page 3
    overlay(prod, s, os.path.join(OUT["strong"], name + ".pdf"))
    s = os.path.join(TMP, "stamps-weak.pdf")
    stamps(s, ["ACME%06d" % n for n in (1, 2, 3)], {1, 2, 3})  # numbered from 1 …
    stamped = os.path.join(TMP, "weak-stamped.pdf")
    overlay(prod, s, stamped)
    # … and printed through Ghostscript: every page re-rendered.
    run("gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite", "-dOmitInfoDate",
        "-dOmitID", "-dOmitXMP", "-o", os.path.join(OUT["weak"], name + ".pdf"), stamped)


def binder(out, order, outline, label="Exhibit"):
    parts = []
    for n in order:
        sp = os.path.join(TMP, "slip-%s-%d.pdf" % (label, n))
        slip(sp, "%s %d" % (label, n))
        parts += [(sp, "1"), (os.path.join(INPUTS, "exhibit-%d.pdf" % n), "1-z")]
    merge(parts, out)
    if outline:
        update(out, with_outline(outline))


def t2():
    name = "redline-s5-t2-g01a"
    binder(os.path.join(OUT["gold"], name + ".pdf"), [1, 2, 3],
           [("Exhibit 1", 1), ("Exhibit 2", 4), ("Exhibit 3", 6)])
    # Strong: the bookmarks lead to each exhibit's first page, past its slip sheet.
    binder(os.path.join(OUT["strong"], name + ".pdf"), [1, 2, 3],
           [("Exhibit 1", 2), ("Exhibit 2", 5), ("Exhibit 3", 7)])
    # Weak: exhibit 3 left out, and no bookmarks.
    binder(os.path.join(OUT["weak"], name + ".pdf"), [1, 2], [])


def tabbed(out, printed, linked):
    toc = os.path.join(TMP, "toc-%s.pdf" % "-".join(map(str, printed)))
    titles = ["Master Services Agreement (extract)", "Customs hold notice", "Declaration of A. Okafor"]
    rows = [(72, 700, 18, "Contents", BLACK)]
    rows += [(72, 650 - 30 * i, 12, "Tab %d   %s   %d" % (i + 1, t, p), BLACK)
             for i, (t, p) in enumerate(zip(titles, printed))]
    draw(toc, [rows])
    merged = os.path.join(TMP, "tabs.pdf")
    binder(merged, [1, 2, 3], [], label="Tab")
    merge([(toc, "1"), (merged, "1-z")], out)
    if linked:
        update(out, with_annotations({1: [link([70, 647 - 30 * i, 500, 662 - 30 * i], p)
                                          for i, p in enumerate(printed)]}))


def t3():
    name = "redline-s5-t3-g01a"
    tabbed(os.path.join(OUT["gold"], name + ".pdf"), [2, 5, 7], True)
    tabbed(os.path.join(OUT["strong"], name + ".pdf"), [2, 5, 8], True)  # Tab 3 misnumbered
    tabbed(os.path.join(OUT["weak"], name + ".pdf"), [2, 4, 6], False)   # wrong numbers, no links


def quads(lines):
    """Highlight quads over transcript lines (1-12), as placed by inputs()."""
    out = []
    for n in lines:
        y = 700 - 24 * (n - 1)
        out += [70, y + 11, 400, y + 11, 70, y - 3, 400, y - 3]
    return out


def t4():
    name = "redline-s5-t4-g01a"
    depo = os.path.join(INPUTS, "deposition-p41.pdf")
    sticker = lambda rect: {"/Type": "/Annot", "/Subtype": "/Stamp", "/Rect": rect, "/Name": "/Exhibit",
                            "/Contents": "u:DEFENDANT'S EXHIBIT 3", "/C": [0.8, 0, 0],
                            "@ap": "DEFENDANT'S EXHIBIT 3"}
    highlight = lambda lines: {"/Type": "/Annot", "/Subtype": "/Highlight", "/Rect": [70, 400, 400, 720],
                               "/QuadPoints": quads(lines), "/C": [1, 1, 0]}
    for kind, annots in [
        ("gold", [sticker([430, 40, 580, 80]), highlight([3, 4, 5, 8])]),
        # Strong: the sticker sits over the transcript's text.
        ("strong", [sticker([60, 560, 210, 600]), highlight([3, 4, 5, 8])]),
        # Weak: no sticker, and the wrong lines highlighted.
        ("weak", [highlight([2, 3])]),
    ]:
        out = os.path.join(OUT[kind], name + ".pdf")
        run("qpdf", "--deterministic-id", depo, out)
        update(out, with_annotations({1: annots}))


COMMON = {"scenario_id": 5, "scenario_label": "Exhibits for a motion (PDF outputs)", "side": "A",
          "represented_party": "Northwind Logistics Ltd", "counterparty": "Acme Freight BV",
          "author": "Northwind Counsel", "output": "pdf", "reference": False}


def check(id_, criteria, weight, spec, category="Exhibit mechanics"):
    return {"id": id_, "criteria": criteria, "justification": criteria, "category": category,
            "weight": weight, "kind": "check", "check": spec}


def judge(id_, criteria, weight, category="Presentation"):
    return {"id": id_, "criteria": criteria, "justification": criteria, "category": category,
            "weight": weight}


IN = "../inputs/"
EXHIBITS = [IN + "exhibit-%d.pdf" % n for n in (1, 2, 3)]

TASKS = {
    "redline-s5-t1-g01a": dict(level=1, input=IN + "production.pdf", rubrics=[
        check("r01", "Numbers every page ACME000101 onward, in the bottom right corner, 8-12 pt.", 5,
              {"type": "bates", "prefix": "ACME", "digits": 6, "start": 101, "region": "bottom_right",
               "min_size": 8, "max_size": 12}),
        check("r02", "Keeps every produced page, in order, without re-rendering it.", 4,
              {"type": "pages", "inputs": [IN + "production.pdf"], "count": 3}),
        check("r03", "Marks every page CONFIDENTIAL in red in the bottom left corner, leaving the text in place.", 3,
              {"type": "text_region", "pattern": "^CONFIDENTIAL$", "region": "bottom_left", "colour": "#cc0000",
               "min_size": 8, "unchanged_from": IN + "production.pdf"}),
        check("r04", "Keeps a text layer on every page.", 2, {"type": "pdf_provenance", "text_layer": True}),
        judge("r05", "The stamps are legible and cover none of the documents' text.", 2),
    ]),
    "redline-s5-t2-g01a": dict(level=2, rubrics=[
        check("r01", "Puts exhibits 1, 2 and 3 in order, each after a slip sheet 'Exhibit N', nothing else.", 5,
              {"type": "pages", "inputs": EXHIBITS, "inserted": "^Exhibit \\d+$", "inserted_count": 3,
               "count": 8}),
        check("r02", "Bookmarks each exhibit by its slip sheet.", 4,
              {"type": "bookmarks", "of_pages_matching": "^Exhibit \\d+$"}),
        check("r03", "Keeps a text layer on every page.", 1, {"type": "pdf_provenance", "text_layer": True}),
        judge("r04", "A reader can find each exhibit from the bookmarks alone.", 2, "Usability"),
    ]),
    "redline-s5-t3-g01a": dict(level=3, rubrics=[
        check("r01", "Opens with a contents page whose entries give each tab's real start page and link to it.", 5,
              {"type": "links", "toc_page": 1, "entry": "^(?P<title>Tab \\d+)\\b.*?(?P<page>\\d+)$",
               "entries": 3}),
        check("r02", "Keeps the exhibits' pages in order behind the contents and the tab sheets.", 4,
              {"type": "pages", "inputs": EXHIBITS, "inserted": "^(Contents|Tab \\d+)$", "inserted_count": 4,
               "count": 9}),
        judge("r03", "The contents page names each exhibit so a judge can tell them apart.", 2, "Usability"),
    ]),
    "redline-s5-t4-g01a": dict(level=4, input=IN + "deposition-p41.pdf", rubrics=[
        check("r01", "Stickers the page DEFENDANT'S EXHIBIT 3 in the bottom right, over no text.", 4,
              {"type": "annotations", "kind": "stamp", "min_per_page": 1, "max_per_page": 1,
               "text": "EXHIBIT 3", "region": "bottom_right", "not_over_text": True}),
        check("r02", "Highlights the designated testimony, lines 3-5 and 8, and nothing else.", 5,
              {"type": "annotations", "kind": "highlight",
               "highlights": [{"page": 1, "lines": [[4, 6], [9, 9]]}], "min_f1": 1.0}),
        judge("r03", "The designations support the motion's point that Acme caused the hold.", 3, "Substance"),
    ]),
}

# The verdict of every check on each output, known by construction (see
# the comments in t1-t4); the judge items have none.
VERDICTS = {
    "redline-s5-t1-g01a": {"gold": "PPPP", "strong": "PPFP", "weak": "FFPP"},
    "redline-s5-t2-g01a": {"gold": "PPP", "strong": "PFP", "weak": "FFP"},
    "redline-s5-t3-g01a": {"gold": "PP", "strong": "FP", "weak": "FP"},
    "redline-s5-t4-g01a": {"gold": "PP", "strong": "FP", "weak": "FF"},
}


def write_tasks():
    for name, t in TASKS.items():
        task = dict(task_id=name, **COMMON)
        task["level"] = t["level"]
        task["input_group"] = "s5-t%d-g01" % t["level"]
        task["variant"] = "a"
        if "input" in t:
            task["input"] = t["input"]
        task["rubrics"] = t["rubrics"]
        with open(os.path.join(SCEN, "rubrics", name + ".json"), "w") as f:
            json.dump(task, f, indent=2, ensure_ascii=False)
            f.write("\n")
        checks = [r["id"] for r in t["rubrics"] if r.get("kind") == "check"]
        out = {"task_id": name, "outputs": {}}
        for kind, letters in VERDICTS[name].items():
            out["outputs"][kind] = {i: {"verdict": "PASS" if v == "P" else "FAIL", "reason": "by construction"}
                                    for i, v in zip(checks, letters)}
        with open(os.path.join(SCEN, "verdicts", name + ".json"), "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


FODT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:xlink="http://www.w3.org/1999/xlink"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
 <office:automatic-styles>
  <style:style style:name="Break" style:family="paragraph"><style:paragraph-properties fo:break-before="page"/></style:style>
 </office:automatic-styles>
 <office:body><office:text>
  <text:h text:outline-level="1">Exhibit 1 Purchase order</text:h>
  <text:p>Order 4471, placed on 3 March 2025. See <text:a xlink:type="simple" xlink:href="#Exhibit 2 Delivery note|outline">the delivery note</text:a>
   and <text:a xlink:type="simple" xlink:href="https://example.com/exhibits">the exhibit index</text:a>.</text:p>
  <text:h text:outline-level="2">Terms</text:h>
  <text:p>Delivery within eleven days.</text:p>
  <text:h text:style-name="Break" text:outline-level="1">Exhibit 2 Delivery note</text:h>
  <text:p>Delivered on 14 March 2025.</text:p>
 </office:text></office:body>
</office:document>
"""


def writer_fixture():
    """tests/fixtures/pdf/writer-export.pdf: LibreOffice Writer's own PDF
    export (headings as bookmarks, an internal and a web link). Skipped
    without soffice; the committed file is what the tests read."""
    import shutil
    if not shutil.which("soffice"):
        print("soffice not found: tests/fixtures/pdf/writer-export.pdf left as it is")
        return
    src = os.path.join(TMP, "writer-export.fodt")
    with open(src, "w") as f:
        f.write(FODT)
    profile = "file://" + os.path.join(TMP, "profile")
    run("soffice", "-env:UserInstallation=" + profile, "--headless", "--convert-to", "pdf",
        "--outdir", TMP, src)
    dest = rel("tests", "fixtures", "pdf")
    os.makedirs(dest, exist_ok=True)
    out = os.path.join(dest, "writer-export.pdf")
    # Writer stamps the creation date and a random ID: qpdf re-saves with a
    # deterministic one (the date stays; re-running changes only it).
    run("qpdf", "--deterministic-id", os.path.join(TMP, "writer-export.pdf"), out)


def main():
    for d in [INPUTS, os.path.join(SCEN, "rubrics"), os.path.join(SCEN, "verdicts")] + list(OUT.values()):
        os.makedirs(d, exist_ok=True)
    inputs()
    t1()
    t2()
    t3()
    t4()
    write_tasks()
    writer_fixture()
    print("s5 written to %s" % SCEN)


if __name__ == "__main__":
    sys.exit(main())
