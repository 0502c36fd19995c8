//! Reading .xlsx spreadsheets (a term sheet, a checklist) into a typed
//! [`Workbook`], with the same zip and XML care as .docx: the same package
//! limits (bombs, duplicate parts, ratios), no DTD, no entity but the five
//! XML ones.
//!
//! Owns: sheets, shared and inline strings, the number formats that make a
//! number a date or a duration, merged cells and data validations. Must
//! never panic or hang on any input, never allocate by a size the file
//! declares, and never let a workbook expand past [`MAX_CELLS`] cells or
//! [`MAX_TEXT_BYTES`] of cell text: a shared string is held once however
//! many cells show it, but every cell that shows it counts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::docx::package::Package;
use crate::docx::xml::{Ev, PartReader, attr, local};
use crate::docx::{DocxError, Limits};

/// A spreadsheet.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Workbook {
    /// The sheets, in workbook order.
    pub sheets: Vec<Sheet>,
}

/// One worksheet.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Sheet {
    /// Its name.
    pub name: String,
    /// Its cells with a value, by (row, column), both from 1 (as JSON, by
    /// their A1 address).
    #[serde(serialize_with = "cells_by_address", deserialize_with = "cells_from_addresses")]
    pub cells: BTreeMap<(u32, u32), Cell>,
    /// Merged ranges, as "A1:C1".
    pub merged: Vec<String>,
    /// Data-validation rules on the sheet.
    pub validations: usize,
    /// Whether Excel shows the sheet (`state` in workbook.xml).
    #[serde(default, skip_serializing_if = "SheetState::is_visible")]
    pub state: SheetState,
    /// What Excel shows in cells whose number format does not show their
    /// number (`"120,000"` as a quoted literal, `;;;`): that text, by
    /// (row, column). The stored value stays in `cells`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "shown_by_address",
        deserialize_with = "shown_from_addresses"
    )]
    pub shown: ShownText,
}

/// Text shown in place of a number, by (row, column).
pub type ShownText = BTreeMap<(u32, u32), Arc<str>>;

/// Whether Excel shows a sheet.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SheetState {
    /// Shown, with a tab.
    #[default]
    Visible,
    /// Hidden: no tab, until a person unhides it.
    Hidden,
    /// Very hidden: no tab, and Excel's Unhide does not list it.
    VeryHidden,
}

impl SheetState {
    fn is_visible(&self) -> bool {
        *self == SheetState::Visible
    }
}

impl Workbook {
    /// The workbook as a person opening it sees it: hidden sheets left out
    /// unless `hidden` keeps them, and, unless `stored` asks for the stored
    /// values, each cell whose number format shows text in place of its
    /// number holding that text.
    pub fn as_seen(
        &self,
        hidden: KeepHidden,
        values: ShownValues,
    ) -> std::borrow::Cow<'_, Workbook> {
        let hides = hidden == KeepHidden::No && self.sheets.iter().any(|s| !s.state.is_visible());
        let overrides =
            values == ShownValues::Shown && self.sheets.iter().any(|s| !s.shown.is_empty());
        if !hides && !overrides {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut seen = self.clone();
        if hides {
            seen.sheets.retain(|s| s.state.is_visible());
        }
        if overrides {
            for sheet in &mut seen.sheets {
                for (at, text) in std::mem::take(&mut sheet.shown) {
                    sheet.cells.insert(at, Cell::Text(text));
                }
            }
        }
        std::borrow::Cow::Owned(seen)
    }
}

/// Whether [`Workbook::as_seen`] keeps hidden sheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepHidden {
    /// Keep them.
    Yes,
    /// Leave them out.
    No,
}

/// Which values [`Workbook::as_seen`] gives cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownValues {
    /// What the number format shows.
    Shown,
    /// The values stored.
    Stored,
}

fn shown_by_address<S: serde::Serializer>(shown: &ShownText, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(shown.len()))?;
    for ((r, c), text) in shown {
        map.serialize_entry(&address(*r, *c), text)?;
    }
    map.end()
}

fn shown_from_addresses<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ShownText, D::Error> {
    let by_address: BTreeMap<String, Arc<str>> = Deserialize::deserialize(d)?;
    by_address
        .into_iter()
        .map(|(k, v)| {
            a1(&k)
                .map(|at| (at, v))
                .ok_or_else(|| serde::de::Error::custom(format!("not a cell address: {k}")))
        })
        .collect()
}

/// One cell's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Cell {
    /// Text (a shared string is held once, whatever number of cells show it).
    Text(Arc<str>),
    /// A number shown as a number.
    Number(f64),
    /// A number formatted as a date (ISO 8601; with a time when it has one).
    Date(String),
    /// A number formatted as an elapsed time (`[h]:mm`), in hours.
    Duration(f64),
    /// TRUE or FALSE.
    Bool(bool),
    /// An error value (`#REF!`).
    Error(String),
}

impl Cell {
    /// The value as text: what comparisons and the judges' view read.
    pub fn text(&self) -> String {
        match self {
            Cell::Text(t) => t.to_string(),
            Cell::Date(t) | Cell::Error(t) => t.clone(),
            Cell::Number(n) => format_number(*n),
            Cell::Duration(h) => {
                let minutes = (h * 60.0).round() as i64;
                format!("{}:{:02}", minutes / 60, minutes % 60)
            }
            Cell::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        }
    }
}

/// A number without a spurious ".0" or float noise.
fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        let s = format!("{:.10}", n);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Sheets a workbook may have: Excel's term sheets and checklists have a
/// handful; thousands are a file made to cost.
pub const MAX_SHEETS: usize = 1_000;

/// Cells (with a value) a workbook may have, all sheets together.
pub const MAX_CELLS: u64 = 4_000_000;

/// Bytes of cell text a workbook may show, all cells together: a shared
/// string counts once per cell that shows it (what a view of it holds).
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Why a file could not be read as an .xlsx.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XlsxError {
    /// The file, its zip package or one of its XML parts could not be read:
    /// the limits and refusals of the .docx reader, said of a workbook.
    #[error("{}", package_message(.0))]
    Package(#[from] DocxError),
    /// The package is not a workbook.
    #[error("not a readable .xlsx: the package has no {0} part (is it an Excel workbook?)")]
    NoWorkbook(String),
    /// More sheets than [`MAX_SHEETS`].
    #[error("not a readable .xlsx: it lists {count} sheets, above the limit of {limit}")]
    #[allow(missing_docs)]
    TooManySheets { count: usize, limit: usize },
    /// More cells, or more cell text, than a workbook may expand to.
    #[error(
        "not a readable .xlsx: its cells expand to more than {limit} {what} (a string repeated in many cells, or a sheet of millions of cells)"
    )]
    #[allow(missing_docs)]
    TooLarge { what: &'static str, limit: u64 },
    /// The reader's child process gave no workbook (a bound met, a crash).
    #[error("{0}")]
    Isolated(crate::isolated::Failure),
}

/// A package-level refusal, in a workbook's words.
fn package_message(e: &DocxError) -> String {
    match e {
        DocxError::NotDocx(why) => format!("not an .xlsx: {why}"),
        DocxError::LegacyDoc => "not an .xlsx: this is a legacy Office 97-2003 (OLE) file; open it in Excel and save it as .xlsx".into(),
        DocxError::Encrypted => "not a readable .xlsx: the workbook is password-protected (encrypted); remove the password in Excel and save again".into(),
        DocxError::Zip(m) => format!("not a readable .xlsx: the zip archive is damaged or truncated ({m})"),
        DocxError::TooLarge { what, limit } => format!(
            "not a readable .xlsx: {what} is larger than the {limit}-byte limit (a zip bomb or not a workbook)"
        ),
        DocxError::CompressionRatio { part, ratio, limit } => format!(
            "not a readable .xlsx: part {part} inflates {ratio}:1, above the {limit}:1 limit (a zip bomb)"
        ),
        DocxError::TooManyEntries { count, limit } => format!(
            "not a readable .xlsx: the archive lists {count} entries, above the limit of {limit}"
        ),
        DocxError::MissingPart(part) => {
            format!("not a readable .xlsx: the package has no {part} part (is it an Excel workbook?)")
        }
        DocxError::DuplicatePart { part, how } => format!(
            "not a readable .xlsx: the package holds {part} twice{how}; readers would disagree on which copy counts"
        ),
        DocxError::NotAFile { path, kind } => {
            format!("cannot read {path}: it is {kind}, not a regular file; give the path of an .xlsx file")
        }
        other => other.to_string(),
    }
}

/// "B3" → (row 3, column 2).
pub fn a1(address: &str) -> Option<(u32, u32)> {
    let s = address.trim().trim_start_matches('$');
    let (letters, digits) =
        s.split_at(s.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(s.len()));
    let digits = digits.trim_start_matches('$');
    if letters.is_empty() || letters.len() > 3 || digits.is_empty() {
        return None;
    }
    let mut col = 0u32;
    for c in letters.chars() {
        col = col * 26 + (c.to_ascii_uppercase() as u32 - 'A' as u32 + 1);
    }
    let row: u32 = digits.parse().ok()?;
    (row > 0 && col <= MAX_COLUMN).then_some((row, col))
}

/// "A2:C40" → ((row, col), (row, col)), top-left first.
pub fn range(s: &str) -> Option<((u32, u32), (u32, u32))> {
    let (a, b) = s.split_once(':')?;
    let (a, b) = (a1(a)?, a1(b)?);
    (a.0 <= b.0 && a.1 <= b.1).then_some((a, b))
}

impl Sheet {
    /// The value Excel shows at (row, column): the cell's own, or, inside a
    /// merged range, the range's top-left cell's (where a merged range
    /// keeps its value).
    pub fn value_at(&self, row: u32, col: u32) -> Option<&Cell> {
        self.cells.get(&(row, col)).or_else(|| {
            let ((r0, c0), _) =
                self.merged.iter().filter_map(|m| range(m)).find(|((r0, c0), (r1, c1))| {
                    (*r0..=*r1).contains(&row) && (*c0..=*c1).contains(&col)
                })?;
            self.cells.get(&(r0, c0))
        })
    }
}

/// The last column Excel has (XFD).
const MAX_COLUMN: u32 = 16_384;

/// The last row Excel has.
const MAX_ROW: u32 = 1_048_576;

/// (row 3, column 2) → "B3".
pub fn address(row: u32, col: u32) -> String {
    format!("{}{row}", column_letters(col))
}

/// 1 → "A", 27 → "AA".
pub fn column_letters(mut col: u32) -> String {
    let mut letters = Vec::new();
    while col > 0 {
        let rem = (col - 1) % 26;
        letters.push(char::from(b'A' + rem as u8));
        col = (col - 1) / 26;
    }
    letters.iter().rev().collect()
}

fn cells_by_address<S: serde::Serializer>(
    cells: &BTreeMap<(u32, u32), Cell>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(cells.len()))?;
    for ((r, c), cell) in cells {
        map.serialize_entry(&address(*r, *c), cell)?;
    }
    map.end()
}

/// The cells back from their addresses (the reader's own answer, from its
/// child process): a text shown in many cells is held once again, as the
/// reader held it.
fn cells_from_addresses<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<(u32, u32), Cell>, D::Error> {
    let by_address: Vec<(String, Cell)> = serde::Deserialize::deserialize(deserializer)
        .map(|m: BTreeMap<String, Cell>| m.into_iter().collect())?;
    let mut texts: std::collections::HashSet<Arc<str>> = std::collections::HashSet::new();
    let mut cells = BTreeMap::new();
    for (at, mut cell) in by_address {
        let Some(key) = a1(&at) else {
            return Err(serde::de::Error::custom(format!("not a cell address: {at}")));
        };
        if let Cell::Text(t) = &mut cell {
            match texts.get(t) {
                Some(held) => *t = held.clone(),
                None => {
                    texts.insert(t.clone());
                }
            }
        }
        cells.insert(key, cell);
    }
    Ok(cells)
}

/// Reads an .xlsx file, refusing what is not a regular file or too large.
pub fn load(path: &Path) -> Result<Workbook, XlsxError> {
    let bytes = crate::docx::read_file(path, &Limits::default())?;
    from_bytes(bytes, Limits::default())
}

/// Whether bytes are a spreadsheet package (a zip with a workbook part)
/// rather than a word-processing one. Reads the zip's directory in place:
/// the file is not copied, and no part is inflated.
pub fn is_xlsx(bytes: &[u8]) -> bool {
    if !bytes.starts_with(b"PK") {
        return false;
    }
    let Ok(archive) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) else { return false };
    let has = |part: &str| {
        archive.file_names().flatten().any(|n| n.trim_start_matches('/').eq_ignore_ascii_case(part))
    };
    has("xl/workbook.xml") && !has("word/document.xml")
}

/// Reads an .xlsx held in memory.
pub fn from_bytes(bytes: Vec<u8>, limits: Limits) -> Result<Workbook, XlsxError> {
    let mut pkg = Package::open(bytes, limits)?;
    let main = pkg.main_part("xl/workbook.xml")?;
    let Some(workbook_xml) = pkg.read_part(&main)? else {
        return Err(XlsxError::NoWorkbook(main));
    };
    // Read once: every sheet's part is found through them.
    let rels = pkg.relationships(&main)?;
    let (sheets, date1904) = sheet_list(&main, &workbook_xml)?;
    if sheets.len() > MAX_SHEETS {
        return Err(XlsxError::TooManySheets { count: sheets.len(), limit: MAX_SHEETS });
    }
    let target = |kind: &str| rels.iter().find(|r| r.kind == kind).and_then(|r| r.target.clone());
    let strings = match target("sharedStrings").map(|p| (pkg.read_part(&p), p)) {
        Some((xml, part)) => match xml? {
            Some(xml) => shared_strings(&part, &xml)?,
            None => Vec::new(),
        },
        None => Vec::new(),
    };
    let styles = match target("styles").map(|p| (pkg.read_part(&p), p)) {
        Some((xml, part)) => match xml? {
            Some(xml) => Styles::parse(&part, &xml)?,
            None => Styles::default(),
        },
        None => Styles::default(),
    };
    let mut book = Workbook::default();
    let mut budget = Budget { cells: MAX_CELLS, text: MAX_TEXT_BYTES };
    for (name, rid, state) in sheets {
        // The sheet's part through the workbook's relationship of that id.
        let part = rels.iter().find(|r| r.id == rid).and_then(|r| r.target.clone());
        let Some(part) = part else { continue };
        let Some(xml) = pkg.read_part(&part)? else { continue };
        let context = SheetContext { strings: &strings, styles: &styles, date1904 };
        let mut sheet = read_sheet(&part, &xml, &context, &mut budget)?;
        sheet.name = name;
        sheet.state = state;
        book.sheets.push(sheet);
    }
    Ok(book)
}

/// What is left of a workbook's cells and cell text.
struct Budget {
    cells: u64,
    text: u64,
}

impl Budget {
    fn take(&mut self, cell: &Cell) -> Result<(), XlsxError> {
        let bytes = match cell {
            Cell::Text(t) => t.len(),
            Cell::Date(t) | Cell::Error(t) => t.len(),
            _ => 8,
        } as u64;
        self.cells = self
            .cells
            .checked_sub(1)
            .ok_or(XlsxError::TooLarge { what: "cells", limit: MAX_CELLS })?;
        self.text = self
            .text
            .checked_sub(bytes)
            .ok_or(XlsxError::TooLarge { what: "bytes of text", limit: MAX_TEXT_BYTES })?;
        Ok(())
    }
}

/// `(name, r:id, state)` of each sheet, and whether dates count from 1904.
#[allow(clippy::type_complexity)]
fn sheet_list(
    part: &str,
    xml: &str,
) -> Result<(Vec<(String, String, SheetState)>, bool), XlsxError> {
    let mut reader = PartReader::new(part, xml);
    let mut sheets = Vec::new();
    let mut date1904 = false;
    loop {
        match reader.next()? {
            Ev::Start(_, e) | Ev::Empty(_, e) => match local(&e) {
                "sheet" => {
                    let name = attr(&e, "name").unwrap_or_default();
                    let rid = attr(&e, "id").unwrap_or_default();
                    let state = match attr(&e, "state").as_deref().map(str::trim) {
                        Some("hidden") => SheetState::Hidden,
                        Some("veryHidden") => SheetState::VeryHidden,
                        _ => SheetState::Visible,
                    };
                    sheets.push((name, rid, state));
                }
                "workbookPr" => {
                    date1904 = attr(&e, "date1904").is_some_and(|v| v == "1" || v == "true");
                }
                _ => {}
            },
            Ev::Eof => return Ok((sheets, date1904)),
            _ => {}
        }
    }
}

/// The shared string table: each `si`'s text (plain or rich runs; the
/// phonetic guides of `rPh` left out).
fn shared_strings(part: &str, xml: &str) -> Result<Vec<Arc<str>>, XlsxError> {
    let mut reader = PartReader::new(part, xml);
    let mut out: Vec<Arc<str>> = Vec::new();
    let mut current: Option<String> = None;
    loop {
        match reader.next()? {
            Ev::Start(_, e) => match local(&e) {
                "si" => current = Some(String::new()),
                "rPh" => reader.skip_subtree()?,
                "t" => {
                    let t = reader.text_content()?;
                    if let Some(c) = current.as_mut() {
                        c.push_str(&t);
                    }
                }
                _ => {}
            },
            // An `si` ends when the depth returns to the table's level.
            Ev::End if reader.depth() == 1 => {
                if let Some(c) = current.take() {
                    out.push(c.into());
                }
            }
            Ev::Empty(_, e) if local(&e) == "si" => out.push("".into()),
            Ev::Eof => return Ok(out),
            _ => {}
        }
    }
}

/// What the style sheet says of each cell style: date, duration or plain.
#[derive(Default)]
struct Styles {
    /// Per `cellXfs` index: the kind of number format.
    kinds: Vec<NumberKind>,
    /// Per `cellXfs` index: its custom format code, if any.
    codes: Vec<Option<String>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum NumberKind {
    Plain,
    Date,
    Duration,
}

impl Styles {
    fn parse(part: &str, xml: &str) -> Result<Styles, XlsxError> {
        let mut reader = PartReader::new(part, xml);
        let mut custom: BTreeMap<u32, String> = BTreeMap::new();
        let mut kinds = Vec::new();
        let mut codes = Vec::new();
        let mut in_xfs = false;
        loop {
            match reader.next()? {
                Ev::Start(_, e) | Ev::Empty(_, e) => match local(&e) {
                    "numFmt" => {
                        if let (Some(id), Some(code)) =
                            (attr(&e, "numFmtId"), attr(&e, "formatCode"))
                            && let Ok(id) = id.parse()
                        {
                            custom.insert(id, code);
                        }
                    }
                    "cellXfs" => in_xfs = true,
                    "xf" if in_xfs => {
                        let id: u32 =
                            attr(&e, "numFmtId").and_then(|v| v.parse().ok()).unwrap_or(0);
                        kinds.push(number_kind(id, custom.get(&id).map(String::as_str)));
                        codes.push(custom.get(&id).cloned());
                    }
                    _ => {}
                },
                Ev::End if in_xfs && reader.depth() == 1 => in_xfs = false,
                Ev::Eof => return Ok(Styles { kinds, codes }),
                _ => {}
            }
        }
    }

    fn kind(&self, style: Option<usize>) -> NumberKind {
        style.and_then(|s| self.kinds.get(s).copied()).unwrap_or(NumberKind::Plain)
    }

    /// What Excel shows for `n` in a cell of this style, when its format
    /// shows text in place of the number.
    fn shown(&self, style: Option<usize>, n: f64) -> Option<String> {
        let code = style.and_then(|s| self.codes.get(s)).and_then(Option::as_deref)?;
        literal_shown(code, n)
    }
}

/// The text a custom number format shows for `n` when the section that
/// applies (positive; negative; zero) holds no digit placeholder: its
/// literal text (`"120,000"` shows 120,000 whatever the cell holds; an
/// empty section, as in `;;;`, shows nothing). `None` when the section
/// shows the number, is a date or time, or has conditions.
fn literal_shown(code: &str, n: f64) -> Option<String> {
    let mut sections: Vec<String> = vec![String::new()];
    let (mut quoted, mut escaped) = (false, false);
    for c in code.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !quoted {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == ';' && !quoted {
            sections.push(String::new());
            continue;
        }
        if let Some(last) = sections.last_mut() {
            last.push(c);
        }
    }
    let pick = |i: usize| sections.get(i).or(sections.first());
    let section = if n > 0.0 {
        pick(0)
    } else if n < 0.0 {
        pick(1)
    } else {
        pick(2)
    }?;
    let mut shown = String::new();
    let (mut quoted, mut chars) = (false, section.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            _ if quoted => shown.push(c),
            '\\' => shown.extend(chars.next()),
            // A space the width of the next character; a fill character.
            '_' => {
                chars.next();
                shown.push(' ');
            }
            '*' => {
                chars.next();
            }
            '[' => {
                let inner: String = chars.by_ref().take_while(|&c| c != ']').collect();
                // A condition chooses sections by value: not handled here.
                if inner.starts_with(['<', '>', '=']) {
                    return None;
                }
            }
            '0' | '#' | '?' | '@' => return None,
            c if "yYmMdDhHsSeEgGbB".contains(c) => return None,
            c => shown.push(c),
        }
    }
    // An accounting format writes zero as a dash: the number, as a reader
    // reads it.
    if n == 0.0 && matches!(shown.trim(), "-" | "\u{2013}" | "\u{2014}") {
        return None;
    }
    Some(shown)
}

/// A built-in or custom number format's kind.
fn number_kind(id: u32, code: Option<&str>) -> NumberKind {
    match (id, code) {
        (14..=17 | 22 | 27..=36 | 50..=58, None) => NumberKind::Date,
        (18..=21 | 45 | 47, None) => NumberKind::Duration,
        (46, None) => NumberKind::Duration,
        (_, Some(code)) => {
            // Quoted text and bracketed colours/conditions are not tokens.
            let mut bare = String::new();
            let mut quoted = false;
            let mut bracket = String::new();
            let mut in_bracket = false;
            for c in code.chars() {
                match c {
                    '"' => quoted = !quoted,
                    '[' if !quoted => {
                        in_bracket = true;
                        bracket.clear();
                    }
                    ']' if in_bracket => {
                        in_bracket = false;
                        let b = bracket.to_ascii_lowercase();
                        if matches!(b.as_str(), "h" | "hh" | "m" | "mm" | "s" | "ss") {
                            return NumberKind::Duration;
                        }
                    }
                    _ if in_bracket => bracket.push(c),
                    _ if !quoted => bare.push(c.to_ascii_lowercase()),
                    _ => {}
                }
            }
            if bare.contains('y') || bare.contains('d') {
                NumberKind::Date
            } else if bare.contains('h') || bare.contains("ss") {
                NumberKind::Duration
            } else {
                NumberKind::Plain
            }
        }
        _ => NumberKind::Plain,
    }
}

struct SheetContext<'a> {
    strings: &'a [Arc<str>],
    styles: &'a Styles,
    date1904: bool,
}

/// Where the next cell goes: a row or cell without its `r` attribute
/// (allowed by the schema) follows the one before it.
#[derive(Default)]
struct Cursor {
    row: u32,
    col: u32,
}

impl Cursor {
    fn row(&mut self, r: Option<u32>) {
        self.row = r.unwrap_or(self.row.saturating_add(1));
        self.col = 0;
    }

    fn cell(&mut self, r: Option<(u32, u32)>) -> Option<(u32, u32)> {
        let at = r.unwrap_or((self.row.max(1), self.col.saturating_add(1)));
        (self.row, self.col) = at;
        (at.0 <= MAX_ROW && (1..=MAX_COLUMN).contains(&at.1)).then_some(at)
    }
}

/// One worksheet part.
fn read_sheet(
    part: &str,
    xml: &str,
    cx: &SheetContext<'_>,
    budget: &mut Budget,
) -> Result<Sheet, XlsxError> {
    let mut reader = PartReader::new(part, xml);
    let mut sheet = Sheet::default();
    let mut cursor = Cursor::default();
    loop {
        match reader.next()? {
            Ev::Start(_, e) if local(&e) == "c" => {
                let at = cursor.cell(attr(&e, "r").and_then(|r| a1(&r)));
                let kind = attr(&e, "t").unwrap_or_default();
                let style = attr(&e, "s").and_then(|s| s.parse().ok());
                let (value, inline) = cell_content(&mut reader)?;
                let cell = typed(&kind, value, inline, cx, cx.styles.kind(style));
                if let (Some(at), Some(cell)) = (at, cell) {
                    budget.take(&cell)?;
                    if let Cell::Number(n) = cell
                        && let Some(text) = cx.styles.shown(style, n)
                    {
                        budget.take(&Cell::Text(text.as_str().into()))?;
                        sheet.shown.insert(at, text.into());
                    }
                    sheet.cells.insert(at, cell);
                }
            }
            Ev::Empty(_, e) if local(&e) == "c" => {
                cursor.cell(attr(&e, "r").and_then(|r| a1(&r)));
            }
            Ev::Start(_, e) | Ev::Empty(_, e) => match local(&e) {
                "row" => cursor.row(attr(&e, "r").and_then(|r| r.trim().parse().ok())),
                "mergeCell" => sheet.merged.extend(attr(&e, "ref")),
                "dataValidation" => sheet.validations += 1,
                _ => {}
            },
            Ev::Eof => return Ok(sheet),
            _ => {}
        }
    }
}

/// A cell's `v` text and its inline string (`is`), read to the cell's end.
fn cell_content(
    reader: &mut PartReader<'_>,
) -> Result<(Option<String>, Option<String>), XlsxError> {
    let end = reader.depth().saturating_sub(1);
    let (mut value, mut inline) = (None, None::<String>);
    loop {
        match reader.next()? {
            Ev::Start(_, e) => match local(&e) {
                "v" => value = Some(reader.text_content()?),
                "t" => {
                    let t = reader.text_content()?;
                    inline.get_or_insert_with(String::new).push_str(&t);
                }
                "f" | "rPh" => reader.skip_subtree()?,
                _ => {}
            },
            Ev::End if reader.depth() <= end => return Ok((value, inline)),
            Ev::Eof => return Ok((value, inline)),
            _ => {}
        }
    }
}

fn typed(
    kind: &str,
    value: Option<String>,
    inline: Option<String>,
    cx: &SheetContext<'_>,
    number: NumberKind,
) -> Option<Cell> {
    match kind {
        "s" => {
            let i: usize = value?.trim().parse().ok()?;
            cx.strings.get(i).cloned().map(Cell::Text)
        }
        "inlineStr" => inline.map(|t| Cell::Text(t.into())),
        "str" => value.map(|t| Cell::Text(t.into())),
        "b" => Some(Cell::Bool(value?.trim() == "1")),
        "e" => value.map(Cell::Error),
        // An ISO 8601 date cell (t="d"), as Excel may write.
        "d" => value.map(|v| Cell::Date(v.trim().to_string())),
        _ => {
            let raw = value?;
            let n: f64 = raw.trim().parse().ok()?;
            if !n.is_finite() {
                // Excel never writes one; it shows #NUM! for what has none.
                return Some(Cell::Error("#NUM!".into()));
            }
            Some(match number {
                NumberKind::Date => match serial_date(n, cx.date1904) {
                    Some(date) => Cell::Date(date),
                    // Out of Excel's calendar: Excel shows #### and keeps the number.
                    None => Cell::Number(n),
                },
                NumberKind::Duration => Cell::Duration(n * 24.0),
                NumberKind::Plain => Cell::Number(n),
            })
        }
    }
}

/// The last serial day Excel has: 9999-12-31 (1900 system).
const LAST_SERIAL: f64 = 2_958_465.0;

/// A serial day number as an ISO date (and time, when it has one): 1900
/// system with Excel's phantom 1900-02-29, or the 1904 system. `None`
/// outside Excel's calendar (before its day 0, after 9999-12-31, or not a
/// number).
pub fn serial_date(serial: f64, date1904: bool) -> Option<String> {
    let last = if date1904 { LAST_SERIAL - 1_462.0 } else { LAST_SERIAL };
    if !(0.0..last + 1.0).contains(&serial) {
        return None;
    }
    let mut days = serial.floor() as i64;
    let mut seconds = ((serial - serial.floor()) * 86_400.0).round() as i64;
    if seconds == 86_400 {
        // A fraction that rounds up to midnight is the next day at 00:00.
        days += 1;
        seconds = 0;
    }
    // Days since 1970-01-01 of serial 0.
    let (epoch, bug) = if date1904 { (-24_107, false) } else { (-25_569, true) };
    let mut d = epoch + days;
    if bug && days < 60 {
        d += 1; // before the phantom 29 February 1900
    }
    let (y, m, day) = crate::calendar::civil_from_days(d);
    Some(if seconds == 0 {
        format!("{y:04}-{m:02}-{day:02}")
    } else {
        format!(
            "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}",
            seconds / 3600,
            seconds % 3600 / 60,
            seconds % 60
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_dates() {
        assert_eq!(a1("B3"), Some((3, 2)));
        assert_eq!(a1("$AA$10"), Some((10, 27)));
        assert_eq!(a1("3B"), None);
        for (r, c) in [(1, 1), (3, 26), (10, 27), (7, 702), (1, 16_384)] {
            assert_eq!(a1(&address(r, c)), Some((r, c)));
        }
        assert_eq!(column_letters(16_384), "XFD");
        assert_eq!(serial_date(45_658.0, false).as_deref(), Some("2025-01-01"));
        assert_eq!(serial_date(1.0, false).as_deref(), Some("1900-01-01"));
        assert_eq!(serial_date(61.0, false).as_deref(), Some("1900-03-01"));
        assert_eq!(serial_date(45_658.5, false).as_deref(), Some("2025-01-01T12:00:00"));
        assert_eq!(serial_date(0.0, true).as_deref(), Some("1904-01-01"));
        assert_eq!(serial_date(LAST_SERIAL, false).as_deref(), Some("9999-12-31"));
        assert_eq!(Cell::Duration(36.5).text(), "36:30");
        assert_eq!(Cell::Number(120000.0).text(), "120000");
        assert_eq!(Cell::Number(0.1 + 0.2).text(), "0.3");
    }

    /// Huge or non-finite serials printed nonsense
    /// (`-25252734927764655-06-03`), and a fraction just under a day
    /// printed `…T24:00:00`.
    #[test]
    fn dates_out_of_excels_calendar_are_not_dates() {
        assert_eq!(serial_date(1e300, false), None);
        assert_eq!(serial_date(-1.0, false), None);
        assert_eq!(serial_date(f64::NAN, false), None);
        assert_eq!(serial_date(LAST_SERIAL + 1.0, false), None);
        assert_eq!(serial_date(45_658.999_999_9, false).as_deref(), Some("2025-01-02"));
    }

    #[test]
    fn number_formats() {
        assert!(matches!(number_kind(14, None), NumberKind::Date));
        assert!(matches!(number_kind(46, None), NumberKind::Duration));
        assert!(matches!(number_kind(164, Some("dd/mm/yyyy")), NumberKind::Date));
        assert!(matches!(number_kind(165, Some("[h]:mm")), NumberKind::Duration));
        assert!(matches!(number_kind(166, Some("\"days: \"0")), NumberKind::Plain));
        assert!(matches!(number_kind(167, Some("[Red]#,##0")), NumberKind::Plain));
        assert!(matches!(number_kind(3, None), NumberKind::Plain));
    }
}
