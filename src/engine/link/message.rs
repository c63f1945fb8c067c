//! The messages between a torrent and its connections: [`PeerCtrl`] orders go down to a
//! connection (one unbounded channel each), [`PeerEvent`]s come back up through the session
//! task, and [`PeerError`] says why a connection ended.

use std::sync::Arc;

use thiserror::Error;

use crate::peer::wire::WireError;
use crate::piece::{BitfieldError, BlockRef};
use crate::storage::StorageError;

/// Orders from the torrent to one connection.
#[derive(Debug, Clone)]
pub enum PeerCtrl {
    /// We verified a piece: tell the peer (BEP 3 `have`).
    Have(u32),
    /// Stop serving the peer.
    Choke,
    /// Serve the peer.
    Unchoke,
    /// Another peer delivered this block first (endgame): cancel our request.
    Cancel(BlockRef),
    /// Re-evaluate interest (we completed or lost pieces).
    CheckInterest,
    /// The peers this torrent is connected to now, as dialable addresses: the connection
    /// tells its peer what changed (BEP 11), at most once a minute
    /// ([`crate::peer::pex::INTERVAL_SECS`]) and only when both sides offered `ut_pex`.
    Pex(Arc<Vec<crate::peer::pex::PexPeer>>),
    /// Housekeeping: keep-alive, silence, snubbing, write stalls (every 10 s).
    Tick,
    /// The torrent of a magnet link has its pieces now (the metadata arrived and the check
    /// is done): a metadata connection goes on with the full protocol on the same socket,
    /// with what its peer said before (`engine::peer_conn::handover`), on the torrent's
    /// [`crate::engine::link::metadata::MetadataFetch::handed_over`]. Established
    /// connections ignore it.
    Upgrade,
    /// The torrent closed another connection with the same peer (both ends dialled at
    /// once) and its requests went back to the picker: cancel ours (BEP 3 `cancel`) and
    /// ask again, so that the picker's order (those pieces first, lowest or highest
    /// priority first) is the order the peer serves in.
    Repick,
    /// Close the connection.
    Disconnect(&'static str),
}

/// What a peer connection tells its torrent.
#[derive(Debug)]
pub enum PeerEvent {
    /// The peer became interested or not interested: the choker may act.
    InterestChanged,
    /// `block` arrived from this peer while also requested from others (endgame): cancel it
    /// elsewhere.
    CancelElsewhere(BlockRef),
    /// Reading piece data for an upload failed: the piece is not on disk as verified.
    PieceUnreadable {
        /// The piece.
        piece: u32,
        /// Why.
        error: StorageError,
    },
    /// Peers this peer's `ut_pex` message listed as added (BEP 11), at most
    /// [`crate::peer::pex::MAX_ACCEPTED`] per address family, dialable and, unless the
    /// sender is itself local, not on a local network.
    Pex(Vec<crate::peer::pex::PexPeer>),
    /// The info dictionary of a magnet link is complete and verified
    /// ([`super::metadata::MetadataFetch::take_done`]).
    MetadataComplete,
    /// An incoming peer told its listen port (BEP 10 `p`, now in its
    /// [`super::peer::PeerInfo::listen_port`]): if we dialled that address too, this is
    /// the same peer twice (libtorrent 2 sends a new peer ID on each connection, so IDs do
    /// not show it), and the torrent closes this connection.
    ListenPort,
    /// A web seed's news for the torrent's log (BEP 19): a request failed and when the
    /// server is tried again, or a file the server does not have.
    WebSeedNote(String),
    /// The connection ended.
    Gone {
        /// Why, if it was an error.
        error: Option<PeerError>,
    },
}

/// Why a peer connection ended.
#[derive(Debug, Error)]
pub enum PeerError {
    /// Socket error or EOF.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// A malformed message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A bitfield of the wrong size or with spare bits.
    #[error(transparent)]
    Bitfield(#[from] BitfieldError),
    /// A message that breaks the protocol (index out of range, ...).
    #[error("{0}")]
    Protocol(String),
    /// The handshake named another torrent.
    #[error("handshake info hash does not match the torrent")]
    WrongInfoHash,
    /// We connected to ourselves.
    #[error("connected to ourselves")]
    SelfConnection,
    /// Nothing heard for too long.
    #[error("peer silent for {0} s")]
    Silent(u64),
    /// Its socket accepted none of our data for too long.
    #[error("peer stopped reading (no write progress for {0} s)")]
    Stalled(u64),
    /// The MSE/PE handshake (Message Stream Encryption) failed.
    #[error(transparent)]
    Mse(#[from] crate::peer::mse::MseError),
    /// Handshake or connect took too long.
    #[error("timed out during {0}")]
    Timeout(&'static str),
    /// The torrent closed the connection (pause, ban, eviction, shutdown).
    #[error("closed by us: {0}")]
    Closed(&'static str),
}
