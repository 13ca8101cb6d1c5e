//! `webscope load --cpu LIST` (#52 §6): the generator pinned as `taskset -c` pins, its
//! threads' default count the CPUs it was given, and the summary saying whether the server
//! (here `webscope serve` pinned to CPU 0) may run on the same CPUs.

mod lab_support;

use lab_support::{webscope, Served};

fn load(url: &str, cpu: &str) -> std::process::Output {
    webscope()
        .args(["load", url, "-d", "1s", "-c", "2", "--cpu", cpu])
        .output()
        .unwrap()
}

#[test]
fn the_generator_is_pinned_and_says_whether_it_shares_a_cpu_with_the_server() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    assert!(
        cpus >= 2,
        "this test needs two CPUs to put the server and the generator apart ({cpus} here)"
    );
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.html"), "hello").unwrap();
    let served = Served::start_with(root.path(), &[], Some(0));
    let url = format!("{}a.html", served.base_url);
    let port = url
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .unwrap();

    let apart = load(&url, "1");
    let said = String::from_utf8_lossy(&apart.stdout);
    assert!(
        apart.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&apart.stderr)
    );
    // One CPU given: one thread by default.
    assert!(said.contains("with 2 connections on 1 thread"), "{said}");
    assert!(
        said.contains(&format!(
            "CPUs: the generator on 1, the server (webscope, port {port}) on 0: apart"
        )),
        "{said}"
    );

    let shared = load(&url, "0-1");
    let said = String::from_utf8_lossy(&shared.stdout);
    assert!(shared.status.success(), "{said}");
    assert!(said.contains("on 2 threads"), "{said}");
    assert!(
        said.contains(&format!(
            "CPUs: the generator on 0-1 shares 0 with the server (webscope, port {port}, which may run on 0)"
        )),
        "{said}"
    );
    served.stop();
}

#[test]
fn a_cpu_this_process_may_not_use_is_one_line_and_exit_1() {
    let out = webscope()
        .args(["load", "http://127.0.0.1:9/", "-d", "1s", "--cpu", "1023"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--cpu 1023: CPU 1023 is not one this process may use (it may use "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = webscope()
        .args(["load", "http://127.0.0.1:9/", "--cpu", "3-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a range runs downwards"));
}
