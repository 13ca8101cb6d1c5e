//! What a connection reads from and writes to: plain TCP (the raw-syscall path of `io.rs`),
//! user-space TLS (rustls), or kTLS (the kernel encrypts; the socket is written as plain TCP).
//!
//! The HTTP/1.1 loop calls the same four operations on each; only how bytes move differs.
//! Under user-space TLS a large file cannot go by sendfile (its bytes must pass through the
//! cipher): it is read in chunks and written through rustls, as nginx does without kTLS.
//! Under kTLS, sendfile works again, which is the point of the technique.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::files::read_at;
use crate::io::{self as rawio, Socket};

/// Bytes of a file read at a time to be encrypted in user space (four TLS records).
const TLS_CHUNK: u64 = 64 * 1024;

/// A connection's byte stream.
pub(crate) enum Transport {
    /// Plain TCP.
    Tcp(Socket),
    /// TLS in user space.
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    /// TLS in the kernel.
    Ktls(Box<ktls::KtlsStream<TcpStream>>),
}

impl Transport {
    /// Reads into `buf`'s spare capacity (at least `min_spare` made available), waiting until
    /// `deadline`. 0 means the peer closed.
    pub(crate) async fn read_some(
        &mut self,
        buf: &mut Vec<u8>,
        min_spare: usize,
        deadline: Instant,
    ) -> io::Result<usize> {
        match self {
            Transport::Tcp(socket) => rawio::read_some(socket, buf, min_spare, deadline).await,
            Transport::Tls(stream) => read_stream(&mut **stream, buf, min_spare, deadline).await,
            Transport::Ktls(stream) => read_stream(&mut **stream, buf, min_spare, deadline).await,
        }
    }

    /// Sends all of `data`; `more` says more follows at once (MSG_MORE on plain TCP).
    pub(crate) async fn write_all(
        &mut self,
        data: &[u8],
        more: bool,
        timeout: Duration,
    ) -> io::Result<()> {
        match self {
            Transport::Tcp(socket) => rawio::write_all(socket, data, more, timeout).await,
            Transport::Tls(stream) => write_stream(&mut **stream, data, timeout).await,
            Transport::Ktls(stream) => write_stream(&mut **stream, data, timeout).await,
        }
    }

    /// Sends the last `*left` bytes of `file` before `end`, lowering `*left` as they go
    /// (however it ends: the access log's bytes); `scratch` is the buffer user-space TLS reads
    /// the file into. It stops with bytes left only if the file shrank.
    pub(crate) async fn send_file(
        &mut self,
        file: &File,
        end: u64,
        left: &mut u64,
        timeout: Duration,
        scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        match self {
            Transport::Tcp(socket) => rawio::sendfile_all(socket, file, end, left, timeout).await,
            Transport::Ktls(stream) => {
                rawio::sendfile_stream(stream.get_ref(), file, end, left, timeout).await
            }
            Transport::Tls(stream) => {
                while *left > 0 {
                    let chunk = (*left).min(TLS_CHUNK);
                    scratch.clear();
                    let n = read_at(file, end - *left, chunk, scratch)?;
                    write_stream(&mut **stream, scratch, timeout).await?;
                    *left -= n;
                    if n < chunk {
                        break;
                    }
                }
                Ok(())
            }
        }
    }

    /// Before closing: TLS says close_notify, so the client knows the response was not cut
    /// short (RFC 8446 §6.1); plain TCP has nothing to say.
    pub(crate) async fn close(&mut self, timeout: Duration) {
        if !matches!(self, Transport::Tcp(_)) {
            self.shutdown_write(timeout).await;
        }
    }

    /// Makes the coming close a reset: the client stopped reading (`io::reset_on_close`).
    /// Under TLS nothing more is said (no close_notify): it would only queue behind the rest.
    pub(crate) fn reset_on_close(&self) {
        match self {
            Transport::Tcp(socket) => socket.reset_on_close(),
            Transport::Tls(stream) => rawio::reset_on_close(stream.get_ref().0.as_raw_fd()),
            Transport::Ktls(stream) => rawio::reset_on_close(stream.get_ref().as_raw_fd()),
        }
    }

    /// Ends the sending side: a FIN, after TLS's close_notify.
    pub(crate) async fn shutdown_write(&mut self, timeout: Duration) {
        match self {
            Transport::Tcp(socket) => socket.shutdown_write(),
            Transport::Tls(stream) => {
                let _ = tokio::time::timeout(timeout, stream.shutdown()).await;
            }
            Transport::Ktls(stream) => {
                let _ = tokio::time::timeout(timeout, stream.shutdown()).await;
            }
        }
    }
}

async fn read_stream<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    min_spare: usize,
    deadline: Instant,
) -> io::Result<usize> {
    buf.reserve(min_spare);
    match tokio::time::timeout_at(deadline, stream.read_buf(buf)).await {
        Ok(Ok(n)) => Ok(n),
        // A peer that closes without close_notify (as many do) has simply closed.
        Ok(Err(err)) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
        Ok(Err(err)) => Err(err),
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

async fn write_stream<S: AsyncWrite + Unpin>(
    stream: &mut S,
    data: &[u8],
    timeout: Duration,
) -> io::Result<()> {
    let write = async {
        stream.write_all(data).await?;
        stream.flush().await
    };
    tokio::time::timeout(timeout, write)
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
}
