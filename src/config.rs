//! Runtime configuration: a TOML file in the user's config directory, every key optional.
//!
//! Location: `$XDG_CONFIG_HOME/ratorrent/config.toml` (usually `~/.config/ratorrent/`), or
//! the path given with `--config`. `config/default.toml` in the repository lists every key
//! with its default and meaning. Unknown keys are an error, so a typo is not silently
//! ignored; every error names the file, line, column and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use crate::storage::disk::MAX_DISK_THREADS;
use crate::storage::{HandleCache, Preallocate, StorageMode, StorageOptions};

/// Bounds of `max_open_files`.
pub const MAX_OPEN_FILES_RANGE: (u32, u32) = (16, 1 << 20);

/// The default config file, shipped in the repository and printed by `ratorrent config`.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Settings for the whole session.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where payloads are stored; `~` expands to the home directory.
    /// Default: the XDG download directory (`~/Downloads`).
    pub download_dir: PathBuf,
    /// TCP port for incoming peer connections; 0 picks a free port.
    pub listen_port: u16,
    /// Most peer connections per torrent.
    pub max_peers_per_torrent: u32,
    /// Peers unchoked (served) at once per torrent, BEP 3 choking.
    pub upload_slots: u32,
    /// Session-wide download limit, bytes/s; 0 = unlimited. The file takes a number of
    /// bytes/s or a text in human units (`"1M"`, `"500K"`, `"2.5 MiB/s"`, see
    /// [`crate::units::parse_rate`]).
    #[serde(deserialize_with = "rate_limit")]
    pub download_rate_limit: u64,
    /// Session-wide upload limit, bytes/s; 0 = unlimited (same forms as
    /// `download_rate_limit`).
    #[serde(deserialize_with = "rate_limit")]
    pub upload_rate_limit: u64,
    /// Keep seeding after a download completes (TUI); headless `download` uses `--seed`.
    pub seed_after_download: bool,
    /// Threads for disk writes and SHA-1 verification, 0..=64; 0 = one per CPU core (at
    /// most 4).
    pub disk_threads: u32,
    /// Peers to ask the tracker for per announce (`numwant`), 0..=1000; 0 = leave it to the
    /// tracker (see [`Config::announce_numwant`]).
    pub numwant: u32,
    /// Session-wide cap on peer connections (incoming and outgoing, all torrents),
    /// 1..=65535.
    pub max_connections: u32,
    /// Outgoing peer connection attempts in flight at once (TCP connects not yet answered),
    /// session-wide, 1..=1000.
    pub max_half_open: u32,
    /// How payload bytes reach the files: `file` (positioned I/O, the default) or `mmap`
    /// (memory maps). `--storage` overrides it.
    pub storage: StorageMode,
    /// `sparse` (the default: disk space is used as data arrives) or `full` (each file is
    /// allocated whole with `fallocate` on its first write).
    pub preallocate: Preallocate,
    /// Most payload files open at once for the whole session (all torrents), 16..=1048576;
    /// the least recently used are closed beyond it.
    pub max_open_files: u32,
    /// Downloads on a volume pause while it has less free space than this, bytes
    /// (seeding goes on); they resume when space returns. 0 = no guard.
    pub min_free_space: u64,
    /// Largest info dictionary fetched for a magnet link (BEP 9), bytes, 16 KiB..=128 MiB.
    /// Peers that announce a larger `metadata_size` are not asked.
    pub max_metadata_size: u32,
    /// Longest wait for a .torrent file added by `http://` or `https://` URL, seconds,
    /// 1..=600: from connecting until the last byte of the body (redirects included).
    pub add_url_timeout: u32,
    /// Exchange peer lists with peers (BEP 11 `ut_pex`); never for private torrents
    /// (BEP 27).
    pub pex: bool,
    /// Watch folder: .torrent files dropped there are added, then renamed `.added` (or
    /// `.invalid`); `~` expands to the home directory. Default: none (no watching).
    pub watch_dir: Option<PathBuf>,
    /// TUI: draw with ASCII only (no box drawing, block or braille characters). Also
    /// chosen by `--ascii`, and automatically when the locale is not UTF-8.
    pub ascii: bool,
    /// TUI: take mouse events (wheel scrolls, click selects). Off by default, so the
    /// terminal's (and tmux's) own selection and copy mode keep working.
    pub mouse: bool,
    /// TUI: `q` asks "Quit ratorrent?" while torrents are active (downloading, seeding,
    /// checking or moving), as qBittorrent's "confirm on exit" does. `false` quits at once
    /// (the session is saved either way; scripts driving the TUI want this).
    pub confirm_quit: bool,
    /// TUI: the torrent list's columns, by name (`name`, `size`, `progress`, `state`,
    /// `down`, `up`, `eta`, `ratio`, `seeds`, `peers`, `added`; any order, the screen keeps
    /// its own; `name` is always shown). A narrow terminal gives up some of them by priority
    /// (added, seeds, size, eta first; the upload rate, ratio and peers stay at 80
    /// columns). The TUI reads the names and refuses unknown ones. Default: all.
    pub columns: Vec<String>,
    /// TUI key bindings: action name → key or list of keys, replacing that action's
    /// defaults (see the help window, `?`, for the names).
    pub keys: BTreeMap<String, KeyList>,
    /// TUI colours: role → one of the 16 ANSI colour names.
    pub colors: BTreeMap<String, String>,
    /// The DHT (BEP 5), the `[dht]` table.
    pub dht: DhtConfig,
    /// Local Service Discovery (BEP 14), the `[lsd]` table.
    pub lsd: LsdConfig,
}

/// The keys of one action in the `[keys]` section: one key (`"x"`) or a list (`["x", "F2"]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum KeyList {
    /// One key.
    One(String),
    /// Several keys (empty: the action is unbound).
    Many(Vec<String>),
}

impl KeyList {
    /// The keys as a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            KeyList::One(k) => vec![k.clone()],
            KeyList::Many(v) => v.clone(),
        }
    }
}

/// Most `[dht] bootstrap` entries.
pub const MAX_DHT_BOOTSTRAP: usize = 64;

/// The public DHT routers used when `[dht] bootstrap` is not set (`HOST:PORT`).
pub const DEFAULT_DHT_BOOTSTRAP: [&str; 4] = [
    "router.bittorrent.com:6881",
    "dht.transmissionbt.com:6881",
    "router.utorrent.com:6881",
    "dht.libtorrent.org:25401",
];

/// The `[dht]` table: the session's DHT node (BEP 5; BEP 32 on a dual-stack host).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DhtConfig {
    /// Run a DHT node: find peers of public torrents (and magnets) without a tracker and
    /// announce ours. Private torrents (BEP 27) never use it. Default: true.
    pub enabled: bool,
    /// UDP port of the node; `None` = the same number as `listen_port` (the port actually
    /// bound when that is 0); `Some(0)` = a free port.
    pub port: Option<u16>,
    /// `HOST:PORT` nodes to join through when the saved routing table is empty or stale, at
    /// most [`MAX_DHT_BOOTSTRAP`]. Default: [`DEFAULT_DHT_BOOTSTRAP`].
    pub bootstrap: Vec<String>,
    /// Where the routing table is saved and restored from (set by the session to
    /// `STATE_DIR/dht.dat`; not a config key). `None` = memory only.
    #[serde(skip)]
    pub state_file: Option<PathBuf>,
}

impl Default for DhtConfig {
    fn default() -> Self {
        DhtConfig {
            enabled: true,
            port: None,
            bootstrap: DEFAULT_DHT_BOOTSTRAP
                .iter()
                .map(|s| s.to_string())
                .collect(),
            state_file: None,
        }
    }
}

/// The `[lsd]` table: Local Service Discovery (BEP 14), IPv4 multicast on the local
/// network (see [`crate::lsd`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LsdConfig {
    /// Announce public torrents to, and take peers from, the local network (group
    /// 239.192.152.143:6771). Default: false (a seedbox rarely has a LAN to find peers on,
    /// and LSD tells the whole link what runs here). Private torrents (BEP 27) never use it.
    pub enabled: bool,
    /// IPv4 address of the interface to join the group on and send from; `None` (or
    /// `"0.0.0.0"`) = the kernel's choice (the interface of the multicast or default
    /// route). Must be a unicast address.
    pub interface: Option<std::net::Ipv4Addr>,
}

impl LsdConfig {
    /// The interface address to use, `0.0.0.0` for the kernel's choice.
    pub fn interface_addr(&self) -> std::net::Ipv4Addr {
        self.interface.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED)
    }
}

/// serde: a rate limit given as a number (bytes/s) or as a text in human units.
fn rate_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Rate {
        Bytes(u64),
        Text(String),
    }
    match Rate::deserialize(d)? {
        Rate::Bytes(n) => Ok(n),
        Rate::Text(t) => crate::units::parse_rate(&t).map_err(serde::de::Error::custom),
    }
}

impl DhtConfig {
    /// The DHT switched off, with no bootstrap nodes (tests, embedders).
    pub fn off() -> DhtConfig {
        DhtConfig {
            enabled: false,
            port: None,
            bootstrap: Vec::new(),
            state_file: None,
        }
    }

    /// The UDP port to bind, given the TCP port the session listens on.
    pub fn udp_port(&self, listen_port: u16) -> u16 {
        self.port.unwrap_or(listen_port)
    }
}

/// Check a `HOST:PORT` entry (DHT bootstrap nodes): a host name of letters, digits, `-`,
/// `.` and `_`, an IPv4 address or a bracketed IPv6 address (`[::1]:6881`), then a port
/// 1..=65535.
///
/// # Errors
/// A description naming the entry, e.g. ``"router": not HOST:PORT``.
pub fn check_host_port(entry: &str) -> Result<(), String> {
    let fail = |why: &str| Err(format!("{entry:?}: {why}"));
    let Some((host, port)) = entry.rsplit_once(':') else {
        return fail("not HOST:PORT");
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return fail("the port must be 1..=65535"),
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return match v6.parse::<std::net::Ipv6Addr>() {
            Ok(_) => Ok(()),
            Err(_) => fail("not an IPv6 address between [ ]"),
        };
    }
    if host.is_empty() || host.len() > 253 {
        return fail("no host");
    }
    if host.contains(':') {
        return fail("an IPv6 address goes between [ ]");
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return fail("the host has characters a host name cannot have");
    }
    Ok(())
}

impl Default for Config {
    fn default() -> Self {
        Config {
            download_dir: default_download_dir(),
            listen_port: 6881,
            max_peers_per_torrent: 50,
            upload_slots: 4,
            download_rate_limit: 0,
            upload_rate_limit: 0,
            seed_after_download: true,
            disk_threads: 0,
            numwant: 50,
            max_connections: 200,
            max_half_open: 32,
            storage: StorageMode::File,
            preallocate: Preallocate::Sparse,
            max_open_files: crate::storage::DEFAULT_MAX_OPEN_FILES as u32,
            ascii: false,
            mouse: false,
            confirm_quit: true,
            columns: [
                "name", "size", "progress", "state", "down", "up", "eta", "ratio", "seeds",
                "peers", "added",
            ]
            .map(String::from)
            .to_vec(),
            keys: BTreeMap::new(),
            colors: BTreeMap::new(),
            min_free_space: 1 << 30,
            dht: DhtConfig::default(),
            lsd: LsdConfig::default(),
            max_metadata_size: 32 << 20,
            add_url_timeout: 30,
            pex: true,
            watch_dir: None,
        }
    }
}

/// Why the config file could not be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read config file {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// TOML syntax error, unknown key or wrong type; the message names line, column and key.
    #[error("invalid config file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// toml's description: "TOML parse error at line N, column M ... unknown field `x`".
        message: String,
    },
    /// A value that parses but makes no sense.
    #[error("invalid config file {path}: `{key}` {problem}")]
    Value {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// `$XDG_CONFIG_HOME/ratorrent/config.toml`, if a config directory is known.
pub fn default_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("ratorrent").join("config.toml"))
}

/// `$XDG_STATE_HOME/ratorrent` (falls back to the data dir, then the temp dir): logs go here.
pub fn state_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("ratorrent")
}

fn default_download_dir() -> PathBuf {
    dirs::download_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join("Downloads")))
        .unwrap_or_else(|| PathBuf::from("."))
}

fn expand_tilde(p: &Path) -> PathBuf {
    match p.strip_prefix("~") {
        Ok(rest) => dirs::home_dir().map_or_else(|| p.to_path_buf(), |h| h.join(rest)),
        Err(_) => p.to_path_buf(),
    }
}

impl Config {
    /// Parse TOML text; `path` is only used in error messages.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] or [`ConfigError::Value`].
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut c: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        c.download_dir = expand_tilde(&c.download_dir);
        c.watch_dir = c.watch_dir.as_deref().map(expand_tilde);
        let bad = |key, problem: &str| ConfigError::Value {
            path: path.to_path_buf(),
            key,
            problem: problem.to_string(),
        };
        if c.max_peers_per_torrent == 0 {
            return Err(bad("max_peers_per_torrent", "must be at least 1"));
        }
        if c.upload_slots == 0 {
            return Err(bad("upload_slots", "must be at least 1"));
        }
        if c.download_dir.as_os_str().is_empty() {
            return Err(bad("download_dir", "must not be empty"));
        }
        if c.watch_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(bad(
                "watch_dir",
                "must not be empty (leave it out to watch no folder)",
            ));
        }
        // (key, value, allowed range, what 0 means)
        let bounded: [(&'static str, u32, u32, u32, &str); 7] = [
            (
                "disk_threads",
                c.disk_threads,
                0,
                MAX_DISK_THREADS as u32,
                ", 0 = one per CPU core",
            ),
            (
                "numwant",
                c.numwant,
                0,
                1000,
                ", 0 = let the tracker choose",
            ),
            ("max_connections", c.max_connections, 1, 65_535, ""),
            ("max_half_open", c.max_half_open, 1, 1000, ""),
            (
                "max_open_files",
                c.max_open_files,
                MAX_OPEN_FILES_RANGE.0,
                MAX_OPEN_FILES_RANGE.1,
                "",
            ),
            (
                "max_metadata_size",
                c.max_metadata_size,
                16 * 1024,
                128 << 20,
                "",
            ),
            ("add_url_timeout", c.add_url_timeout, 1, 600, ""),
        ];
        for (key, value, min, max, zero) in bounded {
            if !(min..=max).contains(&value) {
                return Err(bad(
                    key,
                    &format!("must be between {min} and {max}{zero} (got {value})"),
                ));
            }
        }
        if let Err(problems) = crate::tui::keymap::Keymap::new(&c.key_overrides()) {
            return Err(ConfigError::Value {
                path: path.to_path_buf(),
                key: "keys",
                problem: problems.join("; "),
            });
        }
        if let Err(problem) = c.color_overrides() {
            return Err(bad("colors", &problem));
        }
        if c.dht.bootstrap.len() > MAX_DHT_BOOTSTRAP {
            return Err(bad(
                "dht.bootstrap",
                &format!(
                    "must list at most {MAX_DHT_BOOTSTRAP} nodes (got {})",
                    c.dht.bootstrap.len()
                ),
            ));
        }
        for b in &c.dht.bootstrap {
            check_host_port(b).map_err(|p| bad("dht.bootstrap", &format!("entry {p}")))?;
        }
        if let Some(ip) = c.lsd.interface
            && (ip.is_multicast() || ip.is_broadcast())
        {
            return Err(bad(
                "lsd.interface",
                &format!(
                    "must be the IPv4 address of one of this host's interfaces, not {ip} \
                     (leave it out for the kernel's choice)"
                ),
            ));
        }
        Ok(c)
    }

    /// The `[keys]` section as action name → key texts.
    pub fn key_overrides(&self) -> BTreeMap<String, Vec<String>> {
        self.keys
            .iter()
            .map(|(name, keys)| (name.clone(), keys.to_vec()))
            .collect()
    }

    /// The `[colors]` section as role → colour.
    ///
    /// # Errors
    /// An unknown role or colour name, in a sentence naming it.
    pub fn color_overrides(
        &self,
    ) -> Result<BTreeMap<crate::tui::theme::Role, ratatui::style::Color>, String> {
        use crate::tui::theme::{Role, parse_color};
        let mut out = BTreeMap::new();
        for (name, value) in &self.colors {
            let Some((role, _, _)) = Role::ALL.iter().find(|(_, n, _)| n == name) else {
                let names: Vec<&str> = Role::ALL.iter().map(|(_, n, _)| *n).collect();
                return Err(format!(
                    "unknown colour role {name:?} (roles: {})",
                    names.join(", ")
                ));
            };
            out.insert(
                *role,
                parse_color(value).map_err(|e| format!("{name}: {e}"))?,
            );
        }
        Ok(out)
    }

    /// Load `path` if given, else the default location. A missing file at the default
    /// location means defaults; a missing file named explicitly is an error.
    ///
    /// # Errors
    /// [`ConfigError`] for unreadable or invalid files.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let (path, explicit) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => match default_config_path() {
                Some(p) => (p, false),
                None => return Ok(Config::default()),
            },
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::from_toml(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                Ok(Config::default())
            }
            Err(error) => Err(ConfigError::Read { path, error }),
        }
    }

    /// Disk threads to start: the configured number (at most 64, even for a `Config` not
    /// built by [`Config::from_toml`]), or one per core up to 4.
    pub fn disk_thread_count(&self) -> usize {
        if self.disk_threads > 0 {
            (self.disk_threads as usize).min(MAX_DISK_THREADS)
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
        }
    }

    /// Handles the session's file cache may keep open: `max_open_files` within its bounds,
    /// even for a `Config` not built by [`Config::from_toml`].
    pub fn open_file_cap(&self) -> usize {
        self.max_open_files
            .clamp(MAX_OPEN_FILES_RANGE.0, MAX_OPEN_FILES_RANGE.1) as usize
    }

    /// The storage settings of every torrent of the session, sharing `handles` (create it
    /// once per session with `HandleCache::new(config.open_file_cap())`).
    pub fn storage_options(&self, handles: HandleCache) -> StorageOptions {
        StorageOptions {
            mode: self.storage,
            preallocate: self.preallocate,
            handles,
        }
    }

    /// The `numwant` to send in an announce: `None` (leave it out, the tracker picks,
    /// usually 50) for 0, else the configured number, at most 1000 even for a `Config` not
    /// built by [`Config::from_toml`].
    pub fn announce_numwant(&self) -> Option<u32> {
        (self.numwant > 0).then(|| self.numwant.min(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_default_file_parses_to_the_defaults() {
        let c = Config::from_toml(DEFAULT_TOML, Path::new("config/default.toml")).unwrap();
        let d = Config::default();
        // download_dir in the file is a commented example; everything else must agree
        assert_eq!(c, d, "config/default.toml and Config::default() disagree");
    }

    #[test]
    fn every_key_is_documented_in_the_default_file() {
        for key in [
            "download_dir",
            "listen_port",
            "max_peers_per_torrent",
            "upload_slots",
            "download_rate_limit",
            "upload_rate_limit",
            "seed_after_download",
            "disk_threads",
            "numwant",
            "max_connections",
            "max_half_open",
            "storage",
            "preallocate",
            "max_open_files",
            "ascii",
            "mouse",
            "confirm_quit",
            "columns",
            "min_free_space",
            "enabled",
            "port",
            "bootstrap",
            "max_metadata_size",
            "add_url_timeout",
            "pex",
            "watch_dir",
        ] {
            assert!(
                DEFAULT_TOML.contains(&format!("# {key} ="))
                    || DEFAULT_TOML.contains(&format!("\n{key} =")),
                "{key} missing from config/default.toml"
            );
        }
    }

    #[test]
    fn empty_file_is_all_defaults_and_partial_files_override() {
        assert_eq!(
            Config::from_toml("", Path::new("x")).unwrap(),
            Config::default()
        );
        let c = Config::from_toml(
            "listen_port = 7000\nupload_rate_limit = 1048576\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(c.listen_port, 7000);
        assert_eq!(c.upload_rate_limit, 1 << 20);
        assert_eq!(c.upload_slots, Config::default().upload_slots);
    }

    #[test]
    fn errors_name_line_and_key() {
        let e = Config::from_toml(
            "listen_port = 6881\nlisten_prot = 1\n",
            Path::new("/c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("/c.toml") && e.contains("line 2") && e.contains("listen_prot"),
            "{e}"
        );
        let e = Config::from_toml("listen_port = \"high\"\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("listen_port"), "{e}");
        let e = Config::from_toml("listen_port = 70000\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
        let e = Config::from_toml("upload_slots = 0\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("upload_slots"), "{e}");
        let e = Config::from_toml("[[[", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn rates_in_human_units() {
        let c = Config::from_toml(
            "download_rate_limit = \"2M\"\nupload_rate_limit = 1024\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(
            (c.download_rate_limit, c.upload_rate_limit),
            (2 << 20, 1024)
        );
        let e = Config::from_toml("upload_rate_limit = \"fast\"\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("fast"), "{e}");
    }

    #[test]
    fn keys_and_colours_sections() {
        let c = Config::from_toml(
            "ascii = true\nmouse = true\nconfirm_quit = false\n[keys]\npause = \"x\"\nrecheck = [\"C\", \"F5\"]\n[colors]\ndown = \"bright_cyan\"\n",
            Path::new("x"),
        )
        .unwrap();
        assert!(c.ascii && c.mouse && !c.confirm_quit);
        assert!(Config::default().confirm_quit);
        assert_eq!(c.key_overrides()["recheck"], vec!["C", "F5"]);
        assert_eq!(c.color_overrides().unwrap().len(), 1);
        let e = Config::from_toml("[keys]\npause = \"c\"\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("keys") && e.contains("recheck"), "{e}");
        let e = Config::from_toml("[keys]\nfly = \"c\"\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("fly"), "{e}");
        let e = Config::from_toml("[colors]\ndown = \"pink\"\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pink"), "{e}");
        let e = Config::from_toml("[colors]\nsky = \"red\"\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sky"), "{e}");
    }

    #[test]
    fn tilde_expands() {
        let c = Config::from_toml("download_dir = \"~/dl\"\n", Path::new("x")).unwrap();
        if let Some(h) = dirs::home_dir() {
            assert_eq!(c.download_dir, h.join("dl"));
        }
    }

    #[test]
    fn watch_dir_is_optional_and_tilde_expands() {
        assert_eq!(Config::default().watch_dir, None);
        let c = Config::from_toml("watch_dir = \"/srv/watch\"\n", Path::new("x")).unwrap();
        assert_eq!(c.watch_dir, Some(PathBuf::from("/srv/watch")));
        let c = Config::from_toml("watch_dir = \"~/watch\"\n", Path::new("x")).unwrap();
        if let Some(h) = dirs::home_dir() {
            assert_eq!(c.watch_dir, Some(h.join("watch")));
        }
        let e = Config::from_toml("watch_dir = \"\"\n", Path::new("/c.toml")).unwrap_err();
        assert!(
            matches!(
                &e,
                ConfigError::Value {
                    key: "watch_dir",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let e = Config::load(Some(Path::new("/nonexistent/ratorrent.toml"))).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ratorrent.toml"));
    }

    #[test]
    fn out_of_range_numbers_are_refused_naming_key_and_range() {
        for (text, key, range) in [
            (
                "disk_threads = 4000000000\n",
                "disk_threads",
                "between 0 and 64",
            ),
            ("disk_threads = 65\n", "disk_threads", "between 0 and 64"),
            ("numwant = 4000000000\n", "numwant", "between 0 and 1000"),
            ("numwant = 1001\n", "numwant", "between 0 and 1000"),
            (
                "max_connections = 0\n",
                "max_connections",
                "between 1 and 65535",
            ),
            (
                "max_connections = 65536\n",
                "max_connections",
                "between 1 and 65535",
            ),
            ("max_half_open = 0\n", "max_half_open", "between 1 and 1000"),
            (
                "max_half_open = 1001\n",
                "max_half_open",
                "between 1 and 1000",
            ),
        ] {
            let e = Config::from_toml(text, Path::new("/c.toml")).unwrap_err();
            assert!(
                matches!(&e, ConfigError::Value { key: k, .. } if *k == key),
                "{text}: {e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("`{key}`")) && msg.contains(range),
                "{msg}"
            );
        }
        // too big for the type at all: still an error naming the key, never a panic
        let e = Config::from_toml("disk_threads = 99999999999\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("disk_threads"), "{e}");
        let c = Config::from_toml(
            "disk_threads = 64\nnumwant = 0\nmax_connections = 65535\nmax_half_open = 1\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(c.disk_thread_count(), 64);
        assert_eq!(c.announce_numwant(), None);
        assert_eq!((c.max_connections, c.max_half_open), (65_535, 1));
    }

    #[test]
    fn dht_table_parses_and_validates() {
        let d = Config::default().dht;
        assert!(d.enabled && d.port.is_none() && d.bootstrap.len() == 4);
        assert_eq!(d.udp_port(7000), 7000);
        let c = Config::from_toml(
            "[dht]\nenabled = false\nport = 7001\nbootstrap = [\"127.0.0.2:6881\", \"[::1]:7\"]\n",
            Path::new("x"),
        )
        .unwrap();
        assert!(!c.dht.enabled);
        assert_eq!(c.dht.udp_port(6881), 7001);
        assert_eq!(c.dht.bootstrap, ["127.0.0.2:6881", "[::1]:7"]);
        for bad in [
            "[dht]\nbootstrap = [\"router\"]\n",
            "[dht]\nbootstrap = [\"router:0\"]\n",
            "[dht]\nbootstrap = [\"router:70000\"]\n",
            "[dht]\nbootstrap = [\":6881\"]\n",
            "[dht]\nbootstrap = [\"::1:6881\"]\n",
            "[dht]\nbootstrap = [\"a b:6881\"]\n",
        ] {
            let e = Config::from_toml(bad, Path::new("/c.toml")).unwrap_err();
            assert!(
                matches!(
                    &e,
                    ConfigError::Value {
                        key: "dht.bootstrap",
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
        let many = format!(
            "[dht]\nbootstrap = [{}]\n",
            vec!["\"h:1\""; MAX_DHT_BOOTSTRAP + 1].join(",")
        );
        let e = Config::from_toml(&many, Path::new("/c.toml")).unwrap_err();
        assert!(e.to_string().contains("at most 64"), "{e}");
        let e = Config::from_toml("[dht]\nenabeld = true\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("enabeld") && e.contains("line 2"), "{e}");
        let e = Config::from_toml("[dht]\nport = 70000\n", Path::new("/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("port"), "{e}");
        assert!(!DhtConfig::off().enabled && DhtConfig::off().bootstrap.is_empty());
    }

    #[test]
    fn lsd_table_is_off_by_default_and_validates() {
        let d = Config::default().lsd;
        assert!(!d.enabled && d.interface.is_none());
        assert_eq!(d.interface_addr(), std::net::Ipv4Addr::UNSPECIFIED);
        let shipped = Config::from_toml(DEFAULT_TOML, Path::new("default.toml")).unwrap();
        assert_eq!(shipped.lsd, d, "the shipped file keeps LSD off");
        let c = Config::from_toml(
            "[lsd]\nenabled = true\ninterface = \"127.0.0.1\"\n",
            Path::new("x"),
        )
        .unwrap();
        assert!(c.lsd.enabled);
        assert_eq!(c.lsd.interface_addr(), std::net::Ipv4Addr::LOCALHOST);
        for (text, want) in [
            ("[lsd]\ninterface = \"239.192.152.143\"\n", "lsd.interface"),
            ("[lsd]\ninterface = \"255.255.255.255\"\n", "lsd.interface"),
            ("[lsd]\ninterface = \"eth0\"\n", "interface"),
            ("[lsd]\ninterface = \"::1\"\n", "interface"),
            ("[lsd]\nenabled = \"yes\"\n", "enabled"),
            ("[lsd]\nport = 6771\n", "port"),
        ] {
            let e = Config::from_toml(text, Path::new("/c.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.contains("/c.toml"), "{text}: {e}");
        }
        let e = Config::from_toml("[lsd]\ninterface = \"224.0.0.1\"\n", Path::new("/c.toml"))
            .unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::Value {
                    key: "lsd.interface",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn storage_keys_parse_and_bad_values_name_the_key() {
        let c = Config::from_toml(
            "storage = \"mmap\"\npreallocate = \"full\"\nmax_open_files = 64\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(c.storage, StorageMode::Mmap);
        assert_eq!(c.preallocate, Preallocate::Full);
        assert_eq!(c.open_file_cap(), 64);
        let o = c.storage_options(HandleCache::new(c.open_file_cap()));
        assert_eq!(
            (o.mode, o.preallocate),
            (StorageMode::Mmap, Preallocate::Full)
        );
        assert_eq!(o.handles.capacity(), 64);
        for (text, key) in [
            ("storage = \"direct\"\n", "storage"),
            ("preallocate = \"some\"\n", "preallocate"),
            ("max_open_files = 0\n", "max_open_files"),
            ("max_open_files = 2000000\n", "max_open_files"),
        ] {
            let e = Config::from_toml(text, Path::new("/c.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains("/c.toml"), "{text}: {e}");
        }
        let d = Config::default();
        assert_eq!(
            (d.storage, d.preallocate),
            (StorageMode::File, Preallocate::Sparse)
        );
        assert_eq!(
            Config {
                max_open_files: 0,
                ..d
            }
            .open_file_cap(),
            16
        );
    }

    #[test]
    fn helpers_bound_values_set_in_code() {
        let c = Config {
            disk_threads: u32::MAX,
            numwant: u32::MAX,
            ..Config::default()
        };
        assert_eq!(c.disk_thread_count(), 64);
        assert_eq!(c.announce_numwant(), Some(1000));
        assert_eq!(Config::default().announce_numwant(), Some(50));
        assert!((1..=4).contains(&Config::default().disk_thread_count()));
    }
}
