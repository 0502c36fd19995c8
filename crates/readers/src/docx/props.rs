//! Property containers read whole (`w:tblPr`, `w:tblGrid`, `w:tblPrEx`,
//! `w:trPr`, `w:tcPr`, `w:sectPr`) and the tracked changes inside them
//! (`w:tblPrChange`, `w:tblGridChange`, `w:tblPrExChange`,
//! `w:trPrChange`, `w:tcPrChange`, `w:sectPrChange`): what changed, in a
//! reader's words.
//!
//! Owns: reading a small element tree and diffing two property lists. Must
//! never allocate beyond the part's own size (the tree is the XML it read).

use quick_xml::events::BytesStart;

use super::DocxError;
use super::xml::{Ev, PartReader, Tag, local};

/// An element with its attributes and children.
#[derive(Debug, Clone, Default)]
pub(crate) struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
}

impl Element {
    /// The value of the attribute with this local name.
    pub fn attr(&self, local: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == local).map(|(_, v)| v.as_str())
    }

    /// The first child with this local name.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// What identifies this element's value: its attributes and children.
    fn signature(&self) -> String {
        let mut attrs: Vec<String> = self
            .attrs
            .iter()
            .filter(|(k, _)| !k.starts_with("rsid"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        attrs.sort();
        let children: Vec<String> =
            self.children.iter().map(|c| format!("{}({})", c.name, c.signature())).collect();
        format!("{}|{}", attrs.join(","), children.join(","))
    }
}

fn attributes(e: &BytesStart<'_>) -> Vec<(String, String)> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .filter_map(|a| {
            let key = a.key.local_name().into_inner().to_string();
            let value = a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok()?.into_owned();
            Some((key, value))
        })
        .collect()
}

/// Reads the element whose `Start` (or `Empty`) the reader just returned,
/// with its whole subtree.
pub(crate) fn read(
    reader: &mut PartReader<'_>,
    e: &BytesStart<'_>,
    tag: Tag,
) -> Result<Element, DocxError> {
    let mut root =
        Element { name: local(e).to_string(), attrs: attributes(e), children: Vec::new() };
    if tag == Tag::SelfClosing {
        return Ok(root);
    }
    // Open elements below the root, innermost last.
    let mut open: Vec<Element> = Vec::new();
    loop {
        match reader.next()? {
            Ev::Start(_, c) => open.push(Element {
                name: local(&c).to_string(),
                attrs: attributes(&c),
                children: Vec::new(),
            }),
            Ev::Empty(_, c) => {
                let el = Element {
                    name: local(&c).to_string(),
                    attrs: attributes(&c),
                    children: Vec::new(),
                };
                open.last_mut().unwrap_or(&mut root).children.push(el);
            }
            Ev::End => match open.pop() {
                Some(done) => open.last_mut().unwrap_or(&mut root).children.push(done),
                None => return Ok(root),
            },
            Ev::Text(_) => {}
            Ev::Eof => return Ok(root),
        }
    }
}

/// The properties that differ between two lists of property elements, in
/// a reader's words ("width", "borders"), each once.
pub(crate) fn changed(now: &[Element], old: &[Element]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut note = |name: &str| {
        let label = label(name);
        if !label.is_empty() && !out.iter().any(|o| o == label) {
            out.push(label.to_string());
        }
    };
    let same = |a: &Element, list: &[Element]| {
        list.iter().any(|b| b.name == a.name && b.signature() == a.signature())
    };
    for e in now {
        if !same(e, old) {
            note(&e.name);
        }
    }
    for e in old {
        if !same(e, now) {
            note(&e.name);
        }
    }
    out
}

/// A property element's name as a reader would say it.
fn label(name: &str) -> &str {
    match name {
        "tblW" | "tcW" | "wAfter" | "wBefore" => "width",
        "gridCol" => "column widths",
        "tblBorders" | "tcBorders" => "borders",
        "shd" => "shading",
        "tblStyle" => "table style",
        "tblLook" => "table look",
        "jc" => "alignment",
        "tblInd" => "indentation",
        "tblCellMar" | "tcMar" => "cell margins",
        "tblCellSpacing" => "cell spacing",
        "tblLayout" => "layout",
        "tblpPr" | "tblOverlap" => "positioning",
        "trHeight" => "row height",
        "cantSplit" => "row splitting",
        "tblHeader" => "header row",
        "gridBefore" | "gridAfter" => "grid offsets",
        "gridSpan" => "column span",
        "vMerge" | "hMerge" => "merging",
        "vAlign" => "vertical alignment",
        "textDirection" => "text direction",
        "noWrap" | "tcFitText" => "text fitting",
        "pgSz" => "page size",
        "pgMar" => "page margins",
        "cols" => "columns",
        "docGrid" => "document grid",
        "pgNumType" => "page numbering",
        "titlePg" => "title page",
        "type" => "section break type",
        "headerReference" | "footerReference" => "headers and footers",
        "lnNumType" => "line numbering",
        "pgBorders" => "page borders",
        "footnotePr" | "endnotePr" => "note numbering",
        // What a reader sees: named, so a change of it is never a no-op.
        "bidi" => "right-to-left",
        "rtlGutter" => "gutter side",
        // What no reader sees: a change of only these changes nothing.
        "formProt" | "paperSrc" | "printerSettings" => "",
        "cnfStyle"
        | "tblStyleRowBandSize"
        | "tblStyleColBandSize"
        | "tblCaption"
        | "tblDescription" => "",
        // The change markers themselves are not properties.
        "tblPrChange" | "tblGridChange" | "tblPrExChange" | "trPrChange" | "tcPrChange"
        | "sectPrChange" => "",
        "ins" | "del" | "cellIns" | "cellDel" | "cellMerge" => "",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(name: &str, attrs: &[(&str, &str)]) -> Element {
        Element {
            name: name.into(),
            attrs: attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            children: vec![],
        }
    }

    #[test]
    fn diffs_name_what_changed_once() {
        let now = [el("tcW", &[("w", "1525"), ("type", "dxa")]), el("shd", &[("fill", "FFFF00")])];
        let old = [el("tcW", &[("w", "3005"), ("type", "dxa")])];
        assert_eq!(changed(&now, &old), ["width", "shading"]);
        assert!(changed(&old, &old).is_empty());
        let rsid_only = [el("tcW", &[("w", "3005"), ("type", "dxa"), ("rsidR", "00AB")])];
        assert!(changed(&rsid_only, &old).is_empty(), "revision-save ids are not properties");
    }
}
