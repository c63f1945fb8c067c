//! HTTP tracker client: the shared `tracker_http` cases (tests/fixtures/tracker_http/,
//! expectations copied in `cases.json`), our own variants of each case class, the announce
//! URL builder, and end-to-end announces against tiny HTTP servers on 127.0.0.1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ratorrent::metainfo::InfoHash;
use ratorrent::peer::PeerId;
use ratorrent::tracker::http::{
    DEFAULT_BODY_LIMIT, HttpTracker, USER_AGENT, announce_url, parse_announce_response,
    parse_scrape_response,
};
use ratorrent::tracker::{
    AnnounceEvent, AnnounceRequest, AnnounceResponse, DEFAULT_INTERVAL_SECS, EXCERPT_MAX_CHARS,
    MAX_INTERVAL_SECS, MIN_INTERVAL_SECS, ScrapeStats, TrackerError,
};

// ---------------------------------------------------------------------------------------
// helpers

fn fixture(name: &str) -> Vec<u8> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "tracker_http",
        name,
    ]
    .iter()
    .collect();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A bencoded byte string.
fn bstr(b: &[u8]) -> Vec<u8> {
    let mut out = format!("{}:", b.len()).into_bytes();
    out.extend_from_slice(b);
    out
}

/// A bencoded dictionary from already-encoded values, keys in the order given.
fn bdict(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![b'd'];
    for (k, v) in entries {
        out.extend(bstr(k.as_bytes()));
        out.extend_from_slice(v);
    }
    out.push(b'e');
    out
}

fn bint(i: i64) -> Vec<u8> {
    format!("i{i}e").into_bytes()
}

fn blist(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![b'l'];
    for i in items {
        out.extend_from_slice(i);
    }
    out.push(b'e');
    out
}

fn compact_v4(ip: [u8; 4], port: u16) -> Vec<u8> {
    let mut v = ip.to_vec();
    v.extend_from_slice(&port.to_be_bytes());
    v
}

fn compact_v6(ip: &str, port: u16) -> Vec<u8> {
    let ip: std::net::Ipv6Addr = ip.parse().unwrap();
    let mut v = ip.octets().to_vec();
    v.extend_from_slice(&port.to_be_bytes());
    v
}

fn peer_dict(ip: &str, port: Vec<u8>) -> Vec<u8> {
    bdict(&[("ip", bstr(ip.as_bytes())), ("port", port)])
}

fn ok(body: &[u8]) -> AnnounceResponse {
    parse_announce_response(body)
        .unwrap_or_else(|e| panic!("{:?} rejected: {e}", String::from_utf8_lossy(body)))
}

fn err(body: &[u8]) -> TrackerError {
    match parse_announce_response(body) {
        Ok(r) => panic!("{:?} accepted: {r:?}", String::from_utf8_lossy(body)),
        Err(e) => e,
    }
}

fn assert_invalid(body: &[u8], reason_part: &str) -> String {
    let e = err(body);
    let TrackerError::InvalidResponse { reason, excerpt } = &e else {
        panic!("expected InvalidResponse, got {e:?}");
    };
    assert!(
        reason.contains(reason_part),
        "{reason:?} lacks {reason_part:?}"
    );
    assert!(
        excerpt.len() <= EXCERPT_MAX_CHARS,
        "excerpt too long: {excerpt:?}"
    );
    assert!(
        excerpt.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "excerpt not printable ASCII: {excerpt:?}"
    );
    e.to_string()
}

// ---------------------------------------------------------------------------------------
// shared cases (expectations as in tests/fixtures/tracker_http/cases.json)

#[test]
fn r01_noncompact_dict_peers() {
    let r = ok(&fixture("r01-noncompact-dict-peers.bin"));
    assert_eq!(r.interval, 1800);
    // '::ffff:127.0.0.1' is reported as the IPv4 address it maps.
    assert_eq!(r.peers, vec![sa("127.0.0.1:6881"), sa("127.0.0.2:6882")]);
    assert_eq!(r.warning, None);
}

#[test]
fn r02_warning_with_peers() {
    let r = ok(&fixture("r02-warning-with-peers.bin"));
    assert_eq!(r.interval, 3030);
    assert_eq!(r.min_interval, Some(3030));
    assert_eq!(r.peers, vec![sa("127.0.0.1:6881")]);
    assert_eq!(
        r.warning.as_deref(),
        Some("sample warning: torrent not registered")
    );
}

#[test]
fn r03_interval_vs_min_interval() {
    let r = ok(&fixture("r03-interval-vs-min-interval.bin"));
    assert_eq!(r.interval, 2000);
    assert_eq!(r.min_interval, Some(300));
    assert_eq!(r.regular_interval(), 2000); // next_regular_announce_seconds
    assert_eq!(r.peers, vec![sa("127.0.0.1:6881")]);
}

#[test]
fn r04_garbage_html() {
    let body = fixture("r04-garbage-html.bin");
    let text = assert_invalid(&body, "tracker response is not valid bencode");
    assert!(
        text.starts_with("tracker response is not valid bencode"),
        "{text}"
    );
    assert!(
        text.contains("(got: \"<html><head><title>502 Bad Gateway"),
        "{text}"
    );
    assert!(text.len() < 300, "{text}");
}

// ---------------------------------------------------------------------------------------
// class: peer-list formats

#[test]
fn compact_v4_and_peers6() {
    let mut v4 = compact_v4([127, 0, 0, 1], 6881);
    v4.extend(compact_v4([127, 0, 0, 2], 51413));
    let mut v6 = compact_v6("::1", 6881);
    v6.extend(compact_v6("::ffff:127.0.0.3", 7000)); // mapped → V4
    let body = bdict(&[
        ("interval", bint(1800)),
        ("peers", bstr(&v4)),
        ("peers6", bstr(&v6)),
    ]);
    let r = ok(&body);
    assert_eq!(
        r.peers,
        vec![
            sa("127.0.0.1:6881"),
            sa("127.0.0.2:51413"),
            sa("[::1]:6881"),
            sa("127.0.0.3:7000"),
        ]
    );
}

#[test]
fn compact_with_port_zero_unspecified_and_duplicates() {
    let mut v4 = compact_v4([127, 0, 0, 1], 0); // port 0 dropped
    v4.extend(compact_v4([0, 0, 0, 0], 6881)); // unspecified dropped
    v4.extend(compact_v4([127, 0, 0, 5], 6881));
    v4.extend(compact_v4([127, 0, 0, 5], 6881)); // duplicate dropped
    let mut v6 = compact_v6("::ffff:127.0.0.5", 6881); // same peer, mapped
    v6.extend(compact_v6("::", 6881));
    let body = bdict(&[("peers", bstr(&v4)), ("peers6", bstr(&v6))]);
    assert_eq!(ok(&body).peers, vec![sa("127.0.0.5:6881")]);
}

#[test]
fn compact_trailing_partial_entry_is_ignored() {
    let mut v4 = compact_v4([127, 0, 0, 1], 6881);
    v4.extend_from_slice(&[127, 0, 0]); // 3 stray bytes
    let mut v6 = compact_v6("::1", 6882);
    v6.extend_from_slice(&[0; 17]);
    let body = bdict(&[
        ("interval", bint(900)),
        ("peers", bstr(&v4)),
        ("peers6", bstr(&v6)),
    ]);
    let r = ok(&body);
    assert_eq!(r.peers, vec![sa("127.0.0.1:6881"), sa("[::1]:6882")]);
    assert_eq!(r.interval, 900);
    // shorter than one entry: no peers, no error
    let body = bdict(&[("interval", bint(900)), ("peers", bstr(&[1, 2, 3, 4, 5]))]);
    assert_eq!(ok(&body).peers, vec![]);
}

#[test]
fn dict_peers_every_address_form() {
    let body = bdict(&[
        ("interval", bint(1800)),
        (
            "peers",
            blist(&[
                peer_dict("127.0.0.1", bint(6881)),
                peer_dict("::1", bint(6882)),
                peer_dict("[::2]", bint(6883)),
                peer_dict("::ffff:127.0.0.4", bint(6884)),
                peer_dict("tracker-peer.example", bint(6885)), // hostname: skipped
                peer_dict("127.0.0.6", bint(0)),               // bad port
                peer_dict("127.0.0.7", bint(65536)),           // bad port
                peer_dict("127.0.0.8", bint(-1)),              // bad port
                peer_dict("127.0.0.9", bstr(b"6889")),         // port as text: accepted
                peer_dict("127.0.0.10", bstr(b"x")),           // bad port
                peer_dict(" 127.0.0.11 ", bint(6891)),         // padded: accepted
                peer_dict("999.0.0.1", bint(6892)),            // not an address
                bdict(&[("ip", bstr(b"127.0.0.12"))]),         // no port
                bdict(&[("port", bint(6893))]),                // no ip
                bdict(&[("ip", bint(2130706433)), ("port", bint(6894))]), // ip not a string
                bdict(&[("ip", bstr(b"\xff\xfe")), ("port", bint(6895))]), // not UTF-8
                bint(5),                                       // not a dict
                blist(&[]),                                    // not a dict
                bstr(&compact_v4([127, 0, 0, 13], 6896)),      // compact item: accepted
                peer_dict("127.0.0.1", bint(6881)),            // duplicate
            ]),
        ),
    ]);
    assert_eq!(
        ok(&body).peers,
        vec![
            sa("127.0.0.1:6881"),
            sa("[::1]:6882"),
            sa("[::2]:6883"),
            sa("127.0.0.4:6884"),
            sa("127.0.0.9:6889"),
            sa("127.0.0.11:6891"),
            sa("127.0.0.13:6896"),
        ]
    );
}

#[test]
fn mixed_dict_peers_and_compact_peers6() {
    let body = bdict(&[
        ("peers6", bstr(&compact_v6("::3", 7003))),
        ("interval", bint(1800)),
        ("peers", blist(&[peer_dict("127.0.0.1", bint(7001))])),
    ]);
    // peers before peers6 whatever the key order
    assert_eq!(
        ok(&body).peers,
        vec![sa("127.0.0.1:7001"), sa("[::3]:7003")]
    );
}

#[test]
fn empty_and_missing_peer_lists() {
    for body in [
        bdict(&[("interval", bint(1800)), ("peers", bstr(b""))]),
        bdict(&[("interval", bint(1800)), ("peers", blist(&[]))]),
        bdict(&[("interval", bint(1800))]),
        bdict(&[("interval", bint(1800)), ("peers6", bstr(b""))]),
    ] {
        let r = ok(&body);
        assert_eq!(r.peers, vec![], "{}", String::from_utf8_lossy(&body));
        assert_eq!(r.interval, 1800);
    }
}

#[test]
fn peers_of_the_wrong_type_are_an_error() {
    let body = bdict(&[("interval", bint(1800)), ("peers", bint(0))]);
    assert_invalid(&body, "`peers` is an integer");
    let body = bdict(&[("peers6", bdict(&[]))]);
    assert_invalid(&body, "`peers6` is a dictionary");
}

#[test]
fn counts_and_tracker_id() {
    let body = bdict(&[
        ("complete", bint(12)),
        ("incomplete", bint(-3)),
        ("interval", bint(1800)),
        ("tracker id", bstr(b"abc-123")),
        ("peers", bstr(b"")),
    ]);
    let r = ok(&body);
    assert_eq!(r.complete, Some(12));
    assert_eq!(r.incomplete, None);
    assert_eq!(r.tracker_id.as_deref(), Some("abc-123"));
    let body = bdict(&[("incomplete", bint(1 << 40)), ("tracker id", bstr(b""))]);
    let r = ok(&body);
    assert_eq!(r.incomplete, Some(u32::MAX));
    assert_eq!(r.tracker_id, None);
}

// ---------------------------------------------------------------------------------------
// class: tracker messages

#[test]
fn failure_wins_over_peers() {
    let body = bdict(&[
        ("interval", bint(1800)),
        ("peers", bstr(&compact_v4([127, 0, 0, 1], 6881))),
        ("failure reason", bstr(b"unregistered torrent")),
    ]);
    let e = err(&body);
    assert_eq!(e, TrackerError::Failure("unregistered torrent".into()));
    assert_eq!(e.to_string(), "tracker failure: unregistered torrent");
}

#[test]
fn failure_alone_non_utf8_empty_and_non_string() {
    let e = err(&bdict(&[("failure reason", bstr(b"passkey inv\xe1lido"))]));
    assert_eq!(e, TrackerError::Failure("passkey inv\u{FFFD}lido".into()));
    let e = err(&bdict(&[("failure reason", bstr(b""))]));
    assert!(
        matches!(e, TrackerError::Failure(ref s) if s.contains("empty")),
        "{e:?}"
    );
    let e = err(&bdict(&[("failure reason", bint(7))]));
    assert!(
        matches!(e, TrackerError::Failure(ref s) if s.contains("integer")),
        "{e:?}"
    );
    // terminal escapes never reach the UI
    let e = err(&bdict(&[("failure reason", bstr(b"\x1b[2Jgone"))]));
    assert_eq!(e, TrackerError::Failure("\u{FFFD}[2Jgone".into()));
}

#[test]
fn warning_without_peers() {
    let body = bdict(&[
        ("interval", bint(600)),
        ("warning message", bstr(b"client version deprecated")),
    ]);
    let r = ok(&body);
    assert_eq!(r.warning.as_deref(), Some("client version deprecated"));
    assert_eq!(r.peers, vec![]);
    assert_eq!(r.interval, 600);
    // a warning alone is still a (peerless) success
    let r = ok(&bdict(&[("warning message", bstr(b"w\xffx\n"))]));
    assert_eq!(r.warning.as_deref(), Some("w\u{FFFD}x"));
    assert_eq!(r.interval, DEFAULT_INTERVAL_SECS);
    // empty warning is no warning
    let r = ok(&bdict(&[
        ("interval", bint(600)),
        ("warning message", bstr(b"")),
    ]));
    assert_eq!(r.warning, None);
}

// ---------------------------------------------------------------------------------------
// class: announce interval

fn intervals(interval: Option<i64>, min: Option<i64>) -> AnnounceResponse {
    let mut e = vec![("peers", bstr(b""))];
    if let Some(i) = interval {
        e.push(("interval", bint(i)));
    }
    if let Some(m) = min {
        e.push(("min interval", bint(m)));
    }
    ok(&bdict(&e))
}

#[test]
fn interval_rules() {
    // missing, zero, negative → the default; min interval dropped
    for (i, m) in [(None, None), (Some(0), Some(0)), (Some(-5), Some(-1))] {
        let r = intervals(i, m);
        assert_eq!(r.interval, DEFAULT_INTERVAL_SECS, "{i:?}");
        assert_eq!(r.min_interval, None, "{m:?}");
    }
    // tiny and huge are clamped
    let r = intervals(Some(1), Some(5));
    assert_eq!(
        (r.interval, r.min_interval),
        (MIN_INTERVAL_SECS, Some(MIN_INTERVAL_SECS))
    );
    let r = intervals(Some(9_999_999_999), Some(i64::MAX));
    assert_eq!(
        (r.interval, r.min_interval),
        (MAX_INTERVAL_SECS, Some(MAX_INTERVAL_SECS))
    );
    // in range: kept as sent
    let r = intervals(Some(1800), Some(900));
    assert_eq!((r.interval, r.min_interval), (1800, Some(900)));
    assert_eq!(r.regular_interval(), 1800);
    // min interval above interval: kept, and regular announces wait for it
    let r = intervals(Some(900), Some(3600));
    assert_eq!((r.interval, r.min_interval), (900, Some(3600)));
    assert_eq!(r.regular_interval(), 3600);
}

#[test]
fn interval_of_the_wrong_type_uses_the_default() {
    let r = ok(&bdict(&[("interval", bstr(b"1800")), ("peers", bstr(b""))]));
    assert_eq!(r.interval, DEFAULT_INTERVAL_SECS);
}

// ---------------------------------------------------------------------------------------
// class: tracker garbage

#[test]
fn garbage_bodies_are_named_errors() {
    assert_invalid(b"", "the body is empty");
    assert_invalid(b" \r\n", "the body is empty");
    let text = assert_invalid(
        b"<!DOCTYPE html><html><body><h1>404 Not Found</h1></body></html>",
        "not valid bencode",
    );
    assert!(text.contains("got: \"<!DOCTYPE html>"), "{text}");
    assert_invalid(b"d8:intervali1800e5:peers12:\x7f\x00", "not valid bencode");
    assert_invalid(b"d8:intervali1800e", "not valid bencode");
    assert_invalid(br#"{"interval": 1800, "peers": []}"#, "not valid bencode");
    assert_invalid(b"l8:intervali1800ee", "is a list, not a dictionary");
    assert_invalid(b"i1800e", "is an integer, not a dictionary");
    assert_invalid(b"4:oops", "is a string, not a dictionary");
    // a dictionary, but not an announce response (e.g. a scrape answer)
    assert_invalid(b"d5:filesdee", "without any announce key");
    assert_invalid(b"de", "without any announce key");
    // trailing junk after a complete dictionary is refused
    assert_invalid(b"d8:intervali1800e5:peers0:e<br>Notice", "trailing bytes");
    // an integer beyond 64 bits
    assert_invalid(b"d8:intervali99999999999999999999ee", "not valid bencode");
}

#[test]
fn whitespace_and_bom_around_a_valid_body_are_tolerated() {
    let r = ok(b"\xEF\xBB\xBF\r\n d8:intervali1200e5:peers0:e\n\n");
    assert_eq!(r.interval, 1200);
}

#[test]
fn control_bytes_in_excerpts_are_escaped() {
    let text = assert_invalid(b"\x00\x1b[31mHELLO\"\\\xff", "not valid bencode");
    assert!(
        text.contains(r#"(got: "\x00\x1b[31mHELLO\"\\\xff")"#),
        "{text}"
    );
}

#[test]
fn ten_megabytes_of_junk_fail_fast_with_a_short_excerpt() {
    let junk: Vec<u8> = (0..10 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let start = Instant::now();
    let text = assert_invalid(&junk, "not valid bencode");
    assert!(text.len() < 400, "{}", text.len());
    // a valid prefix followed by megabytes of junk
    let mut body = b"d8:intervali1800e5:peers".to_vec();
    body.extend(std::iter::repeat_n(b'9', 10 * 1024 * 1024));
    assert_invalid(&body, "not valid bencode");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn every_prefix_and_byte_flip_of_a_response_is_handled() {
    let body = bdict(&[
        ("complete", bint(3)),
        ("interval", bint(1800)),
        ("min interval", bint(60)),
        ("peers", blist(&[peer_dict("::ffff:127.0.0.1", bint(6881))])),
        ("peers6", bstr(&compact_v6("::1", 6881))),
        ("warning message", bstr(b"hi")),
    ]);
    assert_eq!(ok(&body).peers.len(), 2);
    for end in 0..body.len() {
        assert!(
            parse_announce_response(&body[..end]).is_err(),
            "prefix {end}"
        );
    }
    for i in 0..body.len() {
        for delta in [1u8, 0x80] {
            let mut m = body.clone();
            m[i] = m[i].wrapping_add(delta);
            let _ = parse_announce_response(&m);
        }
    }
}

// ---------------------------------------------------------------------------------------
// scrape (BEP 48)

#[test]
fn scrape_response() {
    let body = bdict(&[(
        "files",
        bdict(&[
            (
                "AAAAAAAAAAAAAAAAAAAA",
                bdict(&[
                    ("complete", bint(5)),
                    ("downloaded", bint(50)),
                    ("incomplete", bint(10)),
                ]),
            ),
            ("short", bdict(&[("complete", bint(1))])),
            ("BBBBBBBBBBBBBBBBBBBB", bint(3)),
        ]),
    )]);
    assert_eq!(
        parse_scrape_response(&body).unwrap(),
        vec![(
            InfoHash([b'A'; 20]),
            ScrapeStats {
                complete: Some(5),
                downloaded: Some(50),
                incomplete: Some(10)
            }
        )]
    );
    assert!(matches!(
        parse_scrape_response(&bdict(&[("failure reason", bstr(b"no scrape"))])),
        Err(TrackerError::Failure(_))
    ));
    assert!(matches!(
        parse_scrape_response(b"d8:intervali5ee"),
        Err(TrackerError::InvalidResponse { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// announce URL

fn request() -> AnnounceRequest {
    let mut hash = [0u8; 20];
    for (i, b) in hash.iter_mut().enumerate() {
        // every kind of byte: unreserved, reserved, control, high
        *b = [0x00, b'A', b'~', b'%', b'&', b'=', b' ', 0xff, b'z', b'/'][i % 10]
            .wrapping_add((i / 10) as u8);
    }
    AnnounceRequest {
        info_hash: InfoHash(hash),
        peer_id: PeerId(*b"-RT0100-a.b_c~d%e&f "),
        port: 51413,
        uploaded: 123,
        downloaded: 4_567_890_123,
        left: 0,
        event: Some(AnnounceEvent::Completed),
        numwant: Some(80),
        key: 0xDEADBEEF,
        tracker_id: Some("id&x=1".into()),
    }
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The query parameters of a URL or request target, percent-decoded.
fn query_params(url: &str) -> Vec<(String, Vec<u8>)> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), percent_decode(v))
        })
        .collect()
}

fn param<'a>(params: &'a [(String, Vec<u8>)], key: &str) -> Option<&'a [u8]> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_slice())
}

#[test]
fn announce_url_encodes_raw_bytes_and_every_parameter() {
    let req = request();
    let url = announce_url("http://127.0.0.1:8000/announce", &req);
    assert!(
        url.starts_with("http://127.0.0.1:8000/announce?info_hash="),
        "{url}"
    );
    // only unreserved characters and %XX escapes in the query
    let query = url.split_once('?').unwrap().1;
    assert!(
        query
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%&=".contains(&b)),
        "{query}"
    );
    let p = query_params(&url);
    assert_eq!(param(&p, "info_hash"), Some(&req.info_hash.0[..]));
    assert_eq!(param(&p, "peer_id"), Some(&req.peer_id.0[..]));
    assert_eq!(param(&p, "port"), Some(&b"51413"[..]));
    assert_eq!(param(&p, "uploaded"), Some(&b"123"[..]));
    assert_eq!(param(&p, "downloaded"), Some(&b"4567890123"[..]));
    assert_eq!(param(&p, "left"), Some(&b"0"[..]));
    assert_eq!(param(&p, "compact"), Some(&b"1"[..]));
    assert_eq!(param(&p, "no_peer_id"), Some(&b"1"[..]));
    assert_eq!(param(&p, "event"), Some(&b"completed"[..]));
    assert_eq!(param(&p, "numwant"), Some(&b"80"[..]));
    assert_eq!(param(&p, "key"), Some(&b"DEADBEEF"[..]));
    assert_eq!(param(&p, "trackerid"), Some(&b"id&x=1"[..]));
    // the unreserved bytes of the peer id stay literal
    assert!(url.contains("peer_id=-RT0100-a.b_c~d%25e%26f%20"), "{url}");
}

#[test]
fn announce_url_keeps_an_existing_query() {
    let req = request();
    let url = announce_url("https://127.0.0.1/announce.php?passkey=0123abcd", &req);
    assert!(
        url.starts_with("https://127.0.0.1/announce.php?passkey=0123abcd&info_hash="),
        "{url}"
    );
    assert_eq!(url.matches('?').count(), 1);
    let p = query_params(&url);
    assert_eq!(param(&p, "passkey"), Some(&b"0123abcd"[..]));
    assert_eq!(param(&p, "info_hash"), Some(&req.info_hash.0[..]));
}

#[test]
fn announce_url_omits_unset_optionals() {
    let mut req = request();
    req.event = None;
    req.numwant = None;
    req.tracker_id = None;
    req.key = 7;
    let url = announce_url("http://127.0.0.1/announce", &req);
    let p = query_params(&url);
    for absent in ["event", "numwant", "trackerid"] {
        assert_eq!(param(&p, absent), None, "{absent} in {url}");
    }
    assert_eq!(param(&p, "key"), Some(&b"00000007"[..]));
    for (event, text) in [
        (AnnounceEvent::Started, "started"),
        (AnnounceEvent::Stopped, "stopped"),
    ] {
        req.event = Some(event);
        let p = query_params(&announce_url("http://127.0.0.1/announce", &req));
        assert_eq!(param(&p, "event"), Some(text.as_bytes()));
    }
}

// ---------------------------------------------------------------------------------------
// end to end: tiny HTTP servers on 127.0.0.1

/// What a test server saw: the request head (request line + headers).
struct Seen {
    head: String,
}

/// Serve one connection on 127.0.0.1 in a thread: read the request head, hand it to the
/// test, then let `respond` write whatever it likes. The thread gives up after 10 s.
fn serve_once(
    respond: impl FnOnce(&mut TcpStream) + Send + 'static,
) -> (SocketAddr, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                Err(_) => return,
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let _ = tx.send(Seen {
            head: String::from_utf8_lossy(&head).into_owned(),
        });
        respond(&mut stream);
    });
    (addr, rx)
}

/// A tracker on 127.0.0.1 that answers the first request of each connection keeping it
/// alive (no `Connection: close`), then closes the connection when a second request comes
/// on it, unanswered: the race a client loses when it reuses a kept-alive connection the
/// tracker already closed. Returns its address and the number of requests answered.
fn closes_kept_alive_connections(
    body: Vec<u8>,
) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let answered = std::sync::Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { return };
            let body = body.clone();
            let count = count.clone();
            thread::spawn(move || {
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let read_head = |stream: &mut TcpStream| {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return false,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    true
                };
                if !read_head(&mut stream) {
                    return;
                }
                let mut out = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                out.extend_from_slice(&body);
                // counted before the client can have the answer
                count.fetch_add(1, Ordering::SeqCst);
                if stream.write_all(&out).is_err() {
                    return;
                }
                // the next request on this connection: closed, unanswered
                let _ = read_head(&mut stream);
            });
        }
    });
    (addr, answered)
}

fn http_response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn fast_tracker() -> HttpTracker {
    HttpTracker::with_timeouts(Duration::from_millis(500), Duration::from_millis(1000))
}

#[tokio::test]
async fn a_kept_alive_connection_the_tracker_closed_is_retried_at_once_without_an_error() {
    let body = bdict(&[("interval", bint(1800)), ("peers", bstr(b""))]);
    let (addr, answered) = closes_kept_alive_connections(body);
    let tracker = HttpTracker::with_timeouts(Duration::from_secs(5), Duration::from_secs(10));
    let url = format!("http://{addr}/announce");
    for n in 1..=3 {
        let got = tracker.announce(&url, &request()).await;
        assert!(got.is_ok(), "announce {n}: {got:?}");
        assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), n);
    }
}

#[tokio::test]
async fn announce_end_to_end_sends_the_right_query_and_parses_compact_peers() {
    let mut peers = compact_v4([127, 0, 0, 1], 6881);
    peers.extend(compact_v4([127, 0, 0, 2], 6882));
    let body = bdict(&[
        ("complete", bint(4)),
        ("incomplete", bint(9)),
        ("interval", bint(1200)),
        ("min interval", bint(120)),
        ("peers", bstr(&peers)),
        ("tracker id", bstr(b"tid-1")),
    ]);
    let (addr, seen) = serve_once(move |s| {
        let _ = s.write_all(&http_response("200 OK", "text/plain", &body));
    });
    let mut req = request();
    req.event = Some(AnnounceEvent::Started);
    req.left = 1_048_576;
    let announce = format!("http://{addr}/announce?passkey=s3cr3t");
    let resp = fast_tracker().announce(&announce, &req).await.unwrap();
    assert_eq!(
        resp,
        AnnounceResponse {
            interval: 1200,
            min_interval: Some(120),
            peers: vec![sa("127.0.0.1:6881"), sa("127.0.0.2:6882")],
            complete: Some(4),
            incomplete: Some(9),
            warning: None,
            tracker_id: Some("tid-1".into()),
        }
    );

    let head = seen.recv_timeout(Duration::from_secs(5)).unwrap().head;
    let request_line = head.lines().next().unwrap();
    let target = request_line
        .strip_prefix("GET ")
        .and_then(|r| r.strip_suffix(" HTTP/1.1"))
        .unwrap_or_else(|| panic!("{request_line}"));
    assert!(
        target.starts_with("/announce?passkey=s3cr3t&info_hash="),
        "{target}"
    );
    let p = query_params(target);
    assert_eq!(param(&p, "info_hash"), Some(&req.info_hash.0[..]));
    assert_eq!(param(&p, "peer_id"), Some(&req.peer_id.0[..]));
    assert_eq!(param(&p, "port"), Some(&b"51413"[..]));
    assert_eq!(param(&p, "left"), Some(&b"1048576"[..]));
    assert_eq!(param(&p, "event"), Some(&b"started"[..]));
    assert_eq!(param(&p, "compact"), Some(&b"1"[..]));
    let ua = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("user-agent: ")
                .or(l.strip_prefix("User-Agent: "))
        })
        .unwrap_or_else(|| panic!("no user agent in {head}"));
    assert_eq!(ua, USER_AGENT);
    assert!(ua.starts_with("ratorrent/"));
}

#[tokio::test]
async fn http_500_with_html_is_an_http_error_with_excerpt() {
    let (addr, _seen) = serve_once(|s| {
        let _ = s.write_all(&http_response(
            "500 Internal Server Error",
            "text/html",
            b"<html><body>\n<h1>Internal Server Error</h1></body></html>",
        ));
    });
    let e = fast_tracker()
        .announce(&format!("http://{addr}/announce"), &request())
        .await
        .unwrap_err();
    // the page only repeats the status: no markup, nothing more to say
    assert_eq!(
        e,
        TrackerError::Http {
            status: 500,
            excerpt: String::new()
        }
    );
    assert_eq!(
        e.to_string(),
        "tracker answered HTTP 500 Internal Server Error"
    );
}

#[tokio::test]
async fn http_4xx_with_bencoded_failure_is_a_failure() {
    let (addr, _seen) = serve_once(|s| {
        let _ = s.write_all(&http_response(
            "403 Forbidden",
            "text/plain",
            b"d14:failure reason17:invalid passkey !e",
        ));
    });
    let e = fast_tracker()
        .announce(&format!("http://{addr}/announce"), &request())
        .await
        .unwrap_err();
    assert_eq!(e, TrackerError::Failure("invalid passkey !".into()));
}

#[tokio::test]
async fn http_200_with_html_is_an_invalid_response() {
    let (addr, _seen) = serve_once(|s| {
        let _ = s.write_all(&http_response(
            "200 OK",
            "text/html",
            &fixture("r04-garbage-html.bin"),
        ));
    });
    let e = fast_tracker()
        .announce(&format!("http://{addr}/announce"), &request())
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("tracker response is not valid bencode"),
        "{e}"
    );
}

#[tokio::test]
async fn silent_tracker_hits_the_total_timeout() {
    let (addr, seen) = serve_once(|s| {
        // hold the connection open without answering, then give up by ourselves
        thread::sleep(Duration::from_secs(3));
        let _ = s.flush();
    });
    let start = Instant::now();
    let e = fast_tracker()
        .announce(&format!("http://{addr}/announce"), &request())
        .await
        .unwrap_err();
    let elapsed = start.elapsed();
    assert!(
        seen.recv_timeout(Duration::from_secs(1)).is_ok(),
        "request never arrived"
    );
    assert!(matches!(e, TrackerError::Transport(_)), "{e:?}");
    assert!(
        e.to_string().contains("no complete answer within 1 s"),
        "{e}"
    );
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
}

#[tokio::test]
async fn oversized_body_without_length_is_cut_off() {
    let (addr, _seen) = serve_once(|s| {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
        // 10 MB of junk; the client stops reading at its cap and closes
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..160 {
            if s.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let e = HttpTracker::with_timeouts(Duration::from_secs(2), Duration::from_secs(5))
        .announce(&format!("http://{addr}/announce"), &request())
        .await
        .unwrap_err();
    assert_eq!(
        e,
        TrackerError::BodyTooLarge {
            limit: DEFAULT_BODY_LIMIT
        }
    );
}

#[tokio::test]
async fn oversized_declared_length_is_refused_before_reading() {
    let (addr, _seen) = serve_once(|s| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\nConnection: close\r\n\r\nd8:interval",
        );
        thread::sleep(Duration::from_millis(500));
    });
    let start = Instant::now();
    let e = fast_tracker()
        .with_body_limit(1024)
        .announce(&format!("http://{addr}/announce"), &request())
        .await
        .unwrap_err();
    assert_eq!(e, TrackerError::BodyTooLarge { limit: 1024 });
    assert!(start.elapsed() < Duration::from_millis(900));
    assert!(e.to_string().contains("1024-byte limit"), "{e}");
}

#[tokio::test]
async fn refused_connection_is_a_transport_error_without_the_passkey() {
    let addr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }; // closed again: nothing listens there now
    let e = fast_tracker()
        .announce(
            &format!("http://{addr}/announce?passkey=s3cr3t"),
            &request(),
        )
        .await
        .unwrap_err();
    let TrackerError::Transport(text) = &e else {
        panic!("{e:?}");
    };
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(
        e.to_string().starts_with("could not reach tracker: "),
        "{e}"
    );
}

#[tokio::test]
async fn unsupported_and_invalid_urls_fail_before_any_traffic() {
    let t = fast_tracker();
    let e = t
        .announce("udp://127.0.0.1:6969/announce", &request())
        .await
        .unwrap_err();
    assert_eq!(e, TrackerError::UnsupportedScheme("udp".into()));
    assert!(e.to_string().contains("udp://"), "{e}");
    for bad in ["", "127.0.0.1/announce", "http://", "http://[::1/announce"] {
        let e = t.announce(bad, &request()).await.unwrap_err();
        assert!(matches!(e, TrackerError::InvalidUrl(_)), "{bad:?}: {e:?}");
    }
    let e = t
        .announce("wss://127.0.0.1/announce", &request())
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("only http://, https:// and udp:// trackers"),
        "{e}"
    );
}

#[tokio::test]
async fn scrape_end_to_end() {
    let body = bdict(&[(
        "files",
        bdict(&[(
            "AAAAAAAAAAAAAAAAAAAA",
            bdict(&[
                ("complete", bint(1)),
                ("downloaded", bint(2)),
                ("incomplete", bint(3)),
            ]),
        )]),
    )]);
    let (addr, seen) = serve_once(move |s| {
        let _ = s.write_all(&http_response("200 OK", "text/plain", &body));
    });
    let stats = fast_tracker()
        .scrape(
            &format!("http://{addr}/announce.php?pk=1"),
            &[InfoHash([b'A'; 20])],
        )
        .await
        .unwrap();
    assert_eq!(
        stats,
        vec![(
            InfoHash([b'A'; 20]),
            ScrapeStats {
                complete: Some(1),
                downloaded: Some(2),
                incomplete: Some(3)
            }
        )]
    );
    let head = seen.recv_timeout(Duration::from_secs(5)).unwrap().head;
    assert!(
        head.starts_with("GET /scrape.php?pk=1&info_hash=AAAAAAAAAAAAAAAAAAAA HTTP/1.1"),
        "{head}"
    );
}
