//! Ages like kubectl prints them (`45s`, `12m`, `3h`, `5d`), from RFC 3339
//! timestamps.

use std::time::{Duration, SystemTime};

/// kubectl's `HumanDuration`: two significant units at most, coarser as the
/// duration grows (`90s`, `2m30s`, `12m`, `3h20m`, `20h`, `5d3h`, `30d`, `2y45d`).
pub fn human_duration(d: Duration) -> String {
    let seconds = d.as_secs();
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{days}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of a timestamp at `now`: `<unknown>` when absent or unreadable,
/// `0s` for times slightly in the future (clock skew), `<invalid>` beyond.
pub fn age(timestamp: Option<&str>, now: SystemTime) -> String {
    let Some(then) = timestamp.and_then(crate::time::system_time) else {
        return "<unknown>".to_string();
    };
    match now.duration_since(then) {
        Ok(d) => human_duration(d),
        Err(e) if e.duration() < Duration::from_secs(2) => "0s".to_string(),
        Err(_) => "<invalid>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> String {
        human_duration(Duration::from_secs(s))
    }

    #[test]
    fn formats_like_kubectl() {
        assert_eq!(secs(0), "0s");
        assert_eq!(secs(45), "45s");
        assert_eq!(secs(119), "119s");
        assert_eq!(secs(120), "2m");
        assert_eq!(secs(150), "2m30s");
        assert_eq!(secs(12 * 60 + 5), "12m");
        assert_eq!(secs(179 * 60), "179m");
        assert_eq!(secs(3 * 3600), "3h");
        assert_eq!(secs(3 * 3600 + 20 * 60), "3h20m");
        assert_eq!(secs(20 * 3600), "20h");
        assert_eq!(secs(5 * 86400), "5d");
        assert_eq!(secs(5 * 86400 + 3 * 3600), "5d3h");
        assert_eq!(secs(30 * 86400), "30d");
        assert_eq!(secs(800 * 86400), "2y70d");
        assert_eq!(secs(9 * 365 * 86400), "9y");
    }

    #[test]
    fn age_from_timestamp() {
        let now = crate::time::system_time("2024-05-01T10:00:45Z").unwrap();
        assert_eq!(age(Some("2024-05-01T10:00:00Z"), now), "45s");
        assert_eq!(age(Some("2024-04-26T10:00:45Z"), now), "5d");
        assert_eq!(age(Some("2024-05-01T10:00:46Z"), now), "0s");
        assert_eq!(age(Some("2024-05-01T11:00:00Z"), now), "<invalid>");
        assert_eq!(age(None, now), "<unknown>");
    }
}
