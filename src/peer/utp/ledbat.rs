//! LEDBAT congestion control (RFC 6817, as uTP uses it: BEP 29 and libtorrent): the
//! congestion window grows while the one-way queuing delay our packets see stays under a
//! target (100 ms) and shrinks when it goes over, so a uTP transfer fills an idle line but
//! yields to TCP and interactive traffic sharing a queued one.
//!
//! - **Delay samples**: each ACK carries the receiver's last one-way delay measurement of our
//!   packets (`timestamp_difference_microseconds`, their clock minus ours: only differences
//!   of samples mean anything). The current delay is the least of the last
//!   [`CURRENT_FILTER`] samples (noise filter).
//! - **Base delay**: the least sample in each of the last [`BASE_HISTORY`] one-minute
//!   buckets; their minimum is the delay of an empty queue. A sample below it moves it at
//!   once.
//! - **Clock drift**: the two clocks may run at different rates, so the samples drift by
//!   up to ~100 µs a second; keeping only minutes of history (not the hours a base delay
//!   could otherwise keep) bounds the error the drift adds to the queuing delay (under
//!   20 ms at 100 ppm over 3 minutes), and a remote clock that runs slow only lowers the
//!   base. All arithmetic on timestamps wraps (they are 32-bit µs counters).
//! - **Window**: under the target, `cwnd += MAX_GAIN × off_target × acked / cwnd` with
//!   `off_target = (TARGET − queuing delay) / TARGET`, so at most [`MAX_GAIN`] bytes a
//!   round trip (libtorrent's gain). Over the target the window shrinks multiplicatively,
//!   as LEDBAT++ does (`cwnd −= (delay / TARGET − 1) × acked`, at most half a window a
//!   round trip): RFC 6817's additive decrease of a few KB a round trip takes minutes to
//!   give a TCP flow its share when the window is hundreds of KB. Slow start (the window grows by the bytes
//!   acked) until the queuing delay reaches half the target, a loss, or `ssthresh`. A loss
//!   halves the window (BEP 29's loss factor 0.5) at most once a round trip; a timeout
//!   drops it to one packet. The window grows only while it is in use (not when the
//!   application had less to send).

/// Target queuing delay, µs (BEP 29: 100 ms).
pub const TARGET_US: u32 = 100_000;
/// Most bytes the window moves in one round trip through the delay term (libtorrent's
/// `utp_gain_factor`).
pub const MAX_GAIN: f64 = 3000.0;
/// One-minute buckets of base delay kept.
pub const BASE_HISTORY: usize = 3;
/// Samples the current delay is the least of.
pub const CURRENT_FILTER: usize = 3;
/// Milliseconds per base delay bucket.
const BUCKET_MS: u64 = 60_000;
/// The window never exceeds this many bytes.
pub const MAX_CWND: u32 = 16 << 20;

/// One connection's LEDBAT state. Times in ms on the socket's clock, delays in µs,
/// windows in bytes.
#[derive(Debug, Clone)]
pub struct Ledbat {
    cwnd: f64,
    ssthresh: f64,
    slow_start: bool,
    /// Bytes in a full packet (the window's least and its unit).
    mss: u32,
    /// Least sample of each bucket, newest last, and when the newest began.
    base: [Option<u32>; BASE_HISTORY],
    bucket_start: u64,
    /// Last samples, ring.
    current: [Option<u32>; CURRENT_FILTER],
    current_at: usize,
    /// No loss cuts the window again before this time (one cut per round trip).
    cut_until: u64,
}

/// Delay `a` is less than `b` (wrapping µs).
fn delay_less(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl Ledbat {
    /// A connection's controller: two packets' window, in slow start.
    pub fn new(mss: u32, now_ms: u64) -> Ledbat {
        Ledbat {
            cwnd: f64::from(2 * mss),
            ssthresh: f64::from(MAX_CWND),
            slow_start: true,
            mss,
            base: [None; BASE_HISTORY],
            bucket_start: now_ms,
            current: [None; CURRENT_FILTER],
            current_at: 0,
            cut_until: 0,
        }
    }

    /// The congestion window, bytes.
    pub fn window(&self) -> u32 {
        self.cwnd as u32
    }

    /// Still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The base delay now (µs on the remote's clock minus ours), if any sample came.
    pub fn base_delay(&self) -> Option<u32> {
        self.base
            .iter()
            .flatten()
            .copied()
            .reduce(|a, b| if delay_less(b, a) { b } else { a })
    }

    /// The queuing delay now, µs: the current delay over the base.
    pub fn queuing_delay(&self) -> Option<u32> {
        let base = self.base_delay()?;
        let cur = self
            .current
            .iter()
            .flatten()
            .copied()
            .reduce(|a, b| if delay_less(b, a) { b } else { a })?;
        Some(if delay_less(cur, base) {
            0
        } else {
            cur.wrapping_sub(base)
        })
    }

    /// Record a delay sample (an ACK's `timestamp_difference_microseconds`; 0 = none).
    pub fn sample(&mut self, now_ms: u64, delay_us: u32) {
        if delay_us == 0 {
            return;
        }
        let elapsed = now_ms.saturating_sub(self.bucket_start);
        if elapsed >= BUCKET_MS * BASE_HISTORY as u64 {
            // silent for the whole history: start again
            self.base = [None; BASE_HISTORY];
            self.bucket_start = now_ms;
        } else {
            for _ in 0..elapsed / BUCKET_MS {
                // a new minute: drop the oldest bucket
                self.base.rotate_left(1);
                self.base[BASE_HISTORY - 1] = None;
                self.bucket_start += BUCKET_MS;
            }
        }
        let newest = &mut self.base[BASE_HISTORY - 1];
        if newest.is_none_or(|b| delay_less(delay_us, b)) {
            *newest = Some(delay_us);
        }
        self.current[self.current_at] = Some(delay_us);
        self.current_at = (self.current_at + 1) % CURRENT_FILTER;
    }

    /// `acked` bytes were acknowledged with `flight` bytes in flight before the ACK.
    pub fn on_ack(&mut self, acked: u32, flight: u32) {
        if acked == 0 {
            return;
        }
        // grow only a window in use
        let limited = f64::from(flight) + f64::from(self.mss) < self.cwnd;
        let qd = self.queuing_delay().unwrap_or(0);
        let target = f64::from(TARGET_US);
        let ledbat = if qd <= TARGET_US {
            MAX_GAIN * (target - f64::from(qd)) / target * f64::from(acked) / self.cwnd
        } else {
            -((f64::from(qd) / target - 1.0).min(0.5)) * f64::from(acked)
        };
        let mut next = self.cwnd + ledbat;
        if self.slow_start {
            if qd > TARGET_US / 2 || self.cwnd >= self.ssthresh {
                self.slow_start = false;
            } else if !limited {
                next = next.max(self.cwnd + f64::from(acked));
            }
        }
        if limited && next > self.cwnd {
            return;
        }
        self.cwnd = next.clamp(f64::from(self.mss), f64::from(MAX_CWND));
    }

    /// A packet was lost (fast retransmit): halve the window, once per round trip
    /// (`rtt_ms`).
    pub fn on_loss(&mut self, now_ms: u64, rtt_ms: u64) {
        if now_ms < self.cut_until {
            return;
        }
        self.cut_until = now_ms + rtt_ms.max(1);
        self.cwnd = (self.cwnd * 0.5).max(f64::from(self.mss));
        self.ssthresh = self.cwnd;
        self.slow_start = false;
    }

    /// The retransmission timer fired: one packet's window, slow start up to half the
    /// old window.
    pub fn on_timeout(&mut self) {
        self.ssthresh = (self.cwnd * 0.5).max(f64::from(2 * self.mss));
        self.cwnd = f64::from(self.mss);
        self.slow_start = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1400;

    /// A controller past slow start at `cwnd` bytes with a base delay of `base` µs.
    fn steady(cwnd: u32, base: u32) -> Ledbat {
        let mut l = Ledbat::new(MSS, 0);
        l.slow_start = false;
        l.cwnd = f64::from(cwnd);
        for _ in 0..CURRENT_FILTER {
            l.sample(0, base);
        }
        l
    }

    #[test]
    fn under_target_the_window_grows_by_at_most_the_gain_a_round_trip() {
        let mut l = steady(100_000, 5_000);
        // a round trip's worth of ACKs with no queuing delay
        let mut acked = 0;
        while acked < 100_000 {
            l.on_ack(MSS, l.window());
            acked += MSS;
        }
        let grown = l.window() - 100_000;
        assert!((2500..=3100).contains(&grown), "grew {grown}");
    }

    #[test]
    fn over_target_the_window_shrinks_by_the_excess_a_round_trip() {
        let mut l = steady(100_000, 5_000);
        // 125 ms of queuing: a quarter over the target
        for _ in 0..CURRENT_FILTER {
            l.sample(10, 130_000);
        }
        assert_eq!(l.queuing_delay(), Some(125_000));
        // a round trip's worth of ACKs (about 100 KB)
        for _ in 0..72 {
            l.on_ack(MSS, 100_000);
        }
        let w = l.window();
        assert!((74_000..=76_000).contains(&w), "window {w}");
        // far over: at most half a window a round trip
        let mut l = steady(100_000, 5_000);
        for _ in 0..CURRENT_FILTER {
            l.sample(10, 1_005_000);
        }
        for _ in 0..36 {
            l.on_ack(MSS, 100_000);
        }
        let w = l.window();
        assert!((74_000..=76_000).contains(&w), "window {w}");
    }

    #[test]
    fn at_target_the_window_holds() {
        let mut l = steady(50_000, 1_000);
        for _ in 0..CURRENT_FILTER {
            l.sample(10, 101_000);
        }
        for _ in 0..100 {
            l.on_ack(MSS, 50_000);
        }
        assert!((49_990..=50_010).contains(&l.window()));
    }

    #[test]
    fn slow_start_doubles_until_half_the_target() {
        let mut l = Ledbat::new(MSS, 0);
        l.sample(0, 1_000);
        let w0 = l.window();
        l.on_ack(w0, w0);
        assert!(l.window() >= 2 * w0, "{} < {}", l.window(), 2 * w0);
        assert!(l.in_slow_start());
        for _ in 0..CURRENT_FILTER {
            l.sample(1, 1_000 + TARGET_US / 2 + 1);
        }
        l.on_ack(MSS, l.window());
        assert!(!l.in_slow_start());
    }

    #[test]
    fn an_idle_window_does_not_grow() {
        let mut l = steady(100_000, 5_000);
        for _ in 0..100 {
            l.on_ack(MSS, 10_000);
        }
        assert_eq!(l.window(), 100_000);
    }

    #[test]
    fn a_loss_halves_once_a_round_trip_and_a_timeout_resets() {
        let mut l = steady(100_000, 5_000);
        l.on_loss(1000, 50);
        assert_eq!(l.window(), 50_000);
        l.on_loss(1020, 50);
        assert_eq!(l.window(), 50_000, "same round trip");
        l.on_loss(1051, 50);
        assert_eq!(l.window(), 25_000);
        l.on_timeout();
        assert_eq!(l.window(), MSS);
        assert!(l.in_slow_start());
    }

    #[test]
    fn the_base_delay_forgets_old_minutes_and_tolerates_drift() {
        let mut l = Ledbat::new(MSS, 0);
        l.sample(0, 10_000);
        assert_eq!(l.base_delay(), Some(10_000));
        // a remote clock running fast: samples grow 6 ms a minute
        for minute in 1..=6u64 {
            l.sample(minute * 60_000, 10_000 + 6_000 * minute as u32);
        }
        // the base followed: it is the least of the last three minutes, not 10 ms
        assert_eq!(l.base_delay(), Some(10_000 + 6_000 * 4));
        // the queuing delay stays within the drift of the history, far under the target
        l.sample(6 * 60_000 + 1, 10_000 + 36_000);
        assert!(l.queuing_delay().unwrap() <= 12_000);
        // a remote clock running slow lowers the base at once
        l.sample(6 * 60_000 + 2, 1_000);
        assert_eq!(l.base_delay(), Some(1_000));
    }

    #[test]
    fn delays_wrap_around_the_32_bit_clock() {
        let mut l = Ledbat::new(MSS, 0);
        for _ in 0..CURRENT_FILTER {
            l.sample(0, u32::MAX - 1_000);
        }
        l.sample(1, 4_000); // 5,001 µs later, past the wrap
        assert_eq!(l.base_delay(), Some(u32::MAX - 1_000));
        for _ in 0..CURRENT_FILTER {
            l.sample(2, 4_000);
        }
        assert_eq!(l.queuing_delay(), Some(5_001));
    }

    #[test]
    fn after_a_long_silence_the_history_starts_again() {
        let mut l = Ledbat::new(MSS, 0);
        l.sample(0, 10_000);
        l.sample(3_600_000, 50_000);
        assert_eq!(l.base_delay(), Some(50_000));
    }
}
