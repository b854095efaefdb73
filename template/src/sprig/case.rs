//! Identifier case conversions (`snakecase`, `kebabcase`, `camelcase`) as huandu/xstrings
//! performs them.

use crate::funcs::{FuncMap, Function, Param};
use crate::sprig::conv::{ok_str, str_arg};

/// Registers the case conversions.
pub fn register(map: &mut FuncMap) {
    map.insert(
        "snakecase",
        Function::new(&[Param::String], |a| ok_str(delimited(str_arg(&a[0]), '_'))),
    );
    map.insert(
        "kebabcase",
        Function::new(&[Param::String], |a| ok_str(delimited(str_arg(&a[0]), '-'))),
    );
    map.insert(
        "camelcase",
        Function::new(&[Param::String], |a| ok_str(camel(str_arg(&a[0])))),
    );
}

/// Splits an identifier into words: at separators (anything not a letter or digit), at a
/// lower-to-upper change, and before the last capital of an acronym followed by lower case.
fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && !current.is_empty() {
            let previous = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if previous.is_lowercase()
                || previous.is_ascii_digit()
                || (previous.is_uppercase() && next_is_lower)
            {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

fn delimited(s: &str, delimiter: char) -> String {
    words(s)
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(&delimiter.to_string())
}

/// `ToCamelCase`: `_` separated words joined with their first letter upper-cased; leading
/// underscores and doubled underscores are kept as one.
fn camel(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while chars.peek() == Some(&'_') {
        out.push('_');
        chars.next();
    }
    let mut upper_next = true;
    let mut previous_underscore = false;
    for c in chars {
        if c == '_' {
            if previous_underscore {
                out.push('_');
            }
            previous_underscore = true;
            upper_next = true;
            continue;
        }
        previous_underscore = false;
        if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    if previous_underscore {
        out.push('_');
    }
    out
}
