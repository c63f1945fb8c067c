//! Message Stream Encryption / Protocol Encryption (MSE/PE): the obfuscated handshake
//! that libtorrent, Transmission, qBittorrent and µTorrent put before the BitTorrent
//! handshake, as a plain state machine: it is fed the bytes that arrived and hands back the
//! bytes to send; it does no I/O (the engine's glue is `engine/peer_conn/mse.rs`, the RC4
//! stream `engine/link/encrypted.rs`).
//!
//! The exchange (A dials, B answers; `HASH` is SHA-1, `S` the Diffie-Hellman secret,
//! `SKEY` the info hash):
//!
//! 1. A → B: `Ya`, `PadA`
//! 2. B → A: `Yb`, `PadB`
//! 3. A → B: `HASH('req1', S)`, `HASH('req2', SKEY) xor HASH('req3', S)`,
//!    `ENCRYPT(VC, crypto_provide, len(PadC), PadC, len(IA))`, `ENCRYPT(IA)`
//! 4. B → A: `ENCRYPT(VC, crypto_select, len(PadD), PadD)`, then the payload stream
//! 5. A → B: the payload stream
//!
//! - Diffie-Hellman over the spec's 768-bit prime [`P`] with generator 2; public keys are
//!   96 bytes big-endian; private keys are 160 random bits ([`PRIVATE_KEY_LEN`]).
//! - RC4 keys: `HASH('keyA', S, SKEY)` encrypts A's bytes, `HASH('keyB', S, SKEY)` B's; the
//!   first 1,024 bytes of each keystream are discarded ([`RC4_DISCARD`]).
//! - `VC` is 8 zero bytes; `crypto_provide` and `crypto_select` are 32-bit big-endian
//!   bit sets: [`CRYPTO_PLAINTEXT`] (0x01: only the handshake is obfuscated) and
//!   [`CRYPTO_RC4`] (0x02: the whole stream). `ENCRYPT(IA)`, the initial payload (the
//!   initiator's BitTorrent handshake), is always RC4; what follows message 4 and `IA` is
//!   in the selected method.
//! - Pads are random bytes, at most [`MAX_PAD`] (512) long. A finds B's `VC` by scanning
//!   at most 512 + 8 bytes after `Yb`, B finds `HASH('req1', S)` at most 512 + 20 bytes
//!   after `Ya`: a peer that shows neither within that window is refused
//!   ([`MseError::NoSync`]), so a handshake never holds more than [`MAX_BUFFERED`] bytes.
//! - B learns the torrent from `HASH('req2', SKEY)`: the caller's lookup maps it to one of
//!   the info hashes it serves ([`req2`] of each).

use std::fmt;

use num_bigint::BigUint;
use rc4::{KeyInit, StreamCipher};
use sha1::{Digest, Sha1};

use crate::metainfo::InfoHash;

/// The spec's 768-bit prime (the Oakley group 1 prime), big-endian.
pub const P: [u8; KEY_LEN] = [
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC9, 0x0F, 0xDA, 0xA2, 0x21, 0x68, 0xC2, 0x34,
    0xC4, 0xC6, 0x62, 0x8B, 0x80, 0xDC, 0x1C, 0xD1, 0x29, 0x02, 0x4E, 0x08, 0x8A, 0x67, 0xCC, 0x74,
    0x02, 0x0B, 0xBE, 0xA6, 0x3B, 0x13, 0x9B, 0x22, 0x51, 0x4A, 0x08, 0x79, 0x8E, 0x34, 0x04, 0xDD,
    0xEF, 0x95, 0x19, 0xB3, 0xCD, 0x3A, 0x43, 0x1B, 0x30, 0x2B, 0x0A, 0x6D, 0xF2, 0x5F, 0x14, 0x37,
    0x4F, 0xE1, 0x35, 0x6D, 0x6D, 0x51, 0xC2, 0x45, 0xE4, 0x85, 0xB5, 0x76, 0x62, 0x5E, 0x7E, 0xC6,
    0xF4, 0x4C, 0x42, 0xE9, 0xA6, 0x3A, 0x36, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x05, 0x63,
];
/// Length of a public key and of the shared secret `S`, bytes (768 bits).
pub const KEY_LEN: usize = 96;
/// Length of our private keys, bytes (160 bits; the spec asks for at least 128).
pub const PRIVATE_KEY_LEN: usize = 20;
/// Keystream bytes thrown away before the first byte is encrypted.
pub const RC4_DISCARD: usize = 1024;
/// Longest pad (`PadA` .. `PadD`), bytes.
pub const MAX_PAD: usize = 512;
/// Longest initial payload taken from an initiator, bytes: a BitTorrent handshake is 68;
/// no client sends more than a handshake and a few messages.
pub const MAX_IA: usize = 4096;
/// `crypto_provide` / `crypto_select` bit: plaintext after the handshake.
pub const CRYPTO_PLAINTEXT: u32 = 0x01;
/// `crypto_provide` / `crypto_select` bit: RC4 for the whole stream.
pub const CRYPTO_RC4: u32 = 0x02;
/// The verification constant: 8 zero bytes, encrypted.
pub const VC: [u8; 8] = [0; 8];
/// Most bytes from a peer that a handshake holds when its driver reads no more than
/// [`MseHandshake::read_hint`]: the longest field, the initial payload ([`MAX_IA`]); the
/// sync windows (at most 628 bytes) and pads are shorter.
pub const MAX_BUFFERED: usize = MAX_IA;
const _: () = assert!(REQ1_WINDOW <= MAX_BUFFERED && MAX_PAD + 2 <= MAX_BUFFERED);
/// Where B's `VC` may end at the latest, counted from the first byte B sent.
const VC_WINDOW: usize = KEY_LEN + MAX_PAD + 8;
/// Where A's `HASH('req1', S)` may end at the latest, counted from the first byte A sent.
const REQ1_WINDOW: usize = KEY_LEN + MAX_PAD + 20;

/// What a side accepts after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// RC4 preferred, plaintext after an obfuscated handshake accepted: an initiator
    /// provides both, a responder selects RC4 when it is provided.
    Prefer,
    /// RC4 only: not one byte of the BitTorrent protocol in plaintext.
    Require,
}

impl Policy {
    /// The `crypto_provide` / allowed bits: both, or RC4 only.
    pub fn bits(self) -> u32 {
        match self {
            Policy::Prefer => CRYPTO_RC4 | CRYPTO_PLAINTEXT,
            Policy::Require => CRYPTO_RC4,
        }
    }
}

/// The method a handshake selected for the stream after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Only the handshake was obfuscated; the BitTorrent protocol goes on in plaintext.
    Plaintext,
    /// The whole stream is RC4 encrypted.
    Rc4,
}

/// One direction's RC4 keystream (RustCrypto `rc4`), its first [`RC4_DISCARD`] bytes
/// already thrown away.
pub struct Cipher(Box<rc4::Rc4>);

impl Cipher {
    /// The keystream for `key` (20 bytes: `HASH('keyA' | 'keyB', S, SKEY)`), past its first
    /// 1,024 bytes.
    fn new(key: &[u8; 20]) -> Cipher {
        let mut c = rc4::Rc4::new_from_slice(key).expect("RC4 takes 1..=256 byte keys");
        let mut discard = [0u8; RC4_DISCARD];
        c.apply_keystream(&mut discard);
        Cipher(Box::new(c))
    }

    /// XOR `buf` with the next `buf.len()` keystream bytes, in place (encrypts and
    /// decrypts alike).
    pub fn apply(&mut self, buf: &mut [u8]) {
        self.0.apply_keystream(buf);
    }
}

impl fmt::Debug for Cipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cipher(RC4)")
    }
}

/// Why a handshake was refused. Each is final: the connection is closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MseError {
    /// The peer's public key is 0, 1, `P - 1` or not below `P` (the secret would be known).
    #[error("MSE: the peer's public key is degenerate")]
    BadPublicKey,
    /// No synchronisation point (`VC`, or `HASH('req1', S)`) within the spec's window.
    #[error("MSE: no {what} within {window} bytes (not an encrypted BitTorrent peer)")]
    NoSync {
        /// What was looked for.
        what: &'static str,
        /// Bytes looked at, from the peer's first.
        window: usize,
    },
    /// `HASH('req2', SKEY)` names no torrent the session serves.
    #[error("MSE: the handshake names a torrent we do not serve")]
    UnknownTorrent,
    /// The decrypted verification constant was not 8 zero bytes (wrong keys).
    #[error("MSE: verification constant mismatch")]
    BadVc,
    /// A pad longer than 512 bytes.
    #[error("MSE: pad of {0} bytes (at most 512)")]
    PadTooLong(usize),
    /// An initial payload longer than [`MAX_IA`].
    #[error("MSE: initial payload of {0} bytes (at most 4096)")]
    IaTooLong(usize),
    /// The peer provides no method our policy allows (responder), or selected one we did
    /// not provide or more than one (initiator).
    #[error("MSE: no common method (peer's bits {theirs:#x}, ours {ours:#x})")]
    NoCommonMethod {
        /// `crypto_provide` (responder) or `crypto_select` (initiator) of the peer.
        theirs: u32,
        /// The bits our policy allows.
        ours: u32,
    },
    /// Bytes fed after the handshake ended or failed.
    #[error("MSE: handshake already finished")]
    Finished,
}

/// A finished handshake: how the stream goes on.
#[derive(Debug)]
pub struct Established {
    /// The torrent (`SKEY`): the one dialled for, or the one the responder found.
    pub info_hash: InfoHash,
    /// The selected method.
    pub method: Method,
    /// Our keystream for what we send next (`None`: plaintext).
    pub send: Option<Cipher>,
    /// The peer's keystream for what we receive next (`None`: plaintext).
    pub recv: Option<Cipher>,
    /// Bytes of the BitTorrent stream already received, in plaintext: the responder's
    /// initial payload (`IA`, decrypted) and anything after it; the initiator's bytes after
    /// `PadD`. They come before anything read from the stream later.
    pub received: Vec<u8>,
}

/// Progress of [`MseHandshake::feed`].
#[derive(Debug)]
pub enum Step {
    /// More bytes are needed (after sending [`MseHandshake::take_output`]).
    NeedMore,
    /// Done: send what [`MseHandshake::take_output`] holds (message 4 for a responder),
    /// then go on with the stream as [`Established`] says.
    Done(Established),
}

/// `HASH('req2', SKEY)`: how a responder recognises the torrent among those it serves.
pub fn req2(info_hash: &InfoHash) -> [u8; 20] {
    hash(&[b"req2", &info_hash.0])
}

/// The public key `2^x mod P` of private key `x` (big-endian bytes), 96 bytes big-endian.
pub fn public_key(private: &[u8]) -> [u8; KEY_LEN] {
    to_key(&BigUint::from(2u32).modpow(&BigUint::from_bytes_be(private), &prime()))
}

/// The shared secret `theirs^x mod P`, 96 bytes big-endian.
///
/// # Errors
/// [`MseError::BadPublicKey`] for a degenerate key (0, 1, `P - 1`, `P` or more).
pub fn shared_secret(private: &[u8], theirs: &[u8; KEY_LEN]) -> Result<[u8; KEY_LEN], MseError> {
    let p = prime();
    let y = BigUint::from_bytes_be(theirs);
    let one = BigUint::from(1u32);
    if y <= one || y >= &p - &one {
        return Err(MseError::BadPublicKey);
    }
    Ok(to_key(&y.modpow(&BigUint::from_bytes_be(private), &p)))
}

/// The RC4 keystream of `label` (`b"keyA"`: the initiator's bytes, `b"keyB"`: the
/// responder's) for secret `s` and torrent `skey`.
pub fn cipher(label: &[u8; 4], s: &[u8; KEY_LEN], skey: &InfoHash) -> Cipher {
    Cipher::new(&hash(&[label, s, &skey.0]))
}

/// `HASH('req1', S)`: the initiator's synchronisation point.
pub fn req1(s: &[u8; KEY_LEN]) -> [u8; 20] {
    hash(&[b"req1", s])
}

/// `HASH('req2', SKEY) xor HASH('req3', S)`.
pub fn req2_xor_req3(skey: &InfoHash, s: &[u8; KEY_LEN]) -> [u8; 20] {
    let mut x = req2(skey);
    for (a, b) in x.iter_mut().zip(hash(&[b"req3", s])) {
        *a ^= b;
    }
    x
}

fn hash(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn prime() -> BigUint {
    BigUint::from_bytes_be(&P)
}

fn to_key(n: &BigUint) -> [u8; KEY_LEN] {
    let b = n.to_bytes_be();
    let mut out = [0u8; KEY_LEN];
    out[KEY_LEN - b.len()..].copy_from_slice(&b);
    out
}

fn random_pad(len: usize) -> impl Iterator<Item = u8> {
    (0..len).map(|_| rand::random::<u8>())
}

/// Which side we are, and what that side keeps until the keys are known.
#[derive(Debug)]
enum Role {
    /// We dialled: the torrent, the initial payload to send, the methods we provide.
    Initiator {
        skey: InfoHash,
        ia: Vec<u8>,
        provide: u32,
    },
    /// We answer: the methods we allow.
    Responder { allowed: u32 },
}

/// Where the handshake is.
#[derive(Debug)]
enum State {
    /// Waiting for the peer's 96-byte public key.
    Key,
    /// Initiator: looking for B's encrypted `VC` after `Yb` and `PadB`.
    SyncVc {
        pattern: [u8; 8],
        send: Cipher,
        recv: Cipher,
    },
    /// Initiator: `crypto_select` and `len(PadD)`.
    Select { send: Cipher, recv: Cipher },
    /// Initiator: `PadD` of this length.
    PadD {
        len: usize,
        method: Method,
        send: Cipher,
        recv: Cipher,
    },
    /// Responder: looking for `HASH('req1', S)` after `Ya` and `PadA`.
    SyncReq1 { s: Box<[u8; KEY_LEN]> },
    /// Responder: `req2 xor req3`, then `VC`, `crypto_provide`, `len(PadC)` (34 bytes).
    Provide { s: Box<[u8; KEY_LEN]> },
    /// Responder: `PadC` of this length and `len(IA)`.
    PadC {
        len: usize,
        provide: u32,
        skey: InfoHash,
        send: Cipher,
        recv: Cipher,
    },
    /// Responder: the initial payload, this long.
    Ia {
        len: usize,
        provide: u32,
        skey: InfoHash,
        send: Cipher,
        recv: Cipher,
    },
    /// Finished or failed: nothing more is taken.
    Over,
}

/// One MSE handshake, either side: [`MseHandshake::feed`] it what arrives, send what
/// [`MseHandshake::take_output`] returns, until it says [`Step::Done`] or fails.
/// It holds at most [`MAX_BUFFERED`] bytes of the peer's beyond the last `feed`.
pub struct MseHandshake {
    role: Role,
    private: [u8; PRIVATE_KEY_LEN],
    state: State,
    /// Bytes received and not consumed.
    inbuf: Vec<u8>,
    /// Bytes to send.
    out: Vec<u8>,
}

impl fmt::Debug for MseHandshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // never the private key
        f.debug_struct("MseHandshake")
            .field("role", &self.role)
            .field("state", &self.state)
            .field("buffered", &self.inbuf.len())
            .finish()
    }
}

impl MseHandshake {
    /// We dial for `skey`: message 1 (`Ya`, a random `PadA`) is ready to send; `ia` (our
    /// BitTorrent handshake) goes out in message 3. `ia` is cut to [`MAX_IA`].
    pub fn initiator(skey: InfoHash, ia: &[u8], policy: Policy) -> MseHandshake {
        MseHandshake::initiator_with(
            skey,
            ia,
            policy.bits(),
            rand::random(),
            rand::random_range(0..=MAX_PAD),
        )
    }

    /// [`MseHandshake::initiator`] with a given private key, `crypto_provide` bits and
    /// `PadA` length (tests and the fuzz target).
    pub fn initiator_with(
        skey: InfoHash,
        ia: &[u8],
        provide: u32,
        private: [u8; PRIVATE_KEY_LEN],
        pad_len: usize,
    ) -> MseHandshake {
        let mut out = Vec::with_capacity(KEY_LEN + MAX_PAD);
        out.extend_from_slice(&public_key(&private));
        out.extend(random_pad(pad_len.min(MAX_PAD)));
        MseHandshake {
            role: Role::Initiator {
                skey,
                ia: ia[..ia.len().min(MAX_IA)].to_vec(),
                provide,
            },
            private,
            state: State::Key,
            inbuf: Vec::new(),
            out,
        }
    }

    /// We answer a connection whose first bytes are not a BitTorrent handshake; nothing
    /// is sent before the peer's public key arrived.
    pub fn responder(policy: Policy) -> MseHandshake {
        MseHandshake::responder_with(policy.bits(), rand::random())
    }

    /// [`MseHandshake::responder`] with given allowed bits and private key.
    pub fn responder_with(allowed: u32, private: [u8; PRIVATE_KEY_LEN]) -> MseHandshake {
        MseHandshake {
            role: Role::Responder { allowed },
            private,
            state: State::Key,
            inbuf: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Bytes to send now (taken: the next call returns only what came since).
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Bytes received and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.inbuf.len()
    }

    /// Most bytes worth reading next: never past the end of the current window or field,
    /// so a driver that reads no more than this holds no more than [`MAX_BUFFERED`] bytes.
    pub fn read_hint(&self) -> usize {
        let want = match &self.state {
            State::Key => KEY_LEN,
            State::SyncVc { .. } => VC_WINDOW,
            State::SyncReq1 { .. } => REQ1_WINDOW,
            State::Select { .. } => 6,
            State::Provide { .. } => 34,
            State::PadD { len, .. } | State::Ia { len, .. } => *len,
            State::PadC { len, .. } => len + 2,
            State::Over => 0,
        };
        want.saturating_sub(self.inbuf.len()).max(1)
    }

    /// Take `data`, the next bytes from the peer; `find` maps `HASH('req2', SKEY)` to an
    /// info hash the session serves (asked once, by a responder).
    ///
    /// # Errors
    /// Why the peer is refused ([`MseError`]); the handshake is over then.
    pub fn feed(
        &mut self,
        data: &[u8],
        find: &mut dyn FnMut(&[u8; 20]) -> Option<InfoHash>,
    ) -> Result<Step, MseError> {
        if matches!(self.state, State::Over) {
            return Err(MseError::Finished);
        }
        self.inbuf.extend_from_slice(data);
        match self.advance(find) {
            Ok(step) => Ok(step),
            Err(e) => {
                self.state = State::Over;
                self.inbuf = Vec::new();
                Err(e)
            }
        }
    }

    fn consume(&mut self, n: usize) -> Vec<u8> {
        self.inbuf.drain(..n).collect()
    }

    fn advance(
        &mut self,
        find: &mut dyn FnMut(&[u8; 20]) -> Option<InfoHash>,
    ) -> Result<Step, MseError> {
        loop {
            let state = std::mem::replace(&mut self.state, State::Over);
            match self.step(state, find)? {
                Progress::Wait(s) => {
                    self.state = s;
                    return Ok(Step::NeedMore);
                }
                Progress::Next(s) => self.state = s,
                Progress::Done(est) => return Ok(Step::Done(est)),
            }
        }
    }

    /// One transition from `state`, consuming what it needs of `inbuf`.
    fn step(
        &mut self,
        state: State,
        find: &mut dyn FnMut(&[u8; 20]) -> Option<InfoHash>,
    ) -> Result<Progress, MseError> {
        use Progress::{Next, Wait};
        Ok(match state {
            State::Key => {
                if self.inbuf.len() < KEY_LEN {
                    return Ok(Wait(State::Key));
                }
                let mut theirs = [0u8; KEY_LEN];
                theirs.copy_from_slice(&self.inbuf[..KEY_LEN]);
                let s = shared_secret(&self.private, &theirs)?;
                // the public key stays in `inbuf`: the sync windows count from the first byte
                match &self.role {
                    Role::Initiator { skey, ia, provide } => {
                        let skey = *skey;
                        let mut send = cipher(b"keyA", &s, &skey);
                        let recv = cipher(b"keyB", &s, &skey);
                        let mut pattern = VC;
                        cipher(b"keyB", &s, &skey).apply(&mut pattern);
                        // message 3
                        self.out.extend_from_slice(&req1(&s));
                        self.out.extend_from_slice(&req2_xor_req3(&skey, &s));
                        let start = self.out.len();
                        self.out.extend_from_slice(&VC);
                        self.out.extend_from_slice(&provide.to_be_bytes());
                        self.out.extend_from_slice(&0u16.to_be_bytes()); // len(PadC)
                        self.out.extend_from_slice(&(ia.len() as u16).to_be_bytes());
                        self.out.extend_from_slice(ia);
                        send.apply(&mut self.out[start..]);
                        Next(State::SyncVc {
                            pattern,
                            send,
                            recv,
                        })
                    }
                    Role::Responder { .. } => {
                        // message 2: Yb, PadB
                        self.out.extend_from_slice(&public_key(&self.private));
                        self.out.extend(random_pad(rand::random_range(0..=MAX_PAD)));
                        Next(State::SyncReq1 { s: Box::new(s) })
                    }
                }
            }
            State::SyncVc {
                pattern,
                send,
                mut recv,
            } => match find_in(
                &self.inbuf[KEY_LEN..self.inbuf.len().min(VC_WINDOW)],
                &pattern,
            ) {
                Some(at) => {
                    let mut vc = self.consume(KEY_LEN + at + 8);
                    recv.apply(&mut vc[KEY_LEN + at..]);
                    debug_assert_eq!(&vc[KEY_LEN + at..], &VC);
                    Next(State::Select { send, recv })
                }
                None => {
                    if self.inbuf.len() >= VC_WINDOW {
                        return Err(MseError::NoSync {
                            what: "verification constant",
                            window: VC_WINDOW,
                        });
                    }
                    Wait(State::SyncVc {
                        pattern,
                        send,
                        recv,
                    })
                }
            },
            State::Select { send, mut recv } => {
                if self.inbuf.len() < 6 {
                    return Ok(Wait(State::Select { send, recv }));
                }
                let mut b = self.consume(6);
                recv.apply(&mut b);
                let select = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let pad = usize::from(u16::from_be_bytes([b[4], b[5]]));
                let Role::Initiator { provide, .. } = &self.role else {
                    unreachable!("only an initiator reads crypto_select")
                };
                let method = match select & provide {
                    CRYPTO_RC4 if select == CRYPTO_RC4 => Method::Rc4,
                    CRYPTO_PLAINTEXT if select == CRYPTO_PLAINTEXT => Method::Plaintext,
                    _ => {
                        return Err(MseError::NoCommonMethod {
                            theirs: select,
                            ours: *provide,
                        });
                    }
                };
                if pad > MAX_PAD {
                    return Err(MseError::PadTooLong(pad));
                }
                Next(State::PadD {
                    len: pad,
                    method,
                    send,
                    recv,
                })
            }
            State::PadD {
                len,
                method,
                send,
                mut recv,
            } => {
                if self.inbuf.len() < len {
                    return Ok(Wait(State::PadD {
                        len,
                        method,
                        send,
                        recv,
                    }));
                }
                let mut pad = self.consume(len);
                recv.apply(&mut pad);
                let Role::Initiator { skey, .. } = &self.role else {
                    unreachable!("only an initiator reads PadD")
                };
                Progress::Done(self.finish(*skey, method, send, recv))
            }
            State::SyncReq1 { s } => {
                let hash = req1(&s);
                match find_in(
                    &self.inbuf[KEY_LEN..self.inbuf.len().min(REQ1_WINDOW)],
                    &hash,
                ) {
                    Some(at) => {
                        self.consume(KEY_LEN + at + 20);
                        Next(State::Provide { s })
                    }
                    None => {
                        if self.inbuf.len() >= REQ1_WINDOW {
                            return Err(MseError::NoSync {
                                what: "synchronisation hash",
                                window: REQ1_WINDOW,
                            });
                        }
                        Wait(State::SyncReq1 { s })
                    }
                }
            }
            State::Provide { s } => {
                if self.inbuf.len() < 34 {
                    return Ok(Wait(State::Provide { s }));
                }
                let b = self.consume(34);
                let mut wanted = [0u8; 20];
                for (w, (x, r3)) in wanted
                    .iter_mut()
                    .zip(b[..20].iter().zip(hash(&[b"req3", &s[..]])))
                {
                    *w = x ^ r3;
                }
                let skey = find(&wanted).ok_or(MseError::UnknownTorrent)?;
                let mut recv = cipher(b"keyA", &s, &skey);
                let send = cipher(b"keyB", &s, &skey);
                let mut rest = [0u8; 14];
                rest.copy_from_slice(&b[20..]);
                recv.apply(&mut rest);
                if rest[..8] != VC {
                    return Err(MseError::BadVc);
                }
                let provide = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
                let pad = usize::from(u16::from_be_bytes([rest[12], rest[13]]));
                if pad > MAX_PAD {
                    return Err(MseError::PadTooLong(pad));
                }
                Next(State::PadC {
                    len: pad,
                    provide,
                    skey,
                    send,
                    recv,
                })
            }
            State::PadC {
                len,
                provide,
                skey,
                send,
                mut recv,
            } => {
                if self.inbuf.len() < len + 2 {
                    return Ok(Wait(State::PadC {
                        len,
                        provide,
                        skey,
                        send,
                        recv,
                    }));
                }
                let mut b = self.consume(len + 2);
                recv.apply(&mut b);
                let ia = usize::from(u16::from_be_bytes([b[len], b[len + 1]]));
                if ia > MAX_IA {
                    return Err(MseError::IaTooLong(ia));
                }
                Next(State::Ia {
                    len: ia,
                    provide,
                    skey,
                    send,
                    recv,
                })
            }
            State::Ia {
                len,
                provide,
                skey,
                mut send,
                mut recv,
            } => {
                if self.inbuf.len() < len {
                    return Ok(Wait(State::Ia {
                        len,
                        provide,
                        skey,
                        send,
                        recv,
                    }));
                }
                let Role::Responder { allowed } = self.role else {
                    unreachable!("only a responder reads IA")
                };
                let method = if provide & allowed & CRYPTO_RC4 != 0 {
                    Method::Rc4
                } else if provide & allowed & CRYPTO_PLAINTEXT != 0 {
                    Method::Plaintext
                } else {
                    return Err(MseError::NoCommonMethod {
                        theirs: provide,
                        ours: allowed,
                    });
                };
                // the initial payload is always RC4; what follows it is in the method
                let mut ia = self.consume(len);
                recv.apply(&mut ia);
                // message 4: VC, crypto_select, len(PadD) = 0
                let start = self.out.len();
                self.out.extend_from_slice(&VC);
                let select = match method {
                    Method::Rc4 => CRYPTO_RC4,
                    Method::Plaintext => CRYPTO_PLAINTEXT,
                };
                self.out.extend_from_slice(&select.to_be_bytes());
                self.out.extend_from_slice(&0u16.to_be_bytes());
                send.apply(&mut self.out[start..]);
                let mut est = self.finish(skey, method, send, recv);
                ia.append(&mut est.received);
                est.received = ia;
                Progress::Done(est)
            }
            State::Over => return Err(MseError::Finished),
        })
    }

    /// The handshake is done: what is left in `inbuf` is the stream, in `method`.
    fn finish(
        &mut self,
        skey: InfoHash,
        method: Method,
        send: Cipher,
        mut recv: Cipher,
    ) -> Established {
        let mut received = std::mem::take(&mut self.inbuf);
        let (send, recv) = match method {
            Method::Rc4 => {
                recv.apply(&mut received);
                (Some(send), Some(recv))
            }
            Method::Plaintext => (None, None),
        };
        Established {
            info_hash: skey,
            method,
            send,
            recv,
            received,
        }
    }
}

/// What one transition did.
enum Progress {
    /// More bytes are needed in this state.
    Wait(State),
    /// Go on in this state.
    Next(State),
    /// Finished.
    Done(Established),
}

/// Where `needle` starts in `hay`, if it does.
fn find_in(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests;
