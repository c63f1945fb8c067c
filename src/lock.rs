//! Poison-tolerant locking: the one way the crate takes a `std::sync` lock.
//!
//! A lock is poisoned when a thread panicked while holding it. Every lock in ratorrent
//! guards data that is consistent between statements (a counter, a cache of handles, a map of
//! endpoints, a picker): a panic leaves it as the last completed statement did, and going on
//! with it is better than turning one panic into a panic of every thread that takes the lock
//! afterwards (the engine, the disk threads, the DHT). So a poisoned lock is taken anyway.
//!
//! ```
//! use std::sync::Mutex;
//! use ratorrent::lock::MutexExt;
//!
//! let count = Mutex::new(0u32);
//! *count.locked() += 1;
//! assert_eq!(*count.locked(), 1);
//! ```

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`] that takes a poisoned lock anyway (see the module documentation).
pub trait MutexExt<T: ?Sized> {
    /// The guard, whether or not another thread panicked while holding the lock. Blocks like
    /// [`Mutex::lock`].
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> MutexExt<T> for Mutex<T> {
    #[inline]
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// [`RwLock::read`] and [`RwLock::write`] that take a poisoned lock anyway.
pub trait RwLockExt<T: ?Sized> {
    /// A shared guard, whether or not the lock is poisoned. Blocks like [`RwLock::read`].
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    /// The exclusive guard, whether or not the lock is poisoned. Blocks like
    /// [`RwLock::write`].
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLockExt<T> for RwLock<T> {
    #[inline]
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_is_taken_with_its_last_value() {
        let m = Mutex::new(vec![1]);
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = m.lock().unwrap();
                g.push(2);
                panic!("while holding the lock");
            })
            .join()
        });
        assert!(r.is_err() && m.is_poisoned());
        assert_eq!(*m.locked(), vec![1, 2]);
        m.locked().push(3);
        assert_eq!(*m.locked(), vec![1, 2, 3]);
    }

    #[test]
    fn a_poisoned_rwlock_is_read_and_written() {
        let l = RwLock::new(5u32);
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = l.write().unwrap();
                *g = 6;
                panic!("while holding the lock");
            })
            .join()
        });
        assert!(r.is_err() && l.is_poisoned());
        assert_eq!(*l.read_locked(), 6);
        *l.write_locked() += 1;
        assert_eq!(*l.read_locked(), 7);
        // two readers at once
        let (a, b) = (l.read_locked(), l.read_locked());
        assert_eq!(*a + *b, 14);
    }
}
