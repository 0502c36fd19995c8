//! Positioned glyphs through pdf-extract's output device, each given the
//! fill colour the drawing walk found for its string, and the lines they
//! make in reading order.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};
use serde::Serialize;

use super::drawing::ShowColours;
use super::{Colour, Rect};

/// One glyph as drawn.
#[derive(Debug, Clone, Serialize)]
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
}

/// A line of text: glyphs sharing a baseline, left to right.
#[derive(Debug, Clone, Serialize)]
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

pub(super) struct Extracted {
    pub glyphs: Vec<Glyph>,
    pub error: Option<String>,
    /// The glyph budget ran out.
    pub exhausted: bool,
}

struct Collector {
    colours: ShowColours,
    word: usize,
    glyphs: Vec<Glyph>,
    budget: usize,
}

impl OutputDev for Collector {
    fn begin_page(
        &mut self,
        _: u32,
        _: &MediaBox,
        _: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        Ok(())
    }
    fn end_page(&mut self) -> Result<(), OutputError> {
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
        if self.glyphs.len() >= self.budget {
            return Err(OutputError::FormatError(std::fmt::Error));
        }
        // The font size through the text matrix: the side of the square
        // with the area a size × size square takes.
        let (sx, sy) = (font_size * (trm.m11 + trm.m21), font_size * (trm.m12 + trm.m22));
        let size = (sx * sy).abs().sqrt();
        let (x, y) = (trm.m31, trm.m32);
        if !(x.is_finite() && y.is_finite() && size.is_finite()) {
            return Ok(());
        }
        let advance = if width.is_finite() { width * size } else { 0.0 };
        self.glyphs.push(Glyph {
            text: char.to_string(),
            x,
            y,
            size,
            rect: Rect::normalised(x, y - 0.2 * size, x + advance, y + 0.8 * size),
            colour: self.colours.get(self.word.saturating_sub(1)).copied().flatten(),
        });
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

/// Extracts one page's glyphs; a page pdf-extract fails on (or panics
/// on) keeps the glyphs found before and says why.
pub(super) fn extract(
    doc: &lopdf::Document,
    page: u32,
    colours: ShowColours,
    budget: usize,
) -> Extracted {
    let mut dev = Collector { colours, word: 0, glyphs: Vec::new(), budget };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pdf_extract::output_doc_page(doc, &mut dev, page)
    }));
    let exhausted = dev.glyphs.len() >= budget;
    let error = match run {
        Ok(Ok(())) => None,
        Ok(Err(_)) if exhausted => None,
        Ok(Err(e)) => Some(format!("the text of page {page} could not be extracted: {e}")),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Some(format!(
                "the text of page {page} could not be extracted (pdf-extract failed: {what})"
            ))
        }
    };
    Extracted { glyphs: dev.glyphs, error, exhausted }
}

/// Groups glyphs into lines: top to bottom by baseline, then left to
/// right; a space goes where the gap exceeds 0.15 of the size. A line's
/// glyph indexes point into `glyphs`.
pub fn lines(glyphs: &[Glyph]) -> Vec<TextLine> {
    let mut order: Vec<usize> = (0..glyphs.len()).collect();
    let at = |i: usize| glyphs.get(i);
    order.sort_by(|a, b| {
        let (ga, gb) = (at(*a), at(*b));
        let ya = ga.map(|g| g.y).unwrap_or_default();
        let yb = gb.map(|g| g.y).unwrap_or_default();
        yb.total_cmp(&ya)
    });
    let mut out: Vec<TextLine> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut baseline = f64::NAN;
    for i in order {
        let Some(g) = at(i) else { continue };
        if !current.is_empty() && (g.y - baseline).abs() > 0.5 * g.size.max(1.0) {
            out.push(line(glyphs, std::mem::take(&mut current)));
        }
        if current.is_empty() {
            baseline = g.y;
        }
        current.push(i);
    }
    if !current.is_empty() {
        out.push(line(glyphs, current));
    }
    out
}

fn line(glyphs: &[Glyph], mut members: Vec<usize>) -> TextLine {
    let x = |i: &usize| glyphs.get(*i).map(|g| g.x).unwrap_or_default();
    members.sort_by(|a, b| x(a).total_cmp(&x(b)));
    let mut text = String::new();
    let mut rect: Option<Rect> = None;
    let mut size: f64 = 0.0;
    let mut end = f64::NEG_INFINITY;
    for g in members.iter().filter_map(|i| glyphs.get(*i)) {
        let gap = g.x - end;
        if !text.is_empty() && gap > 0.15 * g.size && !text.ends_with(' ') && g.text != " " {
            text.push(' ');
        }
        text.push_str(&g.text);
        end = end.max(g.rect.x1);
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
