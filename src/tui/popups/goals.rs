//! The seeding goals dialog (qBittorrent's share limits) for the selected or marked
//! torrents: a ratio (`2.0`), a seeding time and an inactive seeding time (`7d`, `12h`,
//! `30m`), each `default` (the `[seeding]` config's) or `none`. Sends one
//! [`Command::SetShareLimits`] for all of them.

use crate::api::{Command, NO_LIMIT, ShareLimits, Snapshot, TorrentId, USE_GLOBAL};
use crate::tui::format;
use crate::tui::theme::Symbols;
use crate::units;

use super::form::{Field, Form, FormKind, Outcome, Submitted};

/// A ratio limit as the dialog shows it: `default`, `none` or `2.00`.
pub fn ratio_text(ratio: f64) -> String {
    if ratio <= USE_GLOBAL as f64 || ratio.is_nan() {
        "default".to_owned()
    } else if ratio < 0.0 {
        "none".to_owned()
    } else {
        format!("{ratio:.2}")
    }
}

/// A time limit (minutes) as the dialog shows it: `default`, `none` or `7d 0h`.
pub fn minutes_text(minutes: i64) -> String {
    match minutes {
        USE_GLOBAL => "default".to_owned(),
        m if m < 0 => "none".to_owned(),
        m => units::duration(m.unsigned_abs().saturating_mul(60)),
    }
}

/// Reads a ratio: `default`, `none` (also `-1`), or a number of 0 or more.
///
/// # Errors
/// A sentence naming `text`.
pub fn parse_ratio(text: &str) -> Result<f64, String> {
    let t = text.trim().to_ascii_lowercase();
    match t.as_str() {
        "default" | "" | "-2" => Ok(USE_GLOBAL as f64),
        "none" | "-1" => Ok(NO_LIMIT as f64),
        _ => match t.parse::<f64>() {
            Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
            _ => Err(format!(
                "cannot read {text:?} as a ratio: use a number like 2.0, none or default"
            )),
        },
    }
}

/// Reads a time limit into minutes: `default`, `none`, or a duration (`7d`, `12h`,
/// `1h30m`, `45m`; a bare number is seconds), rounded up to whole minutes.
///
/// # Errors
/// A sentence naming `text`.
pub fn parse_minutes(text: &str) -> Result<i64, String> {
    let t = text.trim().to_ascii_lowercase();
    match t.as_str() {
        "default" | "" => Ok(USE_GLOBAL),
        "none" => Ok(NO_LIMIT),
        _ => {
            let secs = units::parse_duration(&t).map_err(|e| format!("{e}, none or default"))?;
            i64::try_from(secs.div_ceil(60)).map_err(|_| format!("{text:?} is too long"))
        }
    }
}

/// What a field shows when the targets' own values differ; left so, each keeps its own.
pub const KEEP: &str = "keep";

/// The dialog for `torrents` (labelled `what`): each field filled with the targets' own
/// goal when they agree on it, else [`KEEP`] (submitting leaves each torrent's own value);
/// the intro says what `default` means now (the session's values).
pub fn open(snapshot: &Snapshot, torrents: Vec<TorrentId>, what: &str, sym: &Symbols) -> Form {
    let own: Vec<ShareLimits> = torrents
        .iter()
        .map(|id| {
            snapshot
                .row(*id)
                .map_or_else(ShareLimits::default, |r| r.share_limits)
        })
        .collect();
    let common = |text: fn(&ShareLimits) -> String| {
        let mut texts = own.iter().map(text);
        let first = texts.next().unwrap_or_else(|| "default".to_owned());
        if texts.all(|t| t == first) {
            first
        } else {
            KEEP.to_owned()
        }
    };
    let what = format::fit_with(what, 40, sym.ascii, sym.ellipsis);
    let fields = vec![
        Field::prefilled("Ratio".to_owned(), common(|l| ratio_text(l.ratio))),
        Field::prefilled(
            "Seeding time".to_owned(),
            common(|l| minutes_text(l.seeding_minutes)),
        ),
        Field::prefilled(
            "Inactive time".to_owned(),
            common(|l| minutes_text(l.inactive_minutes)),
        ),
    ];
    let mixed = fields.iter().any(|f| f.value() == KEEP);
    let mut form = Form::new(
        FormKind::Goals { torrents },
        format!("Seeding goals: {what}"),
        fields,
    );
    form.intro = vec![
        "Stop seeding at: ratio 2.0; time 7d, 12h, 30m.".to_owned(),
        "none = no limit; default = the [seeding] config's.".to_owned(),
    ];
    if mixed {
        form.intro
            .push("keep = each torrent keeps its own (they differ).".to_owned());
    }
    form
}

/// `text` read by `parse`, `None` for [`KEEP`].
fn field<T>(text: &str, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
    if text.trim().eq_ignore_ascii_case(KEEP) {
        Ok(None)
    } else {
        parse(text).map(Some)
    }
}

fn shown<T>(value: Option<T>, text: fn(T) -> String) -> String {
    value.map_or_else(|| "kept".to_owned(), text)
}

/// The commands that set the goals typed into `form` for `torrents`: one
/// [`Command::SetShareLimits`] per distinct result, a [`KEEP`] field taking each torrent's
/// own value from `snapshot`.
///
/// Errors: the label of the first field that does not read and why.
pub fn submit(form: &Form, torrents: &[TorrentId], snapshot: &Snapshot) -> Submitted {
    let value = |i: usize| form.fields.get(i).map_or("default", Field::value);
    let label = |i: usize| form.fields.get(i).map_or("", |f| f.label.as_str());
    let ratio = field(value(0), parse_ratio).map_err(|e| format!("{}: {e}", label(0)))?;
    let seeding = field(value(1), parse_minutes).map_err(|e| format!("{}: {e}", label(1)))?;
    let inactive = field(value(2), parse_minutes).map_err(|e| format!("{}: {e}", label(2)))?;
    let mut commands: Vec<Command> = Vec::new();
    for id in torrents {
        let own = snapshot
            .row(*id)
            .map_or_else(ShareLimits::default, |r| r.share_limits);
        let limits = ShareLimits {
            ratio: ratio.unwrap_or(own.ratio),
            seeding_minutes: seeding.unwrap_or(own.seeding_minutes),
            inactive_minutes: inactive.unwrap_or(own.inactive_minutes),
        };
        let same = commands.iter_mut().find_map(|c| match c {
            Command::SetShareLimits { ids, limits: l } if *l == limits => Some(ids),
            _ => None,
        });
        match same {
            Some(ids) => ids.push(*id),
            None => commands.push(Command::SetShareLimits {
                ids: vec![*id],
                limits,
            }),
        }
    }
    let notice = format!(
        "seeding goals: ratio {}, seeding time {}, inactive time {}",
        shown(ratio, ratio_text),
        shown(seeding, minutes_text),
        shown(inactive, minutes_text)
    );
    Ok(Outcome {
        commands,
        notice: Some(notice),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::popups::form::FieldKind;
    use crate::tui::theme::Theme;

    #[test]
    fn the_three_fields_read_numbers_durations_none_and_default() {
        assert_eq!(parse_ratio("2.0"), Ok(2.0));
        assert_eq!(parse_ratio(" none "), Ok(-1.0));
        assert_eq!(parse_ratio("Default"), Ok(-2.0));
        assert!(parse_ratio("-3").is_err());
        assert!(parse_ratio("lots").unwrap_err().contains("\"lots\""));
        assert_eq!(parse_minutes("7d"), Ok(7 * 24 * 60));
        assert_eq!(parse_minutes("12h"), Ok(12 * 60));
        assert_eq!(parse_minutes("1h30m"), Ok(90));
        assert_eq!(parse_minutes("90"), Ok(2), "seconds, rounded up to minutes");
        assert_eq!(parse_minutes("none"), Ok(-1));
        assert_eq!(parse_minutes("default"), Ok(-2));
        assert!(parse_minutes("7x").is_err());
        // what the dialog shows reads back
        for m in [-2, -1, 0, 90, 7 * 24 * 60] {
            assert_eq!(parse_minutes(&minutes_text(m)), Ok(m), "{m}");
        }
        for r in [-2.0, -1.0, 0.0, 2.0, 1.5] {
            assert_eq!(parse_ratio(&ratio_text(r)), Ok(r), "{r}");
        }
    }

    #[test]
    fn submitting_sends_one_command_for_every_target() {
        let snap = Snapshot::default();
        let ids = vec![TorrentId(1), TorrentId(2)];
        let mut form = open(&snap, ids.clone(), "2 torrents", &Theme::default().sym);
        assert_eq!(form.title, "Seeding goals: 2 torrents");
        let values: Vec<&str> = form.fields.iter().map(Field::value).collect();
        assert_eq!(values, ["default", "default", "default"]);
        for (field, text) in form.fields.iter_mut().zip(["2.0", "7d", "none"]) {
            if let FieldKind::Text(f) = &mut field.kind {
                f.set(text);
            }
        }
        let out = submit(&form, &ids, &snap).unwrap();
        let [Command::SetShareLimits { ids: sent, limits }] = &out.commands[..] else {
            panic!("{:?}", out.commands);
        };
        assert_eq!(sent, &ids);
        assert_eq!(limits.ratio, 2.0);
        assert_eq!(limits.seeding_minutes, 7 * 24 * 60);
        assert_eq!(limits.inactive_minutes, -1);
        assert_eq!(
            out.notice.as_deref(),
            Some("seeding goals: ratio 2.00, seeding time 7d 0h, inactive time none")
        );
        if let FieldKind::Text(f) = &mut form.fields[1].kind {
            f.set("soon");
        }
        assert!(
            submit(&form, &ids, &snap)
                .unwrap_err()
                .starts_with("Seeding time: ")
        );
    }

    /// Several torrents with their own, different goals: the dialog does not offer
    /// "default" for what differs (Enter unchanged used to reset their own goals), and a
    /// field left at `keep` keeps each one's own value.
    #[test]
    fn goals_that_differ_are_kept_unless_typed_over() {
        use std::sync::Arc;
        let limits = |ratio, seeding| ShareLimits {
            ratio,
            seeding_minutes: seeding,
            inactive_minutes: -2,
        };
        let snap = Snapshot {
            rows: vec![
                Arc::new(crate::api::TorrentRow {
                    id: TorrentId(1),
                    share_limits: limits(2.0, 60),
                    ..Default::default()
                }),
                Arc::new(crate::api::TorrentRow {
                    id: TorrentId(2),
                    share_limits: limits(3.0, 60),
                    ..Default::default()
                }),
            ]
            .into(),
            ..Default::default()
        };
        let ids = vec![TorrentId(1), TorrentId(2)];
        let mut form = open(&snap, ids.clone(), "2 torrents", &Theme::default().sym);
        let values: Vec<&str> = form.fields.iter().map(Field::value).collect();
        assert_eq!(values, [KEEP, "1h 00m", "default"]);
        assert!(form.intro.iter().any(|l| l.starts_with("keep = ")));
        // Enter unchanged: each keeps what it had, no goal reset
        let out = submit(&form, &ids, &snap).unwrap();
        let sent: Vec<(Vec<TorrentId>, ShareLimits)> = out
            .commands
            .iter()
            .map(|c| match c {
                Command::SetShareLimits { ids, limits } => (ids.clone(), *limits),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            sent,
            [
                (vec![TorrentId(1)], limits(2.0, 60)),
                (vec![TorrentId(2)], limits(3.0, 60)),
            ]
        );
        // a ratio typed over `keep` goes to both: one command
        if let FieldKind::Text(f) = &mut form.fields[0].kind {
            f.set("1.5");
        }
        let out = submit(&form, &ids, &snap).unwrap();
        let [
            Command::SetShareLimits {
                ids: both,
                limits: l,
            },
        ] = &out.commands[..]
        else {
            panic!("{:?}", out.commands);
        };
        assert_eq!(both, &ids);
        assert_eq!(*l, limits(1.5, 60));
    }
}
