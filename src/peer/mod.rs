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
            crate::untrusted::escape(&String::from_utf8_lossy(&self.0))
        )
    }
}

/// A readable client name from a peer id (Azureus style `-XXvvvv-`, BEP 20), e.g.
/// `-lt0D80-` → `libtorrent (rakshasa) 0D80`, `-qB4520-` → `qBittorrent 4520`; unknown
/// ids give their printable prefix.
pub fn client_name(id: &PeerId) -> String {
    let b = &id.0;
    if b[0] == b'-' && b[7] == b'-' && b[1..7].iter().all(|c| c.is_ascii_alphanumeric()) {
        let code = std::str::from_utf8(&b[1..3]).unwrap_or("??");
        let ver = std::str::from_utf8(&b[3..7]).unwrap_or("");
        let name = match code {
            "LT" => "libtorrent",
            "lt" => "libtorrent (rakshasa)",
            "qB" => "qBittorrent",
            "TR" => "Transmission",
            "DE" => "Deluge",
            "UT" => "µTorrent",
            "rT" => "ratorrent",
            "RQ" | "rQ" => "rqbit",
            "AZ" => "Vuze",
            "BI" => "BiglyBT",
            _ => code,
        };
        return format!("{name} {ver}");
    }
    if b.starts_with(b"A2-") {
        return "aria2".into();
    }
    let printable: String = b
        .iter()
        .take(8)
        .take_while(|c| c.is_ascii_graphic())
        .map(|&c| c as char)
        .collect();
    if printable.is_empty() {
        "unknown".into()
    } else {
        printable
    }
}

pub mod extension;
pub mod metadata;
pub mod mse;
pub mod pex;
pub mod utp;
pub mod wire;
