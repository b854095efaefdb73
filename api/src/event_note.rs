//! Notes of Kubernetes Events, which the API server refuses beyond 1 kB.

/// Longest note a Kubernetes Event accepts, in bytes.
pub const EVENT_NOTE_LIMIT: usize = 1000;

/// `note` cut to [`EVENT_NOTE_LIMIT`] bytes at a character boundary.
pub fn event_note(mut note: String) -> String {
    let mut end = note.len().min(EVENT_NOTE_LIMIT);
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note.truncate(end);
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_between_characters() {
        assert_eq!(event_note("short".into()), "short");
        let note = event_note("é".repeat(600));
        assert_eq!(note.len(), 1000);
        let note = event_note(format!("x{}", "é".repeat(600)));
        assert_eq!(note.len(), 999);
        assert!(note.ends_with('é'));
    }
}
