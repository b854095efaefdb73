//! What scripts `print`: dropped by default (the agent in a cluster has no one to show it to),
//! or kept for `eval` to write on standard error, where it never mixes with the results.

use std::sync::{Arc, Mutex, PoisonError};

/// Most bytes of `print` output kept between two takes; beyond, lines are counted, not kept.
pub const MAX_PRINTED: usize = 1 << 20;

/// The `print` output of one runtime, shared with the Lua function that writes it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Printed(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    keep: bool,
    text: String,
    left_out: usize,
}

impl Printed {
    /// Keeps what scripts print from now on.
    pub(crate) fn keep(&self) {
        self.state().keep = true;
    }

    /// Whether what scripts print is kept.
    pub(crate) fn is_kept(&self) -> bool {
        self.state().keep
    }

    /// One `print` call: its arguments as text, tab-separated.
    pub(crate) fn line(&self, line: &str) {
        let mut state = self.state();
        if !state.keep {
            return;
        }
        if state.text.len() + line.len() + 1 > MAX_PRINTED {
            state.left_out += 1;
            return;
        }
        state.text.push_str(line);
        state.text.push('\n');
    }

    /// What was printed since the last take, one line per call, and how many lines did not fit.
    pub(crate) fn take(&self) -> String {
        let mut state = self.state();
        let mut text = std::mem::take(&mut state.text);
        let left_out = std::mem::take(&mut state.left_out);
        if left_out > 0 {
            text.push_str(&format!(
                "({left_out} more printed lines left out: more than {MAX_PRINTED} bytes)\n"
            ));
        }
        text
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_dropped_until_kept_and_bounded_once_kept() {
        let printed = Printed::default();
        printed.line("dropped");
        assert_eq!(printed.take(), "");
        printed.keep();
        printed.line("a\tb");
        assert_eq!(printed.take(), "a\tb\n");
        let big = "x".repeat(MAX_PRINTED / 2);
        for _ in 0..3 {
            printed.line(&big);
        }
        let text = printed.take();
        assert!(text.starts_with(&format!("{big}\n")), "{}", text.len());
        assert!(
            text.ends_with("(2 more printed lines left out: more than 1048576 bytes)\n"),
            "{}",
            &text[text.len() - 80..]
        );
    }
}
