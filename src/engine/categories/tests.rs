use std::path::{Path, PathBuf};

use super::*;

fn cat(name: &str, save: &str, download: Option<&str>) -> Category {
    Category {
        name: name.to_owned(),
        save_path: PathBuf::from(save),
        download_path: download.map(PathBuf::from),
        limits: ShareLimits::default(),
    }
}

const DL: &str = "/dl";

#[test]
fn save_paths_resolve_with_subcategories_as_qbittorrent_does() {
    let mut c = Categories::new(None);
    let dl = Path::new(DL);
    assert_eq!(c.save_path("", dl), PathBuf::from("/dl"), "no category");
    c.create(cat("tv", "/media/tv", None)).unwrap();
    c.create(cat("films", "", None)).unwrap();
    c.create(cat("rel", "relative/x", None)).unwrap();
    assert_eq!(c.save_path("tv", dl), PathBuf::from("/media/tv"));
    assert_eq!(
        c.save_path("films", dl),
        PathBuf::from("/dl/films"),
        "implicit"
    );
    assert_eq!(
        c.save_path("rel", dl),
        PathBuf::from("/dl/relative/x"),
        "relative: under the download folder"
    );
    // tv/hd has no path of its own: the parent's joined with "hd"
    c.create(cat("tv/hd", "", None)).unwrap();
    assert_eq!(c.save_path("tv/hd", dl), PathBuf::from("/media/tv/hd"));
    c.create(cat("tv/hd/x265", "", None)).unwrap();
    assert_eq!(
        c.save_path("tv/hd/x265", dl),
        PathBuf::from("/media/tv/hd/x265")
    );
    // one with its own path does not inherit
    c.create(cat("tv/sd", "/old/sd", None)).unwrap();
    assert_eq!(c.save_path("tv/sd", dl), PathBuf::from("/old/sd"));
    // a name not in the list resolves as an implicit one
    assert_eq!(c.save_path("gone/x", dl), PathBuf::from("/dl/gone/x"));
}

#[test]
fn download_paths_are_own_or_under_the_parents() {
    let mut c = Categories::new(None);
    let dl = Path::new(DL);
    c.create(cat("tv", "/media/tv", Some("/incoming/tv")))
        .unwrap();
    c.create(cat("tv/hd", "", None)).unwrap();
    c.create(cat("films", "/media/films", None)).unwrap();
    c.create(cat("films/old", "", Some("part"))).unwrap();
    assert_eq!(
        c.download_path("tv", dl),
        Some(PathBuf::from("/incoming/tv"))
    );
    assert_eq!(
        c.download_path("tv/hd", dl),
        Some(PathBuf::from("/incoming/tv/hd"))
    );
    assert_eq!(c.download_path("films", dl), None);
    assert_eq!(
        c.download_path("films/old", dl),
        Some(PathBuf::from("/dl/part")),
        "relative: under the download folder"
    );
    assert_eq!(c.download_path("", dl), None);
    let p = c.place("tv/hd", dl);
    assert_eq!(p.save, PathBuf::from("/media/tv/hd"));
    assert_eq!(p.download, Some(PathBuf::from("/incoming/tv/hd")));
}

#[test]
fn creating_a_subcategory_creates_its_parents_and_removing_takes_the_children() {
    let mut c = Categories::new(None);
    assert_eq!(
        c.create(cat("a/b/c", "", None)).unwrap(),
        ["a", "a/b", "a/b/c"]
    );
    assert!(c.create(cat("a/b", "", None)).is_err(), "taken");
    assert!(c.create(cat("a//b", "", None)).is_err(), "invalid");
    c.create(cat("ab", "", None)).unwrap();
    assert!(c.edit(cat("zzz", "", None)).is_err());
    c.edit(cat("a/b", "/x", None)).unwrap();
    assert_eq!(c.get("a/b").unwrap().save_path, PathBuf::from("/x"));
    let mut gone = c.remove(&["a/b".to_owned()]);
    gone.sort();
    assert_eq!(gone, ["a/b", "a/b/c"]);
    assert!(c.contains("a") && c.contains("ab"));
    assert_eq!(c.remove(&["a".to_owned()]), ["a"]);
    assert!(c.contains("ab"), "ab is not under a");
}

#[test]
fn goals_inherit_from_the_parent_then_the_session() {
    let mut c = Categories::new(None);
    c.create(Category {
        limits: ShareLimits {
            ratio: 2.0,
            seeding_minutes: 60,
            inactive_minutes: USE_GLOBAL,
        },
        ..cat("tv", "", None)
    })
    .unwrap();
    c.create(Category {
        limits: ShareLimits {
            ratio: USE_GLOBAL as f64,
            seeding_minutes: -1,
            inactive_minutes: 5,
        },
        ..cat("tv/hd", "", None)
    })
    .unwrap();
    let l = c.limits("tv/hd");
    assert_eq!(l.ratio, 2.0, "from tv");
    assert_eq!(l.seeding_minutes, -1, "its own: none");
    assert_eq!(l.inactive_minutes, 5);
    assert_eq!(c.limits("tv").inactive_minutes, USE_GLOBAL, "the session's");
    assert_eq!(c.limits(""), ShareLimits::default());
}

#[test]
fn categories_and_tags_survive_in_their_file_and_a_bad_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state").join(FILE_NAME);
    let mut c = Categories::load(&file).unwrap();
    assert!(c.infos(Path::new(DL)).is_empty(), "no file: none");
    c.create(Category {
        limits: ShareLimits {
            ratio: 1.5,
            seeding_minutes: 10,
            inactive_minutes: -1,
        },
        ..cat("tv/hd", "/media/hd", Some("/inc"))
    })
    .unwrap();
    assert!(c.add_tags(&["b".to_owned(), "a".to_owned()]));
    assert!(!c.add_tags(&["a".to_owned()]));
    c.save().unwrap();
    assert!(!crate::atomic_write::temp_path(&file).exists());
    let back = Categories::load(&file).unwrap();
    assert_eq!(back.infos(Path::new(DL)), c.infos(Path::new(DL)));
    assert_eq!(back.get("tv/hd").unwrap().limits.ratio, 1.5);
    assert!(back.contains("tv"), "the parent too");
    assert_eq!(back.tags().cloned().collect::<Vec<_>>(), ["a", "b"]);
    std::fs::write(&file, "{ not json").unwrap();
    let e = Categories::load(&file).unwrap_err();
    assert!(e.contains("damaged"), "{e}");
    // a name that is not valid is left out, the others load
    std::fs::write(
        &file,
        r#"{"version":1,"categories":[{"name":"../x"},{"name":"ok","save_path":"/o"}],"tags":["a,b","t"]}"#,
    )
    .unwrap();
    let back = Categories::load(&file).unwrap();
    assert!(!back.contains("../x") && back.contains("ok"));
    assert_eq!(back.tags().cloned().collect::<Vec<_>>(), ["t"]);
}
