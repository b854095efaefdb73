//! Go's time layouts (`2006-01-02 15:04:05`) for formatting and parsing, and Go's
//! `time.Duration` printing and parsing.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, TimeZone, Timelike};

/// A layout element.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(String),
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekday,
    Weekday,
    Day,
    UnderDay,
    ZeroDay,
    YearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Lowerpm,
    TZ,
    /// `Z07:00`-style offsets: (uses `Z` for UTC, with colon, with seconds, hours only).
    Offset(bool, bool, bool, bool),
    /// Fractional seconds: digits, trailing zeros trimmed (`9`) or kept (`0`).
    Fraction(usize, bool),
}

const PREFIXES: [(&str, Token); 31] = [
    ("January", Token::LongMonth),
    ("Jan", Token::Month),
    ("Monday", Token::LongWeekday),
    ("Mon", Token::Weekday),
    ("MST", Token::TZ),
    ("01", Token::ZeroMonth),
    ("02", Token::ZeroDay),
    ("03", Token::ZeroHour12),
    ("04", Token::ZeroMinute),
    ("05", Token::ZeroSecond),
    ("06", Token::Year),
    ("002", Token::ZeroYearDay),
    ("2006", Token::LongYear),
    ("__2", Token::YearDay),
    ("_2", Token::UnderDay),
    ("15", Token::Hour),
    ("1", Token::NumMonth),
    ("2", Token::Day),
    ("3", Token::Hour12),
    ("4", Token::Minute),
    ("5", Token::Second),
    ("PM", Token::PM),
    ("pm", Token::Lowerpm),
    ("Z070000", Token::Offset(true, false, true, false)),
    ("Z07:00:00", Token::Offset(true, true, true, false)),
    ("Z07:00", Token::Offset(true, true, false, false)),
    ("Z0700", Token::Offset(true, false, false, false)),
    ("Z07", Token::Offset(true, false, false, true)),
    ("-07:00:00", Token::Offset(false, true, true, false)),
    ("-070000", Token::Offset(false, false, true, false)),
    ("-07:00", Token::Offset(false, true, false, false)),
];

const MORE_PREFIXES: [(&str, Token); 2] = [
    ("-0700", Token::Offset(false, false, false, false)),
    ("-07", Token::Offset(false, false, false, true)),
];

fn tokenize(layout: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut literal = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        // Fractional seconds: `.000`/`,999` after a seconds field or anywhere Go accepts them.
        if let Some(sep) = rest.chars().next().filter(|c| *c == '.' || *c == ',') {
            let tail = &rest[1..];
            for digit in ['0', '9'] {
                let n = tail.chars().take_while(|c| *c == digit).count();
                if n > 0 && !tail[n..].starts_with(|c: char| c.is_ascii_digit()) {
                    if !literal.is_empty() {
                        tokens.push(Token::Literal(std::mem::take(&mut literal)));
                    }
                    let _ = sep;
                    tokens.push(Token::Fraction(n, digit == '0'));
                    rest = &tail[n..];
                    continue 'outer;
                }
            }
        }
        for (prefix, token) in PREFIXES.iter().chain(MORE_PREFIXES.iter()) {
            if rest.starts_with(prefix) {
                if *prefix == "Jan" && rest.starts_with("January") {
                    continue;
                }
                if !literal.is_empty() {
                    tokens.push(Token::Literal(std::mem::take(&mut literal)));
                }
                tokens.push(token.clone());
                rest = &rest[prefix.len()..];
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        literal.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !literal.is_empty() {
        tokens.push(Token::Literal(literal));
    }
    tokens
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The zone abbreviation Go prints for an offset (only UTC has a name here).
pub fn zone_name(offset: i32) -> String {
    if offset == 0 {
        return "UTC".into();
    }
    let sign = if offset < 0 { '-' } else { '+' };
    let abs = offset.unsigned_abs();
    if abs.is_multiple_of(3600) {
        format!("{sign}{:02}", abs / 3600)
    } else {
        format!("{sign}{:02}{:02}", abs / 3600, abs % 3600 / 60)
    }
}

/// Formats `t` with a Go layout.
pub fn format(t: &DateTime<FixedOffset>, layout: &str) -> String {
    let mut out = String::new();
    let hour12 = |h: u32| if h.is_multiple_of(12) { 12 } else { h % 12 };
    for token in tokenize(layout) {
        match token {
            Token::Literal(s) => out.push_str(&s),
            Token::LongMonth => out.push_str(MONTHS[t.month0() as usize]),
            Token::Month => out.push_str(&MONTHS[t.month0() as usize][..3]),
            Token::NumMonth => out.push_str(&t.month().to_string()),
            Token::ZeroMonth => out.push_str(&format!("{:02}", t.month())),
            Token::LongWeekday => {
                out.push_str(WEEKDAYS[t.weekday().num_days_from_monday() as usize])
            }
            Token::Weekday => {
                out.push_str(&WEEKDAYS[t.weekday().num_days_from_monday() as usize][..3])
            }
            Token::Day => out.push_str(&t.day().to_string()),
            Token::UnderDay => out.push_str(&format!("{:>2}", t.day())),
            Token::ZeroDay => out.push_str(&format!("{:02}", t.day())),
            Token::YearDay => out.push_str(&format!("{:>3}", t.ordinal())),
            Token::ZeroYearDay => out.push_str(&format!("{:03}", t.ordinal())),
            Token::Hour => out.push_str(&format!("{:02}", t.hour())),
            Token::Hour12 => out.push_str(&hour12(t.hour()).to_string()),
            Token::ZeroHour12 => out.push_str(&format!("{:02}", hour12(t.hour()))),
            Token::Minute => out.push_str(&t.minute().to_string()),
            Token::ZeroMinute => out.push_str(&format!("{:02}", t.minute())),
            Token::Second => out.push_str(&t.second().to_string()),
            Token::ZeroSecond => out.push_str(&format!("{:02}", t.second())),
            Token::LongYear => out.push_str(&format!("{:04}", t.year())),
            Token::Year => out.push_str(&format!("{:02}", t.year().rem_euclid(100))),
            Token::PM => out.push_str(if t.hour() >= 12 { "PM" } else { "AM" }),
            Token::Lowerpm => out.push_str(if t.hour() >= 12 { "pm" } else { "am" }),
            Token::TZ => out.push_str(&zone_name(t.offset().local_minus_utc())),
            Token::Offset(z, colon, seconds, hours_only) => {
                let offset = t.offset().local_minus_utc();
                if z && offset == 0 {
                    out.push('Z');
                    continue;
                }
                let abs = offset.unsigned_abs();
                out.push(if offset < 0 { '-' } else { '+' });
                out.push_str(&format!("{:02}", abs / 3600));
                if !hours_only {
                    if colon {
                        out.push(':');
                    }
                    out.push_str(&format!("{:02}", abs % 3600 / 60));
                }
                if seconds {
                    if colon {
                        out.push(':');
                    }
                    out.push_str(&format!("{:02}", abs % 60));
                }
            }
            Token::Fraction(digits, keep_zeros) => {
                let nanos = format!("{:09}", t.nanosecond() % 1_000_000_000);
                let mut frac = nanos[..digits.min(9)].to_string();
                if !keep_zeros {
                    frac = frac.trim_end_matches('0').to_string();
                }
                if !frac.is_empty() || keep_zeros {
                    out.push('.');
                    out.push_str(&frac);
                }
            }
        }
    }
    out
}

/// Go's `time.Time.String()` layout.
pub const STRING_LAYOUT: &str = "2006-01-02 15:04:05.999999999 -0700 MST";

fn take_number(s: &str, min: usize, max: usize) -> Option<(i64, &str)> {
    let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n < min {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

fn take_name<'s>(s: &'s str, names: &[&str], short: bool) -> Option<(usize, &'s str)> {
    names.iter().enumerate().find_map(|(i, name)| {
        let name = if short { &name[..3] } else { name };
        let head = s.get(..name.len())?;
        head.eq_ignore_ascii_case(name)
            .then(|| (i, &s[name.len()..]))
    })
}

/// Parses `value` with a Go layout; times without a zone are UTC.
pub fn parse(layout: &str, value: &str) -> Result<DateTime<FixedOffset>, String> {
    let fail = || format!("parsing time {value:?} as {layout:?}: cannot parse");
    let (mut year, mut month, mut day, mut hour, mut minute, mut second) = (1i64, 1, 1, 0, 0, 0);
    let (mut nanos, mut offset, mut pm) = (0i64, 0i32, None);
    let mut s = value;
    for token in tokenize(layout) {
        let (number, rest) = match &token {
            Token::Literal(lit) => (0, s.strip_prefix(lit.as_str()).ok_or_else(fail)?),
            Token::LongMonth | Token::Month => {
                let (i, rest) = take_name(s, &MONTHS, token == Token::Month).ok_or_else(fail)?;
                month = i as i64 + 1;
                (0, rest)
            }
            Token::LongWeekday | Token::Weekday => {
                let (_, rest) =
                    take_name(s, &WEEKDAYS, token == Token::Weekday).ok_or_else(fail)?;
                (0, rest)
            }
            Token::NumMonth | Token::Day | Token::Hour12 | Token::Minute | Token::Second => {
                take_number(s, 1, 2).ok_or_else(fail)?
            }
            Token::UnderDay => take_number(s.trim_start_matches(' '), 1, 2).ok_or_else(fail)?,
            Token::YearDay | Token::ZeroYearDay => {
                take_number(s.trim_start_matches(' '), 1, 3).ok_or_else(fail)?
            }
            Token::LongYear => take_number(s, 4, 4).ok_or_else(fail)?,
            Token::Fraction(..) => {
                let digits = s.get(1..).unwrap_or("");
                let n = digits.bytes().take_while(u8::is_ascii_digit).count();
                if s.starts_with(['.', ',']) && n > 0 {
                    let frac = format!("{:0<9}", &digits[..n.min(9)]);
                    nanos = frac.parse().map_err(|_| fail())?;
                    (0, &digits[n..])
                } else {
                    (0, s)
                }
            }
            Token::PM | Token::Lowerpm => {
                let head = s.get(..2).ok_or_else(fail)?.to_ascii_uppercase();
                pm = Some(match head.as_str() {
                    "PM" => true,
                    "AM" => false,
                    _ => return Err(fail()),
                });
                (0, &s[2..])
            }
            Token::TZ => {
                let n = s.bytes().take_while(u8::is_ascii_uppercase).count();
                if n < 3 {
                    return Err(fail());
                }
                (0, &s[n..])
            }
            Token::Offset(z, colon, seconds, hours_only) => {
                if *z && s.starts_with('Z') {
                    (0, &s[1..])
                } else {
                    let sign = match s.as_bytes().first() {
                        Some(b'+') => 1,
                        Some(b'-') => -1,
                        _ => return Err(fail()),
                    };
                    let (h, mut rest) = take_number(&s[1..], 2, 2).ok_or_else(fail)?;
                    let mut total = h * 3600;
                    for (present, unit) in [(!hours_only, 60), (*seconds, 1)] {
                        if present {
                            if *colon {
                                rest = rest.strip_prefix(':').ok_or_else(fail)?;
                            }
                            let (v, r) = take_number(rest, 2, 2).ok_or_else(fail)?;
                            total += v * unit;
                            rest = r;
                        }
                    }
                    offset = i32::try_from(sign * total).map_err(|_| fail())?;
                    (0, rest)
                }
            }
            _ => take_number(s, 2, 2).ok_or_else(fail)?,
        };
        match token {
            Token::NumMonth | Token::ZeroMonth => month = number,
            Token::Day | Token::UnderDay | Token::ZeroDay => day = number,
            Token::Hour | Token::Hour12 | Token::ZeroHour12 => hour = number,
            Token::Minute | Token::ZeroMinute => minute = number,
            Token::Second | Token::ZeroSecond => second = number,
            Token::LongYear => year = number,
            Token::Year => {
                year = if number >= 69 {
                    1900 + number
                } else {
                    2000 + number
                }
            }
            _ => {}
        }
        s = rest;
    }
    if !s.is_empty() {
        return Err(format!("parsing time {value:?}: extra text: {s:?}"));
    }
    match pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let date = NaiveDate::from_ymd_opt(year as i32, month as u32, day as u32)
        .ok_or_else(|| format!("parsing time {value:?}: day out of range"))?;
    let naive = date
        .and_hms_nano_opt(hour as u32, minute as u32, second as u32, nanos as u32)
        .ok_or_else(|| format!("parsing time {value:?}: hour out of range"))?;
    let zone = FixedOffset::east_opt(offset).ok_or_else(fail)?;
    zone.from_local_datetime(&naive).single().ok_or_else(fail)
}

/// Go's `Duration.String()` of `nanos`.
pub fn duration_string(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let negative = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (unit, scale) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&fraction(u, scale));
        out.push_str(unit);
    } else {
        let hours = u / 3_600_000_000_000;
        let minutes = u / 60_000_000_000 % 60;
        let seconds = u % 60_000_000_000;
        if hours > 0 {
            out.push_str(&format!("{hours}h"));
        }
        if hours > 0 || minutes > 0 {
            out.push_str(&format!("{minutes}m"));
        }
        out.push_str(&fraction(seconds, 1_000_000_000));
        out.push('s');
    }
    if negative {
        out.insert(0, '-');
    }
    out
}

fn fraction(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let rest = value % scale;
    if rest == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let err = || format!("time: invalid duration {}", crate::gofmt::quote(text));
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(err());
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let n = s
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if n == 0 {
            return Err(err());
        }
        let number: f64 = s[..n].parse().map_err(|_| err())?;
        s = &s[n..];
        let u = s
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(s.len(), |(i, _)| i);
        let scale = match &s[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => {
                return Err(format!(
                    "time: missing unit in duration {}",
                    crate::gofmt::quote(text)
                ));
            }
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    crate::gofmt::quote(other),
                    crate::gofmt::quote(text)
                ));
            }
        };
        total += number * scale;
        s = &s[u..];
    }
    if total > i64::MAX as f64 {
        return Err(err());
    }
    let nanos = total.round() as i64;
    Ok(if negative { -nanos } else { nanos })
}
