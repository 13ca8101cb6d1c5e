//! `--think-scale` (issue 52 §4): a site's own sessions with their think times scaled.

use super::*;

fn sample() -> Logged {
    let view = |page, think_s| View {
        page: Request {
            request: page,
            logged: Some(200),
        },
        objects: vec![Request {
            request: 9,
            logged: Some(200),
        }],
        think_s,
    };
    Logged {
        sessions: vec![
            Session {
                views: vec![view(0, Some(9.0)), view(1, Some(20.0)), view(2, None)],
            },
            Session {
                views: vec![view(3, Some(5.0)), view(4, None)],
            },
        ],
        population: 2,
        source: "site.log".into(),
        note: None,
        think_scale: 1.0,
    }
}

#[test]
fn a_scale_keeps_the_sessions_shape_and_says_itself() {
    let logged = sample();
    let scaled = logged.clone().with_think_scale(0.01);
    // Pages, objects, order and which views think: as logged.
    for (a, b) in logged.sessions.iter().zip(&scaled.sessions) {
        assert_eq!(a.views.len(), b.views.len());
        for (v, w) in a.views.iter().zip(&b.views) {
            assert_eq!((v.page, &v.objects), (w.page, &w.objects));
            assert_eq!(v.think_s.map(|t| t / 100.0), w.think_s);
        }
    }
    assert!((scaled.mean_think_s() - logged.mean_think_s() / 100.0).abs() < 1e-12);
    let said = scaled.describe();
    assert!(
        said.contains("think times at 1/100 of the log's (mean 113 ms instead of 11.3 s"),
        "{said}"
    );
    assert!(!logged.describe().contains("think times at"));
}

#[test]
fn a_scale_reads_as_a_fraction_or_a_number() {
    assert_eq!(parse_think_scale("1/100"), Ok(0.01));
    assert_eq!(parse_think_scale("0.5"), Ok(0.5));
    assert_eq!(parse_think_scale(" 1 / 4 "), Ok(0.25));
    for bad in ["0", "-1", "1/0", "x", "1/", "nan", "inf"] {
        let err = parse_think_scale(bad).unwrap_err();
        assert!(err.contains("e.g. 1/100"), "{bad}: {err}");
    }
    assert_eq!(scale_words(0.01), "1/100");
    assert_eq!(scale_words(0.3), "0.3");
    assert_eq!(scale_words(2.0), "2");
}

#[test]
fn the_think_times_are_said_beside_the_users() {
    let surge = SessionModel::surge();
    let hundredth = SessionModel {
        think: Dist::Pareto {
            alpha: 1.5,
            scale: 0.01,
            max: Some(0.6),
        },
        ..surge
    };
    let said = Sessions::Model(hundredth).thinking();
    assert!(said.starts_with("thinking 10 ms-600 ms, mean 2"), "{said}");
    assert!(said.ends_with(": SURGE's at 1/100"), "{said}");
    let said = Sessions::Model(surge).thinking();
    assert!(said.starts_with("thinking 1 s-1 m, mean 2.6"), "{said}");
    assert!(said.ends_with(": SURGE's"), "{said}");
    let mine = SessionModel {
        think: Dist::Exponential { mean: 2.0 },
        ..surge
    };
    assert_eq!(
        Sessions::Model(mine).thinking(),
        "thinking exp(2), mean 2 s"
    );
    let said = Sessions::Logged(sample().with_think_scale(0.01)).thinking();
    assert_eq!(said, "thinking as the log's sessions at 1/100, mean 113 ms");
}
