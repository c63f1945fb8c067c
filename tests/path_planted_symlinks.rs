//! Every path of a hostile torrent resolves under the save folder, also when the save
//! folder already holds planted symbolic links (a folder or a file of the torrent's layout
//! replaced by a link pointing outside, absolute or relative, dangling or not), through the
//! library: `Metainfo` → `ratorrent::storage::Storage` (create, write every piece, check).
//!
//! Each plant gets a fresh world: `root/save` (the save folder) beside `root/outside`
//! (what the links point at, pre-filled with the torrent's own data so that following a
//! link would even "verify"). After the storage has done everything it can, nothing
//! outside `root/save` may have changed, nothing under `root/save` may be a link except
//! the planted one, and no piece may have been verified from data outside.

mod path_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32};

use path_support::{Entry, Shape, comps, snapshot, snapshot_diff};
use ratorrent::metainfo::Metainfo;
use ratorrent::storage::{Storage, check};

/// The hostile shapes: the shared unsafe-path and empty-path-component cases and variants.
fn shapes() -> Vec<(&'static str, Shape)> {
    let multi = |name: &str, entries: Vec<Entry>| Shape {
        name: name.as_bytes().to_vec(),
        single: None,
        entries,
        piece_length: 16384,
    };
    vec![
        (
            "t01-path-dotdot",
            multi(
                "sample",
                vec![
                    Entry::File(comps(&["..", "..", "etc", "hosts"]), 11),
                    Entry::File(comps(&["ok.txt"]), 5),
                ],
            ),
        ),
        (
            "t01-name-dotdot",
            Shape {
                name: b"../sample.bin".to_vec(),
                single: Some(7),
                entries: Vec::new(),
                piece_length: 16384,
            },
        ),
        (
            "t08-path-empty-leading",
            multi("sample", vec![Entry::File(comps(&["", "video.bin"]), 3000)]),
        ),
        (
            "variants",
            multi(
                "../v",
                vec![
                    Entry::File(comps(&["/outside/abs"]), 20_000),
                    Entry::File(comps(&["a", "..", "..", "..", "outside", "x"]), 100),
                    Entry::File(comps(&["..\\..\\outside\\y"]), 100),
                    Entry::File(comps(&["d", "", ".", "e.bin"]), 5000),
                    Entry::File(comps(&["d", "E.BIN"]), 300),
                    Entry::File(comps(&["dup"]), 10),
                    Entry::File(comps(&["dup", "inner"]), 10),
                    Entry::Symlink(comps(&["link"]), comps(&["..", "..", "outside", "victim"])),
                    Entry::File(comps(&["C:", "win"]), 17),
                    Entry::File(comps(&["..."]), 1),
                ],
            ),
        ),
    ]
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    save: PathBuf,
    outside: PathBuf,
}

/// A fresh `root/{save,outside}`; `outside` holds `victim`, `dir/`, and a copy of the
/// torrent's data at every file's path (so a followed link finds "valid" data).
fn world(m: &Metainfo, payload: &[u8]) -> World {
    let tmp = tempfile::Builder::new()
        .prefix("ratorrent-planted-")
        .tempdir()
        .unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let save = root.join("save");
    let outside = root.join("outside");
    std::fs::create_dir_all(&save).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("victim"), b"keep me").unwrap();
    for f in m.files.iter().filter(|f| !f.pad) {
        let o = f.offset as usize;
        let bytes = &payload[o..o + f.length as usize];
        // at the file's path, and at its path below each of its folders (where a link
        // planted for that folder would lead)
        for skip in 0..f.path.components().count() {
            let rel: PathBuf = f.path.components().skip(skip).collect();
            let p = outside.join(rel);
            if std::fs::create_dir_all(p.parent().unwrap()).is_ok() && !p.is_dir() {
                let _ = std::fs::write(&p, bytes);
            }
        }
    }
    World {
        _tmp: tmp,
        root,
        save,
        outside,
    }
}

/// One planted link: where (relative to the save folder) and what it points to.
#[derive(Debug, Clone)]
struct Plant {
    at: PathBuf,
    to: PathBuf,
}

/// Links for every folder of every file (to `outside`, absolute and relative) and for
/// every file (to `outside/victim`, to a missing file, to a folder, to `/etc/passwd`).
fn plants(m: &Metainfo, w: &World) -> Vec<Plant> {
    let mut out = Vec::new();
    for f in m.files.iter().filter(|f| !f.pad) {
        for dir in f.path.ancestors().skip(1) {
            if dir.as_os_str().is_empty() {
                break;
            }
            let depth = dir.components().count();
            let up: PathBuf = std::iter::repeat_n("..", depth).collect();
            out.push(Plant {
                at: dir.to_path_buf(),
                to: w.outside.clone(),
            });
            out.push(Plant {
                at: dir.to_path_buf(),
                to: up.join("outside"),
            });
        }
        for to in [
            w.outside.join("victim"),
            w.outside.join("not-there"),
            w.outside.join("dir"),
            PathBuf::from("/etc/passwd"),
        ] {
            out.push(Plant {
                at: f.path.clone(),
                to,
            });
        }
    }
    out.sort_by(|a, b| (&a.at, &a.to).cmp(&(&b.at, &b.to)));
    out.dedup_by(|a, b| a.at == b.at && a.to == b.to);
    out
}

fn storage(m: &Metainfo, save: &Path) -> Storage {
    Storage::new(
        save,
        m.files
            .iter()
            .map(|f| (f.path.clone(), f.offset, f.length, f.pad)),
        m.total_length,
    )
    .expect("sanitised paths are accepted by the storage")
}

/// Check, create, write every piece, check again; returns how many pieces the first check
/// verified and the errors met.
fn exercise(m: &Metainfo, st: &Storage, payload: &[u8]) -> (u32, Vec<String>) {
    let check = || {
        check::check_report(
            st,
            m.geometry(),
            &m.hashes(),
            1,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
        )
    };
    let before = check().have.count();
    let mut errors = Vec::new();
    if let Err(e) = st.create_files() {
        errors.push(format!("create: {e}"));
    }
    for p in 0..m.piece_count() {
        let off = m.piece_offset(p);
        let len = m.piece_size(p) as usize;
        if let Err(e) = st.write_at(off, &payload[off as usize..off as usize + len]) {
            errors.push(format!("write piece {p}: {e}"));
        }
    }
    let mut buf = vec![0u8; m.piece_length as usize];
    for p in 0..m.piece_count() {
        let len = m.piece_size(p) as usize;
        let _ = st.read_at(m.piece_offset(p), &mut buf[..len]);
    }
    let _ = check();
    (before, errors)
}

#[test]
fn planted_links_never_lead_outside() {
    let mut worlds = 0;
    let mut refused = 0;
    for (case, shape) in shapes() {
        let built = shape.build("http://127.0.0.1:1/announce");
        let m = Metainfo::from_bytes(&built.torrent).unwrap_or_else(|e| panic!("{case}: {e}"));
        for plant in plants(&m, &world(&m, &built.payload)) {
            let w = world(&m, &built.payload);
            let at = w.save.join(&plant.at);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&plant.to, &at).unwrap();
            let outside_before = snapshot(&w.outside);
            let root_before = snapshot(&w.root);
            let st = storage(&m, &w.save);
            let (verified, errors) = exercise(&m, &st, &built.payload);
            let what = format!("{case}: link {:?} -> {:?}", plant.at, plant.to);
            assert_eq!(verified, 0, "{what}: pieces verified from data outside");
            // nothing changed outside the save folder ...
            let changes = snapshot_diff(&outside_before, &snapshot(&w.outside));
            assert!(changes.is_empty(), "{what}: outside changed: {changes:#?}");
            assert_eq!(
                std::fs::read(w.outside.join("victim")).unwrap(),
                b"keep me",
                "{what}"
            );
            let after = snapshot(&w.root);
            for line in snapshot_diff(&root_before, &after) {
                let path = line[2..].split(':').next().unwrap();
                assert!(
                    path.starts_with("save/") && line.starts_with('+'),
                    "{what}: {line}"
                );
                // ... and nothing new under it is a link
                assert!(!line.contains(": link ->"), "{what}: {line}");
            }
            // the planted link is still there, untouched
            assert_eq!(std::fs::read_link(&at).unwrap(), plant.to, "{what}");
            // a link on the way of a file makes the writes to it fail (and those of the
            // pieces it shares: the storage writes a piece whole or reports it)
            if !errors.is_empty() {
                refused += 1;
            }
            worlds += 1;
        }
    }
    // every plant is on the way of some file, so every one was refused somewhere
    assert_eq!(refused, worlds, "{refused} of {worlds}");
    assert!(worlds > 60, "{worlds}");
}

#[test]
fn links_inside_the_save_folder_are_followed() {
    // a user's own link to a folder inside the save folder is fine: the data lands there
    let (_, shape) = shapes().into_iter().next().unwrap();
    let built = shape.build("http://127.0.0.1:1/announce");
    let m = Metainfo::from_bytes(&built.torrent).unwrap();
    let w = world(&m, &built.payload);
    std::fs::create_dir_all(w.save.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink("elsewhere", w.save.join("sample")).unwrap();
    let outside_before = snapshot(&w.outside);
    let st = storage(&m, &w.save);
    let (verified, errors) = exercise(&m, &st, &built.payload);
    assert_eq!(verified, 0);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        std::fs::read(w.save.join("elsewhere/etc/hosts")).unwrap(),
        &built.payload[..11]
    );
    assert!(snapshot_diff(&outside_before, &snapshot(&w.outside)).is_empty());
}

#[test]
fn sanitised_paths_without_links_stay_inside() {
    for (case, shape) in shapes() {
        let built = shape.build("http://127.0.0.1:1/announce");
        let m = Metainfo::from_bytes(&built.torrent).unwrap();
        let w = world(&m, &built.payload);
        let outside_before = snapshot(&w.outside);
        let st = storage(&m, &w.save);
        let (verified, errors) = exercise(&m, &st, &built.payload);
        assert_eq!(verified, 0, "{case}");
        assert!(errors.is_empty(), "{case}: {errors:#?}");
        assert!(snapshot_diff(&outside_before, &snapshot(&w.outside)).is_empty());
        // exactly the torrent's real files, as regular files, under the save folder
        let files: Vec<PathBuf> = snapshot(&w.save)
            .into_iter()
            .filter(|(_, what)| what.starts_with("file "))
            .map(|(p, _)| p)
            .collect();
        let mut want: Vec<PathBuf> = m
            .files
            .iter()
            .filter(|f| !f.pad)
            .map(|f| f.path.clone())
            .collect();
        want.sort();
        assert_eq!(files, want, "{case}");
        for f in m.files.iter().filter(|f| !f.pad) {
            let o = f.offset as usize;
            assert_eq!(
                std::fs::read(w.save.join(&f.path)).unwrap(),
                &built.payload[o..o + f.length as usize],
                "{case}: {:?}",
                f.path
            );
            assert!(
                !std::fs::symlink_metadata(w.save.join(&f.path))
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
        }
    }
}
