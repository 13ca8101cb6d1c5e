//! The admin listener (`--admin ADDR:PORT`): `/metrics` (Prometheus text) and `/stats.json`.
//!
//! It runs on its own thread and runtime with its own listener, so it never shares the data
//! listener's limits or workers, and a scrape never waits behind client traffic. Each
//! response closes its connection: scrapers are few and seldom.

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use webscope_http::head;
use webscope_http::request::{self, Limits, Method};

use crate::metrics::{self, Info};
use std::sync::Arc;

use crate::services::ServiceStats;
use crate::timing::{self, SharedStats};

/// A running admin endpoint.
pub(crate) struct Admin {
    pub addr: SocketAddr,
    thread: JoinHandle<()>,
}

impl Admin {
    pub(crate) fn join(self) {
        let _ = self.thread.join();
    }
}

/// Starts serving on `listener` until `stop` turns true.
pub(crate) fn start(
    listener: std::net::TcpListener,
    stats: Vec<SharedStats>,
    services: Option<Arc<ServiceStats>>,
    info: Info,
    stop: watch::Receiver<bool>,
) -> std::io::Result<Admin> {
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let thread = std::thread::Builder::new()
        .name("webscope-admin".into())
        .spawn(move || runtime.block_on(serve(listener, stats, services, info, stop)))?;
    Ok(Admin { addr, thread })
}

async fn serve(
    listener: std::net::TcpListener,
    stats: Vec<SharedStats>,
    services: Option<Arc<ServiceStats>>,
    info: Info,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = stop.wait_for(|&s| s) => return,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    // One at a time: a scrape takes microseconds.
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        answer(stream, &stats, services.as_deref(), &info),
                    )
                    .await;
                }
            }
        }
    }
}

async fn answer(
    mut stream: TcpStream,
    stats: &[SharedStats],
    services: Option<&ServiceStats>,
    info: &Info,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let limits = Limits::default();
    let (status, content_type, body, head_only) = loop {
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
        match request::parse(&buf, &limits) {
            Ok(None) => continue,
            Err(err) => break (err.status(), "text/plain", String::new(), false),
            Ok(Some(req)) => break route(&req, stats, services, info),
        }
    };
    let mut out = Vec::with_capacity(body.len() + 256);
    head::begin(&mut out, status);
    head::field(&mut out, "Content-Type", content_type.as_bytes());
    head::content_length(&mut out, body.len() as u64);
    if status == 405 {
        head::field(&mut out, "Allow", b"GET, HEAD");
    }
    out.extend_from_slice(b"Connection: close\r\n");
    head::end(&mut out);
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    stream.write_all(&out).await?;
    stream.shutdown().await
}

fn route(
    req: &request::Request<'_>,
    stats: &[SharedStats],
    services: Option<&ServiceStats>,
    info: &Info,
) -> (u16, &'static str, String, bool) {
    let figures = services.map(ServiceStats::snapshot);
    let head_only = req.method == Method::Head;
    if !matches!(req.method, Method::Get | Method::Head) {
        return (405, "text/plain", "GET or HEAD\n".into(), head_only);
    }
    let path = req.target.split('?').next().unwrap_or("");
    match path {
        "/metrics" => {
            let merged = timing::merged(stats);
            let mut text = metrics::prometheus(&merged, info);
            if let Some(figures) = &figures {
                metrics::prometheus_services(&mut text, figures);
            }
            (
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                text,
                head_only,
            )
        }
        "/stats.json" => {
            let merged = timing::merged(stats);
            let mut value = metrics::json(&merged, info);
            if let Some(figures) = &figures {
                value["services"] = metrics::json_services(figures);
            }
            let mut text = value.to_string();
            text.push('\n');
            (200, "application/json", text, head_only)
        }
        "/" => (
            200,
            "text/plain; charset=utf-8",
            "webscope serve admin: /metrics (Prometheus text), /stats.json\n".into(),
            head_only,
        ),
        _ => (404, "text/plain", "not found\n".into(), head_only),
    }
}
