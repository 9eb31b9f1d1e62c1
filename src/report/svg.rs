//! Inline SVG charts: drawn as markup so that a page needs no script, no font and no
//! fetch of any kind to show them.

use std::fmt::Write;

/// Escape text for HTML and SVG content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One horizontal bar made of coloured segments.
pub struct StackedBar {
    pub label: String,
    /// (value, colour, segment name)
    pub segments: Vec<(f64, &'static str, &'static str)>,
}

/// Horizontal stacked bars, one per row, scaled to the largest row total.
pub fn stacked_bars(title: &str, rows: &[StackedBar], legend: &[(&str, &str)]) -> String {
    let label_w = 260.0;
    let bar_w = 420.0;
    let row_h = 22.0;
    let top = 28.0;
    let height = top + row_h * rows.len() as f64 + 30.0;
    let max = rows
        .iter()
        .map(|r| r.segments.iter().map(|s| s.0).sum::<f64>())
        .fold(0.0, f64::max)
        .max(1e-9);
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="chart" role="img" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}"><title>{t}</title><text x="0" y="16" class="ct">{t}</text>"#,
        w = label_w + bar_w + 60.0,
        t = esc(title)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let _ = write!(
            o,
            r#"<text x="{x}" y="{ty}" text-anchor="end" class="cl">{l}</text>"#,
            x = label_w - 6.0,
            ty = y + 14.0,
            l = esc(&r.label)
        );
        let mut x = label_w;
        for (v, colour, name) in &r.segments {
            if *v <= 0.0 {
                continue;
            }
            let w = bar_w * v / max;
            let _ = write!(
                o,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h}" fill="{colour}"><title>{l}: {name} {v}</title></rect>"#,
                h = row_h - 6.0,
                l = esc(&r.label)
            );
            x += w;
        }
    }
    legend_row(&mut o, legend, 0.0, height - 10.0);
    o.push_str("</svg>");
    o
}

fn legend_row(o: &mut String, legend: &[(&str, &str)], x0: f64, y: f64) {
    let mut x = x0;
    for (name, colour) in legend {
        let _ = write!(
            o,
            r#"<rect x="{x}" y="{ry}" width="10" height="10" fill="{colour}"/><text x="{tx}" y="{y}" class="cl">{n}</text>"#,
            ry = y - 9.0,
            tx = x + 14.0,
            n = esc(name)
        );
        x += 24.0 + 7.0 * name.len() as f64;
    }
}

/// One line of a chart: name, colour, (k, value) points.
pub type Series<'a> = (&'a str, &'static str, Vec<(u32, f64)>);

/// A line chart of series over k = 1..=K, values in [0, 1].
pub fn lines_over_k(title: &str, series: &[Series<'_>]) -> String {
    let (w, h) = (520.0, 240.0);
    let (l, r, t, b) = (44.0, 16.0, 28.0, 46.0);
    let kmax = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.0))
        .max()
        .unwrap_or(1)
        .max(1);
    let px = |k: u32| {
        if kmax == 1 {
            l + (w - l - r) / 2.0
        } else {
            l + (w - l - r) * (k - 1) as f64 / (kmax - 1) as f64
        }
    };
    let py = |v: f64| t + (h - t - b) * (1.0 - v.clamp(0.0, 1.0));
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="chart" role="img" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}"><title>{tt}</title><text x="0" y="16" class="ct">{tt}</text>"#,
        tt = esc(title)
    );
    for tick in [0.0, 0.5, 1.0] {
        let y = py(tick);
        let _ = write!(
            o,
            r##"<line x1="{l}" x2="{x2}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{tx}" y="{ty}" text-anchor="end" class="cl">{p:.0}%</text>"##,
            x2 = w - r,
            tx = l - 4.0,
            ty = y + 4.0,
            p = tick * 100.0
        );
    }
    for k in 1..=kmax {
        let _ = write!(
            o,
            r#"<text x="{x}" y="{y}" text-anchor="middle" class="cl">k={k}</text>"#,
            x = px(k),
            y = h - b + 16.0
        );
    }
    for (_, colour, pts) in series {
        if pts.len() > 1 {
            let d: Vec<String> = pts
                .iter()
                .map(|(k, v)| format!("{:.1},{:.1}", px(*k), py(*v)))
                .collect();
            let _ = write!(
                o,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                d.join(" ")
            );
        }
        for (k, v) in pts {
            let _ = write!(
                o,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>k={k}: {:.1}%</title></circle>"#,
                px(*k),
                py(*v),
                v * 100.0
            );
        }
    }
    let legend: Vec<(&str, &str)> = series.iter().map(|s| (s.0, s.1)).collect();
    legend_row(&mut o, &legend, l, h - 8.0);
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        let s = stacked_bars(
            "t",
            &[StackedBar {
                label: "<script>".into(),
                segments: vec![(1.0, "#000", "x")],
            }],
            &[],
        );
        assert!(!s.contains("<script>") && s.contains("&lt;script&gt;"));
    }
}
