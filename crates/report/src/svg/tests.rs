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
