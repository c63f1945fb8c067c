//! Peer wire protocol (BEP 3).

use std::fmt;

/// A 20-byte peer id (BEP 3 handshake), ours in Azureus style: `-rT0100-` + 12 random bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PeerId(pub [u8; 20]);

impl PeerId {
    /// A fresh random peer id with ratorrent's client prefix (`-rT` + version; `-RT` is
    /// taken by another client in the Azureus-style registry).
    pub fn generate() -> PeerId {
        let mut id = [0u8; 20];
        id[..8].copy_from_slice(b"-rT0100-");
        for b in &mut id[8..] {
            // printable, so trackers that log peer ids show something readable
            *b = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                [rand::random_range(0..62usize)];
        }
        PeerId(id)
    }
}

impl fmt::Debug for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PeerId({})",
            String::from_utf8_lossy(&self.0).escape_debug()
        )
    }
}

pub mod extension;
pub mod wire;
