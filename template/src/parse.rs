//! Parser of Go's text/template: builds [`Tree`]s from lexed items with Go's grammar,
//! variable scoping and error messages (`template: NAME:LINE: ...`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::ast::{Arg, Branch, Command, List, Node, Pipe, Tree};
use crate::gofmt::quote;
use crate::lex::{Item, Kind, lex};
use crate::literal::{parse_number, unquote};

/// What the parser needs to know besides the text.
pub struct ParseOptions<'a> {
    /// Left delimiter (`{{` when empty).
    pub left: &'a str,
    /// Right delimiter (`}}` when empty).
    pub right: &'a str,
    /// Whether a function of that name exists.
    pub has_function: &'a dyn Fn(&str) -> bool,
    /// Deepest nesting of control structures and parentheses accepted.
    pub max_nesting: usize,
}

/// Parses `text` as template `name`; returns every tree it defines, `name` included.
pub fn parse(
    name: &str,
    text: &str,
    options: &ParseOptions<'_>,
) -> Result<HashMap<String, Arc<Tree>>, String> {
    let mut parser = Parser {
        items: lex(text, options.left, options.right),
        index: 0,
        line: 1,
        parse_name: Arc::from(name),
        text: Arc::from(text),
        vars: vec!["$".to_string()],
        range_depth: 0,
        action_line: 0,
        nesting: 0,
        options,
        trees: HashMap::new(),
    };
    let root = parser.parse_top()?;
    parser.add(name.to_string(), root)?;
    Ok(parser
        .trees
        .into_iter()
        .map(|(name, tree)| (name, Arc::new(tree)))
        .collect())
}

struct Parser<'a> {
    items: Vec<Item>,
    index: usize,
    line: usize,
    parse_name: Arc<str>,
    text: Arc<str>,
    vars: Vec<String>,
    range_depth: usize,
    action_line: usize,
    nesting: usize,
    options: &'a ParseOptions<'a>,
    trees: HashMap<String, Tree>,
}

/// What `textOrAction` found: a node, or an `{{end}}`/`{{else}}` that closes a list.
enum Step {
    Node(Node),
    End,
    Else,
    Nothing,
}

type Result<T, E = String> = std::result::Result<T, E>;

static EOF_ITEM: Item = Item {
    kind: Kind::Eof,
    text: String::new(),
    pos: 0,
    line: 0,
};

impl Parser<'_> {
    fn item(&self, index: usize) -> &Item {
        self.items.get(index).unwrap_or(&EOF_ITEM)
    }

    fn next(&mut self) -> usize {
        let index = self.index.min(self.items.len().saturating_sub(1));
        if let Some(item) = self.items.get(index) {
            self.line = item.line;
        }
        self.index = index + 1;
        index
    }

    fn backup(&mut self) {
        self.index = self.index.saturating_sub(1);
    }

    fn peek(&mut self) -> usize {
        let index = self.next();
        self.backup();
        index
    }

    fn next_non_space(&mut self) -> usize {
        loop {
            let index = self.next();
            if self.item(index).kind != Kind::Space {
                return index;
            }
        }
    }

    fn peek_non_space(&mut self) -> usize {
        let index = self.next_non_space();
        self.backup();
        index
    }

    fn kind(&self, index: usize) -> Kind {
        self.item(index).kind
    }

    fn error(&self, message: impl std::fmt::Display) -> String {
        format!("template: {}:{}: {}", self.parse_name, self.line, message)
    }

    fn unexpected(&self, index: usize, context: &str) -> String {
        let item = self.item(index);
        if item.kind == Kind::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != item.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.parse_name, self.action_line
                );
                if item.text.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.error(format!("{}{}", item.text, extra));
        }
        self.error(format!("unexpected {} in {}", describe(item), context))
    }

    fn expect(&mut self, kind: Kind, context: &str) -> Result<usize> {
        let index = self.next_non_space();
        if self.kind(index) != kind {
            return Err(self.unexpected(index, context));
        }
        Ok(index)
    }

    fn add(&mut self, name: String, root: List) -> Result<()> {
        let tree = Tree {
            name: name.clone(),
            parse_name: self.parse_name.clone(),
            text: self.text.clone(),
            root,
        };
        match self.trees.get(&name) {
            Some(existing) if !existing.is_empty() => {
                if !tree.is_empty() {
                    return Err(self.error(format!(
                        "template: multiple definition of template {}",
                        quote(&name)
                    )));
                }
            }
            _ => {
                self.trees.insert(name, tree);
            }
        }
        Ok(())
    }

    fn parse_top(&mut self) -> Result<List> {
        let mut root = List::default();
        loop {
            let peeked = self.peek();
            match self.kind(peeked) {
                Kind::Eof => return Ok(root),
                Kind::LeftDelim => {
                    let delim = self.next();
                    let keyword = self.next_non_space();
                    if self.kind(keyword) == Kind::Define {
                        self.parse_definition()?;
                        continue;
                    }
                    self.index = delim;
                }
                _ => {}
            }
            match self.text_or_action()? {
                Step::Node(node) => root.nodes.push(node),
                Step::End => return Err(self.error("unexpected {{end}}")),
                Step::Else => return Err(self.error("unexpected {{else}}")),
                Step::Nothing => {}
            }
        }
    }

    /// Runs `body` as the parse of a separate tree: fresh variables and range depth.
    fn in_new_tree<T>(&mut self, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let range_depth = std::mem::replace(&mut self.range_depth, 0);
        let result = body(self);
        self.vars = vars;
        self.range_depth = range_depth;
        result
    }

    fn parse_definition(&mut self) -> Result<()> {
        const CONTEXT: &str = "define clause";
        let token = self.next_non_space();
        if !matches!(self.kind(token), Kind::String | Kind::RawString) {
            return Err(self.unexpected(token, CONTEXT));
        }
        let name = unquote(&self.item(token).text).map_err(|e| self.error(e))?;
        self.expect(Kind::RightDelim, CONTEXT)?;
        let root = self.in_new_tree(|parser| {
            let (root, end) = parser.item_list()?;
            if !matches!(end, Step::End) {
                return Err(parser.error(format!("unexpected {} in {CONTEXT}", step_name(&end))));
            }
            Ok(root)
        })?;
        self.add(name, root)
    }

    fn item_list(&mut self) -> Result<(List, Step)> {
        let mut list = List::default();
        loop {
            let peeked = self.peek_non_space();
            if self.kind(peeked) == Kind::Eof {
                return Err(self.error("unexpected EOF"));
            }
            match self.text_or_action()? {
                Step::Node(node) => list.nodes.push(node),
                Step::Nothing => {}
                step => return Ok((list, step)),
            }
        }
    }

    fn text_or_action(&mut self) -> Result<Step> {
        let token = self.next_non_space();
        match self.kind(token) {
            Kind::Text => Ok(Step::Node(Node::Text(
                self.item(token).text.as_str().into(),
            ))),
            Kind::LeftDelim => {
                self.action_line = self.item(token).line;
                let step = self.action();
                self.action_line = 0;
                step
            }
            Kind::Comment => Ok(Step::Nothing),
            _ => Err(self.unexpected(token, "input")),
        }
    }

    fn action(&mut self) -> Result<Step> {
        let token = self.next_non_space();
        match self.kind(token) {
            Kind::Block => return self.block_control().map(Step::Node),
            Kind::Break | Kind::Continue => {
                let is_break = self.kind(token) == Kind::Break;
                let keyword = if is_break {
                    "{{break}}"
                } else {
                    "{{continue}}"
                };
                let next = self.next_non_space();
                if self.kind(next) != Kind::RightDelim {
                    return Err(self.unexpected(next, keyword));
                }
                if self.range_depth == 0 {
                    return Err(self.error(format!("{keyword} outside {{{{range}}}}")));
                }
                return Ok(Step::Node(if is_break {
                    Node::Break
                } else {
                    Node::Continue
                }));
            }
            Kind::Else => {
                let peeked = self.peek_non_space();
                if !matches!(self.kind(peeked), Kind::If | Kind::With) {
                    self.expect(Kind::RightDelim, "else")?;
                }
                return Ok(Step::Else);
            }
            Kind::End => {
                self.expect(Kind::RightDelim, "end")?;
                return Ok(Step::End);
            }
            Kind::If => return self.control("if").map(|b| Step::Node(Node::If(b))),
            Kind::Range => return self.control("range").map(|b| Step::Node(Node::Range(b))),
            Kind::With => return self.control("with").map(|b| Step::Node(Node::With(b))),
            Kind::Template => return self.template_control().map(Step::Node),
            _ => {}
        }
        self.backup();
        // Variables declared here persist until the enclosing {{end}}.
        let pipe = self.pipeline("command", Kind::RightDelim)?;
        Ok(Step::Node(Node::Action(pipe)))
    }

    fn nest(&mut self) -> Result<()> {
        self.nesting += 1;
        if self.nesting > self.options.max_nesting {
            return Err(self.error(format!(
                "nesting deeper than {} levels",
                self.options.max_nesting
            )));
        }
        Ok(())
    }

    fn control(&mut self, context: &str) -> Result<Box<Branch>> {
        self.nest()?;
        let mark = self.vars.len();
        let result = self.control_body(context);
        self.vars.truncate(mark);
        self.nesting -= 1;
        result
    }

    fn control_body(&mut self, context: &str) -> Result<Box<Branch>> {
        let pipe = self.pipeline(context, Kind::RightDelim)?;
        let is_range = context == "range";
        if is_range {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if is_range {
            self.range_depth -= 1;
        }
        let (list, next) = listed?;
        let mut else_list = None;
        if matches!(next, Step::Else) {
            let peeked = self.peek();
            let chained = match (context, self.kind(peeked)) {
                ("if", Kind::If) => Some(("if", Node::If as fn(Box<Branch>) -> Node)),
                ("with", Kind::With) => Some(("with", Node::With as fn(Box<Branch>) -> Node)),
                _ => None,
            };
            if let Some((keyword, wrap)) = chained {
                // `{{else if x}}` is `{{else}}{{if x}}...{{end}}{{end}}` sharing one {{end}}.
                self.next();
                let inner = self.control(keyword)?;
                else_list = Some(List {
                    nodes: vec![wrap(inner)],
                });
            } else {
                let (list, next) = self.item_list()?;
                if !matches!(next, Step::End) {
                    return Err(self.error(format!("expected end; found {}", step_name(&next))));
                }
                else_list = Some(list);
            }
        }
        Ok(Box::new(Branch {
            pipe,
            list,
            else_list,
        }))
    }

    fn template_name(&mut self, token: usize, context: &str) -> Result<String> {
        match self.kind(token) {
            Kind::String | Kind::RawString => {
                unquote(&self.item(token).text).map_err(|e| self.error(e))
            }
            _ => Err(self.unexpected(token, context)),
        }
    }

    fn block_control(&mut self) -> Result<Node> {
        const CONTEXT: &str = "block clause";
        let token = self.next_non_space();
        let pos = self.item(token).pos;
        let name = self.template_name(token, CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, Kind::RightDelim)?;
        self.nest()?;
        let root = self.in_new_tree(|parser| {
            let (root, end) = parser.item_list()?;
            if !matches!(end, Step::End) {
                return Err(parser.error(format!("unexpected {} in {CONTEXT}", step_name(&end))));
            }
            Ok(root)
        });
        self.nesting -= 1;
        self.add(name.clone(), root?)?;
        Ok(Node::Template {
            pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn template_control(&mut self) -> Result<Node> {
        const CONTEXT: &str = "template clause";
        let token = self.next_non_space();
        let pos = self.item(token).pos;
        let name = self.template_name(token, CONTEXT)?;
        let next = self.next_non_space();
        let pipe = if self.kind(next) == Kind::RightDelim {
            None
        } else {
            self.backup();
            Some(self.pipeline(CONTEXT, Kind::RightDelim)?)
        };
        Ok(Node::Template { pos, name, pipe })
    }

    fn pipeline(&mut self, context: &str, end: Kind) -> Result<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe {
            pos: self.item(start).pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        self.declarations(&mut pipe, context)?;
        loop {
            let token = self.next_non_space();
            match self.kind(token) {
                kind if kind == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                Kind::Bool
                | Kind::CharConstant
                | Kind::Dot
                | Kind::Field
                | Kind::Identifier
                | Kind::Number
                | Kind::Nil
                | Kind::RawString
                | Kind::String
                | Kind::Variable
                | Kind::LeftParen => {
                    self.backup();
                    let command = self.command()?;
                    pipe.cmds.push(command);
                }
                _ => return Err(self.unexpected(token, context)),
            }
        }
    }

    /// `$x :=`, `$x =` and range's `$i, $e :=` at the start of a pipeline.
    fn declarations(&mut self, pipe: &mut Pipe, context: &str) -> Result<()> {
        loop {
            let variable = self.peek_non_space();
            if self.kind(variable) != Kind::Variable {
                return Ok(());
            }
            self.next();
            let next = self.peek_non_space();
            let name = self.item(variable).text.clone();
            match self.kind(next) {
                Kind::Assign | Kind::Declare => {
                    pipe.is_assign = self.kind(next) == Kind::Assign;
                    self.next_non_space();
                    pipe.decl.push(name.clone());
                    self.vars.push(name);
                    return Ok(());
                }
                Kind::Char if self.item(next).text == "," => {
                    self.next_non_space();
                    pipe.decl.push(name.clone());
                    self.vars.push(name);
                    if context == "range" && pipe.decl.len() < 2 {
                        let peeked = self.peek_non_space();
                        match self.kind(peeked) {
                            Kind::Variable | Kind::RightDelim | Kind::RightParen => continue,
                            _ => return Err(self.error("range can only initialize variables")),
                        }
                    }
                    return Err(self.error(format!("too many declarations in {context}")));
                }
                _ => {
                    self.index = variable;
                    return Ok(());
                }
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> Result<()> {
        if pipe.cmds.is_empty() {
            return Err(self.error(format!("missing value for {context}")));
        }
        for (i, cmd) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                cmd.args.first(),
                Some(Arg::Bool(..) | Arg::Dot(_) | Arg::Nil(_) | Arg::Number(..) | Arg::String(..))
            ) {
                return Err(self.error(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> Result<Command> {
        let start = self.peek_non_space();
        let mut cmd = Command {
            pos: self.item(start).pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                cmd.args.push(operand);
            }
            let token = self.next();
            match self.kind(token) {
                Kind::Space => continue,
                Kind::RightDelim | Kind::RightParen => self.backup(),
                Kind::Pipe => {}
                _ => return Err(self.unexpected(token, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.error("empty command"));
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> Result<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        let peeked = self.peek();
        if self.kind(peeked) != Kind::Field {
            return Ok(Some(node));
        }
        let pos = self.item(peeked).pos;
        let mut fields = Vec::new();
        loop {
            let token = self.next();
            if self.kind(token) != Kind::Field {
                self.backup();
                break;
            }
            fields.extend(self.item(token).text[1..].split('.').map(str::to_string));
        }
        Ok(Some(match node {
            Arg::Field(_, mut idents) => {
                idents.extend(fields);
                Arg::Field(pos, idents)
            }
            Arg::Variable(_, mut idents) => {
                idents.extend(fields);
                Arg::Variable(pos, idents)
            }
            Arg::Bool(..) | Arg::String(..) | Arg::Number(..) | Arg::Nil(_) | Arg::Dot(_) => {
                return Err(self.error(format!(
                    "unexpected . after term {}",
                    quote(&node.to_string())
                )));
            }
            other => Arg::Chain(pos, Box::new(other), fields),
        }))
    }

    fn term(&mut self) -> Result<Option<Arg>> {
        let token = self.next_non_space();
        let item = self.item(token);
        let pos = item.pos;
        let arg = match item.kind {
            Kind::Identifier => {
                if !(self.options.has_function)(&item.text) {
                    return Err(self.error(format!("function {} not defined", quote(&item.text))));
                }
                Arg::Identifier(pos, item.text.clone())
            }
            Kind::Dot => Arg::Dot(pos),
            Kind::Nil => Arg::Nil(pos),
            Kind::Variable => {
                let name = item.text.clone();
                if !self.vars.contains(&name) {
                    return Err(self.error(format!("undefined variable {}", quote(&name))));
                }
                Arg::Variable(pos, vec![name])
            }
            Kind::Field => Arg::Field(pos, item.text[1..].split('.').map(str::to_string).collect()),
            Kind::Bool => Arg::Bool(pos, item.text == "true"),
            Kind::CharConstant | Kind::Number => {
                let number = parse_number(&item.text, item.kind == Kind::CharConstant)
                    .map_err(|e| self.error(e))?;
                Arg::Number(pos, Box::new(number))
            }
            Kind::LeftParen => {
                self.nest()?;
                let pipe = self.pipeline("parenthesized pipeline", Kind::RightParen);
                self.nesting -= 1;
                Arg::Pipe(Box::new(pipe?))
            }
            Kind::String | Kind::RawString => {
                let text = unquote(&item.text).map_err(|e| self.error(e))?;
                Arg::String(pos, item.text.as_str().into(), text.into())
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        };
        Ok(Some(arg))
    }
}

fn step_name(step: &Step) -> &'static str {
    match step {
        Step::End => "{{end}}",
        Step::Else => "{{else}}",
        Step::Node(_) | Step::Nothing => "node",
    }
}

/// Go's `item.String()`.
fn describe(item: &Item) -> String {
    match item.kind {
        Kind::Eof => "EOF".to_string(),
        Kind::Error => item.text.clone(),
        Kind::Block
        | Kind::Break
        | Kind::Continue
        | Kind::Dot
        | Kind::Define
        | Kind::Else
        | Kind::End
        | Kind::If
        | Kind::Nil
        | Kind::Range
        | Kind::Template
        | Kind::With => format!("<{}>", item.text),
        _ if item.text.chars().count() > 10 => {
            let head: String = item.text.chars().take(10).collect();
            format!("{}...", quote(&head))
        }
        _ => quote(&item.text),
    }
}
