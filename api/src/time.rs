//! RFC 3339 timestamps as Unix seconds: objects carry times as text
//! (`lastTransitionTime`, `validUntil`, a taint's `timeAdded`), while rules
//! that compare them with "now" (rollout soak times, toleration periods,
//! score expiry) need numbers. Pure: "now" is always passed in.

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
