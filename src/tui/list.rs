//! The torrent list's view: which rows show (state filter, search) in which order (sort
//! column and direction). The result is an index into the snapshot's rows, cached and
//! rebuilt only when the snapshot (by `seq`) or the view changes.

use std::cmp::Ordering;

use crate::api::{Snapshot, TorrentRow, TorrentState};

use super::cycle;

/// A sortable column of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SortColumn {
    /// The engine's order (the order torrents were added).
    #[default]
    Added,
    /// Name, case-insensitive.
    Name,
    /// Payload size.
    Size,
    /// Fraction done.
    Progress,
    /// State.
    State,
    /// Download rate.
    Down,
    /// Upload rate.
    Up,
    /// Time left (unknown last).
    Eta,
    /// Share ratio.
    Ratio,
    /// Connected seeds.
    Seeds,
    /// Connected peers.
    Peers,
    /// Place in the queue (shown while queueing is on).
    Queue,
    /// Category, by name (none last).
    Category,
    /// Tags, as shown (none last).
    Tags,
}

impl SortColumn {
    /// Every column in the order `s` cycles through.
    pub const ALL: [SortColumn; 14] = [
        SortColumn::Added,
        SortColumn::Name,
        SortColumn::Size,
        SortColumn::Progress,
        SortColumn::State,
        SortColumn::Down,
        SortColumn::Up,
        SortColumn::Eta,
        SortColumn::Ratio,
        SortColumn::Seeds,
        SortColumn::Peers,
        SortColumn::Queue,
        SortColumn::Category,
        SortColumn::Tags,
    ];

    /// The column's name in the config's `columns` (`"down"`, `"eta"`, ...).
    pub fn column_name(self) -> &'static str {
        match self {
            SortColumn::Added => "added",
            SortColumn::Name => "name",
            SortColumn::Size => "size",
            SortColumn::Progress => "progress",
            SortColumn::State => "state",
            SortColumn::Down => "down",
            SortColumn::Up => "up",
            SortColumn::Eta => "eta",
            SortColumn::Ratio => "ratio",
            SortColumn::Seeds => "seeds",
            SortColumn::Peers => "peers",
            SortColumn::Queue => "queue",
            SortColumn::Category => "category",
            SortColumn::Tags => "tags",
        }
    }

    /// Label for the filter bar, e.g. `"name"`.
    pub fn label(self) -> &'static str {
        match self {
            SortColumn::Added => "added",
            SortColumn::Name => "name",
            SortColumn::Size => "size",
            SortColumn::Progress => "progress",
            SortColumn::State => "state",
            SortColumn::Down => "down rate",
            SortColumn::Up => "up rate",
            SortColumn::Eta => "ETA",
            SortColumn::Ratio => "ratio",
            SortColumn::Seeds => "seeds",
            SortColumn::Peers => "peers",
            SortColumn::Queue => "queue place",
            SortColumn::Category => "category",
            SortColumn::Tags => "tags",
        }
    }

    /// The next column (wrapping).
    pub fn next(self) -> SortColumn {
        cycle::step(&Self::ALL, self, true)
    }

    /// This column's bit in a set of columns (see [`SortColumn::next_shown`]).
    pub fn bit(self) -> u16 {
        let i = Self::ALL.iter().position(|c| *c == self).unwrap_or(0);
        1 << i
    }

    /// The next column (wrapping) among those in `shown`, a set of [`SortColumn::bit`]s
    /// (the columns the list drew last; 0 = not drawn yet, every column): `s` never sorts
    /// by a column the terminal is too narrow to show. [`SortColumn::Added`] (the engine's
    /// order) is always in the cycle.
    pub fn next_shown(self, shown: u16) -> SortColumn {
        let order: Vec<SortColumn> = Self::ALL
            .iter()
            .copied()
            .filter(|c| shown == 0 || *c == SortColumn::Added || shown & c.bit() != 0)
            .collect();
        cycle::step(&order, self, true)
    }

    /// Whether the natural order of this column is biggest first (rates, sizes).
    fn descending_by_default(self) -> bool {
        matches!(
            self,
            SortColumn::Size
                | SortColumn::Down
                | SortColumn::Up
                | SortColumn::Ratio
                | SortColumn::Seeds
                | SortColumn::Peers
        )
    }
}

/// How many state filters there are.
pub const FILTERS: usize = 7;

/// Which states the list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StateFilter {
    /// Every torrent.
    #[default]
    All,
    /// Downloading or fetching metadata.
    Downloading,
    /// Seeding or completed.
    Seeding,
    /// Paused.
    Paused,
    /// Waiting for a slot of the queue (download or seed).
    Queued,
    /// Checking, waiting to check, or moving its files.
    Checking,
    /// In error.
    Error,
}

impl StateFilter {
    /// Every filter in the order `f` cycles through.
    pub const ALL: [StateFilter; FILTERS] = [
        StateFilter::All,
        StateFilter::Downloading,
        StateFilter::Seeding,
        StateFilter::Paused,
        StateFilter::Queued,
        StateFilter::Checking,
        StateFilter::Error,
    ];

    /// Label, e.g. `"Seeding"`.
    pub fn label(self) -> &'static str {
        match self {
            StateFilter::All => "All",
            StateFilter::Downloading => "Downloading",
            StateFilter::Seeding => "Seeding",
            StateFilter::Paused => "Paused",
            StateFilter::Queued => "Queued",
            StateFilter::Checking => "Checking",
            StateFilter::Error => "Error",
        }
    }

    /// Whether `state` passes.
    pub fn accepts(self, state: TorrentState) -> bool {
        use TorrentState as S;
        match self {
            StateFilter::All => true,
            StateFilter::Downloading => matches!(state, S::Downloading | S::FetchingMetadata),
            StateFilter::Seeding => matches!(state, S::Seeding | S::Completed),
            StateFilter::Paused => state == S::Paused,
            StateFilter::Queued => matches!(state, S::QueuedDownload | S::QueuedSeed),
            StateFilter::Checking => matches!(state, S::Checking | S::Queued | S::Moving),
            StateFilter::Error => state == S::Error,
        }
    }

    /// The one filter besides [`StateFilter::All`] that shows `state`.
    pub fn of(state: TorrentState) -> StateFilter {
        use TorrentState as S;
        match state {
            S::Downloading | S::FetchingMetadata => StateFilter::Downloading,
            S::Seeding | S::Completed => StateFilter::Seeding,
            S::Paused => StateFilter::Paused,
            S::QueuedDownload | S::QueuedSeed => StateFilter::Queued,
            S::Checking | S::Queued | S::Moving => StateFilter::Checking,
            S::Error => StateFilter::Error,
        }
    }

    /// The next (`forward`) or previous filter, wrapping.
    pub fn step(self, forward: bool) -> StateFilter {
        cycle::step(&Self::ALL, self, forward)
    }
}

/// How many of `rows` each filter shows, in [`StateFilter::ALL`] order (one pass).
pub fn counts(rows: &[std::sync::Arc<TorrentRow>]) -> [usize; FILTERS] {
    let mut counts = [0; FILTERS];
    counts[0] = rows.len();
    for row in rows {
        let filter = StateFilter::of(row.state);
        if let Some(i) = StateFilter::ALL.iter().position(|f| *f == filter) {
            counts[i] += 1;
        }
    }
    counts
}

/// How the list is filtered and ordered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// Sort column.
    pub sort: SortColumn,
    /// Reverse the column's natural order.
    pub reverse: bool,
    /// State filter.
    pub filter: StateFilter,
    /// Search text (matched case-insensitively anywhere in the name); empty: no search.
    pub query: String,
    /// Category filter (key `v`): a category shows its subcategories' torrents too.
    pub category: LabelFilter,
    /// Tag filter (key `V`).
    pub tag: LabelFilter,
}

/// A category or tag filter of the list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum LabelFilter {
    /// Every torrent.
    #[default]
    All,
    /// Torrents with this category (or one of its subcategories) or tag.
    Is(String),
    /// Torrents without a category (without any tag).
    None,
}

impl LabelFilter {
    /// The next filter after this one in the cycle all, each of `names` in order, none;
    /// a filter for a name no longer in `names` starts the cycle over.
    pub fn next(&self, names: &[String]) -> LabelFilter {
        match self {
            LabelFilter::All => names
                .first()
                .map_or(LabelFilter::None, |n| LabelFilter::Is(n.clone())),
            LabelFilter::Is(n) => match names.iter().position(|x| x == n) {
                Some(i) if i + 1 < names.len() => LabelFilter::Is(names[i + 1].clone()),
                Some(_) => LabelFilter::None,
                None => LabelFilter::All.next(names),
            },
            LabelFilter::None => LabelFilter::All,
        }
    }

    /// Whether a row with category `category` passes (a category filter).
    pub fn accepts_category(&self, category: &str) -> bool {
        match self {
            LabelFilter::All => true,
            LabelFilter::Is(c) => crate::api::in_category(category, c),
            LabelFilter::None => category.is_empty(),
        }
    }

    /// Whether a row with `tags` passes (a tag filter).
    pub fn accepts_tags(&self, tags: &[String]) -> bool {
        match self {
            LabelFilter::All => true,
            LabelFilter::Is(t) => tags.contains(t),
            LabelFilter::None => tags.is_empty(),
        }
    }

    /// For the top bar and the view file: `None` for all, `"-"` for none, else the name.
    pub fn label(&self) -> Option<&str> {
        match self {
            LabelFilter::All => None,
            LabelFilter::Is(n) => Some(n),
            LabelFilter::None => Some("-"),
        }
    }

    /// [`LabelFilter::label`] read back.
    pub fn from_label(label: Option<&str>) -> LabelFilter {
        match label {
            None | Some("") => LabelFilter::All,
            Some("-") => LabelFilter::None,
            Some(n) => LabelFilter::Is(n.to_owned()),
        }
    }
}

/// The list's columns the config's `columns` names (any order, case-insensitive; the
/// name column is always shown). They keep their place on screen, and a narrow terminal
/// still gives up some by priority.
///
/// Errors: a name that is no column, with the names there are.
pub fn parse_columns(names: &[String]) -> Result<Vec<SortColumn>, String> {
    let mut picked = vec![SortColumn::Name];
    for name in names {
        let column = SortColumn::ALL
            .into_iter()
            .find(|c| c.column_name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                let known: Vec<&str> = SortColumn::ALL.iter().map(|c| c.column_name()).collect();
                format!(
                    "columns: no column is called {name:?} (the columns: {})",
                    known.join(", ")
                )
            })?;
        if !picked.contains(&column) {
            picked.push(column);
        }
    }
    Ok(picked)
}

impl View {
    /// Whether the list runs biggest first (Z→A, newest, fastest, largest): the column's
    /// natural order, turned round by `reverse`. The sort marker shows this, one meaning
    /// for every column: ▲ smallest first, ▼ biggest first.
    pub fn descending(&self) -> bool {
        self.sort.descending_by_default() != self.reverse
    }
}

/// Case-insensitive, Unicode-aware substring match (`query_lower` already lower-cased).
pub fn matches(name: &str, query_lower: &str) -> bool {
    query_lower.is_empty() || name.to_lowercase().contains(query_lower)
}

fn state_rank(s: TorrentState) -> u8 {
    use TorrentState as S;
    match s {
        S::Error => 0,
        S::Downloading => 1,
        S::FetchingMetadata => 2,
        S::Checking => 3,
        S::Moving => 4,
        S::Queued => 5,
        S::QueuedDownload => 6,
        S::Seeding => 7,
        S::QueuedSeed => 8,
        S::Completed => 9,
        S::Paused => 10,
    }
}

/// A row's place by progress: its fraction done, and below every known one (0 % too) a
/// magnet link whose size is not known yet, so it never sorts among the finished.
fn progress_key(row: &TorrentRow) -> f64 {
    if row.size_known() {
        row.progress()
    } else {
        -1.0
    }
}

fn compare(a: &TorrentRow, b: &TorrentRow, column: SortColumn) -> Ordering {
    match column {
        SortColumn::Added => Ordering::Equal,
        SortColumn::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        SortColumn::Size => a.size.cmp(&b.size),
        SortColumn::Progress => progress_key(a).total_cmp(&progress_key(b)),
        SortColumn::State => state_rank(a.state).cmp(&state_rank(b.state)),
        SortColumn::Down => a.down_rate.cmp(&b.down_rate),
        SortColumn::Up => a.up_rate.cmp(&b.up_rate),
        // unknown ETAs go last
        SortColumn::Eta => a
            .eta_secs
            .unwrap_or(u64::MAX)
            .cmp(&b.eta_secs.unwrap_or(u64::MAX)),
        SortColumn::Ratio => a
            .ratio()
            .unwrap_or(-1.0)
            .total_cmp(&b.ratio().unwrap_or(-1.0)),
        SortColumn::Seeds => a.seeds.cmp(&b.seeds),
        SortColumn::Peers => a.peers.cmp(&b.peers),
        SortColumn::Queue => a.queue_pos.cmp(&b.queue_pos),
        // none last
        SortColumn::Category => {
            (a.category.is_empty(), &a.category).cmp(&(b.category.is_empty(), &b.category))
        }
        SortColumn::Tags => (a.tags.is_empty(), &a.tags).cmp(&(b.tags.is_empty(), &b.tags)),
    }
}

/// The indices of `rows` that pass `view`'s filter and search, in its order. Ties keep the
/// engine's order (stable sort), so rows with equal keys do not jump between snapshots.
pub fn build(rows: &[std::sync::Arc<TorrentRow>], view: &View) -> Vec<usize> {
    let query = view.query.to_lowercase();
    let mut index: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            view.filter.accepts(r.state)
                && view.category.accepts_category(&r.category)
                && view.tag.accepts_tags(&r.tags)
                && matches(&r.name, &query)
        })
        .map(|(i, _)| i)
        .collect();
    let descending = view.descending();
    if view.sort == SortColumn::Name {
        // lower-case each name once, not once per comparison
        let mut keyed: Vec<(String, usize)> = index
            .iter()
            .map(|&i| (rows[i].name.to_lowercase(), i))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        if descending {
            keyed.reverse();
        }
        return keyed.into_iter().map(|(_, i)| i).collect();
    }
    if view.sort != SortColumn::Added {
        index.sort_by(|&a, &b| {
            let o = compare(&rows[a], &rows[b], view.sort);
            if descending { o.reverse() } else { o }
        });
    } else if view.reverse {
        index.reverse();
    }
    index
}

/// The cached index for one snapshot and one view.
#[derive(Debug, Default)]
pub struct Cache {
    key: Option<(u64, View)>,
    index: Vec<usize>,
}

impl Cache {
    /// The index for `snapshot` and `view`, rebuilt only when either changed.
    pub fn get(&mut self, snapshot: &Snapshot, view: &View) -> &[usize] {
        let fresh = matches!(&self.key, Some((seq, v)) if *seq == snapshot.seq && v == view);
        if !fresh {
            self.index = build(&snapshot.rows, view);
            self.key = Some((snapshot.seq, view.clone()));
        }
        &self.index
    }

    /// Drops the cached index (e.g. a snapshot replaced without a new `seq`, in tests).
    pub fn invalidate(&mut self) {
        self.key = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::TorrentId;

    fn row(id: u64, name: &str, state: TorrentState, size: u64, down: u64) -> Arc<TorrentRow> {
        Arc::new(TorrentRow {
            id: TorrentId(id),
            name: name.to_owned(),
            state,
            size,
            down_rate: down,
            ..TorrentRow::default()
        })
    }

    fn rows() -> Vec<Arc<TorrentRow>> {
        vec![
            row(1, "Ubuntu 24.04", TorrentState::Downloading, 5, 300),
            row(2, "débian", TorrentState::Seeding, 9, 0),
            row(3, "ÉCOLE Ünïcode", TorrentState::Paused, 1, 0),
            row(4, "arch", TorrentState::Error, 7, 0),
            row(5, "日本語 ファイル", TorrentState::Checking, 3, 50),
            row(6, "Fedora", TorrentState::Downloading, 5, 300),
        ]
    }

    fn ids(rows: &[Arc<TorrentRow>], index: &[usize]) -> Vec<u64> {
        index.iter().map(|&i| rows[i].id.0).collect()
    }

    #[test]
    fn sorting_by_columns_and_reverse() {
        let r = rows();
        let mut v = View::default();
        assert_eq!(ids(&r, &build(&r, &v)), [1, 2, 3, 4, 5, 6]);
        v.reverse = true;
        assert_eq!(ids(&r, &build(&r, &v)), [6, 5, 4, 3, 2, 1]);
        v = View {
            sort: SortColumn::Name,
            ..View::default()
        };
        assert_eq!(
            ids(&r, &build(&r, &v)),
            [4, 2, 6, 1, 3, 5],
            "case-insensitive"
        );
        v.sort = SortColumn::Size;
        // biggest first; ties keep the engine's order
        assert_eq!(ids(&r, &build(&r, &v)), [2, 4, 1, 6, 5, 3]);
        v.reverse = true;
        assert_eq!(ids(&r, &build(&r, &v)), [3, 5, 1, 6, 4, 2]);
        v = View {
            sort: SortColumn::Down,
            ..View::default()
        };
        assert_eq!(ids(&r, &build(&r, &v))[..3], [1, 6, 5]);
        v.sort = SortColumn::State;
        assert_eq!(ids(&r, &build(&r, &v))[0], 4, "errors first");
        let mut c = SortColumn::Added;
        for _ in 0..SortColumn::ALL.len() {
            c = c.next();
        }
        assert_eq!(c, SortColumn::Added);
    }

    #[test]
    fn the_config_picks_columns_by_name() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all: Vec<String> = SortColumn::ALL
            .iter()
            .map(|c| c.column_name().to_owned())
            .collect();
        let picked = parse_columns(&all).unwrap();
        assert_eq!(picked.len(), SortColumn::ALL.len());
        assert_eq!(
            parse_columns(&names(&["up", "Ratio", " peers ", "up"])).unwrap(),
            [
                SortColumn::Name,
                SortColumn::Up,
                SortColumn::Ratio,
                SortColumn::Peers
            ],
            "name always, each once"
        );
        let err = parse_columns(&names(&["speed"])).unwrap_err();
        assert!(
            err.contains("\"speed\"") && err.contains("down, up"),
            "{err}"
        );
        // the config's default names every column (Queue, Category and Tags show only when
        // they mean something): the binary's list is the one the tests draw
        let mut default = parse_columns(&crate::config::ui::UiConfig::default().columns).unwrap();
        let mut every = SortColumn::ALL.to_vec();
        default.sort_by_key(|c| c.column_name());
        every.sort_by_key(|c| c.column_name());
        assert_eq!(default, every);
    }

    #[test]
    fn a_magnet_without_metadata_sorts_below_every_known_progress() {
        let known = |id, done, state| {
            Arc::new(TorrentRow {
                id: TorrentId(id),
                size: 10,
                done,
                pieces_total: 1,
                state,
                ..TorrentRow::default()
            })
        };
        let magnet = |id, state| {
            Arc::new(TorrentRow {
                id: TorrentId(id),
                state,
                ..TorrentRow::default()
            })
        };
        let r = vec![
            known(1, 10, TorrentState::Seeding),
            magnet(2, TorrentState::FetchingMetadata),
            known(3, 0, TorrentState::Downloading),
            magnet(4, TorrentState::Paused),
            known(5, 5, TorrentState::Downloading),
        ];
        let v = View {
            sort: SortColumn::Progress,
            ..View::default()
        };
        let order = ids(&r, &build(&r, &v));
        let descending = SortColumn::Progress.descending_by_default();
        let expected: [u64; 5] = if descending {
            [1, 5, 3, 2, 4]
        } else {
            [2, 4, 3, 5, 1]
        };
        assert_eq!(order, expected, "the magnets sort apart from the seeds");
    }

    #[test]
    fn every_state_is_counted_under_the_one_filter_that_shows_it() {
        use TorrentState as S;
        let states = [
            S::Downloading,
            S::FetchingMetadata,
            S::Seeding,
            S::Completed,
            S::Paused,
            S::QueuedDownload,
            S::QueuedSeed,
            S::Checking,
            S::Queued,
            S::Moving,
            S::Error,
        ];
        for state in states {
            let showing: Vec<StateFilter> = StateFilter::ALL[1..]
                .iter()
                .copied()
                .filter(|f| f.accepts(state))
                .collect();
            assert_eq!(showing, [StateFilter::of(state)], "{state:?}");
        }
        let rows: Vec<Arc<TorrentRow>> = states
            .iter()
            .enumerate()
            .map(|(i, s)| row(i as u64, "x", *s, 0, 0))
            .collect();
        assert_eq!(counts(&rows), [11, 2, 2, 1, 2, 3, 1]);
        assert_eq!(counts(&[]), [0; FILTERS]);
    }

    #[test]
    fn filtering_by_state() {
        let r = rows();
        let ids_for = |f| {
            ids(
                &r,
                &build(
                    &r,
                    &View {
                        filter: f,
                        ..View::default()
                    },
                ),
            )
        };
        assert_eq!(ids_for(StateFilter::Downloading), [1, 6]);
        assert_eq!(ids_for(StateFilter::Seeding), [2]);
        assert_eq!(ids_for(StateFilter::Paused), [3]);
        assert_eq!(ids_for(StateFilter::Checking), [5]);
        assert_eq!(ids_for(StateFilter::Error), [4]);
        assert_eq!(StateFilter::All.step(false), StateFilter::Error);
        assert_eq!(StateFilter::Error.step(true), StateFilter::All);
    }

    #[test]
    fn search_is_case_insensitive_and_unicode_aware() {
        let r = rows();
        let find = |q: &str| {
            ids(
                &r,
                &build(
                    &r,
                    &View {
                        query: q.to_owned(),
                        ..View::default()
                    },
                ),
            )
        };
        assert_eq!(find("UBUNTU"), [1]);
        assert_eq!(find("DÉB"), [2]);
        assert_eq!(find("école"), [3]);
        assert_eq!(find("ünï"), [3]);
        assert_eq!(find("ファイル"), [5]);
        assert_eq!(find("A"), [2, 4, 6]);
        assert_eq!(find(""), [1, 2, 3, 4, 5, 6]);
        assert!(find("zzz").is_empty());
        // search and filter combine
        let v = View {
            query: "e".to_owned(),
            filter: StateFilter::Downloading,
            ..View::default()
        };
        assert_eq!(ids(&r, &build(&r, &v)), [6]);
    }

    #[test]
    fn cache_rebuilds_only_on_change() {
        let r = rows();
        let snap = Snapshot {
            seq: 1,
            rows: r.clone().into(),
            ..Snapshot::default()
        };
        let mut cache = Cache::default();
        let v = View::default();
        assert_eq!(cache.get(&snap, &v).len(), 6);
        let fewer = Snapshot {
            seq: 1,
            rows: r[..2].to_vec().into(),
            ..Snapshot::default()
        };
        assert_eq!(cache.get(&fewer, &v).len(), 6, "same seq and view: cached");
        let newer = Snapshot { seq: 2, ..fewer };
        assert_eq!(cache.get(&newer, &v).len(), 2);
        let v2 = View {
            filter: StateFilter::Seeding,
            ..View::default()
        };
        assert_eq!(cache.get(&newer, &v2).len(), 1);
    }

    #[test]
    fn category_and_tag_filters_cycle_and_filter_alongside_the_state_filter() {
        let labelled = |id: u64, state, cat: &str, tags: &[&str]| {
            Arc::new(TorrentRow {
                id: TorrentId(id),
                state,
                category: cat.to_owned(),
                tags: tags.iter().map(|t| (*t).to_owned()).collect(),
                ..TorrentRow::default()
            })
        };
        let r = vec![
            labelled(1, TorrentState::Seeding, "tv", &["hd"]),
            labelled(2, TorrentState::Downloading, "tv/hd", &[]),
            labelled(3, TorrentState::Seeding, "", &["hd", "old"]),
            labelled(4, TorrentState::Seeding, "tvx", &["old"]),
        ];
        let names = ["tv".to_owned(), "tv/hd".to_owned(), "tvx".to_owned()];
        let mut v = View::default();
        let mut seen = Vec::new();
        for _ in 0..5 {
            v.category = v.category.next(&names);
            seen.push((
                v.category.label().map(str::to_owned),
                ids(&r, &build(&r, &v)),
            ));
        }
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(
            seen,
            [
                (s("tv"), vec![1, 2]),
                (s("tv/hd"), vec![2]),
                (s("tvx"), vec![4]),
                (s("-"), vec![3]),
                (None, vec![1, 2, 3, 4]),
            ],
            "a category shows its subcategories, none the uncategorized"
        );
        v.tag = LabelFilter::Is("old".to_owned());
        assert_eq!(ids(&r, &build(&r, &v)), [3, 4]);
        v.filter = StateFilter::Seeding;
        v.category = LabelFilter::None;
        assert_eq!(ids(&r, &build(&r, &v)), [3], "all three filters at once");
        v = View {
            tag: LabelFilter::None,
            ..View::default()
        };
        assert_eq!(ids(&r, &build(&r, &v)), [2]);
        // a name gone from the list starts the cycle over
        assert_eq!(
            LabelFilter::Is("gone".to_owned()).next(&names),
            LabelFilter::Is("tv".to_owned())
        );
        assert_eq!(LabelFilter::All.next(&[]), LabelFilter::None);
        for f in [
            LabelFilter::All,
            LabelFilter::None,
            LabelFilter::Is("a/b".into()),
        ] {
            assert_eq!(LabelFilter::from_label(f.label()), f);
        }
        v = View {
            sort: SortColumn::Category,
            ..View::default()
        };
        assert_eq!(ids(&r, &build(&r, &v)), [1, 2, 4, 3], "none last");
    }
}
