//! Magnet links (BEP 9 §magnet URI format, BEP 53 `so`): what a link names before its
//! metadata is fetched from peers.
//!
//! `magnet:?xt=urn:btih:<hash>&dn=<name>&tr=<tracker>&x.pe=<host:port>&so=<files>&ws=<url>`
//!
//! - `xt=urn:btih:` with 40 hex digits or 32 base32 characters, either case; `xt=urn:btmh:`
//!   (BEP 52, multihash `1220` + 64 hex digits): with a btih beside it a hybrid torrent
//!   (known by both hashes), alone a v2-only torrent (known on the wire by the v2 hash cut
//!   to 20 bytes).
//! - `dn`: `+` is a space, `%XX` an escaped byte (lossy UTF-8).
//! - `tr` (any number, in order, duplicates dropped), `x.pe` peer addresses (IP literal and
//!   port; `[v6]:port`), `so` file indices and ranges (`0,2,4-6`), `ws` web seeds (BEP 19
//!   URLs, as libtorrent reads them; used once the metadata has arrived).
//! - Keys in any case; numbered keys (`xt.1`, `tr.2`) count as their base key; unknown
//!   keys are ignored.
//! - An empty parameter (`tr=`, `x.pe=`, `so=`, `xt=`, a value of only spaces, a key with no
//!   `=`) is ignored and the rest of the link kept, as libtorrent does; [`Magnet::notes`]
//!   says which were ignored. So is an `xt` of another network (`urn:ed2k:`, `urn:sha1:`)
//!   beside a btih. Repeated parameters: `tr` and `x.pe` are kept once each, the
//!   last `dn` and the last `so` win, a repeated `xt` must name the same hash.
//!
//! Everything is bounded: the link ([`MAX_LINK_BYTES`]), trackers ([`MAX_TRACKERS`]),
//! web seeds ([`MAX_WEB_SEEDS`]), peers ([`MAX_PEERS`]), `so` indices ([`MAX_SELECT`]) and notes ([`MAX_NOTED_PEERS`]).

use std::net::{IpAddr, SocketAddr};

use thiserror::Error;

use super::InfoHash;

/// Longest magnet link accepted, bytes.
pub const MAX_LINK_BYTES: usize = 64 * 1024;
/// Most `tr` trackers kept from one link.
pub const MAX_TRACKERS: usize = 200;
/// Most `ws` web seeds kept from one link.
pub const MAX_WEB_SEEDS: usize = 50;
/// Most `x.pe` peers kept from one link.
pub const MAX_PEERS: usize = 200;
/// Most file indices a `so` list may name (ranges expanded).
pub const MAX_SELECT: usize = 100_000;
/// Most ignored `x.pe` peers named one by one in [`Magnet::notes`] (one more note counts
/// the rest).
pub const MAX_NOTED_PEERS: usize = 8;

/// What a magnet link names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Magnet {
    /// The 20-byte info hash on the wire: the v1 info hash (from `urn:btih:`), or for a
    /// v2-only link the v2 info hash cut to 20 bytes ([`InfoHash::truncated`]).
    pub info_hash: InfoHash,
    /// v2 info hash (SHA-256, from `urn:btmh:1220...`) of a v2-only or hybrid torrent.
    pub info_hash_v2: Option<[u8; 32]>,
    /// `dn`: the display name, decoded; `None` when absent or empty.
    pub name: Option<String>,
    /// `tr`: tracker URLs in link order, each once. One tier each (BEP 12: a magnet link's
    /// trackers are announced to like an `announce-list` of one-URL tiers).
    pub trackers: Vec<String>,
    /// `x.pe`: peers to dial directly.
    pub peers: Vec<SocketAddr>,
    /// `so` (BEP 53): indices of the files to download, ascending, each once; empty = all.
    pub select_only: Vec<usize>,
    /// `ws`: web seed URLs (BEP 19), in link order, each once.
    pub web_seeds: Vec<String>,
    /// Parts of the link that were not used, for the user (e.g. an `x.pe` hostname).
    pub notes: Vec<String>,
}

/// Why a magnet link was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MagnetError {
    /// Does not start with `magnet:?`.
    #[error("not a magnet link (it must start with \"magnet:?\")")]
    NotMagnet,
    /// Longer than [`MAX_LINK_BYTES`].
    #[error("magnet link is {0} bytes long; at most {MAX_LINK_BYTES} are accepted")]
    TooLong(usize),
    /// No `xt` parameter.
    #[error("magnet link has no \"xt=urn:btih:\" (the info hash)")]
    NoExactTopic,
    /// Only `xt`s of other kinds than `urn:btih:` / `urn:btmh:` (beside a btih they are
    /// ignored).
    #[error("magnet link \"xt={0}\" is not a BitTorrent info hash (expected urn:btih:)")]
    UnknownTopic(String),
    /// A btih that is neither 40 hex digits nor 32 base32 characters.
    #[error(
        "magnet link info hash \"{0}\" is malformed: expected 40 hex digits or 32 base32 characters"
    )]
    BadInfoHash(String),
    /// A btmh that is not a SHA-256 multihash.
    #[error(
        "magnet link v2 info hash \"{0}\" is malformed: expected 1220 followed by 64 hex digits"
    )]
    BadInfoHashV2(String),
    /// Two different v1 hashes, or two different v2 hashes.
    #[error("magnet link names two different info hashes")]
    TwoInfoHashes,
    /// A malformed `so` list.
    #[error("magnet link \"so={0}\" is not a list of file indices and ranges (e.g. 0,2,4-6)")]
    BadSelectOnly(String),
}

impl Magnet {
    /// Parse a magnet link (surrounding whitespace ignored; the scheme in any case).
    ///
    /// # Errors
    /// [`MagnetError`] naming the faulty part; never panics.
    pub fn parse(link: &str) -> Result<Magnet, MagnetError> {
        let link = link.trim();
        if link.len() > MAX_LINK_BYTES {
            return Err(MagnetError::TooLong(link.len()));
        }
        let query = match link.get(..8) {
            Some(p) if p.eq_ignore_ascii_case("magnet:?") => &link[8..],
            _ => return Err(MagnetError::NotMagnet),
        };
        let mut v1: Option<InfoHash> = None;
        let mut v2: Option<[u8; 32]> = None;
        let mut select: Option<Vec<(usize, usize)>> = None;
        let mut m = Magnet {
            info_hash: InfoHash::default(),
            info_hash_v2: None,
            name: None,
            trackers: Vec::new(),
            peers: Vec::new(),
            select_only: Vec::new(),
            web_seeds: Vec::new(),
            notes: Vec::new(),
        };
        // keys whose value was empty, each named once in a note at the end
        let mut empty_keys: Vec<&'static str> = Vec::new();
        // `x.pe` values that are not an IP address and port
        let mut bad_peers = 0usize;
        // the first `xt` of another kind than btih / btmh
        let mut unknown_topic: Option<String> = None;
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            // `xt.1`, `tr.2`: numbered forms of the same keys; `TR` is `tr`
            let key = key.to_ascii_lowercase();
            let base = match key.split('.').next().unwrap_or("") {
                _ if key.starts_with("x.pe") => "x.pe",
                "xt" => "xt",
                "dn" => "dn",
                "tr" => "tr",
                "so" => "so",
                "ws" => "ws",
                _ => continue,
            };
            let value = value.trim();
            if value.is_empty() {
                // "nothing here": ignored, the rest of the link is kept
                if base != "dn" && !empty_keys.contains(&base) {
                    empty_keys.push(base);
                }
                continue;
            }
            match base {
                "xt" => {
                    if let Some(h) = strip_prefix_ci(value, "urn:btih:") {
                        let h = parse_btih(h)?;
                        if v1.is_some_and(|old| old != h) {
                            return Err(MagnetError::TwoInfoHashes);
                        }
                        v1 = Some(h);
                    } else if let Some(h) = strip_prefix_ci(value, "urn:btmh:") {
                        let h = parse_btmh(h)?;
                        if v2.is_some_and(|old| old != h) {
                            return Err(MagnetError::TwoInfoHashes);
                        }
                        v2 = Some(h);
                    } else if unknown_topic.is_none() {
                        // another network's hash (`urn:ed2k:`, `urn:sha1:` ...) beside ours
                        unknown_topic = Some(shorten(value));
                    }
                }
                "dn" => {
                    // controls dropped first, then trimmed: what is kept is what a
                    // canonical link (`to_link`) gives back
                    let name: String = value.chars().filter(|c| !c.is_control()).collect();
                    let name = name.trim();
                    if !name.is_empty() {
                        m.name = Some(name.to_owned());
                    }
                }
                "tr" => {
                    if m.trackers.len() >= MAX_TRACKERS {
                        continue;
                    }
                    if !m.trackers.iter().any(|t| t == value) {
                        m.trackers.push(value.to_string());
                    }
                }
                "ws" if m.web_seeds.len() < MAX_WEB_SEEDS
                    && !m.web_seeds.iter().any(|w| w == value) =>
                {
                    m.web_seeds.push(value.to_string());
                }
                "x.pe" => {
                    // normalised before the checks: `[::ffff:0.0.0.0]:1` is unspecified and
                    // `[::ffff:10.0.0.1]:1` the same peer as `10.0.0.1:1`
                    match value.parse::<SocketAddr>().map(normalise) {
                        Ok(a) if a.port() != 0 && !a.ip().is_unspecified() => {
                            if m.peers.len() < MAX_PEERS && !m.peers.contains(&a) {
                                m.peers.push(a);
                            }
                        }
                        _ => {
                            bad_peers += 1;
                            if m.notes.len() < MAX_NOTED_PEERS {
                                m.notes.push(format!(
                                    "peer \"{}\" ignored (an IP address and port are needed)",
                                    shorten(value)
                                ));
                            }
                        }
                    }
                }
                "so" => {
                    // checked now, expanded once at the end: the last `so` wins, and a link
                    // of thousands of `so=0-99998` costs no more than one
                    select = Some(parse_select(value)?);
                }
                _ => {}
            }
        }
        if bad_peers > m.notes.len() {
            m.notes.push(format!(
                "{} more peers ignored (an IP address and port are needed)",
                bad_peers - m.notes.len()
            ));
        }
        if !empty_keys.is_empty() {
            let list: Vec<String> = empty_keys.iter().map(|k| format!("{k}=")).collect();
            m.notes
                .push(format!("empty parameters ignored: {}", list.join(", ")));
        }
        match (v1, v2, unknown_topic) {
            (Some(h), v2, unknown) => {
                m.info_hash = h;
                m.info_hash_v2 = v2;
                if let Some(t) = unknown {
                    m.notes
                        .push(format!("\"xt={t}\" ignored (not a BitTorrent info hash)"));
                }
            }
            (None, Some(h), unknown) => {
                m.info_hash = InfoHash::truncated(&h);
                m.info_hash_v2 = Some(h);
                if let Some(t) = unknown {
                    m.notes
                        .push(format!("\"xt={t}\" ignored (not a BitTorrent info hash)"));
                }
            }
            (None, None, Some(t)) => return Err(MagnetError::UnknownTopic(t)),
            (None, None, None) => return Err(MagnetError::NoExactTopic),
        }
        if let Some(ranges) = select {
            m.select_only = expand_select(&ranges);
        }
        Ok(m)
    }

    /// Whether the link names a v2-only torrent (a btmh and no btih).
    pub fn is_v2_only(&self) -> bool {
        self.info_hash_v2
            .is_some_and(|v2| InfoHash::truncated(&v2) == self.info_hash)
    }

    /// A canonical link for this magnet: `xt` (btih in hex, then btmh), `dn`, `tr`s, `x.pe`s,
    /// `so` (as ranges, `0-99999`) and `ws`s. Only `%`, `&`, `+`, `#`, `=` and control characters
    /// are percent-encoded (a space is `+`; other characters, also non-ASCII, are written as
    /// they are), so the link is no longer than the one it was parsed from, give or take the
    /// 8 bytes of a base32 btih written in hex: it stays within [`MAX_LINK_BYTES`]. Parsing
    /// it gives the same [`Magnet`] (without notes).
    pub fn to_link(&self) -> String {
        let mut s = String::from("magnet:?");
        let mut first = true;
        let mut pair = |key: &str, value: &str| {
            if !std::mem::take(&mut first) {
                s.push('&');
            }
            s.push_str(key);
            s.push('=');
            for c in value.chars() {
                match c {
                    ' ' => s.push('+'),
                    '%' | '&' | '+' | '#' | '=' => s.push_str(&format!("%{:02X}", c as u32)),
                    c if c.is_control() => {
                        let mut buf = [0u8; 4];
                        for b in c.encode_utf8(&mut buf).bytes() {
                            s.push_str(&format!("%{b:02X}"));
                        }
                    }
                    c => s.push(c),
                }
            }
        };
        if !self.is_v2_only() {
            pair("xt", &format!("urn:btih:{}", self.info_hash.to_hex()));
        }
        if let Some(v2) = &self.info_hash_v2 {
            let hex = data_encoding::HEXLOWER.encode(v2);
            pair("xt", &format!("urn:btmh:1220{hex}"));
        }
        if let Some(n) = &self.name {
            pair("dn", n);
        }
        for t in &self.trackers {
            pair("tr", t);
        }
        for p in &self.peers {
            pair("x.pe", &p.to_string());
        }
        if !self.select_only.is_empty() {
            pair("so", &ranges(&self.select_only, ","));
        }
        for w in &self.web_seeds {
            pair("ws", w);
        }
        s
    }

    /// A readable description for `ratorrent info MAGNET`: name, hashes, trackers, peers,
    /// selection and notes, one field a line. Control characters in names are escaped.
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let esc = |t: &str| crate::untrusted::escape(t).into_owned();
        // the labels of a .torrent's description (`Metainfo::describe`)
        let _ = writeln!(
            s,
            "Name:          {}",
            self.name.as_deref().map_or("(none given)".into(), esc)
        );
        if self.is_v2_only() {
            let _ = writeln!(s, "Info hash v1:  none (a v2-only torrent, BEP 52)");
        } else {
            let _ = writeln!(s, "Info hash v1:  {}", self.info_hash.to_hex());
        }
        if let Some(v2) = &self.info_hash_v2 {
            let hex = data_encoding::HEXLOWER.encode(v2);
            if self.is_v2_only() {
                let _ = writeln!(
                    s,
                    "Info hash v2:  {hex} (on the wire: {})",
                    self.info_hash.to_hex()
                );
            } else {
                let _ = writeln!(s, "Info hash v2:  {hex} (hybrid: peers are found by both)");
            }
        }
        let _ = writeln!(s, "Source:        magnet link");
        let _ = writeln!(
            s,
            "Total size:    unknown until the metadata is fetched from peers (BEP 9)"
        );
        if self.trackers.is_empty() {
            let _ = writeln!(s, "Trackers:      none (peers come from DHT, PEX and x.pe)");
        } else {
            let _ = writeln!(s, "Trackers:");
            // BEP 12: each tracker of a magnet link is a tier of its own
            for (i, t) in self.trackers.iter().enumerate() {
                let label = format!("tier {}:", i + 1);
                let _ = writeln!(s, "  {label:<9}{}", esc(&crate::net::mask_passkey(t)));
            }
        }
        if !self.peers.is_empty() {
            let list: Vec<String> = self.peers.iter().map(|p| p.to_string()).collect();
            let _ = writeln!(s, "Peers:         {}", list.join(", "));
        }
        if !self.web_seeds.is_empty() {
            let _ = writeln!(s, "Web seeds:");
            for w in &self.web_seeds {
                let _ = writeln!(s, "  {}", esc(&crate::net::mask_passkey(w)));
            }
        }
        if !self.select_only.is_empty() {
            let _ = writeln!(
                s,
                "Select only:   files {} (the others are skipped once the metadata arrives)",
                ranges(&self.select_only, ", ")
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "Note:          {}", esc(n));
        }
        s
    }

    /// The name to show before the metadata arrives: `dn`, else the info hash in hex.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.info_hash.to_hex())
    }
}

/// Whether `s` looks like a magnet link (so a front end can tell it from a file path).
pub fn is_magnet(s: &str) -> bool {
    s.trim()
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("magnet:"))
}

/// `0, 2, 4-6` for `[0, 2, 4, 5, 6]` (sorted input) with `sep` = `", "`.
fn ranges(v: &[usize], sep: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(sep)
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn shorten(s: &str) -> String {
    let mut out: String = crate::untrusted::line(s).chars().take(80).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

fn normalise(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

fn parse_btih(h: &str) -> Result<InfoHash, MagnetError> {
    let bad = || MagnetError::BadInfoHash(shorten(h));
    match h.len() {
        40 => InfoHash::from_hex(h).ok_or_else(bad),
        32 => {
            let upper = h.to_ascii_uppercase();
            let bytes = data_encoding::BASE32_NOPAD
                .decode(upper.as_bytes())
                .map_err(|_| bad())?;
            let arr: [u8; 20] = bytes.try_into().map_err(|_| bad())?;
            Ok(InfoHash(arr))
        }
        _ => Err(bad()),
    }
}

fn parse_btmh(h: &str) -> Result<[u8; 32], MagnetError> {
    let bad = || MagnetError::BadInfoHashV2(shorten(h));
    // multihash: 0x12 = SHA-256, 0x20 = 32 bytes
    let hex = strip_prefix_ci(h, "1220").ok_or_else(bad)?;
    let mut out = [0u8; 32];
    super::decode_hex(hex, &mut out).ok_or_else(bad)?;
    Ok(out)
}

/// The inclusive ranges of a `so` list (`0,2,4-6` → `[(0, 0), (2, 2), (4, 6)]`), checked
/// but not expanded: at most [`MAX_SELECT`] indices in all.
fn parse_select(v: &str) -> Result<Vec<(usize, usize)>, MagnetError> {
    let bad = || MagnetError::BadSelectOnly(shorten(v));
    let mut out = Vec::new();
    let mut total = 0usize;
    for part in v.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        // saturating: `0-18446744073709551615` after another index must not wrap around
        if b < a || (b - a).saturating_add(total) >= MAX_SELECT {
            return Err(bad());
        }
        total += b - a + 1;
        out.push((a, b));
    }
    Ok(out)
}

/// The indices named by `ranges` (from [`parse_select`]), ascending, each once.
fn expand_select(ranges: &[(usize, usize)]) -> Vec<usize> {
    let mut out: Vec<usize> = ranges.iter().flat_map(|&(a, b)| a..=b).collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_base32_in_any_case() {
        let hex = "6556a734d002eb0183449c4e0faa35afdf57f085";
        for link in [
            format!("magnet:?xt=urn:btih:{hex}"),
            format!("magnet:?xt=urn:btih:{}", hex.to_uppercase()),
            "magnet:?xt=urn:btih:MVLKONGQALVQDA2ETRHA7KRVV7PVP4EF".into(),
            "MAGNET:?xt=URN:BTIH:mvlkongqalvqda2etrha7krvv7pvp4ef".into(),
        ] {
            let m = Magnet::parse(&link).unwrap();
            assert_eq!(m.info_hash.to_hex(), hex, "{link}");
        }
    }

    #[test]
    fn malformed_links_say_what_is_wrong() {
        for (link, needle) in [
            ("http://x", "not a magnet link"),
            ("magnet:?dn=x", "no \"xt=urn:btih:\""),
            ("magnet:?xt=", "no \"xt=urn:btih:\""),
            ("magnet:?xt=&tr=http://t/a", "no \"xt=urn:btih:\""),
            ("magnet:?xt=urn:btih:", "is malformed"),
            ("magnet:?xt=urn:btih:abcd", "is malformed"),
            (
                "magnet:?xt=urn:btih:zz56a734d002eb0183449c4e0faa35afdf57f085",
                "malformed",
            ),
            (
                "magnet:?xt=urn:btih:MVLKONGQALVQDA2ETRHA7KRVV7PVP4E1",
                "malformed",
            ),
            ("magnet:?xt=urn:sha1:abc", "not a BitTorrent info hash"),
            ("magnet:?xt=urn:btmh:1220aa", "v2 info hash"),
            (
                "magnet:?xt=urn:btmh:1220e3d7397a7f2247340e8b7418afa79dc6da7784f6f23f1cd102d04cd1705b5478&xt=urn:btmh:1220f3d7397a7f2247340e8b7418afa79dc6da7784f6f23f1cd102d04cd1705b5478&xt=urn:btih:6556a734d002eb0183449c4e0faa35afdf57f085",
                "two different",
            ),
            (
                "magnet:?xt=urn:btih:6556a734d002eb0183449c4e0faa35afdf57f085&so=1-x",
                "so=1-x",
            ),
            (
                "magnet:?xt=urn:btih:6556a734d002eb0183449c4e0faa35afdf57f085&so=5-2",
                "so=5-2",
            ),
            (
                "magnet:?xt=urn:btih:6556a734d002eb0183449c4e0faa35afdf57f085&so=0-999999999999",
                "so=",
            ),
            (
                "magnet:?xt=urn:btih:6556a734d002eb0183449c4e0faa35afdf57f085&xt=urn:btih:0000a734d002eb0183449c4e0faa35afdf57f085",
                "two different",
            ),
        ] {
            let e = Magnet::parse(link).unwrap_err().to_string();
            assert!(e.contains(needle), "{link}: {e}");
        }
        let long = format!("magnet:?xt=urn:btih:{}", "a".repeat(MAX_LINK_BYTES));
        assert!(matches!(Magnet::parse(&long), Err(MagnetError::TooLong(_))));
    }

    #[test]
    fn names_trackers_peers_and_selection() {
        let m = Magnet::parse(
            "magnet:?xt.1=urn:btih:a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0&dn=a%20b+c%2B%1b&tr=http%3A%2F%2Fa%2Fannounce&tr.2=http%3A%2F%2Fa%2Fannounce&tr=udp://b:1&x.pe=127.0.0.1:6881&x.pe=[::ffff:127.0.0.2]:7&x.pe=host.example:1&x.pe=1.2.3.4:0&so=6,0,2,4-6&foo=bar",
        )
        .unwrap();
        assert_eq!(m.name.as_deref(), Some("a b c+"));
        assert_eq!(m.trackers, vec!["http://a/announce", "udp://b:1"]);
        assert_eq!(
            m.peers,
            vec![
                "127.0.0.1:6881".parse().unwrap(),
                "127.0.0.2:7".parse().unwrap()
            ]
        );
        assert_eq!(m.notes.len(), 2, "{:?}", m.notes);
        assert_eq!(m.select_only, vec![0, 2, 4, 5, 6]);
        // canonical form round-trips
        let again = Magnet::parse(&m.to_link()).unwrap();
        assert_eq!(again.trackers, m.trackers);
        assert_eq!(again.peers, m.peers);
        assert_eq!(again.name, m.name);
        assert_eq!(again.select_only, m.select_only);
        assert_eq!(again.info_hash, m.info_hash);
        assert!(is_magnet(" MAGNET:?xt"));
        assert!(!is_magnet("/tmp/magnet.torrent"));
    }

    /// Found by the decoder mutation test (issue 9): a name of only control characters was
    /// kept as `Some("")`, a name with spaces behind a control character did not survive
    /// `to_link`, and `x.pe` peers were deduplicated and checked before IPv4-mapped
    /// addresses were normalised.
    #[test]
    fn web_seeds_are_kept_once_in_order_and_written_back() {
        let hash = "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0";
        let m = Magnet::parse(&format!(
            "magnet:?xt=urn:btih:{hash}&ws=http%3A%2F%2Fm.example%2Fpub%2F&WS.1=https://n.example/a+b%2Bc/?k=1%262&ws=http%3A%2F%2Fm.example%2Fpub%2F&ws="
        ))
        .unwrap();
        assert_eq!(
            m.web_seeds,
            ["http://m.example/pub/", "https://n.example/a b+c/?k=1&2"]
        );
        assert!(m.notes.iter().any(|n| n.contains("ws=")), "{:?}", m.notes);
        let back = Magnet::parse(&m.to_link()).unwrap();
        assert_eq!(back.web_seeds, m.web_seeds);
        assert!(
            m.describe()
                .contains("Web seeds:\n  http://m.example/pub/\n")
        );
        let many: String = (0..MAX_WEB_SEEDS + 5)
            .map(|i| format!("&ws=http://h/{i}"))
            .collect();
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{hash}{many}")).unwrap();
        assert_eq!(m.web_seeds.len(), MAX_WEB_SEEDS);
    }

    #[test]
    fn dn_and_x_pe_are_normalised_before_they_are_kept() {
        let hash = "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0";
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{hash}&dn=%01%02")).unwrap();
        assert_eq!(m.name, None);
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{hash}&dn=%01+a+%1b")).unwrap();
        assert_eq!(m.name.as_deref(), Some("a"));
        assert_eq!(Magnet::parse(&m.to_link()).unwrap().name, m.name);
        let m = Magnet::parse(&format!(
            "magnet:?xt=urn:btih:{hash}&x.pe=10.0.0.1:7&x.pe=[::ffff:10.0.0.1]:7&x.pe=[::ffff:0.0.0.0]:7"
        ))
        .unwrap();
        assert_eq!(m.peers, vec!["10.0.0.1:7".parse().unwrap()]);
        assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
    }

    /// Found by the decoder mutation test (issue 9): `so=1,0-18446744073709551615` overflowed
    /// the index count (a panic with overflow checks; in a release build the count wrapped
    /// and the range was expanded until memory ran out), and every `so` of a link was
    /// expanded (4000 × `so=0-99998` took seconds).
    #[test]
    fn select_only_is_bounded_whatever_the_numbers() {
        let hash = "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0";
        for so in [
            "1,0-18446744073709551615",
            "0-18446744073709551615",
            "5,6,18446744073709551614-18446744073709551615,0-18446744073709551615",
            "0-100000",
        ] {
            let e = Magnet::parse(&format!("magnet:?xt=urn:btih:{hash}&so={so}")).unwrap_err();
            assert!(matches!(e, MagnetError::BadSelectOnly(_)), "{so}: {e}");
        }
        let m = Magnet::parse(&format!(
            "magnet:?xt=urn:btih:{hash}&so=18446744073709551614-18446744073709551615,0-99997"
        ))
        .unwrap();
        assert_eq!(m.select_only.len(), 100_000);
        let many = format!(
            "magnet:?xt=urn:btih:{hash}{}&so=3,1",
            "&so=0-99998".repeat(4000)
        );
        assert!(many.len() <= MAX_LINK_BYTES);
        let started = std::time::Instant::now();
        let m = Magnet::parse(&many).unwrap();
        assert_eq!(m.select_only, vec![1, 3], "the last so wins");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    /// Found by the decoder mutation test (issue 9): `to_link` wrote every `so` index
    /// (`so=0-99999` became 590 KB) and percent-encoded `:` and `/`, so the canonical link of
    /// a valid link could be refused as too long when parsed again (the watch folder and the
    /// saved session both parse it again).
    #[test]
    fn canonical_link_is_never_longer_than_the_link() {
        let hash = "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0";
        let trackers = "&tr=udp://tracker.example:1337/announce".repeat(199);
        for link in [
            format!("magnet:?xt=urn:btih:{hash}&so=0-99999"),
            format!("magnet:?xt=urn:btih:{hash}{trackers}&dn=a%26b%25c%2B+d%3D%23%0a"),
            format!("magnet:?xt=urn:btih:{hash}&so=18446744073709551615&dn=caf%C3%A9"),
            format!("magnet:?xt=urn:btih:{hash}&dn=what%3F&tr=http://t/a?&x.pe=127.0.0.1:1"),
        ] {
            let m = Magnet::parse(&link).unwrap();
            let canonical = m.to_link();
            assert!(
                canonical.len() <= link.len(),
                "{} > {}",
                canonical.len(),
                link.len()
            );
            let mut again = Magnet::parse(&canonical).unwrap();
            again.notes = m.notes.clone();
            assert_eq!(again, m);
            let _ = m.describe();
        }
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{hash}&so=0-99999")).unwrap();
        assert!(m.to_link().ends_with("&so=0-99999"), "{}", m.to_link());
    }

    /// Issue 16 item 6: an empty parameter (`tr=`, `x.pe=`, `so=`, `xt=` beside a real one,
    /// a value of spaces, a key without `=`) is ignored and the rest kept; keys in any case;
    /// repeated parameters keep one of each; unknown ones (also another network's `xt`) are
    /// ignored.
    #[test]
    fn empty_repeated_and_unknown_parameters_are_ignored() {
        let hash = "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0";
        let m = Magnet::parse(&format!(
            "magnet:?tr=&xt=&xt=urn:btih:{hash}&dn=&dn=first&DN=last&tr=%20&TR=http://a/1&tr.1=http://a/1\
             &x.pe=&x.pe=127.0.0.1:5&X.PE=127.0.0.1:5&so=&so=2&so=&tr&=x&&xl=12&ws=&foo=&xt=urn:ed2k:00\
             &Tr=udp://b:2"
        ))
        .unwrap();
        assert_eq!(m.info_hash.to_hex(), hash);
        assert_eq!(m.name.as_deref(), Some("last"));
        assert_eq!(m.trackers, vec!["http://a/1", "udp://b:2"]);
        assert_eq!(m.peers, vec!["127.0.0.1:5".parse().unwrap()]);
        assert_eq!(
            m.select_only,
            vec![2],
            "an empty so after a real one changes nothing"
        );
        assert_eq!(
            m.notes,
            vec![
                "empty parameters ignored: tr=, xt=, x.pe=, so=, ws=".to_owned(),
                "\"xt=urn:ed2k:00\" ignored (not a BitTorrent info hash)".to_owned(),
            ]
        );
        // nothing but empties beside the hash: a plain magnet
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{hash}&tr=&x.pe=&so=&dn=")).unwrap();
        assert!(m.trackers.is_empty() && m.peers.is_empty() && m.select_only.is_empty());
        assert_eq!(m.name, None);
        // the canonical link of the result parses to the same magnet
        let mut again = Magnet::parse(&m.to_link()).unwrap();
        again.notes = m.notes.clone();
        assert_eq!(again, m);
        // many bad peers: a bounded number of notes
        let link = format!("magnet:?xt=urn:btih:{hash}{}", "&x.pe=host:1".repeat(5000));
        let m = Magnet::parse(&link).unwrap();
        assert_eq!(m.notes.len(), MAX_NOTED_PEERS + 1, "{:?}", m.notes);
        assert!(m.notes.last().unwrap().starts_with("4992 more peers"));
    }

    #[test]
    fn bounded_lists() {
        let mut link = String::from("magnet:?xt=urn:btih:a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0");
        for i in 0..1000 {
            link.push_str(&format!("&tr=http://t{i}/a&x.pe=127.0.0.1:{}", i + 1));
        }
        let m = Magnet::parse(&link).unwrap();
        assert_eq!(m.trackers.len(), MAX_TRACKERS);
        assert_eq!(m.peers.len(), MAX_PEERS);
    }

    #[test]
    fn junk_never_panics() {
        let mut seed = 7u64;
        for _ in 0..5000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 120) as usize;
            let alphabet = b"magnet:?xt=urn:btih:&%+.-,[]0123456789abcdefABCDEF\xc3\xa9";
            let s: Vec<u8> = (0..len)
                .map(|i| alphabet[((seed >> (i % 50)) as usize + i) % alphabet.len()])
                .collect();
            let _ = Magnet::parse(&String::from_utf8_lossy(&s));
            let _ = Magnet::parse(&format!("magnet:?{}", String::from_utf8_lossy(&s)));
        }
    }
}
