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
fn an_mse_responder_finds_every_listed_torrent_by_its_req2_hash() {
    use crate::peer::mse::req2;
    let mut lib = Library::new();
    let seen_by_listener = lib.registry();
    for b in 1..=3 {
        let id = lib.new_id();
        lib.list(ih(b), id);
    }
    for b in 1..=3 {
        assert_eq!(seen_by_listener.find_req2(&req2(&ih(b))), Some(ih(b)));
    }
    assert_eq!(seen_by_listener.find_req2(&req2(&ih(4))), None);
    assert_eq!(
        seen_by_listener.find_req2(&ih(2).0),
        None,
        "not the hash itself"
    );
    lib.unlist(&ih(2));
    assert_eq!(
        seen_by_listener.find_req2(&req2(&ih(2))),
        None,
        "gone with it"
    );
}
