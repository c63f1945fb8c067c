//! Invariant checks for ratorrent's decoders of untrusted input, shared by the libFuzzer
//! targets (`fuzz_targets/*.rs`, run by `tests/fuzz/run.sh`) and by the always-run
//! deterministic mutation test (`tests/decoder_mutations.rs`, which includes this file).
//!
//! Each `check_*` function takes arbitrary bytes, feeds them to one decoder family and
//! panics when an invariant breaks: beyond "no panic", decoded values must re-encode to
//! the bytes they came from where the format allows it, stay within the documented
//! bounds, and errors must say something (non-empty, bounded length).
//!
//! Depends only on `ratorrent` and `bytes` (no fuzzing crate), so it builds on stable.

#![allow(dead_code)]

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Component, Path};

use bytes::{Bytes, BytesMut};
use ratorrent::bencode::{self, DecodeError, Value};
use ratorrent::lsd;
use ratorrent::metainfo::{InfoHash, Magnet, Metainfo, magnet, path::is_contained};
use ratorrent::peer::{extension, metadata, mse, pex, utp, wire};
use ratorrent::piece::merkle;
use ratorrent::tracker::{
    self, AnnounceResponse, MAX_INTERVAL_SECS, MESSAGE_MAX_CHARS, MIN_INTERVAL_SECS, TrackerError,
    http, udp,
};

/// Longest error message (in characters) a decoder may produce for any input: errors are
/// shown to the user and logged, so they must not echo unbounded input.
pub const MAX_ERROR_CHARS: usize = 1200;

/// An error's Display must be non-empty and bounded.
fn check_error(e: &dyn std::fmt::Display) {
    let s = e.to_string();
    assert!(!s.trim().is_empty(), "empty error message");
    assert!(
        s.chars().count() <= MAX_ERROR_CHARS,
        "error message of {} chars: {}",
        s.chars().count(),
        &s[..s.char_indices().nth(200).map_or(s.len(), |(i, _)| i)]
    );
}

// ---------------------------------------------------------------------------------------
// bencode
// ---------------------------------------------------------------------------------------

/// Canonical encoding of a decoded value, entries in the order decoded.
pub fn bencode_encode(v: &Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::Int(i) => out.extend_from_slice(format!("i{i}e").as_bytes()),
        Value::Bytes(b) => {
            out.extend_from_slice(b.len().to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(b);
        }
        Value::List(l) => {
            out.push(b'l');
            for x in l {
                bencode_encode(x, out);
            }
            out.push(b'e');
        }
        Value::Dict(d) => {
            out.push(b'd');
            for (k, x) in &d.entries {
                out.extend_from_slice(k.len().to_string().as_bytes());
                out.push(b':');
                out.extend_from_slice(k);
                bencode_encode(x, out);
            }
            out.push(b'e');
        }
    }
}

/// Nesting depth of lists and dictionaries (a scalar is 0).
fn depth(v: &Value<'_>) -> usize {
    match v {
        Value::Int(_) | Value::Bytes(_) => 0,
        Value::List(l) => 1 + l.iter().map(depth).max().unwrap_or(0),
        Value::Dict(d) => 1 + d.entries.iter().map(|(_, x)| depth(x)).max().unwrap_or(0),
    }
}

/// Every dictionary's `raw` is exactly its own encoding.
fn check_raw_spans(v: &Value<'_>) {
    match v {
        Value::Int(_) | Value::Bytes(_) => {}
        Value::List(l) => l.iter().for_each(check_raw_spans),
        Value::Dict(d) => {
            let mut enc = Vec::new();
            bencode_encode(v, &mut enc);
            assert_eq!(
                d.raw,
                &enc[..],
                "dictionary raw span differs from its bytes"
            );
            d.entries.iter().for_each(|(_, x)| check_raw_spans(x));
        }
    }
}

fn check_decode_error(e: &DecodeError, len: usize) {
    check_error(e);
    let offset = match e {
        DecodeError::UnexpectedEof { offset }
        | DecodeError::UnexpectedByte { offset, .. }
        | DecodeError::BadInteger { offset, .. }
        | DecodeError::StringTooLong { offset, .. }
        | DecodeError::NonStringKey { offset }
        | DecodeError::TooDeep { offset, .. }
        | DecodeError::TrailingBytes { offset, .. } => *offset,
    };
    assert!(
        offset <= len,
        "error offset {offset} past the input ({len} bytes)"
    );
    if let DecodeError::StringTooLong {
        len: l, remaining, ..
    } = e
    {
        assert!(*l > *remaining as u64);
    }
}

/// Bencode (BEP 3): the decoder is strict about integers and string lengths, so anything it
/// accepts re-encodes to exactly the bytes it consumed; depth never exceeds
/// [`bencode::MAX_DEPTH`]; errors point inside the input.
pub fn check_bencode(data: &[u8]) {
    match bencode::decode_prefix(data) {
        Ok((v, used)) => {
            assert!(used > 0 && used <= data.len());
            let mut enc = Vec::new();
            bencode_encode(&v, &mut enc);
            assert_eq!(&enc[..], &data[..used], "decoded value does not re-encode");
            assert!(depth(&v) <= bencode::MAX_DEPTH);
            check_raw_spans(&v);
            match bencode::decode(data) {
                Ok(w) => {
                    assert_eq!(used, data.len());
                    assert_eq!(w, v);
                }
                Err(e) => {
                    assert!(used < data.len());
                    assert!(matches!(e, DecodeError::TrailingBytes { count, offset }
                        if count == data.len() - used && offset == used));
                }
            }
        }
        Err(e) => {
            check_decode_error(&e, data.len());
            let whole =
                bencode::decode(data).expect_err("decode accepted what decode_prefix refused");
            assert_eq!(whole, e);
        }
    }
}

// ---------------------------------------------------------------------------------------
// metainfo
// ---------------------------------------------------------------------------------------

fn only_normal(p: &Path) -> bool {
    p.components().all(|c| matches!(c, Component::Normal(_))) && p.components().next().is_some()
}

/// `.torrent` files (BEP 3/12/19/27/47/52): on success the piece count matches the length,
/// files are contiguous and add up, the info hash is the SHA-1 of the stored info bytes
/// (which are a bencoded dictionary), every path is relative, normal and contained, no two
/// real files collide (ignoring case) and no real file is a folder of another.
pub fn check_metainfo(data: &[u8]) {
    let m = match Metainfo::from_bytes(data) {
        Ok(m) => m,
        Err(e) => return check_error(&e),
    };
    assert!(m.total_length > 0);
    assert!(m.piece_length >= 1 && m.piece_length <= ratorrent::metainfo::MAX_PIECE_LENGTH);
    let pieces = m.total_length.div_ceil(u64::from(m.piece_length));
    if m.version() == ratorrent::metainfo::MetaVersion::V2 {
        assert!(m.piece_hashes.is_empty(), "a v2-only torrent has no SHA-1s");
    } else {
        assert_eq!(m.piece_hashes.len() as u64, pieces, "piece count");
    }
    assert!(pieces <= u64::from(u32::MAX));
    assert_eq!(m.piece_count() as u64, pieces);
    let g = ratorrent::piece::Geometry::new(m.total_length, m.piece_length, m.piece_count())
        .expect("geometry of an accepted torrent");
    let last = m.piece_count() - 1;
    assert_eq!(g.piece_size(last), m.piece_size(last));
    assert_eq!(
        m.piece_offset(last) + u64::from(m.piece_size(last)),
        m.total_length
    );
    assert!(m.piece_size(last) >= 1 && m.piece_size(last) <= m.piece_length);
    assert_eq!(m.piece_size(m.piece_count()), 0);
    assert!(m.block_count(0) >= 1);

    if m.version() == ratorrent::metainfo::MetaVersion::V2 {
        // known on the wire by its v2 hash cut to 20 bytes
        let v2 = m.info_hash_v2.expect("a v2 torrent has a v2 hash");
        assert_eq!(InfoHash::truncated(&v2), m.info_hash);
    } else {
        assert_eq!(InfoHash::of_info_bytes(&m.info_bytes), m.info_hash);
    }
    match bencode::decode(&m.info_bytes) {
        Ok(Value::Dict(_)) => {}
        other => panic!("info bytes are not a dictionary: {other:?}"),
    }

    assert!(!m.files.is_empty());
    if !m.multi_file {
        // one file; a v2-only one may be followed by its padding (tail padding)
        assert_eq!(m.files.iter().filter(|f| !f.pad).count(), 1);
    }
    let mut offset = 0u64;
    let mut files: HashSet<String> = HashSet::new();
    let mut folders: HashSet<String> = HashSet::new();
    let key = |p: &Path| p.to_string_lossy().to_lowercase();
    for f in &m.files {
        assert_eq!(f.offset, offset, "files are not contiguous");
        offset += f.length;
        assert!(is_contained(&f.path), "{:?} not contained", f.path);
        assert!(
            only_normal(&f.path),
            "{:?} has a non-normal component",
            f.path
        );
        if f.symlink {
            assert_eq!(f.length, 0);
        }
        if let Some(t) = &f.symlink_target {
            assert!(is_contained(t) && only_normal(t), "symlink target {t:?}");
        }
        if !f.pad {
            assert!(files.insert(key(&f.path)), "two files at {:?}", f.path);
            for a in f.path.ancestors().skip(1) {
                if !a.as_os_str().is_empty() {
                    folders.insert(key(a));
                }
            }
        }
    }
    assert_eq!(offset, m.total_length, "file lengths do not add up");
    if let Some(clash) = files.intersection(&folders).next() {
        panic!("{clash:?} is both a file and a folder");
    }
    assert!(m.payload_size() <= m.total_length);
    if m.files.len() <= 10_000 {
        let _ = m.describe();
    }
}

// ---------------------------------------------------------------------------------------
// BEP 52: the v2 side of a .torrent
// ---------------------------------------------------------------------------------------

/// v2 and hybrid `.torrent` files (BEP 52): everything [`check_metainfo`] checks, and on
/// success: the v2 piece length is a power of two ≥ 16 KiB; each v2 file is a real file of
/// the list starting on a piece boundary at its first piece; a piece layer kept has one
/// hash per piece and hashes up to the file's root; every piece's v2 data lies inside the
/// piece; the fast file-list reader gives the same files.
pub fn check_metainfo_v2(data: &[u8]) {
    check_metainfo(data);
    let Ok(m) = Metainfo::from_bytes(data) else {
        return;
    };
    let Some(v2) = &m.v2 else {
        return;
    };
    let pl = v2.piece_length;
    assert!(
        pl.is_power_of_two() && pl >= 16 * 1024,
        "v2 piece length {pl}"
    );
    assert_eq!(pl, m.piece_length);
    assert_eq!(
        ratorrent::metainfo::files_from_bytes(data).ok().as_ref(),
        Some(&m.files),
        "the fast file list differs"
    );
    let level = v2.piece_level();
    for f in &v2.files {
        let fi = &m.files[f.file];
        assert!(!fi.pad && !fi.symlink && fi.length == f.length && f.length > 0);
        assert_eq!(
            fi.offset % u64::from(pl),
            0,
            "a v2 file off a piece boundary"
        );
        assert_eq!(u64::from(f.first_piece), fi.offset / u64::from(pl));
        if let Some(layer) = &f.layer {
            assert!(f.needs_layer(pl));
            assert_eq!(layer.len() as u32, f.piece_count(pl));
            let width = 1u64 << (f.levels() - level);
            assert_eq!(merkle::root_of(layer, level, width), f.root);
        }
    }
    for p in 0..m.piece_count().min(100_000) {
        if let Some(vp) = v2.piece(p) {
            assert!(vp.data_len >= 1 && vp.data_len <= m.piece_size(p));
            assert!(vp.width.is_power_of_two());
        }
    }
}

// ---------------------------------------------------------------------------------------
// BEP 52: hash request / hashes / hash reject
// ---------------------------------------------------------------------------------------

/// A file of `pieces` pieces of 32 KiB (two leaves each), its layer made from `seed`.
fn hash_file(pieces: u32, seed: u8) -> (ratorrent::piece::V2Hashes, merkle::LayerTree) {
    let layer: Vec<[u8; 32]> = (0..pieces)
        .map(|i| merkle::leaf(&[seed, (i >> 8) as u8, i as u8]))
        .collect();
    let length = u64::from(pieces) * 32_768 - u64::from(seed % 200);
    let tree = merkle::LayerTree::new(&layer, 1, merkle::levels(length));
    let v2 = ratorrent::piece::V2Hashes {
        piece_length: 32_768,
        files: vec![ratorrent::piece::V2File {
            file: 0,
            first_piece: 0,
            length,
            root: tree.root().unwrap_or_default(),
            layer: None,
        }],
    };
    (v2, tree)
}

/// BEP 52 hash messages as a peer sends them (the first two bytes pick a file of 2 ..=
/// 1025 pieces, the rest is a stream of wire messages): each decodes and re-encodes; a
/// `hash request` we would answer gets exactly `length` hashes plus the uncles
/// libtorrent counts, and an answer to a whole-chunk request at the piece layer verifies
/// against the root; `hashes` and `hash reject` go through the piece-layer fetch of a
/// magnet link (wrong hashes and floods are errors, never panics, and never a layer that
/// does not hash to the root).
pub fn check_hash_messages(data: &[u8]) {
    use ratorrent::engine::link::layers::LayerFetch;
    use ratorrent::engine::peer_conn::hashes;
    let (head, stream) = data.split_at(data.len().min(2));
    let pieces = 2
        + u32::from(head.first().copied().unwrap_or(0)) * 4
        + u32::from(head.get(1).copied().unwrap_or(0) % 4);
    let (v2, tree) = hash_file(pieces, head.get(1).copied().unwrap_or(0));
    let file = &v2.files[0];
    let mut fetch = LayerFetch::new(&v2).expect("a file of two pieces or more needs its layer");
    let cap = wire::message_cap(0);
    for step in decode_all(stream, cap) {
        let Step::Msg(m, _) = step else { continue };
        match &m {
            wire::Message::HashRequest(r) => {
                if !hashes::valid(file, v2.piece_level(), r) {
                    continue;
                }
                let Some(answer) = hashes::hashes_from(&tree, r) else {
                    continue;
                };
                let uncles = merkle::uncle_count(r.length, r.proof_layers).max(0) as usize;
                let n = answer.len() / 32;
                assert_eq!(answer.len() % 32, 0);
                if r.length >= 2 {
                    assert_eq!(n, r.length as usize + uncles, "{r:?}");
                }
                // our own requests' shape: whole chunks up to the root's children
                let chunk = r.length.is_power_of_two()
                    && r.index % r.length == 0
                    && r.base_layer == v2.piece_level()
                    && r.proof_layers + 1 == file.levels() - r.base_layer;
                if chunk && r.length >= 2 {
                    let all: Vec<[u8; 32]> = answer
                        .chunks_exact(32)
                        .map(|c| c.try_into().unwrap())
                        .collect();
                    let (base, up) = all.split_at(r.length as usize);
                    assert!(
                        merkle::verify_hashes(
                            base,
                            up,
                            u64::from(r.index),
                            r.base_layer,
                            u64::from(pieces),
                            file.levels(),
                            &file.root,
                        )
                        .is_some(),
                        "our answer to {r:?} does not verify"
                    );
                }
            }
            wire::Message::Hashes { req, hashes } => {
                let key = u64::from(req.index % 4);
                if let Err(e) = fetch.on_hashes(key, req, hashes) {
                    check_error(&e);
                }
            }
            wire::Message::HashReject(req) => {
                let key = u64::from(req.index % 4);
                if let Err(e) = fetch.on_reject(key, req) {
                    check_error(&e);
                }
            }
            _ => {}
        }
    }
    // whatever was kept is a whole, true layer
    for (root, layer) in fetch.layers() {
        assert_eq!(root, file.root);
        let hashes: Vec<[u8; 32]> = layer
            .chunks_exact(32)
            .map(|c| c.try_into().unwrap())
            .collect();
        assert_eq!(hashes.len() as u32, pieces);
        let width = 1u64 << (file.levels() - v2.piece_level());
        assert_eq!(merkle::root_of(&hashes, v2.piece_level(), width), file.root);
    }
}

/// Inputs for [`check_hash_messages`] that reach its deep paths: for files of several
/// sizes, the requests a magnet link's fetch makes, their true answers (served by our own
/// code), a wrong answer, rejects, and requests out of the tree.
pub fn hash_message_seeds() -> Vec<Vec<u8>> {
    use ratorrent::engine::link::layers::LayerFetch;
    use ratorrent::engine::peer_conn::hashes;
    let mut out = Vec::new();
    for (a, b) in [(0u8, 0u8), (0, 1), (3, 2), (100, 3), (255, 3)] {
        let pieces = 2 + u32::from(a) * 4 + u32::from(b % 4);
        let (v2, tree) = hash_file(pieces, b);
        let mut fetch = LayerFetch::new(&v2).unwrap();
        let reqs = fetch.next_requests(0, 0, std::time::Instant::now());
        let mut buf = BytesMut::new();
        for r in &reqs {
            wire::Message::HashRequest(*r).encode(&mut buf);
            let answer = hashes::hashes_from(&tree, r).unwrap();
            wire::Message::Hashes {
                req: *r,
                hashes: answer.clone(),
            }
            .encode(&mut buf);
            let mut wrong = answer.to_vec();
            wrong[0] ^= 1;
            wire::Message::Hashes {
                req: *r,
                hashes: Bytes::from(wrong),
            }
            .encode(&mut buf);
            wire::Message::HashReject(*r).encode(&mut buf);
            let mut off = *r;
            off.base_layer = 0;
            off.index = u32::MAX - 1;
            wire::Message::HashRequest(off).encode(&mut buf);
        }
        let mut input = vec![a, b];
        input.extend_from_slice(&buf);
        out.push(input);
    }
    out
}

// ---------------------------------------------------------------------------------------
// magnet
// ---------------------------------------------------------------------------------------

/// Magnet links (BEP 9, BEP 53): bounded lists and notes, `so` sorted and unique, peers
/// unique and dialable, no empty tracker, the name free of control characters, and the canonical link parses back to the
/// same magnet.
pub fn check_magnet(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let m = match Magnet::parse(&text) {
        Ok(m) => m,
        Err(e) => return check_error(&e),
    };
    assert!(m.trackers.len() <= magnet::MAX_TRACKERS);
    assert!(m.peers.len() <= magnet::MAX_PEERS);
    assert!(m.select_only.len() <= magnet::MAX_SELECT);
    assert!(
        m.select_only.windows(2).all(|w| w[0] < w[1]),
        "so not sorted/unique"
    );
    let peers: HashSet<_> = m.peers.iter().collect();
    assert_eq!(
        peers.len(),
        m.peers.len(),
        "duplicate x.pe peers: {:?}",
        m.peers
    );
    for p in &m.peers {
        assert!(p.port() != 0 && !p.ip().is_unspecified());
    }
    let trackers: HashSet<_> = m.trackers.iter().collect();
    assert_eq!(trackers.len(), m.trackers.len(), "duplicate trackers");
    // empty parameters are ignored, never kept as an empty tracker (issue 16)
    assert!(
        m.trackers.iter().all(|t| !t.is_empty() && t.trim() == t),
        "empty or padded tracker kept: {:?}",
        m.trackers
    );
    // bad peers (named up to a bound, then counted), the empty keys and an unknown xt
    assert!(
        m.notes.len() <= magnet::MAX_NOTED_PEERS + 3,
        "{:?}",
        m.notes
    );
    if let Some(n) = &m.name {
        assert!(!n.chars().any(char::is_control), "control character in dn");
        assert!(!n.is_empty(), "empty dn kept");
    }
    let link = m.to_link();
    let back = Magnet::parse(&link).unwrap_or_else(|e| panic!("canonical link refused: {e}"));
    let mut want = m.clone();
    want.notes.clear();
    let mut got = back;
    got.notes.clear();
    assert_eq!(got, want, "canonical link {link} parses differently");
    let _ = m.describe();
    let _ = m.display_name();
}

// ---------------------------------------------------------------------------------------
// peer wire
// ---------------------------------------------------------------------------------------

/// Outcome of one `wire::decode` call that produced something.
#[derive(Debug, PartialEq)]
enum Step {
    Msg(wire::Message, usize),
    Err(wire::WireError),
}

/// Decode everything in `stream` at once (buffer fed whole), then check the re-encoding.
fn decode_all(stream: &[u8], cap: u32) -> Vec<Step> {
    let mut buf = BytesMut::from(stream);
    let mut steps = Vec::new();
    loop {
        let before = buf.len();
        match wire::decode(&mut buf, cap) {
            Ok(Some(m)) => {
                let used = before - buf.len();
                steps.push(Step::Msg(m, used));
            }
            Ok(None) => {
                if buf.len() >= 4 {
                    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                    assert!(
                        len <= cap,
                        "waiting for a {len}-byte message above the cap {cap}"
                    );
                    assert!(buf.len() < 4 + len as usize);
                }
                break;
            }
            Err(e) => {
                steps.push(Step::Err(e));
                break;
            }
        }
    }
    steps
}

/// The same stream fed in chunks of pseudo-random sizes (1 ..= 4096 bytes) must give the
/// same messages in the same order.
fn decode_chunked(stream: &[u8], cap: u32) -> Vec<Step> {
    let mut buf = BytesMut::new();
    let mut steps = Vec::new();
    let mut rng = (stream.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut fed = 0;
    while fed < stream.len() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let n = (1 + (rng % 4096) as usize).min(stream.len() - fed);
        buf.extend_from_slice(&stream[fed..fed + n]);
        fed += n;
        loop {
            let before = buf.len();
            match wire::decode(&mut buf, cap) {
                Ok(Some(m)) => steps.push(Step::Msg(m, before - buf.len())),
                Ok(None) => break,
                Err(e) => {
                    steps.push(Step::Err(e));
                    return steps;
                }
            }
        }
    }
    steps
}

fn check_message(m: &wire::Message, raw: &[u8], cap: u32) {
    assert!(raw.len() <= 4 + cap as usize);
    let mut enc = BytesMut::new();
    m.encode(&mut enc);
    match m {
        // the payload of an unknown message is not kept: only its header re-encodes
        wire::Message::Unknown { id } => {
            assert_eq!(raw[4], *id);
            assert_eq!(&enc[4..], &[*id][..]);
        }
        _ => assert_eq!(&enc[..], raw, "{m:?} does not re-encode to its bytes"),
    }
    match m {
        wire::Message::Extended { ext_id: 0, payload } => check_extension(payload),
        wire::Message::Extended { payload, .. } => {
            check_metadata_msg(payload);
            check_pex(payload);
        }
        wire::Message::Bitfield(b) => {
            for pieces in [
                0u32,
                1,
                7,
                8,
                9,
                b.len() as u32 * 8,
                (b.len() as u32 * 8).saturating_sub(3),
            ] {
                match ratorrent::piece::Bitfield::from_payload(b, pieces) {
                    Ok(bf) => {
                        assert_eq!(bf.len(), pieces);
                        assert_eq!(bf.as_bytes(), &b[..]);
                        assert!(bf.count() <= pieces);
                        assert_eq!(bf.ones().count() as u32, bf.count());
                    }
                    Err(e) => check_error(&e),
                }
            }
        }
        _ => {}
    }
}

/// A peer stream (BEP 3): an optional 68-byte handshake, then length-prefixed messages.
/// The handshake re-encodes; each message re-encodes to the bytes it used; no message is
/// buffered beyond the cap; chunked and whole-buffer decoding agree; extended payloads go
/// through the BEP 10 / 9 / 11 checks.
pub fn check_peer_stream(data: &[u8]) {
    let mut stream = data;
    if let Ok(h) =
        <&[u8; wire::HANDSHAKE_LEN]>::try_from(data.get(..wire::HANDSHAKE_LEN).unwrap_or(&[]))
    {
        match wire::Handshake::parse(h) {
            Ok(hs) => {
                assert_eq!(&hs.to_bytes(), h);
                let prefix: &[u8; 48] = h[..48].try_into().unwrap();
                let (reserved, ih) = wire::Handshake::parse_prefix(prefix).unwrap();
                assert_eq!((reserved, ih), (hs.reserved, hs.info_hash));
                let _ = ratorrent::peer::client_name(&hs.peer_id);
                stream = &data[wire::HANDSHAKE_LEN..];
            }
            Err(e) => check_error(&e),
        }
    }
    for cap in [wire::message_cap(0), 64] {
        let whole = decode_all(stream, cap);
        let mut at = 0;
        for s in &whole {
            match s {
                Step::Msg(m, used) => {
                    check_message(m, &stream[at..at + used], cap);
                    at += used;
                }
                Step::Err(e) => {
                    check_error(e);
                    if let wire::WireError::TooLong { len, max } = e {
                        assert!(*len > *max && *max == cap);
                    }
                }
            }
        }
        let chunked = decode_chunked(stream, cap);
        assert_eq!(whole, chunked, "chunked decoding differs");
    }
}

// ---------------------------------------------------------------------------------------
// BEP 10 extension handshake
// ---------------------------------------------------------------------------------------

/// BEP 10 handshake: every field within its documented range; `metadata_size` only ever
/// gives 1 ..= cap; our own handshake built from the parsed fields parses back.
pub fn check_extension(data: &[u8]) {
    let h = match extension::parse_handshake(data) {
        Ok(h) => h,
        Err(e) => return check_decode_error(&e, data.len()),
    };
    if let Some(r) = h.reqq {
        assert!((1..=100_000).contains(&r));
    }
    if let Some(c) = &h.client {
        assert!(c.chars().count() <= 64 && !c.chars().any(char::is_control));
    }
    assert_ne!(h.listen_port, Some(0));
    assert_ne!(h.ut_metadata, Some(0));
    assert_ne!(h.ut_pex, Some(0));
    for cap in [1u32, metadata::METADATA_PIECE, 8 << 20, u32::MAX] {
        match h.metadata_size(cap) {
            Ok(Some(n)) => {
                assert!(n >= 1 && n <= cap);
                assert_eq!(h.metadata_size_raw, Some(i64::from(n)));
            }
            // no size, or 0: it has none to serve yet
            Ok(None) => assert!(matches!(h.metadata_size_raw, None | Some(0))),
            Err(e) => check_error(&e),
        }
    }
    let ours = extension::OurHandshake {
        listen_port: h.listen_port.unwrap_or(0),
        metadata_size: h.metadata_size(u32::MAX).ok().flatten(),
        yourip: h.yourip,
        pex: h.ut_pex.is_some(),
    };
    let back = extension::parse_handshake(&extension::encode_handshake(&ours)).unwrap();
    assert_eq!(back.listen_port, h.listen_port);
    assert_eq!(back.yourip, h.yourip);
    assert_eq!(back.metadata_size_raw, ours.metadata_size.map(i64::from));
    assert_eq!(back.ut_pex.is_some(), ours.pex);
}

// ---------------------------------------------------------------------------------------
// BEP 9 metadata

/// Operations [`check_metadata_assembly`] runs at most on one input (each may copy a 16 KiB
/// piece; more would only slow the fuzzer down).
pub const MAX_ASSEMBLY_OPS: usize = 48;
// ---------------------------------------------------------------------------------------

/// One `ut_metadata` payload: requests and rejects re-encode and parse back; a data
/// message's bytes are the tail of the payload.
pub fn check_metadata_msg(data: &[u8]) {
    let payload = Bytes::copy_from_slice(data);
    match metadata::parse(&payload) {
        Ok(metadata::MetadataMsg::Request { piece }) => {
            let m = metadata::parse(&metadata::encode_request(piece)).unwrap();
            assert_eq!(m, metadata::MetadataMsg::Request { piece });
        }
        Ok(metadata::MetadataMsg::Reject { piece }) => {
            let m = metadata::parse(&metadata::encode_reject(piece)).unwrap();
            assert_eq!(m, metadata::MetadataMsg::Reject { piece });
        }
        Ok(metadata::MetadataMsg::Data { data: d, .. }) => {
            assert!(data.ends_with(&d));
            assert!(d.len() < data.len());
        }
        Err(e) => check_error(&e),
    }
}

/// A BEP 9 assembly fed hostile pieces. The first two bytes give the info dictionary's size
/// (1 ..= 49152 bytes, up to 3 pieces); the info bytes are the input itself repeated. The
/// rest is a list of operations: deliver a correct piece, deliver a piece with a wrong
/// index / total size / length / content, or parse the following bytes as a `ut_metadata`
/// message and deliver it. Invariants: `have` never exceeds the piece count, the assembly
/// completes exactly when every piece it holds is the right one, and what it returns is
/// the info dictionary. At most [`MAX_ASSEMBLY_OPS`] operations are run.
pub fn check_metadata_assembly(data: &[u8]) {
    check_metadata_msg(data);
    if data.len() < 2 {
        return;
    }
    let size =
        u32::from(u16::from_le_bytes([data[0], data[1]])) % (3 * metadata::METADATA_PIECE) + 1;
    let ops = &data[2..];
    let info: Vec<u8> = (0..size as usize)
        .map(|i| {
            if ops.is_empty() {
                i as u8
            } else {
                ops[i % ops.len()] ^ (i >> 8) as u8
            }
        })
        .collect();
    let hash = InfoHash::of_info_bytes(&info);
    let mut a = metadata::Assembly::new(hash, size);
    let count = metadata::piece_count(size);
    assert_eq!(a.piece_count(), count);
    assert_eq!(a.size(), size);
    let piece_of = |p: u32| {
        let start = (p * metadata::METADATA_PIECE) as usize;
        let end = (start + metadata::METADATA_PIECE as usize).min(info.len());
        &info[start..end]
    };
    // which pieces the assembly holds, and whether each is the right one
    let mut held: Vec<Option<bool>> = vec![None; count as usize];
    let mut i = 0;
    let mut steps = 0;
    while i < ops.len() && steps < MAX_ASSEMBLY_OPS {
        steps += 1;
        let op = ops[i];
        let arg = ops.get(i + 1).copied().unwrap_or(0);
        i += 2;
        let (piece, total, bytes): (u32, i64, Vec<u8>) = match op % 6 {
            0 => {
                let p = u32::from(arg) % count;
                (p, i64::from(size), piece_of(p).to_vec())
            }
            1 => {
                // right shape, wrong content
                let p = u32::from(arg) % count;
                let mut b = piece_of(p).to_vec();
                let at = usize::from(arg) % b.len();
                b[at] ^= 0x5a;
                (p, i64::from(size), b)
            }
            2 => (
                [count, u32::MAX, count + u32::from(arg)][usize::from(arg) % 3],
                i64::from(size),
                vec![0; 16],
            ),
            3 => {
                let total = [-1, 0, i64::from(size) + 1, i64::MAX, i64::from(u32::MAX)]
                    [usize::from(arg) % 5];
                (0, total, piece_of(0).to_vec())
            }
            4 => {
                let p = u32::from(arg) % count;
                let mut b = piece_of(p).to_vec();
                if arg & 1 == 0 {
                    b.push(0);
                } else {
                    b.pop();
                }
                (p, i64::from(size), b)
            }
            _ => {
                let start = i.min(ops.len());
                let n = usize::from(arg).min(ops.len() - start);
                let raw = Bytes::copy_from_slice(&ops[start..start + n]);
                i = start + n;
                match metadata::parse(&raw) {
                    Ok(metadata::MetadataMsg::Data {
                        piece,
                        total_size,
                        data,
                    }) => (piece, total_size, data.to_vec()),
                    _ => continue,
                }
            }
        };
        let right = piece < count && total == i64::from(size) && bytes == piece_of(piece);
        let before_have = a.have();
        match a.on_data(piece, total, &bytes) {
            Ok(metadata::Progress::Stored { have, of }) => {
                assert_eq!(of, count);
                assert_eq!(have, before_have + 1);
                assert!(have < count);
                held[piece as usize] = Some(right);
                assert!(!a.missing(piece));
            }
            Ok(metadata::Progress::Duplicate) => {
                assert!(held[piece as usize].is_some());
                assert_eq!(a.have(), before_have);
            }
            Ok(metadata::Progress::Complete(whole)) => {
                held[piece as usize] = Some(right);
                assert!(
                    held.iter().all(|h| *h == Some(true)),
                    "completed with a bad piece"
                );
                assert_eq!(whole, info);
                assert_eq!(a.have(), 0);
                held.iter_mut().for_each(|h| *h = None);
            }
            Ok(metadata::Progress::HashMismatch) => {
                held[piece as usize] = Some(right);
                assert!(held.iter().all(Option::is_some));
                assert!(held.contains(&Some(false)), "good pieces refused");
                assert_eq!(a.have(), 0);
                held.iter_mut().for_each(|h| *h = None);
            }
            Err(e) => {
                check_error(&e);
                assert_eq!(
                    a.have(),
                    before_have,
                    "a refused piece changed the assembly"
                );
                // only wrong shapes are refused; wrong content of the right shape is not
                assert!(
                    piece >= count
                        || total != i64::from(size)
                        || bytes.len() != piece_of(piece).len()
                );
            }
        }
        assert!(a.have() <= count);
        assert_eq!(
            a.have() as usize,
            held.iter().filter(|h| h.is_some()).count()
        );
    }
}

// ---------------------------------------------------------------------------------------
// BEP 11 PEX
// ---------------------------------------------------------------------------------------

/// `ut_pex` (BEP 11): at most [`pex::MAX_ACCEPTED`] entries read per list, every added
/// peer dialable, and what we would send from the result parses back to a subset of it.
pub fn check_pex(data: &[u8]) {
    let msg = match pex::parse(data) {
        Ok(m) => m,
        Err(e) => return check_error(&e),
    };
    assert!(data.len() <= pex::MAX_MESSAGE);
    let v4 = msg.added.iter().filter(|p| p.addr.is_ipv4()).count();
    let v6 = msg.added.len() - v4;
    assert!(
        v4 <= pex::MAX_ACCEPTED && v6 <= pex::MAX_ACCEPTED,
        "{v4} + {v6} added"
    );
    let d4 = msg.dropped.iter().filter(|a| a.is_ipv4()).count();
    let d6 = msg.dropped.len() - d4;
    assert!(
        d4 <= pex::MAX_ACCEPTED && d6 <= pex::MAX_ACCEPTED,
        "{d4} + {d6} dropped"
    );
    for p in &msg.added {
        assert!(p.addr.port() != 0 && !p.addr.ip().is_unspecified() && !p.addr.ip().is_multicast());
    }
    let canon = |a: &SocketAddr| match a {
        SocketAddr::V6(v6) => v6
            .ip()
            .to_ipv4_mapped()
            .map_or(*a, |v4| SocketAddr::new(v4.into(), a.port())),
        SocketAddr::V4(_) => *a,
    };
    let enc = pex::encode(&msg.added, &msg.dropped);
    let back = pex::parse(&enc).expect("our own ut_pex message");
    let added: HashSet<(SocketAddr, u8)> = msg
        .added
        .iter()
        .map(|p| (canon(&p.addr), p.flags))
        .collect();
    for p in &back.added {
        assert!(
            added.contains(&(p.addr, p.flags)),
            "{p:?} was not in the message"
        );
    }
    let dropped: HashSet<SocketAddr> = msg.dropped.iter().map(canon).collect();
    for a in &back.dropped {
        assert!(dropped.contains(a), "{a} was not dropped in the message");
    }
    assert!(back.added.len() <= 2 * pex::MAX_SENT && back.dropped.len() <= 2 * pex::MAX_SENT);
}

// ---------------------------------------------------------------------------------------
// trackers
// ---------------------------------------------------------------------------------------

fn check_tracker_error(e: &TrackerError) {
    check_error(e);
    match e {
        TrackerError::Failure(text) => {
            assert!(text.chars().count() <= MESSAGE_MAX_CHARS + 1);
            assert!(
                !text.chars().any(char::is_control),
                "control char in {text:?}"
            );
        }
        TrackerError::InvalidResponse { excerpt, .. } => {
            assert!(excerpt.chars().count() <= tracker::EXCERPT_MAX_CHARS);
            assert!(excerpt.bytes().all(|b| (0x20..=0x7e).contains(&b)));
        }
        _ => {}
    }
}

fn check_peers(peers: &[SocketAddr]) {
    let set: HashSet<_> = peers.iter().collect();
    assert_eq!(set.len(), peers.len(), "duplicate peers");
    for p in peers {
        assert!(p.port() != 0 && !p.ip().is_unspecified(), "{p}");
        if let SocketAddr::V6(v6) = p {
            assert!(v6.ip().to_ipv4_mapped().is_none(), "{p} not normalised");
        }
    }
}

fn check_announce(r: &AnnounceResponse) {
    assert!((MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(&r.interval));
    if let Some(m) = r.min_interval {
        assert!((MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(&m));
    }
    assert!(r.regular_interval() >= r.interval);
    check_peers(&r.peers);
    if let Some(w) = &r.warning {
        assert!(w.chars().count() <= MESSAGE_MAX_CHARS + 1 && !w.chars().any(char::is_control));
    }
}

/// BEP 15 UDP tracker datagrams: connect, announce (IPv4 and IPv6 peer formats) and scrape
/// answers, with the transaction id taken from the datagram (so the body is reached) and a
/// wrong one (always refused). Peers bounded by the datagram, unique, dialable; intervals
/// clamped; scrape entries at most one per hash asked.
pub fn check_tracker_udp(data: &[u8]) {
    let tid = data
        .get(4..8)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    for t in [tid, tid.wrapping_add(1)] {
        match udp::parse_connect(data, t) {
            Ok(_) => assert!(t == tid && data.len() >= 16),
            Err(e) => check_tracker_error(&e),
        }
        for v6 in [false, true] {
            match udp::parse_announce(data, t, v6) {
                Ok(r) => {
                    assert!(t == tid && data.len() >= 20);
                    check_announce(&r);
                    let entry = if v6 { 18 } else { 6 };
                    assert!(r.peers.len() <= (data.len() - 20) / entry);
                    assert!(r.complete.is_none_or(|n| n <= i32::MAX as u32));
                }
                Err(e) => check_tracker_error(&e),
            }
        }
        let asked: Vec<InfoHash> = (0..udp::MAX_SCRAPE as u8)
            .map(|i| InfoHash([i; 20]))
            .collect();
        for n in [0, 1, udp::MAX_SCRAPE] {
            match udp::parse_scrape(data, t, &asked[..n]) {
                Ok(v) => {
                    assert!(t == tid);
                    assert!(v.len() <= n && v.len() <= (data.len() - 8) / 12);
                    for (i, (h, _)) in v.iter().enumerate() {
                        assert_eq!(*h, asked[i]);
                    }
                }
                Err(e) => check_tracker_error(&e),
            }
        }
    }
}

/// HTTP tracker bodies (BEP 3, 7, 23, 48): announce and scrape answers. Intervals clamped,
/// peers unique, dialable and normalised, messages sanitised and bounded, scrape entries
/// at most one per 20-byte key.
pub fn check_tracker_http(data: &[u8]) {
    match http::parse_announce_response(data) {
        Ok(r) => check_announce(&r),
        Err(e) => check_tracker_error(&e),
    }
    match http::parse_scrape_response(data) {
        Ok(v) => assert!(v.len() <= data.len() / 20),
        Err(e) => check_tracker_error(&e),
    }
    let ex = tracker::excerpt(data);
    assert!(ex.chars().count() <= tracker::EXCERPT_MAX_CHARS);
    let msg = tracker::sanitize_message(data);
    assert!(msg.chars().count() <= MESSAGE_MAX_CHARS + 1 && !msg.chars().any(char::is_control));
}

// ---------------------------------------------------------------------------------------
// BEP 14 Local Service Discovery
// ---------------------------------------------------------------------------------------

/// An LSD datagram (BEP 14): longer than [`lsd::MAX_RECEIVE`] is refused unread; an
/// accepted one has a port 1..=65535 and 1..=30 distinct info hashes, each written in the
/// input (either case); what we would send for it, in datagrams of at most
/// [`lsd::MAX_DATAGRAM`] bytes, parses back to the same port, cookie and info hashes.
pub fn check_lsd(data: &[u8]) {
    let a = match lsd::parse(data) {
        Ok(a) => a,
        Err(e) => {
            if data.len() > lsd::MAX_RECEIVE {
                assert_eq!(e, lsd::ParseError::TooLong(data.len()));
            }
            return check_error(&e);
        }
    };
    assert!(data.len() <= lsd::MAX_RECEIVE);
    assert!(a.port != 0);
    assert!(
        (1..=30).contains(&a.info_hashes.len()),
        "{} info hashes",
        a.info_hashes.len()
    );
    let distinct: HashSet<&InfoHash> = a.info_hashes.iter().collect();
    assert_eq!(distinct.len(), a.info_hashes.len(), "duplicates kept");
    let text = std::str::from_utf8(data)
        .expect("accepted datagrams are text")
        .to_ascii_lowercase();
    for ih in &a.info_hashes {
        assert!(text.contains(&ih.to_hex()), "{ih} is not in the datagram");
    }
    let cookie = a.cookie.clone().unwrap_or_default();
    if cookie.len() > 64 || cookie.contains(['\r', '\n']) {
        return; // not a cookie we would send
    }
    let per = lsd::hashes_per_datagram(a.port, &cookie);
    for chunk in a.info_hashes.chunks(per) {
        let enc = lsd::encode(a.port, &cookie, chunk);
        assert!(enc.len() <= lsd::MAX_DATAGRAM, "{} bytes", enc.len());
        let back = lsd::parse(&enc).expect("our own LSD datagram");
        assert_eq!(back.port, a.port);
        assert_eq!(back.cookie.as_deref(), Some(cookie.as_str()));
        assert_eq!(back.info_hashes, chunk);
    }
}

// ---------------------------------------------------------------------------------------
// BEP 29 uTP
// ---------------------------------------------------------------------------------------

/// Datagrams sent by a connection under test, kept only as a count and checked to parse.
struct UtpSink(usize);

impl utp::conn::Out for UtpSink {
    fn send(&mut self, d: &[u8]) -> bool {
        let p = utp::packet::Packet::parse(d).expect("our own uTP packet parses");
        assert!(d.len() <= utp::conn::MAX_DATAGRAM, "{} bytes", d.len());
        assert!(p.payload.len() <= utp::conn::MSS);
        self.0 += 1;
        true
    }
}

/// One datagram: refused with a bounded error, or parsed so that the header writes back
/// to the same 20 bytes, a selective ACK is not empty (of any length: libtorrent sends
/// `(span + 7) / 8` bytes) and lies inside the datagram, and the payload is the
/// datagram's tail.
pub fn check_utp_packet(data: &[u8]) {
    use utp::packet::{HEADER_LEN, Packet};
    match Packet::parse(data) {
        Err(e) => check_error(&e),
        Ok(p) => {
            let mut h = [0u8; HEADER_LEN];
            p.header.write(data[1], &mut h);
            assert_eq!(&h[..], &data[..HEADER_LEN]);
            if let Some(m) = p.sack {
                assert!(!m.is_empty() && m.len() <= data.len() - HEADER_LEN - 2);
            }
            assert!(data.ends_with(p.payload));
            assert!(p.payload.len() <= data.len() - HEADER_LEN);
        }
    }
}

/// A connection fed hostile datagrams: the input is a sequence of `[op, len, bytes...]`
/// records. Op bit 0..1: deliver `bytes` as a datagram to an established connection (and
/// end the batch), write `len` bytes to it, read from it, or advance the clock by
/// `len × 10 ms` and run its timers. Nothing may panic (counters that would underflow do in
/// these builds), the connection's datagrams parse, and its buffers stay bounded.
pub fn check_utp_conn(data: &[u8]) {
    use utp::conn::{Conn, RECV_WINDOW, SEND_BUFFER};
    use utp::packet::{HEADER_LEN, Header, Packet, PacketType};
    let mut out = UtpSink(0);
    let syn = Header {
        kind: PacketType::Syn,
        conn_id: 1000,
        timestamp_us: 1,
        timestamp_diff_us: 0,
        wnd_size: 1 << 20,
        seq_nr: 500,
        ack_nr: 0,
    };
    let mut now = 1_000u64;
    let mut c = Conn::accept(&syn, 7000, now, &mut out);
    let payload = [0xabu8; 4096];
    let mut buf = [0u8; 8192];
    let mut rest = data;
    while rest.len() >= 2 {
        let (op, len) = (rest[0], rest[1] as usize);
        rest = &rest[2..];
        match op & 3 {
            0 => {
                let n = len.min(rest.len());
                let (d, tail) = rest.split_at(n);
                rest = tail;
                // the datagram with its connection id set to ours, so it reaches the
                // connection's logic rather than the socket's routing
                let mut dg = d.to_vec();
                if dg.len() >= HEADER_LEN {
                    dg[2..4].copy_from_slice(&c.recv_id().to_be_bytes());
                }
                if let Ok(p) = Packet::parse(&dg) {
                    c.on_packet(&p, now, &mut out);
                    c.ack_if_pending(now, &mut out);
                }
            }
            1 => {
                let _ = c.write(&payload[..(len * 16).min(payload.len())], now, &mut out);
            }
            2 => {
                let _ = c.read(&mut buf[..len * 32], now, &mut out);
            }
            _ => {
                now += len as u64 * 10_000;
                c.on_tick(now, &mut out);
            }
        }
        assert!(c.readable() <= RECV_WINDOW);
        assert!(c.unacked() <= SEND_BUFFER + utp::conn::MAX_IN_FLIGHT * utp::conn::MSS);
        assert!(c.flight() as usize <= c.unacked() + 1);
    }
}

/// Both uTP checks over one input.
pub fn check_utp(data: &[u8]) {
    check_utp_packet(data);
    check_utp_conn(data);
}

// ---------------------------------------------------------------------------------------
// BEP 5 DHT (KRPC)
// ---------------------------------------------------------------------------------------

/// A live DHT node of ratorrent (`ratorrent::dht::Dht`, no bootstrap nodes, no state
/// file) on 127.0.0.1 and a client socket that talks to it. KRPC datagrams are decoded
/// inside `librqbit-dht`, whose decoder is not public, so they are fuzzed the way a remote
/// node sends them: over UDP, to the node's socket.
///
/// Run the fuzz target in a network namespace with only a loopback interface (run.sh does):
/// a datagram may name nodes anywhere, and the node may contact them.
pub struct KrpcNode {
    /// Runs the node's tasks (two worker threads).
    _rt: tokio::runtime::Runtime,
    /// Kept alive for the node's lifetime.
    _dht: ratorrent::dht::Dht,
    /// Where the node listens.
    node: SocketAddr,
    /// Sends the datagrams and the pings.
    client: std::net::UdpSocket,
    /// Transaction id of the next ping.
    seq: u16,
    /// Receive buffer (64 KiB: the largest UDP datagram).
    buf: Vec<u8>,
}

/// How long the node may take to answer the ping that follows a datagram, ms.
pub const KRPC_ANSWER_MS: u64 = 10_000;

impl KrpcNode {
    /// Start the node on 127.0.0.1 (a free port) and bind the client socket.
    ///
    /// # Panics
    /// When the node or the socket cannot be started.
    pub fn start() -> KrpcNode {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let dht = rt
            .block_on(ratorrent::dht::Dht::start(ratorrent::dht::DhtOptions {
                bind: "127.0.0.1:0".parse().unwrap(),
                bootstrap: Vec::new(),
                state_file: None,
            }))
            .expect("DHT node on 127.0.0.1");
        let node = dht.local_addr();
        let client = std::net::UdpSocket::bind("127.0.0.1:0").expect("client socket");
        client
            .set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        KrpcNode {
            _rt: rt,
            _dht: dht,
            node,
            client,
            seq: 0,
            buf: vec![0; 65536],
        }
    }

    /// Send `data` to the node as one datagram (at most 65,507 bytes are sent), then a
    /// `ping`: the node reads its socket in order, so its answer to the ping shows that it
    /// decoded and handled `data` and still serves. Answers to `data` itself and queries
    /// of the node are skipped; the ping is sent again every 200 ms.
    ///
    /// # Panics
    /// When the node does not answer the ping within [`KRPC_ANSWER_MS`] (it died, hangs,
    /// or stopped serving), or when its answer is not a well-formed ping response.
    pub fn check(&mut self, data: &[u8]) {
        let data = &data[..data.len().min(65_507)];
        // a send may fail for a reason of the host (buffers full): the ping tells
        let _ = self.client.send_to(data, self.node);
        self.seq = self.seq.wrapping_add(1);
        let tid = self.seq.to_be_bytes();
        let mut ping = b"d1:ad2:id20:fuzzfuzzfuzzfuzzfuzze1:q4:ping1:t2:".to_vec();
        ping.extend_from_slice(&tid);
        ping.extend_from_slice(b"1:y1:qe");
        let mut want = b"1:t2:".to_vec();
        want.extend_from_slice(&tid);
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(KRPC_ANSWER_MS);
        while std::time::Instant::now() < deadline {
            self.client
                .send_to(&ping, self.node)
                .expect("send the ping");
            let resend = std::time::Instant::now() + std::time::Duration::from_millis(200);
            while std::time::Instant::now() < resend {
                let Ok((n, from)) = self.client.recv_from(&mut self.buf) else {
                    break;
                };
                let answer = &self.buf[..n];
                if from != self.node || find(answer, &want).is_none() {
                    continue; // an answer to `data`, a query of the node, an older ping
                }
                assert!(
                    find(answer, b"1:y1:r").is_some() && find(answer, b"2:id20:").is_some(),
                    "the node answered a ping with {:?}",
                    String::from_utf8_lossy(answer)
                );
                return;
            }
        }
        panic!(
            "the DHT node stopped answering pings after a datagram of {} bytes",
            data.len()
        );
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------------------
// web seed answers (BEP 19)
// ---------------------------------------------------------------------------------------

/// A web seed's answer head, judged as [`ratorrent::webseed::fetch::check_answer`] does.
/// Input: 4 bytes (file length - 1), 4 bytes (where the range starts, modulo the file),
/// 4 bytes (its length - 1, modulo what is left), 2 bytes (the status, modulo 600), then
/// the `Content-Range` value up to a newline and the `Content-Length` value after it (a
/// lone `-` for a header left out). Accepted answers must name exactly the range asked for;
/// errors are bounded.
pub fn check_webseed_answer(data: &[u8]) {
    use ratorrent::webseed::fetch::check_answer;
    if data.len() < 14 {
        return;
    }
    let word = |i: usize| {
        u64::from(u32::from_be_bytes([
            data[i],
            data[i + 1],
            data[i + 2],
            data[i + 3],
        ]))
    };
    let file_len = word(0) + 1;
    let at = word(4) % file_len;
    let len = 1 + word(8) % (file_len - at);
    let status = u16::from_be_bytes([data[12], data[13]]) % 600;
    let rest = &data[14..];
    let (range, length) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let header = |v: &'static [u8], x: &'_ [u8]| -> bool { x == v };
    let range = (!header(b"-", range)).then_some(range);
    let length = length.filter(|l| !header(b"-", l));
    match check_answer(status, range, length, at, len, file_len) {
        Ok(()) => {
            let declared = length
                .and_then(|l| std::str::from_utf8(l).ok())
                .and_then(|l| l.trim().parse::<u64>().ok());
            match status {
                206 => {
                    let text = String::from_utf8_lossy(range.expect("a 206 needs a range"));
                    let want = format!("{at}-{}/", at + len - 1);
                    assert!(
                        text.replace(' ', "").contains(&want),
                        "accepted {text:?} for bytes {at}-{}/{file_len}",
                        at + len - 1
                    );
                    assert!(
                        declared.is_none_or(|d| d == len),
                        "length {declared:?} for {len}"
                    );
                }
                200 => {
                    assert!(at == 0 && len == file_len && declared == Some(len));
                }
                s => panic!("status {s} accepted"),
            }
        }
        Err(e) => check_error(&e),
    }
}

// ---------------------------------------------------------------------------------------
// MSE/PE handshake
// ---------------------------------------------------------------------------------------

/// Private keys of the scripted sides of [`check_mse`] (fixed, so the fuzzer can reach
/// the encrypted fields: it writes their plaintext).
const MSE_XA: [u8; 20] = [0xA5; 20];
const MSE_XB: [u8; 20] = [0x5B; 20];
/// The torrent the fuzzed responder serves.
const MSE_SKEY: InfoHash = InfoHash([0x17; 20]);

/// Feed `input` to `hs` the way the engine's driver does (never more than
/// [`mse::MseHandshake::read_hint`] at a time, the chunk sizes also cut by `cuts`) and check
/// the bounds on the way: what it holds, what it sends, that a refused or finished
/// handshake takes nothing more, that errors say something.
fn mse_drive(
    mut hs: mse::MseHandshake,
    input: &[u8],
    cuts: &[u8],
    responder: bool,
) -> Option<mse::Established> {
    let mut find = |h: &[u8; 20]| (*h == mse::req2(&MSE_SKEY)).then_some(MSE_SKEY);
    let mut at = 0;
    let mut sent = hs.take_output().len();
    let mut i = 0;
    while at < input.len() {
        let cut = cuts.get(i).map_or(usize::MAX, |&c| usize::from(c).max(1));
        i += 1;
        let n = hs.read_hint().min(cut).min(input.len() - at);
        assert!((1..=mse::MAX_BUFFERED).contains(&n));
        let step = hs.feed(&input[at..at + n], &mut find);
        at += n;
        sent += hs.take_output().len();
        // Yb + PadB + message 4 at most (responder); message 1 + message 3 (initiator)
        assert!(sent <= mse::KEY_LEN + mse::MAX_PAD + 40 + 68 + 14 + mse::MAX_IA);
        assert!(
            hs.buffered() <= mse::MAX_BUFFERED,
            "holds {}",
            hs.buffered()
        );
        match step {
            Ok(mse::Step::NeedMore) => {}
            Ok(mse::Step::Done(est)) => {
                if responder {
                    assert_eq!(est.info_hash, MSE_SKEY, "only a served torrent is found");
                }
                assert_eq!(est.send.is_some(), est.method == mse::Method::Rc4);
                assert_eq!(est.recv.is_some(), est.method == mse::Method::Rc4);
                assert!(est.received.len() <= mse::MAX_IA + mse::MAX_BUFFERED);
                return Some(est);
            }
            Err(e) => {
                check_error(&e);
                assert!(matches!(
                    hs.feed(b"x", &mut find),
                    Err(mse::MseError::Finished)
                ));
                return None;
            }
        }
    }
    None
}

/// MSE/PE handshakes fed hostile bytes. `data[0]` picks the case, the next byte the pad
/// length, the next 8 the read sizes; the rest is:
/// - 0, 1: raw bytes to a responder, an initiator (garbage, truncations);
/// - 2: the plaintext of message 3's encrypted part (VC, crypto_provide, len(PadC), PadC,
///   len(IA), IA, ...) behind a valid `Ya`, PadA and the sync hashes, to a responder;
/// - 3: the plaintext of message 4 (VC, crypto_select, len(PadD), PadD, stream) behind a
///   valid `Yb` and PadB, to an initiator that provides `data[1] & 3`.
///
/// Invariants: no panic; at most [`mse::MAX_BUFFERED`] bytes held; bounded output; a
/// finished handshake names the served torrent and a method both sides allow; errors are
/// final and say something.
pub fn check_mse(data: &[u8]) {
    if data.len() < 10 {
        return;
    }
    let (mode, pad, cuts, rest) = (data[0] % 4, data[1], &data[2..10], &data[10..]);
    let pad_len = usize::from(pad) * 2 + usize::from(pad & 1); // 0..=511
    match mode {
        0 => {
            let allowed = u32::from(pad % 3) + 1;
            mse_drive(
                mse::MseHandshake::responder_with(allowed, MSE_XB),
                rest,
                cuts,
                true,
            );
        }
        1 => {
            let hs = mse::MseHandshake::initiator_with(
                MSE_SKEY,
                b"\x13BitTorrent protocol",
                u32::from(pad % 3) + 1,
                MSE_XA,
                pad_len,
            );
            mse_drive(hs, rest, cuts, false);
        }
        2 => {
            let s = mse::shared_secret(&MSE_XA, &mse::public_key(&MSE_XB)).unwrap();
            let mut m = mse::public_key(&MSE_XA).to_vec();
            m.extend(std::iter::repeat_n(0x42, pad_len));
            m.extend_from_slice(&mse::req1(&s));
            // the odd pads name a torrent the responder does not hold
            let skey = if pad & 1 == 0 {
                MSE_SKEY
            } else {
                InfoHash([0x99; 20])
            };
            m.extend_from_slice(&mse::req2_xor_req3(&skey, &s));
            let mut enc = rest.to_vec();
            mse::cipher(b"keyA", &s, &skey).apply(&mut enc);
            m.extend_from_slice(&enc);
            let allowed = u32::from(pad % 3) + 1;
            if let Some(est) = mse_drive(
                mse::MseHandshake::responder_with(allowed, MSE_XB),
                &m,
                cuts,
                true,
            ) {
                let bits = match est.method {
                    mse::Method::Rc4 => mse::CRYPTO_RC4,
                    mse::Method::Plaintext => mse::CRYPTO_PLAINTEXT,
                };
                assert!(allowed & bits != 0, "selected a method not allowed");
            }
        }
        _ => {
            let provide = u32::from(pad & 3).max(1);
            let hs = mse::MseHandshake::initiator_with(MSE_SKEY, b"ia", provide, MSE_XA, 0);
            let s = mse::shared_secret(&MSE_XB, &mse::public_key(&MSE_XA)).unwrap();
            let mut m = mse::public_key(&MSE_XB).to_vec();
            m.extend(std::iter::repeat_n(0x24, pad_len));
            let mut enc = rest.to_vec();
            mse::cipher(b"keyB", &s, &MSE_SKEY).apply(&mut enc);
            m.extend_from_slice(&enc);
            if let Some(est) = mse_drive(hs, &m, cuts, false) {
                let bits = match est.method {
                    mse::Method::Rc4 => mse::CRYPTO_RC4,
                    mse::Method::Plaintext => mse::CRYPTO_PLAINTEXT,
                };
                assert!(provide & bits != 0, "took a method it did not provide");
            }
        }
    }
}
