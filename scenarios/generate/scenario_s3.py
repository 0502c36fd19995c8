"""Scenario s3: supply agreement, CHECK-BASED tasks (deterministic rubric items).

SYNTHETIC: the parties, prices and positions are invented for the benchmark.
The supplier (side A) sent its standard terms (BASE). The buyer returned a
clean, edited draft. Three tasks follow, each input being the previous gold:

  t1  redline-s3-t1-g01a  (side A, author "Counterparty"): a comparison redline
      of the buyer's clean draft against the base, every change attributed to
      "Counterparty" (the buyer), no formatting revisions.
  t2  redline-s3-t2-g01a  (side A, author "Supplier Counsel"): input = t1 gold.
      Accept every Counterparty change except the governing-law one (Clause 12),
      reject that one and say why in a comment anchored in Clause 12.
  t3  redline-s3-t3-g01a  (side B, author "Buyer Counsel"): input = t2 gold.
      Add a twelve-month fee cap with carve-outs ONLY in Clause 9
      (Indemnification), tracked, with an explanatory comment.

Most rubric items are `"kind": "check"` items evaluated by checks.py (the
Python reference of the Rust check types); t3 also has one LLM item whose
verdicts are the attorney's (LLM_VERDICTS). Built by build(), which
generate.py calls after s1 and s2; s1/s2 files are not touched.
"""
import json
import os
import shutil
import tempfile

ID = "s3"
DIR = "s3-supply-agreement"
LABEL = "Supply agreement, check-based tasks"
DESCRIPTION = (
    "An English-law supplier's standard supply agreement for precision-machined hydraulic "
    "components sold to a Scottish fabricator. The buyer returns a clean edited draft; the "
    "supplier's side first produces a comparison redline attributed to 'Counterparty' (turn 1), "
    "then accepts everything except the buyer's change of governing law (turn 2); the buyer then "
    "proposes a cap on indemnity liability confined to the indemnification clause (turn 3). "
    "Rubrics are mostly deterministic checks. Synthetic example; fictional parties; not legal advice."
)

SIDES = {
    "A": {"party": "Quillstone Components Ltd", "role": "Supplier (seller)", "author": "Supplier Counsel"},
    "B": {"party": "Ravensholt Fabrication Ltd", "role": "Buyer (customer)", "author": "Buyer Counsel"},
}
TURNS = {1: "A", 2: "A", 3: "B"}
BASE_DATE = (2025, 5, 5, 9)
TURN_DATES = {1: (2025, 5, 12, 11), 2: (2025, 5, 19, 11), 3: (2025, 5, 26, 11)}

CP, SC, BC = "Counterparty", "Supplier Counsel", "Buyer Counsel"
TASK_AUTHOR = {1: CP, 2: SC, 3: BC}

# Section numbers as displayed (list labels without the trailing dot).
SEC_DELIVERY, SEC_FEES, SEC_INDEMNITY, SEC_LOL, SEC_GOVLAW = "3", "4", "9", "10", "12"

BASE = [
    ("title", "SUPPLY AGREEMENT"),
    ("center", "Supplier standard terms QCL/SA/2025 - SYNTHETIC EXAMPLE, FICTIONAL PARTIES"),
    ("p", "This Agreement is dated ____________ 2025 and is made between QUILLSTONE COMPONENTS LTD, a company incorporated in England and Wales with company number 09990003, whose registered office is at 4 Foundry Row, Sheffield S1 0QQ (\"Supplier\"), and RAVENSHOLT FABRICATION LTD, a company incorporated in Scotland with company number SC999004, whose registered office is at 12 Slipway Road, Glasgow G1 0RR (\"Buyer\")."),
    ("h", "DEFINITIONS AND INTERPRETATION"),
    ("c", "In this Agreement the following definitions apply:"),
    ("s", "\"Buyer Specifications\" means any drawings, designs or specifications for the Goods supplied by Buyer to Supplier;"),
    ("s", "\"Delivery Date\" means the delivery date stated in an Order;"),
    ("s", "\"Fees\" means the prices for the Goods set out in Clause 4.1;"),
    ("s", "\"Goods\" means the precision-machined hydraulic components listed in Clause 4.1;"),
    ("s", "\"Intellectual Property Rights\" means patents, rights in designs, copyright, trade marks, rights in confidential information and all similar rights anywhere in the world; and"),
    ("s", "\"Order\" means a purchase order for Goods issued by Buyer and accepted by Supplier."),
    ("c", "Clause headings do not affect interpretation. \"Including\" means \"including without limitation\"."),
    ("h", "SUPPLY OF GOODS"),
    ("c", "Supplier shall supply the Goods to Buyer in accordance with each Order and this Agreement."),
    ("c", "Buyer shall give Supplier a non-binding rolling forecast of its requirements for the Goods each calendar quarter."),
    ("h", "DELIVERY"),
    ("c", "Supplier shall deliver the Goods DAP (Incoterms 2020) to Buyer's premises at 12 Slipway Road, Glasgow on the Delivery Date."),
    ("c", "Risk in the Goods passes to Buyer on delivery. Delivery dates are estimates only and Supplier is not liable for any delay in delivery."),
    ("c", "Title to the Goods passes to Buyer when Supplier has received payment in full for them."),
    ("h", "FEES AND PAYMENT"),
    ("c", "Buyer shall pay Supplier the following prices for the Goods:"),
    ("table", "PriceTable", [
        ["Part", "Description", "Unit price (GBP)"],
        ["QC-110", "Hydraulic manifold block", "184.00"],
        ["QC-240", "Valve housing, stainless steel", "96.50"],
        ["QC-315", "Pump end cover", "42.75"],
    ]),
    ("c", "Supplier may invoice the Goods on dispatch. Buyer shall pay each invoice within thirty (30) days after the invoice date."),
    ("c", "Supplier may charge interest on overdue amounts at four per cent (4%) a year above the Bank of England base rate."),
    ("h", "QUALITY AND WARRANTY"),
    ("c", "Supplier warrants that for a period of six (6) months from delivery the Goods will conform to their specification and be free from material defects in materials and workmanship."),
    ("c", "As Buyer's sole remedy for breach of Clause 5.1, Supplier shall at its option repair or replace the defective Goods or refund their price."),
    ("h", "INTELLECTUAL PROPERTY"),
    ("c", "All Intellectual Property Rights in the Goods, other than in the Buyer Specifications, remain with Supplier."),
    ("h", "CONFIDENTIALITY"),
    ("c", "Each party shall keep confidential all information of a confidential nature disclosed to it by the other party under this Agreement and use it only to perform this Agreement."),
    ("h", "TERM AND TERMINATION"),
    ("c", "This Agreement starts on the date above and continues for two (2) years unless terminated earlier under this Clause 8."),
    ("c", "Either party may terminate this Agreement by written notice if the other party commits a material breach that is not remedied within thirty (30) days after a notice requiring it to be remedied."),
    ("h", "INDEMNIFICATION"),
    ("c", "Supplier shall indemnify Buyer against all losses, damages, costs and expenses (including reasonable legal fees) arising out of any claim that the Goods, other than Goods made to the Buyer Specifications, infringe the Intellectual Property Rights of a third party."),
    ("c", "Buyer shall indemnify Supplier against all losses, damages, costs and expenses (including reasonable legal fees) arising out of any claim that Goods made to the Buyer Specifications infringe the Intellectual Property Rights of a third party, and out of any product liability claim to the extent caused by the Buyer Specifications."),
    ("c", "A party seeking an indemnity under this Clause 9 shall notify the other party promptly of the claim, allow it to conduct the defence and settlement of the claim, and give it reasonable assistance at its cost."),
    ("h", "LIMITATION OF LIABILITY"),
    ("c", "Nothing in this Agreement limits or excludes either party's liability for death or personal injury caused by its negligence, for fraud or fraudulent misrepresentation, or for any other liability that cannot be limited or excluded by law."),
    ("c", "Subject to Clauses 10.1 and 10.3, each party's total aggregate liability arising out of or in connection with this Agreement shall not exceed the Fees paid by Buyer in the calendar year in which the claim arose."),
    ("c", "The limit in Clause 10.2 does not apply to either party's obligations under Clause 9 (Indemnification)."),
    ("c", "Neither party shall be liable for any loss of profit or for any indirect or consequential loss."),
    ("h", "FORCE MAJEURE"),
    ("c", "Neither party is liable for any delay or failure in performing its obligations caused by events beyond its reasonable control, provided that it notifies the other party promptly."),
    ("h", "GOVERNING LAW AND JURISDICTION"),
    ("c", "This Agreement and any dispute or claim arising out of or in connection with it are governed by the laws of England and Wales, and the courts of England and Wales have exclusive jurisdiction to settle any such dispute or claim."),
    ("h", "GENERAL"),
    ("c", "This Agreement constitutes the entire agreement between the parties and supersedes all previous agreements relating to its subject matter."),
    ("c", "Neither party may assign this Agreement without the prior written consent of the other party."),
    ("c", "Any notice under this Agreement must be in writing and delivered by hand, by recorded delivery or by email to the address last notified by the receiving party."),
    ("sig", "Signed for and on behalf of QUILLSTONE COMPONENTS LTD: ____________________"),
    ("sig", "Signed for and on behalf of RAVENSHOLT FABRICATION LTD: ____________________"),
]

GOVLAW_OLD = "the laws of England and Wales, and the courts of England and Wales have"
GOVLAW_NEW = "the law of Scotland, and the Scottish courts have"

# ---------------------------------------------------------------------------
# Edits. Besides generate.apply_op's actions, build() understands:
#   ("bold", anchor) / ("underline", anchor)   a recorded formatting change
#   ("accept_para", anchor) / ("reject_para", anchor)
#        accept / reject the tracked changes in the paragraph holding anchor
#   ("accept_all",)                            accept every remaining change
# ---------------------------------------------------------------------------

OPS = {
    1: {  # the buyer's draft, as a comparison against the base (author Counterparty)
        "pay60": [("replace", "thirty (30) days after the invoice date", "sixty (60) days after receipt of a valid invoice")],
        "interest": [("replace", "four per cent (4%)", "two per cent (2%)")],
        "warranty": [("replace", "six (6) months", "eighteen (18) months")],
        "delay": [("delete", " Delivery dates are estimates only and Supplier is not liable for any delay in delivery.")],
        "conf": [("insert_after", "obligations under Clause 9 (Indemnification)", ", or to any breach of Clause 7 (Confidentiality)")],
        "govlaw": [("replace", GOVLAW_OLD, GOVLAW_NEW)],
        "assign": [("insert_after", "without the prior written consent of the other party", ", such consent not to be unreasonably withheld")],
        # weak / penalty edits
        "x_essence": [("insert_after", "Glasgow on the Delivery Date", ". Time of delivery is of the essence")],
        "x_bold": [("bold", "\"Delivery Date\"")],
    },
    2: {  # Supplier Counsel answers the Counterparty redline
        "reject_govlaw": [("reject_para", "This Agreement and any dispute or claim arising")],
        "accept_all": [("accept_all",)],
        "accept_but_assign": [("accept_para", anchor) for anchor in (
            "Risk in the Goods passes to Buyer on delivery.", "Supplier may invoice the Goods on dispatch.",
            "Supplier may charge interest on overdue amounts", "Supplier warrants that for a period of",
            "The limit in Clause 10.2 does not apply")],
        "c_govlaw": [("comment", "governed by the laws of England and Wales",
                      "We accept all of Buyer's other changes, but we cannot agree to change the governing law: "
                      "Quillstone contracts only under the laws of England and Wales, and its insurance and group "
                      "policy require English law and the courts of England and Wales. Clause 12 stays as drafted.")],
        "c_govlaw_short": [("comment", "governed by the laws of England and Wales",
                            "Governing law must remain English law; change rejected.")],
        # weak / penalty edits
        "x_del_lol": [("delete", "for any loss of profit or ")],
        "w_comment": [("comment", "SUPPLY AGREEMENT", "Changes accepted.")],
    },
    3: {  # Buyer Counsel: cap on indemnity liability, Clause 9 only
        "cap_para": [("insert_para_after", "give it reasonable assistance at its cost.",
                      "Each party's total aggregate liability under this Clause 9 shall not exceed the Fees paid or "
                      "payable by Buyer in the twelve (12) months preceding the event giving rise to the claim, "
                      "except that this limit does not apply to liability arising from a party's fraud or wilful "
                      "misconduct or to Supplier's liability under Clause 9.1 for third-party claims that the Goods "
                      "infringe Intellectual Property Rights.")],
        "c_cap": [("comment", "Buyer shall indemnify Supplier against all losses",
                   "Buyer's indemnity in Clause 9.2 is uncapped because Clause 10.3 takes Clause 9 outside the "
                   "general limit. We propose a cap of twelve months' Fees on indemnity liability in new Clause 9.4, "
                   "with carve-outs for fraud, wilful misconduct and Supplier's IP infringement indemnity in Clause 9.1, "
                   "which stays uncapped as Supplier's standard terms intend.")],
        "cap_short": [("insert_after", "to the extent caused by the Buyer Specifications",
                       ". Buyer's total liability under this Clause 9.2 shall not exceed the Fees paid in the twelve (12) "
                       "months preceding the claim, except in the case of fraud")],
        "c_cap_short": [("comment", "Buyer shall indemnify Supplier against all losses",
                         "Buyer needs a cap on its indemnity exposure in line with the general limit.")],
        # weak / penalty edits
        "x_cap_12m": [("insert_after", "to the extent caused by the Buyer Specifications",
                       ". Buyer's liability under this Clause is capped at 12 months of fees")],
        "x_lol_scope": [("replace", "either party's obligations under Clause 9 (Indemnification)",
                         "Supplier's obligations under Clause 9.1")],
        "x_underline": [("underline", "Buyer shall indemnify Supplier")],
    },
}

# Each output: a list of passes (author, record changes?, [edit ids]).
OUTPUTS = {
    1: {
        "gold": [(CP, True, ["delay", "pay60", "interest", "warranty", "conf", "govlaw", "assign"])],
        "strong": [(CP, True, ["delay", "pay60", "warranty", "conf", "govlaw", "assign"])],
        "weak": [(CP, True, ["pay60", "warranty", "x_essence", "x_bold"]),
                 (SC, True, ["delay", "conf"])],
    },
    2: {
        "gold": [(SC, True, ["reject_govlaw", "accept_all", "c_govlaw"])],
        "strong": [(SC, True, ["reject_govlaw", "accept_but_assign", "c_govlaw_short"])],
        "weak": [(SC, True, ["accept_all", "x_del_lol", "w_comment"])],
    },
    3: {
        "gold": [(BC, True, ["cap_para", "c_cap"])],
        "strong": [(BC, True, ["cap_short", "c_cap_short"])],
        "weak": [(BC, True, ["x_cap_12m", "x_lol_scope", "x_underline"])],
    },
}

LC, CC, NQ, CAP, DC = ("Legal correctness", "Commercial Context", "Negotiation Quality",
                       "Counterparty Acceptance Prediction", "Deal-closing Orientation")


def gold_path(turn):
    return "../gold/redlines/redline-s3-t%d-g01a.docx" % turn


# Rubric rows: (category, weight, criteria, justification, check or None for an LLM item)
RUBRICS = {
    1: [
        (LC, 5, "Attributes every tracked change in the comparison to the author Counterparty.",
         "A comparison must show the counterparty's draft as the counterparty's changes; changes under our own name misstate who proposed what.",
         {"type": "author", "authors": [CP], "mode": "all"}),
        (NQ, 3, "Shows no formatting revisions: the comparison holds only text insertions and deletions.",
         "The counterparty's draft changed wording only; formatting revisions are noise the reviewer must clear.",
         {"type": "no_format_changes"}),
        (LC, 8, "Captures the counterparty's changes to the base agreement completely and at the right granularity (insertions and deletions match the attorney's comparison).",
         "Every missed or invented change is a point the supplier would concede or argue without knowing it.",
         {"type": "revision_set_f1", "gold_docx": gold_path(1), "min_f1": 0.9}),
        (CC, 5, "Shows the counterparty's change of governing law to Scots law in Clause 12 as an insertion.",
         "The governing-law change is the point the supplier will reject; it must be visible in the comparison.",
         {"type": "contains", "pattern": "law of Scotland", "in": "inserted", "section": SEC_GOVLAW}),
        (CC, 3, "Shows the reduced late-payment interest rate (two per cent) in Clause 4.3 as an insertion.",
         "A small commercial change that is easy to miss in a comparison.",
         {"type": "contains", "pattern": "two per cent \\(2%\\)", "in": "inserted", "section": SEC_FEES}),
        (LC, -5, "Inserts wording that is not in the counterparty's draft (\"time of delivery is of the essence\").",
         "An invented change misstates the counterparty's position and would make late delivery a repudiatory breach if accepted unnoticed.",
         {"type": "contains", "pattern": "(?i)time of delivery is of the essence", "in": "inserted"}),
    ],
    2: [
        (DC, 5, "Resolves every Counterparty change: none of the counterparty's tracked changes is left open.",
         "The supplier's playbook accepts all of the buyer's changes except governing law; leaving them open delays signature.",
         {"type": "revisions_remaining", "author": CP, "max": 0}),
        (LC, 8, "With all changes accepted, the agreement reads exactly as the attorney's answer: the buyer's changes accepted and Clause 12 as originally drafted.",
         "Accepting the wrong change (or rejecting a conceded one) changes the deal.",
         {"type": "accepted_text_equals", "gold_docx": gold_path(2)}),
        (NQ, 5, "Explains the rejection of the governing-law change in a comment by Supplier Counsel anchored in Clause 12.",
         "A rejection without reasons invites the buyer to re-propose it.",
         {"type": "comment", "author": SC, "section": SEC_GOVLAW, "contains": "governing law"}),
        (CC, 7, "Keeps English law: the counterparty's proposed Scots governing law does not stand in Clause 12.",
         "English governing law is a must-have in the supplier's playbook (insurance and group policy).",
         {"type": "not_contains", "pattern": "law of Scotland", "in": "accepted", "section": SEC_GOVLAW}),
        (DC, -5, "Deletes text in Clause 10 (Limitation of Liability), which the task did not ask to change.",
         "Unrequested edits reopen a settled clause and cost goodwill.",
         {"type": "contains", "pattern": "\\w", "in": "deleted", "section": SEC_LOL, "author": SC}),
    ],
    3: [
        (DC, 6, "Confines its tracked changes to Clause 9 (Indemnification) and leaves the rest of the agreement as it was.",
         "The instruction was to address indemnity exposure in Clause 9 only; edits elsewhere reopen agreed points.",
         {"type": "scope", "sections": [SEC_INDEMNITY], "author": BC}),
        (LC, 2, "Makes its edits as tracked changes under the author Buyer Counsel.",
         "The supplier must be able to see what the buyer proposes.",
         {"type": "author", "authors": [BC], "mode": "any"}),
        (CC, 6, "Inserts a cap of twelve (12) months' Fees on indemnity liability in Clause 9.",
         "Twelve months' fees is the buyer's approved position for its exposure under Clause 9.2.",
         {"type": "contains", "pattern": "twelve \\(12\\) months", "in": "inserted", "section": SEC_INDEMNITY, "author": BC}),
        (CAP, 4, "Explains the proposed cap in a comment by Buyer Counsel anchored in Clause 9.",
         "The supplier will accept a cap more readily if it sees that its own IP indemnity stays uncapped.",
         {"type": "comment", "author": BC, "section": SEC_INDEMNITY, "contains": "cap"}),
        (NQ, 3, "Shows no formatting revisions.",
         "Formatting revisions distract from the one substantive proposal.",
         {"type": "no_format_changes"}),
        (LC, 7, "Inserts carve-outs from the cap for fraud, wilful misconduct and third-party IP claims that are drafted clearly and consistently with the defined terms.",
         "A cap without these carve-outs is unenforceable in part (fraud) and unacceptable to the supplier (its IP indemnity); consistent defined terms avoid disputes about scope.",
         None),
    ],
}

# The attorney's verdicts on the LLM items: turn -> rubric index (1-based) -> output -> (verdict, reason)
LLM_VERDICTS = {
    3: {6: {
        "gold": ("PASS", "New Clause 9.4 caps liability under Clause 9 at twelve months' Fees and carves out fraud, wilful misconduct and Supplier's Clause 9.1 IP indemnity, using the defined terms Fees, Goods and Intellectual Property Rights."),
        "strong": ("FAIL", "The cap appended to Clause 9.2 carves out fraud only; wilful misconduct and third-party IP claims are not carved out."),
        "weak": ("FAIL", "\"Capped at 12 months of fees\" has no carve-outs at all and uses 'fees' rather than the defined term Fees."),
    }},
}

TASKS = [{"turn": t, "group": "g01"} for t in (1, 2, 3)]

# The buyer's clean draft (t1 compares it against the base).
COUNTERPARTY_DRAFT = "inputs/s3-t1-g01-counterparty-draft.docx"


# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------

def _apply(gen, office, doc, action, author, date):
    kind = action[0]
    if kind in ("bold", "underline"):
        from com.sun.star.awt.FontWeight import BOLD
        r = gen._search(doc, action[1])
        if kind == "bold":
            r.CharWeight = BOLD
        else:
            r.CharUnderline = 1  # com.sun.star.awt.FontUnderline.SINGLE
    elif kind in ("accept_para", "reject_para"):
        r = gen._search(doc, action[1])
        c = r.Text.createTextCursorByRange(r.Start)
        c.gotoStartOfParagraph(False)
        c.gotoEndOfParagraph(True)
        doc.getCurrentController().select(c)
        before = doc.Redlines.Count
        office.dispatch(doc, ".uno:AcceptTrackedChange" if kind == "accept_para" else ".uno:RejectTrackedChange")
        if doc.Redlines.Count >= before:
            raise gen.EditError("%s: nothing to accept/reject at %r" % (kind, action[1]))
    elif kind == "accept_all":
        office.dispatch(doc, ".uno:AcceptAllTrackedChanges")
    else:
        gen.apply_op(doc, action, author, date, doc.RecordChanges)


def make_output(gen, office, src, dst, date, passes, ops):
    work = os.path.join(tempfile.gettempdir(), "redjury_work_s3_%d.docx" % os.getpid())
    shutil.copyfile(src, work)
    doc = office.load(work)
    try:
        for author, record, op_ids in passes:
            office.set_author(author)
            doc.RecordChanges = record
            for op_id in op_ids:
                for action in ops[op_id]:
                    try:
                        _apply(gen, office, doc, action, author, date)
                    except gen.EditError as e:
                        raise gen.EditError("%s -> %s: %s" % (os.path.basename(dst), op_id, e))
        office.save_docx(doc, dst)
    finally:
        doc.close(True)
        os.remove(work)


def write_scenario_toml(gen):
    gen.write_scenario_toml(__import__(__name__))
    path = gen.rel("scenarios", DIR, "scenario.toml")
    with open(path, "a") as f:
        f.write("# Turn 1 is a comparison: the buyer's clean draft, to be compared against the base\n"
                "# (input) with every change attributed to the author \"Counterparty\".\n"
                "[compare]\n"
                "\"s3-t1-g01\" = %s\n" % gen.toml_str(COUNTERPARTY_DRAFT))


def build(office, gen, tmp):
    """Build every s3 file; returns [(task, {output: reward})] for the summary."""
    import checks
    sdir = gen.rel("scenarios", DIR)
    os.makedirs(os.path.join(sdir, "inputs"), exist_ok=True)
    base = os.path.join(sdir, "base.docx")
    gen.build_base(office, __import__(__name__), base)
    gen.normalize(base, BASE_DATE, [])
    write_scenario_toml(gen)
    all_dates = ["%04d-%02d-%02d" % TURN_DATES[t][:3] for t in TURN_DATES]

    # the buyer's clean draft = the t1 gold edits made without change tracking
    draft = os.path.join(sdir, COUNTERPARTY_DRAFT)
    make_output(gen, office, base, draft, TURN_DATES[1],
                [(BC, False, OUTPUTS[1]["gold"][0][2])], OPS[1])
    gen.normalize(draft, TURN_DATES[1], [])

    summary = []
    prev_gold = base
    for task in TASKS:
        turn, group = task["turn"], task["group"]
        side = TURNS[turn]
        me, other = SIDES[side], SIDES["B" if side == "A" else "A"]
        author, date = TASK_AUTHOR[turn], TURN_DATES[turn]
        gid = "%s-t%d-%s" % (ID, turn, group)
        name = gen.task_name(ID, turn, group, None)
        inp = os.path.join(sdir, "inputs", gid + ".docx")
        shutil.copyfile(prev_gold, inp)
        folders = {"gold": gen.rel("gold", "redlines"),
                   "strong": gen.rel("scenarios", "outputs", "strong"),
                   "weak": gen.rel("scenarios", "outputs", "weak")}
        built = {}
        for kind in ("gold", "strong", "weak"):
            out = os.path.join(folders[kind], name + ".docx")
            os.makedirs(folders[kind], exist_ok=True)
            make_output(gen, office, inp, out, date, OUTPUTS[turn][kind], OPS[turn])
            gen.normalize(out, date, all_dates)
            built[kind] = out

        rubrics = []
        for i, (cat, weight, criteria, justification, check) in enumerate(RUBRICS[turn], 1):
            r = dict(id="r%02d" % i, criteria=criteria, justification=justification, category=cat, weight=weight)
            if check is not None:
                r["kind"] = "check"
                r["check"] = check
            rubrics.append(r)
        taskobj = {
            "task_id": gen.task_id(ID, turn, group, None), "scenario_id": int(ID[1:]), "scenario_label": LABEL,
            "side": side, "level": turn, "input_group": gid, "variant": "a",
            "represented_party": me["party"], "counterparty": other["party"],
            "author": author,
            "input": "../scenarios/%s/inputs/%s.docx" % (DIR, gid),
            "expert": "../gold/redlines/%s.docx" % name,
            "rubrics": rubrics,
        }
        task_path = gen.rel("rubrics", name + ".json")
        with open(task_path, "w") as f:
            json.dump(taskobj, f, indent=2, ensure_ascii=False)
            f.write("\n")

        verdicts = {}
        for kind in ("gold", "strong", "weak"):
            vs = {}
            for i, r in enumerate(rubrics, 1):
                if r.get("kind") == "check":
                    ok, ev = checks.evaluate(task_path, taskobj, r["check"], built[kind])
                    vs[r["id"]] = {"verdict": "PASS" if ok else "FAIL", "reason": ev[0].upper() + ev[1:] + "."}
                else:
                    v, why = LLM_VERDICTS[turn][i][kind]
                    vs[r["id"]] = {"verdict": v, "reason": why}
            verdicts[kind] = vs
        with open(gen.rel("gold", "verdicts", name + ".json"), "w") as f:
            json.dump({"task_id": name, "outputs": verdicts}, f, indent=2, ensure_ascii=False)
            f.write("\n")
        summary.append((name, {k: gen.reward(rubrics, verdicts[k]) for k in verdicts}))
        prev_gold = built["gold"]
    return summary
