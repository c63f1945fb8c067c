//! What a torrent knows of its info dictionary: the metainfo (BEP 3), or only the magnet
//! link (BEP 9) while the dictionary is being fetched. Read by the magnet page, the peer
//! sources and the rest of the torrent; it imports neither.

use std::sync::Arc;

use crate::metainfo::{Magnet, Metainfo};

/// What the torrent knows of its info dictionary. The fetch of a magnet link's lives in
/// [`Lifecycle::FetchingMetadata`](super::state::Lifecycle::FetchingMetadata).
pub(super) enum Info {
    /// Known: the metainfo while something needs it (`None`: not resident, it is reloaded
    /// from the state store when needed).
    Known(Option<Arc<Metainfo>>),
    /// A magnet link whose info dictionary is not here yet (its trackers are the
    /// torrent's; `x.pe` peers are dialled; `so` applies once the files are known).
    Magnet(Magnet),
}

impl Info {
    /// The magnet link, while its info dictionary is not here.
    pub(super) fn magnet(&self) -> Option<&Magnet> {
        match self {
            Info::Magnet(link) => Some(link),
            Info::Known(_) => None,
        }
    }

    /// The metainfo, when known and resident.
    pub(super) fn resident(&self) -> Option<&Arc<Metainfo>> {
        match self {
            Info::Known(meta) => meta.as_ref(),
            Info::Magnet(_) => None,
        }
    }
}
