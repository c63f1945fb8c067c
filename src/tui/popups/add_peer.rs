//! The add-peer dialog (Peers tab): one or more peer addresses for the torrent of the
//! detail view, `IP:port` with IPv6 in brackets (`10.0.0.5:51413`, `[2001:db8::1]:6881`),
//! separated by spaces or commas. The engine keeps them across restarts (like a magnet
//! link's `x.pe` peers) and dials them whenever the torrent runs.

use std::net::SocketAddr;

use crate::api::{Command, TorrentId};
use crate::tui::format;
use crate::tui::theme::Symbols;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// The dialog for `torrent`, named `name`, with an empty address field.
pub fn open(torrent: TorrentId, name: &str, sym: &Symbols) -> Form {
    let mut form = Form::new(
        FormKind::AddPeer { torrent },
        "Add peer",
        vec![Field::text("Address", "")],
    );
    let name = format::fit_with(name, 40, sym.ascii, sym.ellipsis);
    form.intro = vec![
        format!("A peer for {name}, kept across restarts."),
        "IP:port; IPv6 in brackets: [::1]:6881. Several: separate with spaces.".to_owned(),
    ];
    form
}

/// The addresses in `text`: `IP:port` items separated by spaces or commas.
///
/// Errors: the first item that is not one, and what it should look like; no address.
pub fn parse_peers(text: &str) -> Result<Vec<SocketAddr>, String> {
    let mut out = Vec::new();
    for item in text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
    {
        let addr: SocketAddr = item.parse().map_err(|_| {
            if item.matches(':').count() > 1 && !item.starts_with('[') {
                format!("{item}: put an IPv6 address in brackets, e.g. [{item}]:6881 (address, then port)")
            } else {
                format!("{item} is not IP:port (e.g. 10.0.0.5:51413)")
            }
        })?;
        if addr.port() == 0 {
            return Err(format!("{item}: the port must not be 0"));
        }
        if addr.ip().is_unspecified() {
            return Err(format!("{item}: {} cannot be dialled", addr.ip()));
        }
        if !out.contains(&addr) {
            out.push(addr);
        }
    }
    if out.is_empty() {
        return Err("type a peer address: IP:port, e.g. 10.0.0.5:51413".to_owned());
    }
    Ok(out)
}

/// One [`Command::AddPeer`] per address typed into `form`.
///
/// Errors: see [`parse_peers`].
pub fn submit(form: &Form, torrent: TorrentId) -> Submitted {
    let peers = parse_peers(form.fields.first().map_or("", |f| f.value()))?;
    let notice = match peers.as_slice() {
        [one] => format!("peer {one} added; dialling it while the torrent runs"),
        many => format!(
            "{} peers added; dialling them while the torrent runs",
            many.len()
        ),
    };
    Ok(Outcome {
        commands: peers
            .into_iter()
            .map(|addr| Command::AddPeer { id: torrent, addr })
            .collect(),
        notice: Some(notice),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::popups::form::FieldKind;
    use crate::tui::theme::Theme;

    fn typed(text: &str) -> Form {
        let mut form = open(TorrentId(3), "debian.iso", &Theme::default().sym);
        if let FieldKind::Text(f) = &mut form.fields[0].kind {
            f.set(text);
        }
        form
    }

    #[test]
    fn addresses_v4_and_v6_in_brackets_are_read_once_each() {
        let got = parse_peers(" 10.0.0.5:51413, [::1]:6881 10.0.0.5:51413 ").unwrap();
        let want: Vec<SocketAddr> = vec![
            "10.0.0.5:51413".parse().unwrap(),
            "[::1]:6881".parse().unwrap(),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn bad_addresses_say_what_is_expected() {
        assert!(parse_peers("").unwrap_err().contains("IP:port"));
        assert!(parse_peers("10.0.0.5").unwrap_err().contains("not IP:port"));
        assert!(parse_peers("::1:6881").unwrap_err().contains("brackets"));
        assert!(parse_peers("10.0.0.5:0").unwrap_err().contains("port"));
        assert!(
            parse_peers("0.0.0.0:80")
                .unwrap_err()
                .contains("cannot be dialled")
        );
        assert!(
            parse_peers("host.example:80")
                .unwrap_err()
                .contains("not IP:port")
        );
    }

    #[test]
    fn submit_sends_one_command_per_peer_for_the_torrent() {
        let out = submit(&typed("127.0.0.1:7000 [::1]:7001"), TorrentId(3)).unwrap();
        assert_eq!(out.commands.len(), 2);
        assert!(matches!(
            out.commands[0],
            Command::AddPeer { id: TorrentId(3), addr } if addr.port() == 7000
        ));
        assert!(out.notice.unwrap().starts_with("2 peers added"));
        let one = submit(&typed("127.0.0.1:7000"), TorrentId(3)).unwrap();
        assert!(one.notice.unwrap().starts_with("peer 127.0.0.1:7000 added"));
        assert!(submit(&typed("nope"), TorrentId(3)).is_err());
    }
}
