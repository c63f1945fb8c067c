//! A torrent's use of Local Service Discovery (BEP 14): while a public torrent runs
//! (downloading or seeding, not paused) its info hash is announced by the session's one
//! LSD task ([`crate::lsd`]), which also passes on the peers heard for it; they go into
//! the peer book as [`PeerSource::Lsd`], within its caps. Private torrents (BEP 27)
//! are never announced and take no LSD peers; a magnet whose metadata turns out private
//! is withdrawn at once.

use std::net::SocketAddr;

use super::{Env, Torrent};
use crate::api::PeerSource;

impl Torrent {
    /// The torrent may use LSD: the session runs it and the torrent is public.
    pub(super) fn lsd_allowed(&self, env: &Env<'_>) -> bool {
        env.ctx.lsd.is_some() && !self.sum.private
    }

    /// The torrent started (or resumed): announce it on the local network.
    pub(super) fn lsd_start(&mut self, env: &mut Env<'_>) {
        if let Some(lsd) = &env.ctx.lsd
            && !self.sum.private
        {
            // a hybrid under both hashes (BEP 52)
            for h in self.swarm_hashes() {
                lsd.announce(h);
            }
        }
    }

    /// The torrent stopped (or is private): announce it no more.
    pub(super) fn lsd_stop(&mut self, env: &mut Env<'_>) {
        if let Some(lsd) = &env.ctx.lsd {
            for h in self.swarm_hashes() {
                lsd.withdraw(h);
            }
        }
    }

    /// LSD heard `peer` announce this torrent: into the peer book (it drops port 0,
    /// known, banned and our own addresses, and keeps at most its cap), then dial if
    /// there is room.
    pub fn on_lsd_peer(&mut self, peer: SocketAddr, env: &mut Env<'_>) {
        if !self.life.is_running() || !self.lsd_allowed(env) {
            return;
        }
        let new = self.book.add(peer, PeerSource::Lsd, env.now);
        tracing::debug!(torrent = %self.sum.name, %peer, new, "LSD peer");
        if new {
            self.connect_more(env);
        }
    }
}
