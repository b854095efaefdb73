//! Go text/template engine with Sprig and Sveltos functions, bounded for untrusted input.
//!
//! Parse once with [`Template::parse`], execute many times (from any thread) with
//! [`Template::execute`]. Data is a [`Value`]: JSON-shaped, with integers kept apart from
//! floats so Go's typing rules hold. Values belong to the thread that made them (their
//! counts and maps are not atomic: a render is one thread's work, and atomics were a fifth
//! of it).

mod ast;
pub mod builtins;
pub mod cache;
pub mod conformance;
pub mod dict;
mod exec;
pub mod funcs;
pub mod gofmt;
pub mod key;
pub mod lex;
mod literal;
pub mod object;
mod parse;
pub mod sprig;
pub mod sveltos;
mod template;
pub mod text;
pub mod value;
pub mod yaml;

pub use cache::TemplateCache;
pub use dict::Dict;
pub use funcs::{FuncError, FuncMap, FuncResult, Function, Param};
pub use key::{Key, KeyStr};
pub use object::Object;
pub use template::{Error, Limits, MissingKey, Options, Template};
pub use text::Text;
pub use value::Value;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
