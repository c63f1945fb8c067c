//! Real file-system conditions for tests (root only, as in CI): a small tmpfs that fills
//! up, a read-only bind mount, remounts to "fix" them.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A mount that is detached when dropped (also when the test panics).
pub struct Mount(PathBuf);

impl Mount {
    pub fn call(
        source: &str,
        target: &Path,
        fstype: Option<&str>,
        flags: libc::c_ulong,
        data: Option<&str>,
    ) {
        let c = |s: &str| CString::new(s).unwrap();
        let src = c(source);
        let tgt = CString::new(target.as_os_str().as_bytes()).unwrap();
        let fs = fstype.map(c);
        let data = data.map(c);
        // SAFETY: every pointer is a valid NUL-terminated string or null, alive for the call.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                tgt.as_ptr(),
                fs.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
                flags,
                data.as_ref()
                    .map_or(std::ptr::null(), |s| s.as_ptr().cast()),
            )
        };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            panic!(
                "mount {source} on {} failed: {err}. This test needs root (CAP_SYS_ADMIN) to \
                 mount a file system; CI runs it as root",
                target.display()
            );
        }
    }

    /// A tmpfs of `size` (mount option syntax, e.g. "1m") at `at`.
    pub fn tmpfs(at: &Path, size: &str) -> Mount {
        Mount::call("tmpfs", at, Some("tmpfs"), 0, Some(&format!("size={size}")));
        Mount(at.to_path_buf())
    }

    /// `from` bind-mounted read-only at `at`.
    pub fn read_only_bind(from: &Path, at: &Path) -> Mount {
        Mount::call(&from.to_string_lossy(), at, None, libc::MS_BIND, None);
        let m = Mount(at.to_path_buf());
        Mount::call(
            "none",
            at,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
            None,
        );
        m
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let p = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) };
    }
}

impl Mount {
    /// Grow or shrink a tmpfs mounted by [`Mount::tmpfs`].
    pub fn resize_tmpfs(&self, size: &str) {
        Mount::call(
            "tmpfs",
            &self.0,
            Some("tmpfs"),
            libc::MS_REMOUNT,
            Some(&format!("size={size}")),
        );
    }

    /// Make a read-only bind mount writable again.
    pub fn make_writable(&self) {
        Mount::call(
            "none",
            &self.0,
            None,
            libc::MS_BIND | libc::MS_REMOUNT,
            None,
        );
    }
}
