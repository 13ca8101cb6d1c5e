//! Ctrl-C and SIGTERM as a flag: long work (a load run, a lab experiment) checks it and stops
//! cleanly, keeping what was measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;

/// A flag raised by SIGINT or SIGTERM.
pub fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    use tokio::signal::unix::{signal, SignalKind};
    let flag = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("cannot start the signal handler")?;
    let (mut interrupt, mut terminate) = {
        let _guard = runtime.enter();
        (
            signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
        )
    };
    let raised = Arc::clone(&flag);
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        });
        raised.store(true, Ordering::Relaxed);
    });
    Ok(flag)
}
