//! The rate limits dialog: the session's download and upload limits and, when torrents are
//! selected or marked, theirs, in bytes/s written the way the UI shows rates (`500K`,
//! `2.5M`, `1 MiB/s`; `0` or `unlimited` for none). Only limits that change are sent.

use crate::api::{Command, Snapshot, TorrentId};
use crate::tui::format;
use crate::tui::theme::Symbols;
use crate::units::{self, parse_rate};

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// A limit as the dialog shows it: `"unlimited"` for 0, else a rate (`"4.00 MiB/s"`).
fn shown(limit: u64) -> String {
    if limit == 0 {
        "unlimited".to_owned()
    } else {
        units::rate(limit)
    }
}

/// The dialog filled with the limits in effect, each selected so that typing replaces it: the session's, then (when `torrents` is
/// not empty) those of the one torrent (several torrents start at unlimited), labelled
/// with `what` (`"debian.iso"`, `"3 torrents"`).
pub fn open(snapshot: &Snapshot, torrents: Vec<TorrentId>, what: &str, sym: &Symbols) -> Form {
    let g = &snapshot.global;
    let mut fields = vec![
        Field::prefilled(
            format!("Session {} download", sym.down),
            shown(g.down_limit),
        ),
        Field::prefilled(format!("Session {} upload", sym.up), shown(g.up_limit)),
    ];
    if !torrents.is_empty() {
        let (d, u) = match torrents.as_slice() {
            [id] => snapshot
                .row(*id)
                .map_or((0, 0), |r| (r.down_limit, r.up_limit)),
            _ => (0, 0),
        };
        let what = format::fit_with(what, 30, sym.ascii, sym.ellipsis);
        fields.push(Field::prefilled(
            format!("{what} {} download", sym.down),
            shown(d),
        ));
        fields.push(Field::prefilled(
            format!("{what} {} upload", sym.up),
            shown(u),
        ));
    }
    let mut form = Form::new(FormKind::Limits { torrents }, "Rate limits", fields);
    form.intro = vec!["Bytes per second: 500K, 2.5M, 1 MiB/s; 0 or unlimited for none.".to_owned()];
    form
}

/// The commands that set the limits typed into `form` for `torrents`, compared with
/// `snapshot`: the session's limits when they differ, each torrent's when its own differ.
///
/// Errors: the label of the first field that does not read as a rate and why.
pub fn submit(form: &Form, torrents: &[TorrentId], snapshot: &Snapshot) -> Submitted {
    let mut values = Vec::new();
    for field in &form.fields {
        let v = parse_rate(field.value()).map_err(|e| format!("{}: {e}", field.label))?;
        values.push(v);
    }
    let mut commands = Vec::new();
    let g = &snapshot.global;
    if let [down, up, ..] = values[..]
        && (down != g.down_limit || up != g.up_limit)
    {
        commands.push(Command::SetLimits {
            download: down,
            upload: up,
        });
    }
    if let [_, _, down, up] = values[..] {
        for id in torrents {
            let same = snapshot
                .row(*id)
                .is_some_and(|r| r.down_limit == down && r.up_limit == up);
            if !same {
                commands.push(Command::SetTorrentLimits {
                    id: *id,
                    download: down,
                    upload: up,
                });
            }
        }
    }
    let notice = if commands.is_empty() {
        "limits unchanged".to_owned()
    } else {
        let mut parts = vec![format!(
            "session down {} up {}",
            shown(values[0]),
            shown(values[1])
        )];
        if values.len() == 4 {
            parts.push(format!(
                "torrent down {} up {}",
                shown(values[2]),
                shown(values[3])
            ));
        }
        format!("limits: {}", parts.join(", "))
    };
    Ok(Outcome {
        commands,
        notice: Some(notice),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::{GlobalStats, TorrentRow};
    use crate::tui::popups::form::FieldKind;
    use crate::tui::theme::Theme;

    const MIB: u64 = 1024 * 1024;

    /// A session limited to 4 MiB/s down, torrent 1 to 1 MiB/s up, torrent 2 unlimited.
    fn snapshot() -> Snapshot {
        let row = |id, up_limit| {
            Arc::new(TorrentRow {
                id: TorrentId(id),
                up_limit,
                ..TorrentRow::default()
            })
        };
        Snapshot {
            global: GlobalStats {
                down_limit: 4 * MIB,
                ..GlobalStats::default()
            },
            rows: vec![row(1, MIB), row(2, 0)].into(),
            ..Snapshot::default()
        }
    }

    fn typed(mut form: Form, values: &[&str]) -> Form {
        for (field, text) in form.fields.iter_mut().zip(values) {
            if let FieldKind::Text(f) = &mut field.kind {
                f.set(*text);
            }
        }
        form
    }

    fn sym() -> Symbols {
        Theme::default().sym
    }

    #[test]
    fn opens_with_the_limits_in_effect() {
        let snap = snapshot();
        let form = open(&snap, vec![], "", &sym());
        let values: Vec<&str> = form.fields.iter().map(Field::value).collect();
        assert_eq!(values, ["4.00 MiB/s", "unlimited"], "session only");
        let form = open(&snap, vec![TorrentId(1)], "debian.iso", &sym());
        let values: Vec<&str> = form.fields.iter().map(Field::value).collect();
        assert_eq!(
            values,
            ["4.00 MiB/s", "unlimited", "unlimited", "1.00 MiB/s"]
        );
        assert!(form.fields[2].label.starts_with("debian.iso "));
        let form = open(
            &snap,
            vec![TorrentId(1), TorrentId(2)],
            "2 torrents",
            &sym(),
        );
        assert_eq!(
            form.fields[3].value(),
            "unlimited",
            "several: from unlimited"
        );
        assert_eq!(
            form.kind,
            FormKind::Limits {
                torrents: vec![TorrentId(1), TorrentId(2)]
            }
        );
    }

    #[test]
    fn only_changed_limits_are_sent() {
        let snap = snapshot();
        let ids = [TorrentId(1), TorrentId(2)];
        let form = open(&snap, ids.to_vec(), "2 torrents", &sym());
        // unchanged session, torrent 1 already at 0 / 1M
        let outcome = submit(&typed(form.clone(), &["4M", "0", "0", "1M"]), &ids, &snap).unwrap();
        assert!(
            matches!(
                outcome.commands[..],
                [Command::SetTorrentLimits {
                    id: TorrentId(2),
                    download: 0,
                    upload: MIB
                }]
            ),
            "{outcome:?}"
        );
        assert_eq!(
            outcome.notice.as_deref(),
            Some(
                "limits: session down 4.00 MiB/s up unlimited, torrent down unlimited up 1.00 MiB/s"
            )
        );
        let outcome = submit(
            &typed(form.clone(), &["4 MiB/s", "none", "0", "0"]),
            &ids[..1],
            &snap,
        )
        .unwrap();
        assert!(
            matches!(
                outcome.commands[..],
                [Command::SetTorrentLimits {
                    id: TorrentId(1),
                    download: 0,
                    upload: 0
                }]
            ),
            "{outcome:?}"
        );
        let outcome = submit(&typed(form, &["500K", "", "0", "1M"]), &ids[..1], &snap).unwrap();
        assert!(
            matches!(
                outcome.commands[..],
                [Command::SetLimits {
                    download: 512_000,
                    upload: 0
                }]
            ),
            "{outcome:?}"
        );
    }

    #[test]
    fn typing_into_a_filled_in_limit_replaces_it() {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let snap = snapshot();
        let mut form = open(&snap, vec![], "", &sym());
        for c in "1M".chars() {
            form.edit(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert_eq!(form.fields[0].value(), "1M", "not 4.00 MiB/s1M");
        form.move_focus(true);
        for c in "500K".chars() {
            form.edit(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert_eq!(form.fields[1].value(), "500K", "not unlimited500K");
        let outcome = submit(&form, &[], &snap).unwrap();
        assert!(
            matches!(
                outcome.commands[..],
                [Command::SetLimits {
                    download: MIB,
                    upload: 512_000
                }]
            ),
            "{outcome:?}"
        );
    }

    #[test]
    fn nothing_changed_sends_nothing() {
        let snap = snapshot();
        let form = open(&snap, vec![], "", &sym());
        let outcome = submit(&form, &[], &snap).unwrap();
        assert!(outcome.commands.is_empty());
        assert_eq!(outcome.notice.as_deref(), Some("limits unchanged"));
    }

    #[test]
    fn a_value_that_is_no_rate_names_its_field() {
        let snap = snapshot();
        let form = typed(open(&snap, vec![], "", &sym()), &["1M", "12 parsecs"]);
        let err = submit(&form, &[], &snap).unwrap_err();
        assert!(err.starts_with("Session "), "{err}");
        assert!(
            err.contains("upload") && err.contains("cannot read"),
            "{err}"
        );
    }
}
