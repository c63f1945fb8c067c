//! The switch of a magnet link's connection from fetching metadata to downloading
//! (issue 16): the connection is kept, and what its peer said before is carried over.
//!
//! A metadata connection cannot check what the peer says about pieces (it does not know
//! the piece count yet), so it keeps it in a [`Told`]: the last bitfield or `have all`,
//! the `have`s after it (at most [`MAX_HAVES`]), allowed-fast pieces (at most
//! [`MAX_ALLOWED_FAST`], BEP 6), the last choke and interest messages and the last
//! extension handshake (BEP 10). Once the torrent knows its pieces it sends the connection
//! [`crate::engine::link::message::PeerCtrl::Upgrade`]; the connection then runs the full
//! protocol on the same socket ([`HandOver`]) and replays the kept messages first
//! ([`Told::into_messages`]), checked against the piece count like any others. A peer that
//! told its availability only once (as many do) is asked for blocks all the same.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::engine::link::message::PeerCtrl;
use crate::engine::link::shared::TorrentShared;
use crate::peer::wire::Message;

/// Most `have` messages kept after the last bitfield (4 bytes each): a peer with more
/// pieces sends a bitfield.
pub const MAX_HAVES: usize = 16 * 1024;
/// Most allowed-fast pieces kept (what an established connection keeps too).
pub const MAX_ALLOWED_FAST: usize = 64;

/// What a peer said on a metadata connection that matters once the torrent has pieces.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Told {
    /// The last `bitfield` or `have all`: the peer's whole set at that moment.
    base: Option<Message>,
    /// `have`s after `base`, in order.
    haves: Vec<u32>,
    /// Allowed-fast pieces (BEP 6), in order, without duplicates.
    allowed_fast: Vec<u32>,
    /// The last `choke` (`true`) or `unchoke` (`false`).
    choking: Option<bool>,
    /// The last `interested` (`true`) or `not interested` (`false`).
    interested: Option<bool>,
    /// The payload of the last extension handshake.
    handshake: Option<Bytes>,
    /// The payload of the last `ut_pex` message (BEP 11), sent with our id for it.
    pex: Option<Bytes>,
}

impl Told {
    /// Keep what `m` says about the peer's pieces and state. Returns `false` for a message
    /// that is not kept (data, requests, keep-alives, extension messages: the extension
    /// handshake goes through [`Told::ext_handshake`]) or one past a cap.
    pub fn record(&mut self, m: &Message) -> bool {
        match m {
            Message::Bitfield(_) | Message::HaveAll => {
                self.base = Some(m.clone());
                self.haves.clear();
            }
            Message::Have(p) => {
                if self.haves.len() >= MAX_HAVES {
                    return false;
                }
                self.haves.push(*p);
            }
            Message::AllowedFast(p) => {
                if self.allowed_fast.len() >= MAX_ALLOWED_FAST || self.allowed_fast.contains(p) {
                    return false;
                }
                self.allowed_fast.push(*p);
            }
            Message::Choke => self.choking = Some(true),
            Message::Unchoke => self.choking = Some(false),
            Message::Interested => self.interested = Some(true),
            Message::NotInterested => self.interested = Some(false),
            _ => return false,
        }
        true
    }

    /// Keep the payload of an extension handshake (the last one wins, as on an
    /// established connection).
    pub fn ext_handshake(&mut self, payload: Bytes) {
        self.handshake = Some(payload);
    }

    /// Keep the payload of a `ut_pex` message (the last one wins): peers send PEX about
    /// once a minute, so the one that came while the metadata was fetched is not dropped.
    pub fn ut_pex(&mut self, payload: Bytes) {
        self.pex = Some(payload);
    }

    /// The kept messages, in an order that leaves an established connection in the state
    /// the peer described: the extension handshake, its last PEX message, the bitfield or `have all`, the `have`s
    /// after it, the allowed-fast pieces, then choke and interest.
    pub fn into_messages(self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.haves.len() + self.allowed_fast.len() + 4);
        if let Some(payload) = self.handshake {
            out.push(Message::Extended { ext_id: 0, payload });
        }
        if let Some(payload) = self.pex {
            out.push(Message::Extended {
                ext_id: crate::peer::extension::UT_PEX_ID,
                payload,
            });
        }
        out.extend(self.base);
        out.extend(self.haves.into_iter().map(Message::Have));
        out.extend(self.allowed_fast.into_iter().map(Message::AllowedFast));
        match self.choking {
            Some(true) => out.push(Message::Choke),
            Some(false) => out.push(Message::Unchoke),
            None => {}
        }
        match self.interested {
            Some(true) => out.push(Message::Interested),
            Some(false) => out.push(Message::NotInterested),
            None => {}
        }
        out
    }
}

/// What an established connection starts from when it continues a metadata connection.
#[derive(Debug, Default)]
pub struct Resumed {
    /// What the peer said before.
    pub told: Told,
    /// Bytes read after the last whole message.
    pub rest: BytesMut,
}

/// A metadata connection on its way to the full protocol: its socket halves, its orders
/// and what the peer said.
#[derive(Debug)]
pub struct HandOver<R, W> {
    /// The torrent, now with its pieces.
    pub shared: Arc<TorrentShared>,
    /// Read half of the socket.
    pub rd: R,
    /// Write half of the socket (nothing buffered: what the metadata connection had to
    /// send was written).
    pub wr: W,
    /// The torrent's orders to the connection.
    pub ctrl: mpsc::UnboundedReceiver<PeerCtrl>,
    /// What the established connection replays first.
    pub resumed: Resumed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_pex_message_is_replayed_after_the_extension_handshake() {
        let mut t = Told::default();
        t.ut_pex(Bytes::from_static(b"d5:added0:e"));
        t.ext_handshake(Bytes::from_static(b"de"));
        t.ut_pex(Bytes::from_static(b"d5:added6:\x7f\0\0\x04\x1a\xe1e"));
        let m = t.into_messages();
        assert_eq!(m.len(), 2);
        assert!(matches!(&m[0], Message::Extended { ext_id: 0, .. }));
        match &m[1] {
            Message::Extended { ext_id, payload } => {
                assert_eq!(*ext_id, crate::peer::extension::UT_PEX_ID);
                assert_eq!(&payload[..], b"d5:added6:\x7f\0\0\x04\x1a\xe1e");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bitfield_and_the_haves_after_it_are_replayed_in_order() {
        let mut t = Told::default();
        assert!(t.record(&Message::Have(7)));
        assert!(t.record(&Message::Bitfield(Bytes::from_static(&[0b1010_0000]))));
        assert!(t.record(&Message::Have(1)));
        assert!(t.record(&Message::Have(3)));
        assert!(t.record(&Message::Unchoke));
        assert!(t.record(&Message::Interested));
        assert!(!t.record(&Message::KeepAlive));
        assert!(!t.record(&Message::Port(6881)));
        t.ext_handshake(Bytes::from_static(b"d1:md11:ut_metadatai3eee"));
        t.ext_handshake(Bytes::from_static(b"d4:reqqi9ee"));
        assert_eq!(
            t.into_messages(),
            vec![
                Message::Extended {
                    ext_id: 0,
                    payload: Bytes::from_static(b"d4:reqqi9ee")
                },
                // the have before the bitfield is part of the peer's set at the bitfield
                Message::Bitfield(Bytes::from_static(&[0b1010_0000])),
                Message::Have(1),
                Message::Have(3),
                Message::Unchoke,
                Message::Interested,
            ]
        );
    }

    #[test]
    fn have_all_allowed_fast_and_the_last_choke_state_are_kept() {
        let mut t = Told::default();
        assert!(t.record(&Message::HaveAll));
        for p in [4, 9, 4] {
            t.record(&Message::AllowedFast(p));
        }
        t.record(&Message::Unchoke);
        t.record(&Message::Choke);
        t.record(&Message::Interested);
        t.record(&Message::NotInterested);
        assert_eq!(
            t.into_messages(),
            vec![
                Message::HaveAll,
                Message::AllowedFast(4),
                Message::AllowedFast(9),
                Message::Choke,
                Message::NotInterested,
            ]
        );
        // a peer that said nothing: nothing to replay
        assert!(Told::default().into_messages().is_empty());
    }

    #[test]
    fn what_a_peer_may_pile_up_before_the_metadata_is_bounded() {
        let mut t = Told::default();
        for p in 0..(MAX_HAVES as u32 + 10) {
            let kept = t.record(&Message::Have(p));
            assert_eq!(kept, (p as usize) < MAX_HAVES, "have {p}");
        }
        for p in 0..(MAX_ALLOWED_FAST as u32 + 5) {
            t.record(&Message::AllowedFast(p));
        }
        let m = t.clone().into_messages();
        assert_eq!(m.len(), MAX_HAVES + MAX_ALLOWED_FAST);
        // a later bitfield replaces the haves, and makes room again
        t.record(&Message::Bitfield(Bytes::from_static(&[0xff])));
        assert!(t.record(&Message::Have(2)));
        assert_eq!(t.into_messages().len(), 2 + MAX_ALLOWED_FAST);
    }
}
