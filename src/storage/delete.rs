//! Deleting a removed torrent's payload ("remove with data"): its files, its part file, and
//! the folders they leave empty up to its top folder; never anything outside its save
//! folder (also not through a symbolic link to a folder elsewhere), never a file the torrent
//! does not name; a symbolic link at a file's path is removed, not followed.

use std::collections::BTreeSet;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::part_file;
use crate::metainfo::Metainfo;

/// What a torrent put in its save folder: its payload files (padding files excluded) and its
/// part file, as paths relative to the save folder, and its top folder (multi-file
/// torrents). The list a move carries and a deletion removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadFiles {
    /// The save folder everything is relative to.
    pub root: PathBuf,
    /// The payload files in payload order, then the part file (`.INFOHASH.parts`).
    pub files: Vec<PathBuf>,
    /// The torrent's top folder (the first component of its paths) for the multi-file
    /// form; `None` for a single file.
    pub top: Option<PathBuf>,
}

impl PayloadFiles {
    /// The files `meta` puts under `save_dir`.
    pub fn of(meta: &Metainfo, save_dir: &Path) -> PayloadFiles {
        let mut files: Vec<PathBuf> = meta
            .files
            .iter()
            .filter(|f| !f.pad)
            .map(|f| f.path.clone())
            .collect();
        files.push(PathBuf::from(part_file::file_name(&meta.info_hash)));
        let top = meta
            .multi_file
            .then(|| meta.files.first())
            .flatten()
            .and_then(|f| f.path.components().next())
            .map(|c| PathBuf::from(c.as_os_str()));
        PayloadFiles {
            root: save_dir.to_path_buf(),
            files,
            top,
        }
    }

    /// Delete the files (a missing one is fine; a symlink is removed, not followed; a folder
    /// or other non-file at a file's path is left alone), then the folders they leave
    /// empty, deepest first, up to and including the top folder. Folders holding anything
    /// else stay. Paths that lead outside the save folder are ignored. Blocking: run it on
    /// a blocking thread.
    ///
    /// # Errors
    /// [`DeleteError`] listing every file that could not be deleted (the rest were).
    pub fn delete(&self) -> Result<(), DeleteError> {
        let root = self.root.as_path();
        // nothing of the torrent can be there without its save folder
        let Ok(real_root) = root.canonicalize() else {
            return Ok(());
        };
        let inside = |p: &Path| p.canonicalize().is_ok_and(|r| r.starts_with(&real_root));
        let mut failures = Vec::new();
        let mut dirs = BTreeSet::new();
        for rel in self.files.iter().filter(|r| is_normal(r)) {
            let f = root.join(rel);
            // a folder on the way that is a link leading out: not ours to touch
            match f.parent() {
                Some(parent) if inside(parent) => {}
                Some(parent) if parent.exists() => {
                    failures.push((f.clone(), DeleteFailure::Outside));
                    continue;
                }
                _ => continue, // its folder is gone: so is the file
            }
            match std::fs::symlink_metadata(&f) {
                Ok(m) if m.is_file() || m.file_type().is_symlink() => {
                    if let Err(e) = std::fs::remove_file(&f) {
                        failures.push((f.clone(), DeleteFailure::Io(e)));
                    }
                }
                Ok(_) => failures.push((f.clone(), DeleteFailure::NotAFile)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => failures.push((f.clone(), DeleteFailure::Io(e))),
            }
            let mut d = f.parent();
            while let Some(dir) = d {
                if dir == root || !dir.starts_with(root) {
                    break;
                }
                dirs.insert(dir.to_path_buf());
                d = dir.parent();
            }
        }
        if let Some(top) = self.top.as_deref().filter(|t| is_normal(t)) {
            dirs.insert(root.join(top));
        }
        // deepest first; only empty real folders inside the save folder go (remove_dir
        // refuses the others, and a link is never followed)
        for d in dirs.iter().rev() {
            let real_dir = std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir());
            if real_dir && inside(d) {
                let _ = std::fs::remove_dir(d);
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(DeleteError { failures })
        }
    }
}

/// Whether `rel` is a relative path of normal components only (what the metainfo parser
/// makes): joined to the save folder it names something inside it.
fn is_normal(rel: &Path) -> bool {
    !rel.as_os_str().is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Why one file of a payload was not deleted.
#[derive(Debug)]
pub enum DeleteFailure {
    /// The OS refused (permissions, read-only, I/O error).
    Io(io::Error),
    /// Something other than a file or symlink is at its path (left alone).
    NotAFile,
    /// A folder on its way is a symbolic link that leads outside the save folder (left
    /// alone: the torrent never writes through such a link).
    Outside,
}

/// The files of a payload that could not be deleted (every other file was).
///
/// `Display`: `PATH: CAUSE` for each, joined with `; `.
#[derive(Debug)]
pub struct DeleteError {
    /// Each file (absolute path) with its cause, in payload order.
    pub failures: Vec<(PathBuf, DeleteFailure)>,
}

impl fmt::Display for DeleteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (path, why)) in self.failures.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match why {
                DeleteFailure::Io(e) => write!(f, "{}: {e}", path.display())?,
                DeleteFailure::NotAFile => {
                    write!(f, "{}: not a regular file; left alone", path.display())?
                }
                DeleteFailure::Outside => write!(
                    f,
                    "{}: a folder on its way leads outside the save folder; left alone",
                    path.display()
                )?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for DeleteError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(root: &Path, files: &[&str], top: Option<&str>) -> PayloadFiles {
        PayloadFiles {
            root: root.to_path_buf(),
            files: files.iter().map(PathBuf::from).collect(),
            top: top.map(PathBuf::from),
        }
    }

    #[test]
    fn files_and_the_folders_they_leave_empty_go_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("t/sub")).unwrap();
        std::fs::create_dir_all(r.join("t/empty-user-dir/x")).unwrap();
        std::fs::write(r.join("t/a"), b"1").unwrap();
        std::fs::write(r.join("t/sub/b"), b"2").unwrap();
        std::fs::write(r.join("t/keep-me"), b"user file").unwrap();
        std::fs::write(r.join("other"), b"x").unwrap();
        std::fs::write(r.join(".ih.parts"), b"p").unwrap();
        let p = payload(r, &["t/a", "t/sub/b", "t/missing", ".ih.parts"], Some("t"));
        p.delete().unwrap();
        assert!(!r.join("t/a").exists());
        assert!(!r.join(".ih.parts").exists());
        assert!(!r.join("t/sub").exists(), "empty folder removed");
        assert!(
            r.join("t/keep-me").exists(),
            "files not in the torrent stay"
        );
        assert!(
            r.join("t/empty-user-dir/x").exists(),
            "folders it did not use stay"
        );
        assert!(r.join("other").exists());
        assert!(r.exists(), "the save folder stays");
        // the top folder goes once empty
        std::fs::remove_file(r.join("t/keep-me")).unwrap();
        std::fs::remove_dir_all(r.join("t/empty-user-dir")).unwrap();
        p.delete().unwrap();
        assert!(!r.join("t").exists());
    }

    #[test]
    fn nothing_outside_the_save_folder_nor_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::write(outside.path().join("x"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), r.join("file-link")).unwrap();
        let far = outside.path().join("x");
        let p = PayloadFiles {
            root: r.to_path_buf(),
            files: vec![far.clone(), "file-link".into()],
            top: None,
        };
        p.delete().unwrap();
        assert!(far.exists(), "an absolute path elsewhere is ignored");
        // paths that climb out, and a folder link that leads out
        std::fs::create_dir(outside.path().join("sub")).unwrap();
        std::fs::write(outside.path().join("sub/y"), b"y").unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("link")).unwrap();
        std::fs::create_dir(r.join("t")).unwrap();
        let climb = PayloadFiles {
            root: r.join("t"),
            files: vec!["../file-link".into(), "../link/x".into()],
            top: Some("..".into()),
        };
        climb.delete().unwrap();
        assert!(r.join("t").exists() && outside.path().join("x").exists());
        let through = payload(r, &["link/x", "link/sub/y"], Some("link"));
        let err = through.delete().unwrap_err();
        assert_eq!(err.failures.len(), 2);
        assert!(matches!(err.failures[0].1, DeleteFailure::Outside));
        assert!(err.to_string().contains("leads outside the save folder"));
        assert!(far.exists() && outside.path().join("sub/y").exists());
        assert!(r.join("link").exists(), "the link itself stays");
        assert!(!r.join("file-link").exists(), "the link goes");
        assert!(far.exists(), "not what it points to");
        assert!(outside.path().exists() && r.exists());
    }

    #[test]
    fn a_folder_at_a_file_path_is_left_and_reported() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("t/a")).unwrap();
        std::fs::write(r.join("t/b"), b"b").unwrap();
        let err = payload(r, &["t/a", "t/b"], Some("t")).delete().unwrap_err();
        assert_eq!(err.failures.len(), 1);
        assert!(matches!(err.failures[0].1, DeleteFailure::NotAFile));
        assert!(!r.join("t/b").exists(), "the other files still go");
        assert!(r.join("t/a").is_dir());
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a regular file; left alone",
                r.join("t/a").display()
            )
        );
    }
}
