//! Time as the pure code sees it: unix seconds in, RFC 3339 strings in
//! status out, durations in seconds. Nothing here reads a clock; callers
//! pass `now`. Here in `api` because admission checks timestamps too (a
//! taint's `timeAdded`, an add-on score's `validUntil`).

/// What an RFC 3339 timestamp looks like, for validation messages.
pub const RFC3339_DETAIL: &str = "must be an RFC 3339 timestamp, e.g. \"2024-05-01T10:00:00Z\"";

/// Unix seconds of an RFC 3339 timestamp (`2024-05-01T10:00:00Z`, optional
/// fraction, `Z` or `±hh:mm` offset); `None` if it is not one.
pub fn unix_seconds(text: &str) -> Option<i64> {
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
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
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
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
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
