//! Charts as inline SVG: line and scatter charts (linear or log axes), grouped and stacked bar
//! charts, histograms and signed heat maps, each with a title, axis labels with units and a legend.
//!
//! Written by hand rather than with a chart crate because a report must be byte-for-byte the
//! same when re-rendered on another machine: `plotters` lays text out with the fonts it finds
//! on the system, which differ between machines; here the browser lays the text out, and the
//! SVG depends only on the data. Numbers are printed with a fixed precision for the same
//! reason.

use std::fmt::Write;

mod heatmap;
mod legend;
mod scale;

pub use heatmap::HeatMap;
use legend::Legend;
use scale::Scale;

/// Width and height of every chart, in SVG user units.
const W: f64 = 640.0;
const H: f64 = 360.0;
/// Plot area margins: left (tick labels and axis title), right, top (title), bottom.
const ML: f64 = 72.0;
const MR: f64 = 150.0;
const MT: f64 = 36.0;
const MB: f64 = 52.0;

/// A colour-blind-safe palette (Okabe & Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// An axis: label (with unit) and scale.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Text under or beside the axis, e.g. "clients" or "latency (ms)".
    pub label: String,
    /// Logarithmic scale (base 10); non-positive values are left out.
    pub log: bool,
    /// Force the range to include zero (linear axes only).
    pub zero: bool,
}

impl Axis {
    /// A linear axis that starts at zero.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            log: false,
            zero: true,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            log: true,
            zero: false,
        }
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Points joined by lines, with markers.
    Line,
    /// A dashed line without markers (models, fits).
    Dashed,
    /// Markers only.
    Points,
    /// Small translucent dots without a line: thousands of samples (density maps).
    Dots,
}

/// One named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points, in x order for lines.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub style: Style,
    /// Error bars: (x, low, high) for points measured more than once (the spread of the
    /// repeats behind a median); empty for none.
    pub spread: Vec<(f64, f64, f64)>,
}

impl Series {
    /// A series drawn as a line with markers.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: Style::Line,
            spread: Vec::new(),
        }
    }
}

/// An x-y chart.
#[derive(Debug, Clone)]
pub struct XyChart {
    /// Title above the chart.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The series, each in its own colour.
    pub series: Vec<Series>,
}

/// Bars: one group per category, one bar per series in each group (side by side or stacked).
#[derive(Debug, Clone)]
pub struct BarChart {
    /// Title above the chart.
    pub title: String,
    /// Category names along the horizontal axis.
    pub categories: Vec<String>,
    /// The vertical axis.
    pub y: Axis,
    /// (series name, one value per category).
    pub series: Vec<(String, Vec<f64>)>,
    /// Stack the series instead of placing them side by side.
    pub stacked: bool,
}

/// A number as a tick label: short, and the same on every machine.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        format!("{:.3}G", v / 1e9).replace(".000G", "G")
    } else if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else if a >= 1e-3 {
        trim(format!("{v:.4}"))
    } else {
        // Fixed decimals would round 0.00002 to "0": the mantissa keeps its figures.
        let text = format!("{v:.2e}");
        match text.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim(mantissa.to_string())),
            None => text,
        }
    }
}

/// A decade of a log axis as a power of ten, `10⁻⁵`: for axes that reach beyond what
/// [`fmt_num`] writes short (below 0.001 or from a million on), where "1e-5" beside "0.001"
/// would read as two kinds of number.
pub fn fmt_decade(v: f64) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let exp = v.log10().round() as i32;
    let mut out = String::from("10");
    if exp < 0 {
        out.push('⁻');
    }
    for d in exp.unsigned_abs().to_string().bytes() {
        out.push(DIGITS[usize::from(d - b'0')]);
    }
    out
}

/// The tick labels of `scale`, in tick order.
fn tick_labels(scale: &Scale) -> Vec<(f64, String)> {
    let ticks = scale.ticks();
    let short = |t: &f64| (1e-3..1e6).contains(&t.abs());
    let decades = scale.log && !ticks.iter().all(short);
    ticks
        .into_iter()
        .map(|t| (t, if decades { fmt_decade(t) } else { fmt_num(t) }))
        .collect()
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Escapes text for XML.
pub fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Opens the `<svg>` element. Its `data-plot-*` attributes give the plot area and its
/// `data-x-step`/`data-y-step` the distance between two ticks of a linear axis (user units),
/// so that a check in a browser can tell whether the marks (in `<g class="marks">`) fit
/// their axes; the page does not use them.
/// `size` is the whole chart's (width, height): (W, H), or more where a legend needs it.
fn open(out: &mut String, title: &str, xs: Option<&Scale>, ys: &Scale, size: (f64, f64)) {
    let (w, h) = size;
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
         role=\"img\" aria-label=\"{t}\" font-family=\"sans-serif\" font-size=\"11\" \
         data-plot-left=\"{ML}\" data-plot-top=\"{MT}\" data-plot-right=\"{r}\" data-plot-bottom=\"{b}\"",
        t = esc(title),
        r = W - MR,
        b = H - MB,
    );
    if let Some(step) = xs.and_then(Scale::step_px) {
        let _ = write!(out, " data-x-step=\"{step:.1}\"");
    }
    if let Some(step) = ys.step_px() {
        let _ = write!(out, " data-y-step=\"{step:.1}\"");
    }
    let _ = write!(
        out,
        "><rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>\
         <text x=\"{cx:.1}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{t}</text>",
        t = esc(title),
        cx = W / 2.0,
    );
}

fn axes(out: &mut String, xs: Option<&Scale>, ys: &Scale, x_label: &str, y_label: &str) {
    let (x0, x1, y0, y1) = (ML, W - MR, H - MB, MT);
    for (t, label) in tick_labels(ys) {
        let y = ys.px(t);
        // Zero inside the plot (negative values below it) is drawn as dark as the axes.
        let grid = if t == 0.0 && ys.lo < 0.0 {
            "#333"
        } else {
            "#e5e5e5"
        };
        let _ = write!(
            out,
            "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{grid}\"/>\
             <text x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"end\">{label}</text>",
            tx = x0 - 6.0,
            ty = y + 4.0
        );
    }
    if let Some(xs) = xs {
        for (t, label) in tick_labels(xs) {
            let x = xs.px(t);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{y0:.1}\" x2=\"{x:.1}\" y2=\"{ye:.1}\" stroke=\"#999\"/>\
                 <text x=\"{x:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\">{label}</text>",
                ye = y0 + 4.0,
                ty = y0 + 17.0
            );
        }
    }
    let _ = write!(
        out,
        "<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x1:.1}\" y2=\"{y0:.1}\" stroke=\"#333\"/>\
         <line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{y1:.1}\" stroke=\"#333\"/>\
         <text x=\"{xc:.1}\" y=\"{xl:.1}\" text-anchor=\"middle\">{xt}</text>\
         <text transform=\"translate(16 {yc:.1}) rotate(-90)\" text-anchor=\"middle\">{yt}</text>",
        xc = (x0 + x1) / 2.0,
        xl = H - 12.0,
        yc = (y0 + y1) / 2.0,
        xt = esc(x_label),
        yt = esc(y_label),
    );
}

impl XyChart {
    /// Renders the chart as one `<svg>` element.
    pub fn to_svg(&self) -> String {
        let mut out = String::with_capacity(8192);
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let spreads = || self.series.iter().flat_map(|s| s.spread.iter());
        let xs = Scale::new(
            points().map(|p| p.0).chain(spreads().map(|s| s.0)),
            &self.x,
            ML,
            W - MR,
        );
        let ys = Scale::new(
            points()
                .map(|p| p.1)
                .chain(spreads().flat_map(|s| [s.1, s.2])),
            &self.y,
            H - MB,
            MT,
        );
        let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        let legend = Legend::new(&names);
        open(&mut out, &self.title, Some(&xs), &ys, legend.size());
        axes(&mut out, Some(&xs), &ys, &self.x.label, &self.y.label);
        out.push_str("<g class=\"marks\">");
        for (i, s) in self.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(x, y)| xs.contains(*x) && ys.contains(*y))
                .map(|&(x, y)| (xs.px(x), ys.px(y)))
                .collect();
            if s.style == Style::Dots {
                for (x, y) in &pts {
                    let _ = write!(
                        out,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"1.3\" fill=\"{colour}\" fill-opacity=\"0.45\"/>"
                    );
                }
                continue;
            }
            if s.style != Style::Points && pts.len() > 1 {
                let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let dash = if s.style == Style::Dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                };
                let _ = write!(
                    out,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>",
                    path.join(" ")
                );
            }
            for &(x, lo, hi) in &s.spread {
                if !(xs.contains(x) && ys.contains(lo) && ys.contains(hi)) {
                    continue;
                }
                let (px, plo, phi) = (xs.px(x), ys.px(lo), ys.px(hi));
                let _ = write!(
                    out,
                    "<path d=\"M{a:.1},{plo:.1}H{b:.1}M{px:.1},{plo:.1}V{phi:.1}M{a:.1},{phi:.1}H{b:.1}\" stroke=\"{colour}\" stroke-width=\"1.2\" fill=\"none\"/>",
                    a = px - 4.0,
                    b = px + 4.0
                );
            }
            if s.style != Style::Dashed {
                for (x, y) in &pts {
                    let _ = write!(
                        out,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{colour}\"/>"
                    );
                }
            }
        }
        out.push_str("</g>");
        legend.draw(&mut out);
        out.push_str("</svg>");
        out
    }
}

impl BarChart {
    /// Renders the chart as one `<svg>` element.
    pub fn to_svg(&self) -> String {
        let mut out = String::with_capacity(8192);
        let n = self.categories.len().max(1);
        // Where every bar ends: the running sums of a stack (its top is the stack's total),
        // or each value, below zero too (a negative bar hangs from zero).
        let mut ends: Vec<f64> = Vec::new();
        for c in 0..n {
            let mut base = 0.0;
            for (_, values) in &self.series {
                let v = values.get(c).copied().unwrap_or(0.0);
                base = if self.stacked { base + v } else { v };
                ends.push(base);
            }
        }
        let ys = Scale::new(ends.iter().copied(), &self.y, H - MB, MT);
        let names: Vec<&str> = self.series.iter().map(|(n, _)| n.as_str()).collect();
        let legend = Legend::new(&names);
        open(&mut out, &self.title, None, &ys, legend.size());
        axes(&mut out, None, &ys, "", &self.y.label);
        out.push_str("<g class=\"marks\">");
        // The category names go after the bars, outside the marks.
        let mut labels = String::new();
        let band = (W - MR - ML) / n as f64;
        let groups = if self.stacked {
            1
        } else {
            self.series.len().max(1)
        };
        let bar = band * 0.8 / groups as f64;
        for (c, name) in self.categories.iter().enumerate() {
            let left = ML + band * c as f64 + band * 0.1;
            let mut base = 0.0;
            for (i, (_, values)) in self.series.iter().enumerate() {
                let v = values.get(c).copied().unwrap_or(0.0);
                let (lo, hi) = if self.stacked {
                    (base, base + v)
                } else {
                    (0.0, v)
                };
                let x = if self.stacked {
                    left
                } else {
                    left + bar * i as f64
                };
                // A log axis has no zero: its bars start at its lowest value.
                let (top, bottom) = (ys.px(hi.max(lo)), ys.px(lo.min(hi).max(ys.lo)));
                let _ = write!(
                    out,
                    "<rect x=\"{x:.1}\" y=\"{top:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" fill=\"{c}\"><title>{t}: {v}</title></rect>",
                    h = (bottom - top).max(0.0),
                    c = PALETTE[i % PALETTE.len()],
                    t = esc(name),
                    v = fmt_num(v),
                );
                base += v;
            }
            // Labels wider than their band (about 6 px a character) are slanted so that
            // neighbours do not run into each other.
            let (x, y) = (left + band * 0.4, H - MB + 16.0);
            if name.chars().count() as f64 * 6.0 > band {
                let _ = write!(
                    labels,
                    "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"end\" transform=\"rotate(-30 {x:.1} {y:.1})\">{t}</text>",
                    t = esc(name)
                );
            } else {
                let _ = write!(
                    labels,
                    "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\">{t}</text>",
                    t = esc(name)
                );
            }
        }
        out.push_str("</g>");
        out.push_str(&labels);
        legend.draw(&mut out);
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests;
