//! Rate limiting (token bucket with debt) and rate measurement.

use crate::lock::MutexExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A session-wide limit in bytes/s shared by every peer task. Callers report bytes after
/// moving them and sleep off any debt, which throttles the socket through TCP backpressure.
/// A rate of 0 means unlimited and costs one atomic load.
#[derive(Debug)]
pub struct RateLimiter {
    rate: AtomicU64,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// A limiter at `rate` bytes/s (0 = unlimited).
    pub fn new(rate: u64) -> RateLimiter {
        RateLimiter {
            rate: AtomicU64::new(rate),
            bucket: Mutex::new(Bucket {
                tokens: f64::INFINITY, // starts full: clamped to the burst on first use
                last: Instant::now(),
            }),
        }
    }

    /// The limit in bytes/s (0 = unlimited).
    pub fn rate(&self) -> u64 {
        self.rate.load(Ordering::Relaxed)
    }

    /// Change the limit, bytes/s (0 = unlimited).
    pub fn set_rate(&self, rate: u64) {
        self.rate.store(rate, Ordering::Relaxed);
    }

    /// How long to wait after moving `bytes` (zero when under the limit). Bursts up to a
    /// quarter second of the rate pass without waiting.
    pub fn debit(&self, bytes: u64) -> Duration {
        let rate = self.rate();
        if rate == 0 {
            return Duration::ZERO;
        }
        let rate = rate as f64;
        let mut b = self.bucket.locked();
        let now = Instant::now();
        let burst = (rate / 4.0).max(16_384.0);
        b.tokens = (b.tokens + now.duration_since(b.last).as_secs_f64() * rate).min(burst);
        b.last = now;
        b.tokens -= bytes as f64;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.tokens / rate)
        }
    }

    /// Report `bytes` moved and sleep off the debt, if any.
    pub async fn consume(&self, bytes: u64) {
        let wait = self.debit(bytes);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The tighter of two limits in bytes/s (0 = unlimited), e.g. the session's and a
/// torrent's.
pub fn tighter(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

/// Debit `bytes` from both limiters; the wait is the longer of the two.
pub fn debit_both(a: &RateLimiter, b: &RateLimiter, bytes: u64) -> Duration {
    a.debit(bytes).max(b.debit(bytes))
}

/// Turns a monotonically growing byte counter into a rate (bytes/s): the average over the
/// last [`RateMeter::WINDOW`], sampled by the caller at its own pace. Unlike a moving
/// average it reads exactly 0 once nothing has moved for a whole window.
#[derive(Debug, Clone, Default)]
pub struct RateMeter {
    samples: std::collections::VecDeque<(Instant, u64)>,
    rate: u64,
}

impl RateMeter {
    /// Span the rate is averaged over.
    pub const WINDOW: Duration = Duration::from_secs(3);

    /// Feed the counter's current value; returns the rate in bytes/s.
    pub fn sample(&mut self, total: u64, now: Instant) -> u64 {
        self.samples.push_back((now, total));
        // keep one sample at least WINDOW old as the baseline
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= Self::WINDOW {
            self.samples.pop_front();
        }
        if let Some(&(t0, b0)) = self.samples.front() {
            let dt = now.duration_since(t0).as_secs_f64();
            if dt >= 0.2 {
                self.rate = (total.saturating_sub(b0) as f64 / dt) as u64;
            }
        }
        self.rate
    }

    /// The last computed rate, bytes/s.
    pub fn rate(&self) -> u64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_never_waits() {
        let l = RateLimiter::new(0);
        for _ in 0..1000 {
            assert_eq!(l.debit(1 << 20), Duration::ZERO);
        }
    }

    #[test]
    fn debt_turns_into_wait_proportional_to_rate() {
        let l = RateLimiter::new(1_000_000);
        // burst allowance is 250 kB; 1.25 MB more must wait ~1 s
        let w = l.debit(1_500_000);
        assert!(
            w > Duration::from_millis(1100) && w < Duration::from_millis(1300),
            "{w:?}"
        );
        l.set_rate(0);
        assert_eq!(l.debit(10), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn consume_holds_a_stream_to_the_rate() {
        let l = RateLimiter::new(100_000);
        let start = tokio::time::Instant::now();
        for _ in 0..50 {
            l.consume(10_000).await; // 500 kB at 100 kB/s ≈ 5 s minus the burst
        }
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(4500), "{took:?}");
    }

    #[test]
    fn the_tighter_limit_wins() {
        assert_eq!(tighter(0, 0), 0);
        assert_eq!(tighter(0, 5), 5);
        assert_eq!(tighter(7, 0), 7);
        assert_eq!(tighter(7, 5), 5);
        let a = RateLimiter::new(0);
        let b = RateLimiter::new(100_000);
        let w = debit_both(&a, &b, 125_000);
        assert!(w >= Duration::from_millis(900), "{w:?}");
    }

    #[test]
    fn meter_converges() {
        let mut m = RateMeter::default();
        let t0 = Instant::now();
        let mut total = 0;
        for i in 1..=40 {
            total += 500_000; // 1 MB/s in 0.5 s steps
            m.sample(total, t0 + Duration::from_millis(500 * i));
        }
        let r = m.rate();
        assert!((990_000..=1_010_000).contains(&r), "{r}");
        // transfer stops: exactly zero once a whole window has passed without bytes
        for i in 41..=45 {
            m.sample(total, t0 + Duration::from_millis(500 * i));
        }
        assert!(m.rate() > 0, "still inside the window");
        for i in 46..=47 {
            m.sample(total, t0 + Duration::from_millis(500 * i));
        }
        assert_eq!(m.rate(), 0);
    }
}
