//! How a torrent's payload reaches its files: the I/O mode ([`StorageMode`]), how disk space
//! is allocated ([`Preallocate`]), and the session's handle cache, bundled as
//! [`StorageOptions`] (config keys `storage`, `preallocate`, `max_open_files`).

use serde::Deserialize;

#[cfg(doc)]
use super::error::StorageError;
use super::handles::HandleCache;

/// How payload bytes reach the files (config `storage`, command line `--storage`).
///
/// Which to pick: `file` unless there is a reason. It reports every disk problem as an
/// error (a file cut short, a failing disk), keeps the process's resident memory small,
/// and on the 1 GiB benchmarks (2 cores) it downloaded with less CPU than `mmap` (2.1 vs
/// 2.7-3.0 CPU s/GiB: a mapping takes a page fault for every 4 KiB page written) and
/// re-checked with the same CPU (0.83 s/GiB, both at the SHA-1 cost plus the page-cache
/// copy or page faults). `mmap` saves the copy and the system call per block on reads, and
/// its resident size includes the mapped payload (page cache, not anonymous memory, like
/// libtorrent 2.x); use it only for payloads no other program truncates, on local disks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageMode {
    /// Positioned I/O (`pread`/`pwrite`) through a copy in user memory. Safe on every file
    /// system and against files changed by other programs; the default.
    #[default]
    File,
    /// Memory maps (`memmap2`): no copy and no syscall per block once mapped, pages shared
    /// with the page cache. A file truncated by another program during an access can still
    /// kill the process (`SIGBUS`, see [`super::backend`]).
    Mmap,
}

impl std::str::FromStr for StorageMode {
    type Err = String;

    /// `"file"` or `"mmap"`.
    fn from_str(s: &str) -> Result<StorageMode, String> {
        match s {
            "file" => Ok(StorageMode::File),
            "mmap" => Ok(StorageMode::Mmap),
            other => Err(format!(
                "unknown storage mode {other:?} (expected file or mmap)"
            )),
        }
    }
}

impl std::fmt::Display for StorageMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StorageMode::File => "file",
            StorageMode::Mmap => "mmap",
        })
    }
}

/// How a file's disk space is allocated when the torrent first writes to it (config
/// `preallocate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preallocate {
    /// Sparse: blocks are allocated as data arrives (holes read as zeros). The default.
    #[default]
    Sparse,
    /// The whole file is allocated with `fallocate` on the first write to it (less
    /// fragmentation; a full disk shows at once, not mid-download). On a file system
    /// without `fallocate` the write fails with [`StorageError::Unsupported`], naming the
    /// file and the setting to change: ratorrent never writes zeros over a file that may
    /// already hold data.
    Full,
}

/// Per-torrent storage settings, and the session's handle cache.
#[derive(Debug, Clone, Default)]
pub struct StorageOptions {
    /// Positioned I/O or memory maps.
    pub mode: StorageMode,
    /// Sparse or fully allocated files.
    pub preallocate: Preallocate,
    /// The session's open-file cache (the default is [`HandleCache::process`]).
    pub handles: HandleCache,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_mode_parses_and_prints() {
        assert_eq!("mmap".parse::<StorageMode>().unwrap(), StorageMode::Mmap);
        assert_eq!("file".parse::<StorageMode>().unwrap(), StorageMode::File);
        assert!(
            "MMAP"
                .parse::<StorageMode>()
                .unwrap_err()
                .contains("file or mmap")
        );
        assert_eq!(StorageMode::Mmap.to_string(), "mmap");
        for m in [StorageMode::File, StorageMode::Mmap] {
            assert_eq!(m.to_string().parse::<StorageMode>().unwrap(), m);
        }
    }

    #[derive(Deserialize)]
    struct Keys {
        storage: StorageMode,
        preallocate: Preallocate,
    }

    #[test]
    fn config_values_are_lowercase_words() {
        let k: Keys = toml::from_str("storage = \"mmap\"\npreallocate = \"full\"").unwrap();
        assert_eq!(
            (k.storage, k.preallocate),
            (StorageMode::Mmap, Preallocate::Full)
        );
        let k: Keys = toml::from_str("storage = \"file\"\npreallocate = \"sparse\"").unwrap();
        assert_eq!(
            (k.storage, k.preallocate),
            (StorageMode::File, Preallocate::Sparse)
        );
        assert!(toml::from_str::<Keys>("storage = \"Mmap\"\npreallocate = \"full\"").is_err());
    }

    #[test]
    fn defaults_are_positioned_io_sparse_files_and_the_process_cache() {
        let o = StorageOptions::default();
        assert_eq!(o.mode, StorageMode::File);
        assert_eq!(o.preallocate, Preallocate::Sparse);
        assert_eq!(o.handles.capacity(), HandleCache::process().capacity());
    }
}
