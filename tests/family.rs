//! The checks for the rest of the redlining task family — provenance,
//! fields, numbering, tables, stories, comment threads, sections by name,
//! and .xlsx outputs — each with a PASS and a FAIL per parameter and the
//! reason asserted, on fixtures built here, on the shared corpus's Word
//! files, and on spreadsheets made by LibreOffice Calc.
use std::path::{Path, PathBuf};

use crate::common::checks::{On, fail, pass, verdict};
use crate::common::*;
use redjury::PreparedCheck;
use redjury::Verdict;
use redjury::docx::Document;
use serde_json::{Value, json};

fn corpus(file: &str) -> Option<Document> {
    let dir = shared_corpus(file)?;
    Some(redjury::docx::load(&dir.join("pandoc").join(file)).expect("corpus file loads"))
}

#[test]
fn provenance() {
    let generated = Docx::body(&p("plain")).load();
    fail(json!({"type": "provenance", "application": "Word"}), &generated, "names no Application");
    fail(json!({"type": "provenance", "rsids": true}), &generated, "no w:rsid attributes");
    pass(json!({"type": "provenance", "rsids": false}), &generated);
    let other = Docx { app: Some("LibreOffice/7.4".into()), ..Docx::body(&p("x")) }.load();
    fail(
        json!({"type": "provenance", "application": "Microsoft Office Word"}),
        &other,
        "saved by \"LibreOffice/7.4\"",
    );
    let rsid = Docx {
        app: Some("Microsoft Office Word".into()),
        ..Docx::body(r#"<w:p w:rsidR="00A1B2C3" w:rsidRDefault="00A1B2C3"><w:r w:rsidRPr="00D4E5F6"><w:t>x</w:t></w:r></w:p>"#)
    }
    .load();
    assert_eq!(rsid.provenance.rsid_attributes, 3);
    let why = pass(json!({"type": "provenance", "application": "word", "rsids": true}), &rsid);
    assert!(why.contains("3 w:rsid attributes"), "{why}");
    fail(json!({"type": "provenance", "rsids": false}), &rsid, "saved by Word");
    // A body written by a script into a Word template: the template's
    // settings.xml lists Word's sessions, the body has no rsid. It passed
    // as "saved by Word".
    let templated = Docx {
        app: Some("Microsoft Office Word".into()),
        settings: Some(
            r#"<w:rsids><w:rsidRoot w:val="00A1B2C3"/><w:rsid w:val="00A1B2C3"/></w:rsids>"#.into(),
        ),
        ..Docx::body(&p("written by a script"))
    }
    .load();
    assert!(templated.provenance.rsids_in_settings);
    fail(json!({"type": "provenance", "rsids": true}), &templated, "no w:rsid attributes");
    if let Some(word) = corpus("cross_reference.docx") {
        pass(
            json!({"type": "provenance", "application": "^Microsoft Office Word$", "rsids": true}),
            &word,
        );
    }
}

fn ref_field(target: &str, shown: &str) -> String {
    format!(
        r#"<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> REF {target} \h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>{shown}</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>"#
    )
}

fn heading(level: u8, text: &str) -> String {
    format!(r#"<w:p><w:pPr><w:pStyle w:val="Heading{level}"/></w:pPr>{}</w:p>"#, run(text))
}

fn toc(entries: &[&str]) -> String {
    let mut out = String::new();
    for (i, e) in entries.iter().enumerate() {
        let begin = if i == 0 {
            r#"<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> TOC \o "1-3" \h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>"#
        } else {
            ""
        };
        let end = if i + 1 == entries.len() {
            r#"<w:r><w:fldChar w:fldCharType="end"/></w:r>"#
        } else {
            ""
        };
        let (text, page) = e.split_once('|').unwrap();
        out.push_str(&format!(
            r#"<w:p><w:pPr><w:pStyle w:val="TOC1"/></w:pPr>{begin}{}<w:r><w:tab/></w:r>{}{end}</w:p>"#,
            run(text),
            run(page)
        ));
    }
    out
}

#[test]
fn fields() {
    let body = format!(
        "{}{}<w:p><w:bookmarkStart w:id=\"0\" w:name=\"_RefCap\"/>{}<w:bookmarkEnd w:id=\"0\"/></w:p>{}<w:p>{}{}</w:p>",
        toc(&["Fees|1", "Liability|1"]),
        heading(1, "Fees"),
        run("The cap on liability is 150%."),
        heading(1, "Liability"),
        run("See clause "),
        ref_field("_RefCap", "9.2"),
    );
    let good = Docx::body(&body).load();
    assert_eq!(good.fields.iter().filter(|f| f.kind() == "REF").count(), 1);
    let why = pass(json!({"type": "fields"}), &good);
    assert!(why.contains("1 cross-references resolve"), "{why}");
    pass(json!({"type": "fields", "toc": true}), &good);
    pass(
        json!({"type": "fields", "bookmark": "_RefCap", "target_text": "cap on liability"}),
        &good,
    );
    fail(
        json!({"type": "fields", "bookmark": "_RefCap", "target_text": "indemnity"}),
        &good,
        "without \"indemnity\"",
    );
    fail(json!({"type": "fields", "bookmark": "_Gone"}), &good, "no bookmark named _Gone");
    // A reference whose bookmark was deleted, and the text Word then shows.
    let broken = Docx::body(&format!(
        "<w:p>{}</w:p>",
        ref_field("_Ref404", "Error! Reference source not found.")
    ))
    .load();
    fail(
        json!({"type": "fields"}),
        &broken,
        "1 of 1 cross-references point at no bookmark (first: _Ref404)",
    );
    fail(
        json!({"type": "fields", "references": false}),
        &broken,
        "Error! Reference source not found.",
    );
    // A stale table of contents.
    let stale = Docx::body(&format!(
        "{}{}{}",
        toc(&["Fees|1", "Term|1"]),
        heading(1, "Fees"),
        heading(1, "Liability")
    ))
    .load();
    fail(
        json!({"type": "fields", "toc": true}),
        &stale,
        "entry 2 reads \"Term\", the heading \"Liability\"",
    );
    fail(
        json!({"type": "fields", "toc": true}),
        &Docx::body(&p("x")).load(),
        "no table of contents",
    );
    // A plain REF and a PAGEREF to a clause deleted with tracking on: the
    // bookmark is gone once the changes are accepted. Only numbered REFs
    // were caught ("4 cross-references resolve" on a held-out file).
    for kind in ["REF", "PAGEREF", "NOTEREF"] {
        let deleted = format!(
            r#"<w:p><w:pPr><w:rPr><w:del w:id="9" w:author="A"/></w:rPr></w:pPr><w:bookmarkStart w:id="0" w:name="_RefGone"/><w:del w:id="8" w:author="A"><w:r><w:delText>Gone clause.</w:delText></w:r></w:del><w:bookmarkEnd w:id="0"/></w:p><w:p>{}</w:p><w:p>{}</w:p>"#,
            run("tail"),
            ref_field("_RefGone", "3").replace(" REF ", &format!(" {kind} "))
        );
        fail(
            json!({"type": "fields"}),
            &Docx::body(&deleted).load(),
            &format!(
                "the {kind} cross-reference to _RefGone points at a paragraph deleted in the accepted state"
            ),
        );
    }
    // Regression (issue 39): a plain REF whose bookmark spans only a
    // sentence deleted inside a paragraph that stays passed; once accepted,
    // the bookmark is gone and the field shows "Error! Reference source
    // not found.". A bookmark over kept text, or a point, still resolves.
    let sentence = |bookmarked: &str| {
        format!(
            r#"<w:p>{}<w:bookmarkStart w:id="0" w:name="_RefSentence"/>{bookmarked}<w:bookmarkEnd w:id="0"/></w:p><w:p>{}</w:p>"#,
            run("Kept text. "),
            ref_field("_RefSentence", "Gone sentence.")
        )
    };
    let gone =
        r#"<w:del w:id="8" w:author="A"><w:r><w:delText>Gone sentence.</w:delText></w:r></w:del>"#;
    fail(
        json!({"type": "fields"}),
        &Docx::body(&sentence(gone)).load(),
        "the REF cross-reference to _RefSentence points at a bookmark whose text is all deleted in the accepted state",
    );
    let partly = format!("{gone}{}", run("Kept sentence."));
    pass(json!({"type": "fields"}), &Docx::body(&sentence(&partly)).load());
    pass(json!({"type": "fields"}), &Docx::body(&sentence("")).load());
    if let Some(word) = corpus("cross_reference.docx") {
        pass(json!({"type": "fields"}), &word);
    }
}

/// Clause 7.4 deleted with tracking on: 7.5 becomes 7.4, and a `REF \r`
/// to it must show the new number (updated as a tracked change or not).
#[test]
fn a_clause_number_reference_follows_a_deletion() {
    let target = r#"<w:bookmarkStart w:id="0" w:name="_RefStock"/><w:r><w:t>Keep stock.</w:t></w:r><w:bookmarkEnd w:id="0"/>"#;
    let reference = |shown: &str| {
        format!(
            r#"<w:r><w:t xml:space="preserve">Breach of clause </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> REF _RefStock \r \h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>{shown}<w:r><w:fldChar w:fldCharType="end"/></w:r>"#
        )
    };
    let doc = |deleted: bool, shown: &str| {
        let gone = if deleted {
            r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr><w:rPr><w:del w:id="9" w:author="A"/></w:rPr></w:pPr><w:del w:id="8" w:author="A"><w:r><w:delText>No competing products.</w:delText></w:r></w:del></w:p>"#.to_string()
        } else {
            np(1, 1, &run("No competing products."))
        };
        let body = format!(
            "{}{}{}{}{}{}",
            np(1, 0, &run("Obligations")),
            np(1, 1, &run("Sell.")),
            gone,
            np(1, 1, target),
            np(1, 0, &run("Termination")),
            np(1, 1, &reference(shown)),
        );
        Docx { body, numbering: Some(contract_numbering()), ..Default::default() }.load()
    };
    let before = doc(false, &run("1.3"));
    pass(json!({"type": "fields"}), &before);
    let tracked_update = r#"<w:del w:id="5" w:author="A"><w:r><w:delText>1.3</w:delText></w:r></w:del><w:ins w:id="6" w:author="A"><w:r><w:t>1.2</w:t></w:r></w:ins>"#;
    let updated = doc(true, tracked_update);
    assert_eq!(updated.fields[0].result, "1.2", "the result once changes are accepted");
    pass(json!({"type": "fields"}), &updated);
    pass(json!({"type": "fields"}), &doc(true, &run("1.2")));
    fail(
        json!({"type": "fields"}),
        &doc(true, &run("1.3")),
        "the cross-reference to _RefStock shows \"1.3\", but its target is now numbered 1.2",
    );
    pass(json!({"type": "fields", "references": false}), &doc(true, &run("1.3")));
}

/// Sections 7 and 8 with clauses; `clauses` are (numId, ilvl, inner XML).
fn numbered(clauses: &[(u32, u32, String)], extra_numbering: &str) -> Document {
    let mut body = np(1, 0, &run("Services"));
    for (num, lvl, inner) in clauses {
        body.push_str(&np(*num, *lvl, inner));
    }
    body.push_str(&np(1, 0, &run("Fees")));
    body.push_str(&np(1, 1, &run("Fees are due.")));
    Docx {
        body,
        numbering: Some(format!("{}{extra_numbering}", contract_numbering())),
        ..Default::default()
    }
    .load()
}

#[test]
fn numbering() {
    // Clause 1.3 deleted whole (text and paragraph mark): Word renumbers.
    let deleted = format!(
        r#"<w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr><w:rPr><w:del w:id="9" w:author="A" w:date="2025-01-01T00:00:00Z"/></w:rPr></w:pPr>{}"#,
        del(10, "A", "Third clause.")
    );
    let body = [
        (1, 1, run("First.")),
        (1, 1, run("Second.")),
        (0, 0, String::new()),
        (1, 1, run("Fourth.")),
        (1, 1, run("Fifth.")),
    ];
    let mut clauses: Vec<(u32, u32, String)> = body.to_vec();
    clauses[2] = (99, 99, deleted); // placeholder replaced below
    let mut xml = np(1, 0, &run("Services"));
    for (i, (n, l, inner)) in clauses.iter().enumerate() {
        if i == 2 {
            xml.push_str(&format!("<w:p>{inner}</w:p>"));
        } else {
            xml.push_str(&np(*n, *l, inner));
        }
    }
    let renumbered =
        Docx { body: xml, numbering: Some(contract_numbering()), ..Default::default() }.load();
    let why = pass(json!({"type": "numbering", "section": "1"}), &renumbered);
    assert!(why.contains("4 labels at level 2 are consecutive (1.1 … 1.4)"), "{why}");
    // A second list that continues at 1.4 leaves a gap after 1.2.
    let gap_list = r#"<w:abstractNum w:abstractNumId="3"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="4"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/></w:lvl></w:abstractNum><w:num w:numId="3"><w:abstractNumId w:val="3"/></w:num>"#;
    let gap = numbered(
        &[(1, 1, run("First.")), (1, 1, run("Second.")), (3, 1, run("Fourth."))],
        gap_list,
    );
    fail(
        json!({"type": "numbering", "section": "1"}),
        &gap,
        "label 1.4 skips after the previous one (numbers 2 then 4)",
    );
    pass(json!({"type": "numbering", "section": "2"}), &gap);
    fail(
        json!({"type": "numbering", "section": "9"}),
        &gap,
        "section 9 is not in the document's numbering",
    );
    pass(json!({"type": "numbering", "level": 1}), &gap);
}

fn cell(inner: &str) -> String {
    format!("<w:tc><w:p>{inner}</w:p></w:tc>")
}

fn pricing(with_changes: bool) -> String {
    let row_mark = |kind: &str| {
        format!(
            r#"<w:trPr><w:{kind} w:id="{}" w:author="A" w:date="2025-01-01T00:00:00Z"/></w:trPr>"#,
            if kind == "ins" { 30 } else { 31 }
        )
    };
    let fee = if with_changes {
        format!("{}{}", del(20, "A", "120,000"), ins(21, "A", "132,000"))
    } else {
        run("132,000")
    };
    let mut t = format!(
        "<w:tbl><w:tr>{}{}</w:tr><w:tr>{}{}</w:tr>",
        cell(&run("Item")),
        cell(&run("Fee (GBP)")),
        cell(&run("Platform")),
        cell(&fee)
    );
    if with_changes {
        t.push_str(&format!(
            "<w:tr>{}{}{}</w:tr>",
            row_mark("ins"),
            cell(&ins(22, "A", "Support")),
            cell(&ins(23, "A", "15,000"))
        ));
        t.push_str(&format!(
            "<w:tr>{}{}{}</w:tr>",
            row_mark("del"),
            cell(&del(24, "A", "Training")),
            cell(&del(25, "A", "5,000"))
        ));
    } else {
        t.push_str(&format!("<w:tr>{}{}</w:tr>", cell(&run("Support")), cell(&run("£15,000"))));
    }
    t.push_str("</w:tbl>");
    format!("{}{t}{}", p("4. Fees"), p("after"))
}

#[test]
fn tables() {
    let doc = Docx::body(&pricing(true)).load();
    let why = pass(
        json!({"type": "table", "index": 1, "rows_inserted": {"min": 1, "max": 1}, "rows_deleted": {"min": 1}, "cells_changed": {"min": 1, "max": 1}}),
        &doc,
    );
    assert!(why.contains("1 rows inserted, 1 deleted, 1 cells changed"), "{why}");
    fail(
        json!({"type": "table", "index": 1, "rows_deleted": {"max": 0}}),
        &doc,
        "1 rows deleted by A (wanted ≤ 0)",
    );
    fail(
        json!({"type": "table", "index": 1, "rows_inserted": {"min": 1}, "author": "B"}),
        &doc,
        "0 rows inserted by B",
    );
    pass(
        json!({"type": "table", "header": "fee (gbp)", "cells": {"R2C2": "132,000", "R3C1": "Support"}}),
        &doc,
    );
    fail(
        json!({"type": "table", "index": 1, "cells": {"R2C2": "120,000"}}),
        &doc,
        "cell R2C2 reads \"132,000\", not \"120,000\"",
    );
    fail(
        json!({"type": "table", "index": 1, "cells": {"R9C1": "x"}}),
        &doc,
        "the table has no cell R9C1",
    );
    fail(
        json!({"type": "table", "index": 2, "cells": {"R1C1": "x"}}),
        &doc,
        "the document has 1 tables, not 2",
    );
    fail(
        json!({"type": "table", "header": "Rates", "cells": {"R1C1": "x"}}),
        &doc,
        "no table has a header row with \"Rates\"",
    );
    // Against a gold .docx: the same after accepting, exactly or as numbers.
    let dir = temp_dir("family-table");
    std::fs::write(dir.join("gold.docx"), Docx::body(&pricing(false)).bytes()).unwrap();
    let gold = |compare: &str| json!({"type": "table", "index": 1, "gold_docx": "gold.docx", "match": compare});
    let on = On { base: dir.to_path_buf(), ..On::default() };
    let check = |v: Value| verdict(&v, &doc, &on);
    let (v, why) = check(gold("exact"));
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(why.contains("row 3 column 2 reads \"15,000\", the gold \"£15,000\""), "{why}");
    let (v, why) = check(gold("numeric"));
    assert_eq!(v, Verdict::Pass, "{why}");
    // Parameters are validated when tasks load.
    let e = PreparedCheck::from_json(
        &json!({"type": "table", "index": 1, "section": "4"}),
        Path::new("."),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("exactly one of index, section and header"), "{e}");
    let e = PreparedCheck::from_json(
        &json!({"type": "table", "index": 1, "cells": {"B2": "x"}}),
        Path::new("."),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("\"B2\" is not a cell address like \"R2C3\""), "{e}");
    // A row that starts one grid column in (w:gridBefore) keeps its cells
    // under the columns a reader sees them in.
    let tc = |t: &str| format!("<w:tc><w:p>{}</w:p></w:tc>", run(t));
    let shifted = Docx::body(&format!(
        "<w:tbl><w:tr>{}{}{}</w:tr><w:tr><w:trPr><w:gridBefore w:val=\"1\"/></w:trPr>{}{}</w:tr></w:tbl>",
        tc("Model"),
        tc("Description"),
        tc("Price"),
        tc("Gauge"),
        tc("1,200")
    ))
    .load();
    pass(
        json!({"type": "table", "index": 1, "cells": {"R2C2": "Gauge", "R2C3": "1,200"}}),
        &shifted,
    );
}

#[test]
fn patterns_search_the_stories_asked_for() {
    let doc = Docx {
        body: p("The Vendor shall deliver."),
        header: Some(p("Supplier confidential")),
        footer: Some(p("Page 1")),
        footnotes: Some(r#"<w:footnote w:id="1"><w:p><w:r><w:t>Supplier means Lumenfold.</w:t></w:r></w:p></w:footnote>"#.into()),
        ..Default::default()
    }
    .load();
    pass(json!({"type": "not_contains", "pattern": "Supplier", "in": "accepted"}), &doc);
    fail(
        json!({"type": "not_contains", "pattern": "Supplier", "in": "accepted", "stories": ["all"]}),
        &doc,
        "accepted text in all stories contains \"Supplier\" (in the headers: \"Supplier confidential\")",
    );
    fail(
        json!({"type": "not_contains", "pattern": "Supplier", "in": "accepted", "stories": ["headers"]}),
        &doc,
        "in headers contains",
    );
    pass(
        json!({"type": "not_contains", "pattern": "Supplier", "in": "accepted", "stories": ["body", "footers"]}),
        &doc,
    );
    pass(
        json!({"type": "contains", "pattern": "Lumenfold", "in": "accepted", "stories": ["footnotes"]}),
        &doc,
    );
    let e = PreparedCheck::from_json(
        &json!({"type": "contains", "pattern": "x", "in": "accepted", "stories": ["margins"]}),
        Path::new("."),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("unknown variant `margins`"), "{e}");
}

/// A defined term renamed with tracking on in a header and a footnote:
/// the accepted text of those stories gained a space at every tracked
/// boundary ("the Manufacturer ’s registered office", "for all
/// Distributor s"), so a correct redline failed `contains` there.
#[test]
fn the_accepted_text_of_every_story_joins_as_the_bodys_does() {
    let renamed = format!(
        "{}{}{}",
        run("(the "),
        del(1, "A", "Manufacturer") + &ins(2, "A", "Supplier"),
        run(")")
    );
    let footnote = format!(
        r#"<w:footnote w:id="1"><w:p>{}{}{}{}</w:p></w:footnote>"#,
        run("the "),
        del(3, "A", "Manufacturer") + &ins(4, "A", "Supplier"),
        run("’s registered office, for all Distributor"),
        ins(5, "A", "s")
    );
    let doc = Docx {
        body: format!("<w:p>{renamed}</w:p>"),
        header: Some(format!("<w:p>{renamed}</w:p>")),
        footnotes: Some(footnote),
        ..Default::default()
    }
    .load();
    for (story, pattern) in [
        ("body", r"\(the Supplier\)"),
        ("headers", r"\(the Supplier\)"),
        ("footnotes", "the Supplier’s registered office, for all Distributors"),
    ] {
        pass(
            json!({"type": "contains", "pattern": pattern, "in": "accepted", "stories": [story]}),
            &doc,
        );
    }
    pass(
        json!({"type": "contains", "pattern": "^Supplier s$", "in": "inserted", "stories": ["footnotes"]}),
        &doc,
    );
}

fn threads(done: [&str; 3], reply_author: &str) -> Document {
    let comment = |id: u32, author: &str, para: &str, text: &str| {
        format!(
            r#"<w:comment w:id="{id}" w:author="{author}"><w:p w14:paraId="{para}"><w:r><w:t>{text}</w:t></w:r></w:p></w:comment>"#
        )
    };
    Docx {
        body: format!(
            r#"<w:p><w:commentRangeStart w:id="0"/>{}<w:commentRangeEnd w:id="0"/><w:r><w:commentReference w:id="0"/></w:r><w:commentRangeStart w:id="1"/>{}<w:commentRangeEnd w:id="1"/><w:r><w:commentReference w:id="1"/></w:r><w:r><w:commentReference w:id="2"/></w:r><w:r><w:commentReference w:id="3"/></w:r></w:p>"#,
            run("Fees "),
            run("Liability")
        ),
        comments: Some(format!(
            "{}{}{}{}",
            comment(0, "B", "00000001", "Why quarterly?"),
            comment(1, "B", "00000002", "Cap too low."),
            comment(2, reply_author, "00000003", "Cash flow."),
            comment(3, "A", "00000004", "Agreed at 150%."),
        )),
        comments_extended: Some(format!(
            r#"<w15:commentEx w15:paraId="00000001" w15:done="{}"/><w15:commentEx w15:paraId="00000002" w15:done="{}"/><w15:commentEx w15:paraId="00000003" w15:paraIdParent="00000001" w15:done="{}"/><w15:commentEx w15:paraId="00000004" w15:paraIdParent="00000002" w15:done="0"/>"#,
            done[0], done[1], done[2]
        )),
        ..Default::default()
    }
    .load()
}

#[test]
fn comment_threads() {
    let doc = threads(["1", "0", "0"], "A");
    let why = pass(json!({"type": "comment", "replied_by": "A"}), &doc);
    assert!(why.contains("all 2 threads opened by others have a reply by A"), "{why}");
    let lazy = threads(["1", "0", "0"], "B");
    fail(
        json!({"type": "comment", "replied_by": "A"}),
        &lazy,
        "1 of 2 threads opened by others have no reply by A (first: \"Why quarterly?\")",
    );
    pass(json!({"type": "comment", "replied_by": "A", "threads": "Cap"}), &lazy);
    // B opened both threads: none needs B's own reply.
    let why = pass(json!({"type": "comment", "replied_by": "B"}), &doc);
    assert!(why.contains("no thread opened by another author needs a reply by B"), "{why}");
    pass(json!({"type": "comment", "done_exactly": ["quarterly"]}), &doc);
    fail(
        json!({"type": "comment", "done_exactly": ["quarterly", "Cap"]}),
        &doc,
        "1 threads are marked done: 0 that should not be, 1 named ones still open",
    );
    fail(
        json!({"type": "comment", "done_exactly": ["Liability"]}),
        &doc,
        "1 that should not be, 1 named ones still open",
    );
    fail(json!({"type": "comment", "done_exactly": ["[a-z]"]}), &doc, "names 2 threads, not one");
    let e = PreparedCheck::from_json(&json!({"type": "comment", "threads": "x"}), Path::new("."))
        .err()
        .unwrap();
    assert!(e.to_string().contains("replied_by, done_exactly or both"), "{e}");
}

#[test]
fn sections_by_name() {
    let body = format!(
        "{}{}{}{}",
        np(1, 0, &run("Limitation of Liability")),
        np(1, 1, &format!("{}{}", run("The cap is "), ins(1, "A", "150%"))),
        np(1, 0, &run("Schedule B – Fees")),
        np(1, 1, &run("Fees are due.")),
    );
    let doc = Docx { body, numbering: Some(contract_numbering()), ..Default::default() }.load();
    pass(json!({"type": "scope", "sections": ["limitation of  liability"]}), &doc);
    pass(
        json!({"type": "contains", "pattern": "150", "in": "inserted", "section": "LIMITATION OF LIABILITY"}),
        &doc,
    );
    fail(
        json!({"type": "contains", "pattern": "150", "in": "inserted", "section": "Schedule B - Fees"}),
        &doc,
        "no match",
    );
    fail(
        json!({"type": "scope", "sections": ["Governing Law"]}),
        &doc,
        "no section is labelled or titled \"Governing Law\"; sections include",
    );
    // One-word titles are titles; labels are labels.
    let one_word = format!(
        "{}{}",
        np(1, 0, &run("Termination")),
        np(1, 1, &format!("{}{}", run("Either party "), ins(2, "A", "may")))
    );
    let doc =
        Docx { body: one_word, numbering: Some(contract_numbering()), ..Default::default() }.load();
    pass(
        json!({"type": "contains", "pattern": "may", "in": "inserted", "section": "termination"}),
        &doc,
    );
    fail(
        json!({"type": "scope", "sections": ["7.3"]}),
        &doc,
        "section 7.3 is not in the document's numbering",
    );
    fail(
        json!({"type": "scope", "sections": ["Term"]}),
        &doc,
        "no section is labelled or titled \"Term\"",
    );
}

#[test]
fn a_section_name_the_input_lacks_is_a_load_error() {
    let dir = temp_dir("family-load");
    let body = format!(
        "{}{}",
        np(1, 0, &run("Limitation of Liability")),
        np(1, 1, &run("The cap is 200%."))
    );
    std::fs::write(
        dir.join("input.docx"),
        Docx { body, numbering: Some(contract_numbering()), ..Default::default() }.bytes(),
    )
    .unwrap();
    let task = |section: &str| {
        json!({"task_id": "t", "scenario_id": 1, "side": "A", "level": 1, "input_group": "s1-t1-g01", "represented_party": "A", "counterparty": "B", "author": "A", "input": "input.docx",
               "rubrics": [{"id": "r1", "criteria": "scope", "category": "Legal correctness", "weight": 5, "kind": "check", "check": {"type": "scope", "sections": [section]}}]})
    };
    std::fs::write(dir.join("t.json"), task("Limitation of Liability").to_string()).unwrap();
    redjury::load_tasks(&dir).expect("a name the input has loads");
    std::fs::write(dir.join("t.json"), task("Limitation of Liabilty").to_string()).unwrap();
    let e = redjury::load_tasks(&dir).err().unwrap().to_string();
    assert!(e.contains("rubric r1: no section is labelled or titled \"Limitation of Liabilty\"; sections include \"1. Limitation of Liability\""), "{e}");
    // A label the input lacks loads: an output may add that clause.
    std::fs::write(dir.join("t.json"), task("1.4").to_string()).unwrap();
    redjury::load_tasks(&dir).expect("a label to come loads");
}

/// A one-word name that titles two sections ("Notices" for 1.1 and 2.1)
/// failed at scoring time: the load-time check skipped names without a
/// space or under 13 characters.
#[test]
fn a_short_name_that_titles_two_sections_is_a_load_error() {
    let dir = temp_dir("family-ambiguous");
    let body = [
        np(1, 0, &run("Supply")),
        np(1, 1, &run("Notices")),
        np(1, 0, &run("Distribution")),
        np(1, 1, &run("Notices")),
    ]
    .concat();
    std::fs::write(
        dir.join("input.docx"),
        Docx { body, numbering: Some(contract_numbering()), ..Default::default() }.bytes(),
    )
    .unwrap();
    let task = json!({"task_id": "t", "scenario_id": 1, "side": "A", "level": 1, "input_group": "s1-t1-g01", "represented_party": "A", "counterparty": "B", "author": "A", "input": "input.docx",
        "rubrics": [{"id": "r1", "criteria": "scope", "category": "Legal correctness", "weight": 5, "kind": "check", "check": {"type": "not_contains", "pattern": "x", "in": "inserted", "section": "Notices"}}]});
    std::fs::write(dir.join("t.json"), task.to_string()).unwrap();
    let e = redjury::load_tasks(&dir).err().unwrap().to_string();
    assert!(
        e.contains("rubric r1: \"Notices\" names 2 sections: 1.1 (\"Notices\"), 2.1 (\"Notices\"); use the label (in the task's input)"),
        "{e}"
    );
}

/// An .xlsx built part by part: shared and inline strings, a date cell,
/// a duration, a merged range and a data validation.
fn workbook(b3: &str) -> Vec<u8> {
    let sheet = format!(
        r#"<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>132000</v></c></row><row r="3"><c r="A3" t="inlineStr"><is><t>Term</t></is></c><c r="B3" t="inlineStr"><is><t>{b3}</t></is></c></row><row r="4"><c r="A4" t="s"><v>3</v></c><c r="B4" s="1"><v>45688</v></c></row><row r="5"><c r="A5" t="inlineStr"><is><t>Response time</t></is></c><c r="B5" s="2"><v>1.5</v></c></row><row r="6"><c r="A6" t="inlineStr"><is><t>Territories</t></is></c><c r="B6" t="inlineStr"><is><t>UK; Ireland ; France</t></is></c></row><row r="8"><c r="A8" t="inlineStr"><is><t>Signed by both</t></is></c></row></sheetData><mergeCells count="1"><mergeCell ref="A8:B8"/></mergeCells><dataValidations count="1"><dataValidation type="list" sqref="B3"><formula1>"12 months,24 months,36 months"</formula1></dataValidation></dataValidations></worksheet>"#
    );
    let strings = r#"<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>Deal point</t></si><si><t>Value</t></si><si><r><t>Annual </t></r><r><t>fee</t></r><rPh><t>ignored</t></rPh></si><si><t>Start date</t></si></sst>"#;
    let styles = r#"<?xml version="1.0"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><numFmts count="1"><numFmt numFmtId="164" formatCode="[h]:mm"/></numFmts><cellXfs count="3"><xf numFmtId="0"/><xf numFmtId="14"/><xf numFmtId="164"/></cellXfs></styleSheet>"#;
    let rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
    zip_files(&[
        ("[Content_Types].xml", br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#),
        ("_rels/.rels", format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#).as_bytes()),
        ("xl/workbook.xml", br#"<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Term sheet" sheetId="1" r:id="rId1"/><sheet name="Notes" sheetId="2" r:id="rId2"/></sheets></workbook>"#),
        ("xl/_rels/workbook.xml.rels", format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{rel}/worksheet" Target="worksheets/sheet2.xml"/><Relationship Id="rId3" Type="{rel}/sharedStrings" Target="sharedStrings.xml"/><Relationship Id="rId4" Type="{rel}/styles" Target="styles.xml"/></Relationships>"#).as_bytes()),
        ("xl/worksheets/sheet1.xml", sheet.as_bytes()),
        ("xl/worksheets/sheet2.xml", br#"<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData/></worksheet>"#),
        ("xl/sharedStrings.xml", strings.as_bytes()),
        ("xl/styles.xml", styles.as_bytes()),
    ])
}

fn xlsx_check(v: Value, book: &redjury::xlsx::Workbook) -> (Verdict, String) {
    let check = redjury::PreparedCheck::from_json(&v, Path::new("."))
        .unwrap_or_else(|e| panic!("{v}: {e}"));
    redjury::evaluate_workbook_checks(&[&check], book).pop().unwrap()
}

#[test]
fn xlsx_reading_and_cells() {
    let book = redjury::xlsx::from_bytes(workbook("24 months"), Default::default()).unwrap();
    let s = &book.sheets[0];
    assert_eq!(s.name, "Term sheet");
    let text = |a: &str| s.cells[&redjury::xlsx::a1(a).unwrap()].text();
    assert_eq!(text("A2"), "Annual fee", "rich text runs joined, phonetic guide left out");
    assert_eq!(text("B2"), "132000");
    assert_eq!(text("B4"), "2025-01-31", "a date format makes the serial a date");
    assert_eq!(text("B5"), "36:00", "[h]:mm makes it a duration");
    assert_eq!((s.merged.clone(), s.validations), (vec!["A8:B8".to_string()], 1));
    let key = json!({"type": "xlsx_cells", "cells": {"B2": 132000, "B3": "24 MONTHS", "B4": "2025-01-31", "B5": "36:00"}});
    let (v, why) = xlsx_check(key.clone(), &book);
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(why.contains("4 of 4 cells match the key"), "{why}");
    let wrong = redjury::xlsx::from_bytes(workbook("36 months"), Default::default()).unwrap();
    let (v, why) = xlsx_check(key, &wrong);
    assert_eq!(v, Verdict::Fail);
    assert!(why.contains("3 of 4 cells match the key (need 4); first: B3 reads \"36 months\", the key \"24 MONTHS\""), "{why}");
    let (v, _) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B2": 132000, "B3": "24 months"}, "min_correct": 0.5}),
        &wrong,
    );
    assert_eq!(v, Verdict::Pass, "partial credit threshold");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B3": "24 months"}, "match": "exact"}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "{why}");
    let (v, _) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B3": "24 MONTHS"}, "match": "exact"}),
        &book,
    );
    assert_eq!(v, Verdict::Fail, "exact keeps case");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B2": "132,000.004"}, "match": "numeric", "tolerance": 0.01}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "{why}");
    let (v, _) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B2": "132,001"}, "match": "numeric"}),
        &book,
    );
    assert_eq!(v, Verdict::Fail);
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B4": "31 January 2025", "A4": "31/01/2025"}, "match": "date", "min_correct": 0.5}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "a date cell against a written date: {why}");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B4": "1 February 2025"}, "match": "date"}),
        &book,
    );
    assert_eq!(v, Verdict::Fail);
    assert!(why.contains("B4 reads \"2025-01-31\", the key \"1 February 2025\""), "{why}");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B6": "france;UK;Ireland"}, "separator": ";"}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "{why}");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "rows": {"range": "A2:B6", "expected": [["Annual fee", 132000], ["Term", "24 months"], ["Renewal", "auto"]], "min_recall": 0.6}}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(why.contains("2 of 3 expected rows found in A2:B6"), "{why}");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "rows": {"range": "A2:B6", "expected": [["Renewal", "auto"]]}}),
        &book,
    );
    assert_eq!(v, Verdict::Fail, "{why}");
    // The whole sheet as a range costs what the sheet holds, not 1.7·10^10 addresses.
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "rows": {"range": "A1:XFD1048576", "expected": [["Term", "24 months"], ["Signed by both"]]}}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "{why}");
    // A merged range shows its top-left value in each of its cells.
    let (v, why) =
        xlsx_check(json!({"type": "xlsx_cells", "cells": {"B8": "signed by both"}}), &book);
    assert_eq!(v, Verdict::Pass, "{why}");
    // Currency and a thousands separator in the key, as for table cells.
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "cells": {"B2": "EUR 132,000"}, "match": "numeric"}),
        &book,
    );
    assert_eq!(v, Verdict::Pass, "{why}");
    let template = json!({"type": "xlsx_cells", "template": {"sheets": ["Term sheet", "Notes"], "header": ["Deal point", "Value"], "data_validation": true}});
    assert_eq!(xlsx_check(template, &book).0, Verdict::Pass);
    let (v, why) =
        xlsx_check(json!({"type": "xlsx_cells", "template": {"sheets": ["Checklist"]}}), &book);
    assert_eq!(v, Verdict::Fail);
    assert!(why.contains("the template's sheet \"Checklist\" is missing"), "{why}");
    let (v, why) = xlsx_check(
        json!({"type": "xlsx_cells", "template": {"header": ["Deal point", "Amount"]}}),
        &book,
    );
    assert_eq!(v, Verdict::Fail);
    assert!(
        why.contains("header row 1 column 2 reads \"Value\", the template \"Amount\""),
        "{why}"
    );
    // A .docx check on a spreadsheet, and the reverse, say so.
    let (v, why) = xlsx_check(json!({"type": "author", "authors": ["A"]}), &book);
    assert_eq!(
        (v, why.as_str()),
        (Verdict::Fail, "this check reads a .docx, and the output is a spreadsheet")
    );
    fail(
        json!({"type": "xlsx_cells", "cells": {"A1": "x"}}),
        &Docx::body(&p("x")).load(),
        "the output is a .docx",
    );
}

#[test]
fn hostile_spreadsheets_are_refused_like_hostile_documents() {
    let dtd = zip_files(&[
        ("_rels/.rels", br#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#),
        ("xl/workbook.xml", br#"<?xml version="1.0"?><!DOCTYPE w [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets/></workbook>"#),
    ]);
    let e = redjury::xlsx::from_bytes(dtd, Default::default()).err().unwrap().to_string();
    assert!(e.contains("declares a DTD"), "{e}");
    let e = redjury::xlsx::from_bytes(workbook("&bomb;"), Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("undeclared entity &bomb;"), "{e}");
    // 80 MB of zeros in one sheet part: above the per-part limit and ratio.
    let zeros = vec![b' '; 80 << 20];
    let bomb = zip_files(&[("xl/workbook.xml", &zeros)]);
    assert!(bomb.len() < 1 << 20, "a small file");
    let e = redjury::xlsx::from_bytes(bomb, Default::default()).err().unwrap().to_string();
    assert!(e.contains("larger than") || e.contains("inflates"), "{e}");
    assert!(e.contains(".xlsx") || !e.contains(".docx"), "speaks of spreadsheets: {e}");
    let e = redjury::xlsx::from_bytes(b"not a zip".to_vec(), Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(!e.is_empty());
}

/// Spreadsheets LibreOffice Calc made (tests/fixtures/xlsx; see its README).
#[test]
fn spreadsheets_made_by_libreoffice_calc() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xlsx");
    let book = redjury::xlsx::load(&dir.join("term-sheet-calc.xlsx")).unwrap();
    let s = &book.sheets[0];
    let text =
        |a: &str| s.cells.get(&redjury::xlsx::a1(a).unwrap()).map(|c| c.text()).unwrap_or_default();
    assert_eq!(s.name, "Term sheet");
    assert_eq!(text("A1"), "Deal point");
    assert_eq!(text("B2"), "132000");
    assert_eq!(text("B4"), "2025-01-31", "Calc's date format");
    assert_eq!(text("B5"), "36:00", "Calc's [HH]:MM duration");
    assert_eq!(text("B6"), "UK; Ireland; France");
    assert!(s.merged.contains(&"A8:B8".to_string()), "{:?}", s.merged);
    assert_eq!(book.sheets[1].name, "Notes");
}
