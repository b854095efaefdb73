//! Whether an EventSource's scripts are valid Lua that defines a global `evaluate()`, read
//! without running them: the manager holds no Lua VM (the agent, which evaluates scripts,
//! does). The syntax is Lua 5.4's, read by `full_moon`; a script that parses and defines
//! `evaluate` may still fail when a cluster runs it, which the EventReports then say.

use api::v1beta1::EventSource;
use full_moon::LuaVersion;
use full_moon::ast::{Block, Stmt};
use full_moon::tokenizer::{Lexer, Symbol, Token, TokenType};

/// The modules a script may `require`: those the agent's script environment preloads
/// (`agent/src/script_env.lua`; a test holds the two to the same list).
const MODULES: [&str; 4] = ["json", "strings", "runes", "sprig"];
/// Lua's own limit of nested syntax levels (`LUAI_MAXCCALLS`); deeper scripts are refused
/// before the parser, whose recursion it bounds.
const MAX_DEPTH: usize = 200;
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
    if let Some(line) = too_deep(&tokens) {
        return Err(format!(
            "line {line}: nested deeper than {MAX_DEPTH} levels (Lua's own limit)"
        ));
    }
    let text = script.to_owned();
    let parsed = std::thread::Builder::new()
        .name("lua-syntax".into())
        .stack_size(PARSER_STACK)
        .spawn(
            move || match full_moon::parse_fallible(&text, LuaVersion::lua54()).into_result() {
                Ok(ast) => Ok(unknown_module(ast.nodes()).map_or_else(
                || defines_evaluate(ast.nodes()).then_some(()).ok_or_else(|| {
                    "the script defines no global function evaluate()".to_owned()
                }),
                |module| {
                    Err(format!(
                        "module '{module}' not found: the sandbox offers json, strings, runes and sprig"
                    ))
                },
            )),
                Err(errors) => Err(errors.first().map_or_else(String::new, describe)),
            },
        )
        .map_err(|e| format!("cannot start the syntax check: {e}"))?
        .join()
        .map_err(|_| "the syntax check failed".to_owned())?;
    parsed.and_then(|checked| checked)
}

/// A parse error as one line: where, and what.
fn describe(error: &full_moon::Error) -> String {
    let line = match error {
        full_moon::Error::AstError(e) => e.range().0.line(),
        full_moon::Error::TokenizerError(e) => e.range().0.line(),
    };
    format!("line {line}: {}", error.error_message())
}

/// The statements the script runs when loaded: those of `block` and of the blocks nested in
/// it, not those of function bodies.
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

/// A module the script `require`s when loaded (`require "x"`, `require("x")`, alone or as a
/// value) that the agent does not offer; the agent's load fails on it.
fn unknown_module(block: &Block) -> Option<String> {
    top_level(block).into_iter().find_map(|stmt| {
        let texts: Vec<String> = match stmt {
            Stmt::FunctionCall(call) => vec![call.to_string()],
            Stmt::LocalAssignment(a) => a.expressions().iter().map(ToString::to_string).collect(),
            Stmt::Assignment(a) => a.expressions().iter().map(ToString::to_string).collect(),
            _ => Vec::new(),
        };
        texts.into_iter().find_map(|text| {
            let rest = text.trim().strip_prefix("require")?;
            let rest = rest.trim_start().trim_start_matches('(').trim_start();
            let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let name = rest[1..].split(quote).next()?;
            (!MODULES.contains(&name)).then(|| name.to_owned())
        })
    })
}

/// Whether `block`, or a block nested in it outside any function body, assigns the global
/// `evaluate` (`function evaluate(...)`, `evaluate = ...`, `_G.evaluate = ...`).
fn defines_evaluate(block: &Block) -> bool {
    top_level(block).into_iter().any(|stmt| match stmt {
        Stmt::FunctionDeclaration(f) => {
            let name = f.name();
            name.method_name().is_none()
                && name.names().len() == 1
                && name
                    .names()
                    .iter()
                    .any(|n| n.token().to_string() == "evaluate")
        }
        Stmt::Assignment(a) => a.variables().iter().any(|v| {
            let text: String = v.to_string().split_whitespace().collect();
            [
                "evaluate",
                "_G.evaluate",
                "_G[\"evaluate\"]",
                "_G['evaluate']",
            ]
            .contains(&text.as_str())
        }),
        _ => false,
    })
}

/// The line where the script's nesting first exceeds [`MAX_DEPTH`], counted as Lua's parser
/// nests: brackets and blocks, and within an expression its unary operators and
/// right-associative `..` and `^`, each of which the parser enters one level deeper.
fn too_deep(tokens: &[Token]) -> Option<usize> {
    // Per open bracket or block: the chain of nesting operators in its current expression.
    let mut chains: Vec<usize> = vec![0];
    let mut after_operand = false;
    for token in tokens {
        let TokenType::Symbol { symbol } = token.token_type() else {
            match token.token_type() {
                TokenType::Identifier { .. }
                | TokenType::Number { .. }
                | TokenType::StringLiteral { .. } => {
                    if after_operand {
                        // Two operands in a row: a new statement.
                        if let Some(chain) = chains.last_mut() {
                            *chain = 0;
                        }
                    }
                    after_operand = true;
                }
                _ => {}
            }
            continue;
        };
        let (opens, closes, operand, nests, resets) = match symbol {
            Symbol::LeftParen | Symbol::LeftBracket | Symbol::LeftBrace => {
                (true, false, false, false, false)
            }
            Symbol::Function | Symbol::Do | Symbol::Then | Symbol::Repeat => {
                (true, false, false, false, true)
            }
            Symbol::RightParen | Symbol::RightBracket | Symbol::RightBrace => {
                (false, true, true, false, false)
            }
            Symbol::End => (false, true, true, false, true),
            Symbol::Until | Symbol::ElseIf => (false, true, false, false, true),
            Symbol::Nil | Symbol::True | Symbol::False | Symbol::Ellipsis => {
                (false, false, true, false, false)
            }
            Symbol::TwoDots | Symbol::Caret | Symbol::Not | Symbol::Hash => {
                (false, false, false, true, false)
            }
            Symbol::Minus | Symbol::Tilde => (false, false, false, !after_operand, false),
            Symbol::Comma
            | Symbol::Semicolon
            | Symbol::Equal
            | Symbol::Local
            | Symbol::Return
            | Symbol::Else
            | Symbol::In
            | Symbol::Break
            | Symbol::Goto => (false, false, false, false, true),
            _ => (false, false, false, false, false),
        };
        if closes && chains.len() > 1 {
            chains.pop();
        }
        if resets && let Some(chain) = chains.last_mut() {
            *chain = 0;
        }
        if nests && let Some(chain) = chains.last_mut() {
            *chain += 1;
        }
        if opens {
            chains.push(0);
        }
        after_operand = operand;
        let depth = chains.len() - 1 + chains.iter().sum::<usize>();
        if depth > MAX_DEPTH {
            return Some(token.start_position().line());
        }
    }
    None
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
        ] {
            let refused = check(&source(&script)).unwrap_err();
            assert!(
                refused.contains("nested deeper than 200 levels"),
                "{refused}"
            );
        }
        // A long flat script is not deep.
        let flat = format!(
            "function evaluate()\n{}return {{}}\nend",
            "local a = 1 + 2 .. 'x'\n".repeat(10_000)
        );
        assert_eq!(check(&source(&flat)), Ok(()));
    }
}
