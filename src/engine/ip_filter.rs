//! The session's IP filter: the list in force (read from the `ip_filter` file off the
//! session task, installed when ready, read again when the file changes) and the count of
//! connection attempts it stopped. Shared by the session (incoming connections) and every
//! torrent's peer book (addresses learnt from trackers, the DHT, PEX, LSD, magnet links and
//! by hand); see [`crate::net::ip_filter`] for the formats.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use crate::net::ip_filter::{IpFilter, IpFilterError, Parsed};

pub use crate::config::engine::IP_FILTER_POLL;

/// The filter in force and the attempts it blocked.
#[derive(Debug, Default)]
pub struct Blocklist {
    current: RwLock<Option<Arc<IpFilter>>>,
    blocked: AtomicU64,
    /// Bumped on every install: peer books look again at the addresses they held back.
    generation: AtomicU64,
    /// A filter is configured and its file not read yet: nobody is dialled and incoming
    /// connections are closed (not counted) until [`Blocklist::install`], so no blocked
    /// peer slips through in the moment after start.
    pending: AtomicBool,
}

impl Blocklist {
    /// A blocklist waiting for its first [`Blocklist::install`] (see
    /// [`Blocklist::pending`]).
    pub fn pending_first_read() -> Blocklist {
        Blocklist {
            pending: AtomicBool::new(true),
            ..Blocklist::default()
        }
    }

    /// The configured filter has not been read yet: dial nobody, accept nobody.
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Whether `ip` is blocked by the filter in force (never without one).
    pub fn blocks(&self, ip: IpAddr) -> bool {
        self.read().as_ref().is_some_and(|f| f.blocks(ip))
    }

    /// [`Blocklist::blocks`], counting a blocked attempt.
    pub fn check(&self, ip: IpAddr) -> bool {
        let b = self.blocks(ip);
        if b {
            self.blocked.fetch_add(1, Ordering::Relaxed);
        }
        b
    }

    /// Attempts blocked this session: dials not made plus incoming connections refused.
    pub fn blocked(&self) -> u64 {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Ranges of the filter in force; `None` when there is none.
    pub fn ranges(&self) -> Option<usize> {
        self.read().as_ref().map(|f| f.len())
    }

    /// Put `filter` in force (`None`: none).
    pub fn install(&self, filter: Option<IpFilter>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = filter.map(Arc::new);
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.pending.store(false, Ordering::Release);
    }

    /// Changes with every [`Blocklist::install`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Option<Arc<IpFilter>>> {
        self.current.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// What identifies a version of the filter file: modification time and size in bytes.
pub type FileStamp = (Option<SystemTime>, u64);

/// The stamp of `path`; `None` when it cannot be looked at (missing, unreadable).
pub fn stamp(path: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok(), m.len()))
}

/// The outcome of one look at the filter file (run on a blocking thread).
#[derive(Debug)]
pub enum Reload {
    /// The file is as it was at the last load: nothing to do.
    Unchanged,
    /// The file was read (or could not be), with the stamp it had before reading.
    Loaded {
        /// The file.
        path: PathBuf,
        /// Its stamp when it was read (`None`: it could not be looked at).
        stamp: Option<FileStamp>,
        /// The filter and its counts, or why the file could not be read.
        result: Result<Parsed, IpFilterError>,
        /// How long reading took.
        took: Duration,
    },
}

/// Look at `path`; read it if its stamp differs from `last` (or on the first look, `last`
/// `None` and `first` true).
pub fn reload(path: &Path, last: Option<FileStamp>, first: bool) -> Reload {
    let now = stamp(path);
    if !first && now == last {
        return Reload::Unchanged;
    }
    let t = std::time::Instant::now();
    let result = IpFilter::load(path);
    Reload::Loaded {
        path: path.to_path_buf(),
        stamp: now,
        result,
        took: t.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_counts_and_installs() {
        let b = Blocklist::default();
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert!(!b.check(ip), "no filter, nothing blocked");
        assert_eq!((b.ranges(), b.blocked()), (None, 0));
        let g = b.generation();
        b.install(Some(IpFilter::from_ranges(
            vec![(0x0a00_0000, 0x0a00_00ff)],
            vec![],
        )));
        assert_ne!(b.generation(), g);
        assert_eq!(b.ranges(), Some(1));
        assert!(b.check(ip));
        assert!(b.check(ip));
        assert!(!b.check("10.0.1.0".parse().unwrap()));
        assert_eq!(b.blocked(), 2);
        b.install(None);
        assert!(!b.blocks(ip));
        assert_eq!(b.blocked(), 2, "the count is for the session");
        assert!(!b.pending());
        let p = Blocklist::pending_first_read();
        assert!(p.pending() && p.ranges().is_none());
        p.install(None);
        assert!(!p.pending(), "an unreadable first file settles it too");
    }

    #[test]
    fn a_file_is_read_again_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.p2p");
        std::fs::write(&path, "x:1.1.1.1-1.1.1.2\n").unwrap();
        let Reload::Loaded {
            stamp: s, result, ..
        } = reload(&path, None, true)
        else {
            panic!("the first look reads");
        };
        assert_eq!(result.unwrap().filter.len(), 1);
        assert!(matches!(reload(&path, s, false), Reload::Unchanged));
        std::fs::write(&path, "x:1.1.1.1-1.1.1.2\ny:2.2.2.2-2.2.2.3\n").unwrap();
        let Reload::Loaded { result, .. } = reload(&path, s, false) else {
            panic!("a changed size is read");
        };
        assert_eq!(result.unwrap().filter.len(), 2);
        std::fs::remove_file(&path).unwrap();
        let Reload::Loaded { stamp, result, .. } = reload(&path, s, false) else {
            panic!("a vanished file is a change");
        };
        assert!(stamp.is_none() && result.is_err());
    }
}
