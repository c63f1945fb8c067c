//! A torrent added from a magnet link (BEP 9): listed under its `dn` until the info
//! dictionary arrives from peers ([`crate::engine::link::metadata::MetadataFetch`]), then
//! made a full torrent (kept in the state store) that goes on to the check and the
//! download; its connections are kept through the check and go on with the full protocol
//! (issue 16).

use std::path::PathBuf;
use std::sync::Arc;

use super::info::Info;
use super::jobs::Fetch;
use super::state::Input;
use super::summary::Summary;
use super::wanted::Wanted;
use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, TorrentError, TorrentErrorKind, TorrentId};
use crate::engine::link::message::PeerCtrl;
use crate::engine::link::metadata::MetadataFetch;
use crate::metainfo::{Magnet, Metainfo};
use crate::piece::Bitfield;

impl Torrent {
    /// A torrent of a magnet link: listed under its `dn` (or info hash) with no size until
    /// its info dictionary is fetched from peers (BEP 9). Not started.
    pub fn new_magnet(
        id: TorrentId,
        link: Magnet,
        save_dir: PathBuf,
        seed: bool,
        upload_slots: usize,
        keep_meta: bool,
    ) -> Torrent {
        let sum = Summary {
            info_hash: link.info_hash,
            info_hash_v2: link.info_hash_v2,
            name: link.display_name(),
            geometry: crate::piece::Geometry::default(),
            payload_size: 0,
            // BEP 12: each tracker of a magnet link is a tier of its own (all are asked)
            trackers: link.trackers.iter().map(|t| vec![t.clone()]).collect(),
            private: false,
            multi_file: false,
            files: crate::piece::FileLayout::default(),
            // the link's `ws` (the info dictionary carries no `url-list`)
            web_seeds: Some(link.web_seeds.clone()),
        };
        let mut t = Torrent::blank(id, sum, save_dir, seed, upload_slots);
        t.keep_meta = keep_meta;
        t.kept_peers = super::sources::kept_of(&link);
        t.info = Info::Magnet(link);
        t
    }

    /// Whether the info dictionary is still to be fetched (a magnet link).
    pub fn awaiting_metadata(&self) -> bool {
        self.info.magnet().is_some()
    }

    /// A fresh fetch for the state machine's facts while the info dictionary is not known
    /// (kept by the `FetchingMetadata` state if the torrent starts fetching).
    pub(super) fn new_fetch(&self, env: &Env<'_>) -> Option<Fetch> {
        self.awaiting_metadata().then(|| {
            Fetch::new(
                MetadataFetch::new(
                    self.id,
                    self.sum.info_hash,
                    env.ctx.config.max_metadata_size,
                    env.ctx.link.clone(),
                )
                .with_v2(self.sum.info_hash_v2),
            )
        })
    }

    /// The info dictionary of the magnet link arrived and hashes to the info hash: make it
    /// the torrent's metainfo (kept in the state store so it is never fetched again), keep
    /// the metadata connections for [`Torrent::hand_over`], and go on to the check and the
    /// download.
    pub(super) fn metadata_arrived(&mut self, env: &mut Env<'_>) {
        let Some(info) = self.life.fetch().and_then(|f| f.get().take_done()) else {
            return;
        };
        let Some(select_only) = self.info.magnet().map(|l| l.select_only.clone()) else {
            return;
        };
        // a v2-only torrent's piece layers, fetched after the info dictionary (BEP 52), are
        // kept with it: a restart does not fetch them again
        let layers = self
            .life
            .fetch()
            .map(|f| f.get().layers())
            .unwrap_or_default();
        let bytes = crate::metainfo::create::torrent_from_parts(&info, &self.sum.trackers, &layers);
        let meta = match Metainfo::from_bytes(&bytes) {
            Ok(m) => m,
            Err(e) => {
                let err = TorrentError {
                    kind: TorrentErrorKind::BadMetadata,
                    message: format!("the metadata peers sent is not a usable torrent: {e}"),
                };
                self.input(Input::Failed(err), env);
                return;
            }
        };
        if let Some(store) = env.store
            && let Err(e) = store.put_metainfo(&meta.info_hash, &bytes)
        {
            // it stays in memory for this run; the next run fetches it again
            self.keep_meta = true;
            self.log(
                env,
                EventLevel::Error,
                EventKind::DiskError,
                format!("cannot keep the fetched metadata in the state folder: {e}"),
            );
        }
        // the metadata connections are kept through the check (the state machine carries
        // them), then go on with the full protocol with what their peers said before
        // (issue 16)
        // the web seeds are the link's (`ws`): the info dictionary has no `url-list`
        let web_seeds = self.sum.web_seeds.take();
        self.sum = Summary::of(&meta);
        self.sum.web_seeds = web_seeds;
        if self.sum.private {
            // BEP 27: the info dictionary says private; neither the DHT nor LSD is used
            // from now on
            self.dht_stop(env);
            self.lsd_stop(env);
        }
        let n = self.sum.piece_count();
        self.have = Bitfield::new(n);
        // BEP 53: indices into the info dictionary's file list
        self.wanted = Wanted::select_only(&select_only, &self.sum);
        let files = meta.files.iter().filter(|f| !f.pad).count();
        let size = crate::units::size(meta.payload_size());
        self.info = Info::Known(Some(Arc::new(meta)));
        self.persist_dirty = true;
        self.log(
            env,
            EventLevel::Info,
            EventKind::StateChanged,
            format!("metadata received: {size} in {files} files, {n} pieces"),
        );
        self.input(Input::MetadataReady, env);
    }

    /// The check after a magnet link's metadata is over: its metadata connections (of
    /// `fetch`) go on with the full protocol on their sockets ([`PeerCtrl::Upgrade`]) when
    /// the torrent runs; otherwise they end (the addresses stay known and are dialled
    /// again).
    pub(super) fn hand_over(&mut self, fetch: &Fetch, env: &mut Env<'_>) {
        let shared = if self.life.is_running() {
            self.ensure_shared(env)
        } else {
            None
        };
        if let Some(s) = shared {
            fetch.get().hand_over(s);
            for (_, p) in self.peers.iter() {
                p.send(PeerCtrl::Upgrade);
            }
            return;
        }
        let now = env.now;
        for (_, p) in self.peers.iter() {
            p.send(PeerCtrl::Disconnect("metadata complete"));
        }
        let old = std::mem::take(&mut self.peers);
        for (k, p) in old.iter() {
            self.choker.peer_gone(*k);
            if p.info.outgoing {
                self.book.release(p.info.addr, now);
            } else {
                self.book.disconnected(p.info.addr, true, false, now);
                self.learn_listen_addr(&p.info, now);
            }
        }
    }
}
