//! ratorrent binary: arguments → config → runtime → engine → front end. Start-up only.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use ratorrent::api::{AddRequest, ClientError};
use ratorrent::cli::{self, Cli, Cmd};
use ratorrent::config::{self, Config};
use ratorrent::control::remote::AttachError;
use ratorrent::state::{Claim, Owner, OwnerInfo, OwnerKind};
use ratorrent::{daemon, engine, headless, tui, watch, webui};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // sockets, the file-handle cache (max_open_files) and part files share one limit;
    // distributions often start processes with a soft limit of 1024 under a far higher hard one
    ratorrent::storage::raise_fd_limit();
    if matches!(cli.command, None | Some(Cmd::Daemon { .. })) {
        limit_malloc_arenas();
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ratorrent: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Most glibc malloc arenas for the TUI session and the daemon ([`MALLOC_ARENAS`]), unless the user set
/// `MALLOC_ARENA_MAX`. glibc gives busy threads arenas of their own (up to 8 per core) and
/// keeps each one's freed memory; a session that runs for months with thousands of
/// torrents pays for that in RSS: 99 MiB vs 83 MiB after a restart with 10,000 torrents
/// (measured 2026-12-01). Headless transfers keep glibc's default (their hot path spreads
/// over the disk threads).
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a glibc tunable; called before any thread is started.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

/// glibc malloc arenas of the TUI session (see [`limit_malloc_arenas`]).
const MALLOC_ARENAS: i32 = 2;

/// A new Web API password: asked twice without echo on a terminal, else one line of
/// standard input (scripts: `echo pw | ratorrent passwd`).
fn read_new_password() -> anyhow::Result<String> {
    use std::io::IsTerminal;
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Web API password: ")?;
        let again = rpassword::prompt_password("Again: ")?;
        if first != again {
            anyhow::bail!("the two passwords differ; nothing written");
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    };
    if password.is_empty() {
        anyhow::bail!("the password is empty; nothing written");
    }
    Ok(password)
}

fn load_config(cli: &Cli) -> anyhow::Result<Config> {
    let mut config = Config::load(cli.config.as_deref())?;
    if let Some(p) = cli.port {
        config.engine.listen_port = p;
    }
    if !cli.dht_bootstrap.is_empty() {
        config.engine.dht.bootstrap = cli.dht_bootstrap.clone();
    }
    if cli.no_dht {
        config.engine.dht.enabled = false;
    }
    if cli.lsd {
        config.engine.lsd.enabled = true;
    }
    if let Some(s) = cli.storage {
        config.engine.storage = s;
    }
    if let Some(e) = cli.encryption {
        config.engine.peer.encryption = e;
    }
    if let Some(dir) = &cli.watch {
        config.watch_dir = Some(dir.clone());
    }
    Ok(config)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ratorrent")
        .build()?)
}

/// `RUST_LOG`, else `default`. The DHT crate logs a warning per bootstrap retry (about
/// one a minute per node while offline): unless `RUST_LOG` names it, only its errors show.
fn log_filter(default: &str) -> tracing_subscriber::EnvFilter {
    let env = std::env::var("RUST_LOG").unwrap_or_default();
    let base = if env.is_empty() { default } else { &env };
    let text = if env.contains("librqbit") {
        base.to_string()
    } else {
        format!("{base},librqbit_dht=error")
    };
    tracing_subscriber::EnvFilter::try_new(&text)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
}

/// Headless runs: warnings and errors on stderr. The engine's own events are not logged
/// here: `download` prints its warnings once and ends with its errors (never twice).
fn init_stderr_logging() {
    let filter = log_filter("warn,ratorrent::engine::event_log=off");
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// The TUI owns the terminal: logs go to `$XDG_STATE_HOME/ratorrent/ratorrent.log`.
fn init_file_logging() -> Option<std::path::PathBuf> {
    let dir = config::state_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join("ratorrent.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let filter = log_filter("info");
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
    Some(path)
}

/// The daemon: logs go to the log file of the TUI (`$XDG_STATE_HOME/ratorrent/ratorrent.log`),
/// and to stderr too when it is a terminal (started by hand).
fn init_daemon_logging() {
    use std::io::IsTerminal;
    use tracing_subscriber::prelude::*;
    let dir = config::state_dir();
    let file = std::fs::create_dir_all(&dir).ok().and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("ratorrent.log"))
            .ok()
    });
    let to_file = file.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
    });
    let terminal = std::io::stderr().is_terminal();
    let to_stderr = (terminal || to_file.is_none()).then(|| {
        tracing_subscriber::fmt::layer()
            .with_ansi(terminal)
            .with_writer(std::io::stderr)
    });
    let _ = tracing_subscriber::registry()
        .with(log_filter("info"))
        .with(to_file)
        .with(to_stderr)
        .try_init();
}

/// The TUI's settings from the config, `--ascii` and the environment (`NO_COLOR`, the
/// locale, `TERM`).
fn ui_options(ascii: bool, config: &Config) -> anyhow::Result<tui::UiOptions> {
    let env = |k: &str| std::env::var(k).ok();
    // the TUI owns `[keys]` and `[colors]`: checked here, before the terminal is touched
    let keymap = tui::keymap::Keymap::from_config(&config.ui.keys);
    let colors = tui::theme::colors_from_config(&config.ui.colors);
    let (keymap, colors) = match (keymap, colors) {
        (Ok(keymap), Ok(colors)) => (keymap, colors),
        (keymap, colors) => {
            let mut problems = keymap.err().unwrap_or_default();
            problems.extend(colors.err().unwrap_or_default());
            problems.sort_by_key(|p| p.line);
            return Err(config.invalid_entries(problems).into());
        }
    };
    let ascii = ascii || config.ui.ascii || !tui::theme::locale_is_utf8(env);
    let mut theme = tui::theme::Theme::new(&colors, tui::theme::no_color_requested(env), ascii);
    theme.graph = tui::theme::GraphStyle::for_terminal(ascii, env("TERM").as_deref());
    Ok(tui::UiOptions {
        keymap,
        theme,
        seed_after_download: config.engine.seed_after_download,
        log_path: None,
        view_file: None,
        mouse: config.ui.mouse,
        confirm_quit: config.ui.confirm_quit,
        attached: None,
        columns: tui::list::parse_columns(&config.ui.columns).map_err(|e| {
            match &config.source {
                // as the file's other errors: the file, then the key and what is allowed
                Some(path) => anyhow::anyhow!("invalid config file {}: {e}", path.display()),
                None => anyhow::anyhow!(e),
            }
        })?,
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Some(Cmd::Info { torrent }) => {
            // one rule for every subcommand: the config is read (a --config that does not
            // exist or does not parse is an error), though `info` needs none of it
            load_config(&cli)?;
            print!("{}", headless::info(torrent)?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Check { torrent, dir }) => {
            let config = load_config(&cli)?;
            let handles = ratorrent::storage::HandleCache::new(config.engine.open_file_cap());
            let meta =
                ratorrent::metainfo::Metainfo::load(torrent).map_err(|e| anyhow::anyhow!(e))?;
            let (have, total) = headless::check_meta(
                &meta,
                dir,
                config.engine.disk_thread_count(),
                config.engine.storage_options(handles),
            )?;
            println!("{have}/{total} pieces verified");
            if have < total
                && let Some(hint) = headless::expected_data_hint(&meta, dir)
            {
                println!("{hint}");
            }
            Ok(if have == total {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Some(Cmd::Create {
            path,
            output,
            format,
            piece_size,
            trackers,
            web_seeds,
            private,
            comment,
            source,
            no_date,
            threads,
            force,
            quiet,
        }) => {
            use ratorrent::creator::{self, CreateOptions};
            let piece_length = piece_size
                .as_deref()
                .map(creator::parse_piece_size)
                .transpose()
                .map_err(|e| anyhow::anyhow!(e))?;
            let opts = CreateOptions {
                path: path.clone(),
                version: (*format).into(),
                piece_length,
                trackers: trackers
                    .iter()
                    .map(|t| creator::parse_tier(t))
                    .filter(|t| !t.is_empty())
                    .collect(),
                web_seeds: web_seeds.clone(),
                private: *private,
                comment: comment.clone(),
                source: source.clone(),
                date: !*no_date,
                threads: *threads,
            };
            let output = output.clone().unwrap_or_else(|| opts.default_output());
            let created = creator::create(&opts, &output, *force, !*quiet)?;
            if !*quiet {
                print!("{}", created.summary());
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Passwd) => {
            // no config needed (it may be the one that lacks a password)
            let password = read_new_password()?;
            println!("password = \"{}\"", webui::password::hash(&password));
            eprintln!("put this line into the [webui] table of the config file");
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Download {
            torrents,
            output,
            seed,
            timeout,
            quiet,
            wait_for_space,
            skip_check,
            sequential,
            peers,
        }) => {
            init_stderr_logging();
            let config = load_config(&cli)?;
            if cli.watch.is_some() {
                tracing::warn!("--watch is for the TUI; `download` ignores it");
            }
            let opts = headless::DownloadOptions {
                torrents: torrents.clone(),
                output: output.clone(),
                seed: *seed,
                timeout: timeout.map(std::time::Duration::from_secs),
                quiet: *quiet,
                wait_for_space: *wait_for_space,
                skip_check: *skip_check,
                sequential: *sequential,
                peers: peers.clone(),
            };
            runtime()?.block_on(headless::download(config.engine, opts))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Daemon { output }) => {
            let mut config = load_config(&cli)?;
            if let Some(dir) = output {
                config.engine.download_dir = dir.clone();
            }
            init_daemon_logging();
            let again = cli.clone();
            let reload = Box::new(move || {
                let mut config = load_config(&again)?;
                if let Some(Cmd::Daemon {
                    output: Some(dir), ..
                }) = &again.command
                {
                    config.engine.download_dir = dir.clone();
                }
                Ok(config)
            });
            let opts = daemon::DaemonOptions {
                config,
                reload,
                state_dir: ratorrent::state::StateStore::default_dir(),
            };
            let rt = runtime()?;
            rt.block_on(daemon::run(opts))?;
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Attach {
            torrents,
            output,
            ascii,
        }) => run_tui(
            &cli,
            &TuiArgs {
                torrents,
                output: output.as_deref(),
                ascii: *ascii || cli.ascii,
                attach_only: true,
            },
        ),
        None => run_tui(
            &cli,
            &TuiArgs {
                torrents: &cli.torrents,
                output: cli.output.as_deref(),
                ascii: cli.ascii,
                attach_only: false,
            },
        ),
    }
}

/// What the command line asks of the TUI.
struct TuiArgs<'a> {
    /// Torrents to add when it opens.
    torrents: &'a [PathBuf],
    /// `-o`: where downloads go.
    output: Option<&'a Path>,
    /// `--ascii`.
    ascii: bool,
    /// `ratorrent attach`: attach to a daemon or fail, never start an engine.
    attach_only: bool,
}

/// The TUI: attached to the daemon that runs on the state folder, else (unless
/// `attach_only`) with an engine of its own, as ever.
fn run_tui(cli: &Cli, args: &TuiArgs<'_>) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    // before anything is created (log file, state folder, listen socket)
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the terminal UI needs a terminal (stdin and stdout are not one); \
             for scripts and services use `ratorrent download TORRENT...` or `ratorrent daemon`"
        );
    }
    let mut config = load_config(cli)?;
    let ui = ui_options(args.ascii, &config)?;
    let state_dir = ratorrent::state::StateStore::default_dir();
    let owner = if args.attach_only {
        match Owner::running(&state_dir) {
            Some(o) if o.kind == OwnerKind::Daemon && o.socket.is_some() => {
                return attach(cli, args, &config, ui, &state_dir, &o);
            }
            Some(o) => anyhow::bail!(
                "{} is running with the state in {}: only a daemon can be attached to",
                o.describe(),
                state_dir.display()
            ),
            None => anyhow::bail!(
                "no ratorrent daemon is running with the state in {} (start one with \
                 `ratorrent daemon` or `systemctl --user start ratorrent`)",
                state_dir.display()
            ),
        }
    } else {
        let me = OwnerInfo {
            pid: std::process::id(),
            kind: OwnerKind::Tui,
            socket: None,
        };
        match Owner::claim(&state_dir, &me) {
            Ok(owner) => owner,
            Err(Claim::Taken { owner: Some(o), .. })
                if o.kind == OwnerKind::Daemon && o.socket.is_some() =>
            {
                return attach(cli, args, &config, ui, &state_dir, &o);
            }
            Err(e) => return Err(e.into()),
        }
    };
    if let Some(dir) = args.output {
        config.engine.download_dir = dir.to_path_buf();
    }
    // the Web API's password is checked before the terminal is taken
    let web_config = config.webui.clone();
    if web_config.enabled {
        webui::check(&web_config)?;
    }
    let log_path = init_file_logging();
    // the list's sort and filter come back next time (the TUI's own file)
    let view_file = Some(state_dir.join("tui-view.toml"));
    let ui = tui::UiOptions {
        log_path,
        view_file,
        ..ui
    };
    let seed = config.engine.seed_after_download;
    let watch_dir = config.watch_dir.clone();
    let rt = runtime()?;
    rt.block_on(async {
        // the list of the last session comes back (and is kept) in the data directory
        let handle = engine::session::start_with_state(config.engine, &state_dir).await?;
        let client = &handle.client;
        let failed_adds = add_all(client, args.torrents, seed, None).await?;
        // the watch folder adds next to the TUI (a problem with it is shown, not fatal)
        let mut notice = None;
        if let Some(dir) = watch_dir {
            if let Err(e) = watch::prepare(&dir) {
                tracing::warn!("{e}");
                notice = Some(e);
            }
            let opts = watch::WatchOptions { dir, seed };
            tokio::spawn(watch::run(opts, client.clone()));
        }
        // the qBittorrent-compatible Web API beside the TUI, as the daemon serves it
        let web = if web_config.enabled {
            Some(webui::serve(web_config, client.clone()).await?)
        } else {
            None
        };
        let r = tui::run(tui::RunOptions {
            client: client.clone(),
            events: Some(client.subscribe()),
            notice,
            failed_adds,
            ui,
        })
        .await;
        if let Some(web) = web {
            web.stop().await;
        }
        r
    })?;
    // disk threads and any stragglers end with the process
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    drop(owner);
    Ok(ExitCode::SUCCESS)
}

/// Add `torrents` (the command line's) through `client`, into `dir` when given. A bad
/// torrent does not keep the others from being added: the engine logs why in the session
/// log, and the returned reasons are counted by the TUI.
///
/// # Errors
/// The engine is gone.
async fn add_all(
    client: &ratorrent::api::Client,
    torrents: &[PathBuf],
    seed: bool,
    dir: Option<&Path>,
) -> anyhow::Result<Vec<String>> {
    let mut failed_adds = Vec::new();
    for t in torrents {
        let request = AddRequest::new(cli::add_source(t))
            .seed(seed)
            .download_dir(dir.map(Path::to_path_buf));
        if request.source.is_fetched() {
            // before the TUI takes the screen: the add answers once fetched
            eprintln!("fetching {}…", request.source);
        }
        match client.add(request).await {
            Ok(_) => {}
            Err(ClientError::Refused(e)) => {
                tracing::warn!("{e}");
                failed_adds.push(e.to_string());
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(failed_adds)
}

/// How long an attaching TUI tries again while the daemon's socket is not there yet (the
/// daemon is starting: it holds the state folder, and binds its socket next).
const ATTACH_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// The TUI attached to the daemon `daemon` (which runs on `state_dir`): no engine, no
/// listening port; the engine's flags of the command line are the daemon's business and
/// are ignored with a note.
fn attach(
    cli: &Cli,
    args: &TuiArgs<'_>,
    config: &Config,
    ui: tui::UiOptions,
    state_dir: &Path,
    daemon: &OwnerInfo,
) -> anyhow::Result<ExitCode> {
    let socket = daemon.socket.clone().unwrap_or_default();
    let log_path = init_file_logging();
    let ignored = ignored_engine_flags(cli);
    if !ignored.is_empty() {
        tracing::info!(
            "attached TUI: {} ignored (the daemon's settings apply)",
            ignored.join(", ")
        );
    }
    let q = ui.keymap.hint(tui::action::Action::Quit);
    let stop = ui.keymap.hint(tui::action::Action::QuitDaemon);
    let mut notice = format!(
        "attached to the daemon (pid {}): {q} leaves it running, {stop} stops it",
        daemon.pid
    );
    if !ignored.is_empty() {
        notice.push_str(&format!("; ignored: {}", ignored.join(" ")));
    }
    let ui = tui::UiOptions {
        log_path,
        view_file: Some(state_dir.join("tui-view.toml")),
        attached: Some(daemon.pid),
        ..ui
    };
    let seed = config.engine.seed_after_download;
    let rt = runtime()?;
    rt.block_on(async {
        let started = std::time::Instant::now();
        let remote = loop {
            match ratorrent::control::remote::connect(&socket).await {
                Ok(r) => break r,
                Err(AttachError::Connect { error, .. })
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                    ) && started.elapsed() < ATTACH_RETRY =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => {
                    return Err(anyhow::anyhow!(e).context(format!(
                        "{} runs with the state in {}, and this TUI cannot attach to it",
                        daemon.describe(),
                        state_dir.display()
                    )));
                }
            }
        };
        let client = remote.client;
        let failed_adds = add_all(&client, args.torrents, seed, args.output).await?;
        tui::run(tui::RunOptions {
            events: Some(client.subscribe()),
            client,
            notice: Some(notice),
            failed_adds,
            ui,
        })
        .await
    })?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}

/// The engine's flags given on the command line, which an attached TUI ignores.
fn ignored_engine_flags(cli: &Cli) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if cli.port.is_some() {
        flags.push("--port");
    }
    if cli.no_dht {
        flags.push("--no-dht");
    }
    if !cli.dht_bootstrap.is_empty() {
        flags.push("--dht-bootstrap");
    }
    if cli.lsd {
        flags.push("--lsd");
    }
    if cli.storage.is_some() {
        flags.push("--storage");
    }
    if cli.watch.is_some() {
        flags.push("--watch");
    }
    flags
}
