//! An idle seeder must be idle: ONE `ratorrent download A.torrent B.torrent ... -o DIR --seed`
//! seeding 100 complete torrents (64 KiB each, one tracker, announce interval 1800 s, no
//! peer) wakes up rarely and burns next to no CPU.
//!
//! Multi-torrent headless seeding prints a line containing `seeding until interrupted` once
//! every torrent is complete and seeding. After that and 5 s of settling, over a 20 s window:
//! context switches of all its threads (voluntary + nonvoluntary, summed over
//! `/proc/PID/task/*/status`) must stay under 100 per second, and its CPU time (utime +
//! stime of `/proc/PID/stat`, clock ticks) under 1 % of one core.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::TestTracker;
use common::payload;
use common::procmem::{self, clk_tck, cpu_ticks, ctx_switches};
use common::rat::Rat;
use common::scenario::{rat_tail, scratch_dir, spawn_rat_on_free_port, stop_seeder};
use ratorrent::metainfo::InfoHash;
use sha1::{Digest, Sha1};

const TORRENTS: usize = 100;
const FILE_LEN: usize = 64 * 1024;
const PIECE: usize = 16 * 1024;
const SETTLE: Duration = Duration::from_secs(5);
const WINDOW: Duration = Duration::from_secs(20);
const MAX_SWITCHES_PER_S: f64 = 100.0;
const MAX_CPU_PCT: f64 = 1.0;

/// Bencoded byte string.
fn bstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(s);
}

/// Write a v1 single-file .torrent of `data` (named `name`) announcing to `tracker`;
/// returns its info hash. Written here, byte by byte, independent of the engine.
fn write_torrent(out: &Path, name: &str, data: &[u8], tracker: &str) -> InfoHash {
    let mut pieces = Vec::new();
    for chunk in data.chunks(PIECE) {
        pieces.extend_from_slice(&Sha1::digest(chunk));
    }
    // keys in sorted order (BEP 3): length, name, piece length, pieces
    let mut info = b"d".to_vec();
    bstr(&mut info, b"length");
    info.extend_from_slice(format!("i{}e", data.len()).as_bytes());
    bstr(&mut info, b"name");
    bstr(&mut info, name.as_bytes());
    bstr(&mut info, b"piece length");
    info.extend_from_slice(format!("i{PIECE}e").as_bytes());
    bstr(&mut info, b"pieces");
    bstr(&mut info, &pieces);
    info.push(b'e');
    let mut t = b"d".to_vec();
    bstr(&mut t, b"announce");
    bstr(&mut t, tracker.as_bytes());
    bstr(&mut t, b"info");
    t.extend_from_slice(&info);
    t.push(b'e');
    std::fs::write(out, &t).expect("write .torrent");
    InfoHash(Sha1::digest(&info).into())
}

#[test]
fn hundred_idle_torrents_cost_almost_nothing() {
    let t0 = Instant::now();
    let tracker = TestTracker::start();
    tracker.set_interval(1800);
    let dir = scratch_dir();
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir).expect("data dir");
    let mut torrents = Vec::new();
    let mut hashes = Vec::new();
    for i in 0..TORRENTS {
        let name = format!("idle-{i:03}.bin");
        let data = payload::bytes(FILE_LEN, 0x1d1e_0000 + i as u64);
        std::fs::write(data_dir.join(&name), &data).expect("write payload");
        let t = dir.path().join(format!("idle-{i:03}.torrent"));
        hashes.push(write_torrent(&t, &name, &data, &tracker.url()));
        torrents.push(t);
    }
    // sanity: the engine's parser agrees with what was written
    let m = ratorrent::metainfo::Metainfo::from_file(&torrents[0]).expect("torrent parses");
    assert_eq!(
        m.info_hash, hashes[0],
        "info hash of the hand-written torrent"
    );

    let data = data_dir.to_str().expect("utf-8 path");
    let (mut rat, port) = spawn_rat_on_free_port(|port| {
        let port = port.to_string();
        let mut args: Vec<&str> = vec!["download"];
        args.extend(torrents.iter().map(|t| t.to_str().expect("utf-8 path")));
        args.extend(["-o", data, "--seed", "--port", &port]);
        Rat::spawn(&args, "")
    });
    let pid = rat.pid();

    // ready: the line, while the process is alive
    let ready_by = Instant::now() + Duration::from_secs(60);
    while !rat.stdout().contains("seeding until interrupted") {
        if !procmem::is_alive(pid) {
            let st = rat.wait(Duration::from_secs(2));
            panic!(
                "ratorrent exited ({}) before printing `seeding until interrupted` for {TORRENTS} \
                 torrents (multi-torrent `download ... --seed`)\n{}",
                st.map_or_else(|e| e.0, |s| s.to_string()),
                rat_tail(&rat)
            );
        }
        assert!(
            Instant::now() < ready_by,
            "no `seeding until interrupted` within 60 s for {TORRENTS} torrents\n{}",
            rat_tail(&rat)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ready_s = t0.elapsed().as_secs_f64();
    // every torrent announced itself as a seed
    let announced = |tracker: &TestTracker| {
        hashes
            .iter()
            .filter(|h| {
                tracker
                    .announces_for(h)
                    .iter()
                    .any(|a| a.left == Some(0) && a.addr.port() == port)
            })
            .count()
    };
    common::wait_until(Duration::from_secs(10), || announced(&tracker) == TORRENTS);
    let seeds = announced(&tracker);

    std::thread::sleep(SETTLE);
    let (c0, cpu0, w0) = (
        ctx_switches(pid).expect("read ctx switches"),
        cpu_ticks(pid).expect("read cpu ticks"),
        Instant::now(),
    );
    let announces0 = tracker.announces().len();
    std::thread::sleep(WINDOW);
    let (c1, cpu1, secs) = (
        ctx_switches(pid).expect("read ctx switches"),
        cpu_ticks(pid).expect("read cpu ticks"),
        w0.elapsed().as_secs_f64(),
    );
    let announces = tracker.announces().len() - announces0;
    let switches = c1.total().saturating_sub(c0.total());
    let per_s = switches as f64 / secs;
    let ticks = cpu1.saturating_sub(cpu0);
    let cpu_pct = ticks as f64 / clk_tck() as f64 / secs * 100.0;
    let mem = procmem::mem_kib(pid).unwrap_or_default();
    let figures = format!(
        "{TORRENTS} torrents seeding (ready {ready_s:.1} s after start, {seeds} announced left=0); \
         over {secs:.1} s: {switches} context switches = {per_s:.1}/s (voluntary {} → {}, \
         nonvoluntary {} → {}, threads {} → {}), CPU {ticks} ticks of 1/{} s = {cpu_pct:.2} % of \
         one core, {announces} tracker announces; RSS {:.1} MiB, RssAnon {:.1} MiB",
        c0.voluntary,
        c1.voluntary,
        c0.nonvoluntary,
        c1.nonvoluntary,
        c0.threads,
        c1.threads,
        clk_tck(),
        mem.0 as f64 / 1024.0,
        mem.1 as f64 / 1024.0,
    );
    eprintln!("{figures}");
    let mut failures = Vec::new();
    if seeds < TORRENTS {
        failures.push(format!(
            "only {seeds} of {TORRENTS} torrents announced left=0"
        ));
    }
    if per_s >= MAX_SWITCHES_PER_S {
        failures.push(format!(
            "{per_s:.1} context switches/s while idle (limit {MAX_SWITCHES_PER_S})"
        ));
    }
    if cpu_pct >= MAX_CPU_PCT {
        failures.push(format!(
            "{cpu_pct:.2} % CPU of one core while idle (limit {MAX_CPU_PCT} %)"
        ));
    }
    if let Err(e) = stop_seeder(&mut rat) {
        failures.push(e.0.lines().next().unwrap_or_default().to_owned());
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n- {}\n\n=== figures ===\n{figures}\n\n{}",
        failures.len(),
        failures.join("\n- "),
        rat_tail(&rat)
    );
}
