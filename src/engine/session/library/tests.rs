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
