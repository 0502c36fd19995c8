//! List numbering: `word/numbering.xml` and the numbering parts of
//! `word/styles.xml`, and the displayed labels ("7.3", "(a)", "Article IV")
//! they give each paragraph.
//!
//! Owns: Word's counter rules — counters kept per abstract numbering, a level
//! restarting after a higher one (or per `w:lvlRestart`), `w:startOverride`
//! taking effect when its list instance is first used, `w:isLgl`, and
//! style-linked numbering. Must never number a paragraph that does not exist
//! in the state being computed (a deleted paragraph's label is not consumed
//! in the accepted state, an inserted one's not in the rejected state).

use std::collections::HashMap;

use super::DocxError;
use super::model::{Block, Document, ParagraphProps, State};
use super::numfmt::NumFmt;
use super::xml::{Ev, Ns, PartReader, attr, local};

#[derive(Clone, Debug, Default)]
pub(crate) struct Level {
    start: i64,
    format: NumFormat,
    text: Option<String>,
    is_lgl: bool,
    /// `w:lvlRestart`: `None` = restart after any higher level; `Some(0)` = never.
    restart: Option<u8>,
    /// Paragraph style linked to this level (`w:pStyle`).
    style: Option<String>,
}

/// How a level's number is written: one of Word's `ST_NumberFormat`
/// values, or a zero-padded custom format ("001, 002, 003").
#[derive(Clone, Copy, Debug, PartialEq)]
enum NumFormat {
    Word(NumFmt),
    /// Zero-padded decimal, at least this many digits.
    Padded(usize),
}

impl Default for NumFormat {
    fn default() -> Self {
        NumFormat::Word(NumFmt::Decimal)
    }
}

#[derive(Debug, Default)]
struct AbstractNum {
    levels: [Option<Level>; 9],
    /// `w:numStyleLink`: this definition defers to a numbering style.
    num_style_link: Option<String>,
    /// `w:styleLink`: this definition is the one a numbering style names.
    style_link: Option<String>,
}

#[derive(Debug, Default)]
struct Num {
    abstract_id: String,
    start_overrides: [Option<i64>; 9],
    level_overrides: [Option<Level>; 9],
}

#[derive(Debug, Default)]
struct Style {
    based_on: Option<String>,
    num_id: Option<String>,
    ilvl: Option<u8>,
}

/// Everything needed to label paragraphs.
#[derive(Debug, Default)]
pub(crate) struct Definitions {
    abstracts: HashMap<String, AbstractNum>,
    nums: HashMap<String, Num>,
    styles: HashMap<String, Style>,
    default_paragraph_style: Option<String>,
}

impl Definitions {
    pub(crate) fn parse(
        numbering: Option<(&str, &str)>,
        styles: Option<(&str, &str)>,
    ) -> Result<Self, DocxError> {
        let mut defs = Definitions::default();
        if let Some((part, xml)) = styles {
            defs.parse_styles(part, xml)?;
        }
        if let Some((part, xml)) = numbering {
            defs.parse_numbering(part, xml)?;
        }
        Ok(defs)
    }

    fn parse_styles(&mut self, part: &str, xml: &str) -> Result<(), DocxError> {
        let mut r = PartReader::new(part, xml);
        let mut current: Option<(String, Style)> = None;
        loop {
            let ev = r.next()?;
            let open = matches!(ev, Ev::Start(..));
            match ev {
                Ev::Start(Ns::W, e) | Ev::Empty(Ns::W, e) => match local(&e) {
                    "style" => {
                        if let Some((id, s)) = current.take() {
                            self.styles.insert(id, s);
                        }
                        let kind = attr(&e, "type").unwrap_or_else(|| "paragraph".into());
                        if kind != "paragraph" && kind != "numbering" {
                            if open {
                                r.skip_subtree()?;
                            }
                            continue;
                        }
                        let id = attr(&e, "styleId").unwrap_or_default();
                        if kind == "paragraph"
                            && attr(&e, "default").is_some_and(|d| d == "1" || d == "true")
                        {
                            self.default_paragraph_style = Some(id.clone());
                        }
                        current = Some((id, Style::default()));
                    }
                    "basedOn" => {
                        if let Some((_, s)) = current.as_mut() {
                            s.based_on = attr(&e, "val");
                        }
                    }
                    "numId" => {
                        if let Some((_, s)) = current.as_mut() {
                            s.num_id = attr(&e, "val");
                        }
                    }
                    "ilvl" => {
                        if let Some((_, s)) = current.as_mut() {
                            s.ilvl =
                                attr(&e, "val").and_then(|v| v.parse().ok()).map(|v: u8| v.min(8));
                        }
                    }
                    _ => {}
                },
                Ev::Eof => break,
                _ => {}
            }
        }
        if let Some((id, s)) = current.take() {
            self.styles.insert(id, s);
        }
        Ok(())
    }

    fn parse_numbering(&mut self, part: &str, xml: &str) -> Result<(), DocxError> {
        let mut r = PartReader::new(part, xml);
        let mut state = NumberingReader::default();
        // One entry per open mc:AlternateContent: whether a branch was read.
        let mut alternates: Vec<(usize, bool)> = Vec::new();
        loop {
            match r.next()? {
                Ev::Start(Ns::Mc, e) => match local(&e) {
                    "AlternateContent" => alternates.push((r.depth(), false)),
                    "Choice" if !r.implements(&attr(&e, "Requires").unwrap_or_default()) => {
                        r.skip_subtree()?
                    }
                    "Choice" | "Fallback" => match alternates.last_mut() {
                        Some((_, taken)) if !*taken => *taken = true,
                        _ => r.skip_subtree()?,
                    },
                    _ => {}
                },
                Ev::End => {
                    let depth = r.depth();
                    if alternates.last().is_some_and(|&(d, _)| depth < d) {
                        alternates.pop();
                    }
                    state.end(self, depth);
                }
                Ev::Start(Ns::W, e) | Ev::Empty(Ns::W, e) => state.element(self, &e, r.depth()),
                Ev::Eof => return Ok(()),
                _ => {}
            }
        }
    }

    /// The (numId, level) a paragraph with these properties is numbered by.
    fn resolve(&self, props: &ParagraphProps) -> Option<(String, usize)> {
        let style_id = props.style.clone().or_else(|| self.default_paragraph_style.clone());
        let mut num_id = props.num_id.clone();
        let mut ilvl = props.ilvl;
        // Walk the style chain for whatever the paragraph does not say itself.
        let mut via_style = false;
        let mut cursor = style_id.clone();
        let mut guard = 0;
        while let Some(id) = cursor {
            guard += 1;
            if guard > 32 {
                break;
            }
            let Some(style) = self.styles.get(&id) else { break };
            if num_id.is_none() && style.num_id.is_some() {
                num_id = style.num_id.clone();
                via_style = true;
            }
            if ilvl.is_none() {
                ilvl = style.ilvl;
            }
            cursor = style.based_on.clone();
        }
        let num_id = num_id?;
        if num_id == "0" || num_id.is_empty() {
            return None;
        }
        let abstract_id = self.abstract_for(&num_id)?;
        let level = match ilvl {
            Some(l) => l as usize,
            None if via_style => {
                // Style-linked numbering: the level whose pStyle is this style.
                let a = self.abstracts.get(&abstract_id)?;
                style_id
                    .as_deref()
                    .and_then(|s| {
                        a.levels
                            .iter()
                            .position(|lv| lv.as_ref().and_then(|l| l.style.as_deref()) == Some(s))
                    })
                    .unwrap_or(0)
            }
            None => 0,
        };
        Some((num_id, level.min(8)))
    }

    /// The abstract numbering a list instance uses, through numbering-style links.
    fn abstract_for(&self, num_id: &str) -> Option<String> {
        let mut abstract_id = self.nums.get(num_id)?.abstract_id.clone();
        for _ in 0..8 {
            let a = self.abstracts.get(&abstract_id)?;
            let Some(link) = &a.num_style_link else { break };
            let style = self.styles.get(link)?;
            let linked_num = style.num_id.as_deref()?;
            let next = self.nums.get(linked_num)?.abstract_id.clone();
            if next == abstract_id {
                break;
            }
            abstract_id = next;
        }
        Some(abstract_id)
    }

    fn level(&self, num_id: &str, abstract_id: &str, l: usize) -> Option<Level> {
        if let Some(lv) = self.nums.get(num_id).and_then(|n| n.level_overrides.get(l)?.clone()) {
            return Some(lv);
        }
        self.abstracts.get(abstract_id).and_then(|a| a.levels.get(l)?.clone())
    }
}

/// Which definition of numbering.xml is being read.
#[derive(Default)]
enum Scope {
    #[default]
    None,
    Abstract(String),
    Num(String),
}

/// The state of reading numbering.xml, one element at a time.
#[derive(Default)]
struct NumberingReader {
    scope: Scope,
    scope_depth: usize,
    /// The level being read, with the depth of its `w:lvl` element.
    level: Option<(usize, Level, usize)>,
    /// The level a `w:lvlOverride` names.
    override_level: Option<usize>,
}

fn level_index(e: &quick_xml::events::BytesStart<'_>) -> Option<usize> {
    attr(e, "ilvl").and_then(|v| v.parse::<usize>().ok()).filter(|&l| l < 9)
}

impl NumberingReader {
    /// An element closed at `depth`: a finished level is stored, a
    /// finished definition closes its scope.
    fn end(&mut self, defs: &mut Definitions, depth: usize) {
        if let Some((l, lv, d)) = self.level.take() {
            if depth >= d {
                self.level = Some((l, lv, d));
            } else {
                match &self.scope {
                    Scope::Abstract(id) => {
                        if let Some(slot) =
                            defs.abstracts.get_mut(id).and_then(|a| a.levels.get_mut(l))
                        {
                            *slot = Some(lv);
                        }
                    }
                    Scope::Num(id) => {
                        if let Some(slot) =
                            defs.nums.get_mut(id).and_then(|n| n.level_overrides.get_mut(l))
                        {
                            *slot = Some(lv);
                        }
                    }
                    Scope::None => {}
                }
            }
        }
        if depth < self.scope_depth {
            (self.scope, self.scope_depth, self.override_level) = (Scope::None, 0, None);
        }
    }

    /// An element opened at `depth`.
    fn element(
        &mut self,
        defs: &mut Definitions,
        e: &quick_xml::events::BytesStart<'_>,
        depth: usize,
    ) {
        let name = local(e);
        if let Some((_, lv, _)) = self.level.as_mut() {
            level_property(lv, name, e);
            return;
        }
        match name {
            "abstractNum" => {
                let id = attr(e, "abstractNumId").unwrap_or_default();
                defs.abstracts.insert(id.clone(), AbstractNum::default());
                (self.scope, self.scope_depth) = (Scope::Abstract(id), depth);
            }
            "num" => {
                let id = attr(e, "numId").unwrap_or_default();
                defs.nums.insert(id.clone(), Num::default());
                (self.scope, self.scope_depth) = (Scope::Num(id), depth);
            }
            "abstractNumId" => {
                if let Scope::Num(id) = &self.scope
                    && let Some(n) = defs.nums.get_mut(id)
                {
                    n.abstract_id = attr(e, "val").unwrap_or_default();
                }
            }
            "numStyleLink" | "styleLink" => {
                if let Scope::Abstract(id) = &self.scope
                    && let Some(a) = defs.abstracts.get_mut(id)
                {
                    let link = if name == "numStyleLink" {
                        &mut a.num_style_link
                    } else {
                        &mut a.style_link
                    };
                    *link = attr(e, "val");
                }
            }
            "lvlOverride" => self.override_level = level_index(e),
            "startOverride" => {
                if let (Scope::Num(id), Some(l)) = (&self.scope, self.override_level)
                    && let Some(slot) =
                        defs.nums.get_mut(id).and_then(|n| n.start_overrides.get_mut(l))
                {
                    *slot = attr(e, "val").and_then(|v| v.parse().ok());
                }
            }
            "lvl" => {
                let ilvl = match &self.scope {
                    Scope::Num(_) => self.override_level.or(level_index(e)),
                    _ => level_index(e),
                };
                if let (Some(l), false) = (ilvl, matches!(self.scope, Scope::None)) {
                    self.level = Some((l, Level::default(), depth));
                }
            }
            _ => {}
        }
    }
}

/// One property of the `w:lvl` being read.
fn level_property(lv: &mut Level, name: &str, e: &quick_xml::events::BytesStart<'_>) {
    match name {
        "start" => lv.start = attr(e, "val").and_then(|v| v.parse().ok()).unwrap_or(0),
        "numFmt" => {
            lv.format = parse_format(attr(e, "val").as_deref(), attr(e, "format").as_deref())
        }
        "lvlText" => lv.text = Some(attr(e, "val").unwrap_or_default()),
        "isLgl" => lv.is_lgl = super::xml::on_off(e),
        "lvlRestart" => lv.restart = attr(e, "val").and_then(|v| v.parse().ok()),
        "pStyle" => lv.style = attr(e, "val"),
        _ => {}
    }
}

fn parse_format(val: Option<&str>, custom: Option<&str>) -> NumFormat {
    match val.unwrap_or("decimal") {
        "custom" => {
            // Word 2010 custom formats such as "001, 002, 003".
            let first = custom.unwrap_or("").split(',').next().unwrap_or("").trim();
            if !first.is_empty() && first.chars().all(|c| c.is_ascii_digit()) {
                NumFormat::Padded(first.len())
            } else {
                NumFormat::default()
            }
        }
        other => NumFormat::Word(NumFmt::parse(other)),
    }
}

fn format_number(n: i64, format: NumFormat) -> String {
    match format {
        NumFormat::Word(f) => f.render(n),
        NumFormat::Padded(width) => format!("{n:0width$}"),
    }
}

/// Private-use bullet glyphs (Symbol/Wingdings) mean nothing outside their font.
fn bullet_text(text: &str) -> String {
    text.chars().map(|c| if ('\u{F000}'..='\u{F0FF}').contains(&c) { '•' } else { c }).collect()
}

/// Counter state for one state (accepted or rejected) of the body.
struct Counters<'d> {
    defs: &'d Definitions,
    /// Per abstract numbering: the last value shown at each level.
    values: HashMap<String, [Option<i64>; 9]>,
    /// List instances already used (startOverride applies once).
    nums_seen: std::collections::HashSet<String>,
}

impl<'d> Counters<'d> {
    /// The label, its level, and the abstract numbering it counts in.
    fn label(&mut self, props: &ParagraphProps) -> Option<(String, u8, String)> {
        let (num_id, l) = self.defs.resolve(props)?;
        let abstract_id = self.defs.abstract_for(&num_id)?;
        let level = self.defs.level(&num_id, &abstract_id, l)?;
        let values = self.values.entry(abstract_id.clone()).or_insert([None; 9]);
        if self.nums_seen.insert(num_id.clone())
            && let Some(num) = self.defs.nums.get(&num_id)
        {
            for (value, start) in values.iter_mut().zip(&num.start_overrides) {
                if let Some(start) = start {
                    *value = Some(start.saturating_sub(1));
                }
            }
        }
        // `resolve` caps the level at 8, so this always finds it.
        let current = values.get_mut(l)?;
        let next = match *current {
            Some(v) => v.saturating_add(1),
            None => level.start,
        };
        *current = Some(next);
        for (k, value) in values.iter_mut().enumerate().skip(l + 1) {
            let restart = self.defs.level(&num_id, &abstract_id, k).and_then(|lv| lv.restart);
            let resets = match restart {
                None => true,
                Some(0) => false,
                Some(r) => l < r as usize,
            };
            if resets {
                *value = None;
            }
        }
        let values = *values;
        let text = level.text.clone()?;
        if level.format == NumFormat::Word(NumFmt::Bullet) {
            return Some((bullet_text(&text), l as u8, abstract_id));
        }
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '%'
                && let Some(d) = chars.peek().and_then(|d| d.to_digit(10))
            {
                chars.next();
                if (1..=9).contains(&d) {
                    let k = d as usize - 1;
                    let lv = self.defs.level(&num_id, &abstract_id, k).unwrap_or_default();
                    let value = values.get(k).copied().flatten().unwrap_or(lv.start);
                    let decimal = NumFormat::default();
                    let format = if level.is_lgl && k < l { decimal } else { lv.format };
                    let format =
                        if format == NumFormat::Word(NumFmt::Bullet) { decimal } else { format };
                    out.push_str(&format_number(value, format));
                }
                continue;
            }
            out.push(c);
        }
        let out = out.trim().to_string();
        if out.is_empty() { None } else { Some((out, l as u8, abstract_id)) }
    }
}

/// Fills `label` of every body paragraph, for both states.
pub(crate) fn label_document(doc: &mut Document, defs: &Definitions) {
    for state in [State::Accepted, State::Rejected] {
        let mut counters = Counters { defs, values: HashMap::new(), nums_seen: Default::default() };
        label_blocks(&mut doc.body, state, &mut counters, Container::Present);
    }
}

/// Whether the table row or cell that holds some blocks exists in the
/// state being numbered: the paragraphs of one that does not consume no
/// number.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Present,
    Absent,
}

impl Container {
    /// This container, within one that is (or is not) present.
    fn within(self, present: bool) -> Container {
        if self == Container::Present && present { Container::Present } else { Container::Absent }
    }
}

fn label_blocks(
    blocks: &mut [Block],
    state: State,
    counters: &mut Counters<'_>,
    holder: Container,
) {
    for block in blocks {
        match block {
            Block::Paragraph(p) => {
                let label = if holder == Container::Present && p.mark_present(state) {
                    let props = p.props_in(state).clone();
                    counters.label(&props)
                } else {
                    None
                };
                // Rejected comes second: its level wins where it has a label.
                if let Some((_, level, list)) = &label {
                    p.label.level = Some(*level);
                    p.label.list = Some(list.clone());
                }
                let label = label.map(|(text, _, _)| text);
                match state {
                    State::Accepted => p.label.accepted = label,
                    State::Rejected => p.label.rejected = label,
                }
            }
            Block::Table(t) => {
                for row in &mut t.rows {
                    let row_holder = holder.within(row.present(state));
                    for cell in &mut row.cells {
                        let cell_holder = row_holder.within(cell.present(state));
                        label_blocks(&mut cell.blocks, state, counters, cell_holder);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_and_word_formats() {
        assert_eq!(format_number(7, parse_format(Some("custom"), Some("001, 002, 003"))), "007");
        assert_eq!(format_number(4, parse_format(Some("upperRoman"), None)), "IV");
        assert_eq!(format_number(12, parse_format(Some("decimalFullWidth"), None)), "１２");
        assert_eq!(format_number(3, parse_format(Some("notAFormat"), None)), "3");
        assert_eq!(format_number(3, parse_format(None, None)), "3");
    }
}
