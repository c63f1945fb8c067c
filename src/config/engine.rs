//! The engine's part of the configuration: what the session, its torrents, storage,
//! trackers, the DHT and LSD need, and nothing of the front ends (keys, colours, columns,
//! the watch folder). Front ends read it from the file (the `engine` part of
//! [`super::Config`]) and hand it to [`crate::engine::session::start`].

use std::path::PathBuf;

use serde::Deserialize;

use super::schedule::AltSpeedSchedule;
/// What a torrent that reaches a seeding goal gets (`[seeding] action`); the contract's
/// type, so that front ends can read and change it while the session runs.
pub use crate::api::GoalAction;
use crate::storage::disk::MAX_DISK_THREADS;
use crate::storage::{HandleCache, Preallocate, StorageMode, StorageOptions};

/// Default of `alt_download_rate_limit` and `alt_upload_rate_limit`, bytes/s (10 MiB/s,
/// qBittorrent's 10240 KiB/s).
pub const DEFAULT_ALT_RATE_LIMIT: u64 = 10 << 20;

/// Bounds of `max_open_files`.
pub const MAX_OPEN_FILES_RANGE: (u32, u32) = (16, 1 << 20);

/// How often the `ip_filter` file is looked at for changes (modification time and size)
/// while a filter is configured: 30 s.
pub const IP_FILTER_POLL: std::time::Duration = std::time::Duration::from_secs(30);

/// Most `[dht] bootstrap` entries.
pub const MAX_DHT_BOOTSTRAP: usize = 64;

/// The public DHT routers used when `[dht] bootstrap` is not set (`HOST:PORT`).
pub const DEFAULT_DHT_BOOTSTRAP: [&str; 4] = [
    "router.bittorrent.com:6881",
    "dht.transmissionbt.com:6881",
    "router.utorrent.com:6881",
    "dht.libtorrent.org:25401",
];

/// Settings of the engine: the session, its torrents and their services. Every field is
/// the config file key of the same name (`dht` and `lsd` are its `[dht]` and `[lsd]`
/// tables); `config/default.toml` lists them with their defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Where payloads are stored (`~` already expanded by the file reader).
    /// Default: the XDG download directory (`~/Downloads`).
    pub download_dir: PathBuf,
    /// TCP port for incoming peer connections; 0 picks a free port.
    pub listen_port: u16,
    /// Most peer connections per torrent, at least 1.
    pub max_peers_per_torrent: u32,
    /// Peers unchoked (served) at once per torrent, BEP 3 choking; at least 1.
    pub upload_slots: u32,
    /// Session-wide download limit, bytes/s; 0 = unlimited.
    pub download_rate_limit: u64,
    /// Session-wide upload limit, bytes/s; 0 = unlimited.
    pub upload_rate_limit: u64,
    /// Session-wide download limit while alternative speeds are on (TUI key, or the
    /// schedule), bytes/s; 0 = unlimited. Default: 10 MiB/s.
    pub alt_download_rate_limit: u64,
    /// Session-wide upload limit while alternative speeds are on, bytes/s; 0 = unlimited.
    /// Default: 10 MiB/s.
    pub alt_upload_rate_limit: u64,
    /// When alternative speeds switch on and off by themselves, the
    /// `[alt_speed_schedule]` table (off by default).
    pub alt_speed_schedule: AltSpeedSchedule,
    /// Keep seeding a torrent that is complete (restored torrents, the TUI's adds);
    /// headless `download` uses `--seed` instead.
    pub seed_after_download: bool,
    /// Threads for disk writes and SHA-1 verification, 0..=64; 0 = one per CPU core (at
    /// most 4). See [`EngineConfig::disk_thread_count`].
    pub disk_threads: u32,
    /// Peers to ask the tracker for per announce (`numwant`), 0..=1000; 0 = leave it to the
    /// tracker (see [`EngineConfig::announce_numwant`]).
    pub numwant: u32,
    /// Session-wide cap on peer connections (incoming and outgoing, all torrents),
    /// 1..=65535.
    pub max_connections: u32,
    /// Outgoing peer connection attempts in flight at once (TCP connects not yet answered),
    /// session-wide, 1..=1000.
    pub max_half_open: u32,
    /// How payload bytes reach the files: positioned I/O or memory maps.
    pub storage: StorageMode,
    /// Sparse files, or each file allocated whole on its first write.
    pub preallocate: Preallocate,
    /// Most payload files open at once for the whole session (all torrents),
    /// [`MAX_OPEN_FILES_RANGE`]; see [`EngineConfig::open_file_cap`].
    pub max_open_files: u32,
    /// Downloads on a volume pause while it has less free space than this, bytes
    /// (seeding goes on); they resume when space returns. 0 = no guard.
    pub min_free_space: u64,
    /// Largest info dictionary fetched for a magnet link (BEP 9), bytes, 16 KiB..=128 MiB.
    pub max_metadata_size: u32,
    /// Longest wait for a .torrent file added by `http://` or `https://` URL, seconds,
    /// 1..=600: from connecting until the last byte of the body (redirects included).
    pub add_url_timeout: u32,
    /// Exchange peer lists with peers (BEP 11 `ut_pex`); never for private torrents
    /// (BEP 27).
    pub pex: bool,
    /// The DHT (BEP 5), the `[dht]` table.
    pub dht: DhtConfig,
    /// Local Service Discovery (BEP 14), the `[lsd]` table.
    pub lsd: LsdConfig,
    /// Web seeds (BEP 19), the `[webseeds]` table.
    pub webseeds: WebSeedConfig,
    /// Peer connections, the `[peer]` table (transports, MSE/PE encryption).
    pub peer: PeerConfig,
    /// Program run when the user adds a torrent (not when one is restored at start), as an
    /// argument list: the program first, then its arguments, each with its placeholders
    /// replaced (see [`crate::engine::hooks::expand`]); never run through a shell. Empty
    /// (the default) = off.
    pub on_added: Vec<String>,
    /// Program run once when a torrent completes (every wanted piece verified), as
    /// `on_added`. Empty (the default) = off.
    pub on_complete: Vec<String>,
    /// Seconds an `on_added` / `on_complete` program may run before it is killed,
    /// 1..=86400. Default: 600.
    pub hook_timeout: u32,
    /// Seeding goals (share limits) for torrents that use the session's, the `[seeding]`
    /// table.
    pub seeding: SeedingConfig,
    /// The download and seeding queue, the `[queue]` table (off by default).
    pub queue: QueueConfig,
    /// IP filter file (eMule `.dat` or PeerGuardian `.p2p`, plain or gzip; `~` already
    /// expanded): peers in its ranges are never dialled and their connections are refused.
    /// `None` (the key empty or left out) = no filter. See [`crate::net::ip_filter`].
    pub ip_filter: Option<PathBuf>,
    /// How often the filter file is looked at for changes (its modification time and
    /// size). Not a config key: [`IP_FILTER_POLL`]; tests set it shorter.
    pub ip_filter_poll: std::time::Duration,
    /// Categories the config defines, by name (the `[categories."NAME"]` tables): set at
    /// each start over those kept in the session state (see
    /// [`crate::engine::categories`]). Empty by default.
    pub categories: std::collections::BTreeMap<String, CategoryConfig>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            download_dir: default_download_dir(),
            listen_port: 6881,
            max_peers_per_torrent: 50,
            upload_slots: 4,
            download_rate_limit: 0,
            upload_rate_limit: 0,
            alt_download_rate_limit: DEFAULT_ALT_RATE_LIMIT,
            alt_upload_rate_limit: DEFAULT_ALT_RATE_LIMIT,
            alt_speed_schedule: AltSpeedSchedule::default(),
            seed_after_download: true,
            disk_threads: 0,
            numwant: 50,
            max_connections: 200,
            max_half_open: 32,
            storage: StorageMode::File,
            preallocate: Preallocate::Sparse,
            max_open_files: crate::storage::DEFAULT_MAX_OPEN_FILES as u32,
            min_free_space: 1 << 30,
            max_metadata_size: 32 << 20,
            add_url_timeout: 30,
            pex: true,
            dht: DhtConfig::default(),
            lsd: LsdConfig::default(),
            webseeds: WebSeedConfig::default(),
            peer: PeerConfig::default(),
            on_added: Vec::new(),
            on_complete: Vec::new(),
            hook_timeout: 600,
            seeding: SeedingConfig::default(),
            queue: QueueConfig::default(),
            ip_filter: None,
            ip_filter_poll: IP_FILTER_POLL,
            categories: Default::default(),
        }
    }
}

/// `~/Downloads` or the platform's download directory; `.` when no home is known.
fn default_download_dir() -> PathBuf {
    dirs::download_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join("Downloads")))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// A value that parses but makes no sense: the key (`"upload_slots"`, `"dht.bootstrap"`)
/// and what is wrong with it, allowed values included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    /// The key as written in the file (`table.key` inside a table).
    pub key: &'static str,
    /// What is wrong and what is allowed, e.g. `must be between 1 and 1000 (got 0)`.
    pub problem: String,
}

impl EngineConfig {
    /// Check the values the types cannot: ranges, non-empty paths, bootstrap entries, the
    /// LSD interface.
    ///
    /// # Errors
    /// The first [`BadValue`], in file order.
    pub fn check(&self) -> Result<(), BadValue> {
        let bad = |key, problem: String| Err(BadValue { key, problem });
        if self.max_peers_per_torrent == 0 {
            return bad("max_peers_per_torrent", "must be at least 1".into());
        }
        if self.upload_slots == 0 {
            return bad("upload_slots", "must be at least 1".into());
        }
        if self.download_dir.as_os_str().is_empty() {
            return bad("download_dir", "must not be empty".into());
        }
        // (key, value, allowed range, what 0 means)
        let bounded: [(&'static str, u32, u32, u32, &str); 8] = [
            (
                "disk_threads",
                self.disk_threads,
                0,
                MAX_DISK_THREADS as u32,
                ", 0 = one per CPU core",
            ),
            (
                "numwant",
                self.numwant,
                0,
                1000,
                ", 0 = let the tracker choose",
            ),
            ("max_connections", self.max_connections, 1, 65_535, ""),
            ("max_half_open", self.max_half_open, 1, 1000, ""),
            (
                "max_open_files",
                self.max_open_files,
                MAX_OPEN_FILES_RANGE.0,
                MAX_OPEN_FILES_RANGE.1,
                "",
            ),
            (
                "max_metadata_size",
                self.max_metadata_size,
                16 * 1024,
                128 << 20,
                "",
            ),
            ("add_url_timeout", self.add_url_timeout, 1, 600, ""),
            ("hook_timeout", self.hook_timeout, 1, 86_400, ""),
        ];
        for (key, value, min, max, zero) in bounded {
            if !(min..=max).contains(&value) {
                return bad(
                    key,
                    format!("must be between {min} and {max}{zero} (got {value})"),
                );
            }
        }
        if self.dht.bootstrap.len() > MAX_DHT_BOOTSTRAP {
            return bad(
                "dht.bootstrap",
                format!(
                    "must list at most {MAX_DHT_BOOTSTRAP} nodes (got {})",
                    self.dht.bootstrap.len()
                ),
            );
        }
        for b in &self.dht.bootstrap {
            if let Err(p) = check_host_port(b) {
                return bad("dht.bootstrap", format!("entry {p}"));
            }
        }
        for (key, argv) in [
            ("on_added", &self.on_added),
            ("on_complete", &self.on_complete),
        ] {
            if let Some(program) = argv.first()
                && program.trim().is_empty()
            {
                return bad(
                    key,
                    "must start with the program to run (a path or a name looked up in PATH), \
                     not an empty text; an empty list turns it off"
                        .into(),
                );
            }
            if argv.iter().any(|a| a.contains('\0')) {
                return bad(key, "an argument cannot contain a NUL character".into());
            }
        }
        if let Err((key, problem)) = self.alt_speed_schedule.check() {
            let key = match key {
                "to" => "alt_speed_schedule.to",
                _ => "alt_speed_schedule.days",
            };
            return bad(key, problem);
        }
        self.peer.check()?;
        if let Some(ip) = self.lsd.interface
            && (ip.is_multicast() || ip.is_broadcast())
        {
            return bad(
                "lsd.interface",
                format!(
                    "must be the IPv4 address of one of this host's interfaces, not {ip} \
                     (leave it out for the kernel's choice)"
                ),
            );
        }
        self.webseeds.check()?;
        self.seeding.check()?;
        self.queue.check()?;
        for (name, c) in &self.categories {
            c.check(name)?;
        }
        Ok(())
    }

    /// Disk threads to start: the configured number (at most 64, even for a config not
    /// read from a file), or one per core up to 4.
    pub fn disk_thread_count(&self) -> usize {
        if self.disk_threads > 0 {
            (self.disk_threads as usize).min(MAX_DISK_THREADS)
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
        }
    }

    /// Handles the session's file cache may keep open: `max_open_files` within
    /// [`MAX_OPEN_FILES_RANGE`], even for a config not read from a file.
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
    /// usually 50) for 0, else the configured number, at most 1000 even for a config not
    /// read from a file.
    pub fn announce_numwant(&self) -> Option<u32> {
        (self.numwant > 0).then(|| self.numwant.min(1000))
    }
}

/// The `[dht]` table: the session's DHT node (BEP 5; BEP 32 on a dual-stack host).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DhtConfig {
    /// Run a DHT node: find peers of public torrents (and magnets) without a tracker and
    /// announce ours. Private torrents (BEP 27) never use it. Default: true.
    pub enabled: bool,
    /// UDP port of the node; `None` = the same number as `listen_port` (the port actually
    /// bound when that is 0) when uTP is off, the number after it when uTP uses the listen
    /// port's UDP side (see [`DhtConfig::udp_port`]); `Some(0)` = a free port. Out of
    /// range is refused as "not a port 0-65535", like `listen_port`.
    #[serde(deserialize_with = "super::port")]
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

    /// The UDP port to bind, given the port the session listens on and whether uTP has
    /// its UDP side: then the next one (65535: a free port), because the DHT crate binds
    /// a socket of its own where libtorrent shares one between the DHT and uTP.
    pub fn udp_port(&self, listen_port: u16, utp: bool) -> u16 {
        match self.port {
            Some(p) => p,
            None if utp => listen_port.checked_add(1).unwrap_or(0),
            None => listen_port,
        }
    }
}

/// A way to reach peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// uTP (BEP 29) over UDP, LEDBAT congestion control.
    Utp,
    /// TCP.
    Tcp,
}

impl TransportKind {
    /// The name in the config file.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Utp => "utp",
            TransportKind::Tcp => "tcp",
        }
    }
}

/// The `[peer]` table: how peer connections are made.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PeerConfig {
    /// Transports used, in order of preference for dialling (the next is tried when one
    /// fails, and started beside it when it has not answered within a second); incoming
    /// connections are accepted on each. Default `["utp", "tcp"]`, as libtorrent.
    pub transports: Vec<TransportKind>,
    /// Message Stream Encryption (MSE/PE, as libtorrent, Transmission and qBittorrent
    /// speak it), over either transport. Default: [`Encryption::Prefer`].
    pub encryption: Encryption,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            transports: vec![TransportKind::Utp, TransportKind::Tcp],
            encryption: Encryption::default(),
        }
    }
}

impl PeerConfig {
    /// uTP is on.
    pub fn utp(&self) -> bool {
        self.transports.contains(&TransportKind::Utp)
    }

    /// TCP is on.
    pub fn tcp(&self) -> bool {
        self.transports.contains(&TransportKind::Tcp)
    }

    /// Only TCP (tests and embedders that want no UDP socket).
    pub fn tcp_only() -> PeerConfig {
        PeerConfig {
            transports: vec![TransportKind::Tcp],
            ..PeerConfig::default()
        }
    }

    fn check(&self) -> Result<(), BadValue> {
        let bad = |key, problem: String| Err(BadValue { key, problem });
        if self.transports.is_empty() {
            return bad(
                "peer.transports",
                "must name at least one of \"utp\" and \"tcp\"".into(),
            );
        }
        if self.transports.len() == 2 && self.transports[0] == self.transports[1] {
            return bad(
                "peer.transports",
                format!("names \"{}\" twice", self.transports[0].name()),
            );
        }
        Ok(())
    }
}

/// `[peer] encryption`: MSE/PE (RC4 over a Diffie-Hellman handshake) for peer connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encryption {
    /// Dial with MSE offering RC4 or plaintext, and dial again in plaintext when the peer
    /// refuses it; accept plaintext and MSE connections (an incoming MSE handshake gets
    /// RC4 when the peer provides it).
    #[default]
    Prefer,
    /// MSE with RC4 only, both ways: plaintext connections are refused and never a byte of
    /// the BitTorrent protocol goes out in plaintext.
    Require,
    /// Plaintext only: never dial with MSE; incoming MSE handshakes are refused.
    Disable,
}

impl std::str::FromStr for Encryption {
    type Err = String;

    /// `"prefer"`, `"require"` or `"disable"`.
    fn from_str(s: &str) -> Result<Encryption, String> {
        match s {
            "prefer" => Ok(Encryption::Prefer),
            "require" => Ok(Encryption::Require),
            "disable" => Ok(Encryption::Disable),
            other => Err(format!(
                "unknown encryption {other:?} (expected prefer, require or disable)"
            )),
        }
    }
}

impl Encryption {
    /// The value as written in the config file.
    pub fn name(self) -> &'static str {
        match self {
            Encryption::Prefer => "prefer",
            Encryption::Require => "require",
            Encryption::Disable => "disable",
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

/// Most `[webseeds] max_connections_per_server`.
pub const MAX_WEBSEED_CONNECTIONS: u32 = 64;

/// The `[webseeds]` table: HTTP(S) servers a torrent's `url-list` names (BEP 19), used
/// beside peers while a torrent downloads (see `engine/webseed/`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSeedConfig {
    /// Download from web seeds. Default: true.
    pub enabled: bool,
    /// Range requests in flight per server, 1..=[`MAX_WEBSEED_CONNECTIONS`] (each on its
    /// own HTTP connection). Default: 4.
    pub max_connections_per_server: u32,
    /// A server that sends less than this many bytes/s over [`WebSeedConfig::min_rate_window`]
    /// (a trickle, a stall) fails the request and is backed off; 0 = no minimum. A number
    /// of bytes/s or a rate in human units (`"1K"`). Default: 1 KiB/s.
    #[serde(deserialize_with = "super::rate_limit_value")]
    pub min_rate: u64,
    /// The window `min_rate` is measured over, seconds, 1..=3600 (the wait for the answer
    /// counts too). Default: 30.
    pub min_rate_window: u32,
}

impl Default for WebSeedConfig {
    fn default() -> Self {
        WebSeedConfig {
            enabled: true,
            max_connections_per_server: 4,
            min_rate: 1024,
            min_rate_window: 30,
        }
    }
}

impl WebSeedConfig {
    /// Check the bounds.
    ///
    /// # Errors
    /// The first [`BadValue`] (`webseeds.max_connections_per_server`, ...).
    pub fn check(&self) -> Result<(), BadValue> {
        if !(1..=MAX_WEBSEED_CONNECTIONS).contains(&self.max_connections_per_server) {
            return Err(BadValue {
                key: "webseeds.max_connections_per_server",
                problem: format!(
                    "must be between 1 and {MAX_WEBSEED_CONNECTIONS} (got {})",
                    self.max_connections_per_server
                ),
            });
        }
        if !(1..=3600).contains(&self.min_rate_window) {
            return Err(BadValue {
                key: "webseeds.min_rate_window",
                problem: format!(
                    "must be between 1 and 3600 seconds (got {})",
                    self.min_rate_window
                ),
            });
        }
        Ok(())
    }

    /// The minimum rate as the fetch checks it.
    pub fn min_rate(&self) -> crate::webseed::fetch::MinRate {
        crate::webseed::fetch::MinRate {
            min_rate: self.min_rate,
            window: std::time::Duration::from_secs(u64::from(self.min_rate_window)),
        }
    }
}

/// The `[seeding]` table: the session's seeding goals (qBittorrent's share limits), for
/// every torrent whose own limit is "use the session's" (-2, the default). A seeding
/// torrent that reaches one of them gets the [`SeedingConfig::action`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SeedingConfig {
    /// Share ratio (uploaded over downloaded; over the size when less than 1% was
    /// downloaded) at which seeding stops; -1 = none (the default).
    pub ratio_limit: f64,
    /// Minutes of seeding (time spent seeding, kept across restarts); -1 = none.
    pub seeding_time_limit: i64,
    /// Minutes of seeding with no payload byte uploaded; -1 = none.
    pub inactive_seeding_time_limit: i64,
    /// What happens to a torrent that reaches a goal.
    pub action: GoalAction,
}

/// `[seeding]` never holds NaN ([`SeedingConfig::check`] refuses it, and TOML's `nan` is
/// the only way to write one).
impl Eq for SeedingConfig {}

impl Default for SeedingConfig {
    fn default() -> Self {
        SeedingConfig {
            ratio_limit: -1.0,
            seeding_time_limit: -1,
            inactive_seeding_time_limit: -1,
            action: GoalAction::Stop,
        }
    }
}

impl SeedingConfig {
    /// The ratio limit in effect: `None` for -1 (none).
    pub fn ratio(&self) -> Option<f64> {
        (self.ratio_limit >= 0.0).then_some(self.ratio_limit)
    }

    /// The seeding time limit in effect, minutes: `None` for -1 (none).
    pub fn seeding_minutes(&self) -> Option<u64> {
        u64::try_from(self.seeding_time_limit).ok()
    }

    /// The inactive seeding time limit in effect, minutes: `None` for -1 (none).
    pub fn inactive_minutes(&self) -> Option<u64> {
        u64::try_from(self.inactive_seeding_time_limit).ok()
    }

    /// Check the limits: a ratio of -1 or a finite number >= 0, minutes -1 or >= 0.
    ///
    /// # Errors
    /// The first [`BadValue`] (`seeding.ratio_limit`, …).
    pub fn check(&self) -> Result<(), BadValue> {
        let r = self.ratio_limit;
        if !(r == -1.0 || (r.is_finite() && r >= 0.0)) {
            return Err(BadValue {
                key: "seeding.ratio_limit",
                problem: format!("must be -1 (no limit) or a ratio of 0 or more (got {r})"),
            });
        }
        for (key, m) in [
            ("seeding.seeding_time_limit", self.seeding_time_limit),
            (
                "seeding.inactive_seeding_time_limit",
                self.inactive_seeding_time_limit,
            ),
        ] {
            if m < -1 {
                return Err(BadValue {
                    key,
                    problem: format!("must be -1 (no limit) or minutes, 0 or more (got {m})"),
                });
            }
        }
        Ok(())
    }
}

/// The `[queue]` table: how many torrents run at once (qBittorrent's "torrent queueing",
/// libtorrent's auto-managed torrents). Off by default: every started torrent runs. When
/// on, started torrents take their turn by queue position; the others wait as `Queued`
/// (download or seed), out of the swarm. A force-started torrent runs regardless and is not
/// counted; neither is a slow one (see [`QueueConfig::dont_count_slow_torrents`]), so a
/// dead torrent does not block the queue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueConfig {
    /// Queueing on. Default: false (as qBittorrent).
    pub enabled: bool,
    /// Most torrents downloading at once (magnet links fetching metadata count here);
    /// -1 = no limit. Default: 3.
    pub max_active_downloads: i64,
    /// Most torrents seeding at once; -1 = no limit. Default: 3.
    pub max_active_uploads: i64,
    /// Most torrents running at once, downloads and seeds together (downloads take the
    /// slots first); -1 = no limit. Default: 5.
    pub max_active_torrents: i64,
    /// Torrents hashing their data at once, 1..=64, whether queueing is on or not.
    /// Default: 1.
    pub max_active_checking: u32,
    /// Slow torrents (below both thresholds for `slow_torrent_inactive_timer` seconds) do
    /// not count against the limits. Default: true.
    pub dont_count_slow_torrents: bool,
    /// Download rate under which a torrent is slow, bytes/s or human units ("2K").
    /// Default: 2 KiB/s.
    #[serde(deserialize_with = "super::rate_limit_value")]
    pub slow_download_rate_threshold: u64,
    /// Upload rate under which a torrent is slow, as `slow_download_rate_threshold`.
    /// Default: 2 KiB/s.
    #[serde(deserialize_with = "super::rate_limit_value")]
    pub slow_upload_rate_threshold: u64,
    /// Seconds a torrent must stay under both thresholds to be slow, 1..=86400.
    /// Default: 60.
    pub slow_torrent_inactive_timer: u32,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            enabled: false,
            max_active_downloads: 3,
            max_active_uploads: 3,
            max_active_torrents: 5,
            max_active_checking: 1,
            dont_count_slow_torrents: true,
            slow_download_rate_threshold: 2048,
            slow_upload_rate_threshold: 2048,
            slow_torrent_inactive_timer: 60,
        }
    }
}

impl QueueConfig {
    /// A limit as a count: `None` for -1 (no limit).
    pub fn limit(v: i64) -> Option<u64> {
        u64::try_from(v).ok()
    }

    /// Check the limits: -1 or a count >= 0; checking 1..=64; the timer 1..=86400.
    ///
    /// # Errors
    /// The first [`BadValue`] (`queue.max_active_downloads`, …).
    pub fn check(&self) -> Result<(), BadValue> {
        for (key, v) in [
            ("queue.max_active_downloads", self.max_active_downloads),
            ("queue.max_active_uploads", self.max_active_uploads),
            ("queue.max_active_torrents", self.max_active_torrents),
        ] {
            if v < -1 {
                return Err(BadValue {
                    key,
                    problem: format!("must be -1 (no limit) or a count, 0 or more (got {v})"),
                });
            }
        }
        if !(1..=64).contains(&self.max_active_checking) {
            return Err(BadValue {
                key: "queue.max_active_checking",
                problem: format!("must be 1 to 64 (got {})", self.max_active_checking),
            });
        }
        if !(1..=86_400).contains(&self.slow_torrent_inactive_timer) {
            return Err(BadValue {
                key: "queue.slow_torrent_inactive_timer",
                problem: format!(
                    "must be 1 to 86400 seconds (got {})",
                    self.slow_torrent_inactive_timer
                ),
            });
        }
        Ok(())
    }
}

/// One `[categories."NAME"]` table: a category (qBittorrent's) the config defines.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CategoryConfig {
    /// Where its torrents' data goes (`~` expanded; relative: under `download_dir`);
    /// empty or left out: the parent's save path joined with the last part of the name,
    /// or `download_dir` joined with the name.
    pub save_path: PathBuf,
    /// Where the data is while downloading, moved to `save_path` on completion; left
    /// out: the parent's download path joined with the last part of the name, if the
    /// parent has one, else none.
    pub download_path: Option<PathBuf>,
    /// Its seeding goals for torrents that use the default: -2 (the default) the
    /// session's `[seeding]`, -1 none, else the ratio.
    pub ratio_limit: Option<f64>,
    /// Minutes: -2 the session's, -1 none, else the limit.
    pub seeding_time_limit: Option<i64>,
    /// Minutes: -2 the session's, -1 none, else the limit.
    pub inactive_seeding_time_limit: Option<i64>,
}

/// Config values are finite ([`CategoryConfig::check`] refuses NaN).
impl Eq for CategoryConfig {}

impl CategoryConfig {
    /// The category named `name` it defines.
    pub fn category(&self, name: &str) -> crate::api::Category {
        let m = |v: Option<i64>| v.unwrap_or(crate::api::USE_GLOBAL);
        crate::api::Category {
            name: name.to_owned(),
            save_path: self.save_path.clone(),
            download_path: self.download_path.clone(),
            limits: crate::api::ShareLimits {
                ratio: self.ratio_limit.unwrap_or(crate::api::USE_GLOBAL as f64),
                seeding_minutes: m(self.seeding_time_limit),
                inactive_minutes: m(self.inactive_seeding_time_limit),
            },
        }
    }

    /// Check the name and the goals.
    ///
    /// # Errors
    /// A [`BadValue`] for `categories` naming the category.
    pub fn check(&self, name: &str) -> Result<(), BadValue> {
        let bad = |problem: String| {
            Err(BadValue {
                key: "categories",
                problem,
            })
        };
        if let Err(e) = crate::api::check_category_name(name) {
            return bad(e);
        }
        if let Some(r) = self.ratio_limit
            && !(r == -2.0 || r == -1.0 || (r.is_finite() && r >= 0.0))
        {
            return bad(format!(
                "{name:?}: ratio_limit must be -2 (the session's), -1 (none) or 0 or more (got {r})"
            ));
        }
        for (key, m) in [
            ("seeding_time_limit", self.seeding_time_limit),
            (
                "inactive_seeding_time_limit",
                self.inactive_seeding_time_limit,
            ),
        ] {
            if let Some(m) = m
                && m < -2
            {
                return bad(format!(
                    "{name:?}: {key} must be -2 (the session's), -1 (none) or minutes (got {m})"
                ));
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests;
