//! The routing table saved across restarts (`dht.dat`, JSON): its form, reading it back
//! (bounded, checked), and the crate's serde form of an empty table.

use std::net::SocketAddr;
use std::path::Path;

use librqbit_dht::DhtState;
use serde::{Deserialize, Serialize};

use super::MAX_STATE_FILE_BYTES;

/// Format version of the state file.
pub(super) const STATE_VERSION: u32 = 1;

/// The saved routing table (`dht.dat`, JSON).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Saved {
    pub(super) version: u32,
    /// Our node id, 40 hex digits.
    pub(super) id: String,
    /// The UDP port we were bound to.
    pub(super) port: u16,
    /// Routing table entries: (node id hex, address).
    pub(super) nodes: Vec<(String, SocketAddr)>,
    /// PORT hints not known to be in the table.
    pub(super) hints: Vec<SocketAddr>,
}

pub(super) fn hex(b: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(b)
}

pub(super) fn unhex20(s: &str) -> Option<[u8; 20]> {
    let mut out = [0u8; 20];
    crate::metainfo::decode_hex(s, &mut out)?;
    Some(out)
}

/// The crate's serde form of an empty routing table with our id (the crate offers no
/// constructor; the version is pinned in Cargo.toml and a unit test checks the shape).
pub(super) fn empty_table_json(id: &[u8; 20]) -> String {
    format!(
        r#"{{"id":"{}","size":0,"buckets":{{"data":[{{"bits":160,"start":"{}","end_inclusive":"{}","data":{{"Leaf":{{"nodes":[]}}}}}}],"size":0,"max_size":512}}}}"#,
        hex(id),
        "0".repeat(40),
        "f".repeat(40)
    )
}

/// Read and check a state file; `None` (with a log line) when missing or unusable.
pub(super) fn load_state(path: &Path) -> Option<Saved> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!("DHT: cannot read {}: {e}; starting empty", path.display());
            return None;
        }
    };
    if meta.len() > MAX_STATE_FILE_BYTES {
        tracing::warn!(
            "DHT: {} is larger than {MAX_STATE_FILE_BYTES} bytes; ignored",
            path.display()
        );
        return None;
    }
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("DHT: cannot read {}: {e}; starting empty", path.display());
            return None;
        }
    };
    match serde_json::from_slice::<Saved>(&text) {
        Ok(s) if s.version == STATE_VERSION && unhex20(&s.id).is_some() => Some(s),
        Ok(_) => {
            tracing::warn!(
                "DHT: {} has an unknown version or id; ignored",
                path.display()
            );
            None
        }
        Err(e) => {
            tracing::warn!("DHT: {} is damaged ({e}); ignored", path.display());
            None
        }
    }
}

/// Nodes of both tables but `me` (our own id): (id, address).
pub(super) fn table_nodes(d: &DhtState, me: &[u8; 20]) -> Vec<([u8; 20], SocketAddr)> {
    d.with_routing_tables(|v4, v6| {
        v4.iter()
            .chain(v6.iter())
            .map(|n| (n.id().0, n.addr()))
            .filter(|(id, _)| id != me)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_bad_ids() {
        let id: [u8; 20] = std::array::from_fn(|i| (i * 13) as u8);
        assert_eq!(unhex20(&hex(&id)), Some(id));
        assert_eq!(unhex20("zz"), None);
        assert_eq!(unhex20(&"g".repeat(40)), None);
        assert_eq!(unhex20(&"é".repeat(20)), None);
    }
}
