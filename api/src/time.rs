//! Time, the one module for it: RFC 3339 timestamps parsed and written,
//! unix seconds, durations in seconds. Here in `api` because every crate
//! depends on it and admission checks timestamps too (a taint's
//! `timeAdded`, an add-on score's `validUntil`). Pure code takes `now` as
//! an argument; [`now_rfc3339`] is the one function here that reads the
//! clock, so that "now" is written the same way everywhere.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What an RFC 3339 timestamp looks like, for validation messages.
pub const RFC3339_DETAIL: &str = "must be an RFC 3339 timestamp, e.g. \"2024-05-01T10:00:00Z\"";

const NANOS_PER_SECOND: u32 = 1_000_000_000;

/// Unix seconds of an RFC 3339 timestamp (`2024-05-01T10:00:00Z`, optional
/// fraction, `Z` or `±hh:mm` offset); `None` if it is not one. The
/// fraction is dropped (the seconds are rounded down).
pub fn unix_seconds(text: &str) -> Option<i64> {
    parse_parts(text).map(|(secs, _)| secs)
}

/// The point in time of an RFC 3339 timestamp, as [`unix_seconds`] reads
/// it but with the fraction kept (to the nanosecond); `None` if it is not
/// one.
pub fn system_time(text: &str) -> Option<SystemTime> {
    let (secs, nanos) = parse_parts(text)?;
    let whole = Duration::from_secs(secs.unsigned_abs());
    let at = if secs >= 0 { UNIX_EPOCH.checked_add(whole)? } else { UNIX_EPOCH.checked_sub(whole)? };
    at.checked_add(Duration::from_nanos(u64::from(nanos)))
}

/// Unix seconds and the nanoseconds past them of an RFC 3339 timestamp.
fn parse_parts(text: &str) -> Option<(i64, u32)> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = text.get(19..)?;
    let mut nanos = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        // Nanoseconds: the first nine digits, padded; finer ones are dropped.
        let mut scale = NANOS_PER_SECOND;
        for digit in fraction.bytes().take(digits.min(9)) {
            scale /= 10;
            nanos += u32::from(digit - b'0') * scale;
        }
        rest = fraction.get(digits..)?;
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((secs, nanos))
}

/// Unix seconds and the nanoseconds past them of a point in time (times
/// before 1970 too, so no time makes the writers below fail).
fn unix_parts(at: SystemTime) -> (i64, u32) {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => (i64::try_from(d.as_secs()).unwrap_or(i64::MAX), d.subsec_nanos()),
        Err(before) => {
            let d = before.duration();
            let secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, NANOS_PER_SECOND - n),
            }
        }
    }
}

/// The RFC 3339 form of a point in time in whole seconds
/// (`2024-05-01T10:00:00Z`), the form Fleet writes status times in.
pub fn rfc3339_of(at: SystemTime) -> String {
    rfc3339(unix_parts(at).0)
}

/// The RFC 3339 form of a point in time with milliseconds
/// (`2024-05-01T10:00:00.250Z`), for records that time sub-second delays.
pub fn rfc3339_millis(at: SystemTime) -> String {
    with_fraction(at, 3)
}

/// The RFC 3339 form of a point in time with microseconds
/// (`2024-05-01T10:00:00.250000Z`), Kubernetes' `MicroTime` and the audit
/// log's stamps.
pub fn rfc3339_micros(at: SystemTime) -> String {
    with_fraction(at, 6)
}

/// `at` in whole seconds with `digits` digits of fraction (truncated).
fn with_fraction(at: SystemTime, digits: u32) -> String {
    let (secs, nanos) = unix_parts(at);
    let whole = rfc3339(secs);
    let fraction = nanos / 10u32.pow(9 - digits);
    let width = digits as usize;
    format!("{}.{fraction:0width$}Z", whole.trim_end_matches('Z'))
}

/// The clock now, in Unix milliseconds: the controllers' clock for rollout
/// and run timing, and a CLI's for what it computes from stored times.
pub fn now_unix_millis() -> i64 {
    let (secs, nanos) = unix_parts(SystemTime::now());
    secs.saturating_mul(1000).saturating_add(i64::from(nanos / 1_000_000))
}

/// The clock now, in whole seconds (`2024-05-01T10:00:00Z`): the one way
/// Fleet stamps "now" (a proposer's clock carried in a Raft command, an
/// agent's observation time, a CLI's approval time).
pub fn now_rfc3339() -> String {
    rfc3339_of(SystemTime::now())
}

/// `text` without its fraction of a second (`2024-05-01T10:00:00.250Z` →
/// `2024-05-01T10:00:00Z`); any other text as it is. The agent observes at
/// millisecond resolution and stamps condition transitions in whole seconds.
pub fn whole_seconds(text: &str) -> String {
    match text.split_once('.') {
        Some((whole, fraction)) => match fraction.find(|c: char| !c.is_ascii_digit()) {
            Some(zone) => format!("{whole}{}", &fraction[zone..]),
            None => whole.to_string(),
        },
        None => text.to_string(),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The RFC 3339 form (`2024-05-01T10:00:00Z`, UTC, whole seconds) of unix
/// seconds `secs`, as the rest of Fleet writes status times.
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the
/// inverse of [`days_from_civil`], Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Seconds of a duration written as whole numbers with `h`, `m` or `s`
/// units, possibly combined (`90m`, `360s`, `1h30m`), or a bare `0` —
/// the form OCM's rollout durations use; `None` for anything else.
pub fn duration_seconds(text: &str) -> Option<i64> {
    if text == "0" {
        return Some(0);
    }
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' if !digits.is_empty() => {
                let unit = match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                let n: i64 = digits.parse().ok()?;
                total = total.checked_add(n.checked_mul(unit)?)?;
                digits.clear();
            }
            _ => return None,
        }
    }
    (digits.is_empty() && !text.is_empty()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_714_557_600), "2024-05-01T10:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        for secs in [-86_400_i64, 59, 86_399, 951_868_799, 1_709_251_199, 4_102_444_800, 253_402_300_799] {
            assert_eq!(unix_seconds(&rfc3339(secs)), Some(secs), "{secs}");
        }
    }

    #[test]
    fn writes_as_the_rest_of_kubernetes_does() {
        let at = UNIX_EPOCH + Duration::new(1_714_557_600, 250_123_456);
        assert_eq!(rfc3339_of(at), "2024-05-01T10:00:00Z");
        assert_eq!(rfc3339_millis(at), "2024-05-01T10:00:00.250Z");
        assert_eq!(rfc3339_micros(at), "2024-05-01T10:00:00.250123Z");
        assert_eq!(rfc3339_micros(UNIX_EPOCH + Duration::from_secs(5)), "1970-01-01T00:00:05.000000Z");
        assert_eq!(rfc3339_of(UNIX_EPOCH - Duration::from_millis(500)), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339_millis(UNIX_EPOCH - Duration::from_millis(250)), "1969-12-31T23:59:59.750Z");
        assert_eq!(unix_seconds(&now_rfc3339()).map(|s| s > 1_700_000_000), Some(true));
        assert!(now_unix_millis() > 1_700_000_000_000);
    }

    #[test]
    fn whole_seconds_drops_only_the_fraction() {
        assert_eq!(whole_seconds("2024-05-01T10:00:00.250Z"), "2024-05-01T10:00:00Z");
        assert_eq!(whole_seconds("2024-05-01T10:00:00.250+02:00"), "2024-05-01T10:00:00+02:00");
        assert_eq!(whole_seconds("2024-05-01T10:00:00Z"), "2024-05-01T10:00:00Z");
        assert_eq!(whole_seconds("t1"), "t1");
    }

    #[test]
    fn parses_fractions_and_offsets_to_the_nanosecond() {
        let z = system_time("2024-05-01T10:00:00Z").unwrap();
        assert_eq!(z, UNIX_EPOCH + Duration::from_secs(1_714_557_600));
        assert_eq!(system_time("2024-05-01T12:00:00+02:00"), Some(z));
        assert_eq!(system_time("2024-05-01T09:30:00-00:30"), Some(z));
        assert_eq!(system_time("2024-05-01T10:00:00.250Z"), Some(z + Duration::from_millis(250)));
        assert_eq!(system_time("2024-05-01T10:00:00.1234567891Z"), Some(z + Duration::from_nanos(123_456_789)));
        assert_eq!(system_time("1969-12-31T23:59:59.750Z"), Some(UNIX_EPOCH - Duration::from_millis(250)));
        for at in [z + Duration::from_micros(7), UNIX_EPOCH - Duration::from_micros(7)] {
            assert_eq!(system_time(&rfc3339_micros(at)), Some(at));
        }
        for bad in ["yesterday", "2024-05-01T10:00:00", "2024-05-01T10:00:00.Z", "2024-13-01T10:00:00Z"] {
            assert_eq!(system_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_in_hours_minutes_and_seconds() {
        for (text, want) in [("0", Some(0)), ("2h", Some(7200)), ("90m", Some(5400)), ("360s", Some(360))] {
            assert_eq!(duration_seconds(text), want, "{text}");
        }
        assert_eq!(duration_seconds("1h30m5s"), Some(5405));
        for bad in ["", "5", "h", "1.5h", "-1s", "1d", "None", "1h 2m"] {
            assert_eq!(duration_seconds(bad), None, "{bad}");
        }
    }
}
