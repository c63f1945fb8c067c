//! Deterministic mutation testing of every decoder of untrusted input (issue 9), on stable
//! Rust and without fuzzing crates: the fuzz targets' invariant checks
//! (`tests/fuzz/src/lib.rs`) applied to seed inputs (the fixtures in `tests/fixtures` and
//! seeds built here) and to fixed families of mutations of each seed:
//!
//! - every truncation length (for seeds above 2 KiB: the first and last 512 lengths and
//!   1024 spread between; above 4 KiB: 128, 128 and 128),
//! - single-bit flips at up to 512 positions (128 above 4 KiB),
//! - a big-endian `u32::MAX` written at up to 256 positions (64 above 4 KiB): binary
//!   length fields,
//! - for bencoded formats, every bencode string length prefix inflated (`4294967295`,
//!   `18446744073709551615`, a 40-digit number) and every bencode integer replaced by huge
//!   and malformed ones (the first 300 of each; 32 above 4 KiB),
//! - nesting-depth bombs (`l` × 100 000, `d1:k` × 100 000, exactly at and just past
//!   `MAX_DEPTH`) at the start and in the middle,
//! - the seed repeated twice and followed by garbage.
//!
//! Each check panics on a broken invariant (see the module docs there); a decoder that
//! panics fails the test with the seed name and mutation in the message.

#[path = "fuzz/src/lib.rs"]
mod checks;

use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Instant;

use ratorrent::bencode::{self, DecodeError};
use ratorrent::peer::{extension, metadata, pex, wire};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz/seeds");

/// Every file directly in `dir` (sorted), skipping `.json` case lists and READMEs.
fn files_in(dir: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| !matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "md")))
        .map(|p| {
            let name = p
                .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
                .unwrap_or(&p);
            (name.display().to_string(), std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {dir}");
    out
}

fn seeds(dirs: &[&str]) -> Vec<(String, Vec<u8>)> {
    dirs.iter().flat_map(|d| files_in(d)).collect()
}

/// `n` positions spread evenly over `0..len` (all of them when `len <= n`).
fn spread(len: usize, n: usize) -> Vec<usize> {
    if len <= n {
        (0..len).collect()
    } else {
        (0..n).map(|i| i * len / n).collect()
    }
}

/// A byte range `(start, end)` of a seed.
type Span = (usize, usize);

/// Spans `(start, end)` of every bencode string length prefix (digits before `:`) and every
/// integer body (`i` ... `e`), found by a lenient scan (it need not be valid bencode).
fn bencode_fields(seed: &[u8]) -> (Vec<Span>, Vec<Span>) {
    let (mut lens, mut ints) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < seed.len() {
        match seed[i] {
            b'0'..=b'9' => {
                let start = i;
                while i < seed.len() && seed[i].is_ascii_digit() {
                    i += 1;
                }
                if i < seed.len() && seed[i] == b':' {
                    lens.push((start, i));
                    let len: usize = std::str::from_utf8(&seed[start..i])
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(usize::MAX);
                    i = (i + 1).saturating_add(len);
                    continue;
                }
            }
            b'i' => {
                let start = i + 1;
                let mut j = start;
                while j < seed.len() && (seed[j].is_ascii_digit() || seed[j] == b'-') {
                    j += 1;
                }
                if j < seed.len() && seed[j] == b'e' && j > start {
                    ints.push((start, j));
                    i = j + 1;
                    continue;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    (lens, ints)
}

fn splice(seed: &[u8], (start, end): Span, with: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(seed.len() + with.len());
    v.extend_from_slice(&seed[..start]);
    v.extend_from_slice(with);
    v.extend_from_slice(&seed[end..]);
    v
}

/// The mutations of one seed, each with a short description. `bencoded`: also inflate
/// bencode string lengths and integers. Seeds above 4 KiB get fewer positions (they are
/// the large peer streams and torrents; the fuzz targets cover them in depth).
fn mutations(seed: &[u8], bencoded: bool) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = vec![("as is".into(), seed.to_vec())];
    let len = seed.len();
    let large = len > 4096;
    // truncations
    let cuts: Vec<usize> = if len <= 2048 {
        (0..len).collect()
    } else if !large {
        (0..512)
            .chain(spread(len, 1024))
            .chain(len - 512..len)
            .collect()
    } else {
        (0..128)
            .chain(spread(len, 128))
            .chain(len - 128..len)
            .collect()
    };
    for n in cuts {
        out.push((format!("cut to {n}"), seed[..n].to_vec()));
    }
    // bit flips
    for (k, p) in spread(len, if large { 128 } else { 512 })
        .into_iter()
        .enumerate()
    {
        let mut m = seed.to_vec();
        m[p] ^= 1 << (k % 8);
        out.push((format!("bit {} of byte {p} flipped", k % 8), m));
    }
    // binary length fields inflated
    for p in spread(len.saturating_sub(3), if large { 64 } else { 256 }) {
        let mut m = seed.to_vec();
        m[p..p + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        out.push((format!("u32::MAX at {p}"), m));
    }
    // bencode length prefixes and integers
    let (lens, ints) = if bencoded {
        bencode_fields(seed)
    } else {
        (Vec::new(), Vec::new())
    };
    let most = if large { 32 } else { 300 };
    for &span in lens.iter().take(most) {
        for big in [
            &b"4294967295"[..],
            b"18446744073709551615",
            b"9999999999999999999999999999999999999999",
        ] {
            out.push((
                format!(
                    "string length at {} = {}",
                    span.0,
                    String::from_utf8_lossy(big)
                ),
                splice(seed, span, big),
            ));
        }
    }
    for &span in ints.iter().take(most) {
        for big in [
            &b"9223372036854775807"[..],
            b"-9223372036854775808",
            b"9223372036854775808",
            b"4294967296",
            b"-1",
            b"0",
            b"-0",
            b"007",
            b"99999999999999999999999999999999999999999999999999",
        ] {
            out.push((
                format!("integer at {} = {}", span.0, String::from_utf8_lossy(big)),
                splice(seed, span, big),
            ));
        }
    }
    // depth bombs
    let mid = seed
        .iter()
        .position(|&b| b == b'd' || b == b'l')
        .map_or(len / 2, |p| p + 1);
    for (name, bomb) in depth_bombs() {
        out.push((format!("{name} at 0"), [&bomb[..], seed].concat()));
        out.push((format!("{name} at {mid}"), splice(seed, (mid, mid), &bomb)));
    }
    // repeated, and trailing garbage
    out.push(("twice".into(), [seed, seed].concat()));
    out.push((
        "trailing garbage".into(),
        [seed, b"\xff\x00garbage<html>"].concat(),
    ));
    out
}

fn depth_bombs() -> Vec<(String, Vec<u8>)> {
    let max = bencode::MAX_DEPTH;
    vec![
        ("l x 100000".into(), vec![b'l'; 100_000]),
        ("d1:k x 100000".into(), b"d1:k".repeat(100_000)),
        (
            format!("l x {max} closed"),
            [vec![b'l'; max], vec![b'e'; max]].concat(),
        ),
        (
            format!("l x {} closed", max + 1),
            [vec![b'l'; max + 1], vec![b'e'; max + 1]].concat(),
        ),
    ]
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Run `check` on every mutation of every seed; report the first panic with its seed and
/// mutation. Returns the number of inputs checked.
fn run(family: &str, seeds: &[(String, Vec<u8>)], bencoded: bool, check: fn(&[u8])) -> usize {
    let started = Instant::now();
    let mut n = 0;
    for (name, seed) in seeds {
        for (what, input) in mutations(seed, bencoded) {
            n += 1;
            if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(&input))) {
                panic!("{family}: {name}, {what}: {}", panic_message(&*e));
            }
        }
    }
    eprintln!(
        "{family}: {n} inputs from {} seeds in {:.1?}",
        seeds.len(),
        started.elapsed()
    );
    n
}

#[test]
fn bencode_mutations() {
    let s = seeds(&[
        &format!("{SEEDS}/bencode"),
        &format!("{FIXTURES}/torrent"),
        &format!("{SEEDS}/extension"),
        &format!("{SEEDS}/pex"),
        &format!("{FIXTURES}/tracker_http"),
    ]);
    run("bencode", &s, true, checks::check_bencode);
}

#[test]
fn metainfo_mutations() {
    let s = seeds(&[&format!("{FIXTURES}/torrent")]);
    run("metainfo", &s, true, checks::check_metainfo);
}

/// The libtorrent test corpus: every file as is and cut at 64 spread lengths (the full
/// mutation set runs on the shared cases above; the fuzz target covers these in depth).
#[test]
fn metainfo_libtorrent_corpus_truncations() {
    let started = Instant::now();
    let mut n = 0;
    for (name, seed) in seeds(&[&format!("{FIXTURES}/libtorrent")]) {
        for cut in spread(seed.len(), 64).into_iter().chain([seed.len()]) {
            n += 1;
            let input = &seed[..cut];
            if let Err(e) = catch_unwind(|| checks::check_metainfo(input)) {
                panic!("{name} cut to {cut}: {}", panic_message(&*e));
            }
        }
    }
    eprintln!("libtorrent corpus: {n} inputs in {:.1?}", started.elapsed());
}

#[test]
fn magnet_mutations() {
    let s = seeds(&[&format!("{FIXTURES}/magnet"), &format!("{SEEDS}/magnet")]);
    run("magnet", &s, false, checks::check_magnet);
    // 4000 `so` of 99999 indices each, cut at a few lengths (each cut is one parse)
    let many = format!(
        "magnet:?xt=urn:btih:{}{}",
        "ab".repeat(20),
        "&so=0-99998".repeat(4000)
    );
    let started = Instant::now();
    for cut in spread(many.len(), 16).into_iter().chain([many.len()]) {
        checks::check_magnet(&many.as_bytes()[..cut]);
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn peer_stream_mutations() {
    let s = seeds(&[
        &format!("{FIXTURES}/peer_stream"),
        &format!("{SEEDS}/peer_wire"),
    ]);
    run("peer stream", &s, true, checks::check_peer_stream);
}

#[test]
fn extension_handshake_mutations() {
    let mut s = seeds(&[&format!("{SEEDS}/extension")]);
    s.push((
        "ours".into(),
        extension::encode_handshake(&extension::OurHandshake {
            listen_port: 6881,
            metadata_size: Some(u32::MAX),
            yourip: Some("::1".parse().unwrap()),
            pex: true,
        })
        .to_vec(),
    ));
    run("extension handshake", &s, true, checks::check_extension);
}

#[test]
fn metadata_mutations() {
    let info: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut s = seeds(&[&format!("{SEEDS}/metadata")]);
    s.push((
        "data piece 2".into(),
        metadata::encode_data(&info, 2).unwrap().to_vec(),
    ));
    s.push((
        "request".into(),
        metadata::encode_request(u32::MAX).to_vec(),
    ));
    run("ut_metadata", &s, true, checks::check_metadata_assembly);
}

#[test]
fn lsd_mutations() {
    let mut s = seeds(&[&format!("{SEEDS}/lsd")]);
    let hashes: Vec<ratorrent::metainfo::InfoHash> = (0..25u8)
        .map(|i| ratorrent::metainfo::InfoHash([i; 20]))
        .collect();
    s.push((
        "encoded".into(),
        ratorrent::lsd::encode(6881, "0123456789abcdef", &hashes),
    ));
    let n = run("LSD", &s, false, checks::check_lsd);
    assert!(n > 1000, "{n}");
}

#[test]
fn webseed_answer_mutations() {
    let seeds = seeds(&[&format!("{SEEDS}/webseed")]);
    let n = run("webseed", &seeds, false, checks::check_webseed_answer);
    assert!(n > 1000, "{n}");
}

#[test]
fn pex_mutations() {
    let mut s = seeds(&[&format!("{SEEDS}/pex")]);
    let added: Vec<pex::PexPeer> = (0..60u8)
        .map(|i| pex::PexPeer {
            addr: SocketAddr::from(([10, 0, 0, i], 6881)),
            flags: i,
        })
        .chain((0..60u16).map(|i| pex::PexPeer {
            addr: format!("[2001:db8::{i:x}]:51413").parse().unwrap(),
            flags: 0,
        }))
        .collect();
    let dropped: Vec<SocketAddr> = added.iter().map(|p| p.addr).collect();
    s.push(("encoded".into(), pex::encode(&added, &dropped).to_vec()));
    run("ut_pex", &s, true, checks::check_pex);
}

#[test]
fn tracker_udp_mutations() {
    let s = seeds(&[
        &format!("{FIXTURES}/tracker_udp"),
        &format!("{SEEDS}/tracker_udp"),
    ]);
    run("udp tracker", &s, false, checks::check_tracker_udp);
}

#[test]
fn tracker_http_mutations() {
    let s = seeds(&[
        &format!("{FIXTURES}/tracker_http"),
        &format!("{SEEDS}/tracker_http"),
    ]);
    run("http tracker", &s, true, checks::check_tracker_http);
}

/// The classes the mutations aim at are refused with the error that names them.
#[test]
fn hostile_shapes_get_the_error_that_names_them() {
    for (_, bomb) in depth_bombs().into_iter().take(2) {
        assert!(matches!(
            bencode::decode(&bomb),
            Err(DecodeError::TooDeep {
                max: bencode::MAX_DEPTH,
                ..
            })
        ));
    }
    assert!(matches!(
        bencode::decode(b"4294967295:abc"),
        Err(DecodeError::StringTooLong {
            len: 4_294_967_295,
            remaining: 3,
            ..
        })
    ));
    assert!(matches!(
        bencode::decode(b"99999999999999999999999999999999999999:x"),
        Err(DecodeError::StringTooLong { len: u64::MAX, .. })
    ));
    assert!(matches!(
        bencode::decode(b"i99999999999999999999e"),
        Err(DecodeError::BadInteger {
            reason: "out of 64-bit range",
            ..
        })
    ));

    // a u32::MAX length prefix is refused before anything is buffered
    let mut buf = bytes::BytesMut::from(&[0xff, 0xff, 0xff, 0xff, 7][..]);
    let cap = wire::message_cap(1000);
    assert_eq!(
        wire::decode(&mut buf, cap),
        Err(wire::WireError::TooLong {
            len: u32::MAX,
            max: cap
        })
    );
    assert!(buf.capacity() < 1024, "buffered {} bytes", buf.capacity());

    let e = extension::parse_handshake(b"d13:metadata_sizei4294967296ee").unwrap();
    assert!(matches!(
        e.metadata_size(8 << 20),
        Err(extension::MetadataSizeError::TooLarge { .. })
    ));

    let huge = [
        b"d5:added".as_slice(),
        format!("{}:", 6 * 10_000).as_bytes(),
        &[1u8; 60_000][..],
        b"e".as_slice(),
    ]
    .concat();
    let m = pex::parse(&huge).unwrap();
    assert_eq!(m.added.len(), pex::MAX_ACCEPTED);
    assert_eq!(m.ignored, 10_000 - pex::MAX_ACCEPTED);
    let too_big = vec![b'd'; pex::MAX_MESSAGE + 1];
    assert_eq!(
        pex::parse(&too_big),
        Err(pex::PexError::TooLarge(pex::MAX_MESSAGE + 1))
    );
}
