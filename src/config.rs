//! Runtime configuration: a TOML file in the user's config directory, every key optional.
//!
//! Location: `$XDG_CONFIG_HOME/ratorrent/config.toml` (usually `~/.config/ratorrent/`), or
//! the path given with `--config`. `config/default.toml` in the repository lists every key
//! with its default and meaning. Unknown keys are an error, so a typo is not silently
//! ignored; every error names the file, line, column and key.
//!
//! The file is one flat table; in memory it is split by reader: [`engine::EngineConfig`]
//! (the session and its services: ports, paths, limits, storage, DHT, LSD), which is all
//! the engine receives; [`ui::UiConfig`] (the terminal UI: ASCII, mouse, quitting, columns,
//! `[keys]`, `[colors]`); and the watch folder. This module imports neither the engine nor
//! the TUI.

pub mod engine;
pub mod reload;
pub mod schedule;
pub mod ui;
pub mod webui;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use self::engine::{DhtConfig, EngineConfig, LsdConfig, SeedingConfig};
use self::ui::{EntryProblem, KeyList, Lined, UiConfig};
use crate::storage::{Preallocate, StorageMode};

/// The default config file, shipped in the repository and printed by `ratorrent config`.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// The whole configuration, split by reader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// What the engine receives ([`crate::engine::session::start`]).
    pub engine: EngineConfig,
    /// What the terminal UI reads.
    pub ui: UiConfig,
    /// Watch folder: .torrent files dropped there are added, then renamed `.added` (or
    /// `.invalid`); `~` expands to the home directory. Default: none (no watching).
    pub watch_dir: Option<PathBuf>,
    /// The qBittorrent-compatible Web API, the `[webui]` table (off by default).
    pub webui: webui::WebUiConfig,
    /// The file these settings were read from (`None`: the defaults, no file); named in
    /// the messages of [`Config::invalid_entries`].
    pub source: Option<PathBuf>,
}

/// The file as written: one flat table with every key optional (`None`: the default). It
/// is only read into the parts of [`Config`] (serde's `flatten` would lose
/// `deny_unknown_fields`, so the keys are listed here once more).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    download_dir: Option<PathBuf>,
    /// 0-65535; anything else is refused as "a port 0-65535", not serde's "expected u16".
    #[serde(default, deserialize_with = "port")]
    listen_port: Option<u16>,
    max_peers_per_torrent: Option<u32>,
    upload_slots: Option<u32>,
    /// A number of bytes/s or a text in human units (`"1M"`, `"500K"`, `"2.5 MiB/s"`, see
    /// [`crate::units::parse_rate`]).
    #[serde(default, deserialize_with = "rate_limit")]
    download_rate_limit: Option<u64>,
    /// As `download_rate_limit`.
    #[serde(default, deserialize_with = "rate_limit")]
    upload_rate_limit: Option<u64>,
    /// As `download_rate_limit`, while alternative speeds are on.
    #[serde(default, deserialize_with = "rate_limit")]
    alt_download_rate_limit: Option<u64>,
    /// As `upload_rate_limit`, while alternative speeds are on.
    #[serde(default, deserialize_with = "rate_limit")]
    alt_upload_rate_limit: Option<u64>,
    alt_speed_schedule: Option<schedule::AltSpeedSchedule>,
    seed_after_download: Option<bool>,
    disk_threads: Option<u32>,
    numwant: Option<u32>,
    max_connections: Option<u32>,
    max_half_open: Option<u32>,
    storage: Option<StorageMode>,
    preallocate: Option<Preallocate>,
    max_open_files: Option<u32>,
    /// A number of bytes or a size in human units (`"2G"`, `"512 MiB"`, see
    /// [`crate::units::parse_size`]).
    #[serde(default, deserialize_with = "size")]
    min_free_space: Option<u64>,
    /// As `min_free_space`, at most 4 GiB - 1 (the check then bounds it to 128 MiB).
    #[serde(default, deserialize_with = "size_u32")]
    max_metadata_size: Option<u32>,
    add_url_timeout: Option<u32>,
    pex: Option<bool>,
    dht: Option<DhtConfig>,
    lsd: Option<LsdConfig>,
    webseeds: Option<engine::WebSeedConfig>,
    peer: Option<engine::PeerConfig>,
    on_added: Option<Vec<String>>,
    on_complete: Option<Vec<String>>,
    hook_timeout: Option<u32>,
    seeding: Option<SeedingConfig>,
    queue: Option<engine::QueueConfig>,
    categories: Option<BTreeMap<String, engine::CategoryConfig>>,
    /// Empty = no filter.
    ip_filter: Option<PathBuf>,
    watch_dir: Option<PathBuf>,
    webui: Option<webui::WebUiFile>,
    ascii: Option<bool>,
    mouse: Option<bool>,
    confirm_quit: Option<bool>,
    columns: Option<Vec<String>>,
    #[serde(default)]
    keys: BTreeMap<String, toml::Spanned<KeyList>>,
    #[serde(default)]
    colors: BTreeMap<String, toml::Spanned<String>>,
}

/// Each key the file sets replaces the default of the field of the same name.
macro_rules! take_set {
    ($into:expr, $from:expr, $($field:ident),+ $(,)?) => {
        $(if let Some(v) = $from.$field {
            $into.$field = v;
        })+
    };
}

impl ConfigFile {
    /// The parts, with the defaults for what the file leaves out; `text` is the file
    /// (for the line of each `[keys]` and `[colors]` entry).
    ///
    /// # Errors
    /// A `[webui]` value that does not read (its address).
    fn into_config(self, text: &str) -> Result<Config, engine::BadValue> {
        let mut engine = EngineConfig::default();
        take_set!(
            engine,
            self,
            download_dir,
            listen_port,
            max_peers_per_torrent,
            upload_slots,
            download_rate_limit,
            upload_rate_limit,
            alt_download_rate_limit,
            alt_upload_rate_limit,
            alt_speed_schedule,
            seed_after_download,
            disk_threads,
            numwant,
            max_connections,
            max_half_open,
            storage,
            preallocate,
            max_open_files,
            min_free_space,
            max_metadata_size,
            add_url_timeout,
            pex,
            dht,
            lsd,
            webseeds,
            peer,
            on_added,
            on_complete,
            hook_timeout,
            seeding,
            queue,
            categories,
        );
        let lined = |span: std::ops::Range<usize>| {
            1 + text
                .get(..span.start)
                .map_or(0, |before| before.matches('\n').count())
        };
        let mut ui = UiConfig {
            keys: (self.keys.into_iter())
                .map(|(action, keys)| {
                    let line = lined(keys.span());
                    let value = keys.into_inner().into_vec();
                    (action, Lined { value, line })
                })
                .collect(),
            colors: (self.colors.into_iter())
                .map(|(role, color)| {
                    let line = lined(color.span());
                    (
                        role,
                        Lined {
                            value: color.into_inner(),
                            line,
                        },
                    )
                })
                .collect(),
            ..UiConfig::default()
        };
        engine.ip_filter = self.ip_filter.filter(|p| !p.as_os_str().is_empty());
        take_set!(ui, self, ascii, mouse, confirm_quit, columns);
        let webui = self.webui.unwrap_or_default().into_config()?;
        Ok(Config {
            engine,
            ui,
            watch_dir: self.watch_dir,
            webui,
            source: None,
        })
    }
}

/// serde: a rate limit given as a number (bytes/s) or as a text in human units.
fn rate_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Rate {
        Bytes(u64),
        Text(String),
    }
    match Rate::deserialize(d)? {
        Rate::Bytes(n) => Ok(Some(n)),
        Rate::Text(t) => crate::units::parse_rate(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// serde: [`rate_limit`] for a key that is not optional inside its table.
fn rate_limit_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    rate_limit(d).map(Option::unwrap_or_default)
}

/// serde: a number of bytes, or a text in human units (`"2G"`, `"1 GiB"`).
fn size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Bytes(u64),
        Text(String),
    }
    match Size::deserialize(d)? {
        Size::Bytes(n) => Ok(Some(n)),
        Size::Text(t) => crate::units::parse_size(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// serde: [`size`] for a key held in 32 bits (bytes below 4 GiB).
fn size_u32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match size(d)? {
        None => Ok(None),
        Some(n) => u32::try_from(n).map(Some).map_err(|_| {
            serde::de::Error::custom(format!("{n} bytes is too large (at most 4 GiB - 1)"))
        }),
    }
}

/// serde: a TCP port, 0-65535, refused with that range named.
fn port<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Port {
        Number(i64),
        Other(toml::Value),
    }
    match Port::deserialize(d)? {
        Port::Number(n) => u16::try_from(n)
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("{n} is not a port 0-65535"))),
        Port::Other(v) => Err(serde::de::Error::custom(format!(
            "{v} is not a port 0-65535"
        ))),
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
    /// Entries of `[keys]` or `[colors]` the TUI cannot use, each with its line.
    #[error("invalid config file {path}: {}", join(problems))]
    Entries {
        /// The file.
        path: PathBuf,
        /// Each entry, what is wrong and what is allowed.
        problems: Vec<EntryProblem>,
    },
}

/// The problems one after the other, `; ` between them.
fn join(problems: &[EntryProblem]) -> String {
    let texts: Vec<String> = problems.iter().map(ToString::to_string).collect();
    texts.join("; ")
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

fn expand_tilde(p: &Path) -> PathBuf {
    match p.strip_prefix("~") {
        Ok(rest) => dirs::home_dir().map_or_else(|| p.to_path_buf(), |h| h.join(rest)),
        Err(_) => p.to_path_buf(),
    }
}

impl Config {
    /// Parse TOML text; `path` is only used in error messages.
    ///
    /// `[keys]` and `[colors]` are only read here (their entries must be texts, or lists of
    /// texts for a key); the TUI checks what they say ([`Config::invalid_entries`]).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] or [`ConfigError::Value`].
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let bad = |key, problem: &str| ConfigError::Value {
            path: path.to_path_buf(),
            key,
            problem: problem.to_string(),
        };
        let mut c = file.into_config(text).map_err(|b| bad(b.key, &b.problem))?;
        c.source = Some(path.to_path_buf());
        c.engine.download_dir = expand_tilde(&c.engine.download_dir);
        c.watch_dir = c.watch_dir.as_deref().map(expand_tilde);
        c.engine.ip_filter = c.engine.ip_filter.as_deref().map(expand_tilde);
        for cat in c.engine.categories.values_mut() {
            cat.save_path = expand_tilde(&cat.save_path);
            cat.download_path = cat.download_path.as_deref().map(expand_tilde);
        }
        c.engine.check().map_err(|b| bad(b.key, &b.problem))?;
        if c.watch_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(bad(
                "watch_dir",
                "must not be empty (leave it out to watch no folder)",
            ));
        }
        Ok(c)
    }

    /// The error for entries of the file a front end cannot use (the TUI's `[keys]` and
    /// `[colors]`), naming this config's file.
    pub fn invalid_entries(&self, problems: Vec<EntryProblem>) -> ConfigError {
        ConfigError::Entries {
            path: self.source.clone().unwrap_or_default(),
            problems,
        }
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
}

#[cfg(test)]
mod tests;
