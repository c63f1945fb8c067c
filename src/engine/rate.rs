//! Rate limiting (token bucket with debt) and rate measurement.

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
        let mut b = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
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

/// Turns a monotonically growing byte counter into a smoothed rate (bytes/s), sampled by
/// the caller at its own pace. Exponential moving average with a ~2 s time constant.
#[derive(Debug, Clone)]
pub struct RateMeter {
    last_total: u64,
    last_at: Option<Instant>,
    rate: f64,
}

impl Default for RateMeter {
    fn default() -> Self {
        RateMeter {
            last_total: 0,
            last_at: None,
            rate: 0.0,
        }
    }
}

impl RateMeter {
    /// Feed the counter's current value; returns the smoothed rate in bytes/s.
    pub fn sample(&mut self, total: u64, now: Instant) -> u64 {
        if let Some(at) = self.last_at {
            let dt = now.duration_since(at).as_secs_f64();
            if dt > 0.0 {
                let inst = total.saturating_sub(self.last_total) as f64 / dt;
                let alpha = 1.0 - (-dt / 2.0).exp();
                self.rate += alpha * (inst - self.rate);
                if self.rate < 1.0 {
                    self.rate = 0.0;
                }
            }
        }
        self.last_total = total;
        self.last_at = Some(now);
        self.rate as u64
    }

    /// The last computed rate, bytes/s.
    pub fn rate(&self) -> u64 {
        self.rate as u64
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
    fn meter_converges() {
        let mut m = RateMeter::default();
        let t0 = Instant::now();
        let mut total = 0;
        for i in 1..=40 {
            total += 500_000; // 1 MB/s in 0.5 s steps
            m.sample(total, t0 + Duration::from_millis(500 * i));
        }
        let r = m.rate();
        assert!((950_000..=1_050_000).contains(&r), "{r}");
        for i in 41..=80 {
            m.sample(total, t0 + Duration::from_millis(500 * i));
        }
        assert!(m.rate() < 1000);
    }
}
