//! Whether an EventSource's scripts are valid Lua that defines a global `evaluate()`, read
//! without running them: the manager holds no Lua VM (the agent, which evaluates scripts,
//! does). The syntax is Lua 5.4's, read by `full_moon`; a script that parses and defines
//! `evaluate` may still fail when a cluster runs it, which the EventReports then say.

use api::v1beta1::EventSource;
use full_moon::LuaVersion;
use full_moon::ast::{Block, Call, Expression, FunctionArgs, Index, Prefix, Stmt, Suffix, Var};
use full_moon::tokenizer::TokenReference;
use full_moon::tokenizer::{Lexer, Symbol, Token, TokenType};

/// The modules a script may `require`: those the agent's script environment preloads
/// (`agent/src/script_env.lua`; a test holds the two to the same list).
const MODULES: [&str; 4] = ["json", "strings", "runes", "sprig"];
/// Lua's own limit of nested syntax levels (`LUAI_MAXCCALLS`); deeper scripts are refused
/// before the parser, whose recursion it bounds.
const MAX_DEPTH: usize = 200;
/// Most binary operators in one expression: full_moon builds and drops them as a tree one
/// level deeper per operator. Lua has no such limit; no EventSource script comes near it.
const MAX_OPERATORS: usize = 5_000;
/// The parser's stack: generous, as its frames are large in unoptimised builds.
const PARSER_STACK: usize = 64 << 20;

/// Checks every script of `source`; `Err` says where and what is wrong.
pub fn check(source: &EventSource) -> Result<(), String> {
    for (s, selector) in source.spec.resource_selectors.iter().enumerate() {
        if !selector.evaluate_cel.is_empty() {
            let place = format!("resourceSelectors[{s}].evaluateCEL");
            return Err(format!("{place}: CEL rules are not supported yet"));
        }
        if !selector.evaluate.trim().is_empty() {
            check_script(&selector.evaluate)
                .map_err(|e| format!("resourceSelectors[{s}].evaluate: {e}"))?;
        }
    }
    if !source.spec.aggregated_selection.trim().is_empty() {
        check_script(&source.spec.aggregated_selection)
            .map_err(|e| format!("aggregatedSelection: {e}"))?;
    }
    Ok(())
}

/// Checks one script: tokens, nesting, syntax, and a global `evaluate` definition.
fn check_script(script: &str) -> Result<(), String> {
    let tokens = match Lexer::new(script, LuaVersion::lua54()).collect() {
        full_moon::tokenizer::LexerResult::Ok(tokens) => tokens,
        full_moon::tokenizer::LexerResult::Fatal(errors)
        | full_moon::tokenizer::LexerResult::Recovered(_, errors) => {
            let error = errors.first().map_or_else(String::new, |e| {
                let (start, _) = e.range();
                format!("line {}: {}", start.line(), e.error())
            });
            return Err(error);
        }
    };
    if let Some(refusal) = too_deep(&tokens) {
        return Err(refusal);
    }
    let text = breaks_in_blocks(&tokens);
    let parsed = std::thread::Builder::new()
        .name("lua-syntax".into())
        .stack_size(PARSER_STACK)
        .spawn(
            move || match full_moon::parse_fallible(&text, LuaVersion::lua54()).into_result() {
                Ok(ast) => Ok(if let Some(broken) = super::lua_rules::broken(&ast) {
                    Err(broken)
                } else { unknown_module(ast.nodes()).map_or_else(
                || defines_evaluate(ast.nodes()).then_some(()).ok_or_else(|| {
                    "the script defines no global function evaluate()".to_owned()
                }),
                |module| {
                    Err(format!(
                        "module '{module}' not found: the sandbox offers json, strings, runes and sprig"
                    ))
                },
            )}),
                Err(errors) => Err(errors.first().map_or_else(String::new, describe)),
            },
        )
        .map_err(|e| format!("cannot start the syntax check: {e}"))?
        .join()
        .map_err(|_| "the syntax check failed".to_owned())?;
    parsed.and_then(|checked| checked)
}

/// The script's text with each `break` wrapped as `do break end`: Lua 5.4 lets statements
/// follow a `break`, full_moon takes it for a block's last statement. Lines stay where they
/// were.
fn breaks_in_blocks(tokens: &[Token]) -> String {
    let mut text = String::new();
    for token in tokens {
        if matches!(
            token.token_type(),
            TokenType::Symbol {
                symbol: Symbol::Break
            }
        ) {
            text.push_str("do break end");
        } else {
            text.push_str(&token.to_string());
        }
    }
    text
}

/// A parse error as one line: where, and what.
fn describe(error: &full_moon::Error) -> String {
    let line = match error {
        full_moon::Error::AstError(e) => e.range().0.line(),
        full_moon::Error::TokenizerError(e) => e.range().0.line(),
    };
    format!("line {line}: {}", error.error_message())
}

/// The statements the script may run when loaded: those of `block` and of the blocks nested
/// in it, not those of function bodies.
fn top_level(block: &Block) -> Vec<&Stmt> {
    let mut statements = Vec::new();
    for stmt in block.stmts() {
        statements.push(stmt);
        let nested: Vec<&Block> = match stmt {
            Stmt::Do(d) => vec![d.block()],
            Stmt::If(i) => std::iter::once(i.block())
                .chain(i.else_if().into_iter().flatten().map(|e| e.block()))
                .chain(i.else_block())
                .collect(),
            Stmt::While(w) => vec![w.block()],
            Stmt::Repeat(r) => vec![r.block()],
            Stmt::NumericFor(f) => vec![f.block()],
            Stmt::GenericFor(f) => vec![f.block()],
            _ => Vec::new(),
        };
        for block in nested {
            statements.extend(top_level(block));
        }
    }
    statements
}

/// The text of a string literal token, without its quotes.
fn literal(token: &TokenReference) -> Option<&str> {
    match token.token().token_type() {
        TokenType::StringLiteral { literal, .. } => Some(literal.as_str()),
        _ => None,
    }
}

/// Whether `prefix` is the plain name `name`.
fn named(prefix: &Prefix, name: &str) -> bool {
    matches!(prefix, Prefix::Name(token) if token.token().to_string() == name)
}

/// The module `expression` requires when it is `require "x"` or `require("x")`.
fn required(expression: &Expression) -> Option<&str> {
    let Expression::FunctionCall(call) = expression else {
        return None;
    };
    if !named(call.prefix(), "require") {
        return None;
    }
    match call.suffixes().next()? {
        Suffix::Call(Call::AnonymousCall(args)) => match args.as_ref() {
            FunctionArgs::String(token) => literal(token),
            FunctionArgs::Parentheses { arguments, .. } => match arguments.iter().next()? {
                Expression::String(token) => literal(token),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// A module the script always `require`s when loaded (in a statement of its own top level,
/// alone or as a value) that the agent does not offer: the agent's load fails on it.
fn unknown_module(block: &Block) -> Option<String> {
    block.stmts().find_map(|stmt| {
        let found = match stmt {
            Stmt::FunctionCall(call) => {
                let call = Expression::FunctionCall(call.clone());
                required(&call).map(str::to_owned)
            }
            Stmt::LocalAssignment(a) => {
                a.expressions().iter().find_map(required).map(str::to_owned)
            }
            Stmt::Assignment(a) => a.expressions().iter().find_map(required).map(str::to_owned),
            _ => None,
        };
        found.filter(|name| !MODULES.contains(&name.as_str()))
    })
}

/// Whether `var` is the global `evaluate`: `evaluate`, `_G.evaluate`, `_G["evaluate"]`.
fn is_evaluate(var: &Var) -> bool {
    match var {
        Var::Name(name) => name.token().to_string() == "evaluate",
        Var::Expression(e) => {
            let suffixes: Vec<&Suffix> = e.suffixes().collect();
            named(e.prefix(), "_G")
                && match suffixes.as_slice() {
                    [Suffix::Index(Index::Dot { name, .. })] => {
                        name.token().to_string() == "evaluate"
                    }
                    [Suffix::Index(Index::Brackets { expression, .. })] => {
                        matches!(expression.as_ref(), Expression::String(t) if literal(t) == Some("evaluate"))
                    }
                    _ => false,
                }
        }
        _ => false,
    }
}

/// Whether `block`, or a block nested in it outside any function body, assigns the global
/// `evaluate` (`function evaluate(...)`, `function _G.evaluate(...)`, `evaluate = ...`,
/// `_G.evaluate = ...`).
fn defines_evaluate(block: &Block) -> bool {
    top_level(block).into_iter().any(|stmt| match stmt {
        Stmt::FunctionDeclaration(f) => {
            let name = f.name();
            let names: Vec<String> = name.names().iter().map(|n| n.token().to_string()).collect();
            name.method_name().is_none()
                && matches!(names.as_slice(), [n] if n == "evaluate")
                    | matches!(names.as_slice(), [g, n] if g == "_G" && n == "evaluate")
        }
        Stmt::Assignment(a) => a.variables().iter().any(is_evaluate),
        _ => false,
    })
}

/// Where the script first nests deeper than [`MAX_DEPTH`] levels, or has an expression of
/// more than [`MAX_OPERATORS`] operators, as a refusal. Levels are counted as Lua's parser
/// enters them: brackets, blocks and function bodies; within an expression, a run of unary
/// operators, and the right-associative `..` and `^`, each of which the parser enters one
/// level deeper.
fn too_deep(tokens: &[Token]) -> Option<String> {
    /// One open bracket or block, and its current expression.
    #[derive(Default)]
    struct Level {
        /// `..` and `^` so far.
        chain: usize,
        /// Unary operators just before the next operand.
        unary: usize,
        /// Binary operators so far.
        operators: usize,
    }
    let mut levels: Vec<Level> = vec![Level::default()];
    let mut after_operand = false;
    for token in tokens {
        let line = token.start_position().line();
        let (opens, closes, operand, kind) = match token.token_type() {
            TokenType::Identifier { .. }
            | TokenType::Number { .. }
            | TokenType::StringLiteral { .. } => (false, false, true, Op::None),
            TokenType::Symbol { symbol } => match symbol {
                Symbol::LeftParen | Symbol::LeftBracket | Symbol::LeftBrace => {
                    (true, false, false, Op::None)
                }
                // A function body nests in the expression it is a value of.
                Symbol::Function => (true, false, false, Op::None),
                Symbol::Do | Symbol::Then | Symbol::Repeat => (true, false, false, Op::Statement),
                Symbol::RightParen | Symbol::RightBracket | Symbol::RightBrace | Symbol::End => {
                    (false, true, true, Op::None)
                }
                Symbol::Until | Symbol::ElseIf => (false, true, false, Op::Statement),
                Symbol::Nil | Symbol::True | Symbol::False | Symbol::Ellipsis => {
                    (false, false, true, Op::None)
                }
                Symbol::TwoDots | Symbol::Caret => (false, false, false, Op::Chain),
                Symbol::Not | Symbol::Hash => (false, false, false, Op::Unary),
                Symbol::Minus | Symbol::Tilde if !after_operand => (false, false, false, Op::Unary),
                Symbol::Minus
                | Symbol::Tilde
                | Symbol::Plus
                | Symbol::Star
                | Symbol::Slash
                | Symbol::DoubleSlash
                | Symbol::Percent
                | Symbol::Ampersand
                | Symbol::Pipe
                | Symbol::DoubleLessThan
                | Symbol::DoubleGreaterThan
                | Symbol::TwoEqual
                | Symbol::TildeEqual
                | Symbol::LessThan
                | Symbol::LessThanEqual
                | Symbol::GreaterThan
                | Symbol::GreaterThanEqual
                | Symbol::And
                | Symbol::Or => (false, false, false, Op::Binary),
                Symbol::Semicolon
                | Symbol::Equal
                | Symbol::Comma
                | Symbol::Local
                | Symbol::Return
                | Symbol::If
                | Symbol::While
                | Symbol::For
                | Symbol::Else
                | Symbol::In
                | Symbol::Break
                | Symbol::Goto => (false, false, false, Op::Statement),
                _ => (false, false, false, Op::None),
            },
            _ => continue,
        };
        if closes && levels.len() > 1 {
            levels.pop();
        }
        if let Some(level) = levels.last_mut() {
            match kind {
                Op::Statement => *level = Level::default(),
                Op::Chain => {
                    level.chain += 1;
                    level.operators += 1;
                }
                Op::Binary => level.operators += 1,
                Op::Unary => level.unary += 1,
                Op::None => {}
            }
            if operand {
                level.unary = 0;
            }
            if level.operators > MAX_OPERATORS {
                return Some(format!(
                    "line {line}: an expression of more than {MAX_OPERATORS} operators"
                ));
            }
        }
        if opens {
            levels.push(Level::default());
        }
        after_operand = operand;
        let depth = levels.len() - 1 + levels.iter().map(|l| l.chain + l.unary).sum::<usize>();
        if depth > MAX_DEPTH {
            return Some(format!(
                "line {line}: nested deeper than {MAX_DEPTH} levels (Lua's own limit)"
            ));
        }
    }
    None
}

/// What a token does to the expression it is in.
#[derive(Clone, Copy)]
enum Op {
    /// Nothing counted.
    None,
    /// Ends the expression: a new statement or a new expression of a list.
    Statement,
    /// A right-associative binary operator: one level deeper.
    Chain,
    /// A left-associative binary operator.
    Binary,
    /// A unary operator: one level deeper until its operand.
    Unary,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(script: &str) -> EventSource {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "es"},
            "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Service",
                     "evaluate": script}]}
        }))
        .unwrap()
    }

    #[test]
    fn valid_scripts_pass_in_every_form_sveltos_users_write() {
        for script in [
            "function evaluate()\n  local hs = {}\n  hs.matching = obj.spec.type == 'LoadBalancer'\n  return hs\nend",
            "evaluate = function() return {matching = true} end",
            "local x <const> = 1\n_G.evaluate = function() return {matching = x // 1 == 1} end",
            "if true then\n  function evaluate() return {} end\nend",
            "function _G.evaluate() return {} end",
            "_G['evaluate'] = function() return {} end",
            // A require that never runs at load time is the cluster's to report.
            "if false then local yaml = require 'yaml' end\nfunction evaluate() return {} end",
            "-- a comment\nfunction evaluate()\n  local s = [[long\nstring]] .. 'a' .. \"b\"\n  goto done\n  ::done::\n  return {matching = #s > 0 and not false, message = -1 ~= 2}\nend",
        ] {
            assert_eq!(check(&source(script)), Ok(()), "{script}");
        }
    }

    #[test]
    fn errors_say_where_and_what() {
        let broken = check(&source("function evaluate( return end")).unwrap_err();
        assert!(
            broken.starts_with("resourceSelectors[0].evaluate: line 1: "),
            "{broken}"
        );
        let none = check(&source("local function evaluate() return {} end")).unwrap_err();
        assert_eq!(
            none,
            "resourceSelectors[0].evaluate: the script defines no global function evaluate()"
        );
        let method = check(&source("t = {}\nfunction t.evaluate() return {} end")).unwrap_err();
        assert!(
            method.ends_with("defines no global function evaluate()"),
            "{method}"
        );
        let string = check(&source("function evaluate()\n return 'open\nend")).unwrap_err();
        assert!(string.contains("line 2"), "{string}");
    }

    #[test]
    fn hostile_nesting_is_refused_before_the_parser() {
        for script in [
            format!(
                "function evaluate() return {}1{} end",
                "(".repeat(100_000),
                ")".repeat(100_000)
            ),
            format!(
                "function evaluate() return {}1{} end",
                "{".repeat(100_000),
                "}".repeat(100_000)
            ),
            format!("function evaluate() return {}1 end", "- ".repeat(100_000)),
            format!("function evaluate() return {}1 end", "not ".repeat(100_000)),
            format!(
                "function evaluate() return 'a'{} end",
                " .. 'a'".repeat(100_000)
            ),
            format!(
                "function evaluate() {}return {{}} {} end",
                "do ".repeat(100_000),
                "end ".repeat(100_000)
            ),
            format!(
                "function evaluate() return 'a'{} end",
                " .. f'x'".repeat(100_000)
            ),
            format!(
                "function evaluate() return 'a'{} end",
                " .. function() end".repeat(100_000)
            ),
            format!(
                "function evaluate() return {}1 end",
                "not (".repeat(100_000)
            ),
        ] {
            let refused = check(&source(&script)).unwrap_err();
            assert!(
                refused.contains("nested deeper than 200 levels"),
                "{refused}"
            );
        }
        let sum = format!(
            "function evaluate() return {{matching = 1{} > 0}} end",
            " + 1".repeat(100_000)
        );
        let refused = check(&source(&sum)).unwrap_err();
        assert!(
            refused.contains("an expression of more than 5000 operators"),
            "{refused}"
        );
        // Left-associative operators and unary ones between operands do not nest.
        let wide = format!(
            "function evaluate() return {{matching = not a{} }} end",
            " and not a".repeat(1_000)
        );
        assert_eq!(check(&source(&wide)), Ok(()));
        // A long flat script is not deep.
        let flat = format!(
            "function evaluate()\n{}return {{}}\nend",
            "local a = 1 + 2 .. 'x'\n".repeat(10_000)
        );
        assert_eq!(check(&source(&flat)), Ok(()));
    }
}
