//! The Sveltos events agent: EventSource resource selection and sandboxed Lua evaluation
//! (Sveltos' `evaluate()` contracts on a reused Lua 5.4 state that behaves like Lua 5.1),
//! plus the offline `eval` command shared with the kubectl plugin.

pub mod cli;
pub mod convert;
pub mod error;
pub mod evaluate;
pub mod files;
pub mod fixtures;
mod helpers;
pub mod hub;
pub mod kept;
mod lazy;
pub mod observe;
pub mod printed;
pub mod run;
pub mod runtime;
pub mod select;
pub mod spoke;
pub mod verdict;

pub use error::{Error, Result};
pub use evaluate::{Evaluation, Outcome, evaluate_event_source};
pub use runtime::{Limits, LuaRuntime, Script};
pub use verdict::{Aggregated, Verdict};

thread_local! {
    static RUNTIME: std::cell::RefCell<Option<LuaRuntime>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's Lua runtime (created on first use with default limits).
pub fn with_thread_runtime<R>(f: impl FnOnce(&LuaRuntime) -> Result<R>) -> Result<R> {
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                LuaRuntime::new(Limits::default()).map_err(|e| Error::Runtime(e.to_string()))?,
            );
        }
        match slot.as_ref() {
            Some(runtime) => f(runtime),
            None => Err(Error::Runtime("no Lua runtime".into())),
        }
    })
}
