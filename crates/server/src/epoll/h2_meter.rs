//! What each HTTP/2 stream's body has put into the socket, for its access-log line.
//!
//! h2 keeps a stream's DATA in its own buffers and says nothing of when they leave, so a
//! count of the bytes handed to h2 logged what the server held as sent (a client that read
//! nothing had most of its 100 streams logged at exactly 65 536 bytes, 10.5 MB for a
//! connection whose client got none). Here the transport under h2 is wrapped: the frames h2
//! writes are read on their way (a 9-byte header: length, type, flags, stream), DATA payload
//! is counted to its stream, and the count becomes "sent" once the transport has flushed it:
//! into the kernel's socket buffer under kTLS at once, under user-space TLS once rustls has
//! written its records out. That is what HTTP/1.1 logs too (what left for the socket, up to
//! the kernel's buffers); nothing finer is known without the kernel's per-byte
//! acknowledgements.
//!
//! Not here: the streams (`h2.rs`), which wait for their bytes to be flushed before their line
//! is logged.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// An HTTP/2 frame header's length (RFC 9113 §4.1), and DATA's type.
const FRAME_HEADER: usize = 9;
const DATA: u8 = 0;

/// The connection's account of DATA bytes per stream, shared by the transport and the streams.
#[derive(Default)]
pub(crate) struct Ledger {
    /// The frame header being read, and the payload bytes of the current frame still to come
    /// (with its stream when it is DATA).
    header: [u8; FRAME_HEADER],
    have: usize,
    payload_left: usize,
    data_of: Option<u32>,
    /// DATA bytes written to the transport and not yet flushed out of it, by stream, in order.
    unflushed: VecDeque<(u32, u64)>,
    /// Per stream: bytes flushed, and the stream waiting for a count (its total, its waker).
    streams: HashMap<u32, Account>,
    /// The connection has ended: nothing more will be flushed.
    closed: bool,
}

#[derive(Default)]
struct Account {
    flushed: u64,
    waiting: Option<(u64, Waker)>,
}

impl Ledger {
    /// Counts what h2 wrote (`bytes`, in order) to the streams whose DATA it carries.
    fn written(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.payload_left == 0 && self.have < FRAME_HEADER {
                let take = (FRAME_HEADER - self.have).min(bytes.len());
                self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
                self.have += take;
                bytes = &bytes[take..];
                if self.have == FRAME_HEADER {
                    self.begin_frame();
                }
                continue;
            }
            let take = self.payload_left.min(bytes.len());
            if let (Some(stream), true) = (self.data_of, take > 0) {
                match self.unflushed.back_mut() {
                    Some((last, n)) if *last == stream => *n += take as u64,
                    _ => self.unflushed.push_back((stream, take as u64)),
                }
            }
            self.payload_left -= take;
            bytes = &bytes[take..];
            if self.payload_left == 0 {
                self.have = 0;
            }
        }
    }

    fn begin_frame(&mut self) {
        let h = &self.header;
        let length = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        self.data_of = (h[3] == DATA).then_some(stream);
        self.payload_left = length;
        if length == 0 {
            self.have = 0;
        }
    }

    /// The transport flushed: what was written has left for the socket.
    fn flushed(&mut self) {
        while let Some((stream, n)) = self.unflushed.pop_front() {
            let account = self.streams.entry(stream).or_default();
            account.flushed += n;
            if let Some((total, _)) = &account.waiting {
                if account.flushed >= *total {
                    if let Some((_, waker)) = account.waiting.take() {
                        waker.wake();
                    }
                }
            }
        }
    }

    /// The connection has ended: every stream waiting has its count as it stands.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        for account in self.streams.values_mut() {
            if let Some((_, waker)) = account.waiting.take() {
                waker.wake();
            }
        }
    }

    /// Ready with the bytes flushed for `stream` (its account closed) once they reach `total`
    /// or the connection has ended.
    pub(crate) fn poll_flushed(&mut self, stream: u32, total: u64, cx: &Context) -> Poll<u64> {
        let account = self.streams.entry(stream).or_default();
        if account.flushed >= total || self.closed {
            return Poll::Ready(self.take(stream));
        }
        account.waiting = Some((total, cx.waker().clone()));
        Poll::Pending
    }

    /// The bytes flushed for `stream`, its account closed.
    pub(crate) fn take(&mut self, stream: u32) -> u64 {
        self.streams.remove(&stream).map_or(0, |a| a.flushed)
    }
}

/// The transport under h2, counting into a [`Ledger`].
pub(crate) struct Meter<T> {
    io: T,
    ledger: Rc<RefCell<Ledger>>,
}

impl<T> Meter<T> {
    pub(crate) fn new(io: T, ledger: Rc<RefCell<Ledger>>) -> Meter<T> {
        Meter { io, ledger }
    }
}

impl<T: AsyncWrite + Unpin> Meter<T> {
    /// After a write: if the transport flushes at once (kTLS always; rustls when the socket
    /// took its records), the bytes have left; if not, they leave with a later flush.
    fn try_flush(&mut self, cx: &mut Context<'_>) {
        if let Poll::Ready(Ok(())) = Pin::new(&mut self.io).poll_flush(cx) {
            self.ledger.borrow_mut().flushed();
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Meter<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Meter<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.io).poll_write(cx, buf))?;
        self.ledger.borrow_mut().written(&buf[..n]);
        self.try_flush(cx);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, bufs))?;
        let mut left = n;
        let mut ledger = self.ledger.borrow_mut();
        for buf in bufs {
            let take = left.min(buf.len());
            ledger.written(&buf[..take]);
            left -= take;
        }
        drop(ledger);
        self.try_flush(cx);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(Pin::new(&mut self.io).poll_flush(cx))?;
        self.ledger.borrow_mut().flushed();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, stream: u32, payload: usize) -> Vec<u8> {
        let mut out = (payload as u32).to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, 0]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.resize(out.len() + payload, 7);
        out
    }

    #[test]
    fn data_counts_to_its_stream_once_flushed_however_the_writes_split_it() {
        let mut bytes = frame(4, 0, 6); // SETTINGS
        bytes.extend(frame(1, 1, 20)); // HEADERS
        bytes.extend(frame(DATA, 1, 1000));
        bytes.extend(frame(DATA, 3, 16_384));
        bytes.extend(frame(DATA, 1, 0)); // END_STREAM, empty
        bytes.extend(frame(DATA, 3, 5));
        for step in [1, 7, 9, 100, bytes.len()] {
            let mut ledger = Ledger::default();
            for chunk in bytes.chunks(step) {
                ledger.written(chunk);
            }
            assert_eq!(ledger.take(1), 0, "counted before the flush");
            ledger.flushed();
            assert_eq!(
                (ledger.take(1), ledger.take(3)),
                (1000, 16_389),
                "step {step}"
            );
        }
    }

    #[test]
    fn a_stream_waits_for_its_bytes_or_the_connection_end() {
        let waker = Waker::noop();
        let cx = Context::from_waker(waker);
        let mut ledger = Ledger::default();
        ledger.written(&frame(DATA, 5, 100));
        assert!(ledger.poll_flushed(5, 100, &cx).is_pending());
        ledger.flushed();
        assert_eq!(ledger.poll_flushed(5, 100, &cx), Poll::Ready(100));
        ledger.written(&frame(DATA, 7, 100)[..50]);
        ledger.flushed();
        assert!(ledger.poll_flushed(7, 100, &cx).is_pending());
        ledger.close();
        assert_eq!(ledger.poll_flushed(7, 100, &cx), Poll::Ready(41));
    }
}
