//! A PDF read into what exhibit and case-document checks look at: pages
//! (boxes, rotation, labels, every glyph with its position, size and fill
//! colour, the text lines they make, a content hash), the outline
//! (bookmarks), annotations (links, stamps, highlights, notes) and the
//! producer metadata.
//!
//! Objects come from `lopdf`; positioned glyphs from `pdf-extract`'s
//! output device. This module adds what those crates do not promise on a
//! hostile file: every stream's inflation is measured against
//! [`Limits`] before either crate decompresses it, form XObjects that draw
//! themselves or nest too deep are refused before any text is extracted
//! (pdf-extract would recurse until the stack overflows), image XObjects
//! are replaced by empty forms (pdf-extract would parse pixels as
//! drawing operators), and extraction runs under `catch_unwind`: a page
//! pdf-extract cannot read keeps its reason ([`Page::text_error`]) and the
//! pass resumes after it, instead of the file going down.
//!
//! Owns: the PDF's bytes. Must never panic, hang or allocate by a size the
//! file declares; an encrypted file is refused with that reason.

mod defang;
mod drawing;
mod inflate;
mod navigation;
mod text;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use navigation::{Annotation, AnnotationKind, Bookmark, LinkTarget};
pub use text::{Glyph, TextLine, lines};

/// Bounds on what one PDF may cost to read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest file read.
    pub max_file_bytes: u64,
    /// Most indirect objects.
    pub max_objects: usize,
    /// Most pages.
    pub max_pages: usize,
    /// Largest a single stream may inflate to.
    pub max_stream_bytes: u64,
    /// Largest all streams together may inflate to …
    pub max_inflated_bytes: u64,
    /// … and at most this many times the file's size (at least 8 MiB).
    pub max_inflation_per_byte: u64,
    /// Deepest nesting of form XObjects (a form drawing a form …).
    pub max_form_depth: usize,
    /// Most form XObjects drawn, counting repeats, over the whole file.
    pub max_form_draws: usize,
    /// Most annotations over the whole file.
    pub max_annotations: usize,
    /// Most operators followed while walking the pages' drawing (forms
    /// counted each time they are drawn) …
    pub max_operators: usize,
    /// … and at most this many per byte of the file (at least 1,000,000).
    pub max_operators_per_byte: usize,
    /// Most glyphs over the whole file …
    pub max_glyphs: usize,
    /// … and at most this many per byte of the file (at least 20,000):
    /// text compresses to about a byte per glyph, so a small file that
    /// draws millions of glyphs is refused in time and memory linear in
    /// its size.
    pub max_glyphs_per_byte: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_bytes: 64 << 20,
            max_objects: 500_000,
            max_pages: 10_000,
            max_stream_bytes: 64 << 20,
            max_inflated_bytes: 512 << 20,
            max_inflation_per_byte: 64,
            max_form_depth: 12,
            max_form_draws: 100_000,
            max_annotations: 100_000,
            max_operators: 20_000_000,
            max_operators_per_byte: 16,
            max_glyphs: 2_000_000,
            max_glyphs_per_byte: 4,
        }
    }
}

/// Why a PDF could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PdfError {
    /// The bytes do not start like a PDF.
    #[error("not a PDF: it does not start with %PDF-")]
    NotPdf,
    /// The file is encrypted; redjury reads no password-protected file.
    #[error(
        "the PDF is encrypted (its trailer names an /Encrypt dictionary): save it without a password or permissions restrictions"
    )]
    Encrypted,
    /// The file is larger than a limit allows.
    #[error("the PDF is too large: {what} exceeds the limit of {limit}")]
    TooLarge {
        /// What exceeded the limit.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// lopdf could not parse the file's structure.
    #[error("the PDF's structure cannot be read: {0}")]
    Structure(String),
    /// Drawings that refer to themselves or nest too deep.
    #[error("the PDF's drawings cannot be followed: {0}")]
    Drawing(String),
    /// A document with no page.
    #[error("the PDF has no page")]
    NoPages,
    /// The reader's child process gave no PDF (a bound met, a crash).
    #[error("{0}")]
    Isolated(crate::isolated::Failure),
}

/// A rectangle in PDF user space (points, origin at the bottom left).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Rect {
    /// Left.
    pub x0: f64,
    /// Bottom.
    pub y0: f64,
    /// Right.
    pub x1: f64,
    /// Top.
    pub y1: f64,
}

impl Rect {
    /// The rectangle with its corners ordered.
    pub fn normalised(a: f64, b: f64, c: f64, d: f64) -> Rect {
        Rect { x0: a.min(c), y0: b.min(d), x1: a.max(c), y1: b.max(d) }
    }
    /// Whether the two rectangles share an area (touching edges do not).
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    /// Whether `o` lies inside this rectangle grown by `slack` points.
    pub fn contains(&self, o: &Rect, slack: f64) -> bool {
        o.x0 >= self.x0 - slack
            && o.x1 <= self.x1 + slack
            && o.y0 >= self.y0 - slack
            && o.y1 <= self.y1 + slack
    }
    /// Width.
    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }
    /// Height.
    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }
}

/// A colour as the file gives it, turned into RGB in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Colour {
    /// Red.
    pub r: f64,
    /// Green.
    pub g: f64,
    /// Blue.
    pub b: f64,
}

impl Colour {
    /// Black, the initial fill colour.
    pub const BLACK: Colour = Colour { r: 0.0, g: 0.0, b: 0.0 };

    /// From gray, RGB or CMYK components; `None` for another count.
    pub fn from_components(c: &[f64]) -> Option<Colour> {
        let clamp = |v: f64| if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 };
        match *c {
            [g] => Some(Colour { r: clamp(g), g: clamp(g), b: clamp(g) }),
            [r, g, b] => Some(Colour { r: clamp(r), g: clamp(g), b: clamp(b) }),
            [c, m, y, k] => Some(Colour {
                r: (1.0 - clamp(c)) * (1.0 - clamp(k)),
                g: (1.0 - clamp(m)) * (1.0 - clamp(k)),
                b: (1.0 - clamp(y)) * (1.0 - clamp(k)),
            }),
            _ => None,
        }
    }

    /// `#rrggbb`.
    pub fn hex(&self) -> String {
        let byte = |v: f64| (v * 255.0).round() as u8;
        format!("#{:02x}{:02x}{:02x}", byte(self.r), byte(self.g), byte(self.b))
    }

    /// The largest difference of one component, in 0..=1.
    pub fn distance(&self, o: &Colour) -> f64 {
        (self.r - o.r).abs().max((self.g - o.g).abs()).max((self.b - o.b).abs())
    }
}

/// One page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Page {
    /// 1-based, in document order.
    pub number: u32,
    /// The page label (`/PageLabels`), when the file defines one.
    pub label: Option<String>,
    /// The media box.
    pub media_box: Rect,
    /// The crop box, when it differs from the media box.
    pub crop_box: Option<Rect>,
    /// Rotation in degrees, clockwise, a multiple of 90.
    pub rotation: i64,
    /// Every glyph, in content order.
    pub glyphs: Vec<Glyph>,
    /// The glyphs grouped into lines, top to bottom then left to right.
    pub lines: Vec<TextLine>,
    /// The page's annotations.
    pub annotations: Vec<Annotation>,
    /// SHA-256 of the page's drawing (its content streams, decoded and
    /// re-encoded, and its box and rotation): the same after re-saving.
    pub content_hash: String,
    /// SHA-256 of each drawing unit in order — each content stream, and
    /// each form XObject a content stream draws — decoded and re-encoded,
    /// a `q … Q` pair around a whole unit left out: a page stamped by
    /// adding a stream keeps its original's units.
    pub stream_hashes: Vec<String>,
    /// SHA-256 of what all the page's content streams draw, joined into
    /// one unit (hashed as the units are): a page turned into a form
    /// under an overlay (qpdf `--overlay`) or merged into one stream with
    /// its stamp (pypdf) has its original's whole drawing as a unit.
    #[serde(default)]
    pub drawing_hash: String,
    /// Why the page's text could not be extracted, when it could not.
    pub text_error: Option<String>,
}

impl Page {
    /// The visible box as shown (turned by the rotation): width, height.
    pub fn shown_size(&self) -> (f64, f64) {
        let visible = self.crop_box.unwrap_or(self.media_box);
        let (w, h) = (visible.width(), visible.height());
        if self.rotation.rem_euclid(360) / 90 % 2 == 1 { (h, w) } else { (w, h) }
    }

    /// A point of user space as the page is shown: from the shown page's
    /// bottom left (its visible box turned by the rotation), in points.
    pub fn shown_point(&self, x: f64, y: f64) -> (f64, f64) {
        let v = self.crop_box.unwrap_or(self.media_box);
        match self.rotation.rem_euclid(360) / 90 {
            1 => (y - v.y0, v.x1 - x),
            2 => (v.x1 - x, v.y1 - y),
            3 => (v.y1 - y, x - v.x0),
            _ => (x - v.x0, y - v.y0),
        }
    }

    /// A box of user space as the page is shown (see [`Page::shown_point`]).
    pub fn shown(&self, r: &Rect) -> Rect {
        let (a, b) = self.shown_point(r.x0, r.y0);
        let (c, d) = self.shown_point(r.x1, r.y1);
        Rect::normalised(a, b, c, d)
    }

    /// The page's text in reading order, one line per text line.
    pub fn text(&self) -> String {
        let lines: Vec<&str> = self.lines.iter().map(|l| l.text.as_str()).collect();
        lines.join("\n")
    }
}

/// Document information and XMP metadata.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Metadata {
    /// `/Info /Producer`.
    pub producer: Option<String>,
    /// `/Info /Creator`.
    pub creator: Option<String>,
    /// `/Info /Title`.
    pub title: Option<String>,
    /// `pdf:Producer` of the XMP packet.
    pub xmp_producer: Option<String>,
    /// `xmp:CreatorTool` of the XMP packet.
    pub xmp_creator_tool: Option<String>,
}

/// A PDF, read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pdf {
    /// The pages, in order.
    pub pages: Vec<Page>,
    /// The outline, depth first.
    pub bookmarks: Vec<Bookmark>,
    /// Producer and creator metadata.
    pub metadata: Metadata,
}

/// Reads a PDF from its bytes within `limits`. A panic in lopdf (its
/// content parser unwraps on some inline images) or in this reader is the
/// file's error, not the caller's.
pub fn from_bytes(bytes: &[u8], limits: Limits) -> Result<Pdf, PdfError> {
    let read = std::panic::catch_unwind(|| read(bytes, limits));
    read.unwrap_or_else(|panic| {
        let what = crate::panic_message(panic.as_ref());
        Err(PdfError::Structure(format!("a reader failed on it ({what})")))
    })
}

fn read(bytes: &[u8], limits: Limits) -> Result<Pdf, PdfError> {
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(PdfError::TooLarge { what: "the file".into(), limit: limits.max_file_bytes });
    }
    if !bytes.starts_with(b"%PDF-") {
        return Err(PdfError::NotPdf);
    }
    if inflate::names_encryption(bytes) {
        return Err(PdfError::Encrypted);
    }
    inflate::measure_raw_streams(bytes, &limits)?;
    let mut doc = inflate::load(bytes, &limits)?;
    if doc.objects.len() > limits.max_objects {
        return Err(PdfError::TooLarge {
            what: format!("{} objects", doc.objects.len()),
            limit: limits.max_objects as u64,
        });
    }
    let page_ids = doc.get_pages();
    if page_ids.is_empty() {
        return Err(PdfError::NoPages);
    }
    if page_ids.len() > limits.max_pages {
        return Err(PdfError::TooLarge {
            what: format!("{} pages", page_ids.len()),
            limit: limits.max_pages as u64,
        });
    }
    let operators = limits
        .max_operators
        .min(bytes.len().saturating_mul(limits.max_operators_per_byte).max(1_000_000));
    let drawing = drawing::walk_pages(&doc, &page_ids, &limits, operators)?;
    // Hashed before the images are blanked: an image is part of a page.
    let hashes: Vec<drawing::PageHashes> =
        page_ids.values().map(|id| drawing::page_hashes(&doc, *id, &limits)).collect();
    drawing::prepare_for_extraction(&mut doc, &drawing.drawn);
    defang::defang(&mut doc);
    let page_numbers: BTreeMap<lopdf::ObjectId, u32> =
        page_ids.iter().map(|(n, id)| (*id, *n)).collect();
    let labels = navigation::page_labels(&doc, page_ids.len());
    let destinations =
        navigation::Pages { numbers: &page_numbers, names: navigation::Names::of(&doc) };
    let annotations = navigation::all_annotations(&doc, &page_ids, &destinations, &limits)?;
    let bookmarks = navigation::outline(&doc, &destinations);
    let geometry: Vec<navigation::Geometry> =
        page_ids.values().map(|id| navigation::geometry(&doc, *id)).collect();
    let budget =
        limits.max_glyphs.min(bytes.len().saturating_mul(limits.max_glyphs_per_byte).max(20_000));
    let too_many_glyphs = || PdfError::TooLarge {
        what: format!("the glyphs of its pages ({} bytes)", bytes.len()),
        limit: budget as u64,
    };
    let boxes: Vec<Rect> = geometry.iter().map(|g| g.media_box).collect();
    drawing::settle_pages(&mut doc, &page_ids, &boxes);
    let mut extracted = text::extract_all(&mut doc, &page_ids, drawing.colours, budget)
        .map_err(|()| too_many_glyphs())?;
    let mut tests = budget.saturating_mul(4).max(50_000_000);
    for (page, covers) in extracted.iter_mut().zip(&drawing.covers) {
        drawing::cover_glyphs(&mut page.glyphs, &page.shown_by, covers, &mut tests).map_err(
            |()| PdfError::TooLarge {
                what: "the opaque areas it paints".into(),
                limit: budget.saturating_mul(4).max(50_000_000) as u64,
            },
        )?;
    }
    let per_page = extracted.into_iter().zip(labels).zip(hashes).zip(annotations).zip(geometry);
    let pages = page_ids
        .keys()
        .zip(per_page)
        .map(|(number, ((((text, label), hashes), annotations), geometry))| Page {
            number: *number,
            label,
            media_box: geometry.media_box,
            crop_box: geometry.crop_box,
            rotation: geometry.rotation,
            annotations,
            ..page_text(text, hashes, &geometry)
        })
        .collect();
    Ok(Pdf { pages, bookmarks, metadata: navigation::metadata(&doc) })
}

/// A page's text, hashes and lines: glyphs whose centre lies outside the
/// visible box (the crop box, else the media box) do not show.
fn page_text(
    mut text: text::Extracted,
    hashes: drawing::PageHashes,
    geometry: &navigation::Geometry,
) -> Page {
    let visible = geometry.crop_box.unwrap_or(geometry.media_box);
    for g in &mut text.glyphs {
        let (cx, cy) = ((g.rect.x0 + g.rect.x1) / 2.0, (g.rect.y0 + g.rect.y1) / 2.0);
        if cx < visible.x0 || cx > visible.x1 || cy < visible.y0 || cy > visible.y1 {
            g.hidden = true;
        }
    }
    Page {
        number: 0,
        label: None,
        media_box: geometry.media_box,
        crop_box: None,
        rotation: 0,
        lines: text::lines(&text.glyphs, geometry.rotation),
        glyphs: text.glyphs,
        annotations: Vec::new(),
        content_hash: hashes.content,
        stream_hashes: hashes.units,
        drawing_hash: hashes.whole,
        text_error: text.error,
    }
}

/// Whether the bytes look like a PDF (they start with `%PDF-`).
pub fn is_pdf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"%PDF-")
}
