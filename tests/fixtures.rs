//! One small .docx per construct the reader must understand, built in code,
//! with what a user would check: the accepted and rejected text, the
//! annotated markup, and the model's revision and comment records.
use crate::common::*;
use expect_test::expect;
use redjury::docx::{RevisionKind, State};

fn accepted(d: &Docx) -> Vec<String> {
    text_lines(&d.load(), State::Accepted)
}

fn rejected(d: &Docx) -> Vec<String> {
    text_lines(&d.load(), State::Rejected)
}

fn view(d: &Docx) -> String {
    annotated(&d.load(), "fixture.docx")
}

#[test]
fn insertion_deletion_and_replacement() {
    let d = Docx::body(&format!(
        "<w:p>{}{}{}{}</w:p>",
        run("Fees are "),
        del(1, "Vendor Counsel", "100"),
        ins(2, "Vendor Counsel", "120"),
        run(" per year.")
    ));
    assert_eq!(accepted(&d), ["Fees are 120 per year."]);
    assert_eq!(rejected(&d), ["Fees are 100 per year."]);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Fees are ~~100~~++120++{@Vendor Counsel} per year.

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | Vendor Counsel | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&view(&d));
    let doc = d.load();
    assert_eq!(doc.revisions.len(), 2);
    assert_eq!(doc.revisions[0].author.as_deref(), Some("Vendor Counsel"));
    assert_eq!(doc.revisions[0].date.as_deref(), Some("2025-01-01T00:00:00Z"));
}

#[test]
fn author_and_date_are_optional() {
    let d = Docx::body(r#"<w:p><w:ins w:id="1"><w:r><w:t>anon</w:t></w:r></w:ins></w:p>"#);
    let doc = d.load();
    assert_eq!(doc.revisions[0].author, None);
    assert_eq!(doc.revisions[0].date, None);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] ++anon++{@unknown author}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | unknown author | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&view(&d));
}

#[test]
fn deleting_another_authors_insertion_reads_as_exactly_that() {
    let d = Docx::body(&format!(
        r#"<w:p>{}<w:ins w:id="1" w:author="Customer Counsel"><w:del w:id="2" w:author="Vendor Counsel"><w:r><w:delText>quarterly</w:delText></w:r></w:del></w:ins>{}</w:p>"#,
        run("Invoiced "),
        run(" in advance.")
    ));
    assert_eq!(accepted(&d), ["Invoiced  in advance."]);
    assert_eq!(rejected(&d), ["Invoiced  in advance."]);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Invoiced ~~++quarterly++{@Customer Counsel}~~{@Vendor Counsel} in advance.

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | Vendor Counsel | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&view(&d));
}

#[test]
fn moves_are_paired_by_range_name() {
    let d = Docx::body(&format!(
        r#"<w:p><w:moveToRangeStart w:id="10" w:name="move1" w:author="A"/><w:moveTo w:id="11" w:author="A"><w:r><w:t>Moved clause.</w:t></w:r></w:moveTo><w:moveToRangeEnd w:id="10"/></w:p>{}<w:p><w:moveFromRangeStart w:id="12" w:name="move1" w:author="A"/><w:moveFrom w:id="13" w:author="A"><w:r><w:t>Moved clause.</w:t></w:r></w:moveFrom><w:moveFromRangeEnd w:id="12"/></w:p>"#,
        p("Middle.")
    ));
    assert_eq!(accepted(&d), ["Moved clause.", "Middle.", ""]);
    assert_eq!(rejected(&d), ["", "Middle.", "Moved clause."]);
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] ++Moved clause.++{@A moved from m1}
        [p-001] Middle.
        [p-002] ~~Moved clause.~~{@A moved to m1}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
    let doc = d.load();
    let pairs: Vec<_> =
        doc.revisions.iter().filter(|r| r.kind.is_move()).map(|r| r.move_pair).collect();
    assert_eq!(pairs, [Some(1), Some(1)]);
}

#[test]
fn paragraph_split_and_merge() {
    // An inserted mark splits one paragraph in two; a deleted mark merges two.
    let d = Docx::body(&format!(
        r#"<w:p><w:pPr><w:rPr><w:ins w:id="1" w:author="A"/></w:rPr></w:pPr>{}</w:p>{}<w:p><w:pPr><w:rPr><w:del w:id="2" w:author="B"/></w:rPr></w:pPr>{}</w:p>{}"#,
        run("First half,"),
        p(" second half."),
        run("Joined"),
        p(" together.")
    ));
    assert_eq!(accepted(&d), ["First half,", " second half.", "Joined together."]);
    assert_eq!(rejected(&d), ["First half, second half.", "Joined", " together."]);
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] First half, ++¶++{@A}
        [p-001]  second half.
        [p-002] Joined ~~¶~~{@B}
        [p-003]  together.

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 |
        | B | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
}

#[test]
fn formatting_only_changes_are_noted() {
    let d = Docx::body(
        r#"<w:p><w:pPr><w:jc w:val="center"/><w:pPrChange w:id="1" w:author="A"><w:pPr><w:jc w:val="left"/></w:pPr></w:pPrChange></w:pPr><w:r><w:rPr><w:b/><w:rPrChange w:id="2" w:author="B"><w:rPr/></w:rPrChange></w:rPr><w:t>Bold now.</w:t></w:r></w:p>"#,
    );
    let doc = d.load();
    let kinds: Vec<_> = doc.revisions.iter().map(|r| (r.kind, r.changed.clone())).collect();
    assert!(
        kinds.contains(&(RevisionKind::ParagraphFormat, vec!["alignment".to_string()])),
        "{kinds:?}"
    );
    assert!(kinds.contains(&(RevisionKind::RunFormat, vec!["bold".to_string()])), "{kinds:?}");
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Bold now.{@B changed formatting: bold} {@A changed paragraph formatting: alignment}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 0 |
        | B | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
    assert_eq!(accepted(&d), ["Bold now."]);
}

#[test]
fn table_rows_and_cells_with_revisions() {
    let cell = |t: &str| format!("<w:tc>{}</w:tc>", p(t));
    let d = Docx::body(&format!(
        r#"<w:tbl><w:tr>{}{}</w:tr><w:tr><w:trPr><w:ins w:id="1" w:author="A"/></w:trPr>{}{}</w:tr><w:tr><w:trPr><w:del w:id="2" w:author="B"/></w:trPr>{}{}</w:tr><w:tr>{}<w:tc><w:tcPr><w:cellIns w:id="3" w:author="A"/></w:tcPr>{}</w:tc></w:tr></w:tbl>"#,
        cell("Item"),
        cell("Fee"),
        cell("Support"),
        cell("15,000"),
        cell("Training"),
        cell("5,000"),
        cell("Hosting"),
        p("9,000")
    ));
    assert_eq!(accepted(&d), ["Item | Fee", "Support | 15,000", "Hosting | 9,000"]);
    assert_eq!(rejected(&d), ["Item | Fee", "Training | 5,000", "Hosting"]);
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [t1.r1] | Item | Fee |
        [t1.r2] ++row++{@A} | Support | 15,000 |
        [t1.r3] ~~row~~{@B} | Training | 5,000 |
        [t1.r4] | Hosting | ++cell++{@A} 9,000 |

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 |
        | B | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 |
    "#]].assert_eq(&v);
}

#[test]
fn comments_ranges_replies_and_resolution() {
    let d = Docx {
        body: format!(
            r#"<w:p><w:commentRangeStart w:id="0"/>{}<w:commentRangeStart w:id="1"/>{}<w:commentRangeEnd w:id="0"/><w:r><w:commentReference w:id="0"/></w:r>{}</w:p><w:p>{}<w:commentRangeEnd w:id="1"/><w:r><w:commentReference w:id="1"/></w:r><w:r><w:commentReference w:id="2"/></w:r><w:r><w:commentReference w:id="3"/></w:r></w:p>"#,
            run("Alpha "),
            run("beta"),
            run(" gamma"),
            run("delta")
        ),
        comments: Some(
            r#"<w:comment w:id="0" w:author="Vendor Counsel" w:date="2025-03-03T10:00:00Z"><w:p w14:paraId="00000001"><w:r><w:t>First paragraph.</w:t></w:r></w:p><w:p w14:paraId="00000002"><w:r><w:t>Why we object.</w:t></w:r></w:p></w:comment><w:comment w:id="1" w:author="Customer Counsel"><w:p w14:paraId="00000003"><w:r><w:t>Overlapping.</w:t></w:r></w:p></w:comment><w:comment w:id="2" w:author="Customer Counsel"><w:p w14:paraId="00000004"><w:r><w:t>Agreed.</w:t></w:r></w:p></w:comment><w:comment w:id="3" w:author="Vendor Counsel"><w:p w14:paraId="00000005"><w:r><w:t>Thanks.</w:t></w:r></w:p></w:comment>"#.into(),
        ),
        // Comment 2 replies to comment 0 through its LAST paragraph's id;
        // comment 3 replies to 2. Comment 0 is done, so its thread is resolved.
        comments_extended: Some(
            r#"<w15:commentEx w15:paraId="00000002" w15:done="1"/><w15:commentEx w15:paraId="00000003" w15:done="0"/><w15:commentEx w15:paraId="00000004" w15:paraIdParent="00000002" w15:done="0"/><w15:commentEx w15:paraId="00000005" w15:paraIdParent="00000004" w15:done="0"/>"#.into(),
        ),
        people: Some(r#"<w15:person w15:author="Vendor Counsel"><w15:presenceInfo w15:providerId="None" w15:userId="Vendor Counsel"/></w15:person>"#.into()),
        ..Default::default()
    };
    let doc = d.load();
    let c = |id: &str| doc.comment(id).expect("comment");
    assert_eq!(c("0").anchor, "Alpha beta");
    assert_eq!(c("0").text, "First paragraph.\nWhy we object.");
    assert_eq!(c("1").anchor, "beta gamma\ndelta");
    assert_eq!(c("2").parent.as_deref(), Some("0"));
    assert_eq!(c("3").parent.as_deref(), Some("2"));
    assert!(c("0").resolved && c("2").resolved && c("3").resolved, "replies inherit done");
    assert!(!c("1").resolved);
    assert_eq!(c("2").anchor, "", "reference-only comment");
    assert!(c("2").anchored);
    assert_eq!(doc.people.len(), 1);
    let v = view(&d);
    expect![[r##"
        # Annotated redline: fixture.docx

        [p-000] Alpha beta{cmt-0} gamma
        [p-001] delta{cmt-1}{cmt-2}{cmt-3}

        ## Comments

        {cmt-0} @Vendor Counsel, 2025-03-03, resolved, on "Alpha beta": First paragraph. ↵ Why we object.
          {cmt-2} @Customer Counsel, reply to cmt-0, resolved: Agreed.
            {cmt-3} @Vendor Counsel, reply to cmt-2, resolved: Thanks.
        {cmt-1} @Customer Counsel, on "beta gamma ↵ delta": Overlapping.

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | Customer Counsel | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 1 |
        | Vendor Counsel | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 1 |
    "##]].assert_eq(&v);
}

#[test]
fn fields_show_their_result_not_their_code() {
    let d = Docx::body(
        r#"<w:p><w:r><w:t xml:space="preserve">See </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> REF _Ref1 \h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>Clause 7.3</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r><w:r><w:t xml:space="preserve"> and </w:t></w:r><w:fldSimple w:instr=" PAGE "><w:r><w:t>4</w:t></w:r></w:fldSimple><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>IF </w:instrText></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>PAGE</w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>hidden nested</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>.</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>"#,
    );
    assert_eq!(accepted(&d), ["See Clause 7.3 and 4."]);
}

#[test]
fn special_characters() {
    let d = Docx::body(
        r#"<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t><w:noBreakHyphen/><w:t>d</w:t><w:softHyphen/><w:t>e</w:t><w:sym w:font="Wingdings" w:char="F0FC"/></w:r></w:p>"#,
    );
    assert_eq!(accepted(&d), ["a\tb c\u{2011}d\u{ad}e\u{f0fc}"]);
}

#[test]
fn wrappers_are_unwrapped() {
    let d = Docx::body(&format!(
        r#"<w:sdt><w:sdtPr><w:alias w:val="Party"/><w:rPr><w:b/></w:rPr></w:sdtPr><w:sdtContent><w:p><w:customXml w:element="x"><w:smartTag w:element="place">{}</w:smartTag></w:customXml><w:hyperlink r:id="rId9"><w:r><w:t>linked</w:t></w:r></w:hyperlink><w:sdt><w:sdtContent>{}</w:sdtContent></w:sdt></w:p></w:sdtContent></w:sdt>"#,
        run("Acme "),
        run(" party")
    ));
    assert_eq!(accepted(&d), ["Acme linked party"]);
    // python-docx does not number paragraphs inside a block-level content
    // control; the view gives them a sub-id instead of shifting later ids.
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000.1] Acme linked party

        ## Revision summary

        No tracked changes or comments.
    "#]]
    .assert_eq(&view(&d));
}

#[test]
fn iso_strict_namespaces() {
    let mut d = Docx::body(&format!("<w:p>{}{}</w:p>", run("Strict "), ins(1, "A", "text")));
    d.strict = true;
    assert_eq!(accepted(&d), ["Strict text"]);
    assert_eq!(rejected(&d), ["Strict "]);
}

#[test]
fn alternate_content_is_read_once() {
    let d = Docx::body(
        r#"<w:p><w:r><w:t>Anchor</w:t></w:r><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:txbx><w:txbxContent><w:p><w:r><w:t>Box text</w:t></w:r></w:p></w:txbxContent></wps:txbx></w:drawing></mc:Choice><mc:Fallback><w:pict><v:textbox><w:txbxContent><w:p><w:r><w:t>Box text</w:t></w:r></w:p></w:txbxContent></v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"#,
    );
    let doc = d.load();
    assert_eq!(doc.stories.len(), 1, "one text box, not two");
    let v = view(&d);
    assert_eq!(v.matches("Box text").count(), 1, "{v}");
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Anchor
            [text box 1] Box text

        ## Revision summary

        No tracked changes or comments.
    "#]]
    .assert_eq(&v);
    // Like LibreOffice, the plain views hold the body text only.
    assert_eq!(accepted(&d), ["Anchor"]);
}

#[test]
fn notes_and_headers() {
    let d = Docx {
        body: r#"<w:p><w:r><w:t>Claim</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r><w:r><w:t xml:space="preserve"> here</w:t></w:r><w:r><w:endnoteReference w:id="1"/></w:r></w:p>"#.into(),
        footnotes: Some(r#"<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote><w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> As defined in Clause 1.</w:t></w:r></w:p></w:footnote>"#.into()),
        endnotes: Some(r#"<w:endnote w:id="1"><w:p><w:r><w:t>End note.</w:t></w:r></w:p></w:endnote>"#.into()),
        header: Some(&p("CONFIDENTIAL")).cloned(),
        ..Default::default()
    };
    assert_eq!(accepted(&d), ["Claim1 herei"]);
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Claim[^fn-1] here[^en-i]

        ## Footnotes

        [fn-1]  As defined in Clause 1.

        ## Endnotes

        [en-i] End note.

        ## Headers

        [header 1] CONFIDENTIAL

        ## Revision summary

        No tracked changes or comments.
    "#]]
    .assert_eq(&v);
}

#[test]
fn document_text_cannot_forge_markup() {
    let d = Docx::body(&p("Price ++ tax ~~ 5 {cmt-9} see [p-001]"));
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Price \+\+ tax \~\~ 5 \{cmt-9\} see \[p-001]

        ## Revision summary

        No tracked changes or comments.
    "#]]
    .assert_eq(&v);
    assert!(!v.contains("{cmt-9}"));
}

// ---- numbering ----

fn numbered(body: String) -> Docx {
    Docx { body, numbering: Some(contract_numbering()), ..Default::default() }
}

#[test]
fn multi_level_labels_restart_after_a_higher_level() {
    let d = numbered(
        [
            np(1, 0, &run("Definitions")),
            np(1, 1, &run("Terms")),
            np(1, 2, &run("first")),
            np(1, 2, &run("second")),
            np(1, 1, &run("More")),
            np(1, 2, &run("again")),
            np(1, 0, &run("Fees")),
            np(1, 1, &run("Payment")),
        ]
        .concat(),
    );
    assert_eq!(
        accepted(&d),
        [
            "1. Definitions",
            "1.1 Terms",
            "(a) first",
            "(b) second",
            "1.2 More",
            "(a) again",
            "2. Fees",
            "2.1 Payment"
        ]
    );
}

#[test]
fn an_inserted_numbered_paragraph_shifts_labels_in_the_accepted_state_only() {
    let inserted = format!(
        r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr><w:rPr><w:ins w:id="1" w:author="A"/></w:rPr></w:pPr>{}</w:p>"#,
        ins(2, "A", "New clause")
    );
    let d = numbered(
        [np(1, 0, &run("Fees")), np(1, 1, &run("One")), inserted, np(1, 1, &run("Two"))].concat(),
    );
    assert_eq!(accepted(&d), ["1. Fees", "1.1 One", "1.2 New clause", "1.3 Two"]);
    assert_eq!(rejected(&d), ["1. Fees", "1.1 One", "1.2 Two"]);
    // A rubric citing "Section 1.2" means the clause "Two", as the model
    // received the contract: the view leads with that number.
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] 1. Fees
        [p-001] 1.1 One
        [p-002] (new 1.2) ++New clause++{@A} ++¶++{@A}
        [p-003] 1.2 (now 1.3) Two

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 1 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
}

#[test]
fn counters_are_kept_per_abstract_numbering_and_start_override_restarts() {
    let numbering = r#"<w:abstractNum w:abstractNumId="5"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="Article %1"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="5"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="5"/></w:num><w:num w:numId="3"><w:abstractNumId w:val="5"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>"#;
    let d = Docx {
        body: [
            np(1, 0, &run("a")),
            np(1, 0, &run("b")),
            np(2, 0, &run("c")),
            np(2, 0, &run("d")),
            np(3, 0, &run("e")),
            np(3, 0, &run("f")),
        ]
        .concat(),
        numbering: Some(numbering.into()),
        ..Default::default()
    };
    assert_eq!(
        accepted(&d),
        [
            "Article I a",
            "Article II b",
            "Article III c",
            "Article IV d",
            "Article I e",
            "Article II f"
        ]
    );
}

/// A `w:lvlOverride` may carry a whole level definition (`w:lvl`): the
/// list instance then numbers with the override's format and text, not the
/// abstract numbering's.
#[test]
fn a_level_override_with_its_own_definition_replaces_the_level() {
    let numbering = r#"<w:abstractNum w:abstractNumId="5"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="Article %1"/></w:lvl></w:abstractNum><w:num w:numId="4"><w:abstractNumId w:val="5"/><w:lvlOverride w:ilvl="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%1)"/></w:lvl></w:lvlOverride></w:num>"#;
    let d = Docx {
        body: [np(4, 0, &run("a")), np(4, 0, &run("b"))].concat(),
        numbering: Some(numbering.into()),
        ..Default::default()
    };
    assert_eq!(accepted(&d), ["(a) a", "(b) b"]);
}

#[test]
fn is_lgl_lvl_restart_formats_and_style_linked_headings() {
    let numbering = r#"<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/><w:pStyle w:val="Heading1"/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/><w:isLgl/><w:pStyle w:val="Heading2"/></w:lvl><w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="ordinalText"/><w:lvlText w:val="%3:"/><w:lvlRestart w:val="0"/></w:lvl></w:abstractNum><w:num w:numId="7"><w:abstractNumId w:val="1"/></w:num>"#;
    let styles = r#"<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:numPr><w:numId w:val="7"/></w:numPr></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Heading1"/><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="7"/></w:numPr></w:pPr></w:style>"#;
    let h = |style: &str, t: &str| {
        format!(r#"<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr>{}</w:p>"#, run(t))
    };
    let d = Docx {
        body: [
            h("Heading1", "Scope"),
            h("Heading2", "Detail"),
            np(7, 2, &run("x")),
            h("Heading1", "Term"),
            h("Heading2", "Renewal"),
            np(7, 2, &run("y")),
        ]
        .concat(),
        numbering: Some(numbering.into()),
        styles: Some(styles.into()),
        ..Default::default()
    };
    // isLgl shows "II.1" as "2.1"; level 3 never restarts (lvlRestart 0).
    assert_eq!(
        accepted(&d),
        ["I. Scope", "1.1 Detail", "First: x", "II. Term", "2.1 Renewal", "Second: y"]
    );
}

// ---- gate ----

#[test]
fn gate_passes_on_the_authors_change_and_says_why_it_fails() {
    let d = Docx::body(&format!("<w:p>{}</w:p>", ins(1, "Vendor Counsel", "x")));
    let loaded = redjury::docx::from_bytes(d.bytes(), Default::default());
    assert!(redjury::gate(&loaded, "Vendor Counsel").passed);
    assert!(redjury::gate(&loaded, "  Vendor\u{a0}Counsel ").passed, "whitespace is normalised");
    let r = redjury::gate(&loaded, "vendor counsel");
    assert!(!r.passed);
    assert!(r.reason.contains("differs only in letter case"), "{}", r.reason);
    let r = redjury::gate(&loaded, "Customer Counsel");
    assert_eq!(
        r.reason,
        "no tracked change or comment by 'Customer Counsel'; found 1 by 'Vendor Counsel'"
    );
    let untracked = redjury::docx::from_bytes(Docx::body(&p("edited")).bytes(), Default::default());
    assert!(redjury::gate(&untracked, "A").reason.contains("without Track Changes"));
    let broken = redjury::docx::from_bytes(b"not a zip".to_vec(), Default::default());
    let r = redjury::gate(&broken, "A");
    assert!(!r.passed && r.reason.starts_with("not a .docx"), "{}", r.reason);
}

#[test]
fn mark_formatting_and_paragraph_property_changes_are_both_kept() {
    let d = Docx::body(
        r#"<w:p><w:pPr><w:jc w:val="center"/><w:rPr><w:b/><w:rPrChange w:id="1" w:author="A"><w:rPr/></w:rPrChange></w:rPr><w:pPrChange w:id="2" w:author="A"><w:pPr/></w:pPrChange></w:pPr><w:r><w:t>Title</w:t></w:r></w:p>"#,
    );
    let doc = d.load();
    let changed: Vec<Vec<String>> = doc.revisions.iter().map(|r| r.changed.clone()).collect();
    assert_eq!(
        changed,
        [vec!["paragraph mark formatting".to_string()], vec!["alignment".to_string()]]
    );
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] Title {@A changed paragraph formatting: paragraph mark formatting} {@A changed paragraph formatting: alignment}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 0 | 0 | 0 | 2 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
}

#[test]
fn old_cell_properties_are_not_current_ones() {
    let d = Docx::body(&format!(
        r#"<w:tbl><w:tr><w:tc><w:tcPr><w:tcPrChange w:id="1" w:author="A"><w:tcPr><w:vMerge/><w:cellDel w:id="9" w:author="A"/></w:tcPr></w:tcPrChange></w:tcPr>{}</w:tc></w:tr></w:tbl>"#,
        p("kept")
    ));
    let doc = d.load();
    // The change itself is a cell-property revision; the old properties it
    // holds (a merge, a cell deletion) are not current ones.
    let kinds: Vec<RevisionKind> = doc.revisions.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RevisionKind::CellFormat], "{:?}", doc.revisions);
    assert_eq!(doc.revisions[0].changed, ["merging"]);
    assert_eq!(accepted(&d), ["kept"]);
}

#[test]
fn a_text_box_in_an_empty_paragraph_is_shown() {
    let d = Docx::body(
        r#"<w:p><w:r><w:drawing><wps:txbx><w:txbxContent><w:p><w:ins w:id="1" w:author="A"><w:r><w:t>Boxed clause</w:t></w:r></w:ins></w:p></w:txbxContent></wps:txbx></w:drawing></w:r></w:p>"#,
    );
    expect![[r#"
        # Annotated redline: fixture.docx

            [text box 1] ++Boxed clause++{@A}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&view(&d));
}

#[test]
fn an_author_tag_never_crosses_a_note_or_an_anchor() {
    let d = Docx::body(&format!(
        r#"<w:p>{}<w:ins w:id="2" w:author="B"><w:r><w:footnoteReference w:id="1"/></w:r></w:ins>{}</w:p>"#,
        del(1, "A", "old"),
        ins(3, "A", "new")
    ));
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [p-000] ~~old~~{@A}++[^fn-1]++{@B}++new++{@A}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
}

#[test]
fn property_revisions_are_revisions() {
    // A file whose only tracked changes are table, row, cell and section
    // property changes: the gate passes on them and the view says what changed.
    let d = Docx::body(&format!(
        concat!(
            r#"<w:tbl><w:tblPr><w:tblW w:w="5000" w:type="pct"/><w:tblPrChange w:id="1" w:author="A" w:date="2025-01-01T00:00:00Z"><w:tblPr><w:tblW w:w="0" w:type="auto"/></w:tblPr></w:tblPrChange></w:tblPr>"#,
            r#"<w:tblGrid><w:gridCol w:w="4000"/><w:gridCol w:w="5000"/><w:tblGridChange w:id="2"><w:tblGrid><w:gridCol w:w="4500"/><w:gridCol w:w="4500"/></w:tblGrid></w:tblGridChange></w:tblGrid>"#,
            r#"<w:tr><w:trPr><w:trHeight w:val="600"/><w:trPrChange w:id="3" w:author="A"><w:trPr/></w:trPrChange></w:trPr>"#,
            r#"<w:tc><w:tcPr><w:tcW w:w="4000" w:type="dxa"/><w:shd w:fill="FFFF00"/><w:tcPrChange w:id="4" w:author="A"><w:tcPr><w:tcW w:w="4500" w:type="dxa"/></w:tcPr></w:tcPrChange></w:tcPr>{}</w:tc>"#,
            r#"<w:tc>{}</w:tc></w:tr></w:tbl>"#,
            r#"<w:p><w:pPr><w:sectPr><w:pgMar w:top="360"/><w:sectPrChange w:id="5" w:author="A"><w:sectPr><w:pgMar w:top="1440"/></w:sectPr></w:sectPrChange></w:sectPr></w:pPr><w:r><w:t>End</w:t></w:r></w:p>"#
        ),
        p("Fees"),
        p("Rate")
    ));
    let doc = d.load();
    let kinds: Vec<(RevisionKind, Vec<String>)> =
        doc.revisions.iter().map(|r| (r.kind, r.changed.clone())).collect();
    assert_eq!(
        kinds,
        [
            (RevisionKind::TableFormat, vec!["width".to_string()]),
            (RevisionKind::TableGrid, vec!["column widths".to_string()]),
            (RevisionKind::RowFormat, vec!["row height".to_string()]),
            (RevisionKind::CellFormat, vec!["width".to_string(), "shading".to_string()]),
            (RevisionKind::SectionFormat, vec!["page margins".to_string()]),
        ]
    );
    assert!(redjury::gate(&Ok(d.load()), "A").passed, "property changes pass the gate");
    let v = view(&d);
    expect![[r#"
        # Annotated redline: fixture.docx

        [t1] {@A changed table properties: width} {@unknown author changed table grid: column widths}
        [t1.r1] {@A changed row properties: row height} | {@A changed cell properties: width, shading} Fees | Rate |
        [p-000] End {@A changed section properties: page margins}

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | A | 0 | 0 | 0 | 0 | 4 | 0 | 0 | 0 | 0 |
        | unknown author | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 |
    "#]].assert_eq(&v);
    let json = redjury::render_view(&doc, redjury::ViewKind::Json, "x");
    assert!(
        json.contains("\"kind\": \"table_format\"") && json.contains("\"format_changes\""),
        "{json}"
    );
}

#[test]
fn text_without_preserve_loses_its_edge_whitespace_as_in_word() {
    let d = Docx::body(
        r#"<w:p><w:r><w:t>and </w:t></w:r><w:r><w:t> title</w:t></w:r><w:r><w:t xml:space="preserve"> kept </w:t></w:r><w:del w:id="1" w:author="A"><w:r><w:delText> gone </w:delText></w:r></w:del></w:p>"#,
    );
    assert_eq!(accepted(&d), ["andtitle kept "]);
    assert_eq!(rejected(&d), ["andtitle kept gone"]);
}

#[test]
fn grid_offsets_keep_columns_aligned() {
    let d = Docx::body(&format!(
        r#"<w:tbl><w:tr><w:tc>{}</w:tc><w:tc>{}</w:tc><w:tc>{}</w:tc></w:tr><w:tr><w:trPr><w:gridBefore w:val="1"/><w:gridAfter w:val="1"/></w:trPr><w:tc>{}</w:tc></w:tr></w:tbl>"#,
        p("Item"),
        p("Rate"),
        p("Note"),
        p("120")
    ));
    assert_eq!(accepted(&d), ["Item | Rate | Note", " | 120 | "]);
    expect![[r#"
        # Annotated redline: fixture.docx

        [t1.r1] | Item | Rate | Note |
        [t1.r2] | | 120 | |

        ## Revision summary

        No tracked changes or comments.
    "#]]
    .assert_eq(&view(&d));
}

#[test]
fn numbered_lists_in_other_scripts() {
    let numbering = r#"<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimalFullWidth"/><w:lvlText w:val="第%1条"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="2"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimalEnclosedCircle"/><w:lvlText w:val="%1"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="2"/></w:num>"#;
    let body = [
        np(1, 0, &run("総則")),
        np(1, 0, &run("定義")),
        np(2, 0, &run("one")),
        np(2, 0, &run("two")),
    ]
    .concat();
    let d = Docx { body, numbering: Some(numbering.into()), ..Default::default() };
    assert_eq!(accepted(&d), ["第１条 総則", "第２条 定義", "① one", "② two"]);
}

#[test]
fn changes_carried_over_from_the_input_are_marked_as_an_earlier_round() {
    // Turn 1: Vendor's change and comment. Turn 3: the same file plus a
    // new change and a reply by Vendor.
    let anchored = format!(
        r#"<w:p>{}<w:commentRangeStart w:id="0"/>{}{}<w:commentRangeEnd w:id="0"/><w:r><w:commentReference w:id="0"/></w:r></w:p>"#,
        run("Cap: "),
        del(1, "Vendor Counsel", "100%"),
        ins(2, "Vendor Counsel", "200%")
    );
    let round1 = anchored.clone();
    let round3 = format!("{anchored}<w:p>{}</w:p>", ins(3, "Vendor Counsel", "Fees are fixed."));
    let comment = r#"<w:comment w:id="0" w:author="Vendor Counsel" w:date="2025-01-01T00:00:00Z"><w:p><w:r><w:t>Our cap.</w:t></w:r></w:p></w:comment>"#;
    let input = Docx { body: round1, comments: Some(comment.into()), ..Default::default() }.load();
    let output = Docx { body: round3, comments: Some(comment.into()), ..Default::default() }.load();
    let v = redjury::render_view_against(&output, "t", &input, "Vendor Counsel");
    expect![[r##"
        # Annotated redline: t

        [p-000] Cap: ~~100%~~++200%++{@Vendor Counsel, earlier round}{cmt-0}
        [p-001] ++Fees are fixed.++{@Vendor Counsel}

        ## Comments

        {cmt-0} @Vendor Counsel, earlier round, 2025-01-01, on "~~100%~~++200%++": Our cap.

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | Vendor Counsel | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |
        | Vendor Counsel (earlier rounds) | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 1 | 0 |
    "##]].assert_eq(&v);
    // Without the input, nothing is marked.
    assert!(!annotated(&output, "t").contains("earlier round"));
}

#[test]
fn the_comment_appendix_shows_the_anchor_with_its_markup() {
    let body = format!(
        r#"<w:p><w:commentRangeStart w:id="4"/>{}{}<w:commentRangeEnd w:id="4"/><w:r><w:commentReference w:id="4"/></w:r></w:p>"#,
        del(1, "B", "ninety (90) days"),
        ins(2, "B", "sixty (60) days")
    );
    let comments =
        r#"<w:comment w:id="4" w:author="B"><w:p><w:r><w:t>Shorter.</w:t></w:r></w:p></w:comment>"#;
    let v = view(&Docx { body, comments: Some(comments.into()), ..Default::default() });
    expect![[r##"
        # Annotated redline: fixture.docx

        [p-000] ~~ninety (90) days~~++sixty (60) days++{@B}{cmt-4}

        ## Comments

        {cmt-4} @B, on "~~ninety (90) days~~++sixty (60) days++": Shorter.

        ## Revision summary

        | author | insertions | deletions | moves | formatting | properties | paragraph marks | table rows | comments | replies |
        |---|---|---|---|---|---|---|---|---|---|
        | B | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 1 | 0 |
    "##]].assert_eq(&v);
}
