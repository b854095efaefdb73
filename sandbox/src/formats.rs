//! The string `format`s kube-apiserver checks in custom resources (those of go-openapi's
//! registry whose rules are plain): `date-time`, `date`, `uuid` (and `uuid3`/`uuid4`/`uuid5`),
//! `ipv4`, `ipv6`, `cidr`, `hostname`, `email` and `byte`. A format it does not know is not
//! checked, as there.

use base64::Engine as _;

/// Whether `text` is of `format` (true for formats not checked).
pub fn valid(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => date_time(text),
        "date" => date(text),
        "uuid" => uuid(text, None),
        "uuid3" => uuid(text, Some('3')),
        "uuid4" => uuid(text, Some('4')),
        "uuid5" => uuid(text, Some('5')),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => cidr(text).is_some(),
        "hostname" => hostname(text),
        "email" => email(text),
        "byte" => byte(text),
        _ => true,
    }
}

/// Standard base64 with padding, decoded a stretch at a time into one buffer: a report
/// carries megabytes of it, which need checking, not keeping.
fn byte(text: &str) -> bool {
    const STRETCH: usize = 4096;
    let mut decoded = [0u8; STRETCH / 4 * 3];
    let bytes = text.as_bytes();
    let mut stretches = bytes.chunks(STRETCH).peekable();
    while let Some(stretch) = stretches.next() {
        // Only the last stretch may end in padding.
        let last = stretches.peek().is_none();
        if !last && stretch.contains(&b'=') {
            return false;
        }
        if base64::engine::general_purpose::STANDARD
            .decode_slice(stretch, &mut decoded)
            .is_err()
        {
            return false;
        }
    }
    true
}

/// `digits` ASCII digits read as a number.
fn number(text: &str, digits: usize) -> Option<u32> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD`, a day that exists.
fn date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(year), Some(month), Some(day)) = (number(y, 4), number(m, 2), number(d, 2)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339: a date, `T` (either case), `HH:MM:SS`, an optional fraction, and `Z` or an
/// offset `±HH:MM`.
fn date_time(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let Some((day, time)) = lower.split_once('t') else {
        return false;
    };
    if !date(day) {
        return false;
    }
    let (clock, zone) = match time.find(['z', '+', '-']) {
        Some(at) => time.split_at(at),
        None => return false,
    };
    let clock = match clock.split_once('.') {
        Some((whole, fraction))
            if !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit()) =>
        {
            whole
        }
        Some(_) => return false,
        None => clock,
    };
    let hms: Vec<&str> = clock.split(':').collect();
    let in_range = |part: &str, below: u32| number(part, 2).is_some_and(|n| n < below);
    let clock_ok =
        hms.len() == 3 && in_range(hms[0], 24) && in_range(hms[1], 60) && in_range(hms[2], 61);
    let zone_ok = zone == "z"
        || zone
            .get(1..)
            .and_then(|hm| hm.split_once(':'))
            .is_some_and(|(h, m)| in_range(h, 24) && in_range(m, 60));
    clock_ok && zone_ok
}

/// `8-4-4-4-12` hexadecimal digits; with a `version`, that digit leads the third group.
fn uuid(text: &str, version: Option<char>) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    let shape = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    shape && version.is_none_or(|v| groups[2].starts_with(v))
}

/// A CIDR read as its address and prefix length (within its family's size); `None` when it
/// is not one.
pub fn cidr(text: &str) -> Option<(std::net::IpAddr, u8)> {
    let (address, bits) = text.split_once('/')?;
    let address: std::net::IpAddr = address.parse().ok()?;
    let bits: u8 = bits.parse().ok()?;
    let most = if address.is_ipv4() { 32 } else { 128 };
    (bits <= most).then_some((address, bits))
}

/// DNS labels of letters, digits and inner hyphens, each at most 63 long, 255 in all.
fn hostname(text: &str) -> bool {
    let text = text.strip_suffix('.').unwrap_or(text);
    !text.is_empty()
        && text.len() <= 255
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// `local@domain`, with a hostname for domain.
fn email(text: &str) -> bool {
    match text.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !local.contains(char::is_whitespace) && hostname(domain)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn each_format_takes_its_own_and_refuses_the_rest() {
        let cases = [
            ("date-time", "2026-11-25T03:00:00Z", true),
            ("date-time", "2026-11-25t03:00:00.123+01:00", true),
            ("date-time", "yesterday", false),
            ("date-time", "2026-02-30T03:00:00Z", false),
            ("date-time", "2026-11-25T24:00:00Z", false),
            ("date-time", "2026-11-25T03:00:00", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", true),
            ("uuid", "abc", false),
            ("uuid4", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "300.1.1.1", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("hostname", "a-b.example.com", true),
            ("hostname", "-a.example.com", false),
            ("email", "me@example.com", true),
            ("email", "me", false),
            ("byte", "aGk=", true),
            ("byte", "not base64!", false),
            ("no-such-format", "anything", true),
        ];
        for (format, text, expected) in cases {
            assert_eq!(valid(format, text), expected, "{format} {text:?}");
        }
    }

    #[test]
    fn long_base64_is_judged_as_one_decode_judges_it() {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let long = engine.encode(vec![7u8; 10_000]);
        let mut padded_inside = engine.encode(vec![1u8; 3_071]);
        padded_inside.push_str(&engine.encode(vec![2u8; 5_000]));
        let mut cases = vec![
            long.clone(),
            padded_inside,
            format!("{long}A"),
            long[1..].to_owned(),
        ];
        // A bad character in each stretch, and at the edges between them.
        for at in [0, 4095, 4096, 8191, 8192, long.len() - 1] {
            let mut broken = long.clone().into_bytes();
            broken[at] = b'!';
            cases.push(String::from_utf8(broken).unwrap_or_default());
        }
        for text in cases {
            assert_eq!(
                super::byte(&text),
                engine.decode(&text).is_ok(),
                "{} chars",
                text.len()
            );
        }
    }
}
