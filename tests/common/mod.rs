//! Small .docx files built in code, one construct at a time.

use std::io::Write;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;

pub const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const W14: &str = "http://schemas.microsoft.com/office/word/2010/wordml";
const W15: &str = "http://schemas.microsoft.com/office/word/2012/wordml";
const MC: &str = "http://schemas.openxmlformats.org/markup-compatibility/2006";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/// Parts of a package; only `body` is required.
#[derive(Default, Clone)]
pub struct Docx {
    pub body: String,
    pub comments: Option<String>,
    pub comments_extended: Option<String>,
    pub people: Option<String>,
    pub numbering: Option<String>,
    pub styles: Option<String>,
    pub footnotes: Option<String>,
    pub endnotes: Option<String>,
    pub header: Option<String>,
    pub footer: Option<String>,
    /// word/settings.xml's content.
    pub settings: Option<String>,
    /// `Application` of docProps/app.xml, when the file should name one.
    pub app: Option<String>,
    /// Use the ISO Strict namespace for WordprocessingML.
    pub strict: bool,
}

fn ns_decls(w: &str) -> String {
    format!(
        r#"xmlns:w="{w}" xmlns:w14="{W14}" xmlns:w15="{W15}" xmlns:mc="{MC}" xmlns:r="{R}" xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" xmlns:v="urn:schemas-microsoft-com:vml" mc:Ignorable="w14 w15""#
    )
}

impl Docx {
    pub fn body(xml: &str) -> Self {
        Docx { body: xml.to_string(), ..Default::default() }
    }

    pub fn bytes(&self) -> Vec<u8> {
        let w = if self.strict { "http://purl.oclc.org/ooxml/wordprocessingml/main" } else { W };
        let ns = ns_decls(w);
        let mut parts: Vec<(String, String)> = Vec::new();
        let mut rels = String::new();
        let mut add = |name: &str,
                       kind: &str,
                       root: &str,
                       content: &Option<String>,
                       parts: &mut Vec<(String, String)>| {
            if let Some(c) = content {
                parts.push((
                    format!("word/{name}"),
                    format!(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><{root} {ns}>{c}</{root}>"#),
                ));
                rels.push_str(&format!(
                    r#"<Relationship Id="r{name}" Type="{REL}/{kind}" Target="{name}"/>"#
                ));
            }
        };
        add("comments.xml", "comments", "w:comments", &self.comments, &mut parts);
        add(
            "commentsExtended.xml",
            "commentsExtended",
            "w15:commentsEx",
            &self.comments_extended,
            &mut parts,
        );
        add("people.xml", "people", "w15:people", &self.people, &mut parts);
        add("numbering.xml", "numbering", "w:numbering", &self.numbering, &mut parts);
        add("styles.xml", "styles", "w:styles", &self.styles, &mut parts);
        add("footnotes.xml", "footnotes", "w:footnotes", &self.footnotes, &mut parts);
        add("endnotes.xml", "endnotes", "w:endnotes", &self.endnotes, &mut parts);
        add("header1.xml", "header", "w:hdr", &self.header, &mut parts);
        add("footer1.xml", "footer", "w:ftr", &self.footer, &mut parts);
        add("settings.xml", "settings", "w:settings", &self.settings, &mut parts);
        // A header or footer shows where a section names it (Word shows
        // a part no section names nowhere, and the reader skips it).
        let mut refs = String::new();
        if self.header.is_some() {
            refs.push_str(r#"<w:headerReference w:type="default" r:id="rheader1.xml"/>"#);
        }
        if self.footer.is_some() {
            refs.push_str(r#"<w:footerReference w:type="default" r:id="rfooter1.xml"/>"#);
        }
        let section =
            if refs.is_empty() { String::new() } else { format!("<w:sectPr>{refs}</w:sectPr>") };
        let document = format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {ns}><w:body>{}{section}</w:body></w:document>"#,
            self.body
        );
        let mut files = vec![
            ("[Content_Types].xml".to_string(), content_types(&parts)),
            (
                "_rels/.rels".to_string(),
                format!(
                    r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/>{}</Relationships>"#,
                    if self.app.is_some() {
                        format!(
                            r#"<Relationship Id="rId2" Type="{REL}/extended-properties" Target="docProps/app.xml"/>"#
                        )
                    } else {
                        String::new()
                    }
                ),
            ),
            ("word/document.xml".to_string(), document),
            (
                "word/_rels/document.xml.rels".to_string(),
                format!(
                    r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#
                ),
            ),
        ];
        files.extend(parts);
        if let Some(app) = &self.app {
            files.push(("docProps/app.xml".into(), format!(r#"<?xml version="1.0"?><Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"><Application>{app}</Application><AppVersion>16.0000</AppVersion></Properties>"#)));
        }
        zip_files(&files.iter().map(|(n, c)| (n.as_str(), c.as_bytes())).collect::<Vec<_>>())
    }

    pub fn load(&self) -> redjury::docx::Document {
        redjury::docx::from_bytes(self.bytes(), Default::default()).expect("fixture loads")
    }
}

/// `[Content_Types].xml` naming each part's type, as a word processor
/// needs to open the file (redjury's reader goes by relationships).
fn content_types(parts: &[(String, String)]) -> String {
    const WML: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml";
    let mut overrides = format!(
        r#"<Override PartName="/word/document.xml" ContentType="{WML}.document.main+xml"/>"#
    );
    for (name, _) in parts {
        let stem = name.trim_start_matches("word/").trim_end_matches(".xml");
        let kind = stem.trim_end_matches(char::is_numeric);
        let kind = match kind {
            "header" | "footer" | "styles" | "comments" | "numbering" | "footnotes"
            | "endnotes" | "settings" | "commentsExtended" | "people" => kind,
            _ => continue,
        };
        overrides
            .push_str(&format!(r#"<Override PartName="/{name}" ContentType="{WML}.{kind}+xml"/>"#));
    }
    format!(
        r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>{overrides}</Types>"#
    )
}

pub fn zip_files(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        let options =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, content) in files {
            zip.start_file(*name, options).expect("zip entry");
            zip.write_all(content).expect("zip write");
        }
        zip.finish().expect("zip finish");
    }
    out.into_inner()
}

/// A paragraph with plain text.
pub fn p(text: &str) -> String {
    format!("<w:p><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
}

pub fn ins(id: u32, author: &str, text: &str) -> String {
    format!(
        r#"<w:ins w:id="{id}" w:author="{author}" w:date="2025-01-01T00:00:00Z"><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:ins>"#
    )
}

pub fn del(id: u32, author: &str, text: &str) -> String {
    format!(
        r#"<w:del w:id="{id}" w:author="{author}" w:date="2025-01-01T00:00:00Z"><w:r><w:delText xml:space="preserve">{text}</w:delText></w:r></w:del>"#
    )
}

pub fn run(text: &str) -> String {
    format!("<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r>")
}

/// A numbered paragraph (numId, ilvl).
pub fn np(num: u32, lvl: u32, inner: &str) -> String {
    format!(
        r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="{lvl}"/><w:numId w:val="{num}"/></w:numPr></w:pPr>{inner}</w:p>"#
    )
}

/// Contract-style numbering: abstractNum 1 with "%1." / "%1.%2" / "(%3)", used by numId 1.
pub fn contract_numbering() -> String {
    r#"<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/></w:lvl><w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%3)"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num>"#.to_string()
}
#[allow(dead_code)] // the benches' input
/// A contract of `sections` × 8 numbered paragraphs with two authors'
/// revisions and comments spread through it, and `note` as a last
/// paragraph (distinct notes make distinct documents).
pub fn synthetic_contract(sections: usize, note: &str) -> Vec<u8> {
    let mut body = String::new();
    let mut comments = String::new();
    let mut rev = 0u32;
    let mut cmt = 0u32;
    for s in 0..sections {
        body.push_str(&np(1, 0, &run(&format!("SECTION HEADING {s}"))));
        for c in 0..7 {
            let author = if (s + c) % 2 == 0 { "Vendor Counsel" } else { "Customer Counsel" };
            let mut inner = run(
                "The Supplier shall provide the Services with reasonable skill and care and in accordance with Good Industry Practice, ",
            );
            if c % 3 != 2 {
                rev += 2;
                inner.push_str(&del(rev, author, "within thirty (30) days"));
                inner.push_str(&ins(rev + 1, author, "within forty-five (45) days"));
            }
            if c % 4 == 0 {
                cmt += 1;
                inner.push_str(&format!(r#"<w:commentRangeStart w:id="{cmt}"/>{}<w:commentRangeEnd w:id="{cmt}"/><w:r><w:commentReference w:id="{cmt}"/></w:r>"#, run(" subject to Clause 9.2")));
                comments.push_str(&format!(r#"<w:comment w:id="{cmt}" w:author="{author}"><w:p><w:r><w:t>We cannot accept this without a cap; see our playbook position {cmt}.</w:t></w:r></w:p></w:comment>"#));
            }
            inner.push_str(&run(" and the Customer shall pay the Fees."));
            body.push_str(&np(1, if c % 2 == 0 { 1 } else { 2 }, &inner));
        }
    }
    if !note.is_empty() {
        body.push_str(&p(note));
    }
    let docx = Docx {
        body,
        comments: Some(comments),
        numbering: Some(contract_numbering()),
        ..Default::default()
    };
    docx.bytes()
}

pub mod alloc;
pub mod batch_mock;
pub mod browser;
pub mod checks;
pub mod e2e;
pub mod hostile;
pub mod mock;
pub mod pdfs;
pub mod postgres;
pub mod served;

/// The shared corpus of Word-made files (../shared/corpus beside the
/// checkout, or `REDJURY_CORPUS`). `None` — with a line saying the test
/// was skipped and how to run it — when it is absent, unless
/// `REDJURY_REQUIRE_CORPUS` is set (CI sets it), which makes its absence a
/// failure.
pub fn shared_corpus(test: &str) -> Option<std::path::PathBuf> {
    let dir = match std::env::var_os("REDJURY_CORPUS") {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    if dir.join("README.md").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("REDJURY_REQUIRE_CORPUS").is_none(),
        "{test}: the shared corpus is not at {} (REDJURY_REQUIRE_CORPUS is set)",
        dir.display()
    );
    eprintln!(
        "SKIPPED {test}: the shared corpus of Word-made files is not at {}; set REDJURY_CORPUS to its path to run it",
        dir.display()
    );
    None
}

/// The repository's root, where the example's tasks, outputs and gold live.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch folder, removed when dropped (also when its test fails).
pub struct Scratch(tempfile::TempDir);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A new empty scratch folder named after `tag`.
pub fn temp_dir(tag: &str) -> Scratch {
    Scratch(
        tempfile::Builder::new().prefix(&format!("redjury-{tag}-")).tempdir().expect("temp dir"),
    )
}

/// XML text for an attribute or element: `&`, `<`, `>` and `"` escaped,
/// and line breaks as character references, so that they survive.
pub fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
}

/// An .xlsx: each sheet (name, `sheetData` inner XML) its own part, and
/// the shared string table.
pub fn xlsx(sheets: &[(&str, String)], shared: &[String]) -> Vec<u8> {
    let rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
    let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
    let mut list = String::new();
    let mut rels = String::new();
    let mut parts: Vec<(String, String)> = Vec::new();
    for (i, (name, data)) in sheets.iter().enumerate() {
        let n = i + 1;
        list.push_str(&format!(
            r#"<sheet name="{}" sheetId="{n}" r:id="rId{n}"/>"#,
            xml_text(name)
        ));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="{rel}/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
        parts.push((
            format!("xl/worksheets/sheet{n}.xml"),
            format!(r#"<?xml version="1.0"?><worksheet xmlns="{main}"><sheetData>{data}</sheetData></worksheet>"#),
        ));
    }
    rels.push_str(&format!(
        r#"<Relationship Id="rIdS" Type="{rel}/sharedStrings" Target="sharedStrings.xml"/>"#
    ));
    let strings: String =
        shared.iter().map(|s| format!("<si><t>{}</t></si>", xml_text(s))).collect();
    parts.push((
        "xl/sharedStrings.xml".into(),
        format!(r#"<?xml version="1.0"?><sst xmlns="{main}">{strings}</sst>"#),
    ));
    parts.push((
        "xl/workbook.xml".into(),
        format!(r#"<?xml version="1.0"?><workbook xmlns="{main}" xmlns:r="{rel}"><sheets>{list}</sheets></workbook>"#),
    ));
    parts.push((
        "xl/_rels/workbook.xml.rels".into(),
        format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#),
    ));
    parts.push((
        "_rels/.rels".into(),
        format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#),
    ));
    let files: Vec<(&str, &[u8])> = parts.iter().map(|(n, c)| (n.as_str(), c.as_bytes())).collect();
    zip_files(&files)
}

/// A row of inline-string cells from column A.
pub fn inline_row(r: u32, texts: &[&str]) -> String {
    let cells: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let col = char::from(b'A' + i as u8);
            format!(
                r#"<c r="{col}{r}" t="inlineStr"><is><t xml:space="preserve">{}</t></is></c>"#,
                xml_text(t)
            )
        })
        .collect();
    format!(r#"<row r="{r}">{cells}</row>"#)
}

/// The judges' annotated view of a document, as `redjury render` prints it.
pub fn annotated(doc: &redjury::docx::Document, title: &str) -> String {
    redjury::render_view(doc, redjury::ViewKind::Annotated, title)
}

/// The judges' view of a workbook.
pub fn workbook_view(book: &redjury::xlsx::Workbook, title: &str) -> String {
    redjury::render_workbook_view(book, redjury::ViewKind::Annotated, title)
}

/// The accepted (or rejected) text, one paragraph per line.
pub fn text_lines(doc: &redjury::docx::Document, state: redjury::docx::State) -> Vec<String> {
    let kind = match state {
        redjury::docx::State::Accepted => redjury::ViewKind::Accepted,
        redjury::docx::State::Rejected => redjury::ViewKind::Rejected,
    };
    let text = redjury::render_view(doc, kind, "");
    let text = text.strip_suffix('\n').unwrap_or(&text);
    if text.is_empty() { Vec::new() } else { text.split('\n').map(str::to_string).collect() }
}
