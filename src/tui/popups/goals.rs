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

/// The dialog for `torrents` (labelled `what`): filled with the torrent's own goals when
/// it is the one whose detail the snapshot holds, else `default` everywhere; the intro
/// says what `default` means now (the session's values).
pub fn open(snapshot: &Snapshot, torrents: Vec<TorrentId>, what: &str, sym: &Symbols) -> Form {
    let own = match (torrents.as_slice(), &snapshot.detail) {
        ([id], Some(d)) if d.id == *id => d.goals.limits,
        _ => ShareLimits::default(),
    };
    let what = format::fit_with(what, 40, sym.ascii, sym.ellipsis);
    let fields = vec![
        Field::prefilled("Ratio".to_owned(), ratio_text(own.ratio)),
        Field::prefilled("Seeding time".to_owned(), minutes_text(own.seeding_minutes)),
        Field::prefilled(
            "Inactive time".to_owned(),
            minutes_text(own.inactive_minutes),
        ),
    ];
    let mut form = Form::new(
        FormKind::Goals { torrents },
        format!("Seeding goals: {what}"),
        fields,
    );
    form.intro = vec![
        "Stop seeding at: ratio 2.0; time 7d, 12h, 30m.".to_owned(),
        "none = no limit; default = the [seeding] config's.".to_owned(),
    ];
    form
}

/// The command that sets the goals typed into `form` for `torrents`.
///
/// Errors: the label of the first field that does not read and why.
pub fn submit(form: &Form, torrents: &[TorrentId]) -> Submitted {
    let value = |i: usize| form.fields.get(i).map_or("default", Field::value);
    let label = |i: usize| form.fields.get(i).map_or("", |f| f.label.as_str());
    let ratio = parse_ratio(value(0)).map_err(|e| format!("{}: {e}", label(0)))?;
    let seeding = parse_minutes(value(1)).map_err(|e| format!("{}: {e}", label(1)))?;
    let inactive = parse_minutes(value(2)).map_err(|e| format!("{}: {e}", label(2)))?;
    let limits = ShareLimits {
        ratio,
        seeding_minutes: seeding,
        inactive_minutes: inactive,
    };
    let notice = format!(
        "seeding goals: ratio {}, seeding time {}, inactive time {}",
        ratio_text(ratio),
        minutes_text(seeding),
        minutes_text(inactive)
    );
    Ok(Outcome {
        commands: vec![Command::SetShareLimits {
            ids: torrents.to_vec(),
            limits,
        }],
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
        let out = submit(&form, &ids).unwrap();
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
            submit(&form, &ids)
                .unwrap_err()
                .starts_with("Seeding time: ")
        );
    }
}
