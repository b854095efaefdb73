//! Cron schedules read as kube-apiserver reads a CronJob's (robfig/cron v3's standard parser:
//! five fields or an `@` descriptor, an optional `TZ=` prefix), refused in its words.

/// A field's bounds and the names it accepts.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Why `spec` is not a schedule, if it is not one.
pub fn parse(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (zone, rest) = spec.split_once(' ').unwrap_or((spec, ""));
        let zone = zone.split_once('=').map_or("", |(_, zone)| zone);
        if let Err(e) = load_location(zone) {
            return Err(format!("provided bad location {zone}: {e}"));
        }
        spec = rest.trim();
    }
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds = [&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK];
    for (field, bounds) in fields.iter().zip(bounds) {
        for expression in field.split(',').filter(|e| !e.is_empty()) {
            range(expression, bounds)?;
        }
    }
    Ok(())
}

/// `@yearly` and its kin, or `@every <duration>`.
fn descriptor(spec: &str) -> Result<(), String> {
    const NAMED: [&str; 7] = [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ];
    if NAMED.contains(&spec) {
        return Ok(());
    }
    match spec.strip_prefix("@every ") {
        Some(duration) => {
            go_duration(duration).map_err(|e| format!("failed to parse duration {spec}: {e}"))
        }
        None => Err(format!("unrecognized descriptor: {spec}")),
    }
}

/// One comma-separated term of a field: `*`, `?`, `N`, `N-M`, each optionally `/step`.
fn range(expression: &str, bounds: &Bounds) -> Result<(), String> {
    let parts: Vec<&str> = expression.split('/').collect();
    let low_high: Vec<&str> = parts[0].split('-').collect();
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = number_or_name(low_high[0], bounds)?;
        match low_high.len() {
            1 => (start, start),
            2 => (start, number_or_name(low_high[1], bounds)?),
            _ => return Err(format!("too many hyphens: {expression}")),
        }
    };
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = number(parts[1])?;
            // `N/step` runs from N to the field's end.
            if low_high.len() == 1 {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expression}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expression}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expression}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expression}"
        ));
    }
    if step == 0 {
        return Err(format!(
            "step of range should be a positive number: {expression}"
        ));
    }
    Ok(())
}

fn number_or_name(text: &str, bounds: &Bounds) -> Result<u64, String> {
    let lower = text.to_ascii_lowercase();
    match bounds.names.iter().position(|name| *name == lower) {
        // Months count from 1, days of the week from 0.
        Some(i) => Ok(i as u64 + bounds.min),
        None => number(text),
    }
}

/// A non-negative number as Go's `strconv.Atoi` reads it.
fn number(text: &str) -> Result<u64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing {text:?}: invalid syntax"
        ));
    }
    let Ok(value) = digits.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing {text:?}: value out of range"
        ));
    };
    if negative && value != 0 {
        return Err(format!("negative number (-{value}) not allowed: {text}"));
    }
    Ok(value.unsigned_abs())
}

/// Checks `text` as Go's `time.ParseDuration` does (`1h30m`, `.5s`, `-2m`).
pub fn go_duration(text: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let mut rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    // Nanoseconds so far, which Go keeps within an int64.
    let mut total = 0f64;
    while !rest.is_empty() {
        let integer = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let mut number = &rest[integer..];
        let mut fraction = 0;
        if let Some(after) = number.strip_prefix('.') {
            fraction = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            number = &after[fraction..];
        }
        if integer == 0 && fraction == 0 {
            return Err(invalid());
        }
        let unit_len = number
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(number.len());
        let unit = &number[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        let scale = match unit {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(format!("time: unknown unit {unit:?} in duration {text:?}")),
        };
        let digits = &rest[..rest.len() - number.len()];
        total += digits.parse::<f64>().unwrap_or(f64::INFINITY) * scale;
        if total > i64::MAX as f64 {
            return Err(invalid());
        }
        rest = &number[unit_len..];
    }
    Ok(())
}

/// Whether Go's `time.LoadLocation` finds zone `name`: `UTC`, `Local`, or a name of the
/// IANA database (kube-apiserver carries its own copy; this reads the system's, and takes
/// any well-formed name where the system has none).
pub fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if name.contains("..") || name.starts_with(['/', '\\']) {
        return Err("time: invalid location name".into());
    }
    let database = std::path::Path::new("/usr/share/zoneinfo");
    if !database.is_dir() || database.join(name).is_file() {
        Ok(())
    } else {
        Err(format!("unknown time zone {name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_robfig_cron_reads_are_read() {
        for good in [
            "*/5 * * * *",
            "0 3 * * 1-5",
            "15,45 */2 1 JAN,jul sun",
            "* * * * ?",
            "*,,1 * * * *",
            "@weekly",
            "@every 1h30m",
            "@every .5s",
            "TZ=UTC 0 * * * *",
        ] {
            assert_eq!(parse(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn schedules_robfig_cron_refuses_are_refused_in_its_words() {
        for (bad, why) in [
            ("", "empty spec string"),
            ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
            ("70 * * * *", "end of range (70) above maximum (59): 70"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                "-1 * * * *",
                "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("1/2/3 * * * *", "too many slashes: 1/2/3"),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            (
                "5-2 * * * *",
                "beginning of range (5) beyond end of range (2): 5-2",
            ),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("@foo", "unrecognized descriptor: @foo"),
            (
                "@every 5",
                "failed to parse duration @every 5: time: missing unit in duration \"5\"",
            ),
            (
                "@every 5q",
                "failed to parse duration @every 5q: time: unknown unit \"q\" in duration \"5q\"",
            ),
            (
                "@every 3000000h",
                "failed to parse duration @every 3000000h: time: invalid duration \"3000000h\"",
            ),
            (
                "TZ=../x * * * * *",
                "provided bad location ../x: time: invalid location name",
            ),
        ] {
            assert_eq!(parse(bad), Err(why.to_owned()), "{bad}");
        }
    }
}
