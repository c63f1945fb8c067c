//! Command-line interface (clap): the TUI by default, and headless subcommands for scripts.

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::api::AddSource;
use crate::metainfo::magnet::is_magnet;

/// ratorrent — a fast, light BitTorrent client with a terminal UI.
///
/// With no subcommand, opens the TUI with the given .torrent files or magnet links added.
#[derive(Debug, Clone, Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    /// Config file (default: ~/.config/ratorrent/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// TCP port to accept peers on (overrides `listen_port`; 0 picks a free port).
    #[arg(long, global = true, value_name = "N")]
    pub port: Option<u16>,

    /// DHT node to join through, HOST:PORT (repeatable; replaces `[dht] bootstrap`).
    #[arg(long = "dht-bootstrap", global = true, value_name = "HOST:PORT",
          value_parser = parse_host_port)]
    pub dht_bootstrap: Vec<String>,

    /// Run without the DHT (overrides `[dht] enabled`).
    #[arg(long = "no-dht", global = true)]
    pub no_dht: bool,

    /// Find peers on the local network with Local Service Discovery, BEP 14 (overrides
    /// `[lsd] enabled`, which is off by default).
    #[arg(long = "lsd", global = true)]
    pub lsd: bool,
    /// How payload bytes reach the files: `file` (positioned I/O) or `mmap` (memory maps);
    /// overrides `storage` in the config.
    #[arg(long, global = true, value_name = "file|mmap")]
    pub storage: Option<crate::storage::StorageMode>,

    /// MSE/PE encryption of peer connections: `prefer`, `require` or `disable` (overrides
    /// `[peer] encryption`).
    #[arg(long, global = true, value_name = "prefer|require|disable")]
    pub encryption: Option<crate::config::engine::Encryption>,

    /// Watch folder for the TUI (overrides `watch_dir`): .torrent files dropped there are
    /// added, then renamed `.added` (or `.invalid`, with the reason in the log).
    #[arg(long, global = true, value_name = "DIR")]
    pub watch: Option<PathBuf>,

    /// .torrent files, magnet links or http(s) URLs of .torrent files to add when the TUI
    /// opens.
    #[arg(value_name = "TORRENT|MAGNET|URL")]
    pub torrents: Vec<PathBuf>,

    /// Draw the TUI with ASCII only: no box drawing, block or braille characters (also
    /// config `ascii = true`; automatic when the locale is not UTF-8).
    #[arg(long)]
    pub ascii: bool,

    /// Where the TUI stores downloads (overrides `download_dir`).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Headless subcommand.
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

/// What a torrent argument names: a magnet link when it starts with `magnet:` (any case,
/// surrounding blanks ignored), a URL when it starts with `scheme://` (the engine fetches
/// `http`/`https` and refuses the others), else the path of a .torrent file.
pub fn add_source(arg: &Path) -> AddSource {
    match arg.to_str() {
        Some(text) if is_magnet(text) => AddSource::Magnet(text.trim().to_owned()),
        Some(text) if crate::net::is_url(text) => AddSource::Url(text.trim().to_owned()),
        _ => AddSource::File(arg.to_path_buf()),
    }
}

/// `HOST:PORT` as [`crate::config::engine::check_host_port`] accepts it.
fn parse_host_port(s: &str) -> Result<String, String> {
    crate::config::engine::check_host_port(s).map(|()| s.to_string())
}

/// Headless subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Cmd {
    /// Download torrents without the TUI, printing progress; exits 0 once every piece of
    /// every torrent is verified (or keeps seeding with --seed until SIGINT/SIGTERM).
    Download {
        /// The .torrent files, magnet links or http(s) URLs of .torrent files (quote a
        /// magnet link or a URL: they hold `&`).
        #[arg(required = true, value_name = "TORRENT|MAGNET|URL")]
        torrents: Vec<PathBuf>,
        /// Directory to download into (default: `download_dir` from the config).
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
        /// Keep seeding after the download completes, until interrupted.
        #[arg(long)]
        seed: bool,
        /// Give up (exit 1) if not complete after this many seconds.
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// Print nothing but errors.
        #[arg(short, long)]
        quiet: bool,
        /// When the download volume has less free space than `min_free_space`, wait for
        /// space to come back (the default is to stop with exit status 1 and say why).
        #[arg(long = "wait-for-space")]
        wait_for_space: bool,
        /// The data is already complete (cross-seeding): no hash check at start, each piece
        /// is hashed before it is first sent, and one that does not match is downloaded
        /// again. With --seed, seeds it at once.
        #[arg(long = "skip-check")]
        skip_check: bool,
        /// Download the pieces in order (sequential download).
        #[arg(long)]
        sequential: bool,
        /// A peer to dial for every torrent given, IP:PORT or [IPv6]:PORT (repeatable): a
        /// swarm without tracker, DHT or LSD, or a seedbox of your own.
        #[arg(long = "peer", value_name = "ADDR")]
        peers: Vec<std::net::SocketAddr>,
    },
    /// Run the engine without a terminal, for a service (systemd: `config/ratorrent.service`):
    /// the same session state and watch folder as the TUI, a control socket a TUI attaches
    /// to (`ratorrent` or `ratorrent attach`), logs in the state folder's log file.
    /// SIGTERM/SIGINT stop it (state saved, exit 0); SIGHUP reads the config file again.
    Daemon {
        /// Where downloads go (overrides `download_dir`).
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Open the TUI on the daemon that runs with this state folder (plain `ratorrent`
    /// does so too when a daemon runs); fails when none runs. Quitting leaves the daemon
    /// running; the quit-daemon key (Q) stops it.
    Attach {
        /// .torrent files, magnet links or http(s) URLs to add through the daemon.
        #[arg(value_name = "TORRENT|MAGNET|URL")]
        torrents: Vec<PathBuf>,
        /// Where the torrents given here go (default: the daemon's `download_dir`).
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
        /// Draw with ASCII only (as `ratorrent --ascii`).
        #[arg(long)]
        ascii: bool,
    },
    /// Print a .torrent file's name, info hash, pieces, trackers and files, or what a
    /// magnet link names (info hash, name, trackers, peers).
    Info {
        /// The .torrent file or magnet link (quote it: it holds `&`).
        torrent: PathBuf,
    },
    /// Verify data on disk against a torrent's piece hashes; exits 0 when complete.
    Check {
        /// The .torrent file.
        torrent: PathBuf,
        /// The directory that holds the torrent's file (or its top folder).
        dir: PathBuf,
    },
    /// Make a .torrent of a file or folder: hybrid by default (v1 + v2, BEP 52, as
    /// qBittorrent makes them), or v1 or v2 only. Pieces are hashed on all cores with a
    /// progress line; the result is read back before it is written.
    Create {
        /// The file or folder to share.
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Where to write the .torrent (default: NAME.torrent in the current folder).
        #[arg(short = 'o', long = "output", value_name = "FILE.torrent")]
        output: Option<PathBuf>,
        /// The torrent's format: hybrid (v1 + v2, read by every client), v1 (BEP 3 only),
        /// or v2 (BEP 52 only; older clients cannot read it).
        #[arg(long, value_name = "FORMAT", default_value = "hybrid")]
        format: TorrentFormat,
        /// Bytes per piece: a power of two from 16 KiB to 512 MiB (e.g. 256K, 4M, 16 MiB);
        /// chosen from the total size when left out (about 1500 pieces, 16 KiB .. 16 MiB).
        #[arg(long = "piece-size", alias = "piece-length", value_name = "SIZE")]
        piece_size: Option<String>,
        /// An announce URL; repeat for more tiers (BEP 12), tried in the order given; the
        /// URLs of one tier separated by commas.
        #[arg(short = 't', long = "tracker", value_name = "URL[,URL...]")]
        trackers: Vec<String>,
        /// A web seed URL (BEP 19 `url-list`); repeatable.
        #[arg(short = 'w', long = "web-seed", value_name = "URL")]
        web_seeds: Vec<String>,
        /// Mark the torrent private (BEP 27: trackers only, no DHT, PEX or LSD).
        #[arg(long)]
        private: bool,
        /// A comment.
        #[arg(short = 'c', long, value_name = "TEXT")]
        comment: Option<String>,
        /// A source tag in the info dictionary (private trackers ask for one; it changes
        /// the info hash).
        #[arg(short = 's', long = "source", value_name = "TAG")]
        source: Option<String>,
        /// Leave the creation date out: the same files and options then give the same
        /// bytes (and info hashes).
        #[arg(long = "no-date")]
        no_date: bool,
        /// Hashing threads (default: one per core).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Replace the output file if it exists.
        #[arg(short = 'f', long)]
        force: bool,
        /// Print nothing but errors (no progress line, no summary).
        #[arg(short, long)]
        quiet: bool,
    },
    /// Make the hash of a password for the Web API (`[webui] password`): asks for it twice
    /// on a terminal (or reads one line from standard input) and prints the config line,
    /// a salted PBKDF2-HMAC-SHA256 hash, to paste into the `[webui]` table.
    Passwd,
}

/// The format of a torrent `ratorrent create` makes (BEP 52).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TorrentFormat {
    /// v1 and v2 side by side: every client reads it (qBittorrent's default).
    Hybrid,
    /// BEP 3 only (SHA-1 pieces).
    V1,
    /// BEP 52 only (SHA-256 Merkle trees per file).
    V2,
}

impl From<TorrentFormat> for crate::metainfo::MetaVersion {
    fn from(f: TorrentFormat) -> Self {
        match f {
            TorrentFormat::Hybrid => crate::metainfo::MetaVersion::Hybrid,
            TorrentFormat::V1 => crate::metainfo::MetaVersion::V1,
            TorrentFormat::V2 => crate::metainfo::MetaVersion::V2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torrent_arguments_are_magnet_links_or_files() {
        let hash = "ab".repeat(20);
        for link in [
            format!("magnet:?xt=urn:btih:{hash}"),
            format!("  MAGNET:?xt=urn:btih:{hash}&dn=x \n"),
        ] {
            assert_eq!(
                add_source(Path::new(&link)),
                AddSource::Magnet(link.trim().to_owned())
            );
        }
        for file in ["a.torrent", "./magnet:x.torrent", "dir/magnet:?xt", ""] {
            assert_eq!(
                add_source(Path::new(file)),
                AddSource::File(PathBuf::from(file))
            );
        }
        for url in [
            "http://127.0.0.1:8080/a.torrent?passkey=x",
            " https://t.example/dl/1 ",
            "file:///tmp/a.torrent",
        ] {
            assert_eq!(
                add_source(Path::new(url)),
                AddSource::Url(url.trim().to_owned())
            );
        }
        // a path that is not UTF-8 is a file
        use std::os::unix::ffi::OsStrExt;
        let raw = Path::new(std::ffi::OsStr::from_bytes(b"magnet:\xff"));
        assert_eq!(add_source(raw), AddSource::File(raw.to_path_buf()));
    }
}
