//! Unit tests of the piece picker.

use super::*;

fn picker(pieces: u32, plen: u32, last: u32) -> Picker {
    let total = u64::from(pieces - 1) * u64::from(plen) + u64::from(last);
    let geo = Geometry::new(total, plen, pieces).unwrap();
    Picker::new(geo, Bitfield::new(pieces))
}

#[test]
fn rarest_piece_is_picked_first() {
    let mut pk = picker(8, BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(8);
    pk.peer_bitfield(&all);
    pk.peer_bitfield(&all);
    let mut one = Bitfield::new(8);
    one.set(5);
    pk.peer_bitfield(&one); // piece 5 now has availability 3, others 2
    let mut rare = Bitfield::new(8);
    rare.set(2);
    rare.set(5);
    // piece 2 is only known via the 'all' peers... make piece 2 rarer by a departing peer
    pk.peer_gone(99, &all); // all availability -1: piece 5 -> 2, others -> 1
    pk.check_invariants();
    let mut out = Vec::new();
    pk.pick(1, &rare, &[], 1, &mut out);
    assert_eq!(
        out[0].piece, 2,
        "piece 2 (availability 1) before piece 5 (2)"
    );
}

#[test]
fn random_among_equals() {
    let mut firsts = std::collections::HashSet::new();
    for _ in 0..50 {
        let mut pk = picker(64, BLOCK_SIZE, BLOCK_SIZE);
        let all = Bitfield::full(64);
        pk.peer_bitfield(&all);
        let mut out = Vec::new();
        pk.pick(1, &all, &[], 1, &mut out);
        firsts.insert(out[0].piece);
    }
    assert!(firsts.len() > 5, "first pick should vary, got {firsts:?}");
}

#[test]
fn blocks_of_a_piece_in_order_and_geometry() {
    // piece length not a multiple of 16 KiB: 270544 = 16 blocks + 8400
    let plen = 270_544;
    let mut pk = picker(3, plen, 1000);
    let all = Bitfield::full(3);
    pk.peer_bitfield(&all);
    let mut out = Vec::new();
    pk.pick(1, &all, &[], 100, &mut out);
    let total: u64 = out.iter().map(|b| u64::from(b.length)).sum();
    assert_eq!(total, 2 * u64::from(plen) + 1000);
    for b in &out {
        assert!(b.length <= BLOCK_SIZE);
        assert!(b.begin + b.length <= pk.geometry().piece_size(b.piece));
    }
    // within each piece, blocks are consecutive and ascending
    for w in out.windows(2) {
        if w[0].piece == w[1].piece {
            assert_eq!(w[0].begin + w[0].length, w[1].begin);
        }
    }
    assert!(out.iter().any(|b| b.length == 8400));
}

#[test]
fn full_download_cycle_with_failure_and_refetch() {
    let mut pk = picker(4, 2 * BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(4);
    pk.peer_bitfield(&all);
    let mut failed_once = false;
    let mut rounds = 0;
    while !pk.is_complete() {
        rounds += 1;
        assert!(rounds < 100);
        let mut out = Vec::new();
        pk.pick(1, &all, &[], 3, &mut out);
        for b in out {
            match pk.on_block(1, b.piece, b.begin, b.length) {
                BlockOutcome::New {
                    piece_complete: true,
                    ..
                } => {
                    if b.piece == 1 && !failed_once {
                        failed_once = true;
                        assert_eq!(pk.piece_failed(1), vec![1]);
                    } else {
                        assert!(pk.piece_verified(b.piece));
                    }
                }
                BlockOutcome::New { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
            pk.check_invariants();
        }
    }
    assert!(failed_once);
    assert_eq!(pk.bytes_left(), 0);
    assert!(!pk.is_interesting(&all));
}

#[test]
fn lost_pieces_are_fetched_again() {
    let mut pk = Picker::new(
        Geometry::new(8 * u64::from(BLOCK_SIZE), BLOCK_SIZE, 8).unwrap(),
        Bitfield::full(8),
    );
    assert!(pk.is_complete());
    let mut some = Bitfield::new(8);
    some.set(3);
    some.set(5);
    pk.peer_bitfield(&some);
    pk.peer_bitfield(&Bitfield::full(8));
    pk.check_invariants();
    assert!(pk.piece_lost(5));
    assert!(!pk.piece_lost(5), "once");
    assert!(pk.piece_lost(0));
    pk.check_invariants();
    assert!(!pk.is_complete());
    assert_eq!(pk.bytes_left(), 2 * u64::from(BLOCK_SIZE));
    let mut out = Vec::new();
    pk.pick(1, &Bitfield::full(8), &[], 10, &mut out);
    let mut got: Vec<u32> = out.iter().map(|b| b.piece).collect();
    got.sort();
    assert_eq!(got, vec![0, 5]);
    assert!(pk.availability(5) == 2 && pk.availability(0) == 1);
}

#[test]
fn skipped_pieces_are_never_picked_and_high_priority_goes_first() {
    let mut pk = picker(10, BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(10);
    pk.peer_bitfield(&all);
    let mut prio = vec![PRIO_NORMAL; 10];
    prio[0] = PRIO_SKIP;
    prio[1] = PRIO_SKIP;
    prio[7] = PRIO_HIGH;
    prio[9] = 1;
    pk.set_priorities(&prio);
    pk.check_invariants();
    assert_eq!(pk.bytes_left(), 8 * u64::from(BLOCK_SIZE));
    let mut order = Vec::new();
    while !pk.is_finished() {
        let mut out = Vec::new();
        pk.pick(1, &all, &[], 1, &mut out);
        let b = out[0];
        order.push(b.piece);
        pk.on_block(1, b.piece, b.begin, b.length);
        assert!(pk.piece_verified(b.piece));
        pk.check_invariants();
    }
    assert_eq!(order[0], 7, "high priority first");
    assert_eq!(*order.last().unwrap(), 9, "low priority last");
    assert!(
        !order.contains(&0) && !order.contains(&1),
        "skipped never picked"
    );
    assert!(!pk.is_complete(), "finished, not complete");
    assert!(!pk.is_interesting(&all));
    let mut out = Vec::new();
    pk.pick(1, &all, &[], 10, &mut out);
    assert!(out.is_empty());
    // wanting them again: interesting again, picked
    pk.set_priorities(&[PRIO_NORMAL; 10]);
    pk.check_invariants();
    assert!(!pk.is_finished() && pk.is_interesting(&all));
    pk.pick(1, &all, &[], 10, &mut out);
    let mut got: Vec<u32> = out.iter().map(|b| b.piece).collect();
    got.sort();
    assert_eq!(got, vec![0, 1]);
}

#[test]
fn released_blocks_are_picked_again() {
    let mut pk = picker(1, 4 * BLOCK_SIZE, 4 * BLOCK_SIZE);
    let all = Bitfield::full(1);
    pk.peer_bitfield(&all);
    let mut out = Vec::new();
    pk.pick(1, &all, &[], 10, &mut out);
    assert_eq!(out.len(), 4);
    let mut again = Vec::new();
    pk.pick(2, &all, &[], 10, &mut again);
    assert!(again.is_empty() || pk.in_endgame());
    for b in &out {
        pk.release(b);
    }
    let mut after = Vec::new();
    pk.pick(2, &all, &[], 10, &mut after);
    assert_eq!(after.len(), 4);
}

#[test]
fn endgame_duplicates_are_bounded_and_detected() {
    let mut pk = picker(1, 2 * BLOCK_SIZE, 2 * BLOCK_SIZE);
    let all = Bitfield::full(1);
    pk.peer_bitfield(&all);
    let mut a = Vec::new();
    pk.pick(1, &all, &[], 10, &mut a);
    assert_eq!(a.len(), 2);
    assert!(pk.in_endgame());
    let mut b = Vec::new();
    pk.pick(2, &all, &[], 10, &mut b);
    assert_eq!(b, a, "second peer gets the same blocks in endgame");
    let mut c = Vec::new();
    pk.pick(3, &all, &[], 10, &mut c);
    assert!(
        c.is_empty(),
        "at most {ENDGAME_MAX_DUPLICATES} requests per block"
    );
    // peer 1 does not get its own in-flight blocks again
    let mut d = Vec::new();
    pk.pick(1, &all, &a, 10, &mut d);
    assert!(d.is_empty());
    let first = a[0];
    assert_eq!(
        pk.on_block(1, first.piece, first.begin, first.length),
        BlockOutcome::New {
            piece_complete: false,
            requested_elsewhere: true
        }
    );
    assert_eq!(
        pk.on_block(1, first.piece, first.begin, first.length),
        BlockOutcome::Duplicate
    );
}

#[test]
fn bad_geometry_is_unexpected() {
    let mut pk = picker(2, 2 * BLOCK_SIZE, 100);
    let all = Bitfield::full(2);
    pk.peer_bitfield(&all);
    let mut out = Vec::new();
    pk.pick(1, &all, &[], 10, &mut out);
    assert_eq!(pk.on_block(1, 2, 0, BLOCK_SIZE), BlockOutcome::Unexpected);
    assert_eq!(pk.on_block(1, 0, 1, BLOCK_SIZE), BlockOutcome::Unexpected);
    assert_eq!(
        pk.on_block(1, 0, 0, BLOCK_SIZE - 1),
        BlockOutcome::Unexpected
    );
    assert_eq!(pk.on_block(1, 1, 0, 101), BlockOutcome::Unexpected);
    assert_eq!(pk.on_block(1, 1, BLOCK_SIZE, 100), BlockOutcome::Unexpected);
    assert_eq!(
        pk.on_block(1, u32::MAX, u32::MAX, u32::MAX),
        BlockOutcome::Unexpected
    );
    assert!(matches!(
        pk.on_block(1, 1, 0, 100),
        BlockOutcome::New { .. }
    ));
}

#[test]
fn peers_only_get_pieces_they_have_and_affinity_holds() {
    let mut pk = picker(10, 4 * BLOCK_SIZE, 4 * BLOCK_SIZE);
    let mut evens = Bitfield::new(10);
    for p in (0..10).step_by(2) {
        evens.set(p);
    }
    pk.peer_bitfield(&evens);
    let mut out = Vec::new();
    pk.pick(1, &evens, &[], 2, &mut out);
    assert!(out.iter().all(|b| b.piece % 2 == 0));
    let first_piece = out[0].piece;
    let mut more = Vec::new();
    pk.pick(1, &evens, &out, 2, &mut more);
    assert!(
        more.iter().all(|b| b.piece == first_piece),
        "continue own piece first"
    );
}

#[test]
fn availability_buckets_survive_churn() {
    let n = 200;
    let mut pk = picker(n, BLOCK_SIZE, BLOCK_SIZE);
    let mut rng_state = 12345u64;
    let mut next = || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    let mut peers: Vec<Bitfield> = Vec::new();
    for step in 0..2000u64 {
        match next() % 4 {
            0 => {
                let mut b = Bitfield::new(n);
                for p in 0..n {
                    if next() % 3 == 0 {
                        b.set(p);
                    }
                }
                pk.peer_bitfield(&b);
                peers.push(b);
            }
            1 if !peers.is_empty() => {
                let i = (next() as usize) % peers.len();
                let b = peers.swap_remove(i);
                pk.peer_gone(step, &b);
            }
            2 if !peers.is_empty() => {
                let i = (next() as usize) % peers.len();
                let p = (next() % u64::from(n)) as u32;
                if peers[i].set(p) {
                    pk.peer_has(p);
                }
            }
            _ => {
                // complete a random piece
                let all = Bitfield::full(n);
                let mut out = Vec::new();
                pk.pick(7, &all, &[], 1, &mut out);
                if let Some(b) = out.first() {
                    assert!(matches!(
                        pk.on_block(1, b.piece, b.begin, b.length),
                        BlockOutcome::New {
                            piece_complete: true,
                            ..
                        }
                    ));
                    pk.piece_verified(b.piece);
                }
            }
        }
        pk.check_invariants();
    }
    for (p, a) in pk.availability.iter().enumerate() {
        let expected = peers.iter().filter(|b| b.get(p as u32)).count() as u16;
        assert_eq!(*a, expected, "availability of piece {p}");
    }
}

/// Take piece `p`'s blocks as delivered by peer 1; returns whether the piece is complete.
fn deliver(pk: &mut Picker, blocks: &[BlockRef]) -> Vec<u32> {
    let mut complete = Vec::new();
    for b in blocks {
        if let BlockOutcome::New {
            piece_complete: true,
            ..
        } = pk.on_block(1, b.piece, b.begin, b.length)
        {
            complete.push(b.piece);
        }
    }
    complete
}

#[test]
fn sequential_starts_pieces_in_index_order_whatever_their_availability() {
    let mut pk = picker(20, BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(20);
    pk.peer_bitfield(&all);
    // piece 15 is the rarest: rarest first would take it first
    let mut common = Bitfield::full(20);
    common.unset(15);
    pk.peer_bitfield(&common);
    pk.set_sequential(true);
    assert!(pk.sequential());
    let mut order = Vec::new();
    while !pk.is_finished() {
        let mut out = Vec::new();
        pk.pick(1, &all, &[], 3, &mut out);
        order.extend(out.iter().map(|b| b.piece));
        for p in deliver(&mut pk, &out) {
            assert!(pk.piece_verified(p));
        }
        pk.check_invariants();
    }
    assert_eq!(order, (0..20).collect::<Vec<u32>>());
}

#[test]
fn sequential_takes_the_lowest_piece_a_peer_has_and_refetches_a_failed_one_first() {
    let mut pk = picker(10, BLOCK_SIZE, BLOCK_SIZE);
    pk.set_sequential(true);
    let mut odd = Bitfield::new(10);
    for p in [1, 3, 5, 7, 9] {
        odd.set(p);
    }
    pk.peer_bitfield(&odd);
    let all = Bitfield::full(10);
    pk.peer_bitfield(&all);
    let mut out = Vec::new();
    pk.pick(2, &odd, &[], 2, &mut out);
    assert_eq!(
        out.iter().map(|b| b.piece).collect::<Vec<_>>(),
        [1, 3],
        "the lowest pieces this peer has"
    );
    let mut first = Vec::new();
    pk.pick(1, &all, &[], 2, &mut first);
    assert_eq!(first.iter().map(|b| b.piece).collect::<Vec<_>>(), [0, 2]);
    // piece 0 fails its hash check: it is the next piece picked again
    deliver(&mut pk, &first[..1]);
    pk.piece_failed(0);
    pk.check_invariants();
    let mut again = Vec::new();
    pk.pick(1, &all, &first[1..], 1, &mut again);
    assert_eq!(again[0].piece, 0);
}

#[test]
fn sequential_respects_file_priorities_and_first_last_pieces_go_first() {
    let mut pk = picker(12, BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(12);
    pk.peer_bitfield(&all);
    // two "files": 0..6 low, 6..12 normal; the first and last piece of each go first
    let mut prio = vec![1u8; 6];
    prio.extend([PRIO_NORMAL; 6]);
    for p in [0, 5, 6, 11] {
        prio[p] = PRIO_FIRST_LAST;
    }
    prio[3] = PRIO_SKIP;
    pk.set_priorities(&prio);
    pk.set_sequential(true);
    pk.check_invariants();
    let mut order = Vec::new();
    while !pk.is_finished() {
        let mut out = Vec::new();
        pk.pick(1, &all, &[], 1, &mut out);
        order.push(out[0].piece);
        for p in deliver(&mut pk, &out) {
            assert!(pk.piece_verified(p));
        }
        pk.check_invariants();
    }
    assert_eq!(order, [0, 5, 6, 11, 7, 8, 9, 10, 1, 2, 4]);
}

#[test]
fn first_last_pieces_go_first_in_rarest_first_too() {
    let mut pk = picker(30, BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(30);
    pk.peer_bitfield(&all);
    let mut prio = vec![PRIO_NORMAL; 30];
    for p in [0, 9, 10, 29] {
        prio[p] = PRIO_FIRST_LAST;
    }
    pk.set_priorities(&prio);
    let mut out = Vec::new();
    pk.pick(1, &all, &[], 4, &mut out);
    let mut got: Vec<u32> = out.iter().map(|b| b.piece).collect();
    got.sort_unstable();
    assert_eq!(got, [0, 9, 10, 29]);
    // the rest is rarest first again: no two runs need agree on the next piece
    let mut next = Vec::new();
    pk.pick(1, &all, &[], 1, &mut next);
    assert!(![0, 9, 10, 29].contains(&next[0].piece));
    pk.check_invariants();
}

#[test]
fn switching_sequential_at_run_time_keeps_pieces_in_progress_and_end_game() {
    let mut pk = picker(6, 2 * BLOCK_SIZE, 2 * BLOCK_SIZE);
    let all = Bitfield::full(6);
    pk.peer_bitfield(&all);
    // rarest first starts some piece; half of it arrives
    let mut out = Vec::new();
    pk.pick(1, &all, &[], 1, &mut out);
    let started = out[0].piece;
    deliver(&mut pk, &out);
    pk.set_sequential(true);
    let mut more = Vec::new();
    pk.pick(1, &all, &[], 3, &mut more);
    assert_eq!(
        more[0].piece, started,
        "the piece in progress is finished first"
    );
    let lowest = (0..6).find(|&p| p != started).unwrap();
    assert_eq!(more[1].piece, lowest, "then the lowest piece");
    // everything requested: end game duplicates for a second peer, as before
    let mut rest = Vec::new();
    pk.pick(1, &all, &[], 100, &mut rest);
    assert!(pk.in_endgame());
    let mut dup = Vec::new();
    pk.pick(2, &all, &[], 100, &mut dup);
    assert!(!dup.is_empty(), "end game asks a second peer");
    pk.set_sequential(false);
    assert!(!pk.sequential());
    pk.check_invariants();
}

#[test]
fn sequential_goes_through_a_high_priority_file_at_the_end_first_in_one_pass() {
    // 40,000 pieces, the second half high: each level is scanned once in all (a scan from
    // the first missing piece for every pick would take 400 million steps here)
    let n = 40_000u32;
    let mut pk = picker(n, BLOCK_SIZE, BLOCK_SIZE);
    let all = Bitfield::full(n);
    pk.peer_bitfield(&all);
    let mut prio = vec![PRIO_NORMAL; n as usize];
    for p in &mut prio[(n / 2) as usize..] {
        *p = PRIO_HIGH;
    }
    pk.set_priorities(&prio);
    pk.set_sequential(true);
    let started = std::time::Instant::now();
    let mut order = Vec::with_capacity(n as usize);
    let mut out = Vec::new();
    while !pk.is_finished() {
        out.clear();
        pk.pick(1, &all, &[], 1, &mut out);
        let b = out[0];
        order.push(b.piece);
        pk.on_block(1, b.piece, b.begin, b.length);
        assert!(pk.piece_verified(b.piece));
    }
    pk.check_invariants();
    let want: Vec<u32> = (n / 2..n).chain(0..n / 2).collect();
    assert!(order == want, "high file first, each in index order");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn pieces_a_departed_peer_started_come_before_new_ones() {
    // a connection requests pieces 0..4 and closes with them all in flight (a duplicate
    // connection the other side dropped): the next peer finishes those before starting
    // new ones, in sequential order and in rarest first alike (there in the rarest-first
    // order, which is random among equals: not index order)
    for sequential in [true, false] {
        let mut pk = picker(12, BLOCK_SIZE, BLOCK_SIZE);
        pk.set_sequential(sequential);
        let all = Bitfield::full(12);
        pk.peer_bitfield(&all);
        let mut gone = Vec::new();
        pk.pick(1, &all, &[], 4, &mut gone);
        let mut started: Vec<u32> = gone.iter().map(|b| b.piece).collect();
        started.sort_unstable();
        for b in &gone {
            pk.release(b);
        }
        pk.peer_gone(1, &all);
        pk.peer_bitfield(&all);
        pk.check_invariants();
        let mut out = Vec::new();
        pk.pick(2, &all, &[], 6, &mut out);
        let picked: Vec<u32> = out.iter().map(|b| b.piece).collect();
        let mut first4 = picked[..4].to_vec();
        first4.sort_unstable();
        assert_eq!(first4, started, "sequential {sequential}: {picked:?}");
        if sequential {
            assert_eq!(picked, [0, 1, 2, 3, 4, 5]);
        }
        // and they are now this peer's: it keeps them after a choke
        for b in &out {
            pk.release(b);
        }
        let mut again = Vec::new();
        pk.pick(2, &all, &[], 6, &mut again);
        let mut again: Vec<u32> = again.iter().map(|b| b.piece).collect();
        let mut picked = picked;
        again.sort_unstable();
        picked.sort_unstable();
        assert_eq!(again, picked);
        pk.check_invariants();
    }
}

#[test]
fn under_rarest_first_a_departed_peers_pieces_are_not_taken_in_index_order() {
    // 64 equally rare pieces handed back at once: index order would look sequential
    let mut in_index_order = 0;
    for _ in 0..20 {
        let mut pk = picker(64, BLOCK_SIZE, BLOCK_SIZE);
        let all = Bitfield::full(64);
        pk.peer_bitfield(&all);
        let mut gone = Vec::new();
        pk.pick(1, &all, &[], 64, &mut gone);
        for b in &gone {
            pk.release(b);
        }
        pk.disown(1);
        let mut out = Vec::new();
        pk.pick(2, &all, &[], 8, &mut out);
        let picked: Vec<u32> = out.iter().map(|b| b.piece).collect();
        in_index_order += usize::from(picked == (0..8).collect::<Vec<u32>>());
        pk.check_invariants();
    }
    assert!(in_index_order < 2, "{in_index_order} of 20 in index order");
}
