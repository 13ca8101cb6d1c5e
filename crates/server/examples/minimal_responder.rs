//! The ceiling for `webscope serve` in benchmarks: a responder that reads whatever arrives and
//! answers each read with one fixed, prebuilt 1 KiB response. No parsing, no files, no log, no
//! timing; the same threading as the server (one current-thread runtime per worker, one
//! SO_REUSEPORT listener each) and the same syscall discipline (recv, one send, the short-read
//! readiness trick), so the difference to the server is the server's own work.
//!
//! Not a server: it answers anything, even garbage, and assumes one request per read (true for
//! wrk without pipelining). Usage: `minimal_responder ADDR:PORT [WORKERS]`.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::{TcpListener, TcpStream};

fn response() -> Vec<u8> {
    let body = vec![b'x'; 1024];
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nServer: minimal\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

async fn connection(stream: TcpStream, reply: &'static [u8]) -> io::Result<()> {
    let mut buf = vec![0u8; 4096];
    loop {
        let mut got = None;
        let result = stream.try_io(Interest::READABLE, || {
            // SAFETY: recv into our own buffer of its length.
            let n =
                unsafe { libc::recv(stream.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            got = Some(n as usize);
            if (n as usize) < buf.len() {
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(())
            }
        });
        match (got, result) {
            (Some(0), _) => return Ok(()),
            (Some(_), _) => {
                let mut sent = 0;
                while sent < reply.len() {
                    match stream.try_write(&reply[sent..]) {
                        Ok(n) => sent += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            stream.writable().await?
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            (None, Err(e)) if e.kind() == io::ErrorKind::WouldBlock => stream.readable().await?,
            (None, Err(e)) => return Err(e),
            (None, Ok(())) => {}
        }
    }
}

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| io::Error::other("usage: minimal_responder ADDR:PORT [WORKERS]"))?;
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let reply: &'static [u8] = Box::leak(response().into_boxed_slice());
    let mut threads = Vec::new();
    for _ in 0..workers {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(4096)?;
        let std_listener: std::net::TcpListener = socket.into();
        threads.push(std::thread::spawn(move || -> io::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, async move {
                let listener = TcpListener::from_std(std_listener)?;
                loop {
                    let (stream, _) = listener.accept().await?;
                    tokio::task::spawn_local(async move {
                        let _ = connection(stream, reply).await;
                    });
                }
            })
        }));
    }
    println!("minimal_responder: listening on http://{addr}");
    for thread in threads {
        thread
            .join()
            .map_err(|_| io::Error::other("worker panicked"))??;
    }
    Ok(())
}
