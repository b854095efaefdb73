//! Date functions. A Go `time.Time` is carried as the string `time.Time.String()` prints
//! (`2006-01-02 15:04:05.999999999 -0700 MST`), so it prints as Go prints it and date functions
//! read it back; integers are Unix seconds. Time zones other than UTC/Local are not known (no
//! zone database): they fall back to UTC, as Go does for an unknown zone. Local is UTC.

use chrono::{DateTime, FixedOffset, TimeDelta, Utc};

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{ok_str, str_arg, to_int64};
use crate::sprig::gotime::{self, STRING_LAYOUT, duration_string, parse_duration};
use crate::value::Value;

use Param::{Any, String as Str};

type Time = DateTime<FixedOffset>;

/// Registers the date functions.
pub fn register(map: &mut FuncMap) {
    map.insert("now", Function::new(&[], |_| Ok(time_value(&now()))));
    map.insert(
        "date",
        Function::new(&[Str, Any], |a| {
            ok_str(gotime::format(&to_time(&a[1]), str_arg(&a[0])))
        }),
    );
    for name in ["dateInZone", "date_in_zone"] {
        map.insert(
            name,
            Function::new(&[Str, Any, Str], |a| {
                ok_str(gotime::format(&to_time(&a[1]), str_arg(&a[0])))
            }),
        );
    }
    map.insert(
        "htmlDate",
        Function::new(&[Any], |a| {
            ok_str(gotime::format(&to_time(&a[0]), "2006-01-02"))
        }),
    );
    map.insert(
        "htmlDateInZone",
        Function::new(&[Any, Str], |a| {
            ok_str(gotime::format(&to_time(&a[0]), "2006-01-02"))
        }),
    );
    map.insert(
        "toDate",
        Function::new(&[Str, Str], |a| {
            let t = gotime::parse(str_arg(&a[0]), str_arg(&a[1])).unwrap_or_else(|_| zero_time());
            Ok(time_value(&t))
        }),
    );
    map.insert(
        "mustToDate",
        Function::new(&[Str, Str], |a| {
            gotime::parse(str_arg(&a[0]), str_arg(&a[1]))
                .map(|t| time_value(&t))
                .map_err(FuncError)
        }),
    );
    for (name, must) in [
        ("dateModify", false),
        ("date_modify", false),
        ("mustDateModify", true),
        ("must_date_modify", true),
    ] {
        map.insert(
            name,
            Function::new(&[Str, Any], move |a| date_modify(&a[0], &a[1], must)),
        );
    }
    map.insert(
        "ago",
        Function::new(&[Any], |a| {
            let elapsed = now().signed_duration_since(to_time(&a[0]));
            let nanos = elapsed.num_nanoseconds().unwrap_or(i64::MAX);
            let rounded = (nanos as f64 / 1e9).round() as i64 * 1_000_000_000;
            ok_str(duration_string(rounded))
        }),
    );
    map.insert(
        "duration",
        Function::new(&[Any], |a| {
            let seconds = match &a[0] {
                Value::String(s) => s.parse::<i64>().unwrap_or(0),
                other => to_int64(other),
            };
            ok_str(duration_string(seconds.wrapping_mul(1_000_000_000)))
        }),
    );
    map.insert(
        "durationRound",
        Function::new(&[Any], |a| ok_str(duration_round(&a[0]))),
    );
    map.insert(
        "unixEpoch",
        Function::new(&[Any], |a| ok_str(to_time(&a[0]).timestamp().to_string())),
    );
}

fn now() -> Time {
    Utc::now().fixed_offset()
}

fn zero_time() -> Time {
    gotime::parse("2006-01-02", "0001-01-01").unwrap_or_else(|_| now())
}

/// A time as a template value (Go's `time.Time.String()`).
pub fn time_value(t: &Time) -> Value {
    Value::string(gotime::format(t, STRING_LAYOUT))
}

/// A date argument: a time string, Unix seconds, or (as sprig does for anything else) now.
pub fn to_time(value: &Value) -> Time {
    match value {
        Value::String(s) => parse_time_string(s).unwrap_or_else(now),
        Value::Int(_) | Value::Int64(_) => DateTime::from_timestamp(to_int64(value), 0)
            .map(|t| t.fixed_offset())
            .unwrap_or_else(now),
        _ => now(),
    }
}

fn parse_time_string(s: &str) -> Option<Time> {
    // Drop a monotonic clock reading (` m=+0.001`) and the zone name, which only repeats the
    // offset here.
    let s = s.split(" m=").next().unwrap_or(s);
    let (rest, _zone) = s.rsplit_once(' ')?;
    gotime::parse("2006-01-02 15:04:05.999999999 -0700", rest).ok()
}

fn date_modify(modifier: &Value, date: &Value, must: bool) -> FuncResult {
    let t = to_time(date);
    match parse_duration(str_arg(modifier)) {
        Ok(nanos) => Ok(time_value(
            &t.checked_add_signed(TimeDelta::nanoseconds(nanos))
                .unwrap_or(t),
        )),
        Err(error) if must => Err(FuncError(error)),
        Err(_) => Ok(time_value(&t)),
    }
}

fn duration_round(value: &Value) -> String {
    let nanos: i64 = match value {
        Value::String(s) => parse_duration(s).unwrap_or(0),
        Value::Int(i) | Value::Int64(i) => *i,
        other => now()
            .signed_duration_since(to_time(other))
            .num_nanoseconds()
            .unwrap_or(0),
    };
    let u = nanos.unsigned_abs();
    const SECOND: u64 = 1_000_000_000;
    let units: [(u64, &str); 6] = [
        (SECOND * 3600 * 24 * 365, "y"),
        (SECOND * 3600 * 24 * 30, "mo"),
        (SECOND * 3600 * 24, "d"),
        (SECOND * 3600, "h"),
        (SECOND * 60, "m"),
        (SECOND, "s"),
    ];
    for (size, suffix) in units {
        if u > size {
            return format!("{}{suffix}", u / size);
        }
    }
    "0s".into()
}
