//! The session's monotonic clock in milliseconds: one `u64` that connections store in
//! atomics ([`super::peer::PeerInfo`]'s `last_recv`, `last_send`, ...) and the torrent
//! compares, without an `Instant` per field.

use std::time::Instant;

/// Milliseconds on the session's monotonic clock (since the session started).
pub type Millis = u64;

/// The session's monotonic clock, cheap to read from any task.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Clock {
        Clock {
            epoch: Instant::now(),
        }
    }

    /// Now, in ms since the epoch.
    #[inline]
    pub fn now_ms(&self) -> Millis {
        self.epoch.elapsed().as_millis() as Millis
    }

    /// `at` in ms since the epoch (0 before it).
    pub fn ms_of(&self, at: Instant) -> Millis {
        at.saturating_duration_since(self.epoch).as_millis() as Millis
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_instant_before_the_epoch_is_zero() {
        let before = Instant::now();
        let clock = Clock::new();
        assert_eq!(clock.ms_of(before), 0);
    }

    #[test]
    fn ms_of_counts_from_the_epoch() {
        let clock = Clock::new();
        let later = clock.epoch + Duration::from_millis(1_500);
        assert_eq!(clock.ms_of(later), 1_500);
    }

    #[test]
    fn now_never_goes_back_and_follows_time() {
        let clock = Clock::new();
        let a = clock.now_ms();
        std::thread::sleep(Duration::from_millis(20));
        let b = clock.now_ms();
        assert!(b >= a + 20, "{a} then {b}");
    }
}
