use super::*;
use std::io::Write;

fn v4(s: &str) -> IpAddr {
    IpAddr::V4(s.parse().unwrap())
}

fn v6(s: &str) -> IpAddr {
    IpAddr::V6(s.parse().unwrap())
}

#[test]
fn emule_lines_with_leading_zeros_block_inclusive_ranges() {
    let p = IpFilter::parse(
        b"001.002.003.004 - 001.002.003.255 , 000 , Some ISP\n\
          010.000.000.000-010.000.000.010,100,ten\n",
    );
    assert_eq!((p.lines, p.malformed, p.allowed), (2, 0, 0));
    let f = &p.filter;
    assert!(!f.blocks(v4("1.2.3.3")), "one below the start");
    assert!(f.blocks(v4("1.2.3.4")), "the start is inclusive");
    assert!(f.blocks(v4("1.2.3.255")), "the end is inclusive");
    assert!(!f.blocks(v4("1.2.4.0")), "one past the end");
    // leading zeros are decimal, not octal: 010 is ten
    assert!(f.blocks(v4("10.0.0.10")));
    assert!(!f.blocks(v4("8.0.0.0")), "010 read as octal would be 8");
    assert_eq!(
        f.v4_ranges(),
        &[(0x0102_0304, 0x0102_03ff), (0x0a00_0000, 0x0a00_000a)]
    );
}

#[test]
fn emule_access_levels_above_127_allow() {
    let p = IpFilter::parse(
        b"1.0.0.0 - 1.0.0.255 , 127 , blocked at 127\n\
          2.0.0.0 - 2.0.0.255 , 128 , allowed at 128\n\
          3.0.0.0 - 3.0.0.255 , 200 , allowed\n",
    );
    assert_eq!((p.lines, p.allowed, p.malformed), (1, 2, 0));
    assert!(p.filter.blocks(v4("1.0.0.7")));
    assert!(!p.filter.blocks(v4("2.0.0.7")));
    assert!(!p.filter.blocks(v4("3.0.0.7")));
}

#[test]
fn peerguardian_lines_with_colons_in_the_description() {
    let p = IpFilter::parse(
        b"Some Org:4.4.4.0-4.4.4.127\n\
          Weird: name: here:5.5.5.5-5.5.5.5\n\
          Dash-Name:6.0.0.1-6.0.0.2\n",
    );
    assert_eq!((p.lines, p.malformed), (3, 0));
    assert!(p.filter.blocks(v4("4.4.4.127")));
    assert!(!p.filter.blocks(v4("4.4.4.128")));
    assert!(p.filter.blocks(v4("5.5.5.5")));
    assert!(!p.filter.blocks(v4("5.5.5.6")));
    assert!(p.filter.blocks(v4("6.0.0.2")));
}

#[test]
fn ipv6_ranges_in_both_formats_and_mapped_ipv4() {
    let p = IpFilter::parse(
        b"2001:db8:: - 2001:db8::ffff , 0 , doc range\n\
          v6 org:2001:db9::10-2001:db9::20\n\
          9.9.9.9 - 9.9.9.9 , 0 , one v4\n",
    );
    assert_eq!((p.lines, p.malformed), (3, 0));
    let f = &p.filter;
    assert_eq!((f.v4_ranges().len(), f.v6_ranges().len()), (1, 2));
    assert!(f.blocks(v6("2001:db8::")));
    assert!(f.blocks(v6("2001:db8::ffff")));
    assert!(!f.blocks(v6("2001:db8::1:0")));
    assert!(f.blocks(v6("2001:db9::15")));
    assert!(!f.blocks(v6("2001:db9::21")));
    // a dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d
    assert!(f.blocks(v6("::ffff:9.9.9.9")));
    assert!(!f.blocks(v4("9.9.9.10")));
}

#[test]
fn comments_blank_and_malformed_lines_are_skipped_and_counted() {
    let p = IpFilter::parse(
        b"# a comment\n\
          // another\n\
          \n   \r\n\
          1.1.1.1 - 1.1.1.2 , 0 , good\r\n\
          not a line at all\n\
          1.1.1.300 - 1.1.1.400 , 0 , octet too big\n\
          2.2.2.9 - 2.2.2.1 , 0 , reversed\n\
          3.3.3.3 - 3.3.3.4 , lots , level not a number\n\
          1.2.3 - 1.2.4 , 0 , three parts\n\
          mixed:1.2.3.4-2001:db8::1\n\
          \xff\xfe latin-1 desc \xe9:7.7.7.7-7.7.7.8\n",
    );
    assert_eq!(p.lines, 2, "the good line and the Latin-1 one");
    assert_eq!(p.malformed, 6);
    assert_eq!(
        p.first_malformed,
        Some((6, "not a line at all".to_string()))
    );
    assert!(p.filter.blocks(v4("1.1.1.2")));
    assert!(p.filter.blocks(v4("7.7.7.8")));
    assert!(!p.filter.blocks(v4("2.2.2.5")));
}

#[test]
fn overlapping_and_touching_ranges_merge() {
    let p = IpFilter::parse(
        b"a:10.0.0.50-10.0.0.100\n\
          b:10.0.0.0-10.0.0.60\n\
          c:10.0.0.101-10.0.0.120\n\
          d:10.0.0.70-10.0.0.80\n\
          e:10.0.0.200-10.0.0.210\n\
          f:255.255.255.0-255.255.255.255\n\
          g:255.255.255.255-255.255.255.255\n",
    );
    assert_eq!(p.lines, 7);
    assert_eq!(
        p.filter.v4_ranges(),
        &[
            (0x0a00_0000, 0x0a00_0078),
            (0x0a00_00c8, 0x0a00_00d2),
            (0xffff_ff00, 0xffff_ffff)
        ]
    );
    assert!(p.filter.blocks(v4("10.0.0.120")));
    assert!(!p.filter.blocks(v4("10.0.0.121")));
    assert!(p.filter.blocks(v4("255.255.255.255")));
    assert!(!p.filter.blocks(v4("0.0.0.0")));
    let e = IpFilter::parse(b"");
    assert!(e.filter.is_empty());
    assert!(!e.filter.blocks(v4("1.2.3.4")));
}

#[test]
fn gzip_and_plain_files_load_alike() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"1.2.3.4 - 1.2.3.255 , 0 , x\nfoo:2001:db8::-2001:db8::ff\nbad\n";
    let plain = dir.path().join("f.dat");
    std::fs::write(&plain, text).unwrap();
    let gz = dir.path().join("f.p2p.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let a = IpFilter::load(&plain).unwrap();
    let b = IpFilter::load(&gz).unwrap();
    assert_eq!(a, b);
    assert_eq!((a.lines, a.malformed, a.filter.len()), (2, 1, 2));
    assert!(b.filter.blocks(v6("2001:db8::80")));
    // a broken gzip stream and a missing file are errors, not panics
    let broken = dir.path().join("broken.gz");
    std::fs::write(&broken, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    assert!(matches!(
        IpFilter::load(&broken),
        Err(IpFilterError::Io { .. })
    ));
    let missing = IpFilter::load(&dir.path().join("nope")).unwrap_err();
    assert!(missing.to_string().contains("nope"), "{missing}");
}

/// 500,000 eMule lines (as a real list: sorted, partly overlapping) load into a few MiB.
/// The load time is printed; it is asserted under a second in release builds
/// (`cargo test --release --lib net::ip_filter -- --nocapture`), with a loose bound in
/// debug builds.
#[test]
fn half_a_million_ranges_load_fast_and_small() {
    let mut text = String::with_capacity(500_000 * 48);
    for i in 0..500_000u32 {
        let start = 0x0100_0000u32 + i * 4096;
        let end = start + 1000 + (i % 7) * 600; // some overlap their successor
        let (s, e) = (Ipv4Addr::from(start).octets(), Ipv4Addr::from(end).octets());
        text.push_str(&format!(
            "{:03}.{:03}.{:03}.{:03} - {:03}.{:03}.{:03}.{:03} , 000 , range {i}\n",
            s[0], s[1], s[2], s[3], e[0], e[1], e[2], e[3]
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.dat");
    std::fs::write(&path, &text).unwrap();
    let t = std::time::Instant::now();
    let p = IpFilter::load(&path).unwrap();
    let took = t.elapsed();
    let mem = p.filter.memory_bytes();
    println!(
        "500000 lines ({} bytes): {} ranges after merging, loaded in {took:?}, {mem} bytes ({:.2} MiB)",
        text.len(),
        p.filter.len(),
        mem as f64 / (1 << 20) as f64
    );
    assert_eq!((p.lines, p.malformed), (500_000, 0));
    assert!(p.filter.len() > 400_000 && p.filter.len() <= 500_000);
    assert!(mem <= 4 << 20, "{mem} bytes");
    let limit = if cfg!(debug_assertions) { 20.0 } else { 1.0 };
    assert!(took.as_secs_f64() < limit, "{took:?}");
    assert!(p.filter.blocks(v4("1.0.0.0")));
    assert!(
        !p.filter
            .blocks(Ipv4Addr::from(0x0100_0000u32 + 4095).into())
    );
}
