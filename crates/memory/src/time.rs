//! Timezone-qualified ISO 8601 times, both ways, without a calendar crate.

use crate::error::MemoryError;

/// Epoch milliseconds of `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)`.
pub fn parse_iso8601(text: &str) -> Result<u64, MemoryError> {
    let bad = || {
        MemoryError::InvalidInput(format!(
            "\"{text}\" is not a timezone-qualified ISO 8601 time (like 2026-01-31T09:30:00Z)"
        ))
    };
    let text = text.trim();
    let (date, rest) = text.split_once(['T', 't', ' ']).ok_or_else(bad)?;
    let mut parts = date.splitn(3, '-');
    let mut num = |max: i64| -> Result<i64, MemoryError> {
        let v: i64 = parts.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        (0..=max).contains(&v).then_some(v).ok_or_else(bad)
    };
    let (year, month, day) = (num(9999)?, num(12)?, num(31)?);
    let zone_at = rest.find(['Z', 'z', '+', '-']).ok_or_else(bad)?;
    let (clock, zone) = rest.split_at(zone_at);
    let offset_min: i64 = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (h, m) = zone[1..].split_once(':').ok_or_else(bad)?;
            let h: i64 = h.parse().map_err(|_| bad())?;
            let m: i64 = m.parse().map_err(|_| bad())?;
            sign * (h * 60 + m)
        }
    };
    let mut clock_parts = clock.split(':');
    let hour: i64 = clock_parts
        .next()
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    let minute: i64 = clock_parts
        .next()
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    let seconds: f64 = match clock_parts.next() {
        Some(s) => s.parse().map_err(|_| bad())?,
        None => 0.0,
    };
    if hour > 23 || minute > 59 || !(0.0..61.0).contains(&seconds) || month == 0 || day == 0 {
        return Err(bad());
    }
    let days = days_from_civil(year, month, day);
    let ms = (days * 86_400 + hour * 3600 + minute * 60 - offset_min * 60) * 1000
        + (seconds * 1000.0) as i64;
    u64::try_from(ms).map_err(|_| bad())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of epoch milliseconds.
pub fn format_iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        (of_day % 3600) / 60,
        of_day % 60,
        ms % 1000
    )
}

// Howard Hinnant's civil-date algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_honours_offsets() {
        let ms = parse_iso8601("2026-01-31T09:30:00Z").unwrap();
        assert_eq!(format_iso8601(ms), "2026-01-31T09:30:00.000Z");
        assert_eq!(parse_iso8601("2026-01-31T10:30:00+01:00").unwrap(), ms);
        assert_eq!(format_iso8601(0), "1970-01-01T00:00:00.000Z");
        assert!(parse_iso8601("2026-01-31T09:30:00").is_err());
        assert!(parse_iso8601("yesterday").is_err());
    }
}
