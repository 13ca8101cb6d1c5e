use super::*;
use crate::characterize::HostTally;

/// A log whose figures hold every invariant: 88 % 200s and 8 % 304s, 95 % HTML and images, a
/// mean transfer of 15 kB, 1 % distinct documents of which a third referenced once, α 0.5,
/// the top 10 % of documents taking 90 %, Poisson references, 90 % remote requests and the
/// busiest 10 % of domains sending 80 %.
fn holding() -> Figures {
    Figures {
        requests: 1000,
        ok_share: 0.88,
        not_modified_share: 0.08,
        types: BTreeMap::from([
            (DocType::Html, 500),
            (DocType::Image, 450),
            (DocType::Code, 50),
        ]),
        transfers: 800,
        mean_transfer: 15_000.0,
        references: 100_000,
        distinct_urls: 1000,
        one_time_urls: 333,
        top10_share: 0.9,
        files_over_1k: 900,
        tail_over_1k: Some(TailFit {
            alpha: 0.5,
            x_min: 10_000.0,
            tail: 100,
            n: 900,
            ks: 0.02,
        }),
        inter_reference: InterReference {
            urls: 50,
            median_cv: Some(1.0),
            median_lag1: Some(0.02),
            sampled_share: 1.0,
        },
        hosts: Hosts {
            requests: 1000,
            remote_requests: 900,
            domains: 100,
            top10_domain_share: 0.8,
        },
    }
}

fn row(f: &Figures, name: &str) -> Invariant {
    let rows = judge(f);
    assert_eq!(rows.len(), 10);
    rows.into_iter()
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn a_log_built_to_hold_them_holds_all_ten() {
    let rows = judge(&holding());
    let names: Vec<&str> = rows.iter().map(|i| i.name).collect();
    assert_eq!(
        names,
        [
            "Success rate",
            "File types",
            "Mean transfer size",
            "Distinct requests",
            "One-time referencing",
            "Size distribution",
            "Concentration of references",
            "Inter-reference times",
            "Remote requests",
            "Wide-area usage"
        ]
    );
    for i in &rows {
        assert_eq!((i.verdict, &i.difference), (Verdict::Holds, &None), "{i:?}");
    }
}

/// Each row broken by one figure: the row differs, says by how much, and no other row moves.
#[test]
fn a_log_built_to_break_each_row_differs_by_how_much() {
    type Break = fn(&mut Figures);
    let cases: [(&str, Break, &str); 12] = [
        (
            "Success rate",
            |f| f.ok_share = 0.64,
            "status 200 16.0 points below 80.0 %",
        ),
        (
            "Success rate",
            |f| f.not_modified_share = 0.25,
            "Not Modified 12.0 points above 13.0 %",
        ),
        (
            "File types",
            |f| {
                f.types.insert(DocType::Code, 400);
            },
            "below 90.0 %",
        ),
        (
            "Mean transfer size",
            |f| f.mean_transfer = 31.0 * 1024.0,
            "10 KiB above 21 KiB",
        ),
        (
            "Distinct requests",
            |f| f.references = 20_000,
            "2.9 points above 2.1 %",
        ),
        (
            "Distinct requests",
            |f| f.references = 1_000_000,
            "0.2 points below 0.3 %",
        ),
        (
            "One-time referencing",
            |f| f.one_time_urls = 700,
            "26.7 points above 43.3 %",
        ),
        (
            "Size distribution",
            |f| f.tail_over_1k.as_mut().unwrap().alpha = 1.2,
            "α 0.57 above 0.63",
        ),
        (
            "Concentration of references",
            |f| f.top10_share = 0.5,
            "30.0 points below 80.0 %",
        ),
        (
            "Inter-reference times",
            |f| f.inter_reference.median_cv = Some(3.0),
            "CV 1.67 above 1.33",
        ),
        (
            "Remote requests",
            |f| f.hosts.remote_requests = 500,
            "20.0 points below 70.0 %",
        ),
        (
            "Wide-area usage",
            |f| f.hosts.top10_domain_share = 0.4,
            "35.0 points below 75.0 %",
        ),
    ];
    for (name, break_it, said) in cases {
        let mut f = holding();
        break_it(&mut f);
        for i in judge(&f) {
            if i.name != name {
                assert_eq!(i.verdict, Verdict::Holds, "{name} moved {i:?}");
                continue;
            }
            assert_eq!(i.verdict, Verdict::Differs, "{i:?}");
            let difference = i.difference.unwrap_or_default();
            assert!(
                difference.contains(said),
                "{name}: {difference:?} lacks {said:?}"
            );
        }
    }
}

#[test]
fn dependent_references_differ_and_say_which_check() {
    let mut f = holding();
    f.inter_reference.median_lag1 = Some(-0.3);
    let i = row(&f, "Inter-reference times");
    assert_eq!(i.difference.as_deref(), Some("|lag-1| 0.20 above 0.10"));
}

#[test]
fn the_approximate_bounds_say_how_near_holds() {
    let f = holding();
    let success = row(&f, "Success rate");
    assert_eq!(success.bound, "200: 80.0-96.0 %; 304: 3.0-13.0 %");
    assert!(
        success.how.contains("within 8 points of 88 %"),
        "{}",
        success.how
    );
    let once = row(&f, "One-time referencing");
    assert!(once.how.contains("within 10 points"), "{}", once.how);
    // Just inside the tolerance holds; just outside differs.
    let mut edge = holding();
    edge.one_time_urls = 240;
    assert_eq!(row(&edge, "One-time referencing").verdict, Verdict::Holds);
    edge.one_time_urls = 230;
    assert_eq!(row(&edge, "One-time referencing").verdict, Verdict::Differs);
}

#[test]
fn rows_a_log_cannot_carry_say_cannot_tell_and_why() {
    let mut f = holding();
    f.types = BTreeMap::from([(DocType::Unknown, 900), (DocType::Html, 100)]);
    f.transfers = 0;
    f.tail_over_1k = None;
    f.distinct_urls = 5;
    f.inter_reference.median_cv = None;
    f.hosts = HostTally::from_iter(["127.0.0.1", "10.0.0.7", "10.0.0.7"]).finish();
    for name in [
        "File types",
        "Mean transfer size",
        "Size distribution",
        "Concentration of references",
        "Inter-reference times",
        "Remote requests",
        "Wide-area usage",
    ] {
        let i = row(&f, name);
        assert_eq!(
            (i.verdict, &i.difference),
            (Verdict::CannotTell, &None),
            "{i:?}"
        );
    }
    assert!(row(&f, "Remote requests").how.contains("proxy"));
}

#[test]
fn remote_and_wide_area_rows_from_client_fields() {
    // 90 requests from 30 public hosts of 3 domains (30 each), 10 from the local network:
    // remote 90 % holds; 3 + 1 domains are too few for a top 10 %.
    let mut clients: Vec<String> = (0..90)
        .map(|i| format!("h{}.site{}.example.org", i % 10, i % 3))
        .collect();
    clients.extend((0..10).map(|i| format!("192.168.0.{i}")));
    let mut f = holding();
    f.hosts = clients
        .iter()
        .map(String::as_str)
        .collect::<HostTally>()
        .finish();
    assert_eq!(row(&f, "Remote requests").verdict, Verdict::Holds);
    assert_eq!(row(&f, "Wide-area usage").verdict, Verdict::CannotTell);
    // Requests spread evenly over 40 networks: the busiest 4 send 10 %, far from 75 %.
    let even: Vec<String> = (0..400).map(|i| format!("203.0.{}.9", i % 40)).collect();
    f.hosts = even
        .iter()
        .map(String::as_str)
        .collect::<HostTally>()
        .finish();
    let wide = row(&f, "Wide-area usage");
    assert_eq!(wide.verdict, Verdict::Differs);
    assert_eq!(wide.difference.as_deref(), Some("65.0 points below 75.0 %"));
    // One network sending 900 of 1000 among 20: it alone, 2 of the 20 being the top 10 %.
    let mut heavy: Vec<String> = vec!["198.51.100.1".into(); 900];
    heavy.extend((0..100).map(|i| format!("203.0.{}.9", i % 19)));
    f.hosts = heavy
        .iter()
        .map(String::as_str)
        .collect::<HostTally>()
        .finish();
    assert_eq!(row(&f, "Wide-area usage").verdict, Verdict::Holds);
}
