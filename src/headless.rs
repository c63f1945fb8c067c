//! Headless front ends: `download`, `info` and `check`. They drive the same engine as the
//! TUI (download) or the same building blocks (check), and print plain lines.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

use crate::api::{AddRequest, Command, TorrentRow, TorrentState};
use crate::config::Config;
use crate::engine::session;
use crate::metainfo::Metainfo;
use crate::storage::Storage;
use crate::storage::check::check_pieces;
use crate::tui::format;

/// Options of `ratorrent download`.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// The .torrent file.
    pub torrent: std::path::PathBuf,
    /// Target directory (`None`: config's `download_dir`).
    pub output: Option<std::path::PathBuf>,
    /// Keep seeding after completion until SIGINT/SIGTERM.
    pub seed: bool,
    /// Fail after this long if not complete.
    pub timeout: Option<Duration>,
    /// No progress lines.
    pub quiet: bool,
}

/// One progress line, e.g.
/// `[ 42.0%] 430.1 MiB / 1.00 GiB  ↓ 312.4 MiB/s  ↑ 0 B/s  peers 1 (1 seeds)  ETA 2s  Downloading`.
pub fn progress_line(r: &TorrentRow) -> String {
    let pct = if r.size == 0 {
        100.0
    } else {
        r.done as f64 * 100.0 / r.size as f64
    };
    let eta = r.eta_secs.map_or_else(|| "-".to_string(), format::eta);
    let mut line = format!(
        "[{pct:5.1}%] {} / {}  ↓ {}  ↑ {}  peers {} ({} seeds)  ETA {eta}  {}",
        format::size(r.done),
        format::size(r.size),
        format::rate(r.down_rate),
        format::rate(r.up_rate),
        r.peers,
        r.seeds,
        r.state.label(),
    );
    if let Some(m) = &r.message {
        line.push_str("  (");
        line.push_str(m);
        line.push(')');
    }
    line
}

/// Run `ratorrent download`. Returns when the torrent is complete (or, with `seed`, when a
/// signal arrives).
///
/// # Errors
/// Invalid torrent, port in use, storage errors, timeout, or an interrupt before completion.
pub async fn download(mut config: Config, opts: DownloadOptions) -> anyhow::Result<()> {
    if let Some(dir) = &opts.output {
        config.download_dir = dir.clone();
    }
    // handlers first, so an early Ctrl-C is never lost
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let handle = session::start(config).await?;
    let (tx, rx) = oneshot::channel();
    handle
        .commands
        .send(Command::Add(
            AddRequest {
                torrent: opts.torrent.clone(),
                download_dir: None,
                paused: false,
                seed: opts.seed,
            },
            Some(tx),
        ))
        .await
        .context("engine stopped")?;
    let id = match rx.await.context("engine stopped")? {
        Ok(id) => id,
        Err(e) => {
            shutdown(&handle.commands).await;
            bail!("{e}");
        }
    };
    let mut snapshots = handle.snapshots.clone();
    let start = Instant::now();
    // a line a second even when nothing changes (a stalled download says so)
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = opts.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut last_print = Instant::now() - Duration::from_secs(10);
    let mut announced_seeding = false;
    let outcome: anyhow::Result<()> = loop {
        let row = snapshots.borrow_and_update().row(id).cloned();
        if let Some(r) = &row {
            let done = r.pieces_total > 0 && r.pieces_have == r.pieces_total;
            match r.state {
                TorrentState::Error => {
                    break Err(anyhow::anyhow!(
                        "{}: {}",
                        r.name,
                        r.message.clone().unwrap_or_else(|| "failed".into())
                    ));
                }
                TorrentState::Completed | TorrentState::Seeding if done => {
                    if !opts.quiet && !announced_seeding {
                        let secs = start.elapsed().as_secs_f64();
                        println!("{}", progress_line(r));
                        println!(
                            "complete: {} ({}) in {:.1} s",
                            r.name,
                            format::size(r.size),
                            secs
                        );
                    }
                    if !opts.seed {
                        break Ok(());
                    }
                    if !announced_seeding && !opts.quiet {
                        println!("seeding until interrupted (Ctrl-C)");
                    }
                    announced_seeding = true;
                }
                _ => {}
            }
            if !opts.quiet
                && !announced_seeding
                && last_print.elapsed() >= Duration::from_millis(950)
            {
                println!("{}", progress_line(r));
                let _ = std::io::stdout().flush();
                last_print = Instant::now();
            }
        }
        let sleep_until =
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            c = snapshots.changed() => if c.is_err() { break Err(anyhow::anyhow!("engine stopped unexpectedly")); },
            _ = ticker.tick() => {}
            _ = sigint.recv() => break Err(anyhow::anyhow!("interrupted")),
            _ = sigterm.recv() => break Err(anyhow::anyhow!("terminated")),
            _ = tokio::time::sleep_until(sleep_until), if deadline.is_some() => {
                let pct = row.map_or(0.0, |r| r.progress() * 100.0);
                break Err(anyhow::anyhow!("timed out after {} s at {pct:.1}%", opts.timeout.unwrap_or_default().as_secs()));
            }
        }
    };
    shutdown(&handle.commands).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), handle.task).await;
    if outcome.is_err() && opts.seed {
        // stopped by a signal while seeding: success if every piece is verified (the final
        // snapshot, published at shutdown, may be newer than the last one we looked at)
        let last = snapshots.borrow().row(id).cloned();
        if last.is_some_and(|r| r.pieces_total > 0 && r.pieces_have == r.pieces_total) {
            return Ok(());
        }
    }
    outcome
}

async fn shutdown(commands: &crate::api::CommandSender) {
    let (tx, rx) = oneshot::channel();
    if commands.send(Command::Shutdown(tx)).await.is_ok() {
        let _ = tokio::time::timeout(Duration::from_secs(8), rx).await;
    }
}

/// `ratorrent info`: the torrent's description.
///
/// # Errors
/// The file is missing or not a valid torrent (the message says why).
pub fn info(path: &Path) -> anyhow::Result<String> {
    let meta = Metainfo::load(path).map_err(|e| anyhow::anyhow!(e))?;
    Ok(meta.describe())
}

/// `ratorrent check`: verify `dir` against the torrent. Returns (verified, total) pieces.
///
/// # Errors
/// Invalid torrent or storage layout.
pub fn check(path: &Path, dir: &Path, threads: usize) -> anyhow::Result<(u32, u32)> {
    let meta = Metainfo::load(path).map_err(|e| anyhow::anyhow!(e))?;
    if !dir.is_dir() {
        bail!("{}: no such directory", dir.display());
    }
    let storage = Storage::new(
        dir,
        meta.files
            .iter()
            .map(|f| (f.path.clone(), f.offset, f.length, f.pad)),
        meta.total_length,
    )?;
    let n = meta.piece_count();
    let have = check_pieces(
        &storage,
        meta.geometry(),
        &meta.piece_hashes,
        threads,
        &AtomicU32::new(0),
        &AtomicBool::new(false),
    );
    Ok((have.count(), n))
}
