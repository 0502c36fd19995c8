//! Inline SVG plots: bars with interval whiskers, a heatmap, a scatter.
//! Each has a `<title>` and an `aria-label` (the text alternative), and
//! a table of the same numbers sits beside it in the page.
//!
//! Owns: geometry and escaping of labels. Must never emit a URL (no
//! `xmlns`: inline SVG in HTML needs none).

use std::fmt::Write;

use super::escape;

/// Width a label takes at the plots' 12 px font, generously: every label
/// must fit inside its plot (a cut category name reads as another).
fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * 7.2 + 6.0
}

/// The opening tag: drawn at its own size, never wider than the page (it
/// scales down, labels and all, on a phone).
fn open(title: &str, width: f64, height: f64) -> String {
    format!(
        r#"<svg class="plot" role="img" aria-label="{t}" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}" style="max-width:100%;height:auto"><title>{t}</title>"#,
        t = escape(title)
    )
}

/// A horizontal bar per item, 0..1 axis, with its interval when known.
/// Values show four places, as the tables beside them do.
pub(crate) fn bars(title: &str, items: &[(String, f64, Option<[f64; 2]>)]) -> String {
    let longest = items.iter().map(|(l, ..)| text_width(l)).fold(40.0, f64::max);
    let (label_w, plot_w, row_h) = (longest + 10.0, 360.0, 26.0);
    let height = 30.0 + row_h * items.len() as f64;
    let width = label_w + plot_w + 60.0;
    let mut out = open(title, width, height);
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = label_w + tick * plot_w;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x}" y1="18" x2="{x}" y2="{}"/><text class="tick" x="{x}" y="12" text-anchor="middle">{tick}</text>"#,
            height - 6.0
        );
    }
    for (i, (label, value, ci)) in items.iter().enumerate() {
        let y = 22.0 + row_h * i as f64;
        let w = value.clamp(0.0, 1.0) * plot_w;
        let _ = write!(
            out,
            r#"<text class="label" x="{}" y="{}" text-anchor="end">{}</text><rect class="bar" x="{label_w}" y="{y}" width="{w:.1}" height="{}"><title>{}: {value:.4}{}</title></rect>"#,
            label_w - 8.0,
            y + 14.0,
            escape(label),
            row_h - 8.0,
            escape(label),
            ci.map(|[a, b]| format!(" (95% CI {a:.4} to {b:.4})")).unwrap_or_default()
        );
        if let Some([lo, hi]) = ci {
            let (x1, x2) =
                (label_w + lo.clamp(0.0, 1.0) * plot_w, label_w + hi.clamp(0.0, 1.0) * plot_w);
            let ym = y + (row_h - 8.0) / 2.0;
            let _ = write!(
                out,
                r#"<line class="whisker" x1="{x1:.1}" y1="{ym}" x2="{x2:.1}" y2="{ym}"/><line class="whisker" x1="{x1:.1}" y1="{}" x2="{x1:.1}" y2="{}"/><line class="whisker" x1="{x2:.1}" y1="{}" x2="{x2:.1}" y2="{}"/>"#,
                ym - 5.0,
                ym + 5.0,
                ym - 5.0,
                ym + 5.0
            );
        }
        let _ = write!(
            out,
            r#"<text class="value" x="{}" y="{}">{value:.4}</text>"#,
            label_w + plot_w + 6.0,
            y + 14.0
        );
    }
    out.push_str("</svg>");
    out
}

/// A square heatmap of values in 0..1 (`None` cells blank): row labels on
/// the left, centred on their rows; column labels above, slanted up and
/// to the right from their columns, with room for the longest.
pub(crate) fn heatmap(title: &str, labels: &[String], cells: &[Vec<Option<f64>>]) -> String {
    let longest = labels.iter().map(|l| text_width(l)).fold(20.0, f64::max);
    let cell = 56.0;
    let n = labels.len() as f64;
    // A label slanted at 45° rises and runs its length × 0.71.
    let slant = longest * std::f64::consts::FRAC_1_SQRT_2;
    let (left, top) = (longest + 12.0, slant + 16.0);
    let (width, height) = (left + cell * n + slant + 8.0, top + cell * n + 8.0);
    let mut out = open(title, width, height);
    for (i, l) in labels.iter().enumerate() {
        let middle = cell * i as f64 + cell / 2.0;
        let (row_y, col_x) = (top + middle + 4.0, left + middle);
        let _ = write!(
            out,
            r#"<text class="label row-label" x="{:.1}" y="{row_y:.1}" text-anchor="end">{l}</text><text class="label col-label" x="{col_x:.1}" y="{:.1}" text-anchor="start" transform="rotate(-45 {col_x:.1} {:.1})">{l}</text>"#,
            left - 8.0,
            top - 6.0,
            top - 6.0,
            l = escape(l)
        );
    }
    for (i, row) in cells.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let (x, y) = (left + cell * j as f64, top + cell * i as f64);
            let Some(v) = v else { continue };
            // Lighter is lower agreement; the number is printed on the cell.
            let lightness = 95.0 - 55.0 * v.clamp(0.0, 1.0);
            let ink = if lightness < 62.0 { "#fff" } else { "#111" };
            let _ = write!(
                out,
                r#"<rect x="{x}" y="{y}" width="{}" height="{}" fill="hsl(210,60%,{lightness:.0}%)"><title>{} × {}: {v:.3}</title></rect><text x="{}" y="{}" text-anchor="middle" fill="{ink}" class="cell">{v:.2}</text>"#,
                cell - 2.0,
                cell - 2.0,
                escape(&labels[i]),
                escape(&labels[j]),
                x + cell / 2.0 - 1.0,
                y + cell / 2.0 + 4.0
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// A scatter of run A (x) against run B (y), both 0..1, with the diagonal.
pub(crate) fn scatter(title: &str, points: &[(String, f64, f64)]) -> String {
    let (pad, size) = (40.0, 360.0);
    let total = size + 2.0 * pad;
    let mut out = open(title, total, total);
    let _ = write!(
        out,
        r#"<rect class="frame" x="{pad}" y="{pad}" width="{size}" height="{size}"/><line class="grid" x1="{pad}" y1="{}" x2="{}" y2="{pad}"/>"#,
        pad + size,
        pad + size,
    );
    let _ = write!(
        out,
        r#"<text class="tick" x="{}" y="{}" text-anchor="middle">run A</text><text class="tick" x="12" y="{}" transform="rotate(-90 12 {})" text-anchor="middle">run B</text>"#,
        pad + size / 2.0,
        total - 8.0,
        pad + size / 2.0,
        pad + size / 2.0
    );
    for (label, a, b) in points {
        let (x, y) = (pad + a.clamp(0.0, 1.0) * size, pad + (1.0 - b.clamp(0.0, 1.0)) * size);
        let _ = write!(
            out,
            r#"<circle class="dot" cx="{x:.1}" cy="{y:.1}" r="4"><title>{}: A {a:.4}, B {b:.4}</title></circle>"#,
            escape(label)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_escape_labels_and_name_no_url() {
        let svg = bars("by <turn>", &[("<script>".into(), 0.5, Some([0.4, 0.6]))]);
        assert!(svg.contains("&lt;script&gt;") && !svg.contains("<script>"));
        assert!(svg.contains("aria-label=\"by &lt;turn&gt;\""));
        let map = heatmap("agreement", &["a\"b".into()], &[vec![Some(1.0)]]);
        assert!(map.contains("a&quot;b"));
        for s in [svg, map, scatter("A vs B", &[("t".into(), 0.2, 0.9)])] {
            assert!(!s.contains("://"), "{s}");
        }
    }
}
