"""Reading captured prompt logs, driving both sides, reports."""
