//! Headless front ends: `download`, `info` and `check`. They drive the same engine as the
//! TUI (download) or the same building blocks (check), and print plain lines.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::signal::unix::{SignalKind, signal};

use crate::api::{AddRequest, Client, ClientError, PauseCause, TorrentRow, TorrentState};
use crate::config::engine::EngineConfig;
use crate::engine::session;
use crate::metainfo::Metainfo;
use crate::storage::Storage;
use crate::storage::check::check_pieces;
use crate::{units, untrusted};

/// Options of `ratorrent download`.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// The .torrent files (at least one).
    pub torrents: Vec<std::path::PathBuf>,
    /// Target directory (`None`: config's `download_dir`).
    pub output: Option<std::path::PathBuf>,
    /// Keep seeding after completion until SIGINT/SIGTERM.
    pub seed: bool,
    /// Fail after this long if not complete.
    pub timeout: Option<Duration>,
    /// No progress lines.
    pub quiet: bool,
    /// When the disk guard pauses a download (less free space than `min_free_space`), wait
    /// for space to come back instead of failing.
    pub wait_for_space: bool,
    /// Add without a hash check (see [`AddRequest::skip_check`]).
    pub skip_check: bool,
    /// Sequential download (see [`AddRequest::sequential`]).
    pub sequential: bool,
    /// Peers to dial for every torrent (`--peer`), as if added by hand
    /// ([`Client::add_peer`]).
    pub peers: Vec<std::net::SocketAddr>,
}

/// The disk guard's reason when it paused `r` (the volume has less free space than
/// `min_free_space`), from the row's typed [`TorrentRow::paused_by`].
pub fn guard_reason(r: &TorrentRow) -> Option<&str> {
    match &r.paused_by {
        Some(PauseCause::DiskGuard(why)) => Some(why),
        Some(PauseCause::Goal(_)) | None => None,
    }
}

/// What to do about a torrent error on the command line (the TUI's hints say "resume",
/// which means "run the command again" here).
pub fn cli_hint(kind: crate::api::TorrentErrorKind) -> &'static str {
    use crate::api::TorrentErrorKind as K;
    match kind {
        K::NoSpace => "free some space on the download volume, then run the command again",
        K::PermissionDenied => {
            "fix the owner or mode of the download folder, then run the command again"
        }
        K::ReadOnly => {
            "make the download folder writable (or use -o DIR), then run the command again"
        }
        K::FilesMissing => {
            "put the files back (or pass -o with the folder they are in) and run the command again, or run it to download them again: the data is rechecked"
        }
        K::FolderNotCreated => {
            "create the folder (or pass -o with another one), then run the command again"
        }
        K::Storage => "check the disk, then run the command again",
        K::BadMetadata => "the torrent behind this magnet link cannot be used",
        K::Internal => "please report this; running the command again may work",
    }
}

/// One progress line, e.g.
/// `[ 42.0%] 430.1 MiB / 1.00 GiB  ↓ 312.4 MiB/s  ↑ 0 B/s  peers 1 (1 seeds)  ETA 2s  Downloading`,
/// with `+ 1 web seed` after the peers while web seeds (BEP 19) are in use.
pub fn progress_line(r: &TorrentRow) -> String {
    let pct = r.progress() * 100.0;
    let eta = r.eta_secs.map_or_else(|| "-".to_string(), units::duration);
    let web = match r.web_seeds {
        0 => String::new(),
        1 => " + 1 web seed".to_owned(),
        n => format!(" + {n} web seeds"),
    };
    let mut line = format!(
        "[{pct:5.1}%] {} / {}  ↓ {}  ↑ {}  peers {} ({} seeds){web}  ETA {eta}  {}",
        units::size(r.done),
        units::size(r.size),
        units::rate(r.down_rate),
        units::rate(r.up_rate),
        r.peers,
        r.seeds,
        r.state.label(),
    );
    if let Some(e) = &r.error {
        line.push_str("  (");
        line.push_str(&untrusted::line(&e.message));
        line.push(')');
    } else if let Some(m) = &r.message {
        line.push_str("  (");
        line.push_str(&untrusted::line(m));
        line.push(')');
    }
    line
}

/// One progress line for several torrents, e.g.
/// `[ 42.0%] 3/100 complete  1.2 GiB / 2.9 GiB  ↓ 312.4 MiB/s  ↑ 0 B/s  peers 4`.
pub fn summary_line(rows: &[&TorrentRow]) -> String {
    let size: u64 = rows.iter().map(|r| r.size).sum();
    let done: u64 = rows.iter().map(|r| r.done).sum();
    let pct = if size == 0 {
        100.0
    } else {
        done as f64 * 100.0 / size as f64
    };
    let complete = rows.iter().filter(|r| is_done(r)).count();
    format!(
        "[{pct:5.1}%] {complete}/{} complete  {} / {}  ↓ {}  ↑ {}  peers {}",
        rows.len(),
        units::size(done),
        units::size(size),
        units::rate(rows.iter().map(|r| r.down_rate).sum()),
        units::rate(rows.iter().map(|r| r.up_rate).sum()),
        rows.iter().map(|r| r.peers).sum::<u32>(),
    )
}

/// The line printed every [`SEED_STATUS_EVERY`] while `download --seed` seeds, e.g.
/// `seeding 1 torrent  ↑ 12.5 MiB/s  uploaded 3.20 GiB  ratio 3.20  peers 4`. The ratio is
/// [`crate::api::share_ratio`] of the totals, the same rule as the TUI's (uploaded over
/// downloaded, or over the size when next to nothing was downloaded).
pub fn seeding_line(rows: &[&TorrentRow]) -> String {
    let (uploaded, ratio) = upload_totals(rows);
    format!(
        "seeding {} torrent{}  ↑ {}  uploaded {}  ratio {ratio:.2}  peers {}",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        units::rate(rows.iter().map(|r| r.up_rate).sum()),
        units::size(uploaded),
        rows.iter().map(|r| r.peers).sum::<u32>(),
    )
}

/// Bytes uploaded by `rows` together and their share ratio ([`crate::api::share_ratio`] of
/// the totals, the TUI's rule; 0 when undefined).
fn upload_totals(rows: &[&TorrentRow]) -> (u64, f64) {
    let size: u64 = rows.iter().map(|r| r.size).sum();
    let uploaded: u64 = rows.iter().map(|r| r.uploaded).sum();
    let downloaded: u64 = rows.iter().map(|r| r.downloaded).sum();
    let ratio = crate::api::share_ratio(uploaded, downloaded, size).unwrap_or(0.0);
    (uploaded, ratio)
}

/// How long `download --peer` waits for any connection before saying it has none.
pub const NO_PEER_AFTER: Duration = Duration::from_secs(10);

/// How often `download --seed` prints [`seeding_line`] once everything is complete.
pub const SEED_STATUS_EVERY: Duration = Duration::from_secs(60);

/// Every wanted piece verified: the engine says Completed or Seeding only then (with
/// files skipped, e.g. a magnet link's `so=`, pieces of skipped files stay missing).
fn is_done(r: &TorrentRow) -> bool {
    r.pieces_total > 0 && matches!(r.state, TorrentState::Completed | TorrentState::Seeding)
}

/// Run `ratorrent download`. Returns when every torrent is complete (or, with `seed`, when
/// a signal arrives after they all are).
///
/// # Errors
/// Invalid torrent, port in use, a torrent stopped by an error (also while seeding),
/// timeout, or an interrupt before completion.
pub async fn download(mut config: EngineConfig, opts: DownloadOptions) -> anyhow::Result<()> {
    if opts.torrents.is_empty() {
        bail!("no torrent given");
    }
    if let Some(dir) = &opts.output {
        config.download_dir = dir.clone();
    }
    // handlers first, so an early Ctrl-C is never lost
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let handle = session::start(config).await?;
    let client = &handle.client;
    let mut ids = Vec::new();
    for t in &opts.torrents {
        let request = AddRequest::new(crate::cli::add_source(t))
            .seed(opts.seed)
            .skip_check(opts.skip_check)
            .sequential(opts.sequential);
        if request.source.is_fetched() && !opts.quiet {
            // the add answers once the file is fetched
            println!("fetching {}…", request.source);
        }
        match client.add(request).await {
            Ok(id) => {
                for addr in &opts.peers {
                    client.add_peer(id, *addr).await.context("engine stopped")?;
                }
                ids.push(id);
            }
            Err(ClientError::Refused(e)) => {
                shutdown(client).await;
                bail!("{e}");
            }
            Err(e) => return Err(e).context("engine stopped"),
        }
    }
    let mut snapshots = client.snapshots();
    let start = Instant::now();
    // a line a second even when nothing changes (a stalled download says so)
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = opts.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut last_print = Instant::now() - Duration::from_secs(10);
    let mut seed_status = tokio::time::interval_at(
        tokio::time::Instant::now() + SEED_STATUS_EVERY,
        SEED_STATUS_EVERY,
    );
    seed_status.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut all_done = false;
    // payload bytes each torrent had downloaded when first seen: unchanged at the end means
    // its data was on disk already ("already complete", not "complete in 0.0 s")
    let mut downloaded_at_start: std::collections::HashMap<crate::api::TorrentId, u64> =
        Default::default();
    // the engine's warnings, each printed once (its errors end the run with the cause)
    let mut events = client.subscribe();
    let mut events_open = true;
    // the disk guard's pause, said once per torrent while it lasts
    let mut told_guard: std::collections::HashSet<crate::api::TorrentId> = Default::default();
    // `--peer` given and still no peer after a while: said once (a dial that fails is
    // otherwise silent, and the run would only end with "timed out")
    let mut told_no_peer = opts.peers.is_empty();
    let outcome: anyhow::Result<()> = loop {
        let snap = snapshots.borrow_and_update().clone();
        let rows: Vec<&TorrentRow> = ids.iter().filter_map(|id| snap.row(*id)).collect();
        for r in &rows {
            downloaded_at_start.entry(r.id).or_insert(r.downloaded);
        }
        if let Some(r) = rows.iter().find(|r| r.state == TorrentState::Error) {
            let why = r.error.as_ref().map_or_else(
                || "failed".to_string(),
                |e| format!("{} ({})", untrusted::line(&e.message), cli_hint(e.kind)),
            );
            break Err(anyhow::anyhow!("{}: {why}", untrusted::line(&r.name)));
        }
        let guarded: Vec<(&TorrentRow, &str)> = rows
            .iter()
            .filter_map(|r| guard_reason(r).map(|g| (*r, g)))
            .collect();
        if let Some((r, why)) = guarded.first()
            && !opts.wait_for_space
        {
            break Err(anyhow::anyhow!(
                "{}: download stopped: {}; free some space or lower min_free_space in the config (or pass --wait-for-space to wait for it)",
                untrusted::line(&r.name),
                untrusted::line(why)
            ));
        }
        told_guard.retain(|id| guarded.iter().any(|(r, _)| r.id == *id));
        for (r, why) in &guarded {
            if told_guard.insert(r.id) {
                eprintln!(
                    "ratorrent: {}: paused: {}; waiting for free space",
                    untrusted::line(&r.name),
                    untrusted::line(why)
                );
            }
        }
        let all_waiting = !guarded.is_empty() && guarded.len() == rows.len();
        if !told_no_peer
            && start.elapsed() >= NO_PEER_AFTER
            && rows.iter().all(|r| r.peers == 0 && !is_done(r))
        {
            told_no_peer = true;
            let list: Vec<String> = opts.peers.iter().map(ToString::to_string).collect();
            eprintln!(
                "ratorrent: no connection to {} after {} s: is a BitTorrent client listening there? (still trying)",
                list.join(", "),
                NO_PEER_AFTER.as_secs()
            );
        }
        let done_now = rows.len() == ids.len() && rows.iter().all(|r| is_done(r));
        if done_now && !all_done {
            all_done = true;
            if !opts.quiet {
                let secs = start.elapsed().as_secs_f64();
                let nothing_fetched = rows
                    .iter()
                    .all(|r| downloaded_at_start.get(&r.id) == Some(&r.downloaded));
                if let [r] = rows.as_slice() {
                    println!("{}", progress_line(r));
                    if nothing_fetched {
                        println!(
                            "already complete: {} ({}): its data was on disk (checked in {secs:.1} s)",
                            untrusted::line(&r.name),
                            units::size(r.size)
                        );
                    } else {
                        println!(
                            "complete: {} ({}) in {secs:.1} s{}",
                            untrusted::line(&r.name),
                            units::size(r.size),
                            average(&rows, &downloaded_at_start, secs)
                        );
                    }
                } else if nothing_fetched {
                    println!("{}", summary_line(&rows));
                    let size: u64 = rows.iter().map(|r| r.size).sum();
                    println!(
                        "already complete: all {} torrents ({}): their data was on disk (checked in {secs:.1} s)",
                        rows.len(),
                        units::size(size)
                    );
                } else {
                    println!("{}", summary_line(&rows));
                    let size: u64 = rows.iter().map(|r| r.size).sum();
                    println!(
                        "complete: all {} torrents ({}) in {secs:.1} s{}",
                        rows.len(),
                        units::size(size),
                        average(&rows, &downloaded_at_start, secs)
                    );
                }
                if opts.seed {
                    println!("seeding until interrupted (Ctrl-C)");
                }
                let _ = std::io::stdout().flush();
            }
            if !opts.seed {
                break Ok(());
            }
        }
        // `--seed` with a seeding goal (`[seeding]`): every torrent reached its goal (and
        // was stopped or removed by it): nothing is left to seed
        if all_done
            && opts.seed
            && rows
                .iter()
                .all(|r| matches!(r.paused_by, Some(PauseCause::Goal(_))))
        {
            for r in &rows {
                if let Some(PauseCause::Goal(why)) = &r.paused_by {
                    println!("{}: {}: done seeding", untrusted::line(&r.name), why);
                }
            }
            if rows.len() < ids.len() {
                println!("removed by the seeding goal: {}", ids.len() - rows.len());
            }
            break Ok(());
        }
        if !opts.quiet
            && !all_done
            && !all_waiting
            && rows.len() == ids.len()
            && last_print.elapsed() >= Duration::from_millis(950)
        {
            match rows.as_slice() {
                [r] => println!("{}", progress_line(r)),
                rows => println!("{}", summary_line(rows)),
            }
            let _ = std::io::stdout().flush();
            last_print = Instant::now();
        }
        let sleep_until =
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            c = snapshots.changed() => if c.is_err() { break Err(anyhow::anyhow!("engine stopped unexpectedly")); },
            ev = events.recv(), if events_open => match ev {
                // the guard's pause is said above, once
                Ok(ev) if ev.level == crate::api::EventLevel::Warn && ev.kind != crate::api::EventKind::DiskError => {
                    let name = ev.torrent.and_then(|id| snap.row(id)).map(|r| r.name.as_str());
                    eprintln!("ratorrent: warning: {}", untrusted::line(&ev.with_name(name)));
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => events_open = false,
                _ => {}
            },
            _ = ticker.tick(), if !all_done => {}
            _ = seed_status.tick(), if all_done && !opts.quiet => {
                println!("{}", seeding_line(&rows));
                let _ = std::io::stdout().flush();
            }
            _ = sigint.recv() => break if all_done { seeded(&rows, opts.quiet); Ok(()) } else { Err(anyhow::anyhow!("interrupted {}", stopped_at(&rows))) },
            _ = sigterm.recv() => break if all_done { seeded(&rows, opts.quiet); Ok(()) } else { Err(anyhow::anyhow!("terminated {}", stopped_at(&rows))) },
            _ = tokio::time::sleep_until(sleep_until), if deadline.is_some() && !all_done => {
                break Err(anyhow::anyhow!("timed out after {} s {}", opts.timeout.unwrap_or_default().as_secs(), stopped_at(&rows)));
            }
        }
    };
    shutdown(client).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), handle.task).await;
    outcome
}

/// `, 12.5 MiB/s on average`: the bytes fetched this run over `secs` (the line's last
/// instant rate reads 0 after a transfer shorter than the rate's one-second window), or
/// nothing when no time passed.
fn average(
    rows: &[&TorrentRow],
    at_start: &std::collections::HashMap<crate::api::TorrentId, u64>,
    secs: f64,
) -> String {
    let fetched: u64 = rows
        .iter()
        .map(|r| {
            r.downloaded
                .saturating_sub(at_start.get(&r.id).copied().unwrap_or(0))
        })
        .sum();
    if secs <= 0.0 {
        return String::new();
    }
    format!(
        ", {} on average",
        units::rate((fetched as f64 / secs) as u64)
    )
}

/// `download --seed` ends on a signal after everything completed: the totals of the run
/// (`seeded: uploaded 3.20 GiB  ratio 3.20`), unless `--quiet`.
fn seeded(rows: &[&TorrentRow], quiet: bool) {
    if quiet {
        return;
    }
    let (uploaded, ratio) = upload_totals(rows);
    println!(
        "seeded: uploaded {}  ratio {ratio:.2}",
        units::size(uploaded)
    );
    let _ = std::io::stdout().flush();
}

/// Where a download that did not finish stopped, for its error line: `at 42.1% (1.2 GiB of
/// 2.9 GiB); running the same command again checks the data on disk and goes on`.
fn stopped_at(rows: &[&TorrentRow]) -> String {
    let size: u64 = rows.iter().map(|r| r.size).sum();
    let done: u64 = rows.iter().map(|r| r.done).sum();
    let pct = if size == 0 {
        0.0
    } else {
        done as f64 * 100.0 / size as f64
    };
    format!(
        "at {pct:.1}% ({} of {}); running the same command again checks the data on disk and goes on",
        units::size(done),
        units::size(size)
    )
}

/// Ask the engine to stop (trackers get `stopped`) and wait for it, 8 s at most.
async fn shutdown(client: &Client) {
    let _ = tokio::time::timeout(Duration::from_secs(8), client.shutdown()).await;
}

/// `ratorrent info`: the torrent's description, or what a magnet link names.
///
/// # Errors
/// The file is missing or not a valid torrent (the message says why).
pub fn info(path: &Path) -> anyhow::Result<String> {
    if let Some(link) = path
        .to_str()
        .filter(|s| crate::metainfo::magnet::is_magnet(s))
    {
        let m = crate::metainfo::Magnet::parse(link)?;
        return Ok(m.describe());
    }
    let meta = Metainfo::load(path).map_err(|e| anyhow::anyhow!(e))?;
    Ok(meta.describe())
}

/// When `check` found nothing in `dir`: where it expected the data, and the folder to give
/// instead when `dir` looks like the torrent's own top folder (a common slip), e.g.
/// `expected the data at /d/album/album (its top folder inside DIR); give /d instead`.
pub fn expected_data_hint(meta: &Metainfo, dir: &Path) -> Option<String> {
    let expected = dir.join(meta.saved_name());
    if expected.exists() {
        return None;
    }
    let mut hint = format!("expected the data at {}", expected.display());
    if meta.multi_file {
        hint.push_str(" (the torrent's top folder, inside DIR)");
    }
    if dir.file_name().is_some_and(|n| n == meta.saved_name())
        && let Some(parent) = dir.parent()
    {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        hint.push_str(&format!(
            "; {} looks like the torrent's own folder: give its parent, {}",
            dir.display(),
            parent.display()
        ));
    }
    Some(hint)
}

/// `ratorrent check`: verify `dir` against the torrent. Returns (verified, total) pieces.
///
/// # Errors
/// Invalid torrent or storage layout.
pub fn check(path: &Path, dir: &Path, threads: usize) -> anyhow::Result<(u32, u32)> {
    check_with(
        path,
        dir,
        threads,
        crate::storage::StorageOptions::default(),
    )
}

/// [`check`] with the given storage mode and handle cache (`--storage`).
///
/// # Errors
/// Invalid torrent or storage layout.
pub fn check_with(
    path: &Path,
    dir: &Path,
    threads: usize,
    opts: crate::storage::StorageOptions,
) -> anyhow::Result<(u32, u32)> {
    let meta = Metainfo::load(path).map_err(|e| anyhow::anyhow!(e))?;
    check_meta(&meta, dir, threads, opts)
}

/// [`check_with`] of a loaded torrent.
///
/// # Errors
/// Storage layout; `dir` is not a folder.
pub fn check_meta(
    meta: &Metainfo,
    dir: &Path,
    threads: usize,
    opts: crate::storage::StorageOptions,
) -> anyhow::Result<(u32, u32)> {
    if !dir.is_dir() {
        bail!("{}: no such directory", dir.display());
    }
    let storage = Storage::for_torrent(meta, dir, opts)?;
    let n = meta.piece_count();
    let have = check_pieces(
        &storage,
        meta.geometry(),
        &meta.hashes(),
        threads,
        &AtomicU32::new(0),
        &AtomicBool::new(false),
    );
    Ok((have.count(), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_counts_web_seeds_beside_peers() {
        let mut r = TorrentRow {
            state: TorrentState::Downloading,
            size: 100,
            done: 50,
            pieces_total: 2,
            ..TorrentRow::default()
        };
        assert!(
            progress_line(&r).contains("peers 0 (0 seeds)  ETA"),
            "{}",
            progress_line(&r)
        );
        r.web_seeds = 1;
        assert!(progress_line(&r).contains("peers 0 (0 seeds) + 1 web seed  ETA"));
        r.web_seeds = 2;
        assert!(progress_line(&r).contains("+ 2 web seeds  ETA"));
    }

    #[test]
    fn command_line_hints_never_say_resume_and_the_guard_is_told_from_a_users_pause() {
        use crate::api::TorrentErrorKind as K;
        for kind in [
            K::NoSpace,
            K::PermissionDenied,
            K::ReadOnly,
            K::FilesMissing,
            K::Storage,
            K::FolderNotCreated,
            K::BadMetadata,
            K::Internal,
        ] {
            let hint = cli_hint(kind);
            assert!(!hint.contains("resum"), "{kind:?}: {hint}");
            assert!(!hint.is_empty());
        }
        let guarded = TorrentRow {
            state: TorrentState::Paused,
            message: Some("paused: only 1 MiB free on the volume of /d".into()),
            paused_by: Some(PauseCause::DiskGuard(
                "only 1 MiB free on the volume of /d".into(),
            )),
            ..TorrentRow::default()
        };
        assert_eq!(
            guard_reason(&guarded),
            Some("only 1 MiB free on the volume of /d")
        );
        // the text of the message is not what counts: a tracker's or the user's words
        // that happen to start the same way are no guard pause
        let lookalike = TorrentRow {
            paused_by: None,
            ..guarded.clone()
        };
        assert_eq!(guard_reason(&lookalike), None);
        let reworded = TorrentRow {
            message: Some("held: low disk space".into()),
            ..guarded.clone()
        };
        assert_eq!(
            guard_reason(&reworded),
            Some("only 1 MiB free on the volume of /d"),
            "the typed cause, whatever the message says"
        );
        let plain = TorrentRow {
            state: TorrentState::Downloading,
            message: None,
            paused_by: None,
            ..guarded
        };
        assert_eq!(guard_reason(&plain), None);
    }

    #[test]
    fn seeding_line_sums_rates_totals_and_gives_the_all_time_ratio() {
        let a = TorrentRow {
            size: 1 << 30,
            uploaded: 3 << 29,
            up_rate: 2 << 20,
            peers: 3,
            ..TorrentRow::default()
        };
        let b = TorrentRow {
            size: 1 << 30,
            uploaded: 1 << 29,
            up_rate: 1 << 20,
            peers: 1,
            ..TorrentRow::default()
        };
        let line = seeding_line(&[&a, &b]);
        assert!(line.starts_with("seeding 2 torrents"), "{line}");
        assert!(
            line.contains("ratio 1.00") && line.contains("peers 4"),
            "{line}"
        );
        assert!(
            line.contains("3.00 MiB/s") && line.contains("2.00 GiB"),
            "{line}"
        );
        let one = seeding_line(&[&TorrentRow::default()]);
        assert!(
            one.starts_with("seeding 1 torrent ") && one.contains("ratio 0.00"),
            "{one}"
        );
        // downloaded, then seeded: uploaded over downloaded, as the TUI shows
        let fetched = TorrentRow {
            size: 1 << 30,
            downloaded: 1 << 29,
            uploaded: 3 << 29,
            ..TorrentRow::default()
        };
        let line = seeding_line(&[&fetched]);
        assert!(line.contains("ratio 3.00"), "{line}");
        assert_eq!(fetched.ratio(), Some(3.0));
    }
}
