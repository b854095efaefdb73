//! Whether a string written plain would read back as something else: go-yaml's `resolve`
//! (null, bools, ints in every base Go's `ParseInt` takes, floats, timestamps, the merge key)
//! and its encoder's extra caution (`isBase60Float`, yaml.v3's `isOldBool`). Such strings are
//! written double-quoted.

/// Words go-yaml's resolve table (and yaml.v3's `isOldBool`) gives another type.
const WORDS: &[&str] = &[
    "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "y", "Y",
    "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", ".inf",
    ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",
    "<<",
];

/// Whether `s` must be quoted to stay a string.
pub(super) fn needs_quotes(s: &str) -> bool {
    if WORDS.contains(&s) {
        return true;
    }
    match s.bytes().next() {
        // Not a word: maybe a float such as `.5`.
        Some(b'.') => is_yaml_float(s),
        Some(b'+' | b'-' | b'0'..=b'9') => {
            let plain = s.replace('_', "");
            is_timestamp(s) || is_go_int(&plain) || is_yaml_float(&plain) || is_base60(s)
        }
        _ => false,
    }
}

fn digits(s: &str, radix: u32) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_digit(radix))
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint` succeeds on `s` (without `_`s): a sign
/// (ParseInt only), a base prefix and digits that fit 64 bits.
fn is_go_int(s: &str) -> bool {
    crate::sprig::conv::parse_go_integer(s)
        .is_some_and(|(negative, magnitude)| !negative || magnitude <= 1 << 63)
}

/// go-yaml's float pattern `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, and a
/// finite value (Go's `ParseFloat` fails on overflow).
fn is_yaml_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction, 10),
        Some((whole, fraction)) => {
            digits(whole, 10) && fraction.chars().all(|c| c.is_ascii_digit())
        }
        None => digits(mantissa, 10),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e), 10));
    mantissa_ok && exponent_ok && is_go_float(s)
}

/// Rust reads the number as a finite float.
fn is_go_float(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// `isBase60Float`: `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?`.
fn is_base60(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (body, fraction) = match body.split_once('.') {
        Some((body, fraction)) => (body, Some(fraction)),
        None => (body, None),
    };
    if fraction.is_some_and(|f| !f.chars().all(|c| c.is_ascii_digit() || c == '_')) {
        return false;
    }
    let mut parts = body.split(':');
    let head_ok = parts.next().is_some_and(|head| {
        head.starts_with(|c: char| c.is_ascii_digit())
            && head.chars().all(|c| c.is_ascii_digit() || c == '_')
    });
    let mut sixties = 0;
    let sixties_ok = parts.all(|part| {
        sixties += 1;
        let bytes = part.as_bytes();
        match bytes {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        }
    });
    head_ok && sixties > 0 && sixties_ok
}

/// go-yaml's `parseTimestamp`: `YYYY-M-D`, optionally followed by `[Tt]H:M:S[.frac]` and a
/// `Z` or `±hh:mm` zone, or by ` H:M:S[.frac]`; dates and times must exist.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut at = 5;
    let Some(month) = number(b, &mut at).filter(|m| (1..=12).contains(m)) else {
        return false;
    };
    if b.get(at) != Some(&b'-') {
        return false;
    }
    at += 1;
    let Some(day) = number(b, &mut at) else {
        return false;
    };
    if day < 1 || day > days_in_month(year, month) {
        return false;
    }
    let zone_required = match b.get(at) {
        None => return true,
        Some(b'T' | b't') => true,
        Some(b' ') => false,
        Some(_) => return false,
    };
    at += 1;
    for (i, max) in [23, 59, 59].into_iter().enumerate() {
        if i > 0 {
            if b.get(at) != Some(&b':') {
                return false;
            }
            at += 1;
        }
        if number(b, &mut at).is_none_or(|n| n > max) {
            return false;
        }
    }
    if matches!(b.get(at), Some(b'.' | b',')) && b.get(at + 1).is_some_and(u8::is_ascii_digit) {
        at += 1;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
    }
    let rest = &b[at..];
    if !zone_required {
        return rest.is_empty();
    }
    match rest {
        [b'Z'] => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
        }
        _ => false,
    }
}

/// One or two digits at `at` (Go's `getnum` for non-padded fields), moving past them.
fn number(b: &[u8], at: &mut usize) -> Option<u32> {
    let first = b.get(*at).filter(|d| d.is_ascii_digit())?;
    let mut n = u32::from(first - b'0');
    *at += 1;
    if let Some(second) = b.get(*at).filter(|d| d.is_ascii_digit()) {
        n = n * 10 + u32::from(second - b'0');
        *at += 1;
    }
    Some(n)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_that_read_back_as_other_types() {
        for s in [
            "",
            "~",
            "null",
            "yes",
            "Off",
            "<<",
            "443",
            "-1",
            "+5",
            "0x1F",
            "0X1f",
            "0o17",
            "0b101",
            "0777",
            "0999",
            "1_000",
            "1.5",
            "1.",
            ".5",
            "1e3",
            "-2.5E-3",
            "1:20",
            "190:20:30.15",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10",
            "2002-12-14T21:59:43Z",
            "99999999999999999999",
            ".inf",
        ] {
            assert!(needs_quotes(s), "{s:?} should be quoted");
        }
        for s in [
            "plain",
            "1.2.3",
            "v1",
            "_1",
            "1e400",
            "0x",
            "0xFFFFFFFFFFFFFFFFF",
            "1:99",
            "2001-13-01",
            "2001-02-30",
            "2001-12-14T21:59:43",
            "2001-12-14 25:00:00",
            "12-14",
            "Infinity",
            "nan",
            "1_000x",
            "-",
            ".",
        ] {
            assert!(!needs_quotes(s), "{s:?} should stay plain");
        }
    }
}
