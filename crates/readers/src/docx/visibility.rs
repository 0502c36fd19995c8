//! Whether a person sees a run of text: the run formatting that decides it
//! (hidden, size, colour, highlight, shading), resolved as Word resolves
//! it — direct formatting, then the character style, then the paragraph
//! style (each through its `basedOn` chain), then the document defaults —
//! against the background the text is drawn on.
//!
//! Owns: the style sheet's visibility properties and the rule that turns
//! them into a [`Hidden`] reason. Must never drop text itself: the story
//! parser marks spans, and views and checks decide what to do with them.

use std::collections::HashMap;

use quick_xml::events::BytesStart;

use super::DocxError;
use super::model::Hidden;
use super::xml::{Ev, Ns, PartReader, attr, local, on_off};

/// Text smaller than this many half-points (3 pt) is not readable on a
/// page or a screen at 100%: Word's smallest size in its menus is 8 pt.
pub(crate) const READABLE_HALF_POINTS: u32 = 6;

/// The visibility properties a run, a style or the defaults may set; each
/// is `None` where that level says nothing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Look {
    /// `w:vanish`.
    pub vanish: Option<bool>,
    /// `w:sz`, in half-points.
    pub half_points: Option<u32>,
    /// `w:color`: six upper-case hex digits, or "AUTO".
    pub color: Option<String>,
    /// `w:highlight`, as six hex digits ("NONE" for none).
    pub highlight: Option<String>,
    /// `w:shd w:fill`: six hex digits, or "AUTO".
    pub shading: Option<String>,
    /// `w:rStyle`: the run's character style (direct formatting only).
    pub style: Option<String>,
    /// A paragraph style's own shading (`w:pPr/w:shd`): what its text is
    /// drawn on.
    pub paragraph_shading: Option<String>,
}

impl Look {
    /// Records one run-property element, if it is one of ours.
    pub(crate) fn record(&mut self, e: &BytesStart<'_>) {
        match local(e) {
            "vanish" => self.vanish = Some(on_off(e)),
            "sz" => self.half_points = attr(e, "val").and_then(|v| v.trim().parse().ok()),
            "color" => self.color = attr(e, "val").map(|v| colour(&v)),
            "highlight" => self.highlight = attr(e, "val").map(|v| highlight(&v)),
            "shd" => self.shading = shading_fill(e),
            "rStyle" => self.style = attr(e, "val"),
            _ => {}
        }
    }

    /// This look with what it leaves unsaid taken from `under`.
    fn over(&self, under: &Look) -> Look {
        Look {
            vanish: self.vanish.or(under.vanish),
            half_points: self.half_points.or(under.half_points),
            color: self.color.clone().or_else(|| under.color.clone()),
            highlight: self.highlight.clone().or_else(|| under.highlight.clone()),
            shading: self.shading.clone().or_else(|| under.shading.clone()),
            style: self.style.clone().or_else(|| under.style.clone()),
            paragraph_shading: self
                .paragraph_shading
                .clone()
                .or_else(|| under.paragraph_shading.clone()),
        }
    }
}

/// The colour a `w:shd` fills with: its pattern colour when the pattern is
/// solid (`w:val="solid"`), else its fill.
pub(crate) fn shading_fill(e: &BytesStart<'_>) -> Option<String> {
    let solid = attr(e, "val").is_some_and(|v| v.trim() == "solid");
    let pick = if solid { attr(e, "color") } else { attr(e, "fill") };
    pick.map(|v| colour(&v))
}

fn colour(v: &str) -> String {
    v.trim().to_ascii_uppercase()
}

/// A highlight colour's name as hex (ST_HighlightColor).
fn highlight(name: &str) -> String {
    let hex = match name.trim() {
        "black" => "000000",
        "blue" => "0000FF",
        "cyan" => "00FFFF",
        "green" => "00FF00",
        "magenta" => "FF00FF",
        "red" => "FF0000",
        "yellow" => "FFFF00",
        "white" => "FFFFFF",
        "darkBlue" => "000080",
        "darkCyan" => "008080",
        "darkGreen" => "008000",
        "darkMagenta" => "800080",
        "darkRed" => "800000",
        "darkYellow" => "808000",
        "darkGray" => "808080",
        "lightGray" => "C0C0C0",
        _ => "NONE",
    };
    hex.to_string()
}

struct Style {
    based_on: Option<String>,
    look: Look,
}

/// The style sheet's visibility properties, with each style's chain
/// resolved once.
#[derive(Default)]
pub(crate) struct StyleSheet {
    styles: HashMap<String, Style>,
    defaults: Look,
    default_paragraph: Option<String>,
    /// The page colour (`w:background w:color`), when the document sets one.
    pub page: Option<String>,
    resolved: HashMap<String, Look>,
}

/// How deep a `basedOn` chain is followed; Word's own limit is lower.
const MAX_CHAIN: usize = 32;

impl StyleSheet {
    /// Reads `w:docDefaults` and every style's run properties.
    pub(crate) fn parse(part: &str, xml: &str) -> Result<StyleSheet, DocxError> {
        let mut sheet = StyleSheet::default();
        let mut r = PartReader::new(part, xml);
        let mut current: Option<(String, Style)> = None;
        // Depth of the `w:rPr` being read and whether it is the defaults'.
        let mut rpr: Option<(usize, bool)> = None;
        // Depth of a style's `w:pPr` being read.
        let mut ppr: Option<usize> = None;
        let mut in_defaults = false;
        loop {
            let event = r.next()?;
            let open = matches!(event, Ev::Start(..));
            match event {
                Ev::Start(Ns::W, e) | Ev::Empty(Ns::W, e) => match local(&e) {
                    "rPrDefault" => in_defaults = true,
                    "pPrDefault" | "latentStyles" => in_defaults = false,
                    "style" => {
                        in_defaults = false;
                        let id = attr(&e, "styleId").unwrap_or_default();
                        let paragraph = attr(&e, "type").is_none_or(|t| t == "paragraph");
                        if paragraph && attr(&e, "default").is_some_and(|d| d == "1" || d == "true")
                        {
                            sheet.default_paragraph = Some(id.clone());
                        }
                        if let Some((id, s)) = current.take() {
                            sheet.styles.insert(id, s);
                        }
                        current = Some((id, Style { based_on: None, look: Look::default() }));
                    }
                    "basedOn" => {
                        if let Some((_, s)) = current.as_mut() {
                            s.based_on = attr(&e, "val");
                        }
                    }
                    "rPr" if open => rpr = Some((r.depth(), in_defaults)),
                    "pPr" if open && current.is_some() && !in_defaults => ppr = Some(r.depth()),
                    "shd" if ppr.is_some() && rpr.is_none() => {
                        if let Some((_, s)) = current.as_mut() {
                            s.look.paragraph_shading = shading_fill(&e);
                        }
                    }
                    _ if rpr.is_some() => match rpr {
                        Some((_, true)) => sheet.defaults.record(&e),
                        _ => {
                            if let Some((_, s)) = current.as_mut() {
                                s.look.record(&e);
                            }
                        }
                    },
                    _ => {}
                },
                Ev::End if rpr.is_some_and(|(d, _)| r.depth() < d) => rpr = None,
                Ev::End if ppr.is_some_and(|d| r.depth() < d) => ppr = None,
                Ev::Eof => break,
                _ => {}
            }
        }
        if let Some((id, s)) = current.take() {
            sheet.styles.insert(id, s);
        }
        Ok(sheet)
    }

    /// A style's look with its `basedOn` chain folded in.
    fn chain(&mut self, id: &str) -> Look {
        if let Some(l) = self.resolved.get(id) {
            return l.clone();
        }
        let mut look = Look::default();
        let mut next = Some(id.to_string());
        let mut seen = Vec::new();
        while let Some(sid) = next.take() {
            if seen.contains(&sid) || seen.len() >= MAX_CHAIN {
                break;
            }
            if let Some(s) = self.styles.get(&sid) {
                look = look.over(&s.look);
                next = s.based_on.clone();
            }
            seen.push(sid);
        }
        look.style = None;
        self.resolved.insert(id.to_string(), look.clone());
        look
    }

    /// Whether text with direct formatting `direct` in a paragraph of
    /// style `paragraph_style`, drawn on `surface`, is hidden from a
    /// person, and why.
    pub(crate) fn hidden(
        &mut self,
        direct: &Look,
        paragraph_style: Option<&str>,
        surface: &Surface,
    ) -> Option<Hidden> {
        let character = match direct.style.as_deref() {
            Some(s) => self.chain(s),
            None => Look::default(),
        };
        let para_style = paragraph_style.map(str::to_string).or(self.default_paragraph.clone());
        let paragraph = match para_style {
            Some(s) => self.chain(&s),
            None => Look::default(),
        };
        let look = direct.over(&character).over(&paragraph).over(&self.defaults);
        if look.vanish == Some(true) {
            return Some(Hidden::Vanish);
        }
        if let Some(hp) = look.half_points
            && hp < READABLE_HALF_POINTS
        {
            return Some(Hidden::Tiny { half_points: hp });
        }
        let text = look.color.as_deref().filter(|c| *c != "AUTO")?;
        let fill = |c: &Option<String>| c.clone().filter(|c| c != "AUTO" && c != "NONE");
        let under = match surface {
            Surface::Shaded(fill) => Some(fill.clone()).filter(|c| c != "AUTO"),
            // The paragraph style's shading, if it has one.
            Surface::Page => look.paragraph_shading.clone().filter(|c| c != "AUTO"),
            // A table style may shade the cell: the run's own highlight or
            // shading is all that is known.
            Surface::Unknown => {
                let own = fill(&look.highlight).or_else(|| fill(&look.shading))?;
                return (text == own).then_some(Hidden::Camouflaged { colour: own });
            }
        };
        let background = fill(&look.highlight)
            .or_else(|| fill(&look.shading))
            .or(under)
            .or_else(|| self.page.clone().filter(|c| c != "AUTO"))
            .unwrap_or_else(|| "FFFFFF".to_string());
        (text == background).then_some(Hidden::Camouflaged { colour: background })
    }
}

/// What a paragraph's text is drawn on, beneath its own highlight or
/// shading.
pub(crate) enum Surface {
    /// The paragraph's or its cell's shading fill.
    Shaded(String),
    /// The page (its colour, else white).
    Page,
    /// A cell a table style may colour: not known.
    Unknown,
}

/// Reads the page colour from `w:background` as the main part's parser
/// meets it.
pub(crate) fn page_colour(e: &BytesStart<'_>) -> Option<String> {
    attr(e, "color").map(|v| colour(&v))
}
