//! A heat map of a signed quantity: cells on a grid of x and y bins, blue below zero, white at
//! zero, vermilion above (the palette's two ends, readable by colour-blind readers), the colour
//! scale symmetric about zero and labelled with its extremes.

use std::fmt::Write;

use super::{axes, esc, fmt_num, open, Axis, Scale, H, MB, ML, MR, MT, W};

/// Cells coloured by a signed value, e.g. the difference of two density maps.
#[derive(Debug, Clone)]
pub struct HeatMap {
    /// Title above the map.
    pub title: String,
    /// The horizontal axis (linear or log) and its label.
    pub x: Axis,
    /// The vertical axis (linear or log) and its label.
    pub y: Axis,
    /// Column edges along x: n + 1 of them for n columns, increasing.
    pub x_edges: Vec<f64>,
    /// Row edges along y: m + 1 of them for m rows, increasing.
    pub y_edges: Vec<f64>,
    /// `values[column][row]`; NaN where there is nothing to compare (drawn grey).
    pub values: Vec<Vec<f64>>,
    /// What the colour measures, with its unit ("percentage points").
    pub legend: String,
}

/// Blue for the lowest value, vermilion for the highest (Okabe & Ito's #0072B2 and #D55E00).
const LOW: (f64, f64, f64) = (0.0, 114.0, 178.0);
const HIGH: (f64, f64, f64) = (213.0, 94.0, 0.0);

/// The colour of `t` in -1..1: white at 0, fading into `LOW` or `HIGH`.
fn colour(t: f64) -> String {
    if !t.is_finite() {
        return "#dddddd".into();
    }
    let (r, g, b) = if t < 0.0 { LOW } else { HIGH };
    let a = t.abs().min(1.0);
    let mix = |c: f64| (255.0 + (c - 255.0) * a).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b))
}

impl HeatMap {
    /// The largest absolute value: the colour scale runs from minus it to plus it.
    pub fn extreme(&self) -> f64 {
        self.values
            .iter()
            .flatten()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// Renders the map as one `<svg>` element.
    pub fn to_svg(&self) -> String {
        let mut out = String::with_capacity(32 * 1024);
        let xs = Scale::new(self.x_edges.iter().copied(), &self.x, ML, W - MR);
        let ys = Scale::new(self.y_edges.iter().copied(), &self.y, H - MB, MT);
        open(&mut out, &self.title, Some(&xs), &ys, (W, H));
        out.push_str("<g class=\"marks\">");
        let extreme = self.extreme().max(1e-12);
        for (column, xw) in self.values.iter().zip(self.x_edges.windows(2)) {
            for (v, yw) in column.iter().zip(self.y_edges.windows(2)) {
                if !(xs.contains(xw[0]) && ys.contains(yw[0])) {
                    continue;
                }
                let (x0, x1) = (xs.px(xw[0]), xs.px(xw[1]));
                let (y0, y1) = (ys.px(yw[1]), ys.px(yw[0]));
                let _ = write!(
                    out,
                    "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/>",
                    (x1 - x0).max(0.5),
                    (y1 - y0).max(0.5),
                    colour(v / extreme)
                );
            }
        }
        out.push_str("</g>");
        axes(&mut out, Some(&xs), &ys, &self.x.label, &self.y.label);
        self.colour_scale(&mut out, extreme);
        out.push_str("</svg>");
        out
    }

    /// The colour bar in the right margin, labelled with the extremes and zero.
    fn colour_scale(&self, out: &mut String, extreme: f64) {
        let (x, top, bottom) = (W - MR + 24.0, MT + 10.0, H - MB - 10.0);
        let steps = 20;
        let h = (bottom - top) / f64::from(steps);
        for i in 0..steps {
            let t = 1.0 - 2.0 * (f64::from(i) + 0.5) / f64::from(steps);
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"14\" height=\"{:.1}\" fill=\"{}\"/>",
                top + h * f64::from(i),
                h + 0.3,
                colour(t)
            );
        }
        let label = |out: &mut String, y: f64, text: String| {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 18.0,
                y + 4.0,
                esc(&text)
            );
        };
        label(out, top, format!("+{}", fmt_num(extreme)));
        label(out, (top + bottom) / 2.0, "0".into());
        label(out, bottom, format!("−{}", fmt_num(extreme)));
        let _ = write!(
            out,
            "<text transform=\"translate({:.1} {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            x + 70.0,
            (top + bottom) / 2.0,
            esc(&self.legend)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_take_the_sign_colour_and_the_scale_is_symmetric() {
        let map = HeatMap {
            title: "Difference".into(),
            x: Axis::linear("time (s)"),
            y: Axis::log("response time (ms)"),
            x_edges: vec![0.0, 1.0, 2.0],
            y_edges: vec![0.1, 1.0, 10.0],
            values: vec![vec![-4.0, 0.0], vec![2.0, f64::NAN]],
            legend: "percentage points".into(),
        };
        assert_eq!(map.extreme(), 4.0);
        let svg = map.to_svg();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let fills: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("fill"))
            .collect();
        // Background, then the four cells: full blue, white, half vermilion, grey.
        assert_eq!(&fills[1..5], ["#0072b2", "#ffffff", "#eaaf80", "#dddddd"]);
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(texts.contains(&"+4") && texts.contains(&"−4"), "{texts:?}");
        assert!(texts.contains(&"percentage points"));
    }
}
