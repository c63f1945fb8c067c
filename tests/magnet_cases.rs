//! Magnet links: the shared hostile/unusual cases (tests/fixtures/magnet, copied from the
//! shared case list) with their expected outcomes, and variants of each class
//! (hash encoding, `dn` decoding, v2/hybrid hashes, extras), through the library and
//! through `ratorrent info MAGNET`.

mod common;

use std::net::SocketAddr;

use ratorrent::metainfo::{Magnet, MagnetError};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/magnet");

fn case(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}.txt")).unwrap()
}

#[test]
fn m01_base32_upper_case_hash() {
    let m = Magnet::parse(&case("m01-btih-base32-upper")).unwrap();
    assert_eq!(
        m.info_hash.to_hex(),
        "6556a734d002eb0183449c4e0faa35afdf57f085"
    );
    assert_eq!(m.name.as_deref(), Some("sample"));
    assert_eq!(m.trackers, vec!["http://tracker.example.org/announce"]);
}

#[test]
fn hash_encoding_class() {
    // the same hash in every accepted spelling
    let hex = "6556a734d002eb0183449c4e0faa35afdf57f085";
    let b32 = "MVLKONGQALVQDA2ETRHA7KRVV7PVP4EF";
    for xt in [
        hex.to_string(),
        hex.to_uppercase(),
        b32.to_string(),
        b32.to_lowercase(),
        format!("{}{}", &b32[..10].to_lowercase(), &b32[10..]),
    ] {
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{xt}")).unwrap();
        assert_eq!(m.info_hash.to_hex(), hex, "{xt}");
    }
    // wrong lengths and alphabets are refused with the reason
    for xt in [
        &hex[..39],
        &format!("{hex}0"),
        &b32[..31],
        "MVLKONGQALVQDA2ETRHA7KRVV7PVP4E8", // 8 is not base32
        &format!("{}g", &hex[..39]),
        "",
    ] {
        let e = Magnet::parse(&format!("magnet:?xt=urn:btih:{xt}")).unwrap_err();
        assert!(matches!(e, MagnetError::BadInfoHash(_)), "{xt}: {e}");
        assert!(e.to_string().contains("40 hex digits or 32 base32"), "{e}");
    }
}

#[test]
fn m02_plus_is_a_space_and_escaped_plus_a_plus() {
    let m = Magnet::parse(&case("m02-dn-plus-as-space")).unwrap();
    assert_eq!(
        m.info_hash.to_hex(),
        "ebad41212241f342b63a25ec6ba0c366a8020009"
    );
    assert_eq!(m.name.as_deref(), Some("Sample Name + More"));
}

#[test]
fn dn_decoding_class() {
    let ih = "ebad41212241f342b63a25ec6ba0c366a8020009";
    for (dn, want) in [
        ("a+b", Some("a b")),
        ("a%20b", Some("a b")),
        ("a%2Bb", Some("a+b")),
        ("%E2%9C%93+ok", Some("✓ ok")),
        ("caf%E9", Some("caf\u{FFFD}")),   // not UTF-8: lossy
        ("bad%1B%5B31m", Some("bad[31m")), // terminal escapes dropped
        ("100%", Some("100%")),            // a stray % stays
        ("", None),
    ] {
        let m = Magnet::parse(&format!("magnet:?xt=urn:btih:{ih}&dn={dn}")).unwrap();
        assert_eq!(m.name.as_deref(), want, "{dn}");
    }
}

#[test]
fn m03_hybrid_uses_the_v1_hash() {
    let m = Magnet::parse(&case("m03-hybrid-btih-btmh")).unwrap();
    assert_eq!(
        m.info_hash.to_hex(),
        "82e23597adfb0ad6d2f9cf2761a74d7359f38cc6"
    );
    let v2: String = m
        .info_hash_v2
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        v2,
        "e3d7397a7f2247340e8b7418afa79dc6da7784f6f23f1cd102d04cd1705b5478"
    );
    assert_eq!(m.name.as_deref(), Some("sample-hybrid"));
}

#[test]
fn v2_class() {
    let v2 = "1220e3d7397a7f2247340e8b7418afa79dc6da7784f6f23f1cd102d04cd1705b5478";
    let v1 = "82e23597adfb0ad6d2f9cf2761a74d7359f38cc6";
    // the order of the two xt does not matter
    let m = Magnet::parse(&format!("magnet:?xt=urn:btmh:{v2}&xt=urn:btih:{v1}")).unwrap();
    assert_eq!(m.info_hash.to_hex(), v1);
    assert!(m.info_hash_v2.is_some());
    // numbered keys
    let m = Magnet::parse(&format!("magnet:?xt.1=urn:btih:{v1}&xt.2=urn:btmh:{v2}")).unwrap();
    assert!(m.info_hash_v2.is_some());
    // v2 alone: a v2-only torrent, known on the wire by the v2 hash cut to 20 bytes
    let m = Magnet::parse(&format!("magnet:?xt=urn:btmh:{v2}")).unwrap();
    assert!(m.is_v2_only());
    assert_eq!(m.info_hash.to_hex(), &v2[4..44]);
    assert_eq!(Magnet::parse(&m.to_link()).unwrap(), m);
    assert!(!m.to_link().contains("btih"), "{}", m.to_link());
    let text = m.describe();
    assert!(text.contains("Info hash v1:  none"), "{text}");
    // a multihash of another function or length
    for bad in [&v2[..60], "1114aabb", &format!("1320{}", &v2[4..])] {
        let e = Magnet::parse(&format!("magnet:?xt=urn:btih:{v1}&xt=urn:btmh:{bad}")).unwrap_err();
        assert!(matches!(e, MagnetError::BadInfoHashV2(_)), "{bad}: {e}");
    }
}

#[test]
fn m04_peers_selection_and_several_trackers() {
    let m = Magnet::parse(&case("m04-xpe-so-multi-tr")).unwrap();
    assert_eq!(
        m.info_hash.to_hex(),
        "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0"
    );
    assert_eq!(m.name.as_deref(), Some("sample"));
    assert_eq!(
        m.trackers,
        vec![
            "http://tracker.example.org/announce",
            "udp://tracker.example.org:6969/announce"
        ]
    );
    let want: Vec<SocketAddr> = vec![
        "127.0.0.1:6881".parse().unwrap(),
        "[::1]:51413".parse().unwrap(),
    ];
    assert_eq!(m.peers, want);
    assert_eq!(m.select_only, vec![0, 2, 4, 5, 6]);
}

#[test]
fn extras_class() {
    let ih = "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0";
    let m = Magnet::parse(&format!(
        "magnet:?xt=urn:btih:{ih}&x.pe=host.example:80&x.pe=127.0.0.1:0&x.pe=10.0.0.1:5&x.pe=10.0.0.1:5&so=3&so=1,1,0-1&ws=http://w/&kt=a+b&xl=123"
    ))
    .unwrap();
    assert_eq!(m.peers, vec!["10.0.0.1:5".parse::<SocketAddr>().unwrap()]);
    assert_eq!(
        m.notes.len(),
        2,
        "hostname and port 0 are noted: {:?}",
        m.notes
    );
    assert_eq!(m.select_only, vec![0, 1], "the last so wins");
    // empty parameters are ignored, the rest kept (issue 16 item 6)
    for extra in [
        "&tr=",
        "&x.pe=",
        "&so=",
        "&xt=",
        "&dn=",
        "&tr=+",
        "&tr",
        "&tr=%20%09",
        "&xt.2=",
        "&=",
        "&&&",
        "&TR=",
    ] {
        for link in [
            format!("magnet:?xt=urn:btih:{ih}{extra}&tr=http://t/a&dn=kept"),
            format!(
                "magnet:?{}&xt=urn:btih:{ih}&tr=http://t/a&dn=kept",
                &extra[1..]
            ),
        ] {
            let m = Magnet::parse(&link).unwrap_or_else(|e| panic!("{link}: {e}"));
            assert_eq!(m.info_hash.to_hex(), ih, "{link}");
            assert_eq!(m.trackers, vec!["http://t/a"], "{link}");
            assert_eq!(m.name.as_deref(), Some("kept"), "{link}");
            assert!(m.peers.is_empty() && m.select_only.is_empty(), "{link}");
        }
    }
    // junk lists are still refused with the reason
    for (extra, needle) in [
        ("&so=a", "so=a"),
        ("&so=1,,2", "so=1,,2"),
        ("&so=-1", "so=-1"),
    ] {
        let e = Magnet::parse(&format!("magnet:?xt=urn:btih:{ih}{extra}")).unwrap_err();
        assert!(e.to_string().contains(needle), "{extra}: {e}");
    }
}

#[test]
fn info_prints_what_a_magnet_names() {
    let home = common::temp_dir();
    let out = common::rat::command(home.path())
        .args(["info", &case("m04-xpe-so-multi-tr")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "a16c2be1a916a134c32eef4f6437dbdc2b0ac8a0",
        "sample",
        "udp://tracker.example.org:6969/announce",
        "[::1]:51413",
        "0, 2, 4-6",
    ] {
        assert!(stdout.contains(needle), "{needle} missing:\n{stdout}");
    }
    let out = common::rat::command(home.path())
        .args(["info", "magnet:?xt=urn:btih:1234"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("40 hex digits or 32 base32"), "{stderr}");
    assert!(!stderr.contains("No such file"), "{stderr}");
}

/// Issue 16 item 6 through the binary: `info` of links with empty, repeated and unknown
/// parameters prints the hash, the kept trackers once each, and says what was ignored.
#[test]
fn info_ignores_empty_repeated_and_unknown_parameters() {
    let home = common::temp_dir();
    let ih = "6556a734d002eb0183449c4e0faa35afdf57f085";
    for link in [
        format!("magnet:?xt=urn:btih:{ih}&tr=&tr=http://t.example/a&dn=sample"),
        format!(
            "magnet:?tr=&xt=urn:btih:{ih}&dn=sample&tr=http://t.example/a&tr=http://t.example/a"
        ),
        format!(
            "magnet:?xt=&XT=urn:btih:{ih}&dn=&dn=sample&x.pe=&so=&TR=http://t.example/a&kt=&ws=&xl=7"
        ),
        format!(
            "magnet:?xt=urn:btih:{ih}&xt=urn:ed2k:31D6CFE0D16AE931B73C59D7E0C089C0&tr=%20&tr=http://t.example/a&dn=sample&tr"
        ),
    ] {
        let out = common::rat::command(home.path())
            .args(["info", &link])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{link}\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(ih), "{link}\n{stdout}");
        assert!(stdout.contains("Name:          sample"), "{link}\n{stdout}");
        assert_eq!(
            stdout.matches("http://t.example/a").count(),
            1,
            "{link}\n{stdout}"
        );
        assert!(!stdout.contains("Trackers:      none"), "{link}\n{stdout}");
        if link.contains("tr=&") || link.contains("tr=%20") {
            assert!(
                stdout.contains("empty parameters ignored: tr="),
                "{link}\n{stdout}"
            );
        }
        if link.contains("ed2k") {
            assert!(
                stdout.contains("not a BitTorrent info hash"),
                "{link}\n{stdout}"
            );
        }
    }
    // with no btih at all, still refused with the reason
    let out = common::rat::command(home.path())
        .args(["info", "magnet:?xt=&tr=http://t.example/a"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no \"xt=urn:btih:\""), "{stderr}");
}
