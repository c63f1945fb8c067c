//! What a process costs, from `/proc`: memory peaks sampled in the background, context
//! switches and CPU ticks for idle measurements, and a liveness check.
//!
//! - [`MemSampler`]: `VmRSS` and `RssAnon` of `/proc/PID/status` every 50 ms on a thread;
//!   peaks (and when they happened) readable at any time.
//! - [`ctx_switches`]: voluntary + nonvoluntary context switches summed over
//!   `/proc/PID/task/*/status` (threads that end between two readings take their counts with
//!   them, so a difference is a lower bound when threads come and go; [`CtxSwitches::threads`]
//!   says how many were seen).
//! - [`cpu_ticks`]: utime + stime of `/proc/PID/stat` (whole thread group, exited threads
//!   included), in clock ticks of [`clk_tck`] per second.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Sampling period of [`MemSampler`].
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(50);

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `RssAnon`, ...), in KiB.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_field(&text, field)
}

fn status_field(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// `(VmRSS, RssAnon)` of `pid`, KiB; `None` once the process is gone (or a zombie).
pub fn mem_kib(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some((
        status_field(&text, "VmRSS")?,
        status_field(&text, "RssAnon")?,
    ))
}

/// Peaks seen by a [`MemSampler`].
#[derive(Debug, Clone, Copy, Default)]
pub struct MemStats {
    /// Samples taken (the process was readable).
    pub samples: u64,
    /// Highest `VmRSS`, KiB.
    pub peak_rss_kib: u64,
    /// Highest `RssAnon`, KiB.
    pub peak_anon_kib: u64,
    /// When the `RssAnon` peak was seen, since the sampler started.
    pub peak_anon_at: Duration,
    /// Last `VmRSS`, KiB.
    pub last_rss_kib: u64,
    /// Last `RssAnon`, KiB.
    pub last_anon_kib: u64,
    /// How long the sampler has run.
    pub elapsed: Duration,
    /// The sampler SIGKILLed the process because `RssAnon` passed its safety limit.
    pub killed_at_limit: bool,
}

impl MemStats {
    /// `RssAnon` peak in MiB.
    pub fn peak_anon_mib(&self) -> f64 {
        self.peak_anon_kib as f64 / 1024.0
    }

    /// `VmRSS` peak in MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        self.peak_rss_kib as f64 / 1024.0
    }
}

impl std::fmt::Display for MemStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "peak RssAnon {:.1} MiB (at {:.1} s), peak VmRSS {:.1} MiB, last RssAnon {:.1} MiB, \
             last VmRSS {:.1} MiB; {} samples over {:.1} s",
            self.peak_anon_mib(),
            self.peak_anon_at.as_secs_f64(),
            self.peak_rss_mib(),
            self.last_anon_kib as f64 / 1024.0,
            self.last_rss_kib as f64 / 1024.0,
            self.samples,
            self.elapsed.as_secs_f64()
        )?;
        if self.killed_at_limit {
            f.write_str("; KILLED by the sampler at its safety limit")?;
        }
        Ok(())
    }
}

/// Samples a process's memory every [`SAMPLE_PERIOD`] until stopped (or dropped).
pub struct MemSampler {
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<MemStats>>,
    thread: Option<JoinHandle<()>>,
}

impl MemSampler {
    /// Start sampling `pid`.
    pub fn start(pid: u32) -> MemSampler {
        MemSampler::start_with_limit(pid, None)
    }

    /// Start sampling `pid`; SIGKILL it if its `RssAnon` passes `limit_kib` (protects the
    /// machine from a runaway process under test). `pid` must be our unreaped child.
    pub fn start_with_limit(pid: u32, limit_kib: Option<u64>) -> MemSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(MemStats::default()));
        let thread = {
            let (stop, stats) = (Arc::clone(&stop), Arc::clone(&stats));
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    let m = mem_kib(pid);
                    {
                        let mut s = stats.lock().unwrap_or_else(|e| e.into_inner());
                        s.elapsed = t0.elapsed();
                        if let Some((rss, anon)) = m {
                            s.samples += 1;
                            s.last_rss_kib = rss;
                            s.last_anon_kib = anon;
                            s.peak_rss_kib = s.peak_rss_kib.max(rss);
                            if anon > s.peak_anon_kib {
                                s.peak_anon_kib = anon;
                                s.peak_anon_at = t0.elapsed();
                            }
                            if limit_kib.is_some_and(|l| anon > l) && !s.killed_at_limit {
                                s.killed_at_limit = true;
                                if let Ok(p) = libc::pid_t::try_from(pid) {
                                    // SAFETY: kill(2) on the caller's unreaped child.
                                    unsafe {
                                        libc::kill(p, libc::SIGKILL);
                                    }
                                }
                            }
                        }
                    }
                    std::thread::sleep(SAMPLE_PERIOD);
                }
            })
        };
        MemSampler {
            stop,
            stats,
            thread: Some(thread),
        }
    }

    /// The figures so far.
    pub fn stats(&self) -> MemStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop sampling; the final figures.
    pub fn stop(&mut self) -> MemStats {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.stats()
    }
}

impl Drop for MemSampler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Context switches of a whole process at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct CtxSwitches {
    /// Sum of `voluntary_ctxt_switches` over the threads.
    pub voluntary: u64,
    /// Sum of `nonvoluntary_ctxt_switches` over the threads.
    pub nonvoluntary: u64,
    /// Threads read.
    pub threads: usize,
}

impl CtxSwitches {
    /// voluntary + nonvoluntary.
    pub fn total(&self) -> u64 {
        self.voluntary + self.nonvoluntary
    }
}

/// Context switches of `pid`, summed over `/proc/PID/task/*/status`.
///
/// # Errors
/// When the task folder cannot be listed (process gone).
pub fn ctx_switches(pid: u32) -> io::Result<CtxSwitches> {
    let mut c = CtxSwitches::default();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = entry?.path().join("status");
        // a thread may end between listing and reading
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        c.voluntary += status_field(&text, "voluntary_ctxt_switches").unwrap_or(0);
        c.nonvoluntary += status_field(&text, "nonvoluntary_ctxt_switches").unwrap_or(0);
        c.threads += 1;
    }
    Ok(c)
}

/// The fields of `/proc/PID/stat` after the `(comm)` field: index 0 is field 3 (state).
fn stat_fields(pid: u32) -> io::Result<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| io::Error::other(format!("unexpected /proc/{pid}/stat: {text:?}")))?;
    Ok(rest.split_whitespace().map(str::to_owned).collect())
}

/// utime + stime of `pid` (all threads), clock ticks.
///
/// # Errors
/// When `/proc/PID/stat` cannot be read or parsed.
pub fn cpu_ticks(pid: u32) -> io::Result<u64> {
    let f = stat_fields(pid)?;
    // utime is field 14, stime field 15 → indices 11 and 12 here
    let get = |i: usize| -> io::Result<u64> {
        f.get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| io::Error::other(format!("/proc/{pid}/stat: no field {}", i + 3)))
    };
    Ok(get(11)? + get(12)?)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, usually 100).
pub fn clk_tck() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0).unwrap_or(100)
}

/// Threads of `pid` now (`Threads:` of its status).
pub fn thread_count(pid: u32) -> Option<u64> {
    status_kib(pid, "Threads")
}

/// The process exists and has not exited (a zombie, exited but not reaped, counts as dead).
pub fn is_alive(pid: u32) -> bool {
    match stat_fields(pid) {
        Ok(f) => !matches!(f.first().map(String::as_str), Some("Z" | "X" | "x")),
        Err(_) => false,
    }
}
