//! The session's DHT node while it runs: a slot that the session fills when the node
//! starts and empties when it stops, so that the DHT can be switched on and off while the
//! session runs (qBittorrent's `dht` preference). Torrents, peer connections and the
//! listener read it; a read clones the handle (an `Arc`) under a short read lock, never
//! held across an await.

use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Dht;
use crate::lock::RwLockExt;

/// The DHT node of a session, if one runs.
#[derive(Debug, Default)]
pub struct DhtSlot {
    node: RwLock<Option<Dht>>,
    /// Changes each time the node is put in or taken out.
    generation: AtomicU64,
}

impl DhtSlot {
    /// A slot holding `node` (`None`: no DHT).
    pub fn new(node: Option<Dht>) -> DhtSlot {
        DhtSlot {
            node: RwLock::new(node),
            generation: AtomicU64::new(0),
        }
    }

    /// The node, when one runs.
    pub fn get(&self) -> Option<Dht> {
        self.node.read_locked().clone()
    }

    /// Whether a node runs.
    pub fn is_on(&self) -> bool {
        self.node.read_locked().is_some()
    }

    /// Put `node` in (a node started while the session runs).
    pub fn set(&self, node: Dht) {
        *self.node.write_locked() = Some(node);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Take the node out (to stop it); `None` when none ran.
    pub fn take(&self) -> Option<Dht> {
        let node = self.node.write_locked().take();
        self.generation.fetch_add(1, Ordering::Relaxed);
        node
    }

    /// Changes whenever the node is put in or taken out (the session watches its node
    /// count and subscribes again).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_slot() {
        let s = DhtSlot::new(None);
        assert!(s.get().is_none() && !s.is_on());
        let g = s.generation();
        assert!(s.take().is_none());
        assert_ne!(s.generation(), g);
    }
}
