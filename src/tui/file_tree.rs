//! The file tree of the focused torrent: its files grouped into folders ([`Node`]s in
//! display order: in each folder its folders first, then its files, each by name in natural
//! order, see [`natural_cmp`]), the folders the user folded, the files marked for a bulk priority change,
//! and the priorities sent to the engine but not yet in its detail. Built from a
//! [`TorrentDetail`]; the Files tab draws it, the model changes it.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::api::{FilePriority, TorrentDetail, TorrentId};

/// `"skip"`, `"low"`, `"normal"`, `"high"`.
pub fn priority_label(p: FilePriority) -> &'static str {
    match p {
        FilePriority::Skip => "skip",
        FilePriority::Low => "low",
        FilePriority::Normal => "normal",
        FilePriority::High => "high",
    }
}

/// The next priority up (`up`) or down from `p`, staying at high and at skip.
pub fn step_priority(p: FilePriority, up: bool) -> FilePriority {
    use FilePriority as P;
    let order = [P::Skip, P::Low, P::Normal, P::High];
    let i = order.iter().position(|o| *o == p).unwrap_or(2);
    if up {
        order[(i + 1).min(3)]
    } else {
        order[i.saturating_sub(1)]
    }
}

/// One row of the tree: a folder or a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Nesting depth (0 = top level).
    pub depth: usize,
    /// Last path component.
    pub name: String,
    /// Full path inside the torrent (folders without a trailing `/`).
    pub path: String,
    /// The file's index in `TorrentDetail::files`; `None` for a folder.
    pub file: Option<usize>,
    /// Bytes (a folder: of every file under it).
    pub size: u64,
    /// Bytes done.
    pub done: u64,
    /// Priority; `None` for a folder whose files differ.
    pub priority: Option<FilePriority>,
    /// Indices of the files this row stands for.
    pub files: Vec<usize>,
    /// Index of the parent folder's node.
    pub parent: Option<usize>,
}

/// The file tree of the focused torrent and the user's folding and marks.
#[derive(Debug, Default)]
pub struct FileTree {
    source: Option<(TorrentId, Arc<TorrentDetail>)>,
    nodes: Vec<Node>,
    visible: Vec<usize>,
    collapsed: HashSet<String>,
    marks: HashSet<usize>,
    /// Priorities sent to the engine and not yet in its detail (so a second key press acts
    /// on the new priority, not the old one).
    pending: HashMap<usize, FilePriority>,
}

#[derive(Default)]
struct Dir {
    name: String,
    dirs: Vec<Dir>,
    files: Vec<usize>,
}

impl FileTree {
    /// Rebuilds the tree when `detail` differs from the one it was built from; folds and
    /// marks of the same torrent are kept.
    pub fn update(&mut self, detail: &Arc<TorrentDetail>) {
        if let Some((id, old)) = &self.source {
            if Arc::ptr_eq(old, detail) || (*id == detail.id && old.files == detail.files) {
                self.source = Some((detail.id, detail.clone()));
                return;
            }
            if *id != detail.id {
                self.collapsed.clear();
                self.marks.clear();
                self.pending.clear();
            }
        }
        self.pending
            .retain(|i, p| detail.files.get(*i).is_some_and(|f| f.priority != *p));
        self.source = Some((detail.id, detail.clone()));
        self.rebuild();
    }

    /// Notes priorities just sent to the engine: shown and used until its detail agrees.
    pub fn set_pending(&mut self, files: &[usize], priority: FilePriority) {
        for f in files {
            self.pending.insert(*f, priority);
        }
        self.rebuild();
    }

    /// What sanitising or renaming changed in file `file`'s path, if anything.
    pub fn changed(&self, file: usize) -> Option<&str> {
        let (_, detail) = self.source.as_ref()?;
        detail.files.get(file)?.changed.as_deref()
    }

    fn priority(&self, detail: &TorrentDetail, file: usize) -> FilePriority {
        self.pending
            .get(&file)
            .copied()
            .or_else(|| detail.files.get(file).map(|f| f.priority))
            .unwrap_or_default()
    }

    fn rebuild(&mut self) {
        let Some((_, detail)) = &self.source else {
            return;
        };
        let detail = detail.clone();
        let mut root = Dir::default();
        for (i, f) in detail.files.iter().enumerate() {
            let parts: Vec<&str> = f.path.split('/').filter(|p| !p.is_empty()).collect();
            let mut dir = &mut root;
            for part in parts.iter().take(parts.len().saturating_sub(1)) {
                let pos = match dir.dirs.iter().position(|d| d.name == *part) {
                    Some(p) => p,
                    None => {
                        dir.dirs.push(Dir {
                            name: (*part).to_owned(),
                            ..Dir::default()
                        });
                        dir.dirs.len() - 1
                    }
                };
                dir = &mut dir.dirs[pos];
            }
            dir.files.push(i);
        }
        sort_dir(&mut root, &detail);
        let mut nodes = Vec::new();
        flatten(&root, &detail, 0, "", None, &mut nodes);
        for node in &mut nodes {
            let mut prios = node.files.iter().map(|f| self.priority(&detail, *f));
            let first = prios.next();
            node.priority = match first {
                Some(p) if prios.all(|q| q == p) => Some(p),
                _ => None,
            };
        }
        self.nodes = nodes;
        self.marks.retain(|i| *i < detail.files.len());
        self.refresh_visible();
    }

    fn refresh_visible(&mut self) {
        self.visible.clear();
        let mut hidden_under: Option<usize> = None;
        for (i, node) in self.nodes.iter().enumerate() {
            if let Some(depth) = hidden_under {
                if node.depth > depth {
                    continue;
                }
                hidden_under = None;
            }
            self.visible.push(i);
            if node.file.is_none() && self.collapsed.contains(&node.path) {
                hidden_under = Some(node.depth);
            }
        }
    }

    /// Rows shown.
    pub fn visible_len(&self) -> usize {
        self.visible.len()
    }

    /// The node at visible row `row`.
    pub fn node(&self, row: usize) -> Option<&Node> {
        self.visible.get(row).and_then(|&i| self.nodes.get(i))
    }

    /// Whether the folder at `path` is folded.
    pub fn is_collapsed(&self, path: &str) -> bool {
        self.collapsed.contains(path)
    }

    /// Marked file indices.
    pub fn marks(&self) -> &HashSet<usize> {
        &self.marks
    }

    /// Folds or unfolds the folder at visible row `row` (a file: its folder).
    pub fn toggle_fold(&mut self, row: usize) {
        let Some(node) = self.node(row) else { return };
        let folder = match node.file {
            None => Some(node.path.clone()),
            Some(_) => node.parent.map(|p| self.nodes[p].path.clone()),
        };
        if let Some(path) = folder {
            if !self.collapsed.remove(&path) {
                self.collapsed.insert(path);
            }
            self.refresh_visible();
        }
    }

    /// Marks or unmarks the files of visible row `row`.
    pub fn toggle_mark(&mut self, row: usize) {
        let Some(node) = self.node(row) else { return };
        let files = node.files.clone();
        if files.iter().all(|f| self.marks.contains(f)) {
            for f in files {
                self.marks.remove(&f);
            }
        } else {
            self.marks.extend(files);
        }
    }

    /// The files a priority change applies to and their current priority: the marked files,
    /// else those of visible row `row`. A mixed folder counts as normal.
    pub fn targets(&self, row: usize) -> Option<(Vec<usize>, FilePriority)> {
        let detail = &self.source.as_ref()?.1;
        if !self.marks.is_empty() {
            let mut files: Vec<usize> = self.marks.iter().copied().collect();
            files.sort_unstable();
            let p = files
                .first()
                .map_or(FilePriority::Normal, |f| self.priority(detail, *f));
            return Some((files, p));
        }
        let node = self.node(row)?;
        Some((
            node.files.clone(),
            node.priority.unwrap_or(FilePriority::Normal),
        ))
    }
}

/// Names compared as people read them: case-insensitive, and runs of digits by their
/// value, so `ep2` comes before `ep10` and `S01` before `s02`. Names equal that way (`a`,
/// `A`, `ep01`, `ep1`) fall back to plain byte order, so the order is total and stable.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let mut x = a.chars().peekable();
    let mut y = b.chars().peekable();
    loop {
        match (x.peek().copied(), y.peek().copied()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = digit_run(&mut x);
                let m = digit_run(&mut y);
                // by value: fewer significant digits is smaller, then digit by digit
                let order = (n.len().cmp(&m.len())).then_with(|| n.cmp(&m));
                if order != Ordering::Equal {
                    return order;
                }
            }
            (Some(c), Some(d)) => {
                let order = c.to_lowercase().cmp(d.to_lowercase());
                if order != Ordering::Equal {
                    return order;
                }
                x.next();
                y.next();
            }
        }
    }
}

/// The run of ASCII digits at the front of `chars`, consumed, without leading zeros.
fn digit_run(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut run = String::new();
    while let Some(c) = chars.next_if(char::is_ascii_digit) {
        if !(run.is_empty() && c == '0') {
            run.push(c);
        }
    }
    run
}

/// Sorts the folders and the files of `dir` (and below) by name, [`natural_cmp`]; file
/// entries keep their index into `detail.files`, so priorities still go to the right file.
fn sort_dir(dir: &mut Dir, detail: &TorrentDetail) {
    dir.dirs.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    let name = |i: &usize| {
        detail
            .files
            .get(*i)
            .map_or("", |f| f.path.rsplit('/').next().unwrap_or(&f.path))
    };
    dir.files.sort_by(|a, b| natural_cmp(name(a), name(b)));
    for sub in &mut dir.dirs {
        sort_dir(sub, detail);
    }
}

fn flatten(
    dir: &Dir,
    detail: &TorrentDetail,
    depth: usize,
    prefix: &str,
    parent: Option<usize>,
    out: &mut Vec<Node>,
) -> Vec<usize> {
    let mut all = Vec::new();
    for sub in &dir.dirs {
        let path = if prefix.is_empty() {
            sub.name.clone()
        } else {
            format!("{prefix}/{}", sub.name)
        };
        let at = out.len();
        out.push(Node {
            depth,
            name: sub.name.clone(),
            path: path.clone(),
            file: None,
            size: 0,
            done: 0,
            priority: None,
            files: Vec::new(),
            parent,
        });
        let files = flatten(sub, detail, depth + 1, &path, Some(at), out);
        let mut size = 0u64;
        let mut done = 0u64;
        let mut prios: HashMap<FilePriority, ()> = HashMap::new();
        for f in &files {
            if let Some(row) = detail.files.get(*f) {
                size = size.saturating_add(row.size);
                done = done.saturating_add(row.done);
                prios.insert(row.priority, ());
            }
        }
        let node = &mut out[at];
        node.size = size;
        node.done = done;
        node.priority = if prios.len() == 1 {
            prios.keys().next().copied()
        } else {
            None
        };
        all.extend_from_slice(&files);
        node.files = files;
    }
    for &i in &dir.files {
        let Some(row) = detail.files.get(i) else {
            continue;
        };
        let name = row.path.rsplit('/').next().unwrap_or(&row.path).to_owned();
        out.push(Node {
            depth,
            name,
            path: row.path.clone(),
            file: Some(i),
            size: row.size,
            done: row.done,
            priority: Some(row.priority),
            files: vec![i],
            parent,
        });
        all.push(i);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::FileRow;

    use FilePriority as P;

    fn detail(id: u64, files: &[(&str, u64, P)]) -> Arc<TorrentDetail> {
        Arc::new(TorrentDetail {
            id: TorrentId(id),
            files: files
                .iter()
                .map(|(path, size, priority)| FileRow {
                    path: (*path).to_owned(),
                    changed: path.contains("..").then(|| "'..' joined".to_owned()),
                    size: *size,
                    done: size / 2,
                    priority: *priority,
                    piece_range: (0, 0),
                })
                .collect(),
            ..TorrentDetail::default()
        })
    }

    /// Files 0 `show/s01/e1.mkv`, 1 `show/s01/e2.mkv`, 2 `show/notes.txt`, 3 `cover.jpg`.
    fn show() -> Arc<TorrentDetail> {
        detail(
            1,
            &[
                ("show/s01/e1.mkv", 100, P::Normal),
                ("show/s01/e2.mkv", 300, P::Normal),
                ("show/notes.txt", 10, P::Skip),
                ("cover.jpg", 5, P::High),
            ],
        )
    }

    fn rows(tree: &FileTree) -> Vec<String> {
        (0..tree.visible_len())
            .filter_map(|r| tree.node(r))
            .map(|n| format!("{}{}", "  ".repeat(n.depth), n.name))
            .collect()
    }

    #[test]
    fn folders_come_first_and_add_up_their_files() {
        let mut tree = FileTree::default();
        tree.update(&show());
        assert_eq!(
            rows(&tree),
            [
                "show",
                "  s01",
                "    e1.mkv",
                "    e2.mkv",
                "  notes.txt",
                "cover.jpg"
            ]
        );
        let show = tree.node(0).unwrap();
        assert_eq!((show.file, show.size, show.done), (None, 410, 205));
        assert_eq!(show.files, [0, 1, 2]);
        assert_eq!(show.priority, None, "mixed");
        let s01 = tree.node(1).unwrap();
        assert_eq!(
            (s01.path.as_str(), s01.priority),
            ("show/s01", Some(P::Normal))
        );
        assert_eq!(s01.parent, Some(0));
        let cover = tree.node(5).unwrap();
        assert_eq!((cover.file, cover.priority), (Some(3), Some(P::High)));
    }

    #[test]
    fn folders_and_files_are_sorted_by_name_in_natural_order_keeping_their_indices() {
        let mut tree = FileTree::default();
        tree.update(&detail(
            1,
            &[
                ("S/s02/ep3.mkv", 1, P::Normal),
                ("S/s02/ep10.mkv", 1, P::Normal),
                ("S/s01/ep2.mkv", 1, P::Normal),
                ("S/s01/Ep1.mkv", 1, P::Normal),
                ("S/s01/ep10.mkv", 1, P::Normal),
                ("S/Notes.txt", 1, P::Normal),
                ("S/about.txt", 1, P::Normal),
            ],
        ));
        assert_eq!(
            rows(&tree),
            [
                "S",
                "  s01",
                "    Ep1.mkv",
                "    ep2.mkv",
                "    ep10.mkv",
                "  s02",
                "    ep3.mkv",
                "    ep10.mkv",
                "  about.txt",
                "  Notes.txt",
            ]
        );
        // a priority change on a sorted row names that row's file by its torrent index
        assert_eq!(tree.targets(2), Some((vec![3], P::Normal)), "Ep1.mkv");
        assert_eq!(tree.targets(7), Some((vec![1], P::Normal)), "s02/ep10.mkv");
        assert_eq!(tree.targets(8), Some((vec![6], P::Normal)), "about.txt");
        assert_eq!(tree.node(1).unwrap().files, [3, 2, 4], "s01 in shown order");
    }

    #[test]
    fn natural_order_reads_numbers_by_value_and_ignores_case() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_cmp("ep2", "ep10"), Less);
        assert_eq!(natural_cmp("ep10", "ep9"), Greater);
        assert_eq!(natural_cmp("S01", "s02"), Less);
        assert_eq!(natural_cmp("b", "A"), Greater);
        assert_eq!(natural_cmp("a", "a1"), Less);
        assert_eq!(natural_cmp("x007", "x7"), Less, "equal values: byte order");
        assert_eq!(natural_cmp("A", "a"), Less, "equal but case: byte order");
        assert_eq!(natural_cmp("same", "same"), Equal);
        assert_eq!(natural_cmp("1.10", "1.9"), Greater);
    }

    #[test]
    fn folding_hides_what_is_under_a_folder() {
        let mut tree = FileTree::default();
        tree.update(&show());
        tree.toggle_fold(1);
        assert!(tree.is_collapsed("show/s01"));
        assert_eq!(rows(&tree), ["show", "  s01", "  notes.txt", "cover.jpg"]);
        tree.toggle_fold(2); // a file folds its folder
        assert_eq!(rows(&tree), ["show", "cover.jpg"]);
        tree.toggle_fold(0);
        assert_eq!(rows(&tree).len(), 4, "show unfolds, s01 stays folded");
        tree.toggle_fold(99); // no such row
        assert_eq!(rows(&tree).len(), 4);
    }

    #[test]
    fn marks_and_targets_of_a_priority_change() {
        let mut tree = FileTree::default();
        tree.update(&show());
        assert_eq!(tree.targets(1), Some((vec![0, 1], P::Normal)), "a folder");
        assert_eq!(
            tree.targets(0),
            Some((vec![0, 1, 2], P::Normal)),
            "mixed counts normal"
        );
        tree.toggle_mark(1);
        tree.toggle_mark(5);
        assert_eq!(tree.marks().len(), 3);
        assert_eq!(
            tree.targets(4),
            Some((vec![0, 1, 3], P::Normal)),
            "marks win over the row"
        );
        tree.toggle_mark(1);
        assert_eq!(tree.targets(0), Some((vec![3], P::High)));
        tree.toggle_mark(0); // some marked, some not: all become marked
        assert_eq!(tree.marks().len(), 4);
        tree.toggle_mark(0);
        assert_eq!(tree.marks().len(), 1, "then all unmarked");
    }

    #[test]
    fn a_pending_priority_shows_until_the_engine_agrees() {
        let mut tree = FileTree::default();
        tree.update(&show());
        tree.set_pending(&[2], P::Normal);
        assert_eq!(tree.node(4).unwrap().priority, Some(P::Normal));
        assert_eq!(
            tree.node(0).unwrap().priority,
            Some(P::Normal),
            "show is uniform now"
        );
        // a detail that does not know it yet keeps the pending one
        tree.update(&show());
        assert_eq!(tree.node(4).unwrap().priority, Some(P::Normal));
        // the engine agrees, then the user's next change comes from there
        let agreed = detail(
            1,
            &[
                ("show/s01/e1.mkv", 100, P::Normal),
                ("show/s01/e2.mkv", 300, P::Normal),
                ("show/notes.txt", 10, P::Normal),
                ("cover.jpg", 5, P::High),
            ],
        );
        tree.update(&agreed);
        assert!(tree.pending.is_empty());
        assert_eq!(tree.node(4).unwrap().priority, Some(P::Normal));
    }

    #[test]
    fn another_torrent_starts_afresh_the_same_keeps_folds_and_marks() {
        let mut tree = FileTree::default();
        tree.update(&show());
        tree.toggle_fold(1);
        tree.toggle_mark(3); // cover.jpg, under the folded s01
        tree.update(&show()); // a new Arc with the same files
        assert!(tree.is_collapsed("show/s01") && tree.marks().contains(&3));
        tree.update(&detail(2, &[("a/b", 1, P::Normal)]));
        assert!(!tree.is_collapsed("show/s01") && tree.marks().is_empty());
        assert_eq!(rows(&tree), ["a", "  b"]);
        assert_eq!(tree.targets(9), None);
        assert_eq!(FileTree::default().targets(0), None, "no detail yet");
    }

    #[test]
    fn priorities_step_between_skip_and_high() {
        assert_eq!(step_priority(P::Normal, true), P::High);
        assert_eq!(step_priority(P::High, true), P::High);
        assert_eq!(step_priority(P::Normal, false), P::Low);
        assert_eq!(step_priority(P::Low, false), P::Skip);
        assert_eq!(step_priority(P::Skip, false), P::Skip);
        assert_eq!(step_priority(P::Skip, true), P::Low);
    }

    #[test]
    fn what_sanitising_changed_is_kept_per_file() {
        let mut tree = FileTree::default();
        assert_eq!(tree.changed(0), None, "no detail yet");
        tree.update(&detail(1, &[("a/b", 1, P::Normal), ("x..y", 1, P::Normal)]));
        assert_eq!(tree.changed(0), None);
        assert_eq!(tree.changed(1), Some("'..' joined"));
        assert_eq!(tree.changed(2), None, "no such file");
    }

    #[test]
    fn labels() {
        let all = [P::Skip, P::Low, P::Normal, P::High].map(priority_label);
        assert_eq!(all, ["skip", "low", "normal", "high"]);
    }
}
