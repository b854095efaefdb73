//! Go text/template engine with Sprig and Sveltos functions.
//!
//! Work in progress: the lexer, the value model and Go `fmt` printing are in place; the
//! parser, executor and function maps are not yet written.

pub mod gofmt;
pub mod lex;
pub mod value;

pub use value::Value;
