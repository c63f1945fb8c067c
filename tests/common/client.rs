//! Waiting on an in-process session through its client handle ([`Client`]): each wait has
//! a deadline and, when it runs out, panics naming what it waited for, with the rows.

use std::sync::Arc;
use std::time::Duration;

use ratorrent::api::{Client, Snapshot, TorrentId, TorrentRow};

/// Wait up to `within` for a snapshot that satisfies `ok` (the current one included).
pub async fn wait_snapshot(
    client: &Client,
    what: &str,
    within: Duration,
    ok: impl FnMut(&Snapshot) -> bool,
) -> Arc<Snapshot> {
    match tokio::time::timeout(within, client.wait_for(ok)).await {
        Ok(Ok(snapshot)) => snapshot,
        Ok(Err(e)) => panic!("{what}: {e}"),
        Err(_) => panic!(
            "{what}: not reached in {within:?}; rows {:#?}",
            client.snapshot().rows
        ),
    }
}

/// Wait up to `within` for the list of rows to satisfy `ok`.
pub async fn wait_rows(
    client: &Client,
    what: &str,
    within: Duration,
    mut ok: impl FnMut(&[Arc<TorrentRow>]) -> bool,
) -> Arc<Snapshot> {
    wait_snapshot(client, what, within, |s| ok(&s.rows)).await
}

/// Wait up to `within` for torrent `id`'s row to satisfy `ok`; returns that row.
pub async fn wait_row(
    client: &Client,
    id: TorrentId,
    what: &str,
    within: Duration,
    mut ok: impl FnMut(&TorrentRow) -> bool,
) -> TorrentRow {
    let snapshot = wait_snapshot(client, what, within, |s| s.row(id).is_some_and(&mut ok)).await;
    snapshot.row(id).cloned().unwrap_or_default()
}
