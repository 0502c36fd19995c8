//! What each page draws, followed before any text is extracted: the fill
//! colour of every text-showing string and the placement pdf-extract
//! leaves out of a form (its output device carries neither), the opaque
//! areas painted over text, form XObjects that draw themselves or nest
//! too deep (refused: pdf-extract would recurse until the stack
//! overflows), and the hashes that identify a page's content across
//! re-saving.
//!
//! Not a renderer: only the operators that change the fill colour, the
//! transform, the path and the clip, save and restore them, show text or
//! draw a form or an image are read, in the order pdf-extract reads them,
//! so the n-th string shown here is the n-th word pdf-extract reports.
//! Must never paint: it keeps upright boxes, not pixels.

use std::collections::{BTreeMap, BTreeSet};

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId};
use sha2::{Digest, Sha256};

use super::{Colour, Limits, PdfError, Rect};

/// How a string is painted: its fill colour (`None`: a colour space
/// redjury does not convert, such as a pattern), whether it shows at
/// all (text render mode 3 or 7, or a fill alpha of 0, paint nothing),
/// and where: the transform from the space pdf-extract places it in to
/// the page's user space.
#[derive(Clone, Copy, Debug)]
pub(super) struct Paint {
    pub colour: Option<Colour>,
    pub visible: bool,
    /// The text render mode fills and does not stroke (0 or 4): the
    /// glyph shows in its fill colour alone.
    pub fill_only: bool,
    /// pdf-extract starts every form it draws from an identity transform
    /// (it ignores the form's `/Matrix` and the transform in force where
    /// the form is drawn): this is what it left out, identity outside
    /// forms.
    pub placed: Affine,
}

/// An affine transform as PDF writes one, `[a b c d e f]`, applied to row
/// vectors: (x, y) becomes (a·x + c·y + e, b·x + d·y + f).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Affine(pub [f64; 6]);

impl Affine {
    pub const IDENTITY: Affine = Affine([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    /// Six finite numbers, or `None`.
    fn of(numbers: &[f64]) -> Option<Affine> {
        let m: [f64; 6] = numbers.try_into().ok()?;
        m.iter().all(|v| v.is_finite()).then_some(Affine(m))
    }

    /// `self`, then `next`.
    pub fn then(&self, next: &Affine) -> Affine {
        let ([a, b, c, d, e, f], [p, q, r, s, t, u]) = (self.0, next.0);
        Affine([
            a * p + b * r,
            a * q + b * s,
            c * p + d * r,
            c * q + d * s,
            e * p + f * r + t,
            e * q + f * s + u,
        ])
    }

    /// A point.
    pub fn point(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.0;
        (a * x + c * y + e, b * x + d * y + f)
    }

    /// A direction (the translation left out).
    pub fn vector(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, ..] = self.0;
        (a * x + c * y, b * x + d * y)
    }
}

/// Per page, how each string shown is painted.
pub(super) type ShowColours = Vec<Paint>;

/// An opaque area painted after the first `after` strings of its page
/// were shown: what they drew beneath it does not show, and it is the
/// ground of what later strings draw over it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cover {
    pub rect: Rect,
    pub after: usize,
    /// Its colour (`None`: an image, or a colour space not converted).
    pub colour: Option<Colour>,
}

/// One subpath of the path being built, in user space: its points while
/// they may still make a rectangle (none kept once a curve or a fifth
/// corner shows it is not one).
#[derive(Default)]
struct Subpath {
    points: Vec<(f64, f64)>,
    straight: bool,
}

impl Subpath {
    const MOST_POINTS: usize = 5;
    fn push(&mut self, p: (f64, f64)) {
        if self.points.len() >= Self::MOST_POINTS {
            self.straight = false;
        }
        if self.straight {
            self.points.push(p);
        }
    }

    /// The box the subpath outlines, when it is an upright rectangle.
    fn upright_box(&self) -> Option<Rect> {
        if !self.straight {
            return None;
        }
        let mut p = self.points.clone();
        let near =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-6 && (a.1 - b.1).abs() < 1e-6;
        if let [first, .., last] = p.as_slice()
            && p.len() == 5
            && near(*first, *last)
        {
            p.pop();
        }
        let [a, b, c, d] = <[(f64, f64); 4]>::try_from(p).ok()?;
        let sides = [(a, b), (b, c), (c, d), (d, a)];
        let upright =
            |(u, v): ((f64, f64), (f64, f64))| (u.0 - v.0).abs() < 1e-6 || (u.1 - v.1).abs() < 1e-6;
        if !sides.into_iter().all(upright) {
            return None;
        }
        let r = Rect::normalised(a.0, a.1, c.0, c.1);
        (r.width() > 0.0 && r.height() > 0.0 && r.width().is_finite() && r.height().is_finite())
            .then_some(r)
    }
}

/// The part of `r` inside `clip` (all of it without a clip), if any.
fn clipped(r: Rect, clip: Option<Rect>) -> Option<Rect> {
    let Some(c) = clip else { return Some(r) };
    let out =
        Rect { x0: r.x0.max(c.x0), y0: r.y0.max(c.y0), x1: r.x1.min(c.x1), y1: r.y1.min(c.y1) };
    (out.x0 < out.x1 && out.y0 < out.y1).then_some(out)
}

/// The graphics state the walk keeps: what `q` saves and `Q` restores.
#[derive(Clone, Copy)]
struct State {
    fill: Option<Colour>,
    /// The text render mode paints (not 3 or 7).
    painting: bool,
    /// The text render mode fills and does not stroke (0 or 4).
    fill_only: bool,
    /// The fill alpha (`ca` of a graphics state).
    alpha: f64,
    /// What painting is clipped to, in user space, when the clip is known
    /// to be a box (a form's bounding box, a rectangle with `W`).
    clip: Option<Rect>,
    /// The transform set by `cm` within the stream or form being read,
    /// from identity at its start, as pdf-extract keeps it.
    ctm: Affine,
}

impl State {
    const INITIAL: State = State {
        fill: Some(Colour::BLACK),
        painting: true,
        fill_only: true,
        alpha: 1.0,
        clip: None,
        ctm: Affine::IDENTITY,
    };
}

struct Walk<'d> {
    doc: &'d Document,
    limits: &'d Limits,
    /// Forms being drawn, innermost last: a form met again is a loop.
    forms: Vec<ObjectId>,
    draws: usize,
    colours: ShowColours,
    state: State,
    saved: Vec<State>,
    /// The hashes of what a page's content streams draw at the top level,
    /// in order: each stream, and each form a stream draws.
    units: Vec<String>,
    /// Every content stream and form followed.
    drawn: BTreeSet<ObjectId>,
    /// Forms decoded once, however often they are drawn.
    forms_read: std::collections::HashMap<ObjectId, Option<std::rc::Rc<Content>>>,
    /// Operators still allowed (forms counted each time they are drawn):
    /// pdf-extract will follow exactly these.
    operators_left: usize,
    /// From the space of the form being read (its own `cm`s aside) to the
    /// page's user space: the forms' matrices and the transforms in force
    /// where each was drawn. Identity in a page's own streams.
    placed: Affine,
    /// The path being built.
    path: Vec<Subpath>,
    /// `W` or `W*` was given: the path, once painted, clips.
    clipping: bool,
    /// The page's opaque areas painted after text.
    covers: Vec<Cover>,
    /// Those of the pages before.
    covers_before: usize,
}

/// Whether pdf-extract draws an XObject as a form: it draws every XObject
/// so (its `Do` does not look at the subtype), except the images and
/// PostScript that [`prepare_for_extraction`] blanks. A stream with no
/// subtype or another one is followed like a form, so that a loop through
/// it is found here and not by pdf-extract's stack.
fn drawn_as_form(stream: &lopdf::Stream) -> bool {
    let subtype = stream.dict.get(b"Subtype").and_then(Object::as_name).ok();
    !subtype.is_some_and(|s| s == b"Image" || s == b"PS")
}

impl<'d> Walk<'d> {
    fn new(doc: &'d Document, limits: &'d Limits) -> Walk<'d> {
        Walk {
            doc,
            limits,
            forms: Vec::new(),
            draws: 0,
            colours: Vec::new(),
            state: State::INITIAL,
            saved: Vec::new(),
            units: Vec::new(),
            drawn: BTreeSet::new(),
            forms_read: std::collections::HashMap::new(),
            operators_left: usize::MAX,
            placed: Affine::IDENTITY,
            path: Vec::new(),
            clipping: false,
            covers: Vec::new(),
            covers_before: 0,
        }
    }
}

/// What following the pages' drawing found: the colours of the strings
/// each page shows, the opaque areas painted over them, and every stream
/// drawn (page contents and forms).
pub(super) struct Drawing {
    pub colours: Vec<ShowColours>,
    pub covers: Vec<Vec<Cover>>,
    pub drawn: BTreeSet<ObjectId>,
}

/// Follows every page's drawing; `Err` names a loop or a nesting too deep.
pub(super) fn walk_pages(
    doc: &Document,
    pages: &BTreeMap<u32, ObjectId>,
    limits: &Limits,
    operators: usize,
) -> Result<Drawing, PdfError> {
    let mut walk = Walk::new(doc, limits);
    walk.operators_left = operators;
    let mut out = Vec::with_capacity(pages.len());
    let mut covers = Vec::with_capacity(pages.len());
    for (number, id) in pages {
        walk.state = State::INITIAL;
        walk.saved.clear();
        walk.units.clear();
        walk.path.clear();
        let resources = page_resources(doc, *id);
        for stream in doc.get_page_contents(*id) {
            walk.drawn.insert(stream);
            let Some(content) = decoded(doc, stream) else { continue };
            walk.ops(&content, resources, &mut Sha256::new())
                .map_err(|why| PdfError::Drawing(format!("page {number}: {why}")))?;
        }
        out.push(std::mem::take(&mut walk.colours));
        walk.covers_before += walk.covers.len();
        covers.push(std::mem::take(&mut walk.covers));
    }
    Ok(Drawing { colours: out, covers, drawn: walk.drawn })
}

impl<'d> Walk<'d> {
    fn ops(
        &mut self,
        content: &Content,
        resources: Option<&'d Dictionary>,
        hash: &mut Sha256,
    ) -> Result<(), String> {
        let paint = |s: &State, placed: Affine| Paint {
            colour: s.fill,
            visible: s.painting && s.alpha > 0.0,
            fill_only: s.fill_only,
            placed,
        };
        self.operators_left = self
            .operators_left
            .checked_sub(content.operations.len())
            .ok_or("more drawing operators than the file's size allows")?;
        let core = Content { operations: unwrapped(&content.operations) };
        if let Ok(encoded) = core.encode() {
            hash.update(&encoded);
        }
        for op in &content.operations {
            let numbers = || op.operands.iter().filter_map(number).collect::<Vec<f64>>();
            match op.operator.as_str() {
                "q" => self.saved.push(self.state),
                "Q" => self.state = self.saved.pop().unwrap_or(self.state),
                "g" | "rg" | "k" | "sc" | "scn" => {
                    self.state.fill = Colour::from_components(&numbers())
                }
                "cs" => self.state.fill = Some(Colour::BLACK),
                "cm" => {
                    if let Some(m) = Affine::of(&numbers()) {
                        self.state.ctm = m.then(&self.state.ctm);
                    }
                }
                "m" | "l" | "c" | "v" | "y" | "h" | "re" => {
                    self.build_path(op.operator.as_str(), &numbers())
                }
                "W" | "W*" => self.clipping = true,
                "f" | "F" | "f*" | "B" | "B*" | "b" | "b*" => {
                    self.end_path(true);
                    if self.covers.len() + self.covers_before > MOST_COVERS {
                        return Err(format!("more than {MOST_COVERS} opaque areas painted"));
                    }
                }
                "n" | "S" | "s" => self.end_path(false),
                "Tr" => {
                    let mode = numbers().first().copied().unwrap_or(0.0);
                    self.state.painting = mode != 3.0 && mode != 7.0;
                    self.state.fill_only = mode == 0.0 || mode == 4.0;
                }
                "gs" => {
                    let name = op.operands.first().and_then(|n| n.as_name().ok());
                    if let Some(alpha) = name.and_then(|n| fill_alpha(self.doc, resources, n)) {
                        self.state.alpha = alpha;
                    }
                }
                "Tj" | "'" | "\"" => self.colours.push(paint(&self.state, self.placed)),
                "TJ" => {
                    let strings = op.operands.first().and_then(|a| a.as_array().ok());
                    for s in strings.into_iter().flatten() {
                        if matches!(s, Object::String(..)) {
                            self.colours.push(paint(&self.state, self.placed));
                        }
                    }
                }
                "Do" => {
                    let name = op.operands.first().and_then(|n| n.as_name().ok());
                    if let Some(name) = name {
                        self.draw(name, resources, hash)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Draws the XObject `name`: an image is hashed, anything else
    /// followed as a form (as pdf-extract will).
    fn draw(
        &mut self,
        name: &[u8],
        resources: Option<&'d Dictionary>,
        hash: &mut Sha256,
    ) -> Result<(), String> {
        let Some((id, stream)) = xobject(self.doc, resources, name) else { return Ok(()) };
        if !drawn_as_form(stream) {
            hash.update(Sha256::digest(&stream.content));
            self.cover_with_image(stream);
            return Ok(());
        }
        if self.forms.contains(&id) {
            return Err(format!("form XObject {} {} draws itself", id.0, id.1));
        }
        if self.forms.len() >= self.limits.max_form_depth {
            return Err(format!("forms nest deeper than {}", self.limits.max_form_depth));
        }
        self.draws += 1;
        if self.draws > self.limits.max_form_draws {
            return Err(format!("more than {} forms drawn", self.limits.max_form_draws));
        }
        let inner = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|r| self.doc.dereference(r).ok())
            .and_then(|(_, r)| r.as_dict().ok())
            .or(resources);
        self.drawn.insert(id);
        let doc = self.doc;
        let read =
            self.forms_read.entry(id).or_insert_with(|| decoded(doc, id).map(std::rc::Rc::new));
        let Some(content) = read.clone() else { return Ok(()) };
        // A form drawn by a page's own stream is a unit of its own: tools
        // that stamp a page (qpdf's overlay) turn the original page into
        // such a form, unchanged.
        let top_level = self.forms.is_empty();
        let mut own = Sha256::new();
        // Drawing a form saves and restores the graphics state around it.
        // Its `q`/`Q` pair within it, as pdf-extract reads it.
        let (outside, placed) = (self.state, self.placed);
        let saved = std::mem::take(&mut self.saved);
        let matrix = stream.dict.get(b"Matrix").and_then(Object::as_array).ok();
        let matrix =
            matrix.and_then(|m| Affine::of(&m.iter().filter_map(number).collect::<Vec<_>>()));
        self.placed = matrix.unwrap_or(Affine::IDENTITY).then(&self.state.ctm).then(&placed);
        self.state.ctm = Affine::IDENTITY;
        let bbox = stream.dict.get(b"BBox").and_then(Object::as_array).ok();
        let bbox: Vec<f64> = bbox.into_iter().flatten().filter_map(number).collect();
        if let [a, b, c, d] = bbox.as_slice() {
            let mut outline = Subpath { points: Vec::new(), straight: true };
            for (x, y) in [(*a, *b), (*c, *b), (*c, *d), (*a, *d)] {
                outline.push(self.placed.point(x, y));
            }
            // A box turned other than by quarter turns clips to a shape
            // this walk does not follow: nothing it covers is counted.
            self.state.clip = match outline.upright_box() {
                Some(r) => clipped(r, self.state.clip).or(Some(Rect::default())),
                None => Some(Rect::default()),
            };
        }
        self.forms.push(id);
        let walked = self.ops(&content, inner, if top_level { &mut own } else { hash });
        self.forms.pop();
        (self.state, self.placed, self.saved) = (outside, placed, saved);
        if top_level {
            let digest = own.finalize();
            hash.update(digest);
            self.units.push(hex(&digest));
        }
        walked
    }
}

impl Walk<'_> {
    /// A path operator: points go to user space through the transforms in
    /// force; a curve makes its subpath one that covers nothing here.
    fn build_path(&mut self, operator: &str, n: &[f64]) {
        let to_page = self.state.ctm.then(&self.placed);
        match (operator, n) {
            ("re", [x, y, w, h]) => {
                let mut s = Subpath { points: Vec::new(), straight: true };
                for (a, b) in [(*x, *y), (x + w, *y), (x + w, y + h), (*x, y + h)] {
                    s.push(to_page.point(a, b));
                }
                self.path.push(s);
            }
            ("m", [x, y]) => {
                let mut s = Subpath { points: Vec::new(), straight: true };
                s.push(to_page.point(*x, *y));
                self.path.push(s);
            }
            ("l", [x, y]) => match self.path.last_mut() {
                Some(s) => s.push(to_page.point(*x, *y)),
                None => self.path.push(Subpath::default()),
            },
            ("h", _) => {}
            _ => match self.path.last_mut() {
                Some(s) => s.straight = false,
                None => self.path.push(Subpath::default()),
            },
        }
    }

    /// A path painted (filled or not) and done with: an opaque fill of
    /// upright rectangles covers what is beneath; a clip given by one
    /// rectangle narrows the clip.
    fn end_path(&mut self, filled: bool) {
        let path = std::mem::take(&mut self.path);
        let after = self.colours.len();
        if filled && self.state.alpha >= OPAQUE {
            let colour = self.state.fill;
            for rect in path.iter().filter_map(Subpath::upright_box) {
                if let Some(rect) = clipped(rect, self.state.clip) {
                    self.covers.push(Cover { rect, after, colour });
                }
            }
        }
        if std::mem::take(&mut self.clipping) {
            let single = match path.as_slice() {
                [one] => one.upright_box(),
                _ => None,
            };
            if let Some(r) = single {
                self.state.clip = Some(clipped(r, self.state.clip).unwrap_or_default());
            }
        }
    }

    /// An image covers its unit square as placed, unless it lets what is
    /// beneath show (a soft mask, a mask, a stencil).
    fn cover_with_image(&mut self, image: &lopdf::Stream) {
        let see_through = [b"SMask".as_slice(), b"Mask"].iter().any(|k| image.dict.has(k))
            || image.dict.get(b"ImageMask").and_then(Object::as_bool).unwrap_or(false);
        let after = self.colours.len();
        if see_through || self.state.alpha < OPAQUE {
            return;
        }
        let to_page = self.state.ctm.then(&self.placed);
        let mut square = Subpath { points: Vec::new(), straight: true };
        for (x, y) in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)] {
            square.push(to_page.point(x, y));
        }
        if let Some(rect) = square.upright_box().and_then(|r| clipped(r, self.state.clip)) {
            self.covers.push(Cover { rect, after, colour: None });
        }
    }
}

/// The fill alpha from which a painted area hides what lies beneath.
const OPAQUE: f64 = 0.999;

/// Most opaque areas a document may paint (each is kept, and each glyph
/// is tested against those near it).
pub(super) const MOST_COVERS: usize = 200_000;

/// How each glyph was shown: the index of its string, and whether it
/// shows in its fill colour alone.
#[derive(Clone, Copy, Default)]
pub(super) struct Shown {
    pub string: usize,
    pub fill_only: bool,
}

/// A glyph's fill and its ground closer than this (per component) do not
/// tell apart.
const SAME_COLOUR: f64 = 0.05;

/// Marks as hidden the glyphs an opaque area painted after them covers
/// (its box holds the glyph's centre), and those filled, alone, in the
/// colour of their ground: the last opaque area painted before them
/// beneath their centre, or the white page. Areas are looked up in a grid
/// of 32 pt cells; `budget` bounds the tests made over the document, and
/// `Err` says it ran out.
pub(super) fn cover_glyphs(
    glyphs: &mut [super::Glyph],
    shown: &[Shown],
    covers: &[Cover],
    budget: &mut usize,
) -> Result<(), ()> {
    const CELL: f64 = 32.0;
    const WIDE: i64 = 1024;
    let cell = |v: f64| (v / CELL).floor().clamp(-1e12, 1e12) as i64;
    let mut grid: std::collections::HashMap<(i64, i64), Vec<usize>> = Default::default();
    let mut wide: Vec<usize> = Vec::new();
    for (k, c) in covers.iter().enumerate() {
        let (x0, y0, x1, y1) = (cell(c.rect.x0), cell(c.rect.y0), cell(c.rect.x1), cell(c.rect.y1));
        let cells = (x1 - x0 + 1).saturating_mul(y1 - y0 + 1);
        if cells > WIDE {
            wide.push(k);
            continue;
        }
        *budget = budget.checked_sub(cells as usize).ok_or(())?;
        for x in x0..=x1 {
            for y in y0..=y1 {
                grid.entry((x, y)).or_default().push(k);
            }
        }
    }
    for (g, how) in glyphs.iter_mut().zip(shown) {
        if g.hidden {
            continue;
        }
        let (cx, cy) = ((g.rect.x0 + g.rect.x1) / 2.0, (g.rect.y0 + g.rect.y1) / 2.0);
        let near = grid.get(&(cell(cx), cell(cy))).map(Vec::as_slice).unwrap_or_default();
        // The ground: the latest area beneath, by drawing order.
        let mut ground: Option<usize> = None;
        for k in near.iter().chain(&wide) {
            *budget = budget.checked_sub(1).ok_or(())?;
            let Some(c) = covers.get(*k) else { continue };
            let r = &c.rect;
            if !(cx > r.x0 && cx < r.x1 && cy > r.y0 && cy < r.y1) {
                continue;
            }
            if c.after > how.string {
                g.hidden = true;
                break;
            }
            if ground.is_none_or(|j| *k > j) {
                ground = Some(*k);
            }
        }
        let ground_colour = match ground.and_then(|k| covers.get(k)) {
            Some(c) => c.colour,
            None => Some(Colour { r: 1.0, g: 1.0, b: 1.0 }),
        };
        if let (Some(fill), Some(under)) = (g.colour, ground_colour)
            && how.fill_only
            && fill.distance(&under) < SAME_COLOUR
        {
            g.hidden = true;
        }
    }
    Ok(())
}

/// The operations within any `q … Q` pair that encloses them all: a tool
/// that stamps a page may wrap its drawing so (pypdf's merge does), and
/// what it draws is the same.
fn unwrapped(mut ops: &[lopdf::content::Operation]) -> &[lopdf::content::Operation] {
    while let [first, inner @ .., last] = ops
        && first.operator == "q"
        && last.operator == "Q"
    {
        let mut depth = 0_i64;
        for op in inner {
            match op.operator.as_str() {
                "q" => depth += 1,
                "Q" => depth -= 1,
                _ => {}
            }
            if depth < 0 {
                return ops;
            }
        }
        if depth != 0 {
            return ops;
        }
        ops = inner;
    }
    ops
}

/// A page's resources, inherited from the page tree when the page has
/// none (with a bound on the chain, which a file may make a loop).
fn page_resources(doc: &Document, page: ObjectId) -> Option<&Dictionary> {
    let mut node = doc.get_dictionary(page).ok()?;
    for _ in 0..64 {
        if let Ok(r) = node.get(b"Resources") {
            return doc.dereference(r).ok()?.1.as_dict().ok();
        }
        let parent = node.get(b"Parent").ok()?.as_reference().ok()?;
        node = doc.get_dictionary(parent).ok()?;
    }
    None
}

/// The fill alpha (`ca`) a named graphics state sets, if it sets one.
fn fill_alpha(doc: &Document, resources: Option<&Dictionary>, name: &[u8]) -> Option<f64> {
    let states = doc.dereference(resources?.get(b"ExtGState").ok()?).ok()?.1.as_dict().ok()?;
    let state = doc.dereference(states.get(name).ok()?).ok()?.1.as_dict().ok()?;
    number(state.get(b"ca").ok()?)
}

fn xobject<'d>(
    doc: &'d Document,
    resources: Option<&'d Dictionary>,
    name: &[u8],
) -> Option<(ObjectId, &'d lopdf::Stream)> {
    let xobjects = resources?.get(b"XObject").ok()?;
    let xobjects = doc.dereference(xobjects).ok()?.1.as_dict().ok()?;
    let id = xobjects.get(name).ok()?.as_reference().ok()?;
    Some((id, doc.get_object(id).ok()?.as_stream().ok()?))
}

/// A content stream's operations (its inflation is bounded beforehand).
fn decoded(doc: &Document, id: ObjectId) -> Option<Content> {
    let stream = doc.get_object(id).ok()?.as_stream().ok()?;
    let bytes = stream.decompressed_content().unwrap_or_else(|_| stream.content.clone());
    Content::decode(&bytes).ok()
}

fn number(o: &Object) -> Option<f64> {
    match o {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

/// Prepares the document for pdf-extract, which draws every XObject as a
/// form (parsing an image's pixels as operators) and skips the `'` and
/// `"` text operators: images become empty forms, and in every stream
/// drawn the two operators are rewritten as the operators the PDF
/// specification defines them as (`T*` then `Tj`; `"` sets word and
/// character spacing first).
pub(super) fn prepare_for_extraction(doc: &mut Document, drawn: &BTreeSet<ObjectId>) {
    for (id, object) in doc.objects.iter_mut() {
        let Object::Stream(stream) = object else { continue };
        if drawn.contains(id) {
            rewrite_quotes(stream);
        } else if !drawn_as_form(stream) {
            let mut dict = Dictionary::new();
            dict.set("Type", Object::Name(b"XObject".to_vec()));
            dict.set("Subtype", Object::Name(b"Form".to_vec()));
            dict.set("BBox", Object::Array(vec![0.into(), 0.into(), 0.into(), 0.into()]));
            *stream = lopdf::Stream::new(dict, Vec::new());
        }
    }
}

/// Gives every page its resources and media box itself and cuts its link
/// to the page tree above: pdf-extract looks inherited keys up the
/// `/Parent` chain recursively and without a bound (a chain made a loop
/// overflows its stack). The values are the ones read here, within a
/// bound; `pdf-extract` finds the pages again from the root's `/Kids`.
pub(super) fn settle_pages(doc: &mut Document, pages: &BTreeMap<u32, ObjectId>, boxes: &[Rect]) {
    for (id, media) in pages.values().zip(boxes) {
        let resources = page_resources(doc, *id).cloned().unwrap_or_default();
        let Ok(page) = doc.get_object_mut(*id).and_then(Object::as_dict_mut) else { continue };
        let corner = |v: f64| Object::Real(v as f32);
        page.set("Resources", resources);
        page.set(
            "MediaBox",
            Object::Array(vec![
                corner(media.x0),
                corner(media.y0),
                corner(media.x1),
                corner(media.y1),
            ]),
        );
        page.remove(b"Parent");
    }
}

/// The page's content hash and its drawing units' hashes: each content
/// stream's operations re-encoded (so compression and spacing do not
/// count) with the forms and images it draws, then each form a stream
/// draws on its own; the content hash adds the box and rotation.
pub(super) fn page_hashes(doc: &Document, page: ObjectId, limits: &Limits) -> PageHashes {
    let resources = page_resources(doc, page);
    let mut walk = Walk::new(doc, limits);
    let mut units = Vec::new();
    let mut joined: Vec<lopdf::content::Operation> = Vec::new();
    let streams = doc.get_page_contents(page);
    let single = streams.len() == 1;
    for id in streams {
        let mut hash = Sha256::new();
        match decoded(doc, id) {
            Some(content) => {
                // Loops and depth were refused by `walk_pages`.
                let _ = walk.ops(&content, resources, &mut hash);
                if !single {
                    joined.extend(content.operations);
                }
            }
            None => hash.update(b"undecodable"),
        }
        units.push(hex(&hash.finalize()));
        units.append(&mut walk.units);
    }
    // What the streams draw as one: what a tool that turns the page into
    // a form (qpdf's overlay) or one stream (pypdf's merge) keeps. A page
    // of one stream is that stream's unit, already hashed.
    let whole = match units.first() {
        Some(first) if single => first.clone(),
        _ => {
            let mut whole = Sha256::new();
            let all = Content { operations: joined };
            let _ = Walk::new(doc, limits).ops(&all, resources, &mut whole);
            hex(&whole.finalize())
        }
    };
    let geometry = super::navigation::geometry(doc, page);
    let mut page_hash = Sha256::new();
    page_hash.update(format!("{:?} {}", geometry.media_box, geometry.rotation));
    for u in &units {
        page_hash.update(u.as_bytes());
    }
    PageHashes { content: hex(&page_hash.finalize()), units, whole }
}

/// The hashes that identify a page's drawing (see [`super::Page`]).
pub(super) struct PageHashes {
    pub content: String,
    pub units: Vec<String>,
    pub whole: String,
}

fn rewrite_quotes(stream: &mut lopdf::Stream) {
    let bytes = stream.decompressed_content().unwrap_or_else(|_| stream.content.clone());
    let Ok(content) = Content::decode(&bytes) else { return };
    if !content.operations.iter().any(|op| op.operator == "'" || op.operator == "\"") {
        return;
    }
    let op = |name: &str, operands: Vec<Object>| lopdf::content::Operation::new(name, operands);
    let mut out = Vec::with_capacity(content.operations.len());
    for o in content.operations {
        match (o.operator.as_str(), o.operands.as_slice()) {
            ("'", [text]) => {
                out.push(op("T*", vec![]));
                out.push(op("Tj", vec![text.clone()]));
            }
            ("\"", [aw, ac, text]) => {
                out.push(op("Tw", vec![aw.clone()]));
                out.push(op("Tc", vec![ac.clone()]));
                out.push(op("T*", vec![]));
                out.push(op("Tj", vec![text.clone()]));
            }
            _ => out.push(o),
        }
    }
    if let Ok(encoded) = (Content { operations: out }).encode() {
        stream.set_plain_content(encoded);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
