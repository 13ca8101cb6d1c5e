//! Where the requests come from, as Arlitt & Williamson's last two invariants ask it: the
//! share from remote hosts, and how concentrated the usage is over domains.
//!
//! A log holds only the client field (`%h`), so both are readings of it, said on the page:
//! - **local** is what is on the server's own side of any network: a loopback, private
//!   (RFC 1918), link-local or unique-local address, or a host name without a dot or under
//!   `.local`, `.localdomain`, `.internal`, `.lan` or `.home.arpa`. The paper's "local" was
//!   the site's own organisation (its campus domain); a log does not say which that is, so a
//!   public client of the site's own organisation counts as remote here.
//! - a **domain** is a host name's registered domain (its last two labels, or three under a
//!   country code with a short second level such as `co.uk`), or an address's network: the
//!   /24 of an IPv4 address, the /48 of an IPv6 one (a site's usual allocation).
//!
//! Fed one client at a time ([`HostTally::add`]), with a count, so that a streaming reader
//! can feed it per entry or per distinct client; it keeps one counter per domain.

// foldhash, not std's SipHash: one lookup per distinct client at the end of a run, a tenth
// of its last step with SipHash at 150 000 clients.
use foldhash::HashMap;
use std::net::IpAddr;

/// The host figures. Neither addresses nor domains are reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Hosts {
    /// Requests counted.
    pub requests: u64,
    /// Of them, from remote clients (see the module's doc for what is local).
    pub remote_requests: u64,
    /// Distinct domains (host names' domains, addresses' /24 or /48 networks).
    pub domains: usize,
    /// Share of the requests from the busiest 10 % of domains (at least one).
    pub top10_domain_share: f64,
}

/// Counts requests by client as they come.
#[derive(Debug, Clone, Default)]
pub struct HostTally {
    requests: u64,
    remote: u64,
    domains: HashMap<String, u64>,
}

impl HostTally {
    /// Counts `requests` from `client` (a logged `%h`).
    pub fn add(&mut self, client: &str, requests: u64) {
        self.requests += requests;
        if !is_local(client) {
            self.remote += requests;
        }
        *self.domains.entry(domain(client)).or_insert(0) += requests;
    }

    /// The figures.
    pub fn finish(self) -> Hosts {
        let mut counts: Vec<u64> = self.domains.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = counts.iter().take(counts.len().div_ceil(10)).sum();
        Hosts {
            requests: self.requests,
            remote_requests: self.remote,
            domains: counts.len(),
            top10_domain_share: if self.requests > 0 {
                top as f64 / self.requests as f64
            } else {
                0.0
            },
        }
    }
}

impl<'a> FromIterator<&'a str> for HostTally {
    /// One request from each client given.
    fn from_iter<I: IntoIterator<Item = &'a str>>(clients: I) -> Self {
        let mut t = HostTally::default();
        for c in clients {
            t.add(c, 1);
        }
        t
    }
}

/// The address a client field holds, if it holds one (`[::1]` and `fe80::1%eth0` too).
fn address(client: &str) -> Option<IpAddr> {
    let bare = client.trim_start_matches('[').trim_end_matches(']');
    let bare = bare.split_once('%').map_or(bare, |(a, _)| a);
    bare.parse().ok()
}

/// Whether a client is on the server's own side (see the module's doc).
pub fn is_local(client: &str) -> bool {
    match address(client) {
        Some(IpAddr::V4(a)) => a.is_loopback() || a.is_private() || a.is_link_local(),
        Some(IpAddr::V6(a)) => match a.to_ipv4_mapped() {
            Some(v4) => is_local(&v4.to_string()),
            None => {
                let first = a.segments()[0];
                a.is_loopback() || first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
            }
        },
        None => {
            let name = client.trim_end_matches('.').to_ascii_lowercase();
            !name.contains('.')
                || [".local", ".localdomain", ".internal", ".lan", ".home.arpa"]
                    .iter()
                    .any(|s| name.ends_with(s))
        }
    }
}

/// The domain a client is counted under (see the module's doc).
pub fn domain(client: &str) -> String {
    match address(client) {
        Some(IpAddr::V4(a)) => {
            let o = a.octets();
            format!("{}.{}.{}.0/24", o[0], o[1], o[2])
        }
        Some(IpAddr::V6(a)) => {
            let s = a.segments();
            format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
        }
        None => {
            let name = client.trim_end_matches('.').to_ascii_lowercase();
            let labels: Vec<&str> = name.rsplit('.').collect();
            let country_second_level = labels.len() >= 3
                && labels[0].len() == 2
                && (labels[1].len() <= 3 || labels[1] == "gouv");
            let keep = if country_second_level { 3 } else { 2 };
            let mut kept: Vec<&str> = labels.into_iter().take(keep).collect();
            kept.reverse();
            kept.join(".")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_is_loopback_private_link_local_or_a_name_without_a_domain() {
        for local in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.9",
            "192.168.1.1",
            "169.254.3.4",
            "::1",
            "[::1]",
            "fd12:3456::1",
            "fe80::1%eth0",
            "::ffff:10.0.0.1",
            "intranet-pc",
            "printer.local",
            "build.corp.internal",
        ] {
            assert!(is_local(local), "{local}");
        }
        for remote in [
            "8.8.8.8",
            "172.32.0.1",
            "2001:db8::1",
            "::ffff:93.184.216.34",
            "cache.example.com",
        ] {
            assert!(!is_local(remote), "{remote}");
        }
    }

    #[test]
    fn domains_of_names_and_networks_of_addresses() {
        assert_eq!(domain("proxy3.cs.uwaterloo.ca"), "uwaterloo.ca");
        assert_eq!(domain("www.bbc.co.uk"), "bbc.co.uk");
        assert_eq!(domain("host.example.de"), "example.de");
        assert_eq!(domain("PPP12.Example.COM."), "example.com");
        assert_eq!(domain("192.0.2.17"), "192.0.2.0/24");
        assert_eq!(domain("2001:db8:abcd:12::5"), "2001:db8:abcd::/48");
        assert_eq!(domain("localhost"), "localhost");
    }

    #[test]
    fn remote_share_and_domain_concentration() {
        let mut t = HostTally::default();
        // Twenty domains: one sends 80 requests, nineteen send 1 each; a local client 1.
        t.add("a.big.example.com", 50);
        t.add("b.big.example.com", 30);
        for i in 0..19 {
            t.add(&format!("198.51.{i}.7"), 1);
        }
        t.add("10.0.0.1", 1);
        let h = t.finish();
        assert_eq!((h.requests, h.remote_requests, h.domains), (100, 99, 21));
        // The busiest 10 % of 21 domains is 3: big.example.com and two of the ones.
        assert!((h.top10_domain_share - 0.82).abs() < 1e-12, "{h:?}");
        assert_eq!(HostTally::default().finish().top10_domain_share, 0.0);
    }
}
