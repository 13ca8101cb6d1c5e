use super::scale::{linear_bounds, nice_step};
use super::*;

fn parses(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).expect("well-formed SVG")
}

#[test]
fn xy_chart_is_well_formed_and_has_its_parts() {
    let chart = XyChart {
        title: "Throughput <vs> clients".into(),
        x: Axis::linear("clients"),
        y: Axis::linear("requests/s"),
        series: vec![
            Series::line("measured", vec![(1.0, 100.0), (2.0, 190.0), (5.0, 400.0)]),
            Series {
                name: "model".into(),
                points: vec![(1.0, 110.0), (5.0, 420.0)],
                style: Style::Dashed,
                spread: Vec::new(),
            },
        ],
    };
    let svg = chart.to_svg();
    let doc = parses(&svg);
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains(&"Throughput <vs> clients"));
    assert!(texts.contains(&"clients") && texts.contains(&"requests/s"));
    assert!(texts.contains(&"measured") && texts.contains(&"model"));
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .count(),
        2
    );
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("circle"))
            .count(),
        3
    );
    assert_eq!(svg, chart.to_svg(), "deterministic");
    assert!(!svg.contains("<path"), "no error bars without a spread");
    let mut spread = chart.clone();
    spread.series[0].spread = vec![(2.0, 150.0, 230.0), (5.0, 380.0, 900.0)];
    let svg = spread.to_svg();
    let bars = parses(&svg)
        .descendants()
        .filter(|n| n.has_tag_name("path"))
        .count();
    assert_eq!(bars, 2, "one bar per spread point");
    assert!(
        svg.contains(">900<") || svg.contains(">1000<"),
        "the axis takes the bars in"
    );
}

#[test]
fn log_axes_drop_non_positive_values() {
    let chart = XyChart {
        title: "t".into(),
        x: Axis::linear("x"),
        y: Axis::log("y"),
        series: vec![Series {
            name: "s".into(),
            points: vec![(1.0, 0.0), (2.0, 10.0), (3.0, 1000.0)],
            style: Style::Points,
            spread: Vec::new(),
        }],
    };
    let svg = chart.to_svg();
    let doc = parses(&svg);
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("circle"))
            .count(),
        2
    );
    let ticks: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(
        ticks.contains(&"10") && ticks.contains(&"1000"),
        "{ticks:?}"
    );
}

#[test]
fn stacked_bars_stack() {
    let chart = BarChart {
        title: "phases".into(),
        categories: vec!["A/4".into(), "A".into()],
        y: Axis::linear("ms"),
        series: vec![
            ("parse".into(), vec![1.0, 2.0]),
            ("process".into(), vec![3.0, 4.0]),
        ],
        stacked: true,
    };
    let doc_text = chart.to_svg();
    let doc = parses(&doc_text);
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("rect")).count(),
        1 + 4 + 2
    );
}

#[test]
fn numbers_are_short() {
    assert_eq!(fmt_num(0.0), "0");
    assert_eq!(fmt_num(1500.0), "1500");
    assert_eq!(fmt_num(25_000.0), "25k");
    assert_eq!(fmt_num(2_500_000.0), "2.5M");
    assert_eq!(fmt_num(0.25), "0.25");
    assert_eq!(nice_step(3.0), 5.0);
    assert_eq!(nice_step(0.13), 0.2);
}

/// The y axis's largest tick label and the plot's top and bottom (user units).
fn y_axis(svg: &str) -> (f64, f64, f64) {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let root = doc.root_element();
    let attr = |name: &str| -> f64 { root.attribute(name).unwrap().parse().unwrap() };
    let top_label = doc
        .descendants()
        .filter(|n| n.attribute("text-anchor") == Some("end") && n.attribute("transform").is_none())
        .filter_map(|n| n.text()?.parse::<f64>().ok())
        .fold(f64::NEG_INFINITY, f64::max);
    (top_label, attr("data-plot-top"), attr("data-plot-bottom"))
}

#[test]
fn an_axis_ends_within_one_tick_step_of_its_data() {
    // Zero-based data (bars, counts, shares) of every magnitude, and ranges away from zero.
    let mut cases: Vec<(f64, f64)> = Vec::new();
    for exp in -3..=6 {
        for mantissa in [
            1.0, 1.01, 1.2, 1.5, 2.0, 2.01, 2.5, 3.3, 4.99, 5.0, 5.01, 6.0, 7.7, 9.99,
        ] {
            let hi = mantissa * 10f64.powi(exp);
            cases.push((0.0, hi));
            cases.push((hi * 0.3, hi));
            cases.push((-hi, hi * 0.5));
        }
    }
    cases.push((0.0, 100.000_000_000_000_01));
    for (lo, hi) in cases {
        let (a, b, step) = linear_bounds(lo, hi);
        let intervals = ((b - a) / step).round();
        assert!(
            (3.0..=10.0).contains(&intervals),
            "{lo}..{hi}: {a}..{b} by {step}"
        );
        // The data fits, and neither end runs a whole step beyond it.
        assert!(
            a <= lo + step * 1e-9 && b >= hi - step * 1e-9,
            "{lo}..{hi}: {a}..{b}"
        );
        assert!(
            b - hi < step && lo - a < step,
            "{lo}..{hi}: {a}..{b} by {step}"
        );
        if lo == 0.0 {
            // Nor a quarter of the plot empty above the largest value.
            assert!((b - hi) / (b - a) < 0.25, "{lo}..{hi}: {a}..{b} by {step}");
        }
    }
    // CPU shares summing to 100 % give or take a rounding error end at 100, not 150.
    assert_eq!(linear_bounds(0.0, 100.000_000_000_000_01).1, 100.0);
    assert_eq!(linear_bounds(0.0, 100.3).1, 120.0);
    assert_eq!(linear_bounds(0.0, 87.0).1, 90.0);
}

#[test]
fn a_stacked_charts_axis_ends_just_above_its_largest_stack() {
    // The means of one run's CPU columns, as a monitor gave them: they sum to
    // 100.00000000000001 in floating point.
    let shares = [
        36.29505842741137,
        34.815440264356674,
        7.843997248022016,
        0.0,
        0.8552631578947368,
        20.190240902315207,
    ];
    let chart = |scale: f64| BarChart {
        title: "Where the CPUs' time went".into(),
        categories: vec!["1".into(), "2".into()],
        y: Axis::linear("% of all CPUs"),
        series: shares
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("c{i}"), vec![s * scale * 0.5, s * scale]))
            .collect(),
        stacked: true,
    };
    let (top_tick, plot_top, _) = y_axis(&chart(1.0).to_svg());
    assert_eq!(top_tick, 100.0, "a stack of 100 % ends at 100 %");
    // The largest stack reaches the top of the plot; no bar leaves it.
    let svg = chart(1.0).to_svg();
    let doc = parses(&svg);
    let tops: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g"))
        .flat_map(|g| g.children().filter(|n| n.has_tag_name("rect")))
        .map(|r| r.attribute("y").unwrap().parse().unwrap())
        .collect();
    assert_eq!(tops.len(), 12);
    let highest = tops.iter().copied().fold(f64::INFINITY, f64::min);
    assert!((highest - plot_top).abs() < 0.05, "{highest} vs {plot_top}");
    // Stacks of 60 % end at 60 %; the axis follows the sum, not the largest part.
    let (top_tick, _, _) = y_axis(&chart(0.6).to_svg());
    assert_eq!(top_tick, 60.0);
}

#[test]
fn a_negative_bar_hangs_from_zero_inside_the_plot() {
    // A technique that cost throughput has a negative share of the gain.
    let chart = BarChart {
        title: "share of the gain".into(),
        categories: vec!["epoll".into(), "sendfile".into()],
        y: Axis::linear("%"),
        series: vec![("share".into(), vec![-20.0, 120.0])],
        stacked: false,
    };
    let svg = chart.to_svg();
    let doc = parses(&svg);
    let root = doc.root_element();
    let attr = |name: &str| -> f64 { root.attribute(name).unwrap().parse().unwrap() };
    let (top, bottom) = (attr("data-plot-top"), attr("data-plot-bottom"));
    let bars: Vec<(f64, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g"))
        .flat_map(|g| g.children().filter(|n| n.has_tag_name("rect")))
        .map(|r| {
            let y: f64 = r.attribute("y").unwrap().parse().unwrap();
            let h: f64 = r.attribute("height").unwrap().parse().unwrap();
            (y, y + h)
        })
        .collect();
    assert_eq!(bars.len(), 2);
    for (y0, y1) in &bars {
        assert!(*y0 >= top - 0.05 && *y1 <= bottom + 0.05, "{bars:?}");
        assert!(y1 - y0 > 10.0, "each bar is drawn: {bars:?}");
    }
    // The negative bar starts where the positive one does (at zero) and goes down.
    assert!((bars[0].0 - bars[1].1).abs() < 0.05, "{bars:?}");
}

/// The tick labels of the y axis (right-aligned, unrotated texts), top to bottom.
fn y_tick_labels(svg: &str) -> Vec<String> {
    let doc = parses(svg);
    doc.descendants()
        .filter(|n| n.attribute("text-anchor") == Some("end") && n.attribute("transform").is_none())
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

#[test]
fn small_numbers_keep_their_figures() {
    assert_eq!(fmt_num(0.00002), "2e-5");
    assert_eq!(fmt_num(0.000125), "1.25e-4");
    assert_eq!(fmt_num(-0.00001), "-1e-5");
    assert_eq!(fmt_num(0.001), "0.001");
    assert_eq!(fmt_decade(1e-5), "10⁻⁵");
    assert_eq!(fmt_decade(1e12), "10¹²");
    assert_eq!(fmt_decade(1.0), "10⁰");
}

#[test]
fn log_ticks_below_a_ten_thousandth_read_as_powers_of_ten() {
    // A CCDF's tail: shares down to 3e-6 (issue #35 printed every tick below 1e-4 as "0").
    let chart = XyChart {
        title: "Size CCDF".into(),
        x: Axis::log("bytes"),
        y: Axis::log("P(size ≥ x)"),
        series: vec![Series::line("transfers", vec![(100.0, 1.0), (1e7, 3e-6)])],
    };
    let labels = y_tick_labels(&chart.to_svg());
    assert_eq!(
        labels,
        ["10⁻⁶", "10⁻⁵", "10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "10⁰"]
    );
}

#[test]
fn a_log_axis_within_short_numbers_keeps_them() {
    let chart = XyChart {
        title: "p99".into(),
        x: Axis::log("req/s"),
        y: Axis::log("ms"),
        series: vec![Series::line("p99", vec![(10.0, 0.02), (1000.0, 30.0)])],
    };
    assert_eq!(
        y_tick_labels(&chart.to_svg()),
        ["0.01", "0.1", "1", "10", "100"]
    );
}

#[test]
fn a_linear_axis_of_tiny_values_has_distinct_ticks() {
    let chart = XyChart {
        title: "shares".into(),
        x: Axis::linear("x"),
        y: Axis::linear("share"),
        series: vec![Series::line("s", vec![(0.0, 0.0), (1.0, 0.00009)])],
    };
    let labels = y_tick_labels(&chart.to_svg());
    let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
    assert_eq!(distinct.len(), labels.len(), "{labels:?}");
    assert!(
        labels.iter().filter(|l| l.as_str() == "0").count() == 1,
        "{labels:?}"
    );
}

#[test]
fn legends_are_whole_and_inside_the_chart() {
    let names = [
        "lognormal body + Pareto tail",
        "Poisson arrivals, same rate",
        "/blog/tags/puppet?flav=rss20&page=2&sort=date-descending",
    ];
    let chart = XyChart {
        title: "t".into(),
        x: Axis::linear("x"),
        y: Axis::linear("y"),
        series: names
            .iter()
            .map(|n| Series::line(*n, vec![(1.0, 1.0), (2.0, 2.0)]))
            .collect(),
    };
    let svg = chart.to_svg();
    let doc = parses(&svg);
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .and_then(|w| w.parse().ok())
        .expect("a width");
    let lines: Vec<(f64, &str)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend"))
        .map(|n| {
            (
                n.attribute("x").unwrap().parse().unwrap(),
                n.text().unwrap(),
            )
        })
        .collect();
    // Every word of every name is there, in order.
    let shown: Vec<&str> = lines.iter().map(|l| l.1).collect();
    assert_eq!(shown.join(" "), names.join(" "));
    for (x, line) in lines {
        let end = x + legend::text_width(line, 11.0);
        assert!(end <= width, "{line:?} ends at {end}, the chart at {width}");
    }
    assert!(width > W, "the URL's width widens the chart");
}
