//! Masterminds/semver v3 as sprig exposes it: `semver` (a `*semver.Version`, see `version`)
//! and `semverCompare` (constraints with `||`, `,`, ranges, wildcards, `~` and `^`).

use std::cmp::Ordering;

use crate::funcs::{FuncError, FuncMap, Function, Param};
use crate::sprig::conv::str_arg;
use crate::sprig::version::{SemverValue, Version};
use crate::value::Value;

/// Registers `semver` and `semverCompare`.
pub fn register(map: &mut FuncMap) {
    map.insert(
        "semver",
        Function::new(&[Param::String], |a| {
            Version::parse(str_arg(&a[0])).map(SemverValue::pointer)
        }),
    );
    map.insert(
        "semverCompare",
        Function::new(&[Param::String, Param::String], |a| {
            let constraints = parse_constraints(str_arg(&a[0]))?;
            let version = Version::parse(str_arg(&a[1]))?;
            Ok(Value::bool(
                constraints
                    .iter()
                    .any(|group| group.iter().all(|c| c.check(&version))),
            ))
        }),
    );
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Tilde,
    Caret,
}

#[derive(Debug, Clone)]
struct Constraint {
    op: Op,
    version: Version,
    /// The constraint had no operator and a wildcard (`1.2.x`, `*`).
    dirty: bool,
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        let c = &self.version;
        let dirty = self.dirty || c.minor_dirty || c.patch_dirty;
        if self.op != Op::Ne && !v.pre.is_empty() && c.pre.is_empty() {
            return false;
        }
        match self.op {
            Op::Eq if dirty => tilde(v, c),
            Op::Eq => v.compare(c) == Ordering::Equal,
            Op::Ne if dirty => {
                !(v.major == c.major
                    && (c.minor_dirty || v.minor == c.minor)
                    && (c.patch_dirty || v.patch == c.patch))
            }
            Op::Ne => v.compare(c) != Ordering::Equal,
            Op::Gt if c.minor_dirty => v.major > c.major,
            Op::Gt if c.patch_dirty => (v.major, v.minor) > (c.major, c.minor),
            Op::Gt => v.compare(c) == Ordering::Greater,
            Op::Lt => v.compare(c) == Ordering::Less,
            Op::Ge => v.compare(c) != Ordering::Less,
            Op::Le if c.minor_dirty => v.major <= c.major,
            Op::Le if c.patch_dirty => (v.major, v.minor) <= (c.major, c.minor),
            Op::Le => v.compare(c) != Ordering::Greater,
            Op::Tilde => tilde(v, c),
            Op::Caret => caret(v, c),
        }
    }
}

fn tilde(v: &Version, c: &Version) -> bool {
    if v.compare(c) == Ordering::Less {
        return false;
    }
    if c.major == 0 && c.minor == 0 && c.patch == 0 && !c.minor_dirty && !c.patch_dirty {
        return true;
    }
    v.major == c.major && (c.minor_dirty || v.minor == c.minor)
}

fn caret(v: &Version, c: &Version) -> bool {
    if v.compare(c) == Ordering::Less {
        return false;
    }
    if c.major > 0 {
        return v.major == c.major;
    }
    if v.major > 0 {
        return false;
    }
    if c.minor_dirty {
        return true;
    }
    if c.minor > 0 {
        return v.minor == c.minor;
    }
    if v.minor > 0 {
        return false;
    }
    c.patch_dirty || v.patch == c.patch
}

const OPERATORS: [(&str, Op); 11] = [
    ("!=", Op::Ne),
    (">=", Op::Ge),
    ("=>", Op::Ge),
    ("<=", Op::Le),
    ("=<", Op::Le),
    ("~>", Op::Tilde),
    ("=", Op::Eq),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("~", Op::Tilde),
    ("^", Op::Caret),
];

fn improper(text: &str) -> FuncError {
    FuncError(format!("improper constraint: {text}"))
}

fn parse_one(text: &str) -> Result<Constraint, FuncError> {
    let (op, rest) = OPERATORS
        .iter()
        .find_map(|(sym, op)| text.strip_prefix(sym).map(|rest| (Some(*op), rest)))
        .unwrap_or((None, text));
    let rest = rest.trim();
    let version = Version::parse_with(rest, true).map_err(|_| improper(text))?;
    let wildcard = rest
        .split(['-', '+'])
        .next()
        .unwrap_or(rest)
        .contains(['x', 'X', '*']);
    Ok(Constraint {
        op: op.unwrap_or(Op::Eq),
        dirty: wildcard || version.minor_dirty || version.patch_dirty,
        version,
    })
}

/// Parses `a || b`, each an AND of `,`/space separated constraints or `x - y` ranges.
fn parse_constraints(text: &str) -> Result<Vec<Vec<Constraint>>, FuncError> {
    let mut groups = Vec::new();
    for group in text.split("||") {
        let tokens: Vec<&str> = group
            .split([',', ' ', '\t'])
            .filter(|t| !t.is_empty())
            .collect();
        let mut constraints = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let token = tokens[i];
            if tokens.get(i + 1) == Some(&"-") && i + 2 < tokens.len() {
                let low = parse_one(token)?;
                let high = parse_one(tokens[i + 2])?;
                constraints.push(Constraint { op: Op::Ge, ..low });
                constraints.push(Constraint { op: Op::Le, ..high });
                i += 3;
                continue;
            }
            let is_bare_op = OPERATORS.iter().any(|(sym, _)| *sym == token);
            if is_bare_op && i + 1 < tokens.len() {
                constraints.push(parse_one(&format!("{token}{}", tokens[i + 1]))?);
                i += 2;
                continue;
            }
            constraints.push(parse_one(token)?);
            i += 1;
        }
        if constraints.is_empty() {
            return Err(improper(text));
        }
        groups.push(constraints);
    }
    Ok(groups)
}
