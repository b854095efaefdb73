//! The executor: walks a parse tree over data with Go's evaluation rules, type checks and
//! error messages, within the template's limits.

use std::time::Instant;

use crate::ast::{Arg, Branch, Command, List, Node, Number, Pipe, Tree};
use crate::builtins::builtin_funcs;
use crate::funcs::{Function, Param};
use crate::gofmt::{self, quote};
use crate::template::{Error, MissingKey, Template};
use crate::value::Value;

/// An evaluated value; `None` is Go's invalid `reflect.Value` (a missing key, nil data),
/// `Some(Value::Null)` a nil interface found in a map or list.
type Val = Option<Value>;

/// Go digs into interface{} values: a nil interface becomes an invalid value.
#[inline]
fn dig(value: Val) -> Val {
    if matches!(value, Some(Value::Null)) {
        None
    } else {
        value
    }
}

/// Why a walk stopped early.
enum Stop {
    Break,
    Continue,
    Fail(Box<Error>),
}

impl From<Box<Error>> for Stop {
    fn from(error: Box<Error>) -> Self {
        Stop::Fail(error)
    }
}

type Walk = Result<(), Stop>;
/// Errors are boxed: an evaluation's result is then two words, cheap to move through the
/// executor's calls.
type Eval<T> = Result<T, Box<Error>>;

/// The node errors are reported at (Go's `state.at`).
#[derive(Clone, Copy)]
enum At<'a> {
    Nothing,
    Node(&'a Node, usize),
    Pipe(&'a Pipe),
    Command(&'a Command),
    Arg(&'a Arg),
}

/// Runs `tree` of `template` on `dot`.
pub fn execute(template: &Template, tree: &Tree, dot: Val) -> Result<String, Error> {
    let mut state = State {
        template,
        tree,
        out: String::new(),
        vars: vec![("$", dot.clone())],
        depth: 0,
        at: At::Nothing,
        steps: 0,
        started: Instant::now(),
        resolved: Vec::new(),
        args: Vec::new(),
    };
    match state.walk_list(&dot, &tree.root) {
        Ok(()) => Ok(state.out),
        Err(Stop::Fail(error)) => Err(*error),
        Err(Stop::Break | Stop::Continue) => Ok(state.out),
    }
}

struct State<'a> {
    template: &'a Template,
    tree: &'a Tree,
    out: String,
    vars: Vec<(&'a str, Val)>,
    depth: usize,
    at: At<'a>,
    steps: u64,
    started: Instant,
    /// Functions already looked up, by the identifier that names them: a range body calls
    /// the same few many times, and each lookup by name hashes it twice.
    resolved: Vec<(&'a Arg, &'a Function, Kind)>,
    /// The arguments of the calls under way, innermost last.
    args: Vec<Value>,
}

/// What a resolved function is: the builtin `and` and `or` evaluate their arguments lazily.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Call,
    And,
    Or,
}

/// Most call sites whose function [`State::resolved`] keeps; beyond, names are looked up.
const RESOLVED_SITES: usize = 32;

impl<'a> State<'a> {
    #[cold]
    fn error(&self, message: impl std::fmt::Display) -> Box<Error> {
        let name = &self.tree.name;
        let (pos, context) = match self.at {
            At::Nothing => return Box::new(Error::Exec(format!("template: {name}: {message}"))),
            At::Node(node, pos) => (pos, node.to_string()),
            At::Pipe(pipe) => (pipe.pos, pipe.to_string()),
            At::Command(cmd) => (cmd.pos, cmd.to_string()),
            At::Arg(arg) => (arg.pos(), arg.to_string()),
        };
        let context = if context.chars().count() > 20 {
            format!("{}...", context.chars().take(20).collect::<String>())
        } else {
            context
        };
        Box::new(Error::Exec(format!(
            "template: {}: executing {} at <{}>: {}",
            self.tree.location(pos),
            quote(name),
            context,
            message
        )))
    }

    #[cold]
    fn limit(&self, message: String) -> Box<Error> {
        match *self.error(message) {
            Error::Exec(text) => Box::new(Error::Limit(text)),
            other => Box::new(other),
        }
    }

    /// Counts one step against the step and time limits.
    #[inline]
    fn step(&mut self) -> Eval<()> {
        self.steps += 1;
        if self.steps > self.template.options.limits.max_steps || self.steps.is_multiple_of(1024) {
            return self.check_limits();
        }
        Ok(())
    }

    /// The step and time limits, checked every 1,024 steps and when the step limit is passed.
    #[cold]
    fn check_limits(&self) -> Eval<()> {
        let limits = &self.template.options.limits;
        if self.steps > limits.max_steps {
            return Err(self.limit(format!(
                "template exceeded {} evaluation steps",
                limits.max_steps
            )));
        }
        if self.started.elapsed() > limits.timeout {
            return Err(self.limit(format!("template ran longer than {:?}", limits.timeout)));
        }
        Ok(())
    }

    fn check_output(&self) -> Eval<()> {
        let max = self.template.options.limits.max_output_bytes;
        if self.out.len() > max {
            return Err(self.limit(format!("template output exceeds {max} bytes")));
        }
        Ok(())
    }

    fn walk_list(&mut self, dot: &Val, list: &'a List) -> Walk {
        for node in &list.nodes {
            self.walk(dot, node)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Val, node: &'a Node) -> Walk {
        self.step()?;
        match node {
            Node::Text(text) => {
                self.out.push_str(text);
                self.check_output()?;
            }
            Node::Action(pipe) => {
                self.at = At::Node(node, pipe.pos);
                let value = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.at = At::Node(node, pipe.pos);
                    match &value {
                        None => self.out.push_str("<no value>"),
                        Some(value) => gofmt::write_v(&mut self.out, value),
                    }
                    self.check_output()?;
                }
            }
            Node::If(branch) => self.walk_if_or_with(false, dot, branch)?,
            Node::With(branch) => self.walk_if_or_with(true, dot, branch)?,
            Node::Range(branch) => self.walk_range(dot, node, branch)?,
            Node::Template { pos, name, pipe } => {
                self.walk_template(dot, node, *pos, name, pipe)?
            }
            Node::Break => return Err(Stop::Break),
            Node::Continue => return Err(Stop::Continue),
        }
        Ok(())
    }

    fn walk_if_or_with(&mut self, is_with: bool, dot: &Val, branch: &'a Branch) -> Walk {
        let mark = self.vars.len();
        let value = self.eval_pipeline(dot, &branch.pipe)?;
        let truth = value.as_ref().is_some_and(Value::is_true);
        let result = if truth {
            if is_with {
                self.walk_list(&value, &branch.list)
            } else {
                self.walk_list(dot, &branch.list)
            }
        } else if let Some(else_list) = &branch.else_list {
            self.walk_list(dot, else_list)
        } else {
            Ok(())
        };
        self.vars.truncate(mark);
        result
    }

    fn walk_range(&mut self, dot: &Val, node: &'a Node, branch: &'a Branch) -> Walk {
        self.at = At::Node(node, branch.pipe.pos);
        let mark = self.vars.len();
        let value = self.eval_pipeline(dot, &branch.pipe)?;
        let body_mark = self.vars.len();
        let mut ran = false;
        match &value {
            Some(Value::List(items)) => {
                for (i, item) in items.iter().enumerate() {
                    ran = true;
                    if !self.range_iteration(
                        branch,
                        body_mark,
                        Value::Int(i as i64),
                        item.clone(),
                    )? {
                        break;
                    }
                }
            }
            Some(Value::Map(map)) => {
                // Over the entries as they were (the body may change the map).
                for (key, item) in map.entries() {
                    ran = true;
                    if !self.range_iteration(
                        branch,
                        body_mark,
                        Value::string(String::from(key)),
                        item,
                    )? {
                        break;
                    }
                }
            }
            Some(count @ (Value::Int(n) | Value::Int64(n)))
                if self.template.options.range_over_int =>
            {
                if branch.pipe.decl.len() > 1 {
                    self.at = At::Node(node, branch.pipe.pos);
                    return Err(self
                        .error(format!(
                            "can't use {} to iterate over more than one variable",
                            gofmt::to_v(count)
                        ))
                        .into());
                }
                for i in 0..*n {
                    ran = true;
                    let index = match count {
                        Value::Int(_) => Value::Int(i),
                        _ => Value::Int64(i),
                    };
                    if !self.range_iteration(branch, body_mark, index.clone(), index)? {
                        break;
                    }
                }
            }
            None | Some(Value::Null) => {}
            Some(other) => {
                self.at = At::Node(node, branch.pipe.pos);
                return Err(self
                    .error(format!("range can't iterate over {}", gofmt::to_v(other)))
                    .into());
            }
        }
        if !ran && let Some(else_list) = &branch.else_list {
            self.walk_list(dot, else_list)?;
        }
        self.vars.truncate(mark);
        Ok(())
    }

    /// One iteration of a range body; false after `{{break}}`.
    fn range_iteration(
        &mut self,
        branch: &'a Branch,
        body_mark: usize,
        index: Value,
        elem: Value,
    ) -> Result<bool, Stop> {
        self.step()?;
        let pipe = &branch.pipe;
        if !pipe.decl.is_empty() {
            if pipe.is_assign {
                let first = if pipe.decl.len() > 1 {
                    index.clone()
                } else {
                    elem.clone()
                };
                self.set_var(&pipe.decl[0], Some(first))?;
            } else {
                self.set_top_var(1, Some(elem.clone()));
            }
        }
        if pipe.decl.len() > 1 {
            if pipe.is_assign {
                self.set_var(&pipe.decl[1], Some(elem.clone()))?;
            } else {
                self.set_top_var(2, Some(index));
            }
        }
        let result = self.walk_list(&Some(elem), &branch.list);
        self.vars.truncate(body_mark);
        match result {
            Ok(()) | Err(Stop::Continue) => Ok(true),
            Err(Stop::Break) => Ok(false),
            Err(fail) => Err(fail),
        }
    }

    fn walk_template(
        &mut self,
        dot: &Val,
        node: &'a Node,
        pos: usize,
        name: &str,
        pipe: &'a Option<Pipe>,
    ) -> Walk {
        self.at = At::Node(node, pos);
        let template = self.template;
        let Some(tree) = template.trees.get(name) else {
            return Err(self
                .error(format!("template {} not defined", quote(name)))
                .into());
        };
        let max = template.options.limits.max_call_depth;
        if self.depth >= max {
            return Err(self
                .limit(format!("exceeded maximum template depth ({max})"))
                .into());
        }
        let new_dot = match pipe {
            Some(pipe) => self.eval_pipeline(dot, pipe)?,
            None => None,
        };
        let vars = std::mem::replace(&mut self.vars, vec![("$", new_dot.clone())]);
        let caller = std::mem::replace(&mut self.tree, tree);
        self.depth += 1;
        let result = self.walk_list(&new_dot, &tree.root);
        self.depth -= 1;
        self.tree = caller;
        self.vars = vars;
        match result {
            Err(Stop::Fail(error)) => Err(Stop::Fail(error)),
            _ => Ok(()),
        }
    }

    fn set_var(&mut self, name: &str, value: Val) -> Eval<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = value;
                Ok(())
            }
            None => Err(self.error(format!("undefined variable: {name}"))),
        }
    }

    fn set_top_var(&mut self, n: usize, value: Val) {
        let len = self.vars.len();
        if let Some(slot) = self.vars.get_mut(len.wrapping_sub(n)) {
            slot.1 = value;
        }
    }

    fn var_value(&self, name: &str) -> Eval<Val> {
        match self.vars.iter().rev().find(|(n, _)| *n == name) {
            Some((_, value)) => Ok(value.clone()),
            None => Err(self.error(format!("undefined variable: {name}"))),
        }
    }

    fn eval_pipeline(&mut self, dot: &Val, pipe: &'a Pipe) -> Eval<Val> {
        self.at = At::Pipe(pipe);
        let mut cmds = pipe.cmds.iter();
        let mut value = match cmds.next() {
            Some(cmd) => dig(self.eval_command(dot, cmd, None)?),
            None => None,
        };
        for cmd in cmds {
            value = dig(self.eval_command(dot, cmd, Some(value))?);
        }
        if !pipe.decl.is_empty() {
            self.declare(pipe, &value)?;
        }
        Ok(value)
    }

    /// Gives the variables a pipeline declares (or assigns) its value.
    fn declare(&mut self, pipe: &'a Pipe, value: &Val) -> Eval<()> {
        for name in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone())?;
            } else {
                self.vars.push((name.as_str(), value.clone()));
            }
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Val, cmd: &'a Command, last: Option<Val>) -> Eval<Val> {
        self.step()?;
        let first = &cmd.args[0];
        match first {
            Arg::Field(_, idents) => {
                self.at = At::Arg(first);
                self.eval_field_chain(dot, dot, idents, &cmd.args, last)
            }
            Arg::Chain(_, node, fields) => {
                self.eval_chain(dot, first, node, fields, &cmd.args, last)
            }
            Arg::Identifier(_, name) => {
                self.eval_function(dot, first, name, At::Command(cmd), &cmd.args[1..], last)
            }
            Arg::Pipe(pipe) => {
                self.not_a_function(&cmd.args, &last)?;
                self.eval_pipeline(dot, pipe)
            }
            Arg::Variable(_, idents) => self.eval_variable(dot, first, idents, &cmd.args, last),
            _ => {
                self.at = At::Arg(first);
                self.not_a_function(&cmd.args, &last)?;
                match first {
                    Arg::Bool(_, b) => Ok(Some(Value::bool(*b))),
                    Arg::Dot(_) => Ok(dot.clone()),
                    Arg::Nil(_) => Err(self.error("nil is not a command")),
                    Arg::Number(_, n) => self.ideal_constant(n).map(Some),
                    Arg::String(_, _, text) => Ok(Some(Value::string(text.as_ref()))),
                    _ => Err(self.error(format!(
                        "can't evaluate command {}",
                        quote(&first.to_string())
                    ))),
                }
            }
        }
    }

    fn not_a_function(&self, args: &[Arg], last: &Option<Val>) -> Eval<()> {
        if args.len() > 1 || last.is_some() {
            return Err(self.error(format!("can't give argument to non-function {}", args[0])));
        }
        Ok(())
    }

    fn eval_variable(
        &mut self,
        dot: &Val,
        node: &'a Arg,
        idents: &'a [String],
        args: &'a [Arg],
        last: Option<Val>,
    ) -> Eval<Val> {
        self.at = At::Arg(node);
        let value = self.var_value(&idents[0])?;
        if idents.len() == 1 {
            self.not_a_function(args, &last)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, &value, &idents[1..], args, last)
    }

    fn eval_chain(
        &mut self,
        dot: &Val,
        chain: &'a Arg,
        node: &'a Arg,
        fields: &'a [String],
        args: &'a [Arg],
        last: Option<Val>,
    ) -> Eval<Val> {
        self.at = At::Arg(chain);
        if matches!(node, Arg::Nil(_)) {
            return Err(self.error(format!("indirection through explicit nil in {chain}")));
        }
        let receiver = self.eval_node(dot, node)?;
        self.at = At::Arg(chain);
        self.eval_field_chain(dot, &receiver, fields, args, last)
    }

    /// Evaluates a non-literal operand to its value.
    fn eval_node(&mut self, dot: &Val, node: &'a Arg) -> Eval<Val> {
        self.at = At::Arg(node);
        match node {
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Field(_, idents) => self.eval_field_chain(dot, dot, idents, &[], None),
            Arg::Variable(_, idents) => self.eval_variable(dot, node, idents, &[], None),
            Arg::Pipe(pipe) => self.eval_pipeline(dot, pipe),
            Arg::Identifier(_, name) => {
                self.eval_function(dot, node, name, At::Arg(node), &[], None)
            }
            Arg::Chain(_, inner, fields) => self.eval_chain(dot, node, inner, fields, &[], None),
            Arg::Bool(_, b) => Ok(Some(Value::bool(*b))),
            Arg::Number(_, n) => self.ideal_constant(n).map(Some),
            Arg::String(_, _, text) => Ok(Some(Value::string(text.as_ref()))),
            Arg::Nil(_) => Ok(None),
        }
    }

    /// `.a.b.c` on `receiver`; `args` (the command, its first element the field itself) and
    /// `last` (a piped value) go to the final field when it is a method.
    fn eval_field_chain(
        &mut self,
        dot: &Val,
        receiver: &Val,
        idents: &[String],
        args: &'a [Arg],
        last: Option<Val>,
    ) -> Eval<Val> {
        // The common case, keys of nested maps, reads in place; everything else (a missing
        // key, a method, a nil) takes the walk below, which knows Go's answers and errors.
        if args.len() <= 1
            && last.is_none()
            && let Some(receiver) = receiver
        {
            let found = receiver.at_path(idents);
            if found.is_some() {
                return Ok(found);
            }
        }
        let mut receiver = receiver.clone();
        let n = idents.len();
        for ident in &idents[..n - 1] {
            receiver = self.eval_field(dot, ident, &[], None, receiver)?;
        }
        self.eval_field(dot, &idents[n - 1], args, last, receiver)
    }

    fn eval_field(
        &mut self,
        dot: &Val,
        name: &str,
        args: &'a [Arg],
        last: Option<Val>,
        receiver: Val,
    ) -> Eval<Val> {
        let has_args = args.len() > 1 || last.is_some();
        let missing_key = self.template.options.missing_key;
        let Some(receiver) = receiver else {
            if missing_key == MissingKey::Error {
                return Err(self.error(format!("nil data; no entry for key {}", quote(name))));
            }
            return Ok(None);
        };
        match &receiver {
            Value::Map(map) => {
                if has_args {
                    return Err(self.error(format!("{name} is not a method but has arguments")));
                }
                match map.get(name) {
                    Some(value) => Ok(Some(value)),
                    None => match missing_key {
                        MissingKey::Default => Ok(None),
                        MissingKey::Zero => Ok(Some(Value::Null)),
                        MissingKey::Error => {
                            Err(self.error(format!("map has no entry for key {}", quote(name))))
                        }
                    },
                }
            }
            Value::Null => Err(self.error(format!("nil pointer evaluating interface {{}}.{name}"))),
            Value::Object(object) => {
                if let Some(method) = object.method(name) {
                    let call_site = self.at;
                    let method_args = args.get(1..).unwrap_or_default();
                    return self.call(dot, &method, name, call_site, method_args, last);
                }
                if object.has_unexported_field(name) {
                    return Err(self.error(format!(
                        "{name} is an unexported field of struct type {}",
                        object.type_name()
                    )));
                }
                Err(self.error(format!(
                    "can't evaluate field {name} in type {}",
                    object.type_name()
                )))
            }
            other => Err(self.error(format!(
                "can't evaluate field {name} in type {}",
                other.type_name()
            ))),
        }
    }

    fn lookup(&self, name: &str) -> Option<(&'a Function, Kind)> {
        let template: &'a Template = self.template;
        if let Some(function) = template.funcs.get(name) {
            return Some((function, Kind::Call));
        }
        let kind = match name {
            "and" => Kind::And,
            "or" => Kind::Or,
            _ => Kind::Call,
        };
        builtin_funcs().get(name).map(|f| (f, kind))
    }

    fn eval_function(
        &mut self,
        dot: &Val,
        ident: &'a Arg,
        name: &str,
        call_site: At<'a>,
        args: &'a [Arg],
        last: Option<Val>,
    ) -> Eval<Val> {
        self.at = At::Arg(ident);
        let known = self
            .resolved
            .iter()
            .find(|(site, ..)| std::ptr::eq(*site, ident));
        let (function, kind) = match known {
            Some(&(_, function, kind)) => (function, kind),
            None => {
                let Some((function, kind)) = self.lookup(name) else {
                    return Err(self.error(format!("{} is not a defined function", quote(name))));
                };
                if self.resolved.len() < RESOLVED_SITES {
                    self.resolved.push((ident, function, kind));
                }
                (function, kind)
            }
        };
        if kind != Kind::Call {
            self.check_arity(function, name, args, &last)?;
            return self.eval_and_or(dot, kind == Kind::Or, args, last);
        }
        self.call(dot, function, name, call_site, args, last)
    }

    /// Go's `evalCall` check of the argument count against the signature.
    fn check_arity(
        &self,
        function: &Function,
        name: &str,
        args: &[Arg],
        last: &Option<Val>,
    ) -> Eval<()> {
        let num_in = args.len() + usize::from(last.is_some());
        let num_fixed = function.params.len();
        if function.variadic.is_some() {
            if num_in < num_fixed {
                return Err(self.error(format!(
                    "wrong number of args for {name}: want at least {num_fixed} got {}",
                    args.len()
                )));
            }
        } else if num_in != num_fixed {
            return Err(self.error(format!(
                "wrong number of args for {name}: want {num_fixed} got {num_in}"
            )));
        }
        Ok(())
    }

    /// Calls a function or a bound method with the command's `args` and the piped `last`,
    /// checked against its signature as Go's `evalCall` checks them.
    fn call(
        &mut self,
        dot: &Val,
        function: &Function,
        name: &str,
        call_site: At<'a>,
        args: &'a [Arg],
        last: Option<Val>,
    ) -> Eval<Val> {
        self.check_arity(function, name, args, &last)?;
        let num_in = args.len() + usize::from(last.is_some());
        // The arguments go on one shared stack (nested calls push above them), not in a
        // vector of their own: a range body calls functions thousands of times.
        let base = self.args.len();
        if let Err(error) = self.push_args(dot, function, args, last, num_in) {
            self.args.truncate(base);
            return Err(error);
        }
        let called = (function.body)(&self.args[base..]);
        self.args.truncate(base);
        match called {
            Ok(value) => Ok(Some(value)),
            Err(error) => {
                self.at = call_site;
                Err(self.error(format!("error calling {name}: {error}")))
            }
        }
    }

    /// Evaluates a call's arguments onto [`State::args`].
    fn push_args(
        &mut self,
        dot: &Val,
        function: &Function,
        args: &'a [Arg],
        last: Option<Val>,
        num_in: usize,
    ) -> Eval<()> {
        for (i, arg) in args.iter().enumerate() {
            let param = function.param(i).unwrap_or(Param::Any);
            let value = self.eval_arg(dot, param, arg)?;
            self.args.push(value);
        }
        if let Some(last) = last {
            let param = function.param(num_in - 1).unwrap_or(Param::Any);
            let value = self.validate(last, param)?;
            self.args.push(value);
        }
        Ok(())
    }

    fn eval_and_or(
        &mut self,
        dot: &Val,
        is_or: bool,
        args: &'a [Arg],
        last: Option<Val>,
    ) -> Eval<Val> {
        let mut value = None;
        for arg in args {
            value = self.eval_node(dot, arg)?;
            if value.as_ref().is_some_and(Value::is_true) == is_or {
                return Ok(value);
            }
        }
        if let Some(last) = last {
            value = last;
        }
        Ok(value)
    }

    fn eval_arg(&mut self, dot: &Val, param: Param, arg: &'a Arg) -> Eval<Value> {
        self.at = At::Arg(arg);
        match arg {
            Arg::Dot(_)
            | Arg::Field(..)
            | Arg::Variable(..)
            | Arg::Pipe(_)
            | Arg::Identifier(..)
            | Arg::Chain(..) => {
                let value = self.eval_node(dot, arg)?;
                self.at = At::Arg(arg);
                self.validate(value, param)
            }
            Arg::Nil(_) => {
                if param.can_be_nil() {
                    Ok(param.zero())
                } else {
                    Err(self.error(format!("cannot assign nil to {}", param.go_name())))
                }
            }
            Arg::Bool(_, b) => match param {
                Param::Bool | Param::Any => Ok(Value::bool(*b)),
                _ => Err(self.literal_mismatch(param, arg)),
            },
            Arg::Number(_, n) => match param {
                Param::Int if n.is_int => Ok(Value::Int(n.int)),
                Param::Int64 if n.is_int => Ok(Value::Int64(n.int)),
                Param::Float if n.is_float => Ok(Value::float(n.float)),
                Param::Any => self.ideal_constant(n),
                _ => Err(self.literal_mismatch(param, arg)),
            },
            Arg::String(_, _, text) => match param {
                Param::String | Param::Any => Ok(Value::string(text.as_ref())),
                _ => Err(self.literal_mismatch(param, arg)),
            },
        }
    }

    fn literal_mismatch(&self, param: Param, arg: &Arg) -> Box<Error> {
        let expected = match param {
            Param::Bool => "bool",
            Param::Int | Param::Int64 => "integer",
            Param::Float => "float",
            Param::String => "string",
            Param::List | Param::Map | Param::Any | Param::Object(_) => {
                return self.error(format!(
                    "can't handle {arg} for arg of type {}",
                    param.go_name()
                ));
            }
        };
        self.error(format!("expected {expected}; found {arg}"))
    }

    /// Go's `validateType`: checks a computed value against a parameter type.
    fn validate(&self, value: Val, param: Param) -> Eval<Value> {
        match value {
            None if param.can_be_nil() => Ok(param.zero()),
            None => Err(self.error(format!("invalid value; expected {}", param.go_name()))),
            Some(value) if param.accepts(&value) => Ok(value),
            Some(value) => {
                let got = match value {
                    Value::Null => "interface {}",
                    ref other => other.type_name(),
                };
                Err(self.error(format!(
                    "wrong type for value; expected {}; got {got}",
                    param.go_name()
                )))
            }
        }
    }

    fn ideal_constant(&self, n: &Number) -> Eval<Value> {
        if n.is_complex {
            return Err(self.error(format!("complex constant {} is not supported", n.text)));
        }
        if n.float_form {
            return Ok(Value::float(n.float));
        }
        if n.is_int {
            return Ok(Value::Int(n.int));
        }
        if n.is_uint {
            return Err(self.error(format!("{} overflows int", n.text)));
        }
        Ok(Value::Null)
    }
}
