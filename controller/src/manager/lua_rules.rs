//! What Lua 5.4's compiler refuses in a script that parses: `break` outside a loop, a `goto`
//! with no visible label or one that jumps into the scope of a local, a label defined twice,
//! assigning a `<const>` or `<close>` local, an unknown attribute, two to-be-closed variables
//! in one list, and `...` outside a vararg function. The rules follow lparser.c (5.4), so a
//! script is valid here exactly when `load` accepts it.

use std::collections::HashSet;

use full_moon::ast::lua52::{Goto, Label};
use full_moon::ast::{
    Assignment, Ast, Block, Expression, FunctionBody, FunctionDeclaration, GenericFor, LastStmt,
    LocalAssignment, LocalFunction, NumericFor, Parameter, Repeat, Stmt, Var, While,
};
use full_moon::tokenizer::{Symbol, TokenReference, TokenType};
use full_moon::visitors::Visitor;

/// The first rule `ast` breaks, as "line N: what Lua says".
pub fn broken(ast: &Ast) -> Option<String> {
    let mut rules = Rules::default();
    rules.functions.push(Function {
        vararg: true,
        ..Function::default()
    });
    rules.visit_ast(ast);
    rules.end_function();
    rules.error
}

/// A local variable in scope.
struct Local {
    name: String,
    constant: bool,
}

/// A `goto` waiting for its label, with the number of locals active where it jumps from.
struct PendingGoto {
    name: String,
    line: usize,
    active: usize,
}

struct LabelAt {
    name: String,
    line: usize,
}

/// A block being walked.
struct Scope {
    is_loop: bool,
    /// A `repeat` body: its scope lasts through the `until` condition.
    is_repeat: bool,
    first_local: usize,
    first_label: usize,
    first_goto: usize,
    /// Labels followed by nothing but labels to the end of the block: Lua counts the block's
    /// locals as out of scope there.
    closing_labels: HashSet<usize>,
}

#[derive(Default)]
struct Function {
    vararg: bool,
    scopes: Vec<Scope>,
    locals: Vec<Local>,
    labels: Vec<LabelAt>,
    gotos: Vec<PendingGoto>,
}

/// What a block about to be walked is: a loop's, with the locals its statement declares.
struct Opening {
    block: usize,
    is_loop: bool,
    is_repeat: bool,
    locals: Vec<String>,
}

#[derive(Default)]
struct Rules {
    functions: Vec<Function>,
    openings: Vec<Opening>,
    error: Option<String>,
}

fn line(token: &TokenReference) -> usize {
    token.token().start_position().line()
}

fn name(token: &TokenReference) -> String {
    token.token().to_string()
}

/// Identity of a node, to recognise it when the walk reaches it.
fn address<T>(node: &T) -> usize {
    std::ptr::from_ref(node) as usize
}

impl Rules {
    fn fail(&mut self, at: usize, message: String) {
        if self.error.is_none() {
            self.error = Some(format!("line {at}: {message}"));
        }
    }

    fn function(&mut self) -> Option<&mut Function> {
        self.functions.last_mut()
    }

    fn open(&mut self, block: &Block, is_loop: bool, locals: Vec<String>) {
        self.openings.push(Opening {
            block: address(block),
            is_loop,
            is_repeat: false,
            locals,
        });
    }

    /// Leaves the innermost block.
    fn close_scope(&mut self) {
        let Some(function) = self.function() else {
            return;
        };
        let Some(scope) = function.scopes.pop() else {
            return;
        };
        // Gotos still waiting leave the block: they now jump from outside its locals.
        for goto in &mut function.gotos[scope.first_goto..] {
            goto.active = goto.active.min(scope.first_local);
        }
        function.labels.truncate(scope.first_label);
        function.locals.truncate(scope.first_local);
    }

    /// Reports the gotos of the function that found no label, and leaves it.
    fn end_function(&mut self) {
        if let Some(function) = self.functions.pop()
            && let Some(first) = function.gotos.first()
        {
            let message = format!("no visible label '{}' for <goto>", first.name);
            self.fail(first.line, message);
        }
    }

    fn declare(&mut self, names: impl IntoIterator<Item = (String, bool)>) {
        if let Some(function) = self.function() {
            function.locals.extend(
                names
                    .into_iter()
                    .map(|(name, constant)| Local { name, constant }),
            );
        }
    }

    /// Checks an assignment to the variable `token`: refused when it resolves to a `<const>`
    /// or `<close>` local, here or in an enclosing function.
    fn assign(&mut self, token: &TokenReference) {
        let variable = name(token);
        let constant = self
            .functions
            .iter()
            .rev()
            .find_map(|f| f.locals.iter().rev().find(|l| l.name == variable))
            .is_some_and(|local| local.constant);
        if constant {
            let message = format!("attempt to assign to const variable '{variable}'");
            self.fail(line(token), message);
        }
    }
}

impl Visitor for Rules {
    fn visit_function_body(&mut self, body: &FunctionBody) {
        let mut vararg = false;
        let mut params = Vec::new();
        for parameter in body.parameters() {
            match parameter {
                Parameter::Ellipsis(_) => vararg = true,
                Parameter::Name(token) => params.push(name(token)),
                _ => {}
            }
        }
        if let Some(opening) = self
            .openings
            .iter_mut()
            .find(|o| o.block == address(body.block()))
        {
            opening.locals.extend(params);
        } else {
            self.open(body.block(), false, params);
        }
        self.functions.push(Function {
            vararg,
            ..Function::default()
        });
    }

    fn visit_function_body_end(&mut self, _: &FunctionBody) {
        self.end_function();
    }

    fn visit_function_declaration(&mut self, declaration: &FunctionDeclaration) {
        let name = declaration.name();
        if name.method_name().is_some() {
            self.open(declaration.body().block(), false, vec!["self".to_owned()]);
        } else if let (1, Some(token)) = (name.names().len(), name.names().iter().next()) {
            // `function f()` assigns the variable f.
            self.assign(token);
        }
    }

    fn visit_while(&mut self, node: &While) {
        self.open(node.block(), true, Vec::new());
    }

    fn visit_repeat(&mut self, node: &Repeat) {
        self.openings.push(Opening {
            block: address(node.block()),
            is_loop: true,
            is_repeat: true,
            locals: Vec::new(),
        });
    }

    fn visit_repeat_end(&mut self, _: &Repeat) {
        self.close_scope();
    }

    fn visit_numeric_for(&mut self, node: &NumericFor) {
        self.open(node.block(), true, vec![name(node.index_variable())]);
    }

    fn visit_generic_for(&mut self, node: &GenericFor) {
        let names = node.names().iter().map(name).collect();
        self.open(node.block(), true, names);
    }

    fn visit_block(&mut self, block: &Block) {
        let opening = self
            .openings
            .iter()
            .position(|o| o.block == address(block))
            .map(|at| self.openings.swap_remove(at));
        let stmts: Vec<&Stmt> = block.stmts().collect();
        let mut closing_labels = HashSet::new();
        // `until` does not end a block for labels: its condition still sees the locals.
        let is_repeat = opening.as_ref().is_some_and(|o| o.is_repeat);
        if block.last_stmt().is_none() && !is_repeat {
            for stmt in stmts.iter().rev() {
                match stmt {
                    Stmt::Label(label) => closing_labels.insert(address(label)),
                    _ => break,
                };
            }
        }
        let Some(function) = self.function() else {
            return;
        };
        function.scopes.push(Scope {
            is_loop: opening.as_ref().is_some_and(|o| o.is_loop),
            is_repeat,
            first_local: function.locals.len(),
            first_label: function.labels.len(),
            first_goto: function.gotos.len(),
            closing_labels,
        });
        if let Some(opening) = opening {
            self.declare(opening.locals.into_iter().map(|n| (n, false)));
        }
    }

    fn visit_block_end(&mut self, _: &Block) {
        let repeat = self
            .functions
            .last()
            .and_then(|f| f.scopes.last())
            .is_some_and(|s| s.is_repeat);
        // A repeat body closes after its `until` condition (visit_repeat_end).
        if !repeat {
            self.close_scope();
        }
    }

    fn visit_local_assignment_end(&mut self, node: &LocalAssignment) {
        let mut closing = 0;
        let mut names = Vec::new();
        for (token, attribute) in node
            .names()
            .iter()
            .zip(node.attributes().chain(std::iter::repeat(None)))
        {
            let constant = match attribute.map(|a| a.name().token().to_string()) {
                None => false,
                Some(kind) if kind == "const" => true,
                Some(kind) if kind == "close" => {
                    closing += 1;
                    true
                }
                Some(other) => {
                    self.fail(line(token), format!("unknown attribute '{other}'"));
                    true
                }
            };
            names.push((name(token), constant));
        }
        if closing > 1 {
            self.fail(
                line(node.local_token()),
                "multiple to-be-closed variables in local list".to_owned(),
            );
        }
        self.declare(names);
    }

    fn visit_local_function(&mut self, node: &LocalFunction) {
        self.declare([(name(node.name()), false)]);
    }

    fn visit_assignment(&mut self, node: &Assignment) {
        for var in node.variables() {
            if let Var::Name(token) = var {
                self.assign(token);
            }
        }
    }

    fn visit_goto(&mut self, node: &Goto) {
        let (label, at) = (name(node.label_name()), line(node.goto_token()));
        let Some(function) = self.function() else {
            return;
        };
        // A label already seen and still visible: a jump backwards, always allowed.
        if !function.labels.iter().any(|l| l.name == label) {
            let active = function.locals.len();
            function.gotos.push(PendingGoto {
                name: label,
                line: at,
                active,
            });
        }
    }

    fn visit_label(&mut self, node: &Label) {
        let (label, at) = (name(node.name()), line(node.name()));
        let Some(function) = self.functions.last_mut() else {
            return;
        };
        if let Some(earlier) = function.labels.iter().find(|l| l.name == label) {
            let message = format!("label '{label}' already defined on line {}", earlier.line);
            return self.fail(at, message);
        }
        let Some(scope) = function.scopes.last() else {
            return;
        };
        let active = if scope.closing_labels.contains(&address(node)) {
            scope.first_local
        } else {
            function.locals.len()
        };
        let first_goto = scope.first_goto;
        let mut error = None;
        let mut index = first_goto;
        while index < function.gotos.len() {
            if function.gotos[index].name != label {
                index += 1;
                continue;
            }
            let goto = function.gotos.remove(index);
            if goto.active < active && error.is_none() {
                let local = function
                    .locals
                    .get(goto.active)
                    .map_or_else(String::new, |l| l.name.clone());
                error = Some((
                    goto.line,
                    format!(
                        "<goto {label}> at line {} jumps into the scope of local '{local}'",
                        goto.line
                    ),
                ));
            }
        }
        function.labels.push(LabelAt {
            name: label,
            line: at,
        });
        if let Some((at, message)) = error {
            self.fail(at, message);
        }
    }

    fn visit_last_stmt(&mut self, node: &LastStmt) {
        if let LastStmt::Break(token) = node {
            let in_loop = self
                .functions
                .last()
                .is_some_and(|f| f.scopes.iter().any(|s| s.is_loop));
            if !in_loop {
                self.fail(line(token), "break outside loop".to_owned());
            }
        }
    }

    fn visit_expression(&mut self, node: &Expression) {
        if let Expression::Symbol(token) = node
            && matches!(
                token.token_type(),
                TokenType::Symbol {
                    symbol: Symbol::Ellipsis
                }
            )
            && !self.functions.last().is_some_and(|f| f.vararg)
        {
            self.fail(
                line(token),
                "cannot use '...' outside a vararg function".to_owned(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(script: &str) -> Option<String> {
        let ast = full_moon::parse_fallible(script, full_moon::LuaVersion::lua54())
            .into_result()
            .ok()?;
        broken(&ast)
    }

    #[test]
    fn scripts_load_accepts_pass() {
        for script in [
            "while true do do break end local x = 1 end",
            "do goto done end ::done::",
            "repeat local z = 1; goto out until z ::out::",
            "local x <const> = 1; do local x = 2; x = 3 end",
            "local t = {...}",
            "local function f(...) return ... end",
            "for i = 1, 2 do local a = i; goto continue; local b = a ::continue:: end",
            "::top:: local n = 0; n = n + 1; if n < 3 then goto top end",
            "local self <const> = 1; local t = {}; function t:m() self = 2 end",
            "for _, v in ipairs({}) do if v then break end end",
            "local x <const> = 1; repeat local x = 2 until (function() x = 3 return true end)()",
            "local f <const> = 1; local t = {}; function t.f() end",
        ] {
            assert_eq!(check(script), None, "{script}");
        }
    }

    #[test]
    fn what_lua_refuses_is_said_in_lua_words() {
        for (script, expected) in [
            ("if true then break end", "line 1: break outside loop"),
            (
                "local function f() while true do end break end",
                "line 1: break outside loop",
            ),
            (
                "goto nowhere",
                "line 1: no visible label 'nowhere' for <goto>",
            ),
            (
                "goto later; local y = 1; ::later:: print(y)",
                "line 1: <goto later> at line 1 jumps into the scope of local 'y'",
            ),
            (
                "::a::\n::a::",
                "line 2: label 'a' already defined on line 1",
            ),
            (
                "local x <const> = 1; x = 2",
                "line 1: attempt to assign to const variable 'x'",
            ),
            (
                "local x <close> = nil\nlocal function f() x = 3 end",
                "line 2: attempt to assign to const variable 'x'",
            ),
            ("local x <what> = 1", "line 1: unknown attribute 'what'"),
            (
                "local a <close>, b <close> = nil, nil",
                "line 1: multiple to-be-closed variables in local list",
            ),
            (
                "local function f() return ... end",
                "line 1: cannot use '...' outside a vararg function",
            ),
            (
                "for i = 1, 2 do local function g() goto cont end ::cont:: end",
                "line 1: no visible label 'cont' for <goto>",
            ),
            (
                "repeat local a = 1; if a then goto continue end; local b = 1 ::continue:: until b",
                "line 1: <goto continue> at line 1 jumps into the scope of local 'b'",
            ),
            (
                "repeat local x <const> = 1 until (function() x = 2 end)",
                "line 1: attempt to assign to const variable 'x'",
            ),
            (
                "local f <const> = 1; function f() end",
                "line 1: attempt to assign to const variable 'f'",
            ),
        ] {
            assert_eq!(check(script).as_deref(), Some(expected), "{script}");
        }
    }
}
