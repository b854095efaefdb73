//! Go text/template engine with Sprig and Sveltos functions.
//!
//! Work in progress: the lexer, the value model and Go `fmt` printing are in place; the
//! parser, executor and function maps are being written.

pub mod funcs;
pub mod gofmt;
pub mod lex;
pub mod sprig;
pub mod sveltos;
pub mod value;

pub use funcs::{FuncError, FuncMap, FuncResult, Function, Param};
pub use value::Value;
