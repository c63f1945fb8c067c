//! The model's dialogs: opening each one on the torrents it concerns, the answer to a
//! question, a submitted form, and what they ask of the engine. The rooms under
//! [`crate::tui::popups`] write the questions and read the forms; this only wires them to
//! the model's state.

use super::*;

impl App {
    pub(super) fn open_add(&mut self) {
        let categories = (self.snapshot.global.categories.iter())
            .map(|c| c.category.name.clone())
            .collect();
        let form = popups::add::open(&self.opts.keymap, categories);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn open_create(&mut self) {
        self.dialog = Some(Dialog::Form(popups::create::open(&self.opts.keymap)));
    }

    pub(super) fn open_remove(&mut self, delete_data: bool) {
        let ids = self.targets();
        if ids.is_empty() {
            return;
        }
        let what = self.describe(&ids);
        let question =
            popups::remove::open(ids, delete_data, &what, &self.snapshot, &self.opts.keymap);
        self.dialog = Some(Dialog::Confirm(question));
    }

    pub(super) fn open_limits(&mut self) {
        let torrents = self.targets();
        let what = self.describe(&torrents);
        let form = popups::limits::open(&self.snapshot, torrents, &what, &self.opts.theme.sym);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn open_goals(&mut self) {
        let torrents = self.targets();
        if torrents.is_empty() {
            return;
        }
        let what = self.describe(&torrents);
        let form = popups::goals::open(&self.snapshot, torrents, &what, &self.opts.theme.sym);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn open_move(&mut self) {
        let torrents = self.targets();
        if torrents.is_empty() {
            return;
        }
        let what = self.describe(&torrents);
        let form = popups::move_storage::open(&self.snapshot, torrents, &what);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn open_category(&mut self) {
        let torrents = self.targets();
        if torrents.is_empty() {
            return;
        }
        let what = self.describe(&torrents);
        let ascii = self.opts.theme.sym.ascii;
        let form = popups::category::open(&self.snapshot, torrents, &what, ascii);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn open_tags(&mut self) {
        let torrents = self.targets();
        if torrents.is_empty() {
            return;
        }
        let what = self.describe(&torrents);
        let ascii = self.opts.theme.sym.ascii;
        let form = popups::tags::open(&self.snapshot, torrents, &what, ascii);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn open_trackers(&mut self) {
        let torrents = self.targets();
        if torrents.is_empty() {
            return;
        }
        let what = self.describe(&torrents);
        let form = popups::trackers::open(torrents, &what, &self.opts.theme.sym);
        self.dialog = Some(Dialog::Form(form));
    }

    /// The engine answered a tracker edit: a count goes into the open dialog, a
    /// replacement's result to the message line.
    pub fn trackers_edited(
        &mut self,
        dry_run: bool,
        edit: (String, String),
        result: Result<crate::api::TrackerEditOutcome, crate::api::TrackerEditError>,
    ) {
        if dry_run {
            if let Some(Dialog::Form(form)) = &mut self.dialog
                && matches!(form.kind, FormKind::Trackers { .. })
            {
                popups::trackers::counted(form, edit.0, edit.1, result);
            }
            return;
        }
        let text = popups::trackers::done_text(&result);
        if result.is_ok() {
            self.set_info(text);
        } else {
            self.set_error(text);
        }
    }

    pub(super) fn open_add_peer(&mut self) {
        let Some(id) = self.focused else {
            return;
        };
        let name = self
            .snapshot
            .row(id)
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let form = popups::add_peer::open(id, &name, &self.opts.theme.sym);
        self.dialog = Some(Dialog::Form(form));
    }

    pub(super) fn request_quit(&mut self) {
        if self.opts.attached.is_some() {
            // the daemon runs on: nothing stops, nothing to ask
            self.quit = Some(false);
            return;
        }
        let running = popups::quit::running(&self.snapshot);
        if running == 0 || !self.opts.confirm_quit {
            self.quit = Some(true);
            return;
        }
        let trackers = popups::quit::tells_trackers(&self.snapshot);
        self.dialog = Some(Dialog::Confirm(popups::quit::open(
            running,
            trackers,
            &self.opts.keymap,
        )));
    }

    /// Quit and stop the daemon too (attached: after a question, whatever
    /// `confirm_quit` says: a daemon stopped by mistake stops seeding); in-process the
    /// same as quitting.
    pub(super) fn request_quit_daemon(&mut self) {
        let Some(pid) = self.opts.attached else {
            self.request_quit();
            return;
        };
        let running = popups::quit::running(&self.snapshot);
        let trackers = popups::quit::tells_trackers(&self.snapshot);
        self.dialog = Some(Dialog::Confirm(popups::quit::open_daemon(
            pid,
            running,
            trackers,
            &self.opts.keymap,
        )));
    }

    /// Whether quitting stops the engine: in-process always; attached to a daemon only
    /// after [`Action::QuitDaemon`](crate::tui::action::Action::QuitDaemon) was confirmed.
    pub fn stops_engine(&self) -> bool {
        self.quit == Some(true)
    }

    pub(super) fn confirm(&mut self) {
        let Some(Dialog::Confirm(confirm)) = self.dialog.take() else {
            return;
        };
        match confirm.kind {
            ConfirmKind::Quit | ConfirmKind::QuitDaemon => self.quit = Some(true),
            ConfirmKind::Remove { ids, delete_data } => {
                let what = self.describe(&ids);
                for id in &ids {
                    self.marks.remove(id);
                }
                let outcome = popups::remove::confirmed(&ids, delete_data, &what);
                self.apply_outcome(outcome);
            }
        }
    }

    pub(super) fn submit(&mut self) {
        let Some(Dialog::Form(form)) = &mut self.dialog else {
            return;
        };
        if let FormKind::Trackers { torrents, counted } = &form.kind
            && !popups::trackers::closes(form, counted.as_ref())
        {
            // a count: the dialog stays open for the engine's answer
            match popups::trackers::submit(form, torrents, counted.as_ref()) {
                Ok(outcome) => {
                    form.error = None;
                    self.outbox.extend(outcome.commands);
                }
                Err(e) => form.error = Some(e),
            }
            return;
        }
        let result = match &form.kind {
            FormKind::Add => popups::add::submit(form, self.opts.seed_after_download),
            FormKind::Create => popups::create::submit(form),
            FormKind::Limits { torrents } => popups::limits::submit(form, torrents, &self.snapshot),
            FormKind::Move { torrents } => popups::move_storage::submit(form, torrents),
            FormKind::Goals { torrents } => popups::goals::submit(form, torrents, &self.snapshot),
            FormKind::AddPeer { torrent } => popups::add_peer::submit(form, *torrent),
            FormKind::Category { torrents } => {
                popups::category::submit(form, torrents, &self.snapshot)
            }
            FormKind::Tags { torrents } => popups::tags::submit(form, torrents),
            FormKind::Trackers { torrents, counted } => {
                popups::trackers::submit(form, torrents, counted.as_ref())
            }
        };
        // "moving to …" is said while the data moves, then the outcome
        let moving = match (&form.kind, &result) {
            (FormKind::Move { torrents }, Ok(outcome)) => {
                outcome.commands.iter().find_map(|c| match c {
                    Command::MoveStorage { to, move_data, .. } => {
                        Some((torrents.clone(), (to.clone(), *move_data)))
                    }
                    _ => None,
                })
            }
            _ => None,
        };
        match result {
            Ok(mut outcome) => {
                self.dialog = None;
                // only a move's notice is about work; every other form keeps its notice
                if let Some((ids, to)) = moving
                    && let Some(text) = outcome.notice.take()
                {
                    self.notice.moving(text, ids, to, self.snapshot.seq);
                }
                // several adds at once (a glob): their answers are told together
                let adds = outcome
                    .commands
                    .iter()
                    .filter(|c| matches!(c, Command::Add(..)))
                    .count();
                // a create-and-seed: its answer (once hashed) names the .torrent made
                self.pending_create = outcome.commands.iter().find_map(|c| match c {
                    Command::Add(req, _) => match &req.source {
                        crate::api::AddSource::Create(c) => {
                            Some(c.output_path().display().to_string())
                        }
                        _ => None,
                    },
                    _ => None,
                });
                if adds > 1 {
                    self.add_batch = Some(super::AddBatch {
                        expected: adds,
                        ..Default::default()
                    });
                }
                self.apply_outcome(outcome);
            }
            Err(e) => form.error = Some(e),
        }
    }

    /// Queues what a dialog asked for and shows its message.
    pub(super) fn apply_outcome(&mut self, outcome: Outcome) {
        self.outbox.extend(outcome.commands);
        if let Some(m) = outcome.notice {
            self.set_info(m);
        }
    }
}
