//! When the weekly digest is due: the slot (`digest.day`, `digest.hour`,
//! UTC) and the catch-up rule — a run is overdue when a slot has passed
//! since the last success (the machine was off across it). With no
//! success recorded yet there is no baseline, so a first start waits for
//! the next slot instead of surprise-running. The scheduler (`jobs`) asks
//! this; the pipeline's stamp is what makes a caught-up run happen once.

use time::{Duration, OffsetDateTime, Weekday};

/// `mon`…`sun` → weekday.
pub fn weekday(s: &str) -> Option<Weekday> {
    Some(match s.get(..3)?.to_ascii_lowercase().as_str() {
        "mon" => Weekday::Monday,
        "tue" => Weekday::Tuesday,
        "wed" => Weekday::Wednesday,
        "thu" => Weekday::Thursday,
        "fri" => Weekday::Friday,
        "sat" => Weekday::Saturday,
        "sun" => Weekday::Sunday,
        _ => return None,
    })
}

/// The latest slot at or before `now`.
pub fn last_slot(day: Weekday, hour: u8, now: OffsetDateTime) -> OffsetDateTime {
    let now = now.to_offset(time::UtcOffset::UTC);
    let today = now.replace_time(time::Time::from_hms(hour.min(23), 0, 0).unwrap_or(time::Time::MIDNIGHT));
    let back =
        (i64::from(now.weekday().number_days_from_monday()) - i64::from(day.number_days_from_monday())).rem_euclid(7);
    let slot = today - Duration::days(back);
    if slot > now {
        slot - Duration::days(7)
    } else {
        slot
    }
}

/// The next slot after `now`.
pub fn next_slot(day: Weekday, hour: u8, now: OffsetDateTime) -> OffsetDateTime {
    last_slot(day, hour, now) + Duration::days(7)
}

/// Whether a slot passed since `last_success` (see the module docs).
pub fn is_overdue(day: Weekday, hour: u8, last_success: Option<OffsetDateTime>, now: OffsetDateTime) -> bool {
    match last_success {
        None => false,
        Some(t) => t < last_slot(day, hour, now),
    }
}
