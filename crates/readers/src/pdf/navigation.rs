//! The parts of a PDF read as objects, not drawn: page geometry and
//! labels, annotations, the outline, destinations and metadata. Every
//! walk over a tree the file links together keeps a visited set and a
//! bound: a file may link any of them into a loop.

use std::collections::{BTreeMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};
use serde::{Deserialize, Serialize};

use super::{Colour, Metadata, Rect};

/// Most nodes any one tree walk visits.
const MAX_NODES: usize = 100_000;

/// Where a link or bookmark leads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LinkTarget {
    /// A page of this document, 1-based.
    Page {
        /// The page.
        page: u32,
    },
    /// A web address.
    Uri {
        /// The address.
        uri: String,
    },
    /// Another file, at a page when given.
    Remote {
        /// The file as the link names it.
        file: String,
        /// The page (1-based), when the link gives one.
        page: Option<u32>,
    },
    /// A destination that does not resolve to a page of this file.
    Unresolved {
        /// What the file gives, as text.
        what: String,
    },
}

/// Where a link leads, in words, one line: "page 6", "web address
/// \"https://…\"", "file \"b.pdf\", page 2", "nowhere (…)". The file's
/// own text is quoted as Rust quotes a string, so no line break survives.
impl std::fmt::Display for LinkTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkTarget::Page { page } => write!(f, "page {page}"),
            LinkTarget::Uri { uri } => write!(f, "web address {uri:?}"),
            LinkTarget::Remote { file, page: Some(p) } => write!(f, "file {file:?}, page {p}"),
            LinkTarget::Remote { file, page: None } => write!(f, "file {file:?}"),
            LinkTarget::Unresolved { what } => write!(f, "nowhere ({what:?})"),
        }
    }
}

/// What an annotation is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnnotationKind {
    /// A link.
    Link {
        /// Where it leads.
        target: LinkTarget,
    },
    /// A rubber stamp.
    Stamp {
        /// Its icon name (`/Name`), when given.
        name: Option<String>,
        /// The text its appearance draws (simple fonts only).
        appearance_text: String,
    },
    /// A highlight.
    Highlight {
        /// The quadrilaterals it covers, as boxes.
        quads: Vec<Rect>,
    },
    /// A sticky note.
    Note,
    /// A free-text box.
    FreeText,
    /// Any other subtype.
    Other {
        /// The subtype.
        subtype: String,
    },
}

/// An annotation on a page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Annotation {
    /// What it is.
    #[serde(flatten)]
    pub kind: AnnotationKind,
    /// Its rectangle.
    pub rect: Rect,
    /// `/Contents`.
    pub contents: Option<String>,
    /// `/C`, its colour.
    pub colour: Option<Colour>,
    /// Its flags (`/F`) say Hidden or NoView: viewers do not show it.
    pub hidden: bool,
}

/// One outline entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bookmark {
    /// The title.
    pub title: String,
    /// 1 for a top-level entry.
    pub level: u32,
    /// Where it leads.
    pub target: Option<LinkTarget>,
}

impl Bookmark {
    /// The page it leads to, when it leads to one of this file's.
    pub fn page(&self) -> Option<u32> {
        match self.target {
            Some(LinkTarget::Page { page }) => Some(page),
            _ => None,
        }
    }
}

pub(super) struct Geometry {
    pub media_box: Rect,
    pub crop_box: Option<Rect>,
    pub rotation: i64,
}

/// A key of the page or, inherited, of its ancestors.
fn inherited<'d>(doc: &'d Document, page: ObjectId, key: &[u8]) -> Option<&'d Object> {
    let mut node = doc.get_dictionary(page).ok()?;
    for _ in 0..64 {
        if let Ok(v) = node.get(key) {
            return doc.dereference(v).ok().map(|(_, o)| o);
        }
        node = doc.get_dictionary(node.get(b"Parent").ok()?.as_reference().ok()?).ok()?;
    }
    None
}

fn rect_of(o: Option<&Object>) -> Option<Rect> {
    let n: Vec<f64> = o?.as_array().ok()?.iter().filter_map(number).collect();
    match n.as_slice() {
        [a, b, c, d] => Some(Rect::normalised(*a, *b, *c, *d)),
        _ => None,
    }
}

pub(super) fn number(o: &Object) -> Option<f64> {
    match o {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)).filter(|v| v.is_finite()),
        _ => None,
    }
}

pub(super) fn geometry(doc: &Document, page: ObjectId) -> Geometry {
    let letter = Rect { x0: 0.0, y0: 0.0, x1: 612.0, y1: 792.0 };
    let media_box = rect_of(inherited(doc, page, b"MediaBox")).unwrap_or(letter);
    let crop_box = rect_of(inherited(doc, page, b"CropBox")).filter(|c| *c != media_box);
    let rotation = inherited(doc, page, b"Rotate").and_then(|r| r.as_i64().ok()).unwrap_or(0);
    Geometry { media_box, crop_box, rotation: rotation.rem_euclid(360) / 90 * 90 }
}

fn text(o: &Object) -> Option<String> {
    lopdf::decode_text_string(o).ok()
}

fn dict_text(doc: &Document, d: &Dictionary, key: &[u8]) -> Option<String> {
    let o = doc.dereference(d.get(key).ok()?).ok()?.1;
    text(o).filter(|s| !s.is_empty())
}

/// Pushes a tree node's `/Kids` not seen before, within [`MAX_NODES`]:
/// a file may link a tree into a loop.
fn push_kids<'d>(
    doc: &'d Document,
    node: &Dictionary,
    seen: &mut HashSet<ObjectId>,
    stack: &mut Vec<&'d Dictionary>,
) {
    for kid in node.get(b"Kids").and_then(Object::as_array).into_iter().flatten() {
        let Ok(id) = kid.as_reference() else { continue };
        if seen.len() < MAX_NODES
            && seen.insert(id)
            && let Ok(d) = doc.get_dictionary(id)
        {
            stack.push(d);
        }
    }
}

/// The page labels, one per page (`None` where the file defines none):
/// the number tree walked without recursion, then pages and ranges in one
/// sweep.
pub(super) fn page_labels(doc: &Document, pages: usize) -> Vec<Option<String>> {
    let mut ranges: Vec<(usize, &Dictionary)> = Vec::new();
    let root = catalog_entry(doc, b"PageLabels").and_then(|o| o.as_dict().ok());
    let mut stack: Vec<&Dictionary> = root.into_iter().collect();
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if let Ok(nums) = node.get(b"Nums").and_then(Object::as_array) {
            for pair in nums.chunks(2).take(MAX_NODES) {
                if let [key, value] = pair
                    && let (Ok(k), Ok((_, v))) = (key.as_i64(), doc.dereference(value))
                    && let (Ok(k), Ok(v)) = (usize::try_from(k), v.as_dict())
                    && k < pages
                {
                    ranges.push((k, v));
                }
            }
        }
        push_kids(doc, node, &mut seen, &mut stack);
    }
    ranges.sort_by_key(|(start, _)| *start);
    let mut out = Vec::with_capacity(pages);
    let mut current: Option<&(usize, &Dictionary)> = None;
    let mut next = ranges.iter().peekable();
    for i in 0..pages {
        while let Some(r) = next.next_if(|(start, _)| *start <= i) {
            current = Some(r);
        }
        out.push(current.map(|(start, style)| label(doc, style, i - start)));
    }
    out
}

fn label(doc: &Document, style: &Dictionary, offset: usize) -> String {
    let prefix = dict_text(doc, style, b"P").unwrap_or_default();
    let start = style.get(b"St").and_then(Object::as_i64).unwrap_or(1).max(1) as usize;
    let n = start.saturating_add(offset);
    let body = match style.get(b"S").and_then(Object::as_name).ok() {
        Some(b"D") => n.to_string(),
        Some(b"R") => roman(n).to_uppercase(),
        Some(b"r") => roman(n),
        Some(b"A") => letters(n).to_uppercase(),
        Some(b"a") => letters(n),
        _ => String::new(),
    };
    format!("{prefix}{body}")
}

fn roman(mut n: usize) -> String {
    const TABLE: [(usize, &str); 13] = [
        (1000, "m"),
        (900, "cm"),
        (500, "d"),
        (400, "cd"),
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ];
    if n > 100_000 {
        return n.to_string();
    }
    let mut s = String::new();
    for (value, digits) in TABLE {
        while n >= value {
            s.push_str(digits);
            n -= value;
        }
    }
    s
}

/// a, b, …, z, aa, bb, … as PDF labels count.
fn letters(n: usize) -> String {
    let n = n.clamp(1, 26 * 100);
    let letter = char::from(b'a' + ((n - 1) % 26) as u8);
    std::iter::repeat_n(letter, (n - 1) / 26 + 1).collect()
}

fn catalog_entry<'d>(doc: &'d Document, key: &[u8]) -> Option<&'d Object> {
    let o = doc.catalog().ok()?.get(key).ok()?;
    doc.dereference(o).ok().map(|(_, o)| o)
}

/// Resolves a destination (an explicit array, or a name looked up in
/// the catalog's `/Dests` or `/Names /Dests`) to a target.
fn destination(doc: &Document, dest: &Object, pages: &Pages<'_>) -> LinkTarget {
    let dest = doc.dereference(dest).map(|(_, o)| o).unwrap_or(dest);
    match dest {
        Object::Array(a) => match a.first() {
            Some(Object::Reference(id)) => match pages.numbers.get(id) {
                Some(page) => LinkTarget::Page { page: *page },
                None => LinkTarget::Unresolved { what: format!("object {} {}", id.0, id.1) },
            },
            Some(Object::Integer(i)) => LinkTarget::Unresolved { what: format!("page index {i}") },
            _ => LinkTarget::Unresolved { what: "an empty destination".into() },
        },
        Object::Name(n) | Object::String(n, _) => match pages.names.get(doc, n) {
            Some(Object::Array(a)) => destination(doc, &Object::Array(a), pages),
            _ => LinkTarget::Unresolved {
                what: format!("the name {:?}", String::from_utf8_lossy(n)),
            },
        },
        Object::Dictionary(d) => match d.get(b"D") {
            Ok(Object::Array(a)) => destination(doc, &Object::Array(a.clone()), pages),
            _ => LinkTarget::Unresolved { what: "a destination dictionary".into() },
        },
        _ => LinkTarget::Unresolved { what: "no destination".into() },
    }
}

/// The document's named destinations, read once: the catalog's `/Dests`
/// dictionary and the `/Names /Dests` name tree (walked without
/// recursion, each node once).
pub(super) struct Names<'d> {
    map: std::collections::HashMap<&'d [u8], &'d Object>,
}

impl<'d> Names<'d> {
    pub(super) fn of(doc: &'d Document) -> Names<'d> {
        let mut map = std::collections::HashMap::new();
        if let Some(d) = catalog_entry(doc, b"Dests").and_then(|o| o.as_dict().ok()) {
            for (k, v) in d.iter().take(MAX_NODES) {
                map.insert(k.as_slice(), v);
            }
        }
        let tree = catalog_entry(doc, b"Names")
            .and_then(|n| n.as_dict().ok())
            .and_then(|n| doc.dereference(n.get(b"Dests").ok()?).ok())
            .and_then(|(_, t)| t.as_dict().ok());
        let mut seen = HashSet::new();
        let mut stack: Vec<&Dictionary> = tree.into_iter().collect();
        while let Some(node) = stack.pop() {
            if let Ok(pairs) = node.get(b"Names").and_then(Object::as_array) {
                for pair in pairs.chunks(2) {
                    if let [Object::String(k, _), v] = pair
                        && map.len() < MAX_NODES
                    {
                        map.entry(k.as_slice()).or_insert(v);
                    }
                }
            }
            push_kids(doc, node, &mut seen, &mut stack);
        }
        Names { map }
    }

    /// A named destination's value (its `/D` when it is a dictionary).
    fn get(&self, doc: &'d Document, name: &[u8]) -> Option<Object> {
        let v = doc.dereference(self.map.get(name)?).ok()?.1;
        Some(match v {
            Object::Dictionary(d) => d.get(b"D").ok()?.clone(),
            other => other.clone(),
        })
    }
}

/// Where an action or a `/Dest` leads.
fn target(doc: &Document, d: &Dictionary, pages: &Pages<'_>) -> Option<LinkTarget> {
    if let Ok(dest) = d.get(b"Dest") {
        return Some(destination(doc, dest, pages));
    }
    let action = doc.dereference(d.get(b"A").ok()?).ok()?.1.as_dict().ok()?;
    match action.get(b"S").and_then(Object::as_name).ok()? {
        b"GoTo" => Some(destination(doc, action.get(b"D").ok()?, pages)),
        b"URI" => Some(LinkTarget::Uri {
            uri: action
                .get(b"URI")
                .and_then(Object::as_str)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .unwrap_or_default(),
        }),
        b"GoToR" | b"Launch" => {
            let file = match action.get(b"F").ok().map(|f| doc.dereference(f).map(|(_, o)| o)) {
                Some(Ok(Object::Dictionary(spec))) => dict_text(doc, spec, b"UF")
                    .or_else(|| dict_text(doc, spec, b"F"))
                    .unwrap_or_default(),
                Some(Ok(other)) => text(other).unwrap_or_default(),
                _ => String::new(),
            };
            let page = match action.get(b"D") {
                Ok(Object::Array(a)) => {
                    a.first().and_then(|p| p.as_i64().ok()).and_then(|p| u32::try_from(p + 1).ok())
                }
                _ => None,
            };
            Some(LinkTarget::Remote { file, page })
        }
        other => Some(LinkTarget::Unresolved {
            what: format!("a /{} action", String::from_utf8_lossy(other)),
        }),
    }
}

/// What resolving a destination needs: page numbers by object, and the
/// named destinations.
pub(super) struct Pages<'d> {
    pub numbers: &'d BTreeMap<ObjectId, u32>,
    pub names: Names<'d>,
}

/// Every page's annotations, within [`super::Limits::max_annotations`]
/// over the file (an `/Annots` array may be shared by every page).
pub(super) fn all_annotations(
    doc: &Document,
    page_ids: &BTreeMap<u32, ObjectId>,
    pages: &Pages<'_>,
    limits: &super::Limits,
) -> Result<Vec<Vec<Annotation>>, super::PdfError> {
    let mut left = limits.max_annotations;
    let mut out = Vec::with_capacity(page_ids.len());
    for id in page_ids.values() {
        let list = doc
            .get_dictionary(*id)
            .ok()
            .and_then(|p| p.get(b"Annots").ok())
            .and_then(|a| doc.dereference(a).ok())
            .and_then(|(_, a)| a.as_array().ok());
        let list = list.map(Vec::as_slice).unwrap_or_default();
        if list.len() > left {
            return Err(super::PdfError::TooLarge {
                what: "its annotations".into(),
                limit: limits.max_annotations as u64,
            });
        }
        left -= list.len();
        out.push(
            list.iter()
                .filter_map(|a| doc.dereference(a).ok()?.1.as_dict().ok())
                .map(|d| annotation(doc, d, pages))
                .collect(),
        );
    }
    Ok(out)
}

fn annotation(doc: &Document, d: &Dictionary, pages: &Pages<'_>) -> Annotation {
    let subtype = d.get(b"Subtype").and_then(Object::as_name).unwrap_or(b"");
    let kind = match subtype {
        b"Link" => AnnotationKind::Link {
            target: target(doc, d, pages)
                .unwrap_or(LinkTarget::Unresolved { what: "no destination".into() }),
        },
        b"Stamp" => AnnotationKind::Stamp {
            name: d
                .get(b"Name")
                .and_then(Object::as_name)
                .ok()
                .map(|n| String::from_utf8_lossy(n).into_owned()),
            appearance_text: appearance_text(doc, d),
        },
        b"Highlight" => AnnotationKind::Highlight { quads: quads(d) },
        b"Text" => AnnotationKind::Note,
        b"FreeText" => AnnotationKind::FreeText,
        other => AnnotationKind::Other { subtype: String::from_utf8_lossy(other).into_owned() },
    };
    let colour =
        d.get(b"C").and_then(Object::as_array).ok().and_then(|c| {
            Colour::from_components(&c.iter().filter_map(number).collect::<Vec<_>>())
        });
    let flags = d.get(b"F").and_then(Object::as_i64).unwrap_or(0);
    Annotation {
        kind,
        rect: rect_of(d.get(b"Rect").ok()).unwrap_or_default(),
        contents: dict_text(doc, d, b"Contents"),
        colour,
        hidden: flags & (2 | 32) != 0,
    }
}

fn quads(d: &Dictionary) -> Vec<Rect> {
    let n: Vec<f64> = d
        .get(b"QuadPoints")
        .and_then(Object::as_array)
        .map(|q| q.iter().filter_map(number).collect())
        .unwrap_or_default();
    n.chunks_exact(8)
        .map(|q| {
            let xs = q.iter().step_by(2);
            let ys = q.iter().skip(1).step_by(2);
            let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
            let (y0, y1) = ys.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
            Rect { x0, y0, x1, y1 }
        })
        .collect()
}

/// The strings a stamp's normal appearance shows, read as Latin-1: the
/// words of a stamp drawn with a simple font. Composite fonts are not
/// decoded here.
fn appearance_text(doc: &Document, d: &Dictionary) -> String {
    let stream = (|| {
        let ap = doc.dereference(d.get(b"AP").ok()?).ok()?.1.as_dict().ok()?;
        let n = doc.dereference(ap.get(b"N").ok()?).ok()?.1;
        let stream = n.as_stream().ok()?;
        let bytes = stream.decompressed_content().unwrap_or_else(|_| stream.content.clone());
        lopdf::content::Content::decode(&bytes).ok()
    })();
    let mut words = Vec::new();
    for op in stream.iter().flat_map(|c| c.operations.iter()) {
        let strings: Vec<&Object> = match op.operator.as_str() {
            "Tj" | "'" | "\"" => op.operands.last().into_iter().collect(),
            "TJ" => {
                op.operands.first().and_then(|a| a.as_array().ok()).into_iter().flatten().collect()
            }
            _ => continue,
        };
        let shown: String = strings
            .iter()
            .filter_map(|s| s.as_str().ok())
            .flat_map(|s| s.iter().map(|b| char::from(*b)))
            .filter(|c| !c.is_control())
            .collect();
        if !shown.trim().is_empty() {
            words.push(shown.trim().to_string());
        }
    }
    words.join(" ")
}

/// The outline, depth first.
pub(super) fn outline(doc: &Document, pages: &Pages<'_>) -> Vec<Bookmark> {
    let mut out = Vec::new();
    let Some(root) = catalog_entry(doc, b"Outlines").and_then(|o| o.as_dict().ok()) else {
        return out;
    };
    let mut seen = HashSet::new();
    // (first child of a level, its level): iterative, so depth costs no stack.
    let mut stack: Vec<(Option<ObjectId>, u32)> =
        vec![(root.get(b"First").and_then(Object::as_reference).ok(), 1)];
    while let Some((next, level)) = stack.pop() {
        let Some(id) = next else { continue };
        if seen.len() >= MAX_NODES || !seen.insert(id) {
            continue;
        }
        let Ok(item) = doc.get_dictionary(id) else { continue };
        out.push(Bookmark {
            title: dict_text(doc, item, b"Title").unwrap_or_default(),
            level,
            target: target(doc, item, pages),
        });
        stack.push((item.get(b"Next").and_then(Object::as_reference).ok(), level));
        stack.push((item.get(b"First").and_then(Object::as_reference).ok(), level + 1));
    }
    out
}

/// Producer and creator, from the document information and XMP.
pub(super) fn metadata(doc: &Document) -> Metadata {
    let info = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|i| doc.dereference(i).ok())
        .and_then(|(_, i)| i.as_dict().ok());
    let field = |key: &[u8]| info.and_then(|i| dict_text(doc, i, key));
    let xmp = catalog_entry(doc, b"Metadata")
        .and_then(|m| m.as_stream().ok())
        .map(|s| {
            String::from_utf8_lossy(&s.decompressed_content().unwrap_or_else(|_| s.content.clone()))
                .into_owned()
        })
        .unwrap_or_default();
    Metadata {
        producer: field(b"Producer"),
        creator: field(b"Creator"),
        title: field(b"Title"),
        xmp_producer: xmp_value(&xmp, "pdf:Producer"),
        xmp_creator_tool: xmp_value(&xmp, "xmp:CreatorTool"),
    }
}

/// An XMP property written as an element or as an attribute.
fn xmp_value(xmp: &str, name: &str) -> Option<String> {
    let element = xmp
        .split_once(&format!("<{name}>"))
        .and_then(|(_, rest)| rest.split_once(&format!("</{name}>")))
        .map(|(v, _)| v);
    // XML allows either quote around an attribute (Ghostscript writes ').
    let attribute = || {
        ['"', '\''].into_iter().find_map(|q| {
            xmp.split_once(&format!("{name}={q}"))
                .and_then(|(_, rest)| rest.split_once(q))
                .map(|(v, _)| v)
        })
    };
    element
        .or_else(attribute)
        .map(|v| {
            v.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").trim().to_string()
        })
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_label_styles_count_as_pdf_readers_show_them() {
        assert_eq!(roman(1994), "mcmxciv");
        assert_eq!(letters(1), "a");
        assert_eq!(letters(27), "aa");
        assert_eq!(letters(53), "aaa");
    }

    #[test]
    fn xmp_properties_are_read_as_elements_or_attributes() {
        let el = "<rdf:Description><pdf:Producer>qpdf &amp; co</pdf:Producer></rdf:Description>";
        assert_eq!(xmp_value(el, "pdf:Producer").as_deref(), Some("qpdf & co"));
        let attr = r#"<rdf:Description xmp:CreatorTool="Writer" pdf:Producer="LibreOffice 7.4"/>"#;
        assert_eq!(xmp_value(attr, "pdf:Producer").as_deref(), Some("LibreOffice 7.4"));
        assert_eq!(xmp_value(attr, "xmp:CreatorTool").as_deref(), Some("Writer"));
        let gs = "<rdf:Description pdf:Producer='GPL Ghostscript 10.00.0'/>";
        assert_eq!(xmp_value(gs, "pdf:Producer").as_deref(), Some("GPL Ghostscript 10.00.0"));
    }
}
