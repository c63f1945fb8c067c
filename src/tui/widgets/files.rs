//! The Files tab: the torrent's files as a tree with collapsible folders, sizes, progress
//! and priorities. [`FileTree`] is the state (built from the focused torrent's detail,
//! folded folders, marked files); [`render`] draws the visible rows.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Row, Table};

use crate::api::{FilePriority, TorrentDetail, TorrentId};
use crate::tui::app::{Scroll, priority_label};
use crate::tui::format;
use crate::tui::theme::{Role, Theme};
use crate::units;

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

/// Draws the tree into `area`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    tree: &FileTree,
    scroll: &Scroll,
    theme: &Theme,
) {
    let sym = theme.sym;
    if tree.visible_len() == 0 {
        frame.render_widget(
            Line::styled(" no files (waiting for the engine's detail)", theme.dim()),
            area,
        );
        return;
    }
    let visible = usize::from(area.height.saturating_sub(1));
    let first = scroll.window(tree.visible_len(), visible);
    let widths = [
        Constraint::Fill(1),
        Constraint::Length(9),
        Constraint::Length(12),
        Constraint::Length(7),
    ];
    let name_width = usize::from(area.width.saturating_sub(9 + 12 + 7 + 3 + 2));
    let header = Row::new(["Name", "Size", "Progress", "Prio"]).style(theme.header());
    let rows = (first..(first + visible).min(tree.visible_len())).filter_map(|row| {
        let node = tree.node(row)?;
        let marked = !node.files.is_empty() && node.files.iter().all(|f| tree.marks.contains(f));
        let indent = "  ".repeat(node.depth.min(20));
        let icon = match node.file {
            None if tree.is_collapsed(&node.path) => format!("{} ", sym.fold.1),
            None => format!("{} ", sym.fold.0),
            Some(_) => "  ".to_owned(),
        };
        // the path shown is the one used on disk: say when it is not the torrent's own
        let changed = node
            .file
            .and_then(|f| tree.changed(f))
            .map_or(String::new(), |why| format!("  (changed: {why})"));
        let label = format!(
            "{indent}{icon}{}{}{changed}",
            node.name,
            if node.file.is_none() { "/" } else { "" }
        );
        let name = format::fit_with(&label, name_width, sym.ascii, sym.ellipsis);
        let gutter = if marked { sym.mark } else { " " };
        let prio = node.priority.map_or("mixed", priority_label);
        let prio_style = match node.priority {
            Some(FilePriority::Skip) => theme.dim(),
            Some(FilePriority::High) => theme.fg(Role::Warning),
            _ => ratatui::style::Style::new(),
        };
        let mut r = Row::new(vec![
            Line::from(vec![
                Span::styled(gutter, theme.fg(Role::Mark)),
                Span::raw(" "),
                Span::raw(name),
            ]),
            Line::from(units::size(node.size)).right_aligned(),
            super::progress_line(node.done, node.size, 12, theme),
            Line::styled(prio, prio_style),
        ]);
        if row == scroll.cursor {
            r = r.style(theme.selected());
        }
        Some(r)
    });
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    frame.render_widget(table, area);
    super::highlight_row(
        frame,
        area,
        scroll.cursor.checked_sub(first).map(|r| r + 1),
        visible,
        theme,
    );
}
