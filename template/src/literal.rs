//! Go literal syntax: string and character unquoting (`strconv.Unquote`) and number
//! constants (`strconv.ParseInt`/`ParseUint`/`ParseFloat` with base prefixes and `_`).

use crate::ast::Number;

/// `strconv.Unquote` for `"..."` and `` `...` `` literals.
pub fn unquote(literal: &str) -> Result<String, &'static str> {
    if let Some(raw) = literal
        .strip_prefix('`')
        .and_then(|rest| rest.strip_suffix('`'))
    {
        if raw.contains('`') {
            return Err("invalid syntax");
        }
        return Ok(raw.replace('\r', ""));
    }
    let body = literal
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .ok_or("invalid syntax")?;
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while !rest.is_empty() {
        let (c, tail) = unquote_char(rest, '"')?;
        out.push(c);
        rest = tail;
    }
    Ok(out)
}

/// Decodes one possibly escaped character at the start of `s` (`strconv.UnquoteChar`).
pub fn unquote_char(s: &str, quote: char) -> Result<(char, &str), &'static str> {
    let mut chars = s.chars();
    let c = chars.next().ok_or("invalid syntax")?;
    if c == quote && (quote == '\'' || quote == '"') {
        return Err("invalid syntax");
    }
    if c == '\n' {
        return Err("invalid syntax");
    }
    if c != '\\' {
        return Ok((c, chars.as_str()));
    }
    let escape = chars.next().ok_or("invalid syntax")?;
    let rest = chars.as_str();
    let simple = match escape {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' => Some('\\'),
        '\'' | '"' if escape == quote => Some(escape),
        _ => None,
    };
    if let Some(c) = simple {
        return Ok((c, rest));
    }
    let (digits, radix) = match escape {
        'x' => (2, 16),
        'u' => (4, 16),
        'U' => (8, 16),
        '0'..='7' => (3, 8),
        _ => return Err("invalid syntax"),
    };
    let (number_text, tail) = if radix == 8 {
        let all = &s[1..];
        (
            all.get(..3).ok_or("invalid syntax")?,
            &all[3.min(all.len())..],
        )
    } else {
        (
            rest.get(..digits).ok_or("invalid syntax")?,
            &rest[digits.min(rest.len())..],
        )
    };
    if number_text.len() != digits || !number_text.chars().all(|d| d.is_digit(radix)) {
        return Err("invalid syntax");
    }
    let code = u32::from_str_radix(number_text, radix).map_err(|_| "invalid syntax")?;
    if radix == 8 && code > 255 {
        return Err("invalid syntax");
    }
    // Byte escapes (`\xNN`, octal) become the code point NN: template text is UTF-8 here,
    // where Go would keep a raw byte.
    let c = char::from_u32(code).ok_or("invalid syntax")?;
    Ok((c, tail))
}

/// Parses a number or character constant the way Go's template parser does.
pub fn parse_number(text: &str, is_char: bool) -> Result<Number, String> {
    let mut n = number_fields(text, is_char)?;
    // Go's `idealConstant` reads a constant written with a point or an exponent as a
    // float; hexadecimal integers (`0xE`) and runes have those letters without being one.
    let is_hex_int = text.len() > 2
        && text.starts_with('0')
        && matches!(text.as_bytes()[1], b'x' | b'X')
        && !text.contains(['p', 'P']);
    n.float_form =
        n.is_float && !is_hex_int && !is_char && text.contains(['.', 'e', 'E', 'p', 'P']);
    Ok(n)
}

fn number_fields(text: &str, is_char: bool) -> Result<Number, String> {
    let mut n = Number {
        text: text.to_string(),
        ..Number::default()
    };
    if is_char {
        let inner = &text[1..];
        let (c, tail) = unquote_char(inner, '\'').map_err(str::to_string)?;
        if tail != "'" {
            return Err(format!("malformed character constant: {text}"));
        }
        n.is_int = true;
        n.is_uint = true;
        n.is_float = true;
        n.int = i64::from(u32::from(c));
        n.uint = u64::from(u32::from(c));
        n.float = f64::from(u32::from(c));
        return Ok(n);
    }
    if let Some(imag) = text.strip_suffix('i')
        && parse_float(imag).is_some()
    {
        n.is_complex = true;
        return Ok(n);
    }
    let unsigned = parse_uint(text);
    if let Some(u) = unsigned {
        n.is_uint = true;
        n.uint = u;
    }
    if let Some(i) = parse_int(text) {
        n.is_int = true;
        n.int = i;
        if i == 0 {
            n.is_uint = true;
            n.uint = unsigned.unwrap_or(0);
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float = n.int as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float = n.uint as f64;
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {}", crate::gofmt::quote(text)));
        }
        n.is_float = true;
        n.float = f;
        if f == (f as i64) as f64 {
            n.is_int = true;
            n.int = f as i64;
        }
        if f == (f as u64) as f64 && f >= 0.0 {
            n.is_uint = true;
            n.uint = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!(
            "illegal number syntax: {}",
            crate::gofmt::quote(text)
        ));
    }
    Ok(n)
}

/// Splits a base prefix off an unsigned literal: (digits, radix, had_prefix).
fn split_base(text: &str) -> (&str, u32, bool) {
    let lower = |p: &str| text.len() > 2 && text[..2].eq_ignore_ascii_case(p);
    if lower("0x") {
        (&text[2..], 16, true)
    } else if lower("0b") {
        (&text[2..], 2, true)
    } else if lower("0o") {
        (&text[2..], 8, true)
    } else if text.len() > 1 && text.starts_with('0') {
        (&text[1..], 8, true)
    } else {
        (text, 10, false)
    }
}

/// Go's rule for `_` in literals: only between digits, or after a base prefix.
fn underscores_ok(text: &str, had_prefix: bool) -> bool {
    if !text.contains('_') {
        return true;
    }
    let bytes = text.as_bytes();
    let mut previous_is_digit = had_prefix;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'_' {
            if !previous_is_digit || i + 1 == bytes.len() || bytes[i + 1] == b'_' {
                return false;
            }
            previous_is_digit = false;
        } else {
            previous_is_digit = true;
        }
    }
    true
}

/// `strconv.ParseUint(text, 0, 64)`.
pub fn parse_uint(text: &str) -> Option<u64> {
    let (digits, radix, had_prefix) = split_base(text);
    if digits.is_empty() || !underscores_ok(digits, had_prefix) {
        return None;
    }
    let cleaned: String = digits.chars().filter(|c| *c != '_').collect();
    if cleaned.is_empty() || cleaned.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(&cleaned, radix).ok()
}

/// `strconv.ParseInt(text, 0, 64)`.
pub fn parse_int(text: &str) -> Option<i64> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = parse_uint(unsigned)?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseFloat(text, 64)` for Go literal syntax (decimal and hex floats).
pub fn parse_float(text: &str) -> Option<f64> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if body.len() > 2 && body[..2].eq_ignore_ascii_case("0x") {
        parse_hex_float(&body[2..])?
    } else {
        if !underscores_ok(body, false) {
            return None;
        }
        let cleaned: String = body.chars().filter(|c| *c != '_').collect();
        if cleaned.is_empty()
            || !cleaned
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        {
            return None;
        }
        cleaned.parse::<f64>().ok()?
    };
    Some(if negative { -value } else { value })
}

fn parse_hex_float(body: &str) -> Option<f64> {
    let cleaned: String = body.chars().filter(|c| *c != '_').collect();
    let (mantissa, exponent) = match cleaned.find(['p', 'P']) {
        Some(at) => (&cleaned[..at], cleaned[at + 1..].parse::<i32>().ok()?),
        None => (cleaned.as_str(), 0),
    };
    if !cleaned.contains(['p', 'P']) && mantissa.contains('.') {
        return None;
    }
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for d in int_part.chars() {
        value = value * 16.0 + f64::from(d.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for d in frac_part.chars() {
        value += f64::from(d.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_go_escapes() {
        assert_eq!(
            unquote(r#""a\tb\x41\u00e9\101""#),
            Ok("a\tbAéA".to_string())
        );
        assert_eq!(unquote("`raw\\n`"), Ok("raw\\n".to_string()));
        assert!(unquote(r#""bad\q""#).is_err());
    }

    #[test]
    fn numbers_follow_go_rules() {
        let n = parse_number("0x1F", false).unwrap_or_default();
        assert!(n.is_int && n.int == 31);
        let n = parse_number("1e3", false).unwrap_or_default();
        assert!(n.is_float && n.is_int && n.int == 1000);
        let n = parse_number("'a'", true).unwrap_or_default();
        assert_eq!(n.int, 97);
        assert!(parse_number("1_000", false).is_ok_and(|n| n.int == 1000));
        assert!(parse_number("0x1p-2", false).is_ok_and(|n| n.float == 0.25));
        assert!(parse_number("99999999999999999999", false).is_err());
        assert!(parse_number("1__0", false).is_err());
    }

    #[test]
    fn constants_written_as_floats_are_floats() {
        let float_form =
            |text: &str| parse_number(text, text.starts_with('\'')).is_ok_and(|n| n.float_form);
        for text in ["1e3", "1.0", ".5", "0x1p-2", "1E2"] {
            assert!(float_form(text), "{text}");
        }
        // Hexadecimal digits `e` and `E`, and runes, do not make a float.
        for text in ["443", "0x1E", "0XE", "'e'", "'.'"] {
            assert!(!float_form(text), "{text}");
        }
    }
}
