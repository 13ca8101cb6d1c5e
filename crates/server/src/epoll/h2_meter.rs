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
//! The same wrapper counts what the client sends, for the flood rule (`h2_guard.rs`): the
//! frames read, and the DATA frames written, which allow the client more WINDOW_UPDATEs.
//!
//! Not here: the streams (`h2.rs`), which wait for their bytes to be flushed before their line
//! is logged; the frame walk (`h2_frames.rs`).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::h2_frames::{Seen, Walk, DATA};
use super::h2_guard::Guard;

/// The connection's account of DATA bytes per stream, shared by the transport and the streams.
#[derive(Default)]
pub(crate) struct Ledger {
    /// Where the frames h2 writes are.
    walk: Walk,
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
    /// Counts what h2 wrote (`bytes`, in order) to the streams whose DATA it carries;
    /// returns how many DATA frames began in them.
    fn written(&mut self, bytes: &[u8]) -> u64 {
        let mut frames = 0;
        let unflushed = &mut self.unflushed;
        self.walk.feed(bytes, |seen| match seen {
            Seen::Head(head) if head.kind == DATA => frames += 1,
            Seen::Payload(head, n) if head.kind == DATA && n > 0 => match unflushed.back_mut() {
                Some((last, count)) if *last == head.stream => *count += n as u64,
                _ => unflushed.push_back((head.stream, n as u64)),
            },
            _ => {}
        });
        frames
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

/// The transport under h2, counting into a [`Ledger`] and a [`Guard`].
pub(crate) struct Meter<T> {
    io: T,
    ledger: Rc<RefCell<Ledger>>,
    guard: Guard,
    /// Told once the guard finds a flood: the connection's loop ends the connection.
    flood: Rc<Notify>,
}

impl<T> Meter<T> {
    pub(crate) fn new(io: T, ledger: Rc<RefCell<Ledger>>, flood: Rc<Notify>) -> Meter<T> {
        Meter {
            io,
            ledger,
            guard: Guard::default(),
            flood,
        }
    }

    fn wrote(&mut self, bytes: &[u8]) {
        let frames = self.ledger.borrow_mut().written(bytes);
        self.guard.sent_data(frames);
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
        // A flooding client is read no more: h2 sends its GOAWAY and closes.
        if self.guard.tripped() {
            return Poll::Pending;
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.io).poll_read(cx, buf))?;
        if self.guard.read(&buf.filled()[before..]) {
            self.flood.notify_one();
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Meter<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.io).poll_write(cx, buf))?;
        self.wrote(&buf[..n]);
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
        for buf in bufs {
            let take = left.min(buf.len());
            self.wrote(&buf[..take]);
            left -= take;
        }
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
    use super::super::h2_frames::tests;
    use super::*;

    fn frame(kind: u8, stream: u32, payload: usize) -> Vec<u8> {
        tests::frame(kind, 0, stream, payload)
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
