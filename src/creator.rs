//! `ratorrent create PATH -o FILE.torrent`: the options of a new torrent turned into a
//! [`TorrentBuilder`], hashing with a progress line on a terminal, the file written
//! atomically (never over an existing one unless asked), and a summary: format, size,
//! pieces, both info hashes and a magnet link. The TUI's create dialog uses the same
//! [`CreateOptions::builder`].

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::metainfo::create::{CreateProgress, MIN_PIECE_LENGTH};
use crate::metainfo::{MAX_PIECE_LENGTH, Magnet, MetaVersion, Metainfo, TorrentBuilder};
use crate::units::{size, size_and_bytes};

/// What a new torrent should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOptions {
    /// The file or folder to share.
    pub path: PathBuf,
    /// v1, v2 or hybrid.
    pub version: MetaVersion,
    /// Bytes per piece; `None`: from the total size.
    pub piece_length: Option<u32>,
    /// Tiers of announce URLs (BEP 12).
    pub trackers: Vec<Vec<String>>,
    /// Web seed URLs (BEP 19).
    pub web_seeds: Vec<String>,
    /// BEP 27 private.
    pub private: bool,
    /// `comment`.
    pub comment: Option<String>,
    /// `source` tag in the info dictionary.
    pub source: Option<String>,
    /// Write the creation date (now).
    pub date: bool,
    /// Hashing threads; `None`: one per core.
    pub threads: Option<usize>,
}

impl CreateOptions {
    /// Options for `path` with the defaults: hybrid, automatic piece size, no tracker,
    /// public, dated.
    pub fn new(path: impl Into<PathBuf>) -> CreateOptions {
        CreateOptions {
            path: path.into(),
            version: MetaVersion::Hybrid,
            piece_length: None,
            trackers: Vec::new(),
            web_seeds: Vec::new(),
            private: false,
            comment: None,
            source: None,
            date: true,
            threads: None,
        }
    }

    /// The builder these options describe, reporting to `progress`.
    pub fn builder(&self, progress: Arc<CreateProgress>) -> TorrentBuilder {
        let mut b = TorrentBuilder::new(&self.path)
            .version(self.version)
            .private(self.private)
            .comment(self.comment.clone())
            .source_tag(self.source.clone())
            .progress(progress);
        if !self.date {
            b = b.creation_date(None);
        }
        if let Some(pl) = self.piece_length {
            b = b.piece_length(pl);
        }
        if let Some(n) = self.threads {
            b = b.threads(n);
        }
        for tier in &self.trackers {
            b = b.announce_tier(tier.clone());
        }
        for url in &self.web_seeds {
            b = b.web_seed(url.clone());
        }
        b
    }

    /// The default output file: the shared file or folder's name with `.torrent`, in the
    /// current folder.
    pub fn default_output(&self) -> PathBuf {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "new".into());
        PathBuf::from(format!("{name}.torrent"))
    }
}

/// A piece size as `--piece-size` takes it: bytes or a size with a unit (`256K`, `4 MiB`),
/// a power of two from 16 KiB to 512 MiB.
///
/// # Errors
/// A sentence naming the value and what is accepted.
pub fn parse_piece_size(text: &str) -> Result<u32, String> {
    let bytes = crate::units::parse_size(text)?;
    match u32::try_from(bytes) {
        Ok(pl) if pl.is_power_of_two() && (MIN_PIECE_LENGTH..=MAX_PIECE_LENGTH).contains(&pl) => {
            Ok(pl)
        }
        _ => Err(format!(
            "piece size {text:?} must be a power of two from 16 KiB to 512 MiB (e.g. 256K, 4M)"
        )),
    }
}

/// The URLs of one tier as `--tracker` takes them: separated by commas, blanks trimmed,
/// empty ones dropped.
pub fn parse_tier(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A torrent made and written.
#[derive(Debug)]
pub struct Created {
    /// Where it was written.
    pub path: PathBuf,
    /// The torrent, as read back.
    pub meta: Metainfo,
    /// Time spent hashing and encoding.
    pub elapsed: Duration,
}

impl Created {
    /// The summary printed after `create`: file, format, size and pieces, time and rate,
    /// the info hash(es) and a magnet link.
    pub fn summary(&self) -> String {
        let m = &self.meta;
        let format = match m.version() {
            MetaVersion::V1 => "v1",
            MetaVersion::V2 => "v2",
            MetaVersion::Hybrid => "hybrid v1 + v2",
        };
        let secs = self.elapsed.as_secs_f64().max(1e-3);
        let mut s = format!(
            "Created {} ({format}): {} in {} pieces of {}, hashed in {:.1} s ({}/s)\n",
            self.path.display(),
            size_and_bytes(m.payload_size()),
            m.piece_count(),
            size(u64::from(m.piece_length)),
            secs,
            size((m.total_length as f64 / secs) as u64),
        );
        if m.version() != MetaVersion::V2 {
            s.push_str(&format!("Info hash v1:  {}\n", m.info_hash.to_hex()));
        }
        if let Some(v2) = &m.info_hash_v2 {
            s.push_str(&format!(
                "Info hash v2:  {}\n",
                data_encoding::HEXLOWER.encode(v2)
            ));
        }
        s.push_str(&format!("Magnet:        {}\n", magnet_of(m)));
        s
    }
}

/// A magnet link for `m`: its hashes, name, trackers and web seeds (`ws`, BEP 19).
pub fn magnet_of(m: &Metainfo) -> String {
    Magnet {
        info_hash: m.info_hash,
        info_hash_v2: m.info_hash_v2,
        name: Some(m.name.clone()),
        trackers: m.trackers.iter().flatten().cloned().collect(),
        peers: Vec::new(),
        select_only: Vec::new(),
        web_seeds: m.web_seeds.clone(),
        notes: Vec::new(),
    }
    .to_link()
}

/// Make the torrent `opts` describes and write it to `output` (refusing to replace a file
/// unless `force`); with `progress_line`, a progress line on standard error while hashing.
///
/// # Errors
/// The output exists, the source cannot be hashed ([`crate::metainfo::CreateError`]), or
/// the file cannot be written.
pub fn create(
    opts: &CreateOptions,
    output: &Path,
    force: bool,
    progress_line: bool,
) -> anyhow::Result<Created> {
    if !force && output.exists() {
        anyhow::bail!(
            "{} exists: give another -o FILE, or --force to replace it",
            output.display()
        );
    }
    let progress = Arc::new(CreateProgress::default());
    let builder = opts.builder(progress.clone());
    let start = Instant::now();
    let shown = progress_line && std::io::stderr().is_terminal();
    let result = std::thread::scope(|s| {
        let work = s.spawn(|| builder.build_meta());
        while shown && !work.is_finished() {
            std::thread::sleep(Duration::from_millis(200));
            let done = progress.done.load(Ordering::Relaxed);
            let total = progress.total.load(Ordering::Relaxed).max(1);
            let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-3);
            eprint!(
                "\rhashing: {} of {} ({:.0}%), {}/s   ",
                size(done),
                size(total),
                done as f64 * 100.0 / total as f64,
                size(rate as u64)
            );
            let _ = std::io::stderr().flush();
        }
        work.join()
    });
    if shown {
        eprint!("\r{:60}\r", "");
    }
    let (bytes, meta) = result
        .map_err(|_| anyhow::anyhow!("the hashing thread failed"))?
        .map_err(|e| anyhow::anyhow!("cannot create a torrent of {}: {e}", opts.path.display()))?;
    let elapsed = start.elapsed();
    crate::atomic_write::write(output, &bytes, crate::atomic_write::Durability::Synced)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
    Ok(Created {
        path: output.to_path_buf(),
        meta,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piece_sizes_and_tiers_are_read_as_documented() {
        assert_eq!(parse_piece_size("16K"), Ok(16_384));
        assert_eq!(parse_piece_size("4 MiB"), Ok(4 << 20));
        assert_eq!(parse_piece_size("262144"), Ok(262_144));
        for bad in ["8K", "100000", "1G", "x"] {
            assert!(parse_piece_size(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_tier(" http://a/announce , udp://b:1,,"),
            vec!["http://a/announce".to_string(), "udp://b:1".to_string()]
        );
    }

    #[test]
    fn a_torrent_is_written_once_and_summarised() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("data.bin");
        std::fs::write(&src, vec![3u8; 70_000]).unwrap();
        let mut opts = CreateOptions::new(&src);
        opts.trackers = vec![parse_tier("http://t.example/announce")];
        opts.date = false;
        let out = dir.path().join("data.torrent");
        let c = create(&opts, &out, false, false).unwrap();
        let text = c.summary();
        assert!(text.contains("(hybrid v1 + v2)"), "{text}");
        assert!(text.contains("Info hash v1:  "), "{text}");
        assert!(text.contains("magnet:?xt=urn:btih:"), "{text}");
        let e = create(&opts, &out, false, false).unwrap_err().to_string();
        assert!(e.contains("exists"), "{e}");
        let again = create(&opts, &out, true, false).unwrap();
        assert_eq!(
            again.meta.info_hash, c.meta.info_hash,
            "reproducible without a date"
        );
        assert_eq!(opts.default_output(), PathBuf::from("data.bin.torrent"));
    }
}
