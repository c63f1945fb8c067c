//! The qBittorrent-compatible Web API v2: the contract the seedbox tools use (Sonarr,
//! Radarr, Lidarr, Prowlarr: `QBittorrentProxyV2`; cross-seed; autobrr's go-qbittorrent;
//! the `qbittorrent-api` Python package), served over HTTP/1.1 next to the engine.
//!
//! A front end like the TUI: it reaches the engine only through an [`api::Client`] (its
//! snapshots for what it lists, its commands for what it changes), so what the API changes
//! the TUI shows within a snapshot, and the other way round. [`serve`] is the one entry
//! point; the TUI process and the daemon call it alike.
//!
//! Rooms:
//! - `server`: the listening socket, connections (bounded in number, header and idle
//!   timeouts), the router, request size limits;
//! - `auth`: `auth/login` and `auth/logout`, sessions (`SID` cookie), bans after repeated
//!   failures, the localhost bypass; [`password`]: the PBKDF2 hash of `ratorrent passwd`;
//! - `dispatch`: which endpoints exist (the rest answer 404), their methods, the 403 for a
//!   request without a session; `params`: query, form and multipart parameters;
//! - `app`: `app/*` and `transfer/info`; `info`: `torrents/info` (filters, sort, the
//!   qBittorrent 4.x state strings); `details`: `torrents/properties`, `files`,
//!   `trackers`; `add`: `torrents/add`; `actions`: the torrent commands; `labels`:
//!   categories and tags.
//!
//! Sources: qBittorrent's `src/webui/api/*.cpp` and `webapplication.cpp` (release 4.6.7)
//! for names, shapes and status codes; the client code of the tools for what they read.

mod actions;
mod add;
mod app;
mod auth;
mod details;
mod dispatch;
mod info;
mod labels;
mod params;
pub mod password;
mod server;

use std::net::SocketAddr;

use crate::api;
use crate::config::webui::WebUiConfig;

pub use dispatch::ENDPOINTS;

/// The qBittorrent Web API version answered by `app/webapiVersion` (qBittorrent 4.6.x's).
pub const WEBAPI_VERSION: &str = "2.9.3";

/// Why the Web API could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebUiError {
    /// Enabled without a password (there is no default one), or a hash that does not
    /// read: what to do.
    #[error("{0}")]
    Password(String),
    /// The listen address could not be bound (in use, not an address of this host, a
    /// privileged port).
    #[error("cannot listen for the Web API on {addr}: {error} (set listen in [webui])")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        error: std::io::Error,
    },
}

/// A running Web API: its address, and the way to stop it.
#[derive(Debug)]
pub struct WebUiHandle {
    addr: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl WebUiHandle {
    /// The address it listens on (the port chosen when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting connections, end the open ones, and wait for the listener's task.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Check that `cfg` can be served: a password is set (a hash that reads, or a plain one).
///
/// # Errors
/// [`WebUiError::Password`] saying what to do (`ratorrent passwd`).
pub fn check(cfg: &WebUiConfig) -> Result<(), WebUiError> {
    auth::Credentials::of(cfg).map(|_| ())
}

/// Serve the Web API of the engine behind `client` on `cfg.listen` until the handle is
/// stopped (or the runtime ends). Logs a warning when the password is plain text or the
/// address is not a loopback one. `cfg.enabled` is the caller's business: this serves.
///
/// # Errors
/// [`WebUiError::Password`] without a usable password, [`WebUiError::Bind`] when the
/// address cannot be bound.
pub async fn serve(cfg: WebUiConfig, client: api::Client) -> Result<WebUiHandle, WebUiError> {
    let credentials = auth::Credentials::of(&cfg)?;
    if !credentials.password_hashed() {
        tracing::warn!(
            "[webui] password is plain text in the config file: run `ratorrent passwd` and put \
             the hash it prints there instead"
        );
    }
    if !cfg.is_loopback() {
        tracing::warn!(
            "the Web API listens on {}, reachable from other hosts: it speaks plain HTTP \
             (put it behind a TLS reverse proxy or an SSH tunnel)",
            cfg.listen
        );
    }
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|error| WebUiError::Bind {
            addr: cfg.listen,
            error,
        })?;
    let addr = listener.local_addr().map_err(|error| WebUiError::Bind {
        addr: cfg.listen,
        error,
    })?;
    let api = dispatch::Api::new(client, credentials, cfg.identity.clone());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(server::run(listener, api, stopped));
    tracing::info!("Web API (qBittorrent v2) on http://{addr}/");
    Ok(WebUiHandle { addr, stop, task })
}
