//! The parse tree of a template, and Go's textual form of its nodes (used in error messages).

use std::fmt::{self, Write};
use std::sync::Arc;

use crate::gofmt::quote;

/// A parsed template body: its name, the source it came from and its nodes.
#[derive(Debug)]
pub struct Tree {
    /// The template's name (`define`d name or the top-level name).
    pub name: String,
    /// Name of the top-level template whose text this tree was parsed from.
    pub parse_name: Arc<str>,
    /// That text, for error positions.
    pub text: Arc<str>,
    /// The nodes.
    pub root: List,
}

impl Tree {
    /// Go's `IsEmptyTree`: only spaces and comments.
    pub fn is_empty(&self) -> bool {
        self.root.nodes.iter().all(|node| match node {
            Node::Text(text) => text.trim_ascii().is_empty(),
            _ => false,
        })
    }

    /// `NAME:LINE:COL` of byte offset `pos`, as Go's `ErrorContext` computes it.
    pub fn location(&self, pos: usize) -> String {
        let before = &self.text[..pos.min(self.text.len())];
        let (line, col) = match before.rfind('\n') {
            Some(newline) => (before.matches('\n').count() + 1, pos - newline - 1),
            None => (1, pos),
        };
        format!("{}:{}:{}", self.parse_name, line, col)
    }
}

/// A sequence of nodes.
#[derive(Debug, Default)]
pub struct List {
    /// The nodes in order.
    pub nodes: Vec<Node>,
}

/// A node of a list.
#[derive(Debug)]
pub enum Node {
    /// Plain text.
    Text(Box<str>),
    /// `{{pipeline}}`.
    Action(Pipe),
    /// `{{if}}`.
    If(Box<Branch>),
    /// `{{range}}`.
    Range(Box<Branch>),
    /// `{{with}}`.
    With(Box<Branch>),
    /// `{{template "name" pipeline}}`.
    Template {
        /// Position of the name.
        pos: usize,
        /// Name of the template called.
        name: String,
        /// Its dot, if given.
        pipe: Option<Pipe>,
    },
    /// `{{break}}`.
    Break,
    /// `{{continue}}`.
    Continue,
}

/// The parts of `if`, `range` and `with`.
#[derive(Debug)]
pub struct Branch {
    /// The condition or range pipeline.
    pub pipe: Pipe,
    /// The body.
    pub list: List,
    /// The `else` part.
    pub else_list: Option<List>,
}

/// A pipeline with its optional variable declarations.
#[derive(Debug)]
pub struct Pipe {
    /// Byte position.
    pub pos: usize,
    /// `=` rather than `:=`.
    pub is_assign: bool,
    /// Declared or assigned variables (with `$`).
    pub decl: Vec<String>,
    /// The commands joined by `|`.
    pub cmds: Vec<Command>,
}

/// One command of a pipeline: an operand followed by arguments.
#[derive(Debug)]
pub struct Command {
    /// Byte position.
    pub pos: usize,
    /// The operands; the first is the function or value.
    pub args: Vec<Arg>,
}

/// An operand.
#[derive(Debug)]
pub enum Arg {
    /// A function name.
    Identifier(usize, String),
    /// `.`.
    Dot(usize),
    /// `nil`.
    Nil(usize),
    /// `$x.a.b`: the variable and its fields.
    Variable(usize, Vec<String>),
    /// `.a.b`.
    Field(usize, Vec<String>),
    /// `(pipeline).a.b` or `fn.a`.
    Chain(usize, Box<Arg>, Vec<String>),
    /// `true` or `false`.
    Bool(usize, bool),
    /// A number or character constant.
    Number(usize, Box<Number>),
    /// A string constant: its source form and value.
    String(usize, Box<str>, Box<str>),
    /// `(pipeline)`.
    Pipe(Box<Pipe>),
}

/// A numeric constant with every interpretation Go allows for it.
#[derive(Debug, Clone, Default)]
pub struct Number {
    /// Source text.
    pub text: String,
    /// Representable as int64.
    pub is_int: bool,
    /// Representable as uint64.
    pub is_uint: bool,
    /// Representable as float64.
    pub is_float: bool,
    /// Imaginary or complex (unsupported at execution).
    pub is_complex: bool,
    /// int64 value.
    pub int: i64,
    /// uint64 value.
    pub uint: u64,
    /// float64 value.
    pub float: f64,
    /// Written as a float (with a point or an exponent), so a float where any type will do.
    pub float_form: bool,
}

impl Arg {
    /// Byte position of the operand.
    pub fn pos(&self) -> usize {
        match self {
            Arg::Identifier(pos, _)
            | Arg::Dot(pos)
            | Arg::Nil(pos)
            | Arg::Variable(pos, _)
            | Arg::Field(pos, _)
            | Arg::Chain(pos, _, _)
            | Arg::Bool(pos, _)
            | Arg::Number(pos, _)
            | Arg::String(pos, _, _) => *pos,
            Arg::Pipe(pipe) => pipe.pos,
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Identifier(_, name) => f.write_str(name),
            Arg::Dot(_) => f.write_char('.'),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Variable(_, idents) => f.write_str(&idents.join(".")),
            Arg::Field(_, idents) => {
                for ident in idents {
                    write!(f, ".{ident}")?;
                }
                Ok(())
            }
            Arg::Chain(_, node, fields) => {
                if let Arg::Pipe(pipe) = node.as_ref() {
                    write!(f, "({pipe})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for field in fields {
                    write!(f, ".{field}")?;
                }
                Ok(())
            }
            Arg::Bool(_, b) => write!(f, "{b}"),
            Arg::Number(_, n) => f.write_str(&n.text),
            Arg::String(_, quoted, _) => f.write_str(quoted),
            Arg::Pipe(pipe) => write!(f, "{pipe}"),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            if let Arg::Pipe(pipe) = arg {
                write!(f, "({pipe})")?;
            } else {
                write!(f, "{arg}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            f.write_str(&self.decl.join(", "))?;
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, cmd) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{cmd}")?;
        }
        Ok(())
    }
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for node in &self.nodes {
            write!(f, "{node}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text(text) => f.write_str(&quote(text)),
            Node::Action(pipe) => write!(f, "{{{{{pipe}}}}}"),
            Node::If(branch) => write_branch(f, "if", branch),
            Node::Range(branch) => write_branch(f, "range", branch),
            Node::With(branch) => write_branch(f, "with", branch),
            Node::Template { name, pipe, .. } => {
                write!(f, "{{{{template {}", quote(name))?;
                if let Some(pipe) = pipe {
                    write!(f, " {pipe}")?;
                }
                f.write_str("}}")
            }
            Node::Break => f.write_str("{{break}}"),
            Node::Continue => f.write_str("{{continue}}"),
        }
    }
}

fn write_branch(f: &mut fmt::Formatter<'_>, keyword: &str, branch: &Branch) -> fmt::Result {
    write!(f, "{{{{{keyword} {}}}}}{}", branch.pipe, branch.list)?;
    if let Some(else_list) = &branch.else_list {
        write!(f, "{{{{else}}}}{else_list}")?;
    }
    f.write_str("{{end}}")
}
