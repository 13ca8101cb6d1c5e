//! MVA against published examples, with the books' own numbers.
//!
//! Figures are checked to 1e-3 relative, or to the book's rounding where it prints fewer
//! digits (see `common::published`). Where a book gives service times per visit and
//! visit counts, the model does too, and per-visit figures are converted with them.

// Tables are indexed [class][station], as the books print them.
#![allow(clippy::needless_range_loop)]

mod common;

use common::{dem, near, net, published, solve, st};
use webscope_model::mva::Method;

/// Lazowska, Zahorjan, Graham & Sevcik, Quantitative System Performance (1984), the
/// two-class example of §7.4 (p. 142): two queueing centers, one job of each class.
/// Class A visits them 10 and 9 times at 1/10 s and 1/3 s; class B 5 and 4 times at 2/5 s
/// and 1 s. The book's answers are exact fractions.
#[test]
fn qsp_two_class_exact() {
    let n = net(
        &[("A", 1, 0.0), ("B", 1, 0.0)],
        vec![
            st("cpu", 1, &[0.1, 0.4], &[10.0, 5.0]),
            st("disk", 1, &[1.0 / 3.0, 1.0], &[9.0, 4.0]),
        ],
    );
    let s = solve(&n, Method::Exact);
    near(s.classes[0].throughput, 3.0 / 19.0, 1e-12);
    near(s.classes[1].throughput, 2.0 / 19.0, 1e-12);
    let q = [[4.0 / 19.0, 15.0 / 19.0], [5.0 / 19.0, 14.0 / 19.0]];
    let residence = [[4.0 / 3.0, 5.0], [5.0 / 2.0, 7.0]];
    for class in 0..2 {
        for k in 0..2 {
            near(s.stations[k].queue_length[class], q[class][k], 1e-12);
            near(
                s.stations[k].residence_time[class],
                residence[class][k],
                1e-12,
            );
        }
    }
}

/// QSP §7.4, the same two-class network solved by the Bard-Schweitzer approximation.
/// (Printed values as reproduced in the Octave `queueing` package's tests.)
#[test]
fn qsp_two_class_schweitzer() {
    let n = net(
        &[("A", 1, 0.0), ("B", 1, 0.0)],
        vec![dem("cpu", 1, &[1.0, 2.0]), dem("disk", 1, &[3.0, 4.0])],
    );
    let s = solve(&n, Method::Schweitzer);
    published(s.stations[0].queue_length[0], "0.192");
    published(s.stations[1].queue_length[0], "0.808");
    published(s.stations[0].queue_length[1], "0.248");
    published(s.stations[1].queue_length[1], "0.752");
    published(s.classes[0].throughput, "0.154");
    published(s.classes[1].throughput, "0.104");
    published(s.classes[0].response_time, "6.508");
    published(s.classes[1].response_time, "9.614");
}

/// QSP §6.4 (p. 117): a terminal system, three centers, N = 3 users thinking 15 s, solved
/// by Schweitzer's approximation.
#[test]
fn qsp_single_class_schweitzer() {
    let n = net(
        &[("users", 3, 15.0)],
        vec![
            dem("cpu", 1, &[0.605]),
            dem("disk1", 1, &[2.1]),
            dem("disk2", 1, &[1.35]),
        ],
    );
    let s = solve(&n, Method::Schweitzer);
    published(s.stations[0].queue_length[0], "0.0973");
    published(s.stations[1].queue_length[0], "0.4021");
    published(s.stations[2].queue_length[0], "0.2359");
    published(s.classes[0].throughput, "0.1510");
    published(s.classes[0].response_time, "4.87");
}

/// Bolch, Greiner, de Meer & Trivedi, Queueing Networks and Markov Chains (2nd ed.),
/// Example 8.3 (p. 331): a central-server model with K = 6 jobs.
#[test]
fn bolch_8_3_central_server() {
    let visits = [1.0, 0.4, 0.2, 0.1];
    let n = net(
        &[("jobs", 6, 0.0)],
        vec![
            st("cpu", 1, &[0.02], &[visits[0]]),
            st("disk1", 1, &[0.2], &[visits[1]]),
            st("disk2", 1, &[0.4], &[visits[2]]),
            st("disk3", 1, &[0.6], &[visits[3]]),
        ],
    );
    let s = solve(&n, Method::Exact);
    let x0 = s.classes[0].throughput;
    let u = ["0.198", "0.794", "0.794", "0.595"];
    let r_per_visit = ["0.025", "0.570", "1.140", "1.244"];
    let q = ["0.244", "2.261", "2.261", "1.234"];
    let x = ["9.920", "3.968", "1.984", "0.992"];
    for k in 0..4 {
        published(s.stations[k].utilization[0], u[k]);
        published(s.stations[k].residence_time[0] / visits[k], r_per_visit[k]);
        published(s.stations[k].queue_length[0], q[k]);
        published(x0 * visits[k], x[k]);
    }
}

/// Bolch et al., Example 8.4 (p. 333): the same kind of network with a two-server station
/// and a delay (infinite server), K = 3 jobs: load-dependent MVA.
#[test]
fn bolch_8_4_multiserver() {
    let visits = [1.0, 0.5, 0.5, 1.0];
    let n = net(
        &[("jobs", 3, 0.0)],
        vec![
            st("cpu", 2, &[0.5], &[visits[0]]),
            st("disk1", 1, &[0.6], &[visits[1]]),
            st("disk2", 1, &[0.8], &[visits[2]]),
            st("terminals", 0, &[1.0], &[visits[3]]),
        ],
    );
    let s = solve(&n, Method::Exact);
    let q = ["0.624", "0.473", "0.686", "1.217"];
    let x = ["1.218", "0.609", "0.609", "1.218"];
    for k in 0..4 {
        published(s.stations[k].queue_length[0], q[k]);
        published(s.classes[0].throughput * visits[k], x[k]);
    }
}

/// Bolch et al., the two-class network with a two-server station (FCFS, the same service
/// time for both classes), a single server and a delay; N = (2, 1). Published as the
/// multiclass example on p. 337 (numbers as in the Octave `queueing` package's tests).
#[test]
fn bolch_two_class_multiserver() {
    let n = net(
        &[("one", 2, 0.0), ("two", 1, 0.0)],
        vec![
            st("cpu", 2, &[0.2, 0.2], &[1.0, 1.0]),
            st("disk", 1, &[0.4, 0.6], &[0.6, 0.3]),
            st("terminals", 0, &[1.0, 2.0], &[0.4, 0.7]),
        ],
    );
    assert!(n.stations()[0].exact_solvable());
    let s = solve(&n, Method::Exact);
    let q = [["0.428", "0.726", "0.845"], ["0.108", "0.158", "0.734"]];
    for class in 0..2 {
        for k in 0..3 {
            published(s.stations[k].queue_length[class], q[class][k]);
        }
    }
    published(s.classes[0].throughput, "2.113");
    published(s.classes[1].throughput, "0.524");
}

/// Menascé, Almeida & Dowdy, Performance by Design (2004), §12.3: the database server
/// (CPU 10 s, fast disk 15 s, slow disk 30 s per visit; 1, 0.5, 0.5 visits) with two
/// customers. The book gets the same queue lengths from the Markov chain of §12.2.
#[test]
fn menasce_database_server() {
    let visits = [1.0, 0.5, 0.5];
    let n = net(
        &[("transactions", 2, 0.0)],
        vec![
            st("cpu", 1, &[10.0], &[visits[0]]),
            st("fast disk", 1, &[15.0], &[visits[1]]),
            st("slow disk", 1, &[30.0], &[visits[2]]),
        ],
    );
    let s = solve(&n, Method::Exact);
    published(s.stations[0].queue_length[0], "0.5913");
    published(s.stations[1].queue_length[0], "0.4174");
    published(s.stations[2].queue_length[0], "0.9913");
}

/// Jain, The Art of Computer Systems Performance Analysis (1991), the timesharing system
/// of ch. 34 (p. 577): 20 users thinking 4 s, CPU and two disks.
#[test]
fn jain_timesharing() {
    let visits = [16.0, 10.0, 5.0];
    let n = net(
        &[("users", 20, 4.0)],
        vec![
            st("cpu", 1, &[0.125], &[visits[0]]),
            st("disk a", 1, &[0.3], &[visits[1]]),
            st("disk b", 1, &[0.2], &[visits[2]]),
        ],
    );
    let s = solve(&n, Method::Exact);
    let r = ["0.373", "4.854", "0.300"];
    let q = ["1.991", "16.177", "0.500"];
    for k in 0..3 {
        published(s.stations[k].residence_time[0] / visits[k], r[k]);
        published(s.stations[k].queue_length[0], q[k]);
    }
}
