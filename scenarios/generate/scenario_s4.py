#!/usr/bin/env python3
"""Scenario s4: distribution agreement, TASK-FAMILY checks.

SYNTHETIC: the parties, products, prices and positions are invented. Four
turns, each input being the previous turn's gold output:

  t1  redline-s4-t1-g01a  (side A, "Harrowgate Counsel"): rename the defined
      term "Supplier" to "Manufacturer" everywhere — body, running header,
      footnote — as tracked changes, in a file saved by Word.
  t2  redline-s4-t2-g01a  (side B, "Pellucid Counsel"): delete the
      non-compete (clause 6.4); clause 6 stays numbered without a gap, the
      cross-reference in 8.1 to the stock clause shows its new number, the
      table of contents still matches; comment on the price list and the
      cure period.
  t3  redline-s4-t3-g01a  (side A): update the price list in Schedule 1 as
      tracked cell and row changes; reply to each of the Distributor's
      comments and resolve exactly the price-list one.
  t4  redline-s4-t4-g01a  (side B): fill the deal-point term sheet (an .xlsx
      template) from the agreement as it now stands.

Unlike s1-s3, the .docx files are written as WordprocessingML by ooxml.py,
not by LibreOffice: each sample output must get exactly one known thing
wrong in one known story, field, list or table row, and Word's markers
(rsids, docProps/app.xml) must be present or absent on purpose. The .xlsx
files are made by LibreOffice Calc from flat OpenDocument sheets. Verdicts
of the check items are the construction's (what each sample was built to
get right or wrong); tests/checks.rs asserts that redjury's checks return
exactly them. LLM items carry the attorney's verdicts (LLM_VERDICTS).

    python3 scenarios/generate/scenario_s4.py    # needs soffice for the .xlsx files
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from xml.sax.saxutils import escape

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import ooxml  # noqa: E402
from score import reward  # noqa: E402  (one reward formula for every scenario)

ID = "s4"
DIR = "s4-distribution-agreement"
LABEL = "Distribution agreement, task-family checks"
DESCRIPTION = (
    "An English-law distribution agreement between a Yorkshire instrument maker and a Munich "
    "distributor. The maker renames its defined term throughout, header and footnote included "
    "(turn 1); the distributor deletes the non-compete, keeping numbering, cross-references and "
    "the table of contents right (turn 2); the maker updates the price list with tracked row and "
    "cell changes and answers the distributor's comments (turn 3); the distributor fills a "
    "deal-point term sheet (.xlsx) from the agreement (turn 4). Rubrics are mostly deterministic "
    "checks. Synthetic example; fictional parties; not legal advice."
)
A, B = "Harrowgate Counsel", "Pellucid Counsel"
SIDES = {
    "A": {"party": "Harrowgate Instruments Ltd", "role": "Manufacturer (supplier)", "author": A},
    "B": {"party": "Pellucid Retail GmbH", "role": "Distributor", "author": B},
}
TURNS = {1: "A", 2: "B", 3: "A", 4: "B"}
DATES = {0: "2026-02-02T09:00:00Z", 1: "2026-02-09T10:00:00Z", 2: "2026-02-16T10:00:00Z",
         3: "2026-02-23T10:00:00Z", 4: "2026-03-02T10:00:00Z"}
TEMPLATE = "inputs/s4-t4-g01-term-sheet-template.xlsx"


def rel(*parts):
    return os.path.join(ROOT, *parts)


# ---------------------------------------------------------------------------
# The base contract
# ---------------------------------------------------------------------------

def clause(cid, segs):
    return {"id": cid, "p": segs if isinstance(segs, list) else [segs], "num": (1, 1)}


def heading(cid, text):
    return {"id": cid, "p": [text], "num": (1, 0), "style": "Heading1"}


HEADINGS = [("1", "Definitions"), ("2", "Appointment"), ("3", "Term"), ("4", "Minimum Purchase"),
            ("5", "Prices and Payment"), ("6", "Obligations of the Distributor"),
            ("7", "Confidentiality"), ("8", "Termination"), ("9", "Governing Law")]
SCHEDULE = "Schedule 1 – Price List"


def toc(titles):
    """Word's TOC field result: one paragraph per heading, "n.<tab>title<tab>page"."""
    out = []
    for i, (label, title) in enumerate(titles):
        segs = []
        if i == 0:
            segs.append(("fbegin", 'TOC \\o "1-1" \\h \\z \\u'))
        segs += ([label + ".", ("tab",)] if label else []) + [title, ("tab",), "1" if i < 6 else "2"]
        if i == len(titles) - 1:
            segs.append(("fend",))
        out.append({"id": "toc%d" % i, "p": segs, "style": "TOC1"})
    return out


def base():
    body = [
        {"id": "title", "p": ["DISTRIBUTION AGREEMENT"], "style": "Title"},
        {"id": "synthetic", "p": ["SYNTHETIC EXAMPLE - fictional parties, not legal advice."], "center": True},
        {"id": "preamble", "p": ["This Agreement is made on 1 March 2026 between Harrowgate Instruments Ltd, a company "
                                 "registered in England and Wales (the \"Supplier\"), and Pellucid Retail GmbH, a company "
                                 "registered in Germany (the \"Distributor\")."]},
        {"id": "contents", "p": ["Contents"], "style": "TOCHeading"},
    ]
    body += toc(HEADINGS + [("", SCHEDULE)])
    body += [
        heading("1", "Definitions"),
        clause("1.1", ["\"Supplier\" means Harrowgate Instruments Ltd", ("fn", 1), "."]),
        clause("1.2", "\"Products\" means the instruments listed in the price list in Schedule 1."),
        clause("1.3", "\"Territory\" means Germany, Austria and Switzerland."),
        clause("1.4", "\"Effective Date\" means 1 March 2026."),
        clause("1.5", "\"Contract Year\" means each period of twelve (12) months starting on the Effective Date "
                      "or an anniversary of it."),
        heading("2", "Appointment"),
        clause("2.1", "The Supplier appoints the Distributor as its non-exclusive distributor of the Products "
                      "in the Territory."),
        clause("2.2", "The Distributor shall not appoint sub-distributors without the Supplier's prior written consent."),
        heading("3", "Term"),
        clause("3.1", "This Agreement starts on the Effective Date and continues for thirty-six (36) months."),
        clause("3.2", "Either party may end this Agreement at the end of the term by giving six (6) months' "
                      "written notice."),
        heading("4", "Minimum Purchase"),
        clause("4.1", "The Distributor shall buy Products worth at least EUR 250,000 in each Contract Year."),
        heading("5", "Prices and Payment"),
        clause("5.1", "The prices of the Products are those in the price list in Schedule 1. The Supplier may "
                      "change them once in each Contract Year on ninety (90) days' notice."),
        clause("5.2", "The Distributor shall pay each invoice within sixty (60) days of its date."),
        heading("6", "Obligations of the Distributor"),
        clause("6.1", "The Distributor shall promote the Products actively throughout the Territory."),
        clause("6.2", "The Distributor shall comply with all laws that apply to the sale of the Products."),
        clause("6.3", "The Distributor shall make no representation about the Products beyond the Supplier's "
                      "published specifications."),
        clause("6.4", "The Distributor shall not sell goods that compete with the Products in the Territory "
                      "during the term of this Agreement."),
        clause("6.5", [("bm", "_RefStock", ["The Distributor shall keep a stock of Products sufficient to meet "
                                            "at least one (1) month of expected demand."])]),
        clause("6.6", "The Distributor shall report its sales of the Products to the Supplier every quarter."),
        clause("6.7", "The Distributor shall use the Supplier's trade marks only to promote the Products."),
        clause("6.8", "The Distributor shall return all marketing materials when this Agreement ends."),
        heading("7", "Confidentiality"),
        clause("7.1", "Each party shall keep the other party's confidential information secret and use it only "
                      "to perform this Agreement."),
        heading("8", "Termination"),
        clause("8.1", ["Either party may terminate this Agreement by notice if the other party breaches clause ",
                       ("ref", "_RefStock", ["6.5"]), " or clause 4.1 and fails to remedy the breach within ",
                       "thirty (30) days", " of notice."]),
        clause("8.2", "On termination the Distributor may sell its remaining stock of Products for three (3) months."),
        heading("9", "Governing Law"),
        clause("9.1", "This Agreement and any dispute arising from it are governed by the law of England and Wales."),
        {"id": "schedule", "p": [SCHEDULE], "style": "Heading1"},
        {"id": "prices", "table": [
            {"id": "head", "cells": [["Model"], ["Description"], ["Unit price (EUR)"]]},
            {"id": "HX-100", "cells": [["HX-100"], ["Pressure gauge"], ["1,200"]]},
            {"id": "HX-200", "cells": [["HX-200"], ["Flow meter"], ["1,850"]]},
            {"id": "HX-300", "cells": [["HX-300"], ["Level sensor"], ["960"]]},
        ]},
        {"id": "vat", "p": ["Prices exclude VAT and are for delivery DAP (Incoterms 2020) to the Distributor's "
                            "warehouse in Munich."]},
    ]
    return {
        "body": body,
        "header": ["Distribution Agreement - Harrowgate Instruments Ltd (the Supplier) and Pellucid Retail GmbH "
                   "(the Distributor)"],
        "footer": ["Confidential - synthetic example"],
        "footnotes": {1: ["The Supplier's company number is 04417752 and its registered office is at 9 Calder "
                          "Works, Harrogate HG1 4AB."]},
        "comments": [],
        "restart_num": None,
    }


# ---------------------------------------------------------------------------
# Edits (each returns nothing and changes `doc` in place)
# ---------------------------------------------------------------------------

def block(doc, bid):
    for b in doc["body"]:
        if b.get("id") == bid:
            return b
    raise KeyError(bid)


def rename_segs(segs, old, new, author):
    out = []
    for s in segs:
        if isinstance(s, str):
            parts = s.split(old)
            for i, part in enumerate(parts):
                if i:
                    out += [("del", author, old), ("ins", author, new)]
                if part:
                    out.append(part)
        elif s[0] in ("bm", "ref", "cmt"):
            out.append((s[0], s[1], rename_segs(s[2], old, new, author)))
        else:
            out.append(s)
    return out


def rename(doc, old, new, author, where=("body", "header", "footnotes"), only=None):
    if "body" in where:
        for b in doc["body"]:
            if only is not None and b.get("id") not in only:
                continue
            if "table" in b:
                for row in b["table"]:
                    row["cells"] = [rename_segs(c, old, new, author) for c in row["cells"]]
            elif not b.get("style", "").startswith("TOC"):
                b["p"] = rename_segs(b["p"], old, new, author)
    if "header" in where:
        doc["header"] = rename_segs(doc["header"], old, new, author)
    if "footnotes" in where:
        doc["footnotes"] = {k: rename_segs(v, old, new, author) for k, v in doc["footnotes"].items()}


def delete_paragraph(doc, bid, author):
    block(doc, bid)["mark"] = ("del", author)


def update_reference(doc, bid, old, new, author):
    b = block(doc, bid)
    b["p"] = [("ref", s[1], [("del", author, old), ("ins", author, new)]) if not isinstance(s, str) and s[0] == "ref" else s
              for s in b["p"]]


def insert_paragraph_after(doc, bid, new_block):
    i = doc["body"].index(block(doc, bid))
    doc["body"].insert(i + 1, new_block)


def retitle(doc, bid, old, new, author):
    b = block(doc, bid)
    b["p"] = [("del", author, old), ("ins", author, new)]


def comment(doc, bid, anchor, cid, author, text, para_id, cell=None):
    """A comment anchored on the text `anchor` of block `bid` (or of a table cell)."""
    b = block(doc, bid)
    if cell is not None:
        row, col = cell
        segs = b["table"][row]["cells"][col]
        b["table"][row]["cells"][col] = [("cmt", [cid], segs)]
    else:
        b["p"] = [("cmt", [cid], [s]) if s == anchor else s for s in b["p"]]
        if not any(not isinstance(s, str) and s[0] == "cmt" and cid in s[1] for s in b["p"]):
            raise KeyError("anchor %r not a segment of %s" % (anchor, bid))
    doc["comments"].append({"id": cid, "author": author, "text": text, "para_id": para_id, "parent": None, "done": False})


def reply(doc, parent_cid, cid, author, text, para_id):
    """A reply: its own range on the parent's anchor, linked by paraIdParent."""
    parent = next(c for c in doc["comments"] if c["id"] == parent_cid)

    def add(segs):
        out = []
        for s in segs:
            if not isinstance(s, str) and s[0] == "cmt":
                ids = s[1] + [cid] if parent_cid in s[1] else s[1]
                out.append(("cmt", ids, add(s[2])))
            else:
                out.append(s)
        return out

    for b in doc["body"]:
        if "table" in b:
            for row in b["table"]:
                row["cells"] = [add(c) for c in row["cells"]]
        else:
            b["p"] = add(b["p"])
    doc["comments"].append({"id": cid, "author": author, "text": text, "para_id": para_id,
                            "parent": parent["para_id"], "done": False})


def resolve(doc, cid):
    next(c for c in doc["comments"] if c["id"] == cid)["done"] = True


def table_rows(doc):
    return block(doc, "prices")["table"]


def change_cell(doc, row_id, col, old, new, author):
    row = next(r for r in table_rows(doc) if r["id"] == row_id)
    row["cells"][col] = [("del", author, old), ("ins", author, new)]


def delete_row(doc, row_id, author):
    next(r for r in table_rows(doc) if r["id"] == row_id)["mark"] = ("del", author)


def add_row(doc, cells, author, row_id):
    table_rows(doc).append({"id": row_id, "cells": [[c] for c in cells], "mark": ("ins", author)})


# --- turn 1: rename "Supplier" to "Manufacturer" --------------------------------

def t1(doc, kind):
    if kind == "gold":
        rename(doc, "Supplier", "Manufacturer", A)
    elif kind == "strong":        # forgets the running header
        rename(doc, "Supplier", "Manufacturer", A, where=("body", "footnotes"))
    else:                         # body only, renames the Distributor too, written by a script
        rename(doc, "Supplier", "Manufacturer", A, where=("body",))
        rename(doc, "(the \"Distributor\")", "(the \"Reseller\")", A, where=("body",), only=("preamble",))


# --- turn 2: delete the non-compete --------------------------------------------

def t2(doc, kind):
    delete_paragraph(doc, "6.4", B)
    if kind == "gold":
        update_reference(doc, "8.1", "6.5", "6.4", B)
    if kind in ("gold", "strong"):
        comment(doc, "prices", None, 1, B, "HX-300 is discontinued: please take it off the price list rather "
                "than keep a price we cannot order at.", "2A000001", cell=(3, 0))
    if kind == "weak":            # also drops the stock clause, pastes a clause that restarts the list,
        delete_paragraph(doc, "6.5", B)      # and retitles a heading without updating the contents
        doc["restart_num"] = 2
        insert_paragraph_after(doc, "6.8", {"id": "6.9", "num": (2, 1), "mark": ("ins", B),
                                            "p": [("ins", B, "The Distributor may sell competing goods from the "
                                                             "second Contract Year.")]})
        retitle(doc, "7", "Confidentiality", "Confidential Information", B)
    comment(doc, "8.1", "thirty (30) days", 2, B, "Thirty days is too short to rebuild stock after a shortfall; "
            "we propose sixty (60) days.", "2A000002")


# --- turn 3: the price list and the replies ------------------------------------

def t3(doc, kind):
    if kind in ("gold", "strong"):
        change_cell(doc, "HX-100", 2, "1,200", "1,260", A)
        delete_row(doc, "HX-300", A)
        add_row(doc, ["HX-400", "Temperature probe", "1,420"], A, "HX-400")
        reply(doc, 1, 3, A, "Agreed: HX-300 is removed and its successor HX-400 added.", "3A000003")
        reply(doc, 2, 4, A, "We can accept forty-five (45) days but not sixty.", "3A000004")
        resolve(doc, 1)
        if kind == "strong":      # resolves the cure-period thread too, though it is still open
            resolve(doc, 2)
    else:                         # retypes the table, raises HX-200, answers nothing
        for row_id in ("HX-100", "HX-200", "HX-300"):
            delete_row(doc, row_id, A)
        add_row(doc, ["HX-100", "Pressure gauge", "1,260"], A, "new-100")
        add_row(doc, ["HX-200", "Flow meter", "1,950"], A, "new-200")
        add_row(doc, ["HX-400", "Temperature probe", "1,420"], A, "new-400")


EDITS = {1: t1, 2: t2, 3: t3}


def write_docx(doc, path, turn, kind):
    script = turn == 1 and kind == "weak"
    ooxml.build_docx(path, doc["body"], DATES[turn], doc["header"], doc["footer"], doc["footnotes"],
                     doc["comments"], rsids=not script, app=None if script else "Microsoft Office Word",
                     restart_num=doc["restart_num"])


# ---------------------------------------------------------------------------
# Turn 4: the term sheet, made by LibreOffice Calc from flat ODF
# ---------------------------------------------------------------------------

HEADER = ["Deal point", "Value", "Clause"]
POINTS = ["Manufacturer", "Distributor", "Territory", "Effective date", "Term",
          "Minimum purchase (EUR per Contract Year)", "Payment terms (days)", "Governing law"]
TERM_SHEET = {
    # value, clause — the gold answer
    "gold": [("s", "Harrowgate Instruments Ltd"), ("s", "Preamble"),
             ("s", "Pellucid Retail GmbH"), ("s", "Preamble"),
             ("s", "Austria; Germany; Switzerland"), ("s", "1.3"),
             ("d", "2026-03-01"), ("s", "1.4"),
             ("s", "36 months"), ("s", "3.1"),
             ("f", 250000), ("s", "4.1"),
             ("f", 60), ("s", "5.2"),
             ("s", "England and Wales"), ("s", "9.1")],
}
PRODUCTS = {
    "gold": [("HX-100", 1260), ("HX-200", 1850), ("HX-400", 1420)],
    "strong": [("HX-100", 1200), ("HX-200", 1850), ("HX-300", 960)],   # the list before turn 3
    "weak": [("HX-100", 1260), ("HX-200", 1850)],
}


def term_sheet(kind):
    """(sheets, validations) for one output; sheets = [(name, rows)]."""
    points = list(TERM_SHEET["gold"])
    if kind == "strong":
        points[4] = ("s", "Germany; Austria; Switzerland")
        points[9] = ("s", "3")                       # cites the clause, not the sub-clause
    rows = [[("s", h) for h in HEADER]]
    for i, name in enumerate(POINTS):
        value, ref = points[2 * i], points[2 * i + 1]
        rows.append([("s", name), value, ref] if kind != "template" else [("s", name), None, None])
    products = [[("s", "Model"), ("s", "Unit price (EUR)")]]
    products += [[("s", m), ("f", p)] for m, p in PRODUCTS.get(kind, [])]
    name = "Term sheet"
    validation = True
    if kind == "weak":            # a sheet of its own: renamed, no header row, no drop-down, wrong terms
        name, validation = "Deal points", False
        rows = rows[1:]
        rows[2][1] = ("s", "Germany, Austria and Switzerland")
        rows[6][1] = ("f", 30)
    return [(name, rows, validation), ("Products", products, False)]


def fods(sheets):
    def cell(c, validated):
        v = ' table:content-validation-name="val1"' if validated else ""
        if c is None:
            return "<table:table-cell%s/>" % v
        kind, value = c
        if kind == "s":
            return '<table:table-cell%s office:value-type="string"><text:p>%s</text:p></table:table-cell>' % (v, escape(value))
        if kind == "f":
            return '<table:table-cell%s office:value-type="float" office:value="%s"><text:p>%s</text:p></table:table-cell>' % (v, value, value)
        return ('<table:table-cell%s table:style-name="ce1" office:value-type="date" office:date-value="%s">'
                '<text:p>%s</text:p></table:table-cell>' % (v, value, value))

    tables = []
    for name, rows, validation in sheets:
        xml_rows = []
        for r, row in enumerate(rows):
            # the Term row's value cell offers the drop-down
            xml_rows.append("<table:table-row>%s</table:table-row>" % "".join(
                cell(c, validation and r == 5 and i == 1) for i, c in enumerate(row)))
        tables.append('<table:table table:name="%s"><table:table-column table:number-columns-repeated="3"/>%s</table:table>'
                      % (escape(name), "".join(xml_rows)))
    validations = ('<table:content-validations><table:content-validation table:name="val1" '
                   'table:condition="of:cell-content-is-in-list(&quot;12 months&quot;;&quot;24 months&quot;;&quot;36 months&quot;)" '
                   'table:allow-empty-cell="true" table:base-cell-address="\'Term sheet\'.B6"/></table:content-validations>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
            'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
            'xmlns:number="urn:oasis:names:tc:opendocument:xmlns:datastyle:1.0" '
            'office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.spreadsheet">'
            '<office:styles><number:date-style style:name="N_DATE"><number:year number:style="long"/><number:text>-</number:text>'
            '<number:month number:style="long"/><number:text>-</number:text><number:day number:style="long"/></number:date-style></office:styles>'
            '<office:automatic-styles><style:style style:name="ce1" style:family="table-cell" style:data-style-name="N_DATE"/></office:automatic-styles>'
            '<office:body><office:spreadsheet>%s%s</office:spreadsheet></office:body></office:document>'
            % (validations if any(v for _, _, v in sheets) else "", "".join(tables)))


def write_xlsx(kind, path, tmp):
    src = os.path.join(tmp, "%s.fods" % kind)
    with open(src, "w") as f:
        f.write(fods(term_sheet(kind)))
    profile = os.path.join(tmp, "lo_profile")
    subprocess.run(["soffice", "-env:UserInstallation=file://" + profile, "--headless",
                    "--convert-to", "xlsx:Calc MS Excel 2007 XML", "--outdir", tmp, src],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, HOME=tmp))
    made = os.path.join(tmp, "%s.xlsx" % kind)
    # Calc stamps the wall clock into docProps/core.xml: fix it, and the zip times.
    parts = {}
    with zipfile.ZipFile(made) as z:
        for info in z.infolist():
            data = z.read(info.filename).decode("utf-8")
            if info.filename == "docProps/core.xml":
                data = re.sub(r"(<dcterms:(?:created|modified)[^>]*>)[^<]*", r"\g<1>" + DATES[4], data)
            parts[info.filename] = data
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ooxml.write_zip(path, parts)


# ---------------------------------------------------------------------------
# Rubrics and verdicts
# ---------------------------------------------------------------------------

LC, CC, NQ, CA, DC = ("Legal correctness", "Commercial Context", "Negotiation Quality",
                      "Counterparty Acceptance Prediction", "Deal-closing Orientation")

# (category, weight, criteria, justification, check or None, {"required": True}?)
RUBRICS = {
    1: [
        (LC, 6, "Leaves no occurrence of \"Supplier\" anywhere in the agreement once the changes are accepted, "
                "the running header and the footnotes included.",
         "A stray \"Supplier\" in a header or footnote is an undefined term after the rename.",
         {"type": "not_contains", "pattern": "\\bSupplier\\b", "in": "accepted", "stories": ["all"]}),
        (LC, 3, "Renames the term in the running header as a tracked change.",
         "Headers are easy to miss and the Distributor must see the change.",
         {"type": "contains", "pattern": "Manufacturer", "in": "inserted", "stories": ["headers"], "author": A}),
        (LC, 2, "Renames the term in the footnote to clause 1.1 as a tracked change.",
         "The footnote identifies the company; it must use the new term.",
         {"type": "contains", "pattern": "Manufacturer", "in": "inserted", "stories": ["footnotes"], "author": A}),
        (DC, 2, "Is saved by Microsoft Word, not regenerated by a script, so the revision history the "
                "Distributor relies on is intact (required: without it the redline is not accepted at all).",
         "The Distributor's counsel compares versions in Word; a regenerated file loses Word's revision marks.",
         {"type": "provenance", "application": "^Microsoft Office Word$", "rsids": True}, True),
        (NQ, 1, "Makes its changes as tracked changes under the author Harrowgate Counsel.",
         "The Distributor must see who proposed the rename.",
         {"type": "author", "authors": [A], "mode": "any"}),
        (LC, 5, "Renames the defined term in its definition (clause 1.1) and in the preamble and uses "
                "\"Manufacturer\" consistently, without changing any other wording.",
         "A rename is mechanical; any other change needs its own justification.", None),
        (CA, -4, "Renames the Distributor's defined term or changes either party's name.",
         "The Distributor's term is not Harrowgate's to change; it will be rejected and erodes trust.", None),
    ],
    2: [
        (DC, 5, "Deletes the non-compete (clause 6.4) as a tracked change.",
         "Pellucid's instruction: no exclusivity obligations on the Distributor.",
         {"type": "contains", "pattern": "compete", "in": "deleted", "section": "6", "author": B}),
        (LC, 3, "Leaves the remaining obligations in clause 6 numbered without a gap or a restart.",
         "Clause numbers are cited elsewhere; a gap or a restarted list makes citations ambiguous.",
         {"type": "numbering", "section": "Obligations of the Distributor", "level": 2}),
        (LC, 4, "Keeps the cross-reference in clause 8.1 pointing at the stock obligation and showing its new number.",
         "After the deletion the stock clause is 6.4; a stale \"6.5\" points at the wrong obligation.",
         {"type": "fields"}),
        (LC, 2, "Leaves the table of contents matching the headings.",
         "The contents list is part of the signed document.",
         {"type": "fields", "toc": True, "references": False, "resolved_text": False}),
        (NQ, 2, "Asks in a comment in clause 8 for a longer cure period than thirty days.",
         "Pellucid needs time to rebuild stock before a breach becomes a termination right.",
         {"type": "comment", "author": B, "section": "Termination", "contains": "sixty"}),
        (CA, 3, "Raises the discontinued HX-300 in a comment on the price list instead of editing the "
                "Manufacturer's prices.",
         "The price list is the Manufacturer's to change; a comment invites the update.", None),
        (CC, -5, "Deletes or weakens the stock-keeping obligation (clause 6.5 before the deletion).",
         "Pellucid agreed to keep one month's stock; removing it reopens a settled point.", None),
    ],
    3: [
        (CC, 5, "After its changes are accepted, the price list shows HX-100 at EUR 1,260, HX-200 unchanged at "
                "EUR 1,850 and HX-400 at EUR 1,420 in place of the discontinued HX-300.",
         "These are the prices Harrowgate's board approved for the second Contract Year.",
         {"type": "table", "header": "model", "match": "numeric",
          "cells": {"R2C3": "1,260", "R3C1": "HX-200", "R3C3": "1,850", "R4C1": "HX-400", "R4C3": "1,420"}}),
        (NQ, 3, "Shows the price-list changes as one inserted row, one deleted row and one changed price, "
                "not as a retyped table.",
         "The Distributor must see exactly what changed in the list.",
         {"type": "table", "header": "model", "author": A, "rows_inserted": {"min": 1, "max": 1},
          "rows_deleted": {"min": 1, "max": 1}, "cells_changed": {"min": 1, "max": 1}}),
        (CA, 3, "Replies to each of the Distributor's comments.",
         "An unanswered comment stalls the next turn.",
         {"type": "comment", "replied_by": A}),
        (DC, 2, "Marks as resolved the Distributor's price-list comment, and only that one.",
         "The cure period is still open; resolving it would hide a live issue.",
         {"type": "comment", "done_exactly": ["HX-300"]}),
        (DC, 3, "Accepts the Distributor's deletion of clause 6.4 (leaves it in place).",
         "Harrowgate's playbook concedes exclusivity for a higher minimum purchase already agreed.", None),
        (CC, -4, "Raises the price of any product other than HX-100.",
         "Only HX-100's increase was notified under clause 5.1.", None),
    ],
    4: [
        (CC, 4, "Names the parties, the term and the governing law as the agreement states them.",
         "The term sheet is read instead of the agreement by Pellucid's purchasing team.",
         {"type": "xlsx_cells", "sheet": "Term sheet",
          "cells": {"B2": "Harrowgate Instruments Ltd", "B3": "Pellucid Retail GmbH", "B6": "36 months",
                    "B9": "England and Wales"}}),
        (CC, 2, "Gives the Effective Date as 1 March 2026.",
         "Dates drive the Contract Year and the minimum purchase.",
         {"type": "xlsx_cells", "sheet": "Term sheet", "cells": {"B5": "1 March 2026"}, "match": "date"}),
        (CC, 3, "Gives the minimum purchase (EUR 250,000) and the payment terms (60 days) as numbers.",
         "Purchasing feeds these cells into its planning workbook.",
         {"type": "xlsx_cells", "sheet": "Term sheet", "cells": {"B7": 250000, "B8": 60}, "match": "numeric"}),
        (LC, 2, "Lists the Territory's three countries.",
         "The Territory decides where Pellucid may sell.",
         {"type": "xlsx_cells", "sheet": "Term sheet", "cells": {"B4": "Germany; Austria; Switzerland"},
          "separator": ";"}),
        (LC, 3, "Cites the sub-clause each deal point comes from.",
         "Readers check the term sheet against the agreement by clause.",
         {"type": "xlsx_cells", "sheet": "Term sheet", "match": "exact",
          "cells": {"C4": "1.3", "C5": "1.4", "C6": "3.1", "C7": "4.1", "C8": "5.2", "C9": "9.1"}}),
        (CC, 4, "Lists the price list as it stands after turn 3 (HX-100 at 1,260, HX-200 at 1,850, HX-400 at 1,420).",
         "An old price list in the term sheet would mislead purchasing.",
         {"type": "xlsx_cells", "sheet": "Products", "match": "numeric",
          "rows": {"range": "A2:B20", "expected": [["HX-100", 1260], ["HX-200", 1850], ["HX-400", 1420]],
                   "min_recall": 1.0}}),
        (DC, 2, "Keeps the template's layout: both sheets, the header row and the Term drop-down "
                "(required: purchasing imports the sheet by position).",
         "A re-laid-out sheet breaks the import, so the whole term sheet is unusable.",
         {"type": "xlsx_cells", "sheet": "Term sheet",
          "template": {"sheets": ["Term sheet", "Products"], "header_row": 1, "header": HEADER,
                       "data_validation": True}}, True),
        (NQ, 3, "States each deal point in the agreement's own terms without adding positions the agreement "
                "does not contain.",
         "The term sheet summarises; it must not negotiate.", None),
    ],
}

# Verdicts by construction: (verdict, reason) for each rubric and output.
P, F = "PASS", "FAIL"
VERDICTS = {
    1: {
        "gold": [(P, "Every \"Supplier\" in body, header and footnote is replaced by a tracked change."),
                 (P, "The header's \"Supplier\" is a tracked deletion with \"Manufacturer\" inserted."),
                 (P, "The footnote's \"Supplier\" is a tracked deletion with \"Manufacturer\" inserted."),
                 (P, "Saved by Microsoft Office Word; rsid attributes present."),
                 (P, "Every change is by Harrowgate Counsel."),
                 (P, "Definition, preamble and every use renamed; nothing else changed."),
                 (F, "The Distributor's term and both names are untouched.")],
        "strong": [(F, "The running header still says \"the Supplier\"."),
                   (F, "The header is not edited."),
                   (P, "The footnote is renamed as a tracked change."),
                   (P, "Saved by Microsoft Office Word; rsid attributes present."),
                   (P, "Every change is by Harrowgate Counsel."),
                   (P, "Definition, preamble and every body use renamed; nothing else changed."),
                   (F, "The Distributor's term and both names are untouched.")],
        "weak": [(F, "The header and the footnote still say \"Supplier\"."),
                 (F, "The header is not edited."),
                 (F, "The footnote is not edited."),
                 (F, "Written by a script: no docProps/app.xml and no rsid attributes."),
                 (P, "Every change is by Harrowgate Counsel."),
                 (F, "Also renames the Distributor to \"Reseller\" in the preamble."),
                 (P, "Renames the Distributor's defined term to \"Reseller\".")],
    },
    2: {
        "gold": [(P, "Clause 6.4 is a tracked deletion by Pellucid Counsel."),
                 (P, "Clause 6 reads 6.1 to 6.7 once the deletion is accepted."),
                 (P, "The REF field in 8.1 now shows 6.4, the stock clause's number."),
                 (P, "The contents list matches the headings."),
                 (P, "Comment in 8.1 asks for sixty (60) days."),
                 (P, "A comment on HX-300 in the price list asks for its removal."),
                 (F, "The stock clause is untouched.")],
        "strong": [(P, "Clause 6.4 is a tracked deletion by Pellucid Counsel."),
                   (P, "Clause 6 reads 6.1 to 6.7 once the deletion is accepted."),
                   (F, "The REF field in 8.1 still shows 6.5, but the stock clause is now 6.4."),
                   (P, "The contents list matches the headings."),
                   (P, "Comment in 8.1 asks for sixty (60) days."),
                   (P, "A comment on HX-300 in the price list asks for its removal."),
                   (F, "The stock clause is untouched.")],
        "weak": [(P, "Clause 6.4 is a tracked deletion by Pellucid Counsel."),
                 (F, "The pasted clause restarts the list at 6.1."),
                 (F, "The stock clause the REF field points at is deleted."),
                 (F, "Heading 7 is retitled but the contents list still says Confidentiality."),
                 (P, "Comment in 8.1 asks for sixty (60) days."),
                 (F, "No comment on the price list."),
                 (P, "Deletes the stock clause.")],
    },
    3: {
        "gold": [(P, "HX-100 1,260, HX-200 1,850, HX-400 1,420; HX-300 deleted."),
                 (P, "One row inserted, one deleted, one price changed, by Harrowgate Counsel."),
                 (P, "Both of the Distributor's threads have a reply by Harrowgate Counsel."),
                 (P, "Only the HX-300 thread is resolved."),
                 (P, "The deletion of 6.4 is left in place."),
                 (F, "Only HX-100's price changes.")],
        "strong": [(P, "HX-100 1,260, HX-200 1,850, HX-400 1,420; HX-300 deleted."),
                   (P, "One row inserted, one deleted, one price changed, by Harrowgate Counsel."),
                   (P, "Both of the Distributor's threads have a reply by Harrowgate Counsel."),
                   (F, "The cure-period thread is resolved too, though still open."),
                   (P, "The deletion of 6.4 is left in place."),
                   (F, "Only HX-100's price changes.")],
        "weak": [(F, "HX-200 reads 1,950."),
                 (F, "Every row deleted and retyped: three rows inserted, three deleted."),
                 (F, "No reply to either thread."),
                 (F, "The HX-300 thread is still open."),
                 (P, "The deletion of 6.4 is left in place."),
                 (P, "Raises HX-200 from 1,850 to 1,950.")],
    },
    4: {
        "gold": [(P, "Parties, term and governing law as in the agreement."),
                 (P, "Effective date 2026-03-01."),
                 (P, "250000 and 60."),
                 (P, "Austria; Germany; Switzerland."),
                 (P, "1.3, 1.4, 3.1, 4.1, 5.2, 9.1."),
                 (P, "HX-100 1,260, HX-200 1,850, HX-400 1,420."),
                 (P, "Both sheets, header row and drop-down kept."),
                 (P, "Each point in the agreement's terms.")],
        "strong": [(P, "Parties, term and governing law as in the agreement."),
                   (P, "Effective date 2026-03-01."),
                   (P, "250000 and 60."),
                   (P, "Germany; Austria; Switzerland."),
                   (F, "The term is cited as clause 3, not 3.1."),
                   (F, "Lists the price list from before turn 3 (HX-300, HX-100 at 1,200)."),
                   (P, "Both sheets, header row and drop-down kept."),
                   (P, "Each point in the agreement's terms.")],
        "weak": [(F, "No sheet named Term sheet."),
                 (F, "No sheet named Term sheet."),
                 (F, "No sheet named Term sheet."),
                 (F, "No sheet named Term sheet."),
                 (F, "No sheet named Term sheet."),
                 (F, "HX-400 missing."),
                 (F, "The sheet is renamed, its header row and drop-down removed."),
                 (F, "Payment terms given as 30 days, which the agreement does not say.")],
    },
}


def rubric_objects(turn):
    out = []
    for i, row in enumerate(RUBRICS[turn], 1):
        cat, weight, criteria, justification, check = row[:5]
        r = {"id": "r%02d" % i, "criteria": criteria, "justification": justification, "category": cat,
             "weight": weight}
        if len(row) > 5 and row[5]:
            r["required"] = True
        if check is not None:
            r["kind"] = "check"
            r["check"] = check
        out.append(r)
    return out


def write_scenario_toml():
    lines = [
        "# Generated by scenarios/generate/scenario_s4.py. SYNTHETIC example data:",
        "# fictional parties, not legal advice.",
        "id = \"s4\"",
        "label = \"%s\"" % LABEL,
        "description = \"%s\"" % DESCRIPTION.replace('"', '\\"'),
        "base = \"base.docx\"",
        "",
    ]
    for side in ("A", "B"):
        s = SIDES[side]
        lines += ["[sides.%s]" % side, "party = \"%s\"" % s["party"], "role = \"%s\"" % s["role"],
                  "author = \"%s\"" % s["author"], "playbook = \"playbook-%s.md\"" % side, ""]
    for turn in sorted(TURNS):
        lines += ["[[turns]]", "turn = %d" % turn, "side = \"%s\"" % TURNS[turn],
                  "input_groups = [\"s4-t%d-g01\"]" % turn, ""]
    lines += ["# Turn 4's output is an .xlsx term sheet filled in from the agreement (its input);",
              "# the template it starts from:", "[attachments]", "\"s4-t4-g01\" = \"%s\"" % TEMPLATE, ""]
    with open(rel("scenarios", DIR, "scenario.toml"), "w") as f:
        f.write("\n".join(lines))


def build():
    """Writes every s4 file; returns [(task, {output: reward})]."""
    sdir = rel("scenarios", DIR)
    os.makedirs(os.path.join(sdir, "inputs"), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="redjury_s4_")
    summary = []
    try:
        doc = base()
        write_docx(doc, os.path.join(sdir, "base.docx"), 0, "gold")
        write_scenario_toml()
        folders = {"gold": rel("gold", "redlines"), "strong": rel("scenarios", "outputs", "strong"),
                   "weak": rel("scenarios", "outputs", "weak")}
        for turn in sorted(TURNS):
            side = TURNS[turn]
            me, other = SIDES[side], SIDES["B" if side == "A" else "A"]
            gid = "s4-t%d-g01" % turn
            name = "redline-%sa" % gid
            inp = os.path.join(sdir, "inputs", gid + ".docx")
            write_docx(doc, inp, turn - 1, "gold")
            outputs = {}
            for kind in ("gold", "strong", "weak"):
                if turn == 4:
                    path = os.path.join(folders[kind], name + ".xlsx")
                    write_xlsx(kind, path, tmp)
                else:
                    out = copy.deepcopy(doc)
                    EDITS[turn](out, kind)
                    path = os.path.join(folders[kind], name + ".docx")
                    write_docx(out, path, turn, kind)
                    outputs[kind] = out
            if turn == 4:
                write_xlsx("template", os.path.join(sdir, TEMPLATE), tmp)
            rubrics = rubric_objects(turn)
            task = {
                "task_id": 4000 + turn * 100 + 11, "scenario_id": 4, "scenario_label": LABEL,
                "side": side, "level": turn, "input_group": gid, "variant": "a",
                "represented_party": me["party"], "counterparty": other["party"], "author": me["author"],
                "input": "../scenarios/%s/inputs/%s.docx" % (DIR, gid),
                # Scenario 4 is not one of the reference's three: said, so no warning.
                "reference": False,
                "rubrics": rubrics,
            }
            if turn != 4:
                # The gold redline is the expert's (a term sheet has none).
                task["expert"] = "../gold/redlines/%s.docx" % name
            if turn == 4:
                # The sheet the output is filled in from: returned unchanged, it fails the gate.
                task["output_template"] = "../scenarios/%s/%s" % (DIR, TEMPLATE)
            with open(rel("rubrics", name + ".json"), "w") as f:
                json.dump(task, f, indent=2, ensure_ascii=False)
                f.write("\n")
            verdicts = {kind: {r["id"]: {"verdict": v, "reason": why}
                               for r, (v, why) in zip(rubrics, VERDICTS[turn][kind], strict=True)}
                        for kind in ("gold", "strong", "weak")}
            with open(rel("gold", "verdicts", name + ".json"), "w") as f:
                json.dump({"task_id": name, "outputs": verdicts}, f, indent=2, ensure_ascii=False)
                f.write("\n")
            summary.append((name, {k: reward(rubrics, verdicts[k]) for k in verdicts}))
            if turn < 4:
                doc = outputs["gold"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary


if __name__ == "__main__":
    for name, r in build():
        print("%-22s %6.2f %6.2f %6.2f" % (name, r["gold"], r["strong"], r["weak"]))
