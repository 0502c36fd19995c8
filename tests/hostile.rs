//! Bad and hostile input: each ends in a precise error, never a panic or a
//! hang, and memory stays bounded by the limits, not by what a file declares.
use std::process::Command;

use crate::common::*;
use redjury::docx::{DocxError, Limits, from_bytes};

fn load(bytes: Vec<u8>) -> Result<redjury::docx::Document, DocxError> {
    from_bytes(bytes, Limits::default())
}

fn message(bytes: Vec<u8>) -> String {
    match load(bytes) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn not_a_zip() {
    assert_eq!(message(b"Hello".to_vec()), "not a .docx: it does not start with a zip signature");
    assert_eq!(message(Vec::new()), "not a .docx: the file is empty");
    assert!(message(b"<html><body>hi</body></html>".to_vec()).contains("XML or HTML"));
}

#[test]
fn truncated_zip() {
    let bytes = Docx::body(&p("text")).bytes();
    let cut = bytes[..bytes.len() / 2].to_vec();
    assert!(
        message(cut).starts_with("not a readable .docx: the zip archive is damaged or truncated")
    );
}

#[test]
fn legacy_doc_and_encrypted_docx() {
    let mut ole = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    ole.resize(2048, 0);
    let mut doc = ole.clone();
    doc.extend("WordDocument".encode_utf16().flat_map(|u| u.to_le_bytes()));
    assert!(matches!(load(doc), Err(DocxError::LegacyDoc)));
    let mut enc = ole;
    enc.extend("EncryptionInfo".encode_utf16().flat_map(|u| u.to_le_bytes()));
    assert!(message(enc).contains("password-protected"));
}

#[test]
fn missing_main_part() {
    let bytes =
        zip_files(&[("[Content_Types].xml", b"<Types/>"), ("word/styles.xml", b"<w:styles/>")]);
    assert_eq!(
        message(bytes),
        "not a .docx: the package has no word/document.xml part (is it a Word document?)"
    );
}

#[test]
fn malformed_xml_names_the_part() {
    let bytes = zip_files(&[(
        "word/document.xml",
        b"<w:document xmlns:w=\"x\"><w:body><w:p></w:body></w:document>",
    )]);
    let m = message(bytes);
    assert!(m.starts_with("malformed XML in word/document.xml at byte"), "{m}");
}

#[test]
fn dtd_and_entities_are_refused_not_expanded() {
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>"#;
    let m = message(zip_files(&[("word/document.xml", laughs)]));
    assert!(m.contains("declares a DTD"), "{m}");
    let external = br#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&xxe;</w:t></w:r></w:p></w:body></w:document>"#;
    let m = message(zip_files(&[("word/document.xml", external)]));
    assert!(m.contains("undeclared entity &xxe;"), "{m}");
}

#[test]
fn zip_bombs_fail_fast() {
    // 8 MiB of one byte inflates from a few kilobytes: ratio far above 200.
    let mut xml = String::from(
        r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>"#,
    );
    xml.push_str(&"a".repeat(8 << 20));
    xml.push_str("</w:t></w:r></w:p></w:body></w:document>");
    let bytes = zip_files(&[("word/document.xml", xml.as_bytes())]);
    assert!(bytes.len() < 64 << 10);
    let m = message(bytes.clone());
    assert!(m.contains("zip bomb") && m.contains("inflates"), "{m}");
    // Per-part cap: the same part under a smaller cap is refused by size,
    // after reading at most cap + 1 bytes.
    let limits = Limits { max_part_bytes: 1 << 20, max_ratio: u64::MAX, ..Limits::default() };
    let m = from_bytes(bytes.clone(), limits).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        m.contains("word/document.xml once decompressed is larger than the 1048576-byte limit"),
        "{m}"
    );
    // Total cap across parts.
    let limits = Limits { max_total_bytes: 1 << 20, max_ratio: u64::MAX, ..Limits::default() };
    let m = from_bytes(bytes, limits).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(m.contains("decompressed parts is larger"), "{m}");
}

#[test]
fn deep_nesting_is_refused() {
    let mut xml = String::from(
        r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>"#,
    );
    xml.push_str(&"<w:sdt><w:sdtContent>".repeat(5000));
    let m = message(zip_files(&[("word/document.xml", xml.as_bytes())]));
    assert!(m.contains("nested deeper than"), "{m}");
}

#[test]
fn dangling_comment_references_warn_and_duplicate_ids_fail() {
    let d = Docx {
        body: r#"<w:p><w:commentRangeStart w:id="7"/><w:r><w:t>x</w:t></w:r><w:commentRangeEnd w:id="7"/><w:r><w:commentReference w:id="7"/></w:r></w:p>"#.into(),
        comments: Some(String::new()),
        ..Default::default()
    };
    let doc = d.load();
    assert_eq!(
        doc.warnings,
        [
            "the document anchors comment id 7, which word/comments.xml does not define; the anchor is ignored"
        ]
    );
    assert!(!annotated(&doc, "x").contains("{cmt-7}"));
    let dup = Docx {
        body: p("x"),
        comments: Some(r#"<w:comment w:id="1" w:author="A"><w:p/></w:comment><w:comment w:id="1" w:author="B"><w:p/></w:comment>"#.into()),
        ..Default::default()
    };
    let m = message(dup.bytes());
    assert_eq!(
        m,
        "word/comments.xml defines comment id 1 twice; anchors cannot be matched to comments"
    );
}

#[test]
fn reply_cycles_terminate() {
    let d = Docx {
        body: p("x"),
        comments: Some(r#"<w:comment w:id="1" w:author="A"><w:p w14:paraId="1"/></w:comment><w:comment w:id="2" w:author="B"><w:p w14:paraId="2"/></w:comment>"#.into()),
        comments_extended: Some(r#"<w15:commentEx w15:paraId="1" w15:paraIdParent="2"/><w15:commentEx w15:paraId="2" w15:paraIdParent="1"/>"#.into()),
        ..Default::default()
    };
    let doc = d.load();
    let v = annotated(&doc, "x");
    assert!(v.contains("{cmt-1}") && v.contains("{cmt-2}"), "{v}");
}

fn redjury(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_redjury")).args(args).output().expect("run redjury");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn gate_exit_codes() {
    let dir = temp_dir("gate");
    let good = dir.join("good.docx");
    std::fs::write(
        &good,
        Docx::body(&format!("<w:p>{}</w:p>", ins(1, "Buyer Counsel", "x"))).bytes(),
    )
    .expect("write");
    let bad = dir.join("bad.docx");
    std::fs::write(&bad, b"PK\x03\x04 truncated").expect("write");
    let good_s = good.to_string_lossy().into_owned();
    let bad_s = bad.to_string_lossy().into_owned();

    let (code, out, _) = redjury(&["gate", &good_s, "--author", "Buyer Counsel"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("PASS"));
    let (code, out, _) = redjury(&["gate", &good_s, "--author", "Seller Counsel"]);
    assert_eq!(code, 1);
    assert!(out.contains("found 1 by 'Buyer Counsel'"), "{out}");
    let (code, out, _) = redjury(&["gate", &bad_s, "--author", "Buyer Counsel"]);
    assert_eq!(code, 1);
    assert!(out.contains("damaged or truncated"), "{out}");
    let (code, _, err) = redjury(&["gate", &good_s]);
    assert_eq!(code, 2, "missing --author is a usage error: {err}");
    let (code, _, err) = redjury(&["render", &bad_s]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot render") && err.contains("damaged or truncated"), "{err}");
}

#[test]
fn open_close_pairs_where_empty_elements_are_usual_lose_nothing() {
    // <w:pStyle ...></w:pStyle> instead of <w:pStyle .../>: the text and
    // the paragraph ids after it must survive.
    let d = Docx::body(&format!(
        r#"<w:p><w:pPr><w:pStyle w:val="Body"></w:pStyle><w:numPr><w:ilvl w:val="0"></w:ilvl><w:numId w:val="0"></w:numId></w:numPr></w:pPr><w:moveFromRangeStart w:id="1" w:name="m"></w:moveFromRangeStart><w:r><w:t>Hi</w:t><w:noBreakHyphen></w:noBreakHyphen><w:t>there</w:t></w:r></w:p>{}"#,
        p("next")
    ));
    let doc = d.load();
    assert_eq!(text_lines(&doc, redjury::docx::State::Accepted), ["Hi\u{2011}there", "next"]);
    assert!(annotated(&doc, "x").contains("[p-001] next"));
}

#[test]
fn hostile_numbering_and_styles_do_not_panic() {
    let numbering = r#"<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="9223372036854775807"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="-9223372036854775808"/></w:lvlOverride></w:num>"#;
    // An empty character style before the paragraph styles must not hide them.
    let styles = r#"<w:style w:type="character" w:styleId="C"/><w:style w:type="paragraph" w:styleId="H"><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>"#;
    let para = r#"<w:p><w:pPr><w:pStyle w:val="H"/></w:pPr><w:r><w:t>x</w:t></w:r></w:p>"#;
    let d = Docx {
        body: para.repeat(3),
        numbering: Some(numbering.into()),
        styles: Some(styles.into()),
        ..Default::default()
    };
    let lines = text_lines(&d.load(), redjury::docx::State::Accepted);
    assert_eq!(lines.len(), 3);
    assert!(
        lines.iter().all(|l| l.ends_with(". x")),
        "style-linked numbering still applies: {lines:?}"
    );
}

#[test]
fn duplicate_part_names_are_refused() {
    let good = Docx::body(&p("text")).bytes();
    let document = r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>"#;
    let rels = r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
    let case = zip_files(&[
        ("_rels/.rels", rels.as_bytes()),
        ("word/document.xml", document.as_bytes()),
        ("Word/Document.xml", document.as_bytes()),
    ]);
    assert_eq!(
        message(case),
        "not a readable .docx: the package holds Word/Document.xml twice (names differing only in letter case); readers would disagree on which copy counts"
    );
    // Two entries under exactly one name (the zip crate refuses to write
    // that, so patch a name in the archive: "word/documenX.xml" → document).
    let mut twice = zip_files(&[
        ("_rels/.rels", rels.as_bytes()),
        ("word/document.xml", document.as_bytes()),
        ("word/documenX.xml", document.as_bytes()),
    ]);
    for w in twice
        .windows(17)
        .enumerate()
        .filter(|(_, w)| *w == b"word/documenX.xml")
        .map(|(i, _)| i)
        .collect::<Vec<_>>()
    {
        twice[w + 12] = b't';
    }
    assert!(message(twice).contains("holds word/document.xml twice; readers"), "{good:?}");
}

#[test]
fn what_is_not_a_regular_file_is_refused_before_reading() {
    let e = redjury::docx::load(std::path::Path::new("/dev/zero"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        e,
        "cannot read /dev/zero: it is a device, not a regular file; give the path of a .docx file"
    );
    let scratch = temp_dir("fifo");
    let dir = scratch.join("fifo");
    let made = Command::new("mkfifo").arg(&dir).status().map(|s| s.success()).unwrap_or(false);
    if made {
        // Reading a FIFO with no writer would block forever.
        let e = redjury::docx::load(&dir).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.ends_with(
                "it is a FIFO (named pipe), not a regular file; give the path of a .docx file"
            ),
            "{e}"
        );
        let _ = std::fs::remove_file(&dir);
    }
    let e =
        redjury::docx::load(&std::env::temp_dir()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        e.ends_with("it is a directory, not a regular file; give the path of a .docx file"),
        "{e}"
    );
}

/// Comments whose ranges all overlap: each comment keeps its range, not
/// a copy of the text it spans per open range.
#[test]
fn overlapping_comment_ranges_keep_bounded_anchors() {
    let n = 400;
    let starts: String = (0..n).map(|i| format!(r#"<w:commentRangeStart w:id="{i}"/>"#)).collect();
    let ends: String = (0..n).map(|i| format!(r#"<w:commentRangeEnd w:id="{i}"/>"#)).collect();
    let body = format!(
        "<w:p>{starts}{}</w:p>{}<w:p>{}{ends}</w:p>",
        run("start"),
        p(&"long text ".repeat(2000)).repeat(20),
        run("end")
    );
    let comments: String =
        (0..n).map(|i| format!(r#"<w:comment w:id="{i}" w:author="A"><w:p><w:r><w:t>c{i}</w:t></w:r></w:p></w:comment>"#)).collect();
    let doc = Docx { body, comments: Some(comments), ..Default::default() }.load();
    assert_eq!(doc.comments.len(), n);
    assert!(
        doc.comments.iter().all(|c| c.anchor.starts_with("start") && c.anchor.len() <= 4096),
        "anchors are capped"
    );
}
