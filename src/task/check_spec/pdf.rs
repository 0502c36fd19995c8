//! The parameters of the checks that read a PDF output (exhibits, Bates
//! productions, binders), validated at load: regexes compiled, regions
//! inside a page, input PDFs read.

use std::path::Path;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{CheckSpecError, param};
use crate::pdf::{Pdf, Rect};

/// Where on a page: a named area or a box.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Region {
    /// A named area of the media box (see docs/checks.md).
    Named(NamedRegion),
    /// `[x0, y0, x1, y1]` from the bottom left of the page as shown, in
    /// `unit`s.
    Box([f64; 4]),
}

/// The named areas: a corner is the outer 40% across and 12% up or down;
/// `top` and `bottom` span the width; `page` is all of it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NamedRegion {
    /// Bottom right corner.
    BottomRight,
    /// Bottom left corner.
    BottomLeft,
    /// Top right corner.
    TopRight,
    /// Top left corner.
    TopLeft,
    /// The bottom band.
    Bottom,
    /// The top band.
    Top,
    /// The whole page.
    Page,
}

/// The unit of a box region.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Points (1/72 inch).
    #[default]
    Pt,
    /// Inches.
    In,
}

impl Region {
    /// The region on `page`, in user space. Regions are given as the page
    /// is shown: on its visible box (the crop box, else the media box),
    /// turned by its `/Rotate` — the bottom right of a page turned 90° is
    /// the bottom right a reader sees.
    pub fn on_page(&self, page: &crate::pdf::Page, unit: Unit) -> Rect {
        let visible = page.crop_box.unwrap_or(page.media_box);
        let quarter = page.rotation.rem_euclid(360) / 90;
        let (w, h) = (visible.width(), visible.height());
        // The shown page's size, and a point on it back in user space.
        let (sw, sh) = if quarter % 2 == 1 { (h, w) } else { (w, h) };
        let back = |u: f64, v: f64| match quarter {
            1 => (visible.x1 - v, visible.y0 + u),
            2 => (visible.x1 - u, visible.y1 - v),
            3 => (visible.x0 + v, visible.y1 - u),
            _ => (visible.x0 + u, visible.y0 + v),
        };
        let shown = self.on_shown(sw, sh, unit);
        let (a, b) = back(shown.x0, shown.y0);
        let (c, d) = back(shown.x1, shown.y1);
        Rect::normalised(a, b, c, d)
    }

    /// The region on a shown page of `w` × `h` points, from its bottom left.
    fn on_shown(&self, w: f64, h: f64, unit: Unit) -> Rect {
        let band = 0.12 * h;
        match self {
            Region::Box([a, b, c, d]) => {
                let k = if unit == Unit::In { 72.0 } else { 1.0 };
                Rect::normalised(a * k, b * k, c * k, d * k)
            }
            Region::Named(n) => match n {
                NamedRegion::BottomRight => Rect { x0: 0.6 * w, y0: 0.0, x1: w, y1: band },
                NamedRegion::BottomLeft => Rect { x0: 0.0, y0: 0.0, x1: 0.4 * w, y1: band },
                NamedRegion::TopRight => Rect { x0: 0.6 * w, y0: h - band, x1: w, y1: h },
                NamedRegion::TopLeft => Rect { x0: 0.0, y0: h - band, x1: 0.4 * w, y1: h },
                NamedRegion::Bottom => Rect { x0: 0.0, y0: 0.0, x1: w, y1: band },
                NamedRegion::Top => Rect { x0: 0.0, y0: h - band, x1: w, y1: h },
                NamedRegion::Page => Rect { x0: 0.0, y0: 0.0, x1: w, y1: h },
            },
        }
    }

    fn validate(&self) -> Result<(), CheckSpecError> {
        if let Region::Box(b) = self
            && (b.iter().any(|v| !v.is_finite() || *v < 0.0) || b[0] >= b[2] || b[1] >= b[3])
        {
            return param("region", "a box is [x0, y0, x1, y1] with x0 < x1 and y0 < y1, all ≥ 0");
        }
        Ok(())
    }
}

fn bottom_right() -> Region {
    Region::Named(NamedRegion::BottomRight)
}

/// `bates`: one number per page in a region, consecutive from `start`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatesSpec {
    /// The prefix before the digits ("ACME").
    pub prefix: String,
    /// How many digits, zero-padded.
    pub digits: u32,
    /// The first page's number.
    pub start: u64,
    #[serde(default = "bottom_right")]
    /// Where the number sits.
    pub region: Region,
    #[serde(default)]
    /// The unit of a box region.
    pub unit: Unit,
    #[serde(default)]
    /// Smallest font size, points.
    pub min_size: Option<f64>,
    #[serde(default)]
    /// Largest font size, points.
    pub max_size: Option<f64>,
}

/// `pages`: the output's pages are the inputs' pages in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagesSpec {
    /// The input PDFs, in the order their pages must appear (relative to
    /// the task file).
    pub inputs: Vec<String>,
    #[serde(default)]
    /// A regex: pages whose first line matches it may stand between
    /// inputs' pages (slip sheets, covers).
    pub inserted: Option<String>,
    #[serde(default)]
    /// Exactly this many inserted pages.
    pub inserted_count: Option<u32>,
    #[serde(default)]
    /// Exactly this many pages in all.
    pub count: Option<u32>,
}

/// One expected bookmark.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedBookmark {
    #[serde(default)]
    /// The title, exactly (spaces collapsed).
    pub title: Option<String>,
    #[serde(default)]
    /// Or a regex the title matches.
    pub pattern: Option<String>,
    #[serde(default)]
    /// Its level (1: top).
    pub level: Option<u32>,
    #[serde(default)]
    /// The page it leads to.
    pub page: Option<u32>,
}

/// `bookmarks`: the outline equals a list, in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BookmarksSpec {
    #[serde(default)]
    /// The bookmarks expected, in outline order.
    pub expected: Vec<ExpectedBookmark>,
    #[serde(default)]
    /// Or: one top-level bookmark per page whose first line matches this
    /// regex, titled with that line and leading to that page.
    pub of_pages_matching: Option<String>,
    #[serde(default = "yes")]
    /// No bookmark beyond those expected.
    pub only: bool,
}

fn yes() -> bool {
    true
}

/// `links`: a table of contents whose entries link to the pages they name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksSpec {
    /// The page the table of contents is on.
    pub toc_page: u32,
    /// A regex for a table-of-contents line, with named groups `title`
    /// and `page` (the page number it prints).
    pub entry: String,
    /// How many entries the table must have.
    pub entries: u32,
    #[serde(default = "yes")]
    /// No link outside the table's entries.
    pub only: bool,
}

/// The kinds of annotation `annotations` counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationSort {
    /// Rubber stamps.
    Stamp,
    /// Highlights.
    Highlight,
    /// Sticky notes.
    Note,
}

/// Line ranges a highlight must cover, on one page.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HighlightLines {
    /// The page.
    pub page: u32,
    /// Text lines counted from 1 at the top, `[first, last]`, inclusive.
    pub lines: Vec<[u32; 2]>,
}

/// `annotations`: stamps, highlights or notes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationsSpec {
    /// Which kind is counted.
    pub kind: AnnotationSort,
    #[serde(default)]
    /// The pages looked at (default: all).
    pub pages: Vec<u32>,
    #[serde(default)]
    /// At least this many on each page looked at.
    pub min_per_page: Option<u32>,
    #[serde(default)]
    /// At most this many on each page looked at.
    pub max_per_page: Option<u32>,
    #[serde(default)]
    /// A regex the text matches (stamp appearance, name or contents).
    pub text: Option<String>,
    #[serde(default)]
    /// Its colour, `#rrggbb`.
    pub colour: Option<String>,
    #[serde(default)]
    /// Where it must lie.
    pub region: Option<Region>,
    #[serde(default)]
    /// The unit of a box region.
    pub unit: Unit,
    #[serde(default)]
    /// It must not cover page text (glyph boxes, 1 pt of slack).
    pub not_over_text: bool,
    #[serde(default)]
    /// Highlights: the lines they must cover …
    pub highlights: Vec<HighlightLines>,
    #[serde(default)]
    /// … at this line-level F1 (default 1).
    pub min_f1: Option<f64>,
}

/// `text_region`: text in a region on every page (or those stated).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextRegionSpec {
    /// A regex the region's text matches.
    pub pattern: String,
    /// Where.
    pub region: Region,
    #[serde(default)]
    /// The unit of a box region.
    pub unit: Unit,
    #[serde(default)]
    /// The pages (default: every page).
    pub pages: Vec<u32>,
    #[serde(default)]
    /// Smallest font size, points.
    pub min_size: Option<f64>,
    #[serde(default)]
    /// Largest font size, points.
    pub max_size: Option<f64>,
    #[serde(default)]
    /// The text's colour, `#rrggbb`.
    pub colour: Option<String>,
    #[serde(default)]
    /// A PDF whose text must still stand where it stood, page for page
    /// (relative to the task file): what the output was made from.
    pub unchanged_from: Option<String>,
}

/// `pdf_provenance`: what made the file, and its text layer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdfProvenanceSpec {
    #[serde(default)]
    /// A regex the producer (Info or XMP) matches.
    pub producer: Option<String>,
    #[serde(default)]
    /// A regex the creator (Info or XMP creator tool) matches.
    pub creator: Option<String>,
    #[serde(default)]
    /// Every page has extractable text.
    pub text_layer: bool,
}

/// What a PDF check compiles to.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    /// Patterns in the order the evaluator reads them.
    pub(crate) regexes: Vec<Regex>,
    /// Input PDFs, with how to name them in a reason.
    pub(crate) inputs: Vec<(String, Arc<Pdf>)>,
    /// Colours, parsed.
    pub(crate) colour: Option<crate::pdf::Colour>,
}

/// The SHA-256 of each input PDF read, for the fingerprint.
pub(super) type Shas = Vec<String>;

/// Validates a PDF check and reads the files it names.
pub(super) fn compile(
    spec: &super::CheckSpec,
    base: &Path,
) -> Result<Option<(Compiled, Shas)>, CheckSpecError> {
    use super::CheckSpec as C;
    let mut out = Compiled::default();
    let mut shas = Vec::new();
    match spec {
        C::Bates(b) => {
            b.region.validate()?;
            if !(1..=12).contains(&b.digits) {
                return param("digits", "1 to 12 digits");
            }
            if b.start >= 10u64.pow(b.digits) {
                return param("start", format!("{} does not fit in {} digits", b.start, b.digits));
            }
            sizes(b.min_size, b.max_size)?;
            let re = format!(
                r"(?:^|[^A-Za-z0-9]){}[ _-]?(\d{{{}}})(?:$|[^0-9])",
                regex::escape(&b.prefix),
                b.digits
            );
            out.regexes.push(compile_re("prefix", &re)?);
        }
        C::Pages(p) => {
            if p.inputs.is_empty() {
                return param("inputs", "name the input PDFs, in order");
            }
            for name in &p.inputs {
                let (pdf, sha) = load(name, base, "inputs")?;
                out.inputs.push((name.clone(), pdf));
                shas.push(sha);
            }
            if let Some(r) = &p.inserted {
                out.regexes.push(compile_re("inserted", r)?);
            } else if p.inserted_count.is_some_and(|n| n > 0) {
                return param("inserted", "inserted_count needs the pattern inserted pages match");
            }
        }
        C::Bookmarks(b) => {
            match (&b.of_pages_matching, b.expected.is_empty()) {
                (Some(r), true) => out.regexes.push(compile_re("of_pages_matching", r)?),
                (None, false) => {}
                _ => return param("expected", "give expected or of_pages_matching, not both"),
            }
            for e in &b.expected {
                match (&e.title, &e.pattern) {
                    (Some(_), None) => out.regexes.push(compile_re("title", "^$")?),
                    (None, Some(p)) => out.regexes.push(compile_re("pattern", p)?),
                    _ => return param("expected", "each bookmark has a title or a pattern"),
                }
            }
        }
        C::Links(l) => {
            let re = compile_re("entry", &l.entry)?;
            let names: Vec<&str> = re.capture_names().flatten().collect();
            if !names.contains(&"title") || !names.contains(&"page") {
                return param("entry", "name the groups (?P<title>…) and (?P<page>…)");
            }
            if l.toc_page == 0 || l.entries == 0 {
                return param("toc_page", "pages and entries count from 1");
            }
            out.regexes.push(re);
        }
        C::Annotations(a) => {
            if let Some(r) = &a.region {
                r.validate()?;
            }
            if let (Some(lo), Some(hi)) = (a.min_per_page, a.max_per_page)
                && lo > hi
            {
                return param("min_per_page", format!("{lo} is greater than max_per_page {hi}"));
            }
            if !a.highlights.is_empty() && a.kind != AnnotationSort::Highlight {
                return param("highlights", "line ranges are for kind \"highlight\"");
            }
            if a.highlights.iter().flat_map(|h| &h.lines).any(|[f, l]| *f == 0 || f > l) {
                return param("highlights", "line ranges are [first, last], from 1");
            }
            if let Some(f) = a.min_f1 {
                super::check_f1(f)?;
            }
            if let Some(t) = &a.text {
                out.regexes.push(compile_re("text", t)?);
            }
            out.colour = a.colour.as_deref().map(colour).transpose()?;
        }
        C::TextRegion(t) => {
            t.region.validate()?;
            sizes(t.min_size, t.max_size)?;
            out.regexes.push(compile_re("pattern", &t.pattern)?);
            out.colour = t.colour.as_deref().map(colour).transpose()?;
            if let Some(name) = &t.unchanged_from {
                let (pdf, sha) = load(name, base, "unchanged_from")?;
                out.inputs.push((name.clone(), pdf));
                shas.push(sha);
            }
        }
        C::PdfProvenance(p) => {
            if p.producer.is_none() && p.creator.is_none() && !p.text_layer {
                return param("producer", "give producer, creator, text_layer or several");
            }
            for (name, r) in [("producer", &p.producer), ("creator", &p.creator)] {
                if let Some(r) = r {
                    out.regexes.push(compile_re(name, &format!("(?i){r}"))?);
                }
            }
        }
        _ => return Ok(None),
    }
    Ok(Some((out, shas)))
}

fn sizes(min: Option<f64>, max: Option<f64>) -> Result<(), CheckSpecError> {
    for v in [min, max].into_iter().flatten() {
        if !(v.is_finite() && v > 0.0) {
            return param("min_size", "a font size in points, above 0");
        }
    }
    match (min, max) {
        (Some(a), Some(b)) if a > b => {
            param("min_size", format!("{a} is greater than max_size {b}"))
        }
        _ => Ok(()),
    }
}

fn colour(hex: &str) -> Result<crate::pdf::Colour, CheckSpecError> {
    let digits = hex.strip_prefix('#').unwrap_or(hex);
    let byte = |i: usize| digits.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
    match (digits.len(), byte(0), byte(2), byte(4)) {
        (6, Some(r), Some(g), Some(b)) => Ok(crate::pdf::Colour {
            r: f64::from(r) / 255.0,
            g: f64::from(g) / 255.0,
            b: f64::from(b) / 255.0,
        }),
        _ => param("colour", format!("{hex:?} is not a colour like \"#cc0000\"")),
    }
}

fn compile_re(name: &'static str, pattern: &str) -> Result<Regex, CheckSpecError> {
    super::compile(name, pattern)
}

/// Reads a PDF a check names, and its hash.
fn load(
    written: &str,
    base: &Path,
    name: &'static str,
) -> Result<(Arc<Pdf>, String), CheckSpecError> {
    let (path, shown) = crate::task::named_file(written, base);
    let fail = |message| CheckSpecError::Parameter { param: name, message };
    let bytes = crate::docx::read_file(&path, &crate::docx::Limits::default())
        .map_err(|e| fail(format!("{shown}: {}", crate::task::unreadable(&e))))?;
    let sha = crate::hash::sha256_hex_bytes(&bytes);
    let pdf = crate::pdf::from_bytes(&bytes, crate::pdf::Limits::default())
        .map_err(|e| fail(format!("{shown}: {e}")))?;
    Ok((Arc::new(pdf), sha))
}

#[cfg(test)]
mod tests {
    use crate::task::check_spec::PreparedCheck;
    use serde_json::json;

    fn err(v: serde_json::Value) -> String {
        PreparedCheck::from_json(&v, std::path::Path::new("."))
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn pdf_check_parameters_are_validated_with_their_name() {
        let cases = [
            (
                json!({"type": "bates", "prefix": "A", "digits": 0, "start": 1}),
                "check parameter `digits`: 1 to 12 digits",
            ),
            (
                json!({"type": "bates", "prefix": "A", "digits": 2, "start": 100}),
                "check parameter `start`: 100 does not fit in 2 digits",
            ),
            (
                json!({"type": "bates", "prefix": "A", "digits": 6, "start": 1, "region": [10, 10, 5, 20]}),
                "check parameter `region`: a box is [x0, y0, x1, y1] with x0 < x1 and y0 < y1, all ≥ 0",
            ),
            (
                json!({"type": "bates", "prefix": "A", "digits": 6, "start": 1, "region": "middle"}),
                "check: data did not match any variant of untagged enum Region",
            ),
            (
                json!({"type": "bates", "prefix": "A", "digits": 6, "start": 1, "min_size": 12, "max_size": 8}),
                "check parameter `min_size`: 12 is greater than max_size 8",
            ),
            (
                json!({"type": "pages", "inputs": []}),
                "check parameter `inputs`: name the input PDFs, in order",
            ),
            (
                json!({"type": "bookmarks"}),
                "check parameter `expected`: give expected or of_pages_matching, not both",
            ),
            (
                json!({"type": "bookmarks", "expected": [{"level": 1}]}),
                "check parameter `expected`: each bookmark has a title or a pattern",
            ),
            (
                json!({"type": "links", "toc_page": 1, "entry": "(?P<title>.+)", "entries": 2}),
                "check parameter `entry`: name the groups (?P<title>…) and (?P<page>…)",
            ),
            (
                json!({"type": "annotations", "kind": "stamp", "highlights": [{"page": 1, "lines": [[1, 2]]}]}),
                "check parameter `highlights`: line ranges are for kind \"highlight\"",
            ),
            (
                json!({"type": "annotations", "kind": "highlight", "highlights": [{"page": 1, "lines": [[3, 2]]}]}),
                "check parameter `highlights`: line ranges are [first, last], from 1",
            ),
            (
                json!({"type": "annotations", "kind": "note", "colour": "red"}),
                "check parameter `colour`: \"red\" is not a colour like \"#cc0000\"",
            ),
            (
                json!({"type": "text_region", "pattern": "(", "region": "top"}),
                "check parameter `pattern`: invalid regex",
            ),
            (
                json!({"type": "pdf_provenance"}),
                "check parameter `producer`: give producer, creator, text_layer or several",
            ),
            (
                json!({"type": "pdf_provenance", "text_layer": true, "colour": "#000000"}),
                "check: unknown field `colour`",
            ),
        ];
        for (spec, want) in cases {
            let got = err(spec.clone());
            assert!(got.starts_with(want), "{spec}: {got}");
        }
        let missing = err(json!({"type": "pages", "inputs": ["nope.pdf"]}));
        assert!(
            missing.starts_with("check parameter `inputs`: \"nope.pdf\" is nope.pdf"),
            "{missing}"
        );
        assert_eq!(err(json!({"type": "pdf_provenance", "producer": "qpdf"})), "");
    }
}
