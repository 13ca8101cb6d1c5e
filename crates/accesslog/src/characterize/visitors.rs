//! The figures kept per client — requests per client ([`ClientCounter`]), sessions
//! ([`SessionCounter`]) and GoAccess's visitors ([`VisitorDays`]) — counted on a thread of
//! their own. Each is a lookup in a table of up to a million entries per request, a cache
//! miss apiece; together they were a fifth of the reader's one consumer thread, and nothing
//! else needs them. The consumer hands the client (inline: an address fits a
//! `CompactString`), the hashed client–agent pair, the day and the time over in batches; the
//! order is kept, so the figures are those of the counters alone (a test checks it). Counted
//! inline, on the caller's thread, where no thread can be started.

use compact_str::CompactString;

use super::clients::ClientCounter;
use super::daily::{VisitorDays, Visitors};
use super::sessions::{SessionCounter, Sessions, Visit};

/// Requests handed over at a time: the channel's cost is per batch.
pub(super) const BATCH: usize = 8192;

/// One entry as the per-client figures see it: its client, its visit (client and agent
/// hashed, time, page), its day in the log's zone, whether it had a readable request (a
/// session counts only those; a client, every entry) and whether it makes a visitor (not
/// answered 4xx, as GoAccess counts them).
#[derive(Debug)]
struct Seen {
    client: CompactString,
    visit: Visit,
    day: i64,
    request: bool,
    visitor: bool,
}

/// The three counters, wherever they run.
#[derive(Debug)]
struct Counters {
    clients: ClientCounter,
    sessions: SessionCounter,
    visitors: VisitorDays,
}

impl Counters {
    fn new(max_clients: usize, gap_s: i64) -> Counters {
        Counters {
            clients: ClientCounter::new(max_clients),
            sessions: SessionCounter::new(gap_s),
            visitors: VisitorDays::new(max_clients),
        }
    }

    fn count(&mut self, seen: Seen) {
        self.clients.add(&seen.client);
        if seen.visitor {
            self.visitors.add(seen.visit.key, seen.day);
        }
        if seen.request {
            self.sessions.visit(seen.visit);
        }
    }
}

/// What the per-client counters found.
#[derive(Debug)]
pub struct PerClient {
    /// Requests per client.
    pub clients: ClientCounter,
    /// Sessions and page views.
    pub sessions: Sessions,
    /// GoAccess's visitors.
    pub visitors: Visitors,
}

/// The per-client figures being counted.
#[derive(Debug)]
pub struct VisitorThread {
    batch: Vec<Seen>,
    tx: Option<crossbeam_channel::Sender<Vec<Seen>>>,
    counted: Option<std::thread::JoinHandle<Counters>>,
    inline: Option<Counters>,
}

impl VisitorThread {
    /// Clients counted exactly up to `max_clients`; sessions ended by `gap_s` seconds without
    /// a request.
    pub fn new(max_clients: usize, gap_s: i64) -> VisitorThread {
        let counters = move || Counters::new(max_clients, gap_s);
        let (tx, rx) = crossbeam_channel::bounded::<Vec<Seen>>(4);
        let spawned = std::thread::Builder::new()
            .name("visitors".into())
            .spawn(move || {
                let mut counted = counters();
                for batch in rx {
                    batch.into_iter().for_each(|s| counted.count(s));
                }
                counted
            });
        match spawned {
            Ok(handle) => VisitorThread {
                batch: Vec::with_capacity(BATCH),
                tx: Some(tx),
                counted: Some(handle),
                inline: None,
            },
            // Nothing is counted yet: the caller's thread starts from nothing as well.
            Err(_) => VisitorThread {
                batch: Vec::new(),
                tx: None,
                counted: None,
                inline: Some(counters()),
            },
        }
    }

    /// Counts an entry of `client` with user agent `agent` at Unix second `t`, on `day` of
    /// the log's zone, answered `status`; `path`: its path when it has a readable request (a
    /// session counts only those).
    pub fn add(
        &mut self,
        client: &str,
        agent: &str,
        (t, day): (i64, i64),
        status: u16,
        path: Option<&str>,
    ) {
        let seen = Seen {
            client: CompactString::from(client),
            visit: Visit::of(client, agent, t, path.unwrap_or("-")),
            day,
            request: path.is_some(),
            visitor: !(400..500).contains(&status),
        };
        if let Some(counters) = self.inline.as_mut() {
            counters.count(seen);
            return;
        }
        self.batch.push(seen);
        if self.batch.len() >= BATCH {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        if let Some(tx) = &self.tx {
            // A thread that is gone (it panicked) has its panic raised by `finish`.
            let _ = tx.send(batch);
        }
    }

    /// The clients counted, the sessions and the visitors, every session and day closed (the
    /// log has ended).
    pub fn finish(mut self) -> PerClient {
        let counters = match self.inline.take() {
            Some(counters) => counters,
            None => {
                self.hand_over();
                drop(self.tx.take());
                match self.counted.take().map(std::thread::JoinHandle::join) {
                    Some(Ok(counters)) => counters,
                    Some(Err(panic)) => std::panic::resume_unwind(panic),
                    // `new` gives a thread or inline counters; `finish` takes either once.
                    None => Counters::new(1, 1),
                }
            }
        };
        PerClient {
            clients: counters.clients,
            sessions: counters.sessions.finish(),
            visitors: counters.visitors.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_counts_as_the_counters_alone_do() {
        // More entries than a batch, from many clients, some without a request.
        let mut alone = Counters::new(1_000, 1_800);
        let mut threaded = VisitorThread::new(1_000, 1_800);
        for i in 0..3 * BATCH as u64 {
            let client = format!("10.0.{}.{}", (i * 7919) % 13, (i * 104_729) % 250);
            // Spread over three days, so that visitors are more than clients.
            let t = 1_700_000_000 + (i * 10) as i64;
            let day = t.div_euclid(86_400);
            let path = if i % 4 == 0 { "/page" } else { "/img.png" };
            let request = (i % 50 != 0).then_some(path);
            let status = if i % 7 == 0 { 404 } else { 200 };
            alone.count(Seen {
                client: CompactString::from(client.as_str()),
                visit: Visit::of(&client, "agent", t, request.unwrap_or("-")),
                day,
                request: request.is_some(),
                visitor: status != 404,
            });
            threaded.add(&client, "agent", (t, day), status, request);
        }
        let threaded = threaded.finish();
        assert_eq!(threaded.clients.figures(), alone.clients.figures());
        assert_eq!(threaded.sessions, alone.sessions.finish());
        assert_eq!(threaded.visitors, alone.visitors.finish());
        assert!(threaded.sessions.sessions > 0);
        let clients = threaded.clients.figures().distinct as u64;
        assert!(
            threaded.visitors.distinct > clients,
            "{:?}",
            threaded.visitors
        );
    }
}
