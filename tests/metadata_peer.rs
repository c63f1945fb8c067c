//! The peer of a magnet link, through the real binary (issue 16 items 1 and 2): a scripted
//! seeder on loopback that serves the metadata (BEP 9) and the data, and that says some
//! things only once, as many real peers do:
//!
//! - `metadata_size` 0 (or no size at all) in its first extension handshake: "I cannot
//!   serve metadata now". The peer is kept and not asked for metadata until a later
//!   handshake announces a size.
//! - its availability (a bitfield, `have`s, `have all`, allowed-fast pieces) and its
//!   extension handshake on its first connection only: the connection that served the
//!   metadata must be kept through the switch to downloading, with everything the peer
//!   told us before, or the download never starts. Metadata of one piece and of a
//!   multi-megabyte info dictionary (like the handed case p05b: 14 MB).

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::payload;
use common::rat::Rat;
use ratorrent::peer::extension::{self, OurHandshake, UT_METADATA_ID};
use ratorrent::peer::metadata::{self as bep9, MetadataMsg};
use ratorrent::peer::wire::{self, HANDSHAKE_LEN, Message};
use sha1::{Digest, Sha1};

const PIECE_LEN: u32 = 16 * 1024;

/// What the scripted seeder serves.
struct Served {
    info: Vec<u8>,
    info_hash: [u8; 20],
    payload: Vec<u8>,
    name: String,
}

impl Served {
    /// A single-file torrent of `len` bytes whose info dictionary is padded with an extra
    /// key (ignored by clients, hashed like the rest) to about `info_size` bytes.
    fn new(name: &str, len: usize, info_size: usize, seed: u64) -> Served {
        let payload = payload::bytes(len, seed);
        let mut pieces = Vec::new();
        for chunk in payload.chunks(PIECE_LEN as usize) {
            pieces.extend_from_slice(&Sha1::digest(chunk));
        }
        let mut info = format!(
            "d6:lengthi{len}e4:name{}:{name}12:piece lengthi{PIECE_LEN}e6:pieces{}:",
            name.len(),
            pieces.len()
        )
        .into_bytes();
        info.extend_from_slice(&pieces);
        let pad = info_size.saturating_sub(info.len() + 20);
        if pad > 0 {
            info.extend_from_slice(format!("9:x-padding{pad}:").as_bytes());
            info.extend(std::iter::repeat_n(b'p', pad));
        }
        info.push(b'e');
        let info_hash: [u8; 20] = Sha1::digest(&info).into();
        Served {
            info,
            info_hash,
            payload,
            name: name.to_owned(),
        }
    }

    fn pieces(&self) -> u32 {
        self.payload.len().div_ceil(PIECE_LEN as usize) as u32
    }

    fn magnet(&self, peer: SocketAddr) -> String {
        let hex: String = self.info_hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("magnet:?xt=urn:btih:{hex}&dn={}&x.pe={peer}", self.name)
    }
}

/// How the seeder tells what it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Availability {
    /// A full bitfield.
    Bitfield,
    /// One `have` per piece.
    Haves,
    /// `have all` (BEP 6).
    HaveAll,
    /// `have all` and every piece allowed fast (BEP 6); it never unchokes.
    AllowedFastOnly,
}

/// The seeder's script.
#[derive(Clone, Debug)]
struct Script {
    /// `metadata_size` in successive extension handshakes, one every `size_step` (`None`:
    /// no such key). The last one is what it can serve from then on.
    sizes: Vec<Option<u32>>,
    size_step: Duration,
    availability: Availability,
    /// Tell the availability on every connection (`false`: on the first one only).
    repeat: bool,
}

/// What the seeder saw.
#[derive(Default)]
struct Seen {
    connections: AtomicU32,
    /// Metadata requests that came before it announced a size it can serve.
    early_requests: AtomicU32,
    metadata_pieces: AtomicU32,
    blocks: AtomicU32,
    /// A connection was closed by ratorrent after the whole metadata was served.
    closed_after_metadata: AtomicBool,
    errors: std::sync::Mutex<Vec<String>>,
}

struct Seeder {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Seeder {
    fn start(served: Arc<Served>, script: Script) -> Seeder {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let s2 = seen.clone();
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(c) = c else { continue };
                let (served, script, seen) = (served.clone(), script.clone(), s2.clone());
                std::thread::spawn(move || {
                    if let Err(e) = serve(c, &served, &script, &seen) {
                        seen.errors.lock().unwrap().push(e.to_string());
                    }
                });
            }
        });
        Seeder { addr, seen }
    }

    fn describe(&self) -> String {
        let s = &self.seen;
        format!(
            "seeder saw {} connections, {} metadata pieces served, {} early metadata requests, \
             {} blocks served, closed after the metadata: {}, errors: {:?}",
            s.connections.load(Ordering::Relaxed),
            s.metadata_pieces.load(Ordering::Relaxed),
            s.early_requests.load(Ordering::Relaxed),
            s.blocks.load(Ordering::Relaxed),
            s.closed_after_metadata.load(Ordering::Relaxed),
            s.errors.lock().unwrap()
        )
    }
}

fn send(c: &mut TcpStream, m: Message) -> std::io::Result<()> {
    let mut out = BytesMut::new();
    m.encode(&mut out);
    c.write_all(&out)
}

fn ext_handshake(size: Option<u32>) -> Message {
    Message::Extended {
        ext_id: 0,
        payload: extension::encode_handshake(&OurHandshake {
            listen_port: 0,
            metadata_size: size,
            yourip: None,
            pex: false,
        }),
    }
}

/// One connection of the seeder. It speaks plaintext only: a connection that does not open
/// with a BitTorrent handshake (ratorrent's MSE attempt under encryption "prefer") is
/// closed and not counted; the others are numbered from 0 in `seen.connections`.
fn serve(mut c: TcpStream, served: &Served, script: &Script, seen: &Seen) -> std::io::Result<()> {
    let mut h = [0u8; HANDSHAKE_LEN];
    c.read_exact(&mut h)?;
    if h[..20] != *b"\x13BitTorrent protocol" {
        return Ok(());
    }
    let n = seen.connections.fetch_add(1, Ordering::Relaxed) as usize;
    if h[28..48] != served.info_hash {
        return Err(std::io::Error::other(format!(
            "connection {n}: handshake for another torrent"
        )));
    }
    let mut ours = h;
    ours[20..28].fill(0);
    ours[20 + wire::RESERVED_EXTENSION.0] |= wire::RESERVED_EXTENSION.1;
    ours[20 + wire::RESERVED_FAST.0] |= wire::RESERVED_FAST.1;
    ours[48..68].copy_from_slice(b"-XX0001-metadatapeer");
    c.write_all(&ours)?;
    let pieces = served.pieces();
    let tell = n == 0 || script.repeat;
    if tell {
        match script.availability {
            Availability::Bitfield => {
                let mut bits = vec![0u8; pieces.div_ceil(8) as usize];
                for p in 0..pieces {
                    bits[(p / 8) as usize] |= 0x80 >> (p % 8);
                }
                send(&mut c, Message::Bitfield(Bytes::from(bits)))?;
            }
            Availability::Haves => {
                for p in 0..pieces {
                    send(&mut c, Message::Have(p))?;
                }
            }
            Availability::HaveAll => send(&mut c, Message::HaveAll)?,
            Availability::AllowedFastOnly => {
                send(&mut c, Message::HaveAll)?;
                for p in 0..pieces {
                    send(&mut c, Message::AllowedFast(p))?;
                }
            }
        }
    }
    // the handshakes after the first come on the first connection only when the script
    // says so; a later connection starts where the script ended
    let mut next_size = if n == 0 { 0 } else { script.sizes.len() - 1 };
    let real = script.sizes.len() - 1;
    let mut next_at = Instant::now();
    let mut their_ut_metadata: Option<u8> = None;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    c.set_read_timeout(Some(Duration::from_millis(20)))?;
    let mut served_whole = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        if next_size < script.sizes.len() && Instant::now() >= next_at {
            if tell || next_size == real {
                send(&mut c, ext_handshake(script.sizes[next_size]))?;
            }
            next_size += 1;
            next_at = Instant::now() + script.size_step;
        }
        match c.read(&mut chunk) {
            Ok(0) => {
                if served_whole {
                    seen.closed_after_metadata.store(true, Ordering::Relaxed);
                }
                return Ok(());
            }
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => {
                if served_whole {
                    seen.closed_after_metadata.store(true, Ordering::Relaxed);
                }
                return if e.kind() == std::io::ErrorKind::ConnectionReset {
                    Ok(())
                } else {
                    Err(e)
                };
            }
        }
        while let Some(m) = wire::decode(&mut buf, 1 << 20).map_err(std::io::Error::other)? {
            match m {
                Message::Extended { ext_id: 0, payload } => {
                    let h = extension::parse_handshake(&payload).map_err(std::io::Error::other)?;
                    their_ut_metadata = h.ut_metadata;
                }
                Message::Extended { ext_id, payload } if ext_id == UT_METADATA_ID => {
                    let Ok(MetadataMsg::Request { piece }) = bep9::parse(&payload) else {
                        continue;
                    };
                    let id = their_ut_metadata
                        .ok_or_else(|| std::io::Error::other("metadata request, no ut_metadata"))?;
                    if next_size <= real {
                        // it has not announced a size it can serve yet
                        seen.early_requests.fetch_add(1, Ordering::Relaxed);
                        send(
                            &mut c,
                            Message::Extended {
                                ext_id: id,
                                payload: bep9::encode_reject(piece),
                            },
                        )?;
                        continue;
                    }
                    let data = bep9::encode_data(&served.info, piece)
                        .ok_or_else(|| std::io::Error::other("metadata piece out of range"))?;
                    send(
                        &mut c,
                        Message::Extended {
                            ext_id: id,
                            payload: data,
                        },
                    )?;
                    let k = seen.metadata_pieces.fetch_add(1, Ordering::Relaxed) + 1;
                    if k as usize >= served.info.len().div_ceil(16 * 1024) {
                        served_whole = true;
                    }
                }
                Message::Interested if script.availability != Availability::AllowedFastOnly => {
                    send(&mut c, Message::Unchoke)?;
                }
                Message::Request(b) => {
                    let start = b.piece as usize * PIECE_LEN as usize + b.begin as usize;
                    let end = start + b.length as usize;
                    if end > served.payload.len() {
                        return Err(std::io::Error::other("request past the end"));
                    }
                    send(
                        &mut c,
                        Message::Piece {
                            piece: b.piece,
                            begin: b.begin,
                            data: Bytes::copy_from_slice(&served.payload[start..end]),
                        },
                    )?;
                    seen.blocks.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    }
}

/// Download `served` by its magnet link from a seeder following `script`, through
/// `ratorrent download`; panics with what both sides saw unless the payload arrives
/// byte-exact within `timeout`.
fn download(served: Served, script: Script, timeout: Duration) -> Arc<Seen> {
    let served = Arc::new(served);
    let seeder = Seeder::start(served.clone(), script.clone());
    let dir = common::temp_dir();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let link = served.magnet(seeder.addr);
    let port = common::free_port().to_string();
    let secs = timeout.as_secs().to_string();
    let mut rat = Rat::spawn(
        &[
            "download",
            &link,
            "-o",
            out.to_str().unwrap(),
            "--port",
            &port,
            "--timeout",
            &secs,
        ],
        "",
    );
    let status = rat.wait(timeout + Duration::from_secs(20));
    let got = std::fs::read(out.join(&served.name)).unwrap_or_default();
    let ok = matches!(&status, Ok(s) if s.success()) && got == served.payload;
    assert!(
        ok,
        "{script:?}: the download did not complete byte-exact ({status:?}, {} of {} bytes); {}\n{}",
        got.len(),
        served.payload.len(),
        seeder.describe(),
        rat.output()
    );
    seeder.seen.clone()
}

fn assert_not_asked_early(seen: &Seen) {
    assert_eq!(
        seen.early_requests.load(Ordering::Relaxed),
        0,
        "asked for metadata before the peer announced a size"
    );
}

/// Item 2: `metadata_size` 0, then the real size 1.5 s later on the same connection. The
/// peer is kept, not asked before, and serves the metadata and the data on its first
/// connection.
#[test]
fn a_zero_then_a_real_metadata_size_keeps_the_peer() {
    let served = Served::new("zero-then-real.bin", 300_000, 40_000, 0x16_0201);
    let size = served.info.len() as u32;
    let seen = download(
        served,
        Script {
            sizes: vec![Some(0), Some(size)],
            size_step: Duration::from_millis(1500),
            availability: Availability::Bitfield,
            repeat: true,
        },
        Duration::from_secs(60),
    );
    assert_not_asked_early(&seen);
}

/// Item 2 variant: no `metadata_size` key at all, then 0, then the real size.
#[test]
fn no_size_then_zero_then_a_real_size_keeps_the_peer() {
    let served = Served::new("none-zero-real.bin", 100_000, 0, 0x16_0202);
    let size = served.info.len() as u32;
    let seen = download(
        served,
        Script {
            sizes: vec![None, Some(0), Some(size)],
            size_step: Duration::from_millis(800),
            availability: Availability::HaveAll,
            repeat: true,
        },
        Duration::from_secs(60),
    );
    assert_not_asked_early(&seen);
}

/// Item 1: a bitfield on the first connection only, a 14 MB info dictionary (873
/// metadata pieces, as in the handed case p05b). The download needs the connection that
/// served the metadata, and what the peer said on it.
#[test]
fn the_metadata_peer_is_kept_with_its_bitfield_at_a_14_mb_info_dictionary() {
    let served = Served::new("big-info.bin", 1 << 20, 14_292_960, 0x16_0101);
    let size = served.info.len() as u32;
    assert_eq!(served.info.len().div_ceil(16 * 1024), 873);
    let seen = download(
        served,
        Script {
            sizes: vec![Some(size)],
            size_step: Duration::ZERO,
            availability: Availability::Bitfield,
            repeat: false,
        },
        Duration::from_secs(120),
    );
    // one connection: the metadata's, kept (its bitfield came only on it)
    assert_eq!(seen.connections.load(Ordering::Relaxed), 1);
    assert!(seen.blocks.load(Ordering::Relaxed) >= 64);
}

/// Item 1 variants: `have`s, `have all`, and allowed-fast pieces from a peer that never
/// unchokes, each told once, with one and with several metadata pieces; and a zero size
/// first, told once too.
#[test]
fn what_the_metadata_peer_said_once_is_kept_through_the_switch() {
    let cases = [
        (Availability::Haves, 0, vec![None]),
        (Availability::HaveAll, 100_000, vec![None]),
        (Availability::AllowedFastOnly, 0, vec![None]),
        (Availability::Bitfield, 50_000, vec![Some(0), None]),
    ];
    for (i, (availability, info_size, mut sizes)) in cases.into_iter().enumerate() {
        let served = Served::new(
            &format!("once-{i}.bin"),
            200_000 + i * 7_777,
            info_size,
            0x16_0110 + i as u64,
        );
        let real = Some(served.info.len() as u32);
        *sizes.last_mut().unwrap() = real;
        let seen = download(
            served,
            Script {
                sizes,
                size_step: Duration::from_millis(700),
                availability,
                repeat: false,
            },
            Duration::from_secs(60),
        );
        assert_not_asked_early(&seen);
        assert_eq!(
            seen.connections.load(Ordering::Relaxed),
            1,
            "{availability:?}: one connection"
        );
    }
}
