//! Thin layer over quick-xml's namespace-aware reader: classifies namespaces
//! (transitional and ISO Strict alike), turns text and entity events into
//! plain strings, and refuses DTDs.
//!
//! Owns: the mapping from namespace URIs to the few vocabularies the reader
//! cares about. Must never expand an entity other than the five predefined
//! ones and character references.

use std::borrow::Cow;

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

use super::DocxError;

/// The XML vocabularies the reader distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ns {
    /// WordprocessingML main (transitional or Strict).
    W,
    /// Markup compatibility (`mc:AlternateContent`).
    Mc,
    /// Word 2010 extensions (`w14:paraId`, `w14:checkbox`…).
    W14,
    /// Word 2012 extensions (commentsExtended, people).
    W15,
    /// Office Math.
    M,
    /// Package relationships (`_rels/*.rels`).
    PackageRels,
    /// Anything else (drawing, VML, custom XML…).
    Other,
}

fn classify(uri: &str) -> Ns {
    match uri {
        "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
        | "http://purl.oclc.org/ooxml/wordprocessingml/main" => Ns::W,
        "http://schemas.openxmlformats.org/markup-compatibility/2006" => Ns::Mc,
        "http://schemas.microsoft.com/office/word/2010/wordml" => Ns::W14,
        "http://schemas.microsoft.com/office/word/2012/wordml" => Ns::W15,
        "http://schemas.openxmlformats.org/officeDocument/2006/math"
        | "http://purl.oclc.org/ooxml/officeDocument/math" => Ns::M,
        "http://schemas.openxmlformats.org/package/2006/relationships" => Ns::PackageRels,
        _ => Ns::Other,
    }
}

/// Whether the reader implements a vocabulary an `mc:Choice` may require:
/// its own, and Word's and Office drawing's extensions, whose text the
/// reader reaches through `w:txbxContent`. Any other (a namespace no word
/// processor knows) sends Word, LibreOffice and this reader to the
/// `mc:Fallback`.
fn implemented(uri: &str) -> bool {
    classify(uri) != Ns::Other
        || uri.starts_with("http://schemas.microsoft.com/office/word/")
        || uri.starts_with("http://schemas.microsoft.com/office/drawing/")
        || uri.starts_with("http://schemas.openxmlformats.org/drawingml/")
        || matches!(
            uri,
            "urn:schemas-microsoft-com:vml" | "urn:schemas-microsoft-com:office:office"
        )
}

/// How an element was written: `<x>`, with content and an end tag to
/// come, or `<x/>`, complete in itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// `<x>`: its content and `</x>` follow.
    Open,
    /// `<x/>`: nothing follows.
    SelfClosing,
}

/// One event, reduced to what the reader needs.
pub(crate) enum Ev<'a> {
    Start(Ns, BytesStart<'a>),
    Empty(Ns, BytesStart<'a>),
    End,
    Text(Cow<'a, str>),
    Eof,
}

/// A streaming reader over one XML part held in memory.
pub(crate) struct PartReader<'a> {
    part: &'a str,
    inner: NsReader<&'a [u8]>,
    depth: usize,
}

/// Deeper nesting than this is not something Word writes; refusing it keeps
/// hostile input from growing the reader's stacks without bound.
const MAX_DEPTH: usize = 512;

impl<'a> PartReader<'a> {
    pub(crate) fn new(part: &'a str, xml: &'a str) -> Self {
        let mut inner = NsReader::from_reader(xml.as_bytes());
        let config = inner.config_mut();
        config.expand_empty_elements = false;
        config.check_end_names = true;
        config.trim_text(false);
        PartReader { part, inner, depth: 0 }
    }

    /// Whether every prefix of an `mc:Choice`'s `Requires` names a
    /// vocabulary the reader implements (an unbound prefix does not).
    pub(crate) fn implements(&self, requires: &str) -> bool {
        requires.split_whitespace().all(|prefix| {
            let name = format!("{prefix}:x");
            match self.inner.resolver().resolve_element(quick_xml::name::QName(&name)) {
                (ResolveResult::Bound(ns), _) => implemented(ns.0),
                _ => false,
            }
        })
    }

    /// Depth of the element most recently started (root = 1).
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    fn error(&self, message: impl Into<String>) -> DocxError {
        DocxError::Xml {
            part: self.part.to_string(),
            offset: self.inner.buffer_position(),
            message: message.into(),
        }
    }

    pub(crate) fn next(&mut self) -> Result<Ev<'a>, DocxError> {
        loop {
            let (ns, event) = match self.inner.read_resolved_event() {
                Ok((ResolveResult::Bound(ns), ev)) => (classify(ns.0), ev),
                Ok((_, ev)) => (Ns::Other, ev),
                Err(e) => return Err(self.error(e.to_string())),
            };
            return Ok(match event {
                Event::Start(e) => {
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(self.error(format!("elements nested deeper than {MAX_DEPTH}")));
                    }
                    Ev::Start(ns, e)
                }
                Event::Empty(e) => Ev::Empty(ns, e),
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    Ev::End
                }
                Event::Text(t) => Ev::Text(t.xml10_content()),
                Event::CData(t) => Ev::Text(t.xml10_content()),
                Event::GeneralRef(r) => {
                    if r.is_char_ref() {
                        match r.resolve_char_ref() {
                            Ok(Some(c)) => Ev::Text(Cow::Owned(c.to_string())),
                            _ => {
                                return Err(self.error(format!(
                                    "invalid character reference &{};",
                                    r.xml10_content()
                                )));
                            }
                        }
                    } else {
                        let name = r.xml10_content();
                        let text = match name.as_ref() {
                            "amp" => "&",
                            "lt" => "<",
                            "gt" => ">",
                            "quot" => "\"",
                            "apos" => "'",
                            other => {
                                return Err(DocxError::Entity {
                                    part: self.part.to_string(),
                                    name: other.to_string(),
                                });
                            }
                        };
                        Ev::Text(Cow::Borrowed(text))
                    }
                }
                Event::DocType(_) => return Err(DocxError::Dtd { part: self.part.to_string() }),
                Event::Eof => {
                    if self.depth != 0 {
                        return Err(self.error("unexpected end of part (unclosed elements)"));
                    }
                    Ev::Eof
                }
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) => continue,
            });
        }
    }

    /// Skips the subtree of an element whose `Start` was just returned.
    pub(crate) fn skip_subtree(&mut self) -> Result<(), DocxError> {
        let Some(target) = self.depth.checked_sub(1) else { return Ok(()) };
        while self.depth > target {
            if let Ev::Eof = self.next()? {
                return Err(self.error("unexpected end of part"));
            }
        }
        Ok(())
    }

    /// Collects the text content of an element whose `Start` was just returned.
    pub(crate) fn text_content(&mut self) -> Result<String, DocxError> {
        let Some(target) = self.depth.checked_sub(1) else { return Ok(String::new()) };
        let mut out = String::new();
        while self.depth > target {
            match self.next()? {
                Ev::Text(t) => out.push_str(&t),
                Ev::Eof => return Err(self.error("unexpected end of part")),
                _ => {}
            }
        }
        Ok(out)
    }
}

/// The value of the attribute with this local name, whatever its prefix.
///
/// WordprocessingML attributes are all `w:`-qualified; matching the local
/// name keeps the reader indifferent to Strict vs transitional and to odd
/// prefixes, and no two attributes this crate reads share a local name.
pub(crate) fn attr(e: &BytesStart<'_>, local: &str) -> Option<String> {
    for a in e.attributes().with_checks(false).flatten() {
        if a.key.local_name().into_inner() == local {
            return a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned());
        }
    }
    None
}

/// The local name of an element.
pub(crate) fn local<'e>(e: &'e BytesStart<'_>) -> &'e str {
    e.local_name().into_inner()
}

/// `w:val`-style on/off: absent value means on; "0", "false", "off" mean off.
pub(crate) fn on_off(e: &BytesStart<'_>) -> bool {
    !matches!(attr(e, "val").as_deref(), Some("0" | "false" | "off" | "none"))
}
