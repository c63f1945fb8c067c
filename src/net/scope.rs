//! The scope of an IP address: loopback, local network or global, or no peer at all.
//!
//! One definition for every decision that depends on it: the DHT accepts nodes only in the
//! scopes of its bootstrap list (a test swarm on loopback never leaks onto the Internet),
//! LSD (BEP 14) accepts announces only from loopback and local senders, and PEX (BEP 11)
//! drops local addresses listed by a peer on the Internet (they name its own network).
//!
//! Local means what libtorrent's `is_local` means: RFC 1918 (10/8, 172.16/12, 192.168/16),
//! shared address space for carrier-grade NAT (100.64.0.0/10, RFC 6598: reachable only
//! inside the carrier's network, never routed on the Internet), link-local (169.254/16,
//! fe80::/10), IPv6 unique-local (fc00::/7) and the deprecated IPv6 site-local (fec0::/10,
//! RFC 3879). IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) have their IPv4 address's scope.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// How far an address reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// This host: 127.0.0.0/8, `::1`.
    Loopback,
    /// A private network: RFC 1918, 100.64.0.0/10 (CGNAT), link-local, IPv6 unique-local
    /// and site-local.
    Local,
    /// Every other unicast host address.
    Global,
}

/// The scope of `ip`, or `None` for an address that never names a peer: unspecified,
/// broadcast, multicast, 0.0.0.0/8, 240.0.0.0/4 (reserved), and the documentation ranges
/// (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32).
pub fn scope_of(ip: IpAddr) -> Option<Scope> {
    match ip {
        IpAddr::V4(a) => scope_v4(a),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => scope_v4(v4),
            None => scope_v6(a),
        },
    }
}

/// Whether `ip` is on this host or a private network ([`Scope::Loopback`] or
/// [`Scope::Local`]). Addresses that name no peer (see [`scope_of`]) are not local.
pub fn is_local(ip: IpAddr) -> bool {
    matches!(scope_of(ip), Some(Scope::Loopback | Scope::Local))
}

fn scope_v4(a: Ipv4Addr) -> Option<Scope> {
    let o = a.octets();
    if a.is_unspecified()
        || a.is_broadcast()
        || a.is_multicast()
        || a.is_documentation()
        || o[0] == 0
        || o[0] >= 240
    {
        None
    } else if a.is_loopback() {
        Some(Scope::Loopback)
    } else if a.is_private() || a.is_link_local() || (o[0] == 100 && o[1] & 0xc0 == 64) {
        Some(Scope::Local)
    } else {
        Some(Scope::Global)
    }
}

fn scope_v6(a: Ipv6Addr) -> Option<Scope> {
    let s = a.segments();
    if a.is_unspecified() || a.is_multicast() || (s[0] == 0x2001 && s[1] == 0x0db8) {
        None
    } else if a.is_loopback() {
        Some(Scope::Loopback)
    } else if s[0] & 0xfe00 == 0xfc00 || s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
        // unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10
        Some(Scope::Local)
    } else {
        Some(Scope::Global)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every range, its first and last address, and its scope.
    const TABLE: &[(&str, &str, Option<Scope>)] = &[
        // IPv4
        ("0.0.0.0", "0.255.255.255", None),
        ("1.0.0.0", "9.255.255.255", Some(Scope::Global)),
        ("10.0.0.0", "10.255.255.255", Some(Scope::Local)),
        ("11.0.0.0", "100.63.255.255", Some(Scope::Global)),
        ("100.64.0.0", "100.127.255.255", Some(Scope::Local)),
        ("100.128.0.0", "126.255.255.255", Some(Scope::Global)),
        ("127.0.0.0", "127.255.255.255", Some(Scope::Loopback)),
        ("128.0.0.0", "169.253.255.255", Some(Scope::Global)),
        ("169.254.0.0", "169.254.255.255", Some(Scope::Local)),
        ("169.255.0.0", "172.15.255.255", Some(Scope::Global)),
        ("172.16.0.0", "172.31.255.255", Some(Scope::Local)),
        ("172.32.0.0", "192.0.1.255", Some(Scope::Global)),
        ("192.0.2.0", "192.0.2.255", None),
        ("192.0.3.0", "192.167.255.255", Some(Scope::Global)),
        ("192.168.0.0", "192.168.255.255", Some(Scope::Local)),
        ("192.169.0.0", "198.51.99.255", Some(Scope::Global)),
        ("198.51.100.0", "198.51.100.255", None),
        ("198.51.101.0", "203.0.112.255", Some(Scope::Global)),
        ("203.0.113.0", "203.0.113.255", None),
        ("203.0.114.0", "223.255.255.255", Some(Scope::Global)),
        ("224.0.0.0", "239.255.255.255", None),
        ("240.0.0.0", "255.255.255.255", None),
        // IPv6
        ("::", "::", None),
        ("::1", "::1", Some(Scope::Loopback)),
        (
            "::2",
            "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Some(Scope::Global),
        ),
        ("2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", None),
        (
            "2001:db9::",
            "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Some(Scope::Global),
        ),
        (
            "fc00::",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Some(Scope::Local),
        ),
        (
            "fe00::",
            "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Some(Scope::Global),
        ),
        (
            "fe80::",
            "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Some(Scope::Local),
        ),
        (
            "fec0::",
            "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Some(Scope::Local),
        ),
        ("ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
        // IPv4-mapped: the IPv4 address's scope
        (
            "::ffff:127.0.0.1",
            "::ffff:127.255.255.255",
            Some(Scope::Loopback),
        ),
        (
            "::ffff:100.64.0.0",
            "::ffff:100.127.255.255",
            Some(Scope::Local),
        ),
        ("::ffff:8.8.8.8", "::ffff:8.8.8.8", Some(Scope::Global)),
        ("::ffff:0.0.0.0", "::ffff:0.0.0.0", None),
    ];

    #[test]
    fn every_range_has_its_scope_at_both_ends() {
        for &(first, last, scope) in TABLE {
            for ip in [first, last] {
                let ip: IpAddr = ip.parse().unwrap();
                assert_eq!(scope_of(ip), scope, "{ip}");
                assert_eq!(
                    is_local(ip),
                    matches!(scope, Some(Scope::Loopback | Scope::Local)),
                    "{ip}"
                );
            }
        }
    }

    #[test]
    fn neighbours_of_the_cgnat_block_are_global() {
        // 100.64.0.0/10 is local (as libtorrent); the addresses either side are not
        let s = |t: &str| scope_of(t.parse().unwrap());
        assert_eq!(s("100.63.255.255"), Some(Scope::Global));
        assert_eq!(s("100.64.0.1"), Some(Scope::Local));
        assert_eq!(s("100.127.255.254"), Some(Scope::Local));
        assert_eq!(s("100.128.0.0"), Some(Scope::Global));
        assert!(is_local("100.100.1.1".parse().unwrap()));
        assert!(!is_local("255.255.255.255".parse().unwrap()));
    }
}
