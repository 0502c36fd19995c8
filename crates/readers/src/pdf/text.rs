//! Positioned glyphs through pdf-extract's output device, each given the
//! fill colour the drawing walk found for its string, and the lines they
//! make in reading order.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};
use serde::{Deserialize, Serialize};

use super::drawing::{Affine, ShowColours, Shown};
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
    /// The font size as drawn, in points: the height an em takes on the
    /// page through the text matrix and every transform (poppler's
    /// transformed font size).
    pub size: f64,
    /// The direction its baseline runs, in user space: degrees
    /// counterclockwise from the x axis (0 for ordinary text, 90 for text
    /// running up the page).
    #[serde(default)]
    pub direction: f64,
    /// The box it covers: its advance along the baseline, from 0.2 of the
    /// size below the baseline to 0.8 above (font metrics aside), as the
    /// upright box around that shape in user space.
    pub rect: Rect,
    /// The fill colour (`None`: a colour space not converted).
    pub colour: Option<Colour>,
    /// Drawn so that it does not show: an invisible render mode, a fill
    /// alpha of 0, outside the page's visible box, under an opaque area
    /// (an upright rectangle filled, or an image) painted after it, or
    /// filled in the colour of the area beneath it (the white page where
    /// none is). Lines, views and checks leave hidden glyphs out.
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
    /// For each glyph, how it was shown.
    pub shown_by: Vec<Shown>,
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
        // Counted before anything is dropped: a glyph the budget does not
        // see could be drawn without end.
        self.glyphs += 1;
        let index = (self.page as usize).saturating_sub(1);
        let paint =
            self.colours.get(index).and_then(|c| c.get(self.word.saturating_sub(1))).copied();
        let placed = paint.map(|p| p.placed).unwrap_or(Affine::IDENTITY);
        let Some(glyph) = placed_glyph(trm, &placed, width, font_size, char) else {
            return Ok(());
        };
        let shown = Shown {
            string: self.word.saturating_sub(1),
            fill_only: paint.is_some_and(|p| p.fill_only),
        };
        if let Some(page) = self.current() {
            page.shown_by.push(shown);
            page.glyphs.push(Glyph {
                colour: paint.and_then(|p| p.colour),
                hidden: paint.is_some_and(|p| !p.visible),
                ..glyph
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

/// A glyph where it is drawn: pdf-extract's text rendering matrix (the
/// font size apart) through what it left out of a form's placement, the
/// em's sides giving its size, direction and box. `None` when a number
/// is not finite.
fn placed_glyph(
    trm: &Transform,
    placed: &Affine,
    width: f64,
    font_size: f64,
    text: &str,
) -> Option<Glyph> {
    let (x, y) = placed.point(trm.m31, trm.m32);
    let along = placed.vector(trm.m11 * font_size, trm.m12 * font_size);
    let up = placed.vector(trm.m21 * font_size, trm.m22 * font_size);
    let size = up.0.hypot(up.1);
    let width = if width.is_finite() { width } else { 0.0 };
    let advance = (along.0 * width, along.1 * width);
    let corners = [(0.0, -0.2), (1.0, -0.2), (1.0, 0.8), (0.0, 0.8)]
        .map(|(s, t)| (x + s * advance.0 + t * up.0, y + s * advance.1 + t * up.1));
    let xs = corners.map(|c| c.0);
    let ys = corners.map(|c| c.1);
    let low = |v: [f64; 4]| v.into_iter().fold(f64::INFINITY, f64::min);
    let high = |v: [f64; 4]| v.into_iter().fold(f64::NEG_INFINITY, f64::max);
    let rect = Rect::normalised(low(xs), low(ys), high(xs), high(ys));
    let direction = along.1.atan2(along.0).to_degrees();
    let numbers = [x, y, size, direction, rect.x0, rect.y0, rect.x1, rect.y1];
    numbers.iter().all(|v| v.is_finite()).then(|| Glyph {
        text: text.to_string(),
        x,
        y,
        size,
        direction,
        rect,
        colour: None,
        hidden: false,
    })
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

/// The widest gap between words of one line, as a fraction of the font
/// size: past it the text on either side stands apart (a legend at the
/// left and a Bates number at the right of one baseline), as poppler's
/// text output splits it (its `maxWordSpacing`).
const MAX_WORD_GAP: f64 = 1.5;

/// Groups the glyphs that show into lines as a reader sees them: glyphs
/// running the same way (to a quarter turn) sharing a baseline, left to
/// right along it, split where words stand further apart than
/// [`MAX_WORD_GAP`]; a space goes where the gap exceeds 0.15 of the
/// size. Lines come top to bottom as the page is shown (turned by
/// `rotation` degrees), left to right on one baseline. A line's glyph
/// indexes point into `glyphs`; hidden glyphs, and spaces between the
/// blocks of a baseline, are in none.
pub fn lines(glyphs: &[Glyph], rotation: i64) -> Vec<TextLine> {
    let page = Turn(rotation.rem_euclid(360) / 90);
    let mut groups: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
    for (i, g) in glyphs.iter().enumerate().filter(|(_, g)| !g.hidden) {
        groups.entry(Turn::of(g).0).or_default().push(i);
    }
    // Each line with where its baseline starts, as shown: how high.
    let mut out: Vec<(f64, TextLine)> = Vec::new();
    for (turn, members) in groups {
        let turn = Turn(turn);
        for baseline in baselines(glyphs, members, turn) {
            let start = baseline.first().and_then(|i| glyphs.get(*i));
            let height = start.map(|g| page.shown(g).1).unwrap_or_default();
            for block in blocks(glyphs, baseline, turn) {
                out.push((height, line(glyphs, block, turn)));
            }
        }
    }
    // Stable: the blocks of one baseline keep their order.
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter().map(|(_, l)| l).collect()
}

/// The glyphs of one direction in baselines, top to bottom as they run,
/// each left to right along it.
fn baselines(glyphs: &[Glyph], mut members: Vec<usize>, turn: Turn) -> Vec<Vec<usize>> {
    let shown = |i: usize| glyphs.get(i).map(|g| turn.shown(g)).unwrap_or_default();
    members.sort_by(|a, b| shown(*b).1.total_cmp(&shown(*a).1));
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut baseline = f64::NAN;
    for i in members {
        let Some(g) = glyphs.get(i) else { continue };
        let v = turn.shown(g).1;
        if !current.is_empty() && (v - baseline).abs() > 0.5 * g.size.max(1.0) {
            out.push(std::mem::take(&mut current));
        }
        if current.is_empty() {
            baseline = v;
        }
        current.push(i);
    }
    if !current.is_empty() {
        out.push(current);
    }
    for b in &mut out {
        b.sort_by(|a, c| shown(*a).0.total_cmp(&shown(*c).0));
    }
    out
}

/// One baseline (in order along it) split where words stand apart; the
/// spaces in such a gap belong to neither side.
fn blocks(glyphs: &[Glyph], baseline: Vec<usize>, turn: Turn) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut spaces: Vec<usize> = Vec::new();
    let (mut end, mut size) = (f64::NEG_INFINITY, 0.0_f64);
    for i in baseline {
        let Some(g) = glyphs.get(i) else { continue };
        if g.text.trim().is_empty() {
            spaces.push(i);
            continue;
        }
        let (from, to) = turn.span(g);
        if !current.is_empty() && from - end > MAX_WORD_GAP * size.max(g.size) {
            out.push(std::mem::take(&mut current));
            spaces.clear();
        }
        current.append(&mut spaces);
        current.push(i);
        end = end.max(to);
        size = g.size;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A quarter turn, clockwise: a page's rotation, or the way a glyph's
/// baseline runs (counterclockwise from the x axis, which the turn
/// undoes).
#[derive(Clone, Copy)]
struct Turn(i64);

impl Turn {
    /// The quarter turn nearest the way a glyph runs.
    fn of(g: &Glyph) -> Turn {
        Turn(((g.direction / 90.0).round() as i64).rem_euclid(4))
    }

    /// A point seen with this turn undone: (along, up), up to a shift.
    fn point(self, x: f64, y: f64) -> (f64, f64) {
        match self.0 {
            1 => (y, -x),
            2 => (-x, -y),
            3 => (-y, x),
            _ => (x, y),
        }
    }

    /// A glyph's origin.
    fn shown(self, g: &Glyph) -> (f64, f64) {
        self.point(g.x, g.y)
    }

    /// Where a glyph's box starts and ends along.
    fn span(self, g: &Glyph) -> (f64, f64) {
        let r = &g.rect;
        let along = [(r.x0, r.y0), (r.x1, r.y1)].map(|(x, y)| self.point(x, y).0);
        (along[0].min(along[1]), along[0].max(along[1]))
    }
}

fn line(glyphs: &[Glyph], members: Vec<usize>, turn: Turn) -> TextLine {
    let mut text = String::new();
    let mut rect: Option<Rect> = None;
    let mut size: f64 = 0.0;
    let mut end = f64::NEG_INFINITY;
    for g in members.iter().filter_map(|i| glyphs.get(*i)) {
        let (from, to) = turn.span(g);
        let gap = from - end;
        if !text.is_empty() && gap > 0.15 * g.size && !text.ends_with(' ') && g.text != " " {
            text.push(' ');
        }
        text.push_str(&g.text);
        end = end.max(to);
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
