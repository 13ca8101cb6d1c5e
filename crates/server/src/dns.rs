//! Reverse DNS for host-name logging (Apache's `HostnameLookups On`): the client's address
//! turned into a name with the system resolver (`getnameinfo`, which reads /etc/hosts and asks
//! DNS as nsswitch.conf says).
//!
//! Without the `dns-cache` technique every request waits for its own lookup on the worker, as
//! the paper's baseline Apache did. With it, names come from a bounded cache shared by the
//! workers; a miss is logged with the numeric address while a resolver thread, off the request
//! path, looks the name up for the next request.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Lookups waiting for the resolver thread; beyond this, misses are not queued (the address is
/// logged numerically until a later miss gets through).
const QUEUE: usize = 256;

/// Looks a name up now, blocking: `getnameinfo(3)` without flags, so an address without a name
/// comes back in numeric form.
pub(crate) fn lookup(ip: IpAddr) -> String {
    let addr = socket2::SockAddr::from(SocketAddr::new(ip, 0));
    let mut host = [0 as libc::c_char; 1025]; // NI_MAXHOST
                                              // SAFETY: a valid sockaddr and its length, and a host buffer with its length; no service.
    let rc = unsafe {
        libc::getnameinfo(
            addr.as_ptr().cast(),
            addr.len(),
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            0,
        )
    };
    if rc != 0 {
        return ip.to_string();
    }
    // SAFETY: getnameinfo wrote a NUL-terminated string into `host`.
    let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) };
    name.to_string_lossy().into_owned()
}

/// The shared, bounded cache of names and its resolver thread.
#[derive(Debug)]
pub(crate) struct DnsCache {
    names: Arc<Mutex<HashMap<IpAddr, Arc<str>>>>,
    queue: Option<SyncSender<IpAddr>>,
    resolver: Option<JoinHandle<()>>,
}

impl DnsCache {
    /// A cache of at most `capacity` names (random eviction beyond).
    pub fn start(capacity: usize) -> std::io::Result<DnsCache> {
        let names = Arc::new(Mutex::new(HashMap::new()));
        let (queue, requests) = sync_channel(QUEUE);
        let shared = Arc::clone(&names);
        let resolver = std::thread::Builder::new()
            .name("webscope-dns".into())
            .spawn(move || resolve_loop(&requests, &shared, capacity.max(1)))?;
        Ok(DnsCache {
            names,
            queue: Some(queue),
            resolver: Some(resolver),
        })
    }

    /// The name for `ip` if known; otherwise asks the resolver thread and returns None.
    pub fn get(&self, ip: IpAddr) -> Option<Arc<str>> {
        if let Ok(names) = self.names.lock() {
            if let Some(name) = names.get(&ip) {
                return Some(Arc::clone(name));
            }
        }
        if let Some(queue) = &self.queue {
            match queue.try_send(ip) {
                Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
            }
        }
        None
    }

    /// How many names are cached.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.names.lock().map_or(0, |n| n.len())
    }

    /// Whether no name is cached.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for DnsCache {
    fn drop(&mut self) {
        self.queue = None;
        if let Some(resolver) = self.resolver.take() {
            let _ = resolver.join();
        }
    }
}

fn resolve_loop(
    requests: &Receiver<IpAddr>,
    names: &Mutex<HashMap<IpAddr, Arc<str>>>,
    capacity: usize,
) {
    while let Ok(ip) = requests.recv() {
        if names.lock().map_or(true, |n| n.contains_key(&ip)) {
            continue;
        }
        let name: Arc<str> = lookup(ip).into();
        if let Ok(mut names) = names.lock() {
            while names.len() >= capacity {
                let Some(victim) = names.keys().next().copied() else {
                    break;
                };
                names.remove(&victim);
            }
            names.insert(ip, name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn loopback_has_a_name() {
        let name = lookup("127.0.0.1".parse().unwrap());
        assert!(!name.is_empty());
    }

    #[test]
    fn misses_are_resolved_off_the_caller_and_the_cache_stays_bounded() {
        let cache = DnsCache::start(3).unwrap();
        let ips: Vec<IpAddr> = (1..=6)
            .map(|i| format!("127.0.0.{i}").parse().unwrap())
            .collect();
        assert!(cache.get(ips[0]).is_none(), "a miss answers at once");
        let deadline = Instant::now() + Duration::from_secs(10);
        while cache.get(ips[0]).is_none() {
            assert!(Instant::now() < deadline, "the resolver never answered");
            std::thread::sleep(Duration::from_millis(10));
        }
        for &ip in &ips {
            let _ = cache.get(ip);
        }
        std::thread::sleep(Duration::from_millis(300));
        for &ip in &ips {
            let _ = cache.get(ip);
        }
        std::thread::sleep(Duration::from_millis(300));
        assert!(cache.len() <= 3, "{} names cached, bound 3", cache.len());
        assert!(!cache.is_empty());
    }
}
