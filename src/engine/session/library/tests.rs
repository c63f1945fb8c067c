use super::*;

fn ih(b: u8) -> InfoHash {
    InfoHash([b; 20])
}

#[test]
fn ids_are_handed_out_in_order_and_never_reused() {
    let mut lib = Library::new();
    let a = lib.new_id();
    let b = lib.new_id();
    assert_eq!((a, b), (TorrentId(1), TorrentId(2)));
    lib.list(ih(1), a);
    assert_eq!(lib.unlist(&ih(1)), Some(a));
    assert_eq!(
        lib.new_id(),
        TorrentId(3),
        "a removed torrent's id stays used"
    );
}

#[test]
fn the_registry_is_shared_with_the_listeners_handle() {
    let mut lib = Library::new();
    let seen_by_listener = lib.registry();
    assert!(!seen_by_listener.contains(&ih(9)));
    let id = lib.new_id();
    lib.list(ih(9), id);
    assert_eq!(lib.find(&ih(9)), Some(id));
    assert_eq!(seen_by_listener.get(&ih(9)), Some(id));
    assert!(!seen_by_listener.contains(&ih(8)));
    assert_eq!(lib.unlist(&ih(9)), Some(id));
    assert!(!seen_by_listener.contains(&ih(9)));
    assert_eq!(lib.find(&ih(9)), None);
    assert_eq!(lib.unlist(&ih(9)), None, "unlisting twice is harmless");
}

#[test]
fn a_torrent_file_is_read_with_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let payload = dir.path().join("payload.bin");
    std::fs::write(&payload, vec![5u8; 40_000]).unwrap();
    let bytes = crate::metainfo::TorrentBuilder::new(&payload)
        .piece_length(16 * 1024)
        .build()
        .unwrap();
    let file = dir.path().join("a.torrent");
    std::fs::write(&file, &bytes).unwrap();
    let (meta, read) = read_torrent(&file).unwrap();
    assert_eq!(
        read, bytes,
        "the bytes kept for the state store are the file's"
    );
    assert_eq!(meta.saved_name(), "payload.bin");
    assert_eq!(meta.total_length, 40_000);
    assert_eq!(
        meta.info_hash,
        Metainfo::from_bytes(&bytes).unwrap().info_hash
    );
}

#[test]
fn a_missing_garbled_or_oversized_file_is_refused_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.torrent");
    let e = read_torrent(&missing).unwrap_err();
    assert!(e.contains("missing.torrent"), "{e}");

    let garbled = dir.path().join("garbled.torrent");
    std::fs::write(&garbled, b"d4:infoi1e").unwrap();
    let e = read_torrent(&garbled).unwrap_err();
    assert!(e.contains("garbled.torrent"), "{e}");
    assert!(e.contains("not a valid torrent"), "{e}");

    // sparse: no disk space is used
    let big = dir.path().join("big.torrent");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(crate::metainfo::MAX_TORRENT_FILE_BYTES + 1)
        .unwrap();
    let e = read_torrent(&big).unwrap_err();
    assert!(e.contains("big.torrent"), "{e}");
    assert!(
        !e.contains("not a valid torrent"),
        "refused for its size: {e}"
    );
}
