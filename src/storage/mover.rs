//! Moving a torrent's payload to another folder, also across file systems: each file is
//! renamed when source and target share a file system; otherwise copied, its size checked,
//! and the source deleted only once every file is in place. On any failure the target is
//! left as it was (what was moved is moved back, copies are deleted) and the source is
//! untouched, so a failed move never leaves half the data in each place.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a move failed (nothing was left behind at the target).
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// A file of the torrent is already at the target (it is not overwritten).
    #[error("{0} already exists; not overwriting it")]
    Exists(PathBuf),
    /// A file of the torrent is missing at the source but a file is at its path at the
    /// target: moving would leave the torrent pointed at data it never verified there and
    /// later write over it, so the move is refused. Pointing the torrent there without
    /// moving ("set location") checks that data instead.
    #[error(
        "{0} already exists; not overwriting it (to use the data there, move without moving the files: it is checked)"
    )]
    ExistsUnverified(PathBuf),
    /// Reading, writing or renaming failed.
    #[error("{op} {path}: {error}")]
    Io {
        /// What we were doing.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: io::Error,
    },
    /// A copy came out with another size than its source.
    #[error("{path}: copied {got} bytes of {want}")]
    ShortCopy {
        /// The copy.
        path: PathBuf,
        /// Bytes copied.
        got: u64,
        /// Bytes in the source.
        want: u64,
    },
}

fn io_err(op: &'static str, path: &Path, error: io::Error) -> MoveError {
    MoveError::Io {
        op,
        path: path.to_path_buf(),
        error,
    }
}

/// Move the files `rel` (relative paths) that exist under `from` to the same paths under
/// `to`; missing files are skipped. `progress` counts bytes moved. Folders the move leaves
/// empty under `from` are removed. Nothing at `to` is ever written over: a file there at
/// the path of a file present under `from` refuses the move ([`MoveError::Exists`]), and
/// so does one at the path of a file missing under `from`
/// ([`MoveError::ExistsUnverified`]: the torrent would take it for its own, unverified,
/// and download over it).
///
/// # Errors
/// [`MoveError`]; then nothing of the torrent is at `to` and everything is still at `from`.
pub fn move_payload(
    from: &Path,
    to: &Path,
    rel: &[PathBuf],
    progress: &AtomicU64,
) -> Result<(), MoveError> {
    if from == to {
        return Ok(());
    }
    let (present, missing): (Vec<&PathBuf>, Vec<&PathBuf>) = rel
        .iter()
        .partition(|r| std::fs::symlink_metadata(from.join(r)).is_ok_and(|m| m.is_file()));
    for r in &present {
        if std::fs::symlink_metadata(to.join(r)).is_ok() {
            return Err(MoveError::Exists(to.join(r)));
        }
    }
    for r in &missing {
        if std::fs::symlink_metadata(to.join(r)).is_ok() {
            return Err(MoveError::ExistsUnverified(to.join(r)));
        }
    }
    std::fs::create_dir_all(to).map_err(|e| io_err(super::error::CREATING_SAVE_FOLDER, to, e))?;
    // same file system: renames, undone if one fails
    let mut renamed: Vec<&PathBuf> = Vec::new();
    let mut cross_device = false;
    for r in &present {
        let (src, dst) = (from.join(r), to.join(r));
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err("creating", parent, e))?;
        }
        match std::fs::rename(&src, &dst) {
            Ok(()) => {
                progress.fetch_add(
                    std::fs::metadata(&dst).map_or(0, |m| m.len()),
                    Ordering::Relaxed,
                );
                renamed.push(r);
            }
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                cross_device = true;
                break;
            }
            Err(e) => {
                undo_renames(from, to, &renamed);
                return Err(io_err("moving", &src, e));
            }
        }
    }
    if cross_device {
        undo_renames(from, to, &renamed);
        copy_then_delete(from, to, &present, progress)?;
    }
    remove_empty_dirs(from, &present);
    Ok(())
}

fn undo_renames(from: &Path, to: &Path, renamed: &[&PathBuf]) {
    for r in renamed {
        let _ = std::fs::rename(to.join(r), from.join(r));
    }
    remove_empty_dirs(to, renamed);
}

fn copy_then_delete(
    from: &Path,
    to: &Path,
    files: &[&PathBuf],
    progress: &AtomicU64,
) -> Result<(), MoveError> {
    let mut copied: Vec<&PathBuf> = Vec::new();
    let fail = |copied: &[&PathBuf], e: MoveError| {
        for r in copied {
            let _ = std::fs::remove_file(to.join(r));
        }
        remove_empty_dirs(to, copied);
        Err(e)
    };
    for r in files {
        let (src, dst) = (from.join(r), to.join(r));
        if let Some(parent) = dst.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return fail(&copied, io_err("creating", parent, e));
        }
        let want = match std::fs::metadata(&src) {
            Ok(m) => m.len(),
            Err(e) => return fail(&copied, io_err("reading", &src, e)),
        };
        copied.push(r);
        let got = match copy_file(&src, &dst, progress) {
            Ok(n) => n,
            Err(e) => return fail(&copied, io_err("copying to", &dst, e)),
        };
        if got != want {
            return fail(
                &copied,
                MoveError::ShortCopy {
                    path: dst,
                    got,
                    want,
                },
            );
        }
    }
    for r in files {
        let _ = std::fs::remove_file(from.join(r));
    }
    Ok(())
}

/// Copy `src` to a new file `dst` (refusing to follow a symlink there), durably.
fn copy_file(src: &Path, dst: &Path, progress: &AtomicU64) -> io::Result<u64> {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let mut input = std::fs::File::open(src)?;
    let mut output = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dst)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        output.write_all(&buf[..n])?;
        total += n as u64;
        progress.fetch_add(n as u64, Ordering::Relaxed);
    }
    output.sync_all()?;
    Ok(total)
}

/// Remove the folders under `root` that the files `rel` lived in, deepest first, if empty.
fn remove_empty_dirs(root: &Path, rel: &[&PathBuf]) {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for r in rel {
        let mut d = r.parent();
        while let Some(p) = d {
            if p.as_os_str().is_empty() {
                break;
            }
            dirs.push(root.join(p));
            d = p.parent();
        }
    }
    dirs.sort();
    dirs.dedup();
    for d in dirs.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) -> Vec<PathBuf> {
        let files = vec![PathBuf::from("t/a.bin"), PathBuf::from("t/sub/b.bin")];
        for (i, f) in files.iter().enumerate() {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, vec![i as u8; 10_000 + i]).unwrap();
        }
        files
    }

    #[test]
    fn moves_within_a_file_system_and_cleans_up() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("from"), d.path().join("to"));
        let files = tree(&from);
        let progress = AtomicU64::new(0);
        let mut with_missing = files.clone();
        with_missing.push("t/never-downloaded".into());
        move_payload(&from, &to, &with_missing, &progress).unwrap();
        assert_eq!(
            std::fs::read(to.join("t/sub/b.bin")).unwrap(),
            vec![1u8; 10_001]
        );
        assert!(!from.join("t").exists(), "emptied folders removed");
        assert_eq!(progress.load(Ordering::Relaxed), 20_001);
    }

    #[test]
    fn an_existing_target_file_is_not_overwritten_and_nothing_moves() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("from"), d.path().join("to"));
        let files = tree(&from);
        std::fs::create_dir_all(to.join("t/sub")).unwrap();
        std::fs::write(to.join("t/sub/b.bin"), b"user data").unwrap();
        let e = move_payload(&from, &to, &files, &AtomicU64::new(0)).unwrap_err();
        assert!(matches!(e, MoveError::Exists(_)), "{e}");
        assert_eq!(std::fs::read(to.join("t/sub/b.bin")).unwrap(), b"user data");
        assert!(from.join("t/a.bin").exists() && !to.join("t/a.bin").exists());
    }

    #[test]
    fn a_file_missing_at_the_source_but_present_at_the_target_refuses_the_move() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("from"), d.path().join("to"));
        let files = tree(&from);
        // b.bin never reached the source; the user has a file of that name at the target
        std::fs::remove_file(from.join("t/sub/b.bin")).unwrap();
        std::fs::create_dir_all(to.join("t/sub")).unwrap();
        std::fs::write(to.join("t/sub/b.bin"), b"user data").unwrap();
        let progress = AtomicU64::new(0);
        let e = move_payload(&from, &to, &files, &progress).unwrap_err();
        assert!(matches!(&e, MoveError::ExistsUnverified(p) if p == &to.join("t/sub/b.bin")));
        let text = e.to_string();
        assert!(
            text.contains("already exists; not overwriting it"),
            "{text}"
        );
        assert!(text.contains("move without moving the files"), "{text}");
        assert_eq!(std::fs::read(to.join("t/sub/b.bin")).unwrap(), b"user data");
        assert!(from.join("t/a.bin").exists() && !to.join("t/a.bin").exists());
        assert_eq!(progress.load(Ordering::Relaxed), 0, "nothing moved");
    }

    #[test]
    fn nothing_at_the_source_and_nothing_at_the_target_moves_fine() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("from"), d.path().join("to"));
        let files = vec![PathBuf::from("t/a.bin")];
        std::fs::create_dir_all(&from).unwrap();
        move_payload(&from, &to, &files, &AtomicU64::new(0)).unwrap();
        assert!(!to.join("t/a.bin").exists());
    }

    #[test]
    fn a_failed_copy_leaves_nothing_at_the_target() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("from"), d.path().join("to"));
        let files = tree(&from);
        // make the second copy fail: its folder at the target is a file
        std::fs::create_dir_all(to.join("t")).unwrap();
        std::fs::write(to.join("t/sub"), b"x").unwrap();
        let refs: Vec<&PathBuf> = files.iter().collect();
        let e = copy_then_delete(&from, &to, &refs, &AtomicU64::new(0)).unwrap_err();
        assert!(matches!(e, MoveError::Io { .. }), "{e}");
        assert!(!to.join("t/a.bin").exists(), "the first copy was removed");
        assert!(from.join("t/a.bin").exists() && from.join("t/sub/b.bin").exists());
    }
}
