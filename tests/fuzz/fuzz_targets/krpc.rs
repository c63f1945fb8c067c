//! libFuzzer target: KRPC datagrams (BEP 5) sent over UDP to a live DHT node, which must
//! keep answering pings; see `ratorrent_fuzz::KrpcNode`. Run it in a network namespace
//! with only a loopback interface (run.sh does).
#![no_main]

use std::sync::Mutex;

static NODE: Mutex<Option<ratorrent_fuzz::KrpcNode>> = Mutex::new(None);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut node = NODE.lock().unwrap_or_else(|e| e.into_inner());
    node.get_or_insert_with(ratorrent_fuzz::KrpcNode::start)
        .check(data);
});
