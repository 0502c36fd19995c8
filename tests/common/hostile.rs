//! Hostile outputs a policy can hand in, made by code: each class the
//! readers once aborted, exhausted memory or hung on, with what redjury
//! must say of it now. tests/isolation.rs sends each through `render`,
//! `gate`, `score` and `serve`; the fuzzer (tests/fuzz.rs) starts from
//! the same builders.

use super::pdfs::{deflate, pdf_of, stream};

/// One hostile file and the reason it must end in.
pub struct Hostile {
    /// The class, as a test names it.
    pub class: &'static str,
    /// The file's extension (what a task expects).
    pub ext: &'static str,
    /// The file.
    pub bytes: Vec<u8>,
    /// A phrase the reason must contain.
    pub reason: &'static str,
}

const TEXT: &str = "BT /F1 12 Tf 72 720 Td (Hello) Tj ET";

/// A one-page PDF showing [`TEXT`] in font `font` (a dictionary, inline),
/// with `extra` objects numbered from 5.
pub fn with_font(font: &str, extra: &[Vec<u8>]) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} >> >> /Contents 4 0 R >>").into_bytes(),
        stream("", TEXT.as_bytes()),
    ];
    objects.extend(extra.iter().cloned());
    pdf_of(&objects, "")
}

const DESCRIPTOR: &str = "/Type /FontDescriptor /FontName /X /Flags 32 /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 80";

/// A CMap whose body nests `depth` brackets.
pub fn nested_cmap(depth: usize) -> Vec<u8> {
    let mut cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n".to_vec();
    cmap.extend(std::iter::repeat_n(b'[', depth));
    cmap.extend_from_slice(b"\nendcmap end end\n");
    cmap
}

/// A Type 1 program through an inline FontDescriptor, its clear text
/// nested `depth` braces deep.
pub fn type1_through_inline_descriptor(depth: usize) -> Vec<u8> {
    let mut program = b"%!PS-AdobeFont-1.0: X\n/Encoding 256 array\n".to_vec();
    program.extend(std::iter::repeat_n(b'{', depth));
    program.extend_from_slice(b"\ncurrentfile eexec\n");
    let widths = "500 ".repeat(95);
    with_font(
        &format!(
            "<< /Type /Font /Subtype /Type1 /BaseFont /X /FirstChar 32 /LastChar 126 /Widths [{widths}] /FontDescriptor << {DESCRIPTOR} /FontFile 5 0 R >> >>"
        ),
        &[stream(&format!("/Length1 {} /Length2 0 /Length3 0", program.len()), &program)],
    )
}

/// A Type 0 font whose `/Encoding` is a CMap stream nested `depth` deep.
pub fn type0_encoding_cmap(depth: usize) -> Vec<u8> {
    with_font(
        &format!(
            "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding 5 0 R /DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /X /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor << {DESCRIPTOR} >> >>] >>"
        ),
        &[stream("", &nested_cmap(depth))],
    )
}

/// An inline font dictionary whose ToUnicode CMap nests `depth` deep.
pub fn inline_tounicode(depth: usize) -> Vec<u8> {
    with_font(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 5 0 R >>",
        &[stream("", &nested_cmap(depth))],
    )
}

/// A page drawing `glyphs` five-letter strings, each at a place of its
/// own: about a byte of compressed file per glyph.
pub fn glyph_flood(strings: usize) -> Vec<u8> {
    let mut content = String::from("BT /F1 1 Tf\n");
    for i in 0..strings {
        content.push_str(&format!("1 0 0 1 {} {} Tm (abcde) Tj\n", i % 600, (i / 600) % 790));
    }
    content.push_str("ET");
    let data = deflate(content.as_bytes());
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>".to_vec(),
        stream("/Filter /FlateDecode", &data),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    pdf_of(&objects, "")
}

/// Every class, as the readers meet it today.
pub fn classes() -> Vec<Hostile> {
    vec![
        Hostile {
            class: "type1_program_through_an_inline_descriptor",
            ext: "pdf",
            bytes: type1_through_inline_descriptor(200_000),
            reason: "crashed on this file (stack overflow)",
        },
        Hostile {
            class: "type0_encoding_cmap_nested",
            ext: "pdf",
            bytes: type0_encoding_cmap(200_000),
            reason: "crashed on this file (stack overflow)",
        },
        Hostile {
            class: "tounicode_of_an_inline_font_nested",
            ext: "pdf",
            bytes: inline_tounicode(200_000),
            reason: "crashed on this file (stack overflow)",
        },
        Hostile {
            class: "glyphs_at_distinct_places",
            ext: "pdf",
            bytes: glyph_flood(400_000),
            reason: "needed more than 256 MB",
        },
    ]
}
