//! A build without the `kernel` feature: asking for the kernel module is refused in one line
//! that says how to build it, and where WEBSCOPE_REQUIRE_KERNEL is set (CI) this build is the
//! wrong one, so the test fails rather than let the kernel tests vanish unseen.
#![cfg(not(feature = "kernel"))]

use webscope_monitor::{Config, Monitor};

#[test]
fn without_the_feature_the_kernel_module_is_refused_in_one_line() {
    assert!(
        std::env::var_os("WEBSCOPE_REQUIRE_KERNEL").is_none(),
        "WEBSCOPE_REQUIRE_KERNEL is set but webscope-monitor was built without its `kernel` \
         feature: run the tests with --features webscope/kernel (the README's command)"
    );
    let refused = Monitor::start(Config {
        ports: vec![8080],
        kernel: true,
        ..Config::default()
    });
    let message = match refused {
        Ok(_) => panic!("a monitor without the kernel module started with kernel on"),
        Err(err) => err.to_string(),
    };
    assert!(
        message.contains("built without the kernel module"),
        "{message}"
    );
    assert!(message.contains("--features kernel"), "{message}");
    assert!(!message.contains('\n'), "{message}");
    // The rest of the monitor is there: the same request without the kernel starts.
    let monitor = Monitor::start(Config {
        ports: vec![8080],
        ..Config::default()
    })
    .expect("the monitor starts without the kernel module");
    drop(monitor);
}
