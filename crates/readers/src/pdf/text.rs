//! Positioned glyphs through pdf-extract's output device, each given the
//! fill colour the drawing walk found for its string, and the lines they
//! make in reading order.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};
use serde::{Deserialize, Serialize};

use super::drawing::ShowColours;
use super::{Colour, Rect};

/// One glyph as drawn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Glyph {
    /// Its text (usually one character; a ligature gives several).
    pub text: String,
    /// Where the glyph's baseline starts, in user space.
    pub x: f64,
    /// The baseline's height, in user space.
    pub y: f64,
    /// The font size as drawn, in points.
    pub size: f64,
    /// The box it covers: its advance across, from 0.2 of the size below
    /// the baseline to 0.8 above (font metrics aside).
    pub rect: Rect,
    /// The fill colour (`None`: a colour space not converted).
    pub colour: Option<Colour>,
    /// Drawn so that it does not show: an invisible render mode, a fill
    /// alpha of 0, or outside the page's visible box. Lines, views and
    /// checks leave hidden glyphs out.
    pub hidden: bool,
}

/// A line of text: glyphs sharing a baseline, left to right.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TextLine {
    /// The text, a space where glyphs stand apart.
    pub text: String,
    /// The union of its glyphs' boxes.
    pub rect: Rect,
    /// The largest font size on the line.
    pub size: f64,
    /// Its glyphs, as indexes into [`super::Page::glyphs`], left to right.
    pub glyphs: Vec<usize>,
}

/// What extraction gave each page: its glyphs, and why it has none (or
/// fewer) when pdf-extract failed on it.
#[derive(Default)]
pub(super) struct Extracted {
    pub glyphs: Vec<Glyph>,
    pub error: Option<String>,
}

/// Most pages pdf-extract may fail on before the rest are left unread:
/// each failure costs a pass over the pages still to read.
const MAX_FAILED_PAGES: usize = 50;

struct Collector {
    /// Per page (index = number − 1): the fill colour of each string shown.
    colours: Vec<ShowColours>,
    pages: Vec<Extracted>,
    /// The page being read (1-based), 0 before the first.
    page: u32,
    /// The last page whose reading ended.
    ended: u32,
    word: usize,
    glyphs: usize,
    budget: usize,
}

impl Collector {
    fn current(&mut self) -> Option<&mut Extracted> {
        self.pages.get_mut((self.page as usize).checked_sub(1)?)
    }
}

impl OutputDev for Collector {
    fn begin_page(
        &mut self,
        page: u32,
        _: &MediaBox,
        _: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.page = page;
        self.word = 0;
        Ok(())
    }
    fn end_page(&mut self) -> Result<(), OutputError> {
        self.ended = self.page;
        Ok(())
    }
    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        if self.glyphs >= self.budget {
            return Err(OutputError::FormatError(std::fmt::Error));
        }
        // The font size as drawn: the side of the square a size × size
        // square becomes through the text matrix (its determinant scales
        // areas), so rotated text keeps its size.
        let det = trm.m11 * trm.m22 - trm.m12 * trm.m21;
        let size = font_size.abs() * det.abs().sqrt();
        let (x, y) = (trm.m31, trm.m32);
        // Counted before anything is dropped: a glyph the budget does not
        // see could be drawn without end.
        self.glyphs += 1;
        if !(x.is_finite() && y.is_finite() && size.is_finite()) {
            return Ok(());
        }
        let advance = if width.is_finite() { width * size } else { 0.0 };
        let index = (self.page as usize).saturating_sub(1);
        let paint =
            self.colours.get(index).and_then(|c| c.get(self.word.saturating_sub(1))).copied();
        if let Some(page) = self.current() {
            page.glyphs.push(Glyph {
                text: char.to_string(),
                x,
                y,
                size,
                rect: Rect::normalised(x, y - 0.2 * size, x + advance, y + 0.8 * size),
                colour: paint.and_then(|p| p.colour),
                hidden: paint.is_some_and(|p| !p.visible),
            });
        }
        Ok(())
    }
    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.word += 1;
        Ok(())
    }
    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Extracts every page's glyphs in one pass of pdf-extract over the
/// document (its per-page entry point lists all pages on every call:
/// quadratic). A page pdf-extract fails or panics on keeps the glyphs
/// found before and says why; its drawing and every page before it are
/// then emptied in `doc` and the pass resumes, so the cost stays a pass
/// per failed page, at most [`MAX_FAILED_PAGES`]. `Err(())` when the
/// glyph budget runs out.
pub(super) fn extract_all(
    doc: &mut lopdf::Document,
    pages: &std::collections::BTreeMap<u32, lopdf::ObjectId>,
    colours: Vec<ShowColours>,
    budget: usize,
) -> Result<Vec<Extracted>, ()> {
    let mut dev = Collector {
        pages: (0..colours.len()).map(|_| Extracted::default()).collect(),
        colours,
        page: 0,
        ended: 0,
        word: 0,
        glyphs: 0,
        budget,
    };
    let mut last_failed = 0;
    for failures in 0.. {
        (dev.page, dev.ended) = (0, 0);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pdf_extract::output_doc(doc, &mut dev)
        }));
        let why = match run {
            Ok(Ok(())) => return Ok(dev.pages),
            Ok(Err(_)) if dev.glyphs >= budget => return Err(()),
            Ok(Err(e)) => e.to_string(),
            Err(panic) => crate::panic_message(panic.as_ref()),
        };
        // pdf-extract reads a page's boxes before it begins the page: a
        // failure after page k ended is page k + 1's.
        if dev.page == dev.ended {
            dev.page += 1;
        }
        let failed = dev.page;
        if let Some(page) = dev.current() {
            page.error = Some(format!(
                "the text of page {failed} could not be extracted (pdf-extract: {why})"
            ));
        }
        // No progress (a failure before any page began, or on a page
        // already emptied) would repeat: the rest stays unread.
        let stuck = failed <= last_failed;
        last_failed = failed;
        if stuck || failures + 1 >= MAX_FAILED_PAGES {
            for (i, page) in dev.pages.iter_mut().enumerate().skip(failed as usize) {
                page.error = Some(format!(
                    "the text of page {} was not extracted: pdf-extract failed on {} page(s) before it",
                    i + 1,
                    failures + 1
                ));
            }
            return Ok(dev.pages);
        }
        // Pages up to the failed one are done (their boxes, annotations
        // and hashes were read before): each becomes a blank page that
        // cannot fail, so the next pass starts, in effect, after it.
        for id in pages.range(..=failed).map(|(_, id)| *id) {
            if let Ok(page) = doc.get_object_mut(id).and_then(lopdf::Object::as_dict_mut) {
                let zero = || lopdf::Object::Integer(0);
                page.set("Contents", lopdf::Object::Array(Vec::new()));
                page.set("Resources", lopdf::Dictionary::new());
                page.set("MediaBox", lopdf::Object::Array(vec![zero(), zero(), zero(), zero()]));
                page.remove(b"ArtBox");
            }
        }
    }
    Ok(dev.pages)
}

/// Groups the glyphs that show into lines, as the page is shown (turned by
/// `rotation` degrees): top to bottom by baseline, then left to right; a
/// space goes where the gap exceeds 0.15 of the size. A line's glyph
/// indexes point into `glyphs`; hidden glyphs are in none.
pub fn lines(glyphs: &[Glyph], rotation: i64) -> Vec<TextLine> {
    let turn = Turn(rotation.rem_euclid(360) / 90);
    let shows = |i: &usize| glyphs.get(*i).is_some_and(|g| !g.hidden);
    let mut order: Vec<usize> = (0..glyphs.len()).filter(shows).collect();
    let at = |i: usize| glyphs.get(i);
    let up = |i: usize| at(i).map(|g| turn.shown(g).1).unwrap_or_default();
    order.sort_by(|a, b| up(*b).total_cmp(&up(*a)));
    let mut out: Vec<TextLine> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut baseline = f64::NAN;
    for i in order {
        let Some(g) = at(i) else { continue };
        let v = turn.shown(g).1;
        if !current.is_empty() && (v - baseline).abs() > 0.5 * g.size.max(1.0) {
            out.push(line(glyphs, std::mem::take(&mut current), turn));
        }
        if current.is_empty() {
            baseline = v;
        }
        current.push(i);
    }
    if !current.is_empty() {
        out.push(line(glyphs, current, turn));
    }
    out
}

/// A page's rotation in quarter turns, clockwise.
#[derive(Clone, Copy)]
struct Turn(i64);

impl Turn {
    /// A glyph's origin as the page is shown: (across, up), up to a shift.
    fn shown(self, g: &Glyph) -> (f64, f64) {
        match self.0 {
            1 => (g.y, -g.x),
            2 => (-g.x, -g.y),
            3 => (-g.y, g.x),
            _ => (g.x, g.y),
        }
    }
}

fn line(glyphs: &[Glyph], mut members: Vec<usize>, turn: Turn) -> TextLine {
    let x = |i: &usize| glyphs.get(*i).map(|g| turn.shown(g).0).unwrap_or_default();
    members.sort_by(|a, b| x(a).total_cmp(&x(b)));
    let mut text = String::new();
    let mut rect: Option<Rect> = None;
    let mut size: f64 = 0.0;
    let mut end = f64::NEG_INFINITY;
    for g in members.iter().filter_map(|i| glyphs.get(*i)) {
        let across = turn.shown(g).0;
        let gap = across - end;
        if !text.is_empty() && gap > 0.15 * g.size && !text.ends_with(' ') && g.text != " " {
            text.push(' ');
        }
        text.push_str(&g.text);
        end = end.max(across + g.rect.width());
        size = size.max(g.size);
        rect = Some(match rect {
            None => g.rect,
            Some(r) => Rect::normalised(
                r.x0.min(g.rect.x0),
                r.y0.min(g.rect.y0),
                r.x1.max(g.rect.x1),
                r.y1.max(g.rect.y1),
            ),
        });
    }
    TextLine {
        text: text.trim().to_string(),
        rect: rect.unwrap_or_default(),
        size,
        glyphs: members,
    }
}
