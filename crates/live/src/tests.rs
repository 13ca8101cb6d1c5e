use super::*;

use std::io::{Read, Write};
use std::net::TcpStream;

fn get(addr: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

fn addr(live: &Live) -> String {
    live.url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

#[test]
fn addresses_default_to_loopback() {
    assert_eq!(parse_addr("8089").unwrap().to_string(), "127.0.0.1:8089");
    assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
    assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
    let err = parse_addr("nowhere").unwrap_err().to_string();
    assert!(err.contains("give PORT or HOST:PORT"), "{err}");
}

#[test]
fn serves_the_page_and_the_state_and_refuses_the_rest() {
    let live = Live::start("127.0.0.1:0", "load", "a test", Duration::from_secs(1)).unwrap();
    let a = addr(&live);
    let (head, body) = get(&a, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("<title>webscope live</title>"));
    // Self-contained: nothing is loaded from elsewhere.
    assert!(!body.contains("http://") && !body.contains("https://") && !body.contains("src="));

    live.push(
        Point {
            t_s: 1.0,
            requests_per_s: 1234.5,
            p99_us: 870.0,
            ..Point::default()
        },
        1234,
        2,
        Some(9.0),
        None,
    );
    let (head, body) = get(&a, "/state.json");
    assert!(head.contains("application/json"), "{head}");
    let state: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["title"], "a test");
    assert_eq!(state["requests"], 1234);
    assert_eq!(state["errors"], 2);
    assert_eq!(state["points"][0]["p99_us"], 870.0);
    assert_eq!(state["time_left_s"], 9.0);
    assert_eq!(state["seq"], 1);

    assert!(get(&a, "/nope").0.starts_with("HTTP/1.1 404"));
    let mut stream = TcpStream::connect(&a).unwrap();
    stream.write_all(b"BREW / HTTP/1.1\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 405"), "{text}");
    let mut stream = TcpStream::connect(&a).unwrap();
    stream.write_all(b"\x16\x03\x01garbage\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    // A connection's thread counts its answer after sending it: wait for the count, do not
    // race it (this failed with a build running beside it).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while live.cost().polls < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(live.cost().polls >= 4, "{}", live.cost().polls);
}

#[test]
fn a_client_that_connects_and_says_nothing_delays_no_one() {
    let live = Live::start("127.0.0.1:0", "load", "t", Duration::from_secs(1)).unwrap();
    let a = addr(&live);
    let _silent: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&a).unwrap()).collect();
    // A browser gone mid-request: connect, send half a head, close.
    let mut gone = TcpStream::connect(&a).unwrap();
    gone.write_all(b"GET /state.js").unwrap();
    drop(gone);
    let began = Instant::now();
    let (head, _) = get(&a, "/state.json");
    assert!(head.starts_with("HTTP/1.1 200"));
    assert!(
        began.elapsed() < SOCKET_WAIT,
        "a poll waited {:?} behind idle connections",
        began.elapsed()
    );
}

/// Well below the 2-s socket timeout that a serial server would make a poll wait.
const SOCKET_WAIT: Duration = Duration::from_millis(1500);

#[test]
fn stopping_closes_the_port() {
    let live = Live::start("127.0.0.1:0", "load", "t", Duration::from_secs(1)).unwrap();
    let a = addr(&live);
    let flag = AtomicBool::new(true);
    let cost = live.linger(Duration::from_secs(5), &flag);
    assert_eq!(cost.polls, 0);
    assert!(TcpStream::connect(&a).is_err());
}

#[test]
fn the_cost_line_names_the_monitor_only_where_the_page_started_one() {
    let with = Cost {
        polls: 12,
        cpu_s: 0.004,
        monitor_cpu_s: 0.001,
    };
    assert_eq!(
        with.line("the generator's", 2.5),
        "live page: 12 requests answered; 5.0 ms of CPU (page 4.0 ms, its monitor 1.0 ms) = 0.200 % of the generator's 2.50 s"
    );
    let without = Cost {
        monitor_cpu_s: 0.0,
        ..with
    };
    assert_eq!(
        without.line("this process's", 8.0),
        "live page: 12 requests answered; 4.0 ms of CPU = 0.050 % of this process's 8.00 s"
    );
}
