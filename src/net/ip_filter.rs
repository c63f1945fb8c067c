//! IP filter lists as seedbox users know them (eMule `ipfilter.dat`, PeerGuardian `.p2p`):
//! parse them into sorted, merged ranges and look an address up by binary search.
//!
//! Formats, detected per line (a file may mix them):
//! - eMule `.dat`: `001.002.003.004 - 001.002.003.255 , 000 , description`. The access level
//!   (second field) decides: 127 or less blocks, more than 127 allows (the line is read
//!   and left out, as eMule and qBittorrent do). A line without a level blocks.
//! - PeerGuardian text `.p2p`: `description:1.2.3.4-1.2.3.255` (the description may
//!   itself hold `:`).
//!
//! IPv4 (dotted quads, leading zeros read as decimal: `010` is ten) and IPv6 ranges; both
//! ends inclusive. Lines starting with `#` or `//` and blank lines are ignored. A line that
//! cannot be read is skipped and counted ([`Parsed::malformed`]), never fatal. A file
//! starting with the gzip magic bytes `1f 8b` is decompressed first.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// Largest filter file read, bytes, after decompression (a hostile or wrong file cannot
/// take all memory): 512 MiB, several times the largest public lists.
pub const MAX_FILTER_BYTES: u64 = 512 << 20;

/// Blocked address ranges: sorted, merged (no two overlap or touch), both ends inclusive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpFilter {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

/// A filter read from text, with what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The blocked ranges.
    pub filter: IpFilter,
    /// Lines that could not be read (skipped).
    pub malformed: usize,
    /// The first malformed line: its number (from 1) and its text (at most 80 characters,
    /// untrusted: escape it before showing).
    pub first_malformed: Option<(usize, String)>,
    /// eMule lines with an access level above 127: read, not blocked.
    pub allowed: usize,
    /// Lines read as blocking ranges (before merging).
    pub lines: usize,
}

/// Why a filter file could not be read at all (a bad line is never an error).
#[derive(Debug, thiserror::Error)]
pub enum IpFilterError {
    /// The file cannot be opened or read (or its gzip stream is broken).
    #[error("cannot read ip filter {path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file (decompressed) is larger than [`MAX_FILTER_BYTES`].
    #[error("ip filter {path} is larger than {max} bytes")]
    TooLarge {
        /// The file.
        path: std::path::PathBuf,
        /// The limit, bytes.
        max: u64,
    },
}

impl IpFilter {
    /// A filter blocking the given ranges (both ends inclusive, in any order, overlapping
    /// or not; a range whose start is above its end is left out).
    pub fn from_ranges(v4: Vec<(u32, u32)>, v6: Vec<(u128, u128)>) -> IpFilter {
        IpFilter {
            v4: merge(v4),
            v6: merge(v6),
        }
    }

    /// Whether `ip` is in a blocked range. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`,
    /// as a dual-stack socket reports IPv4 peers) is looked up as IPv4.
    pub fn blocks(&self, ip: IpAddr) -> bool {
        match ip.to_canonical() {
            IpAddr::V4(a) => contains(&self.v4, u32::from(a)),
            IpAddr::V6(a) => contains(&self.v6, u128::from(a)),
        }
    }

    /// Merged IPv4 ranges.
    pub fn v4_ranges(&self) -> &[(u32, u32)] {
        &self.v4
    }

    /// Merged IPv6 ranges.
    pub fn v6_ranges(&self) -> &[(u128, u128)] {
        &self.v6
    }

    /// Merged ranges, both families.
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// No range.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the ranges take (capacity of both vectors times their element size).
    pub fn memory_bytes(&self) -> usize {
        self.v4.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.v6.capacity() * std::mem::size_of::<(u128, u128)>()
    }

    /// Read a filter from `text` (see the module docs for the formats). Bytes that are not
    /// UTF-8 (descriptions in Latin-1) are fine; only the addresses must be ASCII.
    pub fn parse(text: &[u8]) -> Parsed {
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        let mut p = Parsed::default();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = String::from_utf8_lossy(raw);
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
                continue;
            }
            match parse_line(line) {
                Some(Line::Block(Range::V4(a, b))) => {
                    v4.push((a, b));
                    p.lines += 1;
                }
                Some(Line::Block(Range::V6(a, b))) => {
                    v6.push((a, b));
                    p.lines += 1;
                }
                Some(Line::Allow) => p.allowed += 1,
                None => {
                    p.malformed += 1;
                    if p.first_malformed.is_none() {
                        p.first_malformed = Some((i + 1, line.chars().take(80).collect()));
                    }
                }
            }
        }
        p.filter = IpFilter::from_ranges(v4, v6);
        p
    }

    /// Read the filter file at `path`, gzip or plain (by its first two bytes).
    ///
    /// # Errors
    /// [`IpFilterError::Io`] when it cannot be read or decompressed,
    /// [`IpFilterError::TooLarge`] beyond [`MAX_FILTER_BYTES`].
    pub fn load(path: &Path) -> Result<Parsed, IpFilterError> {
        let io = |source| IpFilterError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut raw = Vec::new();
        file.take(MAX_FILTER_BYTES + 1)
            .read_to_end(&mut raw)
            .map_err(io)?;
        let text = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..])
                .take(MAX_FILTER_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(io)?;
            out
        } else {
            raw
        };
        if text.len() as u64 > MAX_FILTER_BYTES {
            return Err(IpFilterError::TooLarge {
                path: path.to_path_buf(),
                max: MAX_FILTER_BYTES,
            });
        }
        Ok(IpFilter::parse(&text))
    }
}

/// Sort, drop reversed ranges, merge overlapping and touching ones; no spare capacity.
fn merge<T: Copy + Ord + num_like::Succ>(mut r: Vec<(T, T)>) -> Vec<(T, T)> {
    r.retain(|(a, b)| a <= b);
    r.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if last.1.succ().is_none_or(|n| a <= n) => {
                if b > last.1 {
                    last.1 = b;
                }
            }
            _ => out.push((a, b)),
        }
    }
    out.shrink_to_fit();
    out
}

mod num_like {
    /// The next value, `None` at the maximum.
    pub trait Succ: Sized {
        fn succ(self) -> Option<Self>;
    }
    impl Succ for u32 {
        fn succ(self) -> Option<u32> {
            self.checked_add(1)
        }
    }
    impl Succ for u128 {
        fn succ(self) -> Option<u128> {
            self.checked_add(1)
        }
    }
}

fn contains<T: Copy + Ord>(ranges: &[(T, T)], x: T) -> bool {
    let i = ranges.partition_point(|r| r.0 <= x);
    i > 0 && ranges[i - 1].1 >= x
}

enum Range {
    V4(u32, u32),
    V6(u128, u128),
}

enum Line {
    Block(Range),
    Allow,
}

/// One non-comment line, eMule first (when its first field is a range), else PeerGuardian.
fn parse_line(line: &str) -> Option<Line> {
    if let Some((first, rest)) = line.split_once(',')
        && let Some(range) = parse_range(first)
    {
        let level = rest.split(',').next().unwrap_or("").trim();
        let level: u32 = level.parse().ok()?;
        return Some(if level > 127 {
            Line::Allow
        } else {
            Line::Block(range)
        });
    }
    if let Some(range) = parse_range(line) {
        // an eMule line without level and description
        return Some(Line::Block(range));
    }
    // PeerGuardian: the range follows the first ':' after which a range reads
    let mut from = 0;
    while let Some(i) = line[from..].find(':') {
        let at = from + i + 1;
        if let Some(range) = parse_range(&line[at..]) {
            return Some(Line::Block(range));
        }
        from = at;
    }
    None
}

/// `START - END` (spaces optional), both of one family, START <= END.
fn parse_range(s: &str) -> Option<Range> {
    // an IPv6 address holds no '-', so the one dash splits
    let (a, b) = s.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if let (Some(a), Some(b)) = (parse_v4(a), parse_v4(b)) {
        let (a, b) = (u32::from(a), u32::from(b));
        return (a <= b).then_some(Range::V4(a, b));
    }
    let (a, b) = (a.parse::<Ipv6Addr>().ok()?, b.parse::<Ipv6Addr>().ok()?);
    let (a, b) = (u128::from(a), u128::from(b));
    (a <= b).then_some(Range::V6(a, b))
}

/// A dotted quad whose parts are 1 to 3 decimal digits, leading zeros allowed (`001`).
fn parse_v4(s: &str) -> Option<Ipv4Addr> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for o in &mut out {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    parts.next().is_none().then_some(Ipv4Addr::from(out))
}

#[cfg(test)]
mod tests;
