use super::*;

const XA: [u8; 20] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
];
const XB: [u8; 20] = [
    101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119,
    120,
];
const SKEY: InfoHash = InfoHash([7; 20]);

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A lookup that knows `SKEY` only.
fn served(h: &[u8; 20]) -> Option<InfoHash> {
    (*h == req2(&SKEY)).then_some(SKEY)
}

fn none(_: &[u8; 20]) -> Option<InfoHash> {
    None
}

#[test]
fn keys_and_keystreams_match_an_independent_implementation() {
    // values from Python's pow() and a textbook RC4, for the fixed private keys above
    let ya = public_key(&XA);
    assert_eq!(hex(&ya[..16]), "96e112dab29e8c5272accb9b17b26887");
    let s = shared_secret(&XA, &public_key(&XB)).unwrap();
    assert_eq!(s, shared_secret(&XB, &ya).unwrap(), "both sides find S");
    assert_eq!(hex(&s[..16]), "d05ed96a95215a89b44073afe5d0b162");
    let mut vc = VC;
    cipher(b"keyA", &s, &SKEY).apply(&mut vc);
    assert_eq!(
        hex(&vc),
        "6001a24df82bedd6",
        "keyA stream after 1,024 bytes"
    );
    assert_eq!(
        hex(&req2(&SKEY)),
        "4a90947f810ab816d0d9b5370b2b1dddde511d77"
    );
}

#[test]
fn degenerate_public_keys_are_refused() {
    let mut p_minus_1 = P;
    p_minus_1[KEY_LEN - 1] -= 1;
    let mut one = [0u8; KEY_LEN];
    one[KEY_LEN - 1] = 1;
    for y in [[0u8; KEY_LEN], one, p_minus_1, P, [0xff; KEY_LEN]] {
        assert_eq!(shared_secret(&XA, &y), Err(MseError::BadPublicKey));
    }
    let mut r = MseHandshake::responder(Policy::Prefer);
    assert_eq!(
        r.feed(&[0u8; KEY_LEN], &mut served).unwrap_err(),
        MseError::BadPublicKey
    );
    assert!(r.take_output().is_empty(), "nothing sent to such a peer");
}

/// Run a whole exchange, each side's bytes handed over in pieces of `chunk`; returns both
/// ends (initiator's, responder's) or the first error.
fn exchange(
    mut a: MseHandshake,
    mut b: MseHandshake,
    chunk: usize,
) -> Result<(Established, Established), MseError> {
    let mut a_done = None;
    let mut b_done = None;
    let mut to_b = a.take_output();
    let mut to_a = Vec::new();
    for _ in 0..10_000 {
        if a_done.is_some() && b_done.is_some() {
            break;
        }
        if b_done.is_none() && !to_b.is_empty() {
            let n = chunk.min(to_b.len());
            let piece: Vec<u8> = to_b.drain(..n).collect();
            if let Step::Done(e) = b.feed(&piece, &mut served)? {
                b_done = Some(e);
            }
            to_a.extend(b.take_output());
        } else if a_done.is_none() && !to_a.is_empty() {
            let n = chunk.min(to_a.len());
            let piece: Vec<u8> = to_a.drain(..n).collect();
            if let Step::Done(e) = a.feed(&piece, &mut served)? {
                a_done = Some(e);
            }
            to_b.extend(a.take_output());
        } else {
            panic!("stuck: nothing to deliver\n{a:?}\n{b:?}");
        }
    }
    Ok((a_done.unwrap(), b_done.unwrap()))
}

fn handshake_68() -> Vec<u8> {
    crate::peer::wire::Handshake::ours(SKEY, crate::peer::PeerId([b'a'; 20]))
        .to_bytes()
        .to_vec()
}

#[test]
fn both_sides_agree_on_rc4_and_the_streams_decrypt() {
    for chunk in [1, 7, 96, 4096] {
        let ia = handshake_68();
        let a = MseHandshake::initiator(SKEY, &ia, Policy::Prefer);
        let b = MseHandshake::responder(Policy::Prefer);
        let (mut ea, mut eb) = exchange(a, b, chunk).unwrap();
        assert_eq!((ea.method, eb.method), (Method::Rc4, Method::Rc4));
        assert_eq!(eb.info_hash, SKEY, "the responder found the torrent");
        assert_eq!(eb.received, ia, "the initial payload arrives decrypted");
        assert!(ea.received.is_empty());
        // the streams go on: what A encrypts B decrypts, and back
        let mut msg = b"\0\0\0\x01\x02 interested".to_vec();
        ea.send.as_mut().unwrap().apply(&mut msg);
        assert!(!msg.ends_with(b"interested"));
        eb.recv.as_mut().unwrap().apply(&mut msg);
        assert_eq!(&msg, b"\0\0\0\x01\x02 interested");
        let mut back = vec![0x55; 100_000];
        eb.send.as_mut().unwrap().apply(&mut back);
        ea.recv.as_mut().unwrap().apply(&mut back);
        assert!(back.iter().all(|&x| x == 0x55));
    }
}

#[test]
fn a_responder_that_allows_only_plaintext_selects_it_and_require_refuses_it() {
    let ia = handshake_68();
    let a = MseHandshake::initiator(SKEY, &ia, Policy::Prefer);
    let b = MseHandshake::responder_with(CRYPTO_PLAINTEXT, XB);
    let (ea, eb) = exchange(a, b, 50).unwrap();
    assert_eq!(
        (ea.method, eb.method),
        (Method::Plaintext, Method::Plaintext)
    );
    assert!(ea.send.is_none() && eb.recv.is_none());
    assert_eq!(eb.received, ia, "IA is RC4 even when plaintext follows");

    // require: we provide RC4 only, and a plaintext-only responder refuses us
    let a = MseHandshake::initiator(SKEY, &ia, Policy::Require);
    let b = MseHandshake::responder_with(CRYPTO_PLAINTEXT, XB);
    assert_eq!(
        exchange(a, b, 50).unwrap_err(),
        MseError::NoCommonMethod {
            theirs: CRYPTO_RC4,
            ours: CRYPTO_PLAINTEXT
        }
    );
    // a responder that requires RC4 refuses an initiator that provides plaintext only
    let a = MseHandshake::initiator_with(SKEY, &ia, CRYPTO_PLAINTEXT, XA, 0);
    let b = MseHandshake::responder(Policy::Require);
    assert!(matches!(
        exchange(a, b, 50),
        Err(MseError::NoCommonMethod { .. })
    ));
}

#[test]
fn bytes_after_the_handshake_come_back_as_received_plaintext() {
    // the responder pipelines its BitTorrent handshake right after message 4
    let a = MseHandshake::initiator(SKEY, b"", Policy::Prefer);
    let mut a = a;
    let mut b = MseHandshake::responder(Policy::Prefer);
    let m1 = a.take_output();
    assert!(matches!(b.feed(&m1, &mut served).unwrap(), Step::NeedMore));
    let m2 = b.take_output();
    assert!(matches!(a.feed(&m2, &mut served).unwrap(), Step::NeedMore));
    let m3 = a.take_output();
    let Step::Done(mut eb) = b.feed(&m3, &mut served).unwrap() else {
        panic!("responder done after message 3")
    };
    assert!(eb.received.is_empty(), "an empty IA");
    let mut m4 = b.take_output();
    let mut hs = handshake_68();
    eb.send.as_mut().unwrap().apply(&mut hs);
    m4.extend_from_slice(&hs);
    let Step::Done(ea) = a.feed(&m4, &mut served).unwrap() else {
        panic!("initiator done after message 4")
    };
    assert_eq!(ea.received, handshake_68());
    assert_eq!(a.feed(b"x", &mut served).unwrap_err(), MseError::Finished);
}

/// Message 2 of a responder with private key `XB` and a `pad`-byte PadB, and the secret.
fn message2(pad: usize) -> (Vec<u8>, [u8; KEY_LEN]) {
    let mut m = public_key(&XB).to_vec();
    m.extend(std::iter::repeat_n(0xAB, pad));
    (m, shared_secret(&XB, &public_key(&XA)).unwrap())
}

/// An initiator with private key `XA` that has sent message 3.
fn initiator_after_message2(pad: usize) -> (MseHandshake, [u8; KEY_LEN]) {
    let mut a = MseHandshake::initiator_with(SKEY, b"", Policy::Prefer.bits(), XA, 0);
    a.take_output();
    let (m2, s) = message2(pad);
    assert!(matches!(a.feed(&m2, &mut none).unwrap(), Step::NeedMore));
    (a, s)
}

#[test]
fn the_initiator_finds_vc_after_the_longest_pad_and_reads_the_select() {
    let (mut a, s) = initiator_after_message2(MAX_PAD);
    let mut m4 = Vec::new();
    m4.extend_from_slice(&VC);
    m4.extend_from_slice(&CRYPTO_RC4.to_be_bytes());
    m4.extend_from_slice(&3u16.to_be_bytes());
    m4.extend_from_slice(b"pad");
    m4.extend_from_slice(b"after");
    cipher(b"keyB", &s, &SKEY).apply(&mut m4);
    let Step::Done(e) = a.feed(&m4, &mut none).unwrap() else {
        panic!("done")
    };
    assert_eq!(e.method, Method::Rc4);
    assert_eq!(e.received, b"after");
}

#[test]
fn an_initiator_gives_up_when_vc_is_not_within_512_bytes_after_yb() {
    let (mut a, _) = initiator_after_message2(MAX_PAD);
    // 8 more bytes of garbage complete the window: VC_WINDOW bytes seen, no VC
    let err = a.feed(&[0xCD; 8], &mut none).unwrap_err();
    assert_eq!(
        err,
        MseError::NoSync {
            what: "verification constant",
            window: KEY_LEN + MAX_PAD + 8
        }
    );
    assert_eq!(a.buffered(), 0, "the buffer is freed");
    // a VC past the window, arriving in one big read, is not taken either
    let (m2, s) = message2(MAX_PAD + 1);
    let mut a = MseHandshake::initiator_with(SKEY, b"", Policy::Prefer.bits(), XA, 0);
    let mut late = m2;
    let mut m4 = VC.to_vec();
    m4.extend_from_slice(&CRYPTO_RC4.to_be_bytes());
    m4.extend_from_slice(&0u16.to_be_bytes());
    cipher(b"keyB", &s, &SKEY).apply(&mut m4);
    late.extend_from_slice(&m4);
    assert!(matches!(
        a.feed(&late, &mut none),
        Err(MseError::NoSync { .. })
    ));
}

fn message4(s: &[u8; KEY_LEN], select: u32, pad: u16) -> Vec<u8> {
    let mut m4 = VC.to_vec();
    m4.extend_from_slice(&select.to_be_bytes());
    m4.extend_from_slice(&pad.to_be_bytes());
    cipher(b"keyB", s, &SKEY).apply(&mut m4);
    m4
}

#[test]
fn an_initiator_refuses_a_long_pad_d_and_a_select_it_did_not_offer() {
    let (mut a, s) = initiator_after_message2(0);
    assert_eq!(
        a.feed(&message4(&s, CRYPTO_RC4, 513), &mut none)
            .unwrap_err(),
        MseError::PadTooLong(513)
    );
    for select in [0, 3, 4, CRYPTO_RC4 | 0x100] {
        let (mut a, s) = initiator_after_message2(0);
        assert!(
            matches!(
                a.feed(&message4(&s, select, 0), &mut none),
                Err(MseError::NoCommonMethod { .. })
            ),
            "select {select:#x}"
        );
    }
    let mut a = MseHandshake::initiator_with(SKEY, b"", CRYPTO_RC4, XA, 0);
    let (m2, s) = message2(0);
    a.feed(&m2, &mut none).unwrap();
    assert!(matches!(
        a.feed(&message4(&s, CRYPTO_PLAINTEXT, 0), &mut none),
        Err(MseError::NoCommonMethod { .. })
    ));
}

/// Message 1 and the start of message 3 as an initiator with `XA` sends them to a
/// responder with `XB`: `Ya`, a `pad`-byte PadA, req1, req2 xor req3; then `body`
/// encrypted with keyA (VC, crypto_provide, len(PadC), PadC, len(IA), IA, ...).
fn message1_and_3(pad: usize, skey: &InfoHash, body: &[u8]) -> Vec<u8> {
    let s = shared_secret(&XA, &public_key(&XB)).unwrap();
    let mut m = public_key(&XA).to_vec();
    m.extend(std::iter::repeat_n(0x11, pad));
    m.extend_from_slice(&req1(&s));
    m.extend_from_slice(&req2_xor_req3(skey, &s));
    let mut enc = body.to_vec();
    cipher(b"keyA", &s, skey).apply(&mut enc);
    m.extend_from_slice(&enc);
    m
}

fn body(provide: u32, pad_c: u16, ia: &[u8]) -> Vec<u8> {
    let mut b = VC.to_vec();
    b.extend_from_slice(&provide.to_be_bytes());
    b.extend_from_slice(&pad_c.to_be_bytes());
    b.extend(std::iter::repeat_n(0, usize::from(pad_c).min(600)));
    b.extend_from_slice(&(ia.len() as u16).to_be_bytes());
    b.extend_from_slice(ia);
    b
}

#[test]
fn a_responder_syncs_after_the_longest_pad_a_and_finds_the_torrent() {
    let m = message1_and_3(MAX_PAD, &SKEY, &body(CRYPTO_RC4, 512, b"hello"));
    let mut b = MseHandshake::responder_with(CRYPTO_RC4 | CRYPTO_PLAINTEXT, XB);
    let mut asked = 0;
    let mut find = |h: &[u8; 20]| {
        asked += 1;
        served(h)
    };
    let Step::Done(e) = b.feed(&m, &mut find).unwrap() else {
        panic!("done")
    };
    assert_eq!(asked, 1, "one lookup per handshake");
    assert_eq!(e.info_hash, SKEY);
    assert_eq!(e.received, b"hello");
    let out = b.take_output();
    assert!(out.len() >= KEY_LEN + 8 + 4 + 2, "Yb, PadB, message 4");
    assert_eq!(&out[..KEY_LEN], &public_key(&XB));
}

#[test]
fn a_responder_refuses_garbage_within_628_bytes_holding_no_more() {
    let mut b = MseHandshake::responder(Policy::Prefer);
    let mut sent = 0;
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut err = None;
    while sent < garbage.len() {
        let n = b.read_hint().min(garbage.len() - sent);
        assert!(n <= MAX_BUFFERED);
        match b.feed(&garbage[sent..sent + n], &mut served) {
            Ok(_) => {}
            Err(e) => {
                err = Some(e);
                sent += n;
                break;
            }
        }
        sent += n;
        assert!(b.buffered() <= KEY_LEN + MAX_PAD + 20);
    }
    assert_eq!(
        err,
        Some(MseError::NoSync {
            what: "synchronisation hash",
            window: KEY_LEN + MAX_PAD + 20
        })
    );
    assert_eq!(
        sent,
        KEY_LEN + MAX_PAD + 20,
        "refused at the end of the window"
    );
}

#[test]
fn a_responder_refuses_an_unknown_torrent_a_bad_vc_and_long_pads() {
    let other = InfoHash([9; 20]);
    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    let m = message1_and_3(0, &other, &body(CRYPTO_RC4, 0, b""));
    assert_eq!(
        b.feed(&m, &mut served).unwrap_err(),
        MseError::UnknownTorrent
    );

    let mut bad_vc = body(CRYPTO_RC4, 0, b"");
    bad_vc[3] = 1;
    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    assert_eq!(
        b.feed(&message1_and_3(0, &SKEY, &bad_vc), &mut served)
            .unwrap_err(),
        MseError::BadVc
    );

    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    assert_eq!(
        b.feed(
            &message1_and_3(0, &SKEY, &body(CRYPTO_RC4, 513, b"")),
            &mut served
        )
        .unwrap_err(),
        MseError::PadTooLong(513)
    );

    let mut big = body(CRYPTO_RC4, 0, b"");
    let n = big.len();
    big[n - 2..].copy_from_slice(&(MAX_IA as u16 + 1).to_be_bytes());
    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    assert_eq!(
        b.feed(&message1_and_3(0, &SKEY, &big), &mut served)
            .unwrap_err(),
        MseError::IaTooLong(MAX_IA + 1)
    );

    // nothing offered that we allow
    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    assert_eq!(
        b.feed(&message1_and_3(0, &SKEY, &body(0x10, 0, b"")), &mut served)
            .unwrap_err(),
        MseError::NoCommonMethod {
            theirs: 0x10,
            ours: CRYPTO_RC4
        }
    );
}

#[test]
fn read_hints_never_overshoot_a_field() {
    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    assert_eq!(b.read_hint(), KEY_LEN);
    b.feed(&[5; 10], &mut served).unwrap();
    assert_eq!(b.read_hint(), KEY_LEN - 10);
    let m = message1_and_3(0, &SKEY, &body(CRYPTO_RC4, 0, b"abc"));
    let mut b = MseHandshake::responder_with(CRYPTO_RC4, XB);
    let mut at = 0;
    loop {
        let n = b.read_hint().min(m.len() - at);
        assert!(n <= MAX_BUFFERED);
        match b.feed(&m[at..at + n], &mut served).unwrap() {
            Step::Done(e) => {
                assert_eq!(e.received, b"abc");
                break;
            }
            Step::NeedMore => at += n,
        }
    }
}
