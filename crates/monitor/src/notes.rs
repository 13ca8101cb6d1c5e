//! Problems met while sampling that do not stop it: a process that exited, a file that is
//! missing, a permission refused. Each distinct message is kept once, with how often it came.

use serde::{Deserialize, Serialize};

/// One problem, first seen at `t`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// Seconds since the monitor started when it was first seen.
    pub t: f64,
    /// The source that met it (`process`, `ports`, `profile`...).
    pub source: String,
    /// What happened, in one line.
    pub message: String,
    /// How many samples met it.
    pub count: u64,
}

/// The notes of a run, deduplicated.
#[derive(Debug, Default)]
pub struct Notes {
    all: Vec<Note>,
    /// Index in `all` of the first note not yet handed out by [`Notes::take_new`].
    handed_out: usize,
}

impl Notes {
    /// Writes a note down, or counts it again if it is already known.
    pub fn add(&mut self, t: f64, source: &str, message: impl Into<String>) {
        let message = message.into();
        if let Some(note) = self
            .all
            .iter_mut()
            .find(|n| n.source == source && n.message == message)
        {
            note.count += 1;
            return;
        }
        self.all.push(Note {
            t,
            source: source.to_string(),
            message,
            count: 1,
        });
    }

    /// Notes added since the last call (to print each once as it happens).
    pub fn take_new(&mut self) -> Vec<Note> {
        let new = self.all[self.handed_out..].to_vec();
        self.handed_out = self.all.len();
        new
    }

    /// Every note so far.
    pub fn all(&self) -> &[Note] {
        &self.all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_notes_are_counted_once_and_handed_out_once() {
        let mut notes = Notes::default();
        notes.add(0.1, "process", "pid 7 exited");
        notes.add(0.2, "process", "pid 7 exited");
        notes.add(0.2, "disk", "cannot read /proc/diskstats");
        assert_eq!(notes.all().len(), 2);
        assert_eq!(notes.all()[0].count, 2);
        assert_eq!(notes.all()[0].t, 0.1);
        assert_eq!(notes.take_new().len(), 2);
        assert!(notes.take_new().is_empty());
        notes.add(0.3, "process", "pid 7 exited");
        assert!(notes.take_new().is_empty());
        notes.add(0.3, "process", "pid 8 exited");
        assert_eq!(notes.take_new()[0].message, "pid 8 exited");
    }
}
