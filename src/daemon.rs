//! `ratorrent daemon`: the engine and its session state without a terminal, for a
//! seedbox that runs itself (a user systemd unit, `config/ratorrent.service`).
//!
//! Start-up: take the state folder ([`crate::state::Owner`]: a second daemon, or a TUI
//! that cannot attach, is refused with this one's pid), bind the control socket
//! ([`crate::control`]), start the engine on the state folder, run the watch folder, serve
//! the socket. Then wait:
//! - SIGTERM or SIGINT: stop the engine as the TUI's quit does (torrents stopped, trackers
//!   told, state saved), end with status 0;
//! - SIGHUP: read the config file again and apply what can change while running
//!   ([`crate::config::reload`]: the rate limits and the watch folder; the log says what
//!   waits for the next start). A file that does not read is logged and changes nothing;
//! - a TUI asking the daemon to stop (its "quit the daemon too" action): the engine stops
//!   the same way, and so does the daemon, with status 0.
//!
//! Logs go to the log file in the state folder (`$XDG_STATE_HOME/ratorrent/ratorrent.log`,
//! set up by the binary), and to stderr when it is a terminal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;

use crate::api::{Client, Command};
use crate::config::{self, Config};
use crate::control::{self, DaemonInfo};
use crate::state::{Owner, OwnerInfo, OwnerKind};
use crate::{engine, watch};

/// How long a stop waits for the engine to confirm (tracker `stopped` announces, the last
/// checkpoint) before the daemon ends anyway (the state of the last checkpoint stays).
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// What the daemon runs with.
pub struct DaemonOptions {
    /// The settings: the config file with the command line's overrides.
    pub config: Config,
    /// Reads the config file again with the same overrides (SIGHUP).
    pub reload: Box<dyn Fn() -> anyhow::Result<Config> + Send>,
    /// The state folder (session state, DHT table, owner file).
    pub state_dir: PathBuf,
}

impl std::fmt::Debug for DaemonOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonOptions")
            .field("config", &self.config)
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// Run the daemon until SIGTERM/SIGINT or a TUI stops it. Must run inside a tokio runtime
/// with the `signal`, `net` and `time` drivers.
///
/// # Errors
/// Another ratorrent runs on the state folder (named by pid and folder), the control
/// socket cannot be made, the engine does not start (listen port in use, state folder not
/// writable), signal handlers cannot be installed.
pub async fn run(opts: DaemonOptions) -> anyhow::Result<()> {
    let DaemonOptions {
        config,
        reload,
        state_dir,
    } = opts;
    // the Web API's password first: enabled without one is a start-up error
    if config.webui.enabled {
        crate::webui::check(&config.webui)?;
    }
    // handlers first: a SIGTERM during start-up is not lost
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let socket = control::socket_path(&state_dir);
    let pid = std::process::id();
    let owner = Owner::claim(
        &state_dir,
        &OwnerInfo {
            pid,
            kind: OwnerKind::Daemon,
            socket: Some(socket.clone()),
        },
    )?;
    let socket_dir = socket.parent().unwrap_or(Path::new("/"));
    control::prepare_socket_dir(socket_dir)
        .with_context(|| format!("the control socket's folder {}", socket_dir.display()))?;
    let listener = control::server::bind(&socket)?;
    let handle = match engine::session::start_with_state(config.engine.clone(), &state_dir).await {
        Ok(h) => h,
        Err(e) => {
            let _ = std::fs::remove_file(&socket);
            return Err(e);
        }
    };
    tracing::info!(
        "daemon started: pid {pid}, state {}, control socket {}, peers on TCP port {}",
        state_dir.display(),
        socket.display(),
        handle.listen_port
    );
    let client = handle.client.clone();
    let mut daemon = Daemon {
        watch: None,
        seed: config.engine.seed_after_download,
        text: source_text(&config),
        config,
        reload,
        client: client.clone(),
    };
    daemon.watch_folder(daemon.config.watch_dir.clone());

    // the qBittorrent-compatible Web API beside the control socket, on the same engine
    let web = if daemon.config.webui.enabled {
        match crate::webui::serve(daemon.config.webui.clone(), client.clone()).await {
            Ok(w) => Some(w),
            Err(e) => {
                let _ = client.shutdown().await;
                let _ = std::fs::remove_file(&socket);
                return Err(e.into());
            }
        }
    } else {
        None
    };

    let server = control::server::serve(
        listener,
        client.clone(),
        DaemonInfo {
            pid,
            state_dir: state_dir.clone(),
        },
    );
    let mut task = handle.task;
    let stopped_by = loop {
        tokio::select! {
            _ = sigterm.recv() => break Some("SIGTERM"),
            _ = sigint.recv() => break Some("SIGINT"),
            _ = sighup.recv() => daemon.reload().await,
            _ = &mut task => break None,
        }
    };
    match stopped_by {
        Some(signal) => {
            tracing::info!("{signal}: stopping (torrents stopped, trackers told, state saved)");
            match tokio::time::timeout(STOP_TIMEOUT, client.shutdown()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("stopping: {e}"),
                Err(_) => tracing::warn!(
                    "stopping: the engine did not confirm within {} s; ending anyway",
                    STOP_TIMEOUT.as_secs()
                ),
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), &mut task).await;
        }
        None => tracing::info!("the engine stopped (a TUI asked the daemon to stop); ending"),
    }
    if let Some(w) = daemon.watch.take() {
        w.abort();
    }
    if let Some(web) = web {
        web.stop().await;
    }
    server.stop(Duration::from_secs(2)).await;
    let _ = std::fs::remove_file(&socket);
    tracing::info!("daemon stopped");
    drop(owner);
    Ok(())
}

/// The daemon's running parts that a reload changes.
struct Daemon {
    config: Config,
    /// The config file's text as last read (to name the keys a reload changed).
    text: String,
    reload: Box<dyn Fn() -> anyhow::Result<Config> + Send>,
    client: Client,
    seed: bool,
    watch: Option<JoinHandle<()>>,
}

/// The text of the file `config` was read from ("" without one).
fn source_text(config: &Config) -> String {
    config
        .source
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

impl Daemon {
    /// Watch `dir` (none: stop watching) for .torrent and .magnet files.
    fn watch_folder(&mut self, dir: Option<PathBuf>) {
        if let Some(w) = self.watch.take() {
            w.abort();
        }
        if let Some(dir) = dir {
            tracing::info!("watch folder: {}", dir.display());
            let opts = watch::WatchOptions {
                dir,
                seed: self.seed,
            };
            self.watch = Some(tokio::spawn(watch::run(opts, self.client.clone())));
        }
    }

    /// SIGHUP: read the config file again and apply what can change while running.
    async fn reload(&mut self) {
        let new = match (self.reload)() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("SIGHUP: {e:#}; the settings in force stay");
                return;
            }
        };
        let file = new
            .source
            .clone()
            .or_else(config::default_config_path)
            .map_or_else(|| "the config file".to_owned(), |p| p.display().to_string());
        let text = source_text(&new);
        let changed = config::reload::changed_keys(&self.text, &text);
        let plan = config::reload::plan(&self.config, &new, &changed);
        let mut applied = Vec::new();
        if let Some((download, upload, alt_download, alt_upload)) = plan.limits {
            let command = Command::ConfigLimits {
                download,
                upload,
                alt_download,
                alt_upload,
            };
            match self.client.send(command).await {
                Ok(()) => applied.push("rate limits"),
                Err(e) => tracing::warn!("SIGHUP: rate limits not applied: {e}"),
            }
        }
        if let Some(dir) = plan.watch_dir {
            if dir.is_none() {
                tracing::info!("watch folder: none any more");
            }
            self.watch_folder(dir);
            applied.push("watch folder");
        }
        let list = |keys: &[String]| {
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            }
        };
        tracing::info!(
            "SIGHUP: read {file} again; applied: {}; read by a TUI when it attaches: {}; at the next start of the daemon: {}",
            if applied.is_empty() {
                "nothing changed".to_owned()
            } else {
                applied.join(", ")
            },
            list(&plan.ui),
            list(&plan.restart)
        );
        self.config = new;
        self.text = text;
    }
}
