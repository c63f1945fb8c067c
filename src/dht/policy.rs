//! Which addresses the DHT may lead us to: the scopes its bootstrap list points into
//! ([`crate::net::scope_of`]), and the PORT hints (BEP 5 `port`) kept for a reseed.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use super::MAX_HINTS;
use crate::net::{Scope, scope_of};

/// The scope a `HOST:PORT` bootstrap entry points into, without resolving it: an IP
/// literal's own scope, `localhost` loopback, any other name global. `None` for an entry
/// that is not `HOST:PORT` or names an unusable address.
pub fn bootstrap_scope(entry: &str) -> Option<Scope> {
    let (host, _port) = entry.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return scope_of(ip);
    }
    if host.eq_ignore_ascii_case("localhost") {
        Some(Scope::Loopback)
    } else if host.is_empty() {
        None
    } else {
        Some(Scope::Global)
    }
}

/// An IPv4-mapped IPv6 address as plain IPv4; others unchanged.
pub(super) fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => a,
        },
        SocketAddr::V4(_) => a,
    }
}

/// Which scopes and families the node accepts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Policy {
    pub(super) loopback: bool,
    pub(super) local: bool,
    pub(super) global: bool,
    /// The socket is dual stack (or IPv6): IPv6 addresses are usable.
    pub(super) ipv6: bool,
}

impl Policy {
    pub(super) fn from_bootstrap(
        entries: &[String],
        restored: &[SocketAddr],
        ipv6: bool,
    ) -> Policy {
        let mut p = Policy {
            loopback: false,
            local: false,
            global: false,
            ipv6,
        };
        let mut any = false;
        let scopes = entries
            .iter()
            .filter_map(|e| bootstrap_scope(e))
            .chain(restored.iter().filter_map(|a| scope_of(a.ip())));
        for s in scopes {
            any = true;
            match s {
                Scope::Loopback => p.loopback = true,
                Scope::Local => p.local = true,
                Scope::Global => p.global = true,
            }
        }
        if !any {
            p.global = true;
        }
        p
    }

    pub(super) fn allows(&self, a: SocketAddr) -> bool {
        let a = unmap(a);
        if a.port() == 0 || (a.is_ipv6() && !self.ipv6) {
            return false;
        }
        match scope_of(a.ip()) {
            Some(Scope::Loopback) => self.loopback,
            Some(Scope::Local) => self.local,
            Some(Scope::Global) => self.global,
            None => false,
        }
    }
}

/// PORT hints: one address per IP, oldest first, at most [`MAX_HINTS`].
#[derive(Debug, Default)]
pub(super) struct Hints {
    pub(super) list: VecDeque<SocketAddr>,
    /// A hint arrived since the last restart with hints.
    pub(super) fresh: bool,
}

impl Hints {
    pub(super) fn add(&mut self, a: SocketAddr) -> bool {
        if self.list.contains(&a) {
            return false;
        }
        self.list.retain(|x| x.ip() != a.ip());
        if self.list.len() >= MAX_HINTS {
            self.list.pop_front();
        }
        self.list.push_back(a);
        self.fresh = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn bootstrap_entries_have_the_scope_of_their_host() {
        assert_eq!(
            bootstrap_scope("router.bittorrent.com:6881"),
            Some(Scope::Global)
        );
        assert_eq!(bootstrap_scope("127.0.0.2:1"), Some(Scope::Loopback));
        assert_eq!(bootstrap_scope("[::1]:1"), Some(Scope::Loopback));
        assert_eq!(bootstrap_scope("localhost:1"), Some(Scope::Loopback));
        assert_eq!(bootstrap_scope("10.0.0.1:1"), Some(Scope::Local));
        assert_eq!(bootstrap_scope("nope"), None);
    }

    #[test]
    fn policy_follows_the_bootstrap_list() {
        let public = Policy::from_bootstrap(&["router.bittorrent.com:6881".into()], &[], false);
        let a = |t: &str| t.parse::<SocketAddr>().unwrap();
        assert!(public.allows(a("8.8.8.8:6881")));
        assert!(!public.allows(a("127.0.0.1:22")));
        assert!(!public.allows(a("192.168.1.1:6881")));
        assert!(!public.allows(a("8.8.8.8:0")));
        assert!(
            !public.allows(a("[2a00::1]:6881")),
            "IPv6 on an IPv4-only node"
        );
        let lab = Policy::from_bootstrap(&["127.0.0.2:7000".into()], &[], true);
        assert!(lab.allows(a("127.0.0.5:6881")));
        assert!(lab.allows(a("[::ffff:127.0.0.5]:6881")));
        assert!(!lab.allows(a("8.8.8.8:6881")));
        assert!(!lab.allows(a("10.0.0.1:6881")));
        let none = Policy::from_bootstrap(&[], &[], false);
        assert!(none.allows(a("8.8.8.8:1")) && !none.allows(a("127.0.0.1:1")));
        let restored = Policy::from_bootstrap(&[], &[a("127.0.0.3:9")], false);
        assert!(restored.allows(a("127.0.0.1:1")) && !restored.allows(a("8.8.8.8:1")));
    }

    #[test]
    fn hints_are_bounded_one_per_ip() {
        let mut h = Hints::default();
        for i in 0..200u16 {
            h.add(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(127, 0, (i >> 8) as u8, i as u8)),
                1000 + i,
            ));
        }
        assert_eq!(h.list.len(), MAX_HINTS);
        let ip = IpAddr::V4(Ipv4Addr::new(127, 9, 9, 9));
        for p in 1..100 {
            h.add(SocketAddr::new(ip, p));
        }
        assert_eq!(h.list.iter().filter(|a| a.ip() == ip).count(), 1);
        assert_eq!(h.list.len(), MAX_HINTS);
    }
}
