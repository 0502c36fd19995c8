//! Inline SVG plots: bars with interval whiskers, a heatmap, a scatter.
//! Each has a `<title>` and an `aria-label` (the text alternative), and
//! a table of the same numbers sits beside it in the page.
//!
//! Owns: geometry and escaping of labels. Must never emit a URL (no
//! `xmlns`: inline SVG in HTML needs none).

use std::fmt::Write;

use super::escape;

/// A horizontal bar per item, 0..1 axis, with its interval when known.
pub fn bars(title: &str, items: &[(String, f64, Option<[f64; 2]>)]) -> String {
    let (label_w, plot_w, row_h) = (170.0, 360.0, 26.0);
    let height = 30.0 + row_h * items.len() as f64;
    let width = label_w + plot_w + 70.0;
    let mut out = format!(
        r#"<svg class="plot" role="img" aria-label="{t}" viewBox="0 0 {width} {height}" width="{width}" height="{height}"><title>{t}</title>"#,
        t = escape(title)
    );
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
            r#"<text class="value" x="{}" y="{}">{value:.3}</text>"#,
            label_w + plot_w + 8.0,
            y + 14.0
        );
    }
    out.push_str("</svg>");
    out
}

/// A square heatmap of values in 0..1 (`None` cells blank).
pub fn heatmap(title: &str, labels: &[String], cells: &[Vec<Option<f64>>]) -> String {
    let (label_w, cell) = (130.0, 56.0);
    let n = labels.len() as f64;
    let (width, height) = (label_w + cell * n + 10.0, label_w + cell * n + 10.0);
    let mut out = format!(
        r#"<svg class="plot" role="img" aria-label="{t}" viewBox="0 0 {width} {height}" width="{width}" height="{height}"><title>{t}</title>"#,
        t = escape(title)
    );
    for (i, l) in labels.iter().enumerate() {
        let c = label_w + cell * i as f64 + cell / 2.0;
        let _ = write!(
            out,
            r#"<text class="label" x="{}" y="{c}" text-anchor="end">{l}</text><text class="label" x="{c}" y="{}" text-anchor="start" transform="rotate(-45 {c} {})">{l}</text>"#,
            label_w - 8.0,
            label_w - 8.0,
            label_w - 8.0,
            l = escape(l)
        );
    }
    for (i, row) in cells.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let (x, y) = (label_w + cell * j as f64, label_w + cell * i as f64 - cell / 2.0);
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
pub fn scatter(title: &str, points: &[(String, f64, f64)]) -> String {
    let (pad, size) = (40.0, 360.0);
    let total = size + 2.0 * pad;
    let mut out = format!(
        r#"<svg class="plot" role="img" aria-label="{t}" viewBox="0 0 {total} {total}" width="{total}" height="{total}"><title>{t}</title><rect class="frame" x="{pad}" y="{pad}" width="{size}" height="{size}"/><line class="grid" x1="{pad}" y1="{}" x2="{}" y2="{pad}"/>"#,
        pad + size,
        pad + size,
        t = escape(title)
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
