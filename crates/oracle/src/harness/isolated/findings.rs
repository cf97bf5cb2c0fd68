//! What a worker's death or response says, in words for a finding.

use super::*;

/// Describes where a crash struck, from the worker's placement.
pub(super) fn crash_place(report: &CrashReport, elements: &[u64; 5]) -> String {
    let region = Region::from_u8(report.region);
    let access = match report.access {
        1 => "reading",
        2 => "writing",
        _ => "accessing",
    };
    let n = elements[region as usize] as i64;
    let k = report.element;
    match region {
        Region::None if report.address != 0 => format!(
            "{access} address {:#x} (outside the harness's buffers)",
            report.address
        ),
        Region::None => String::new(),
        Region::X | Region::Gamma | Region::Beta if (0..n).contains(&k) => format!(
            "writing to its input {} (element {k}; inputs are read-only)",
            region.name()
        ),
        _ if k < 0 => format!(
            "{access} before the start of {} (element {k})",
            region.name()
        ),
        _ => format!(
            "{access} past the end of {} (element {k}; it has {n})",
            region.name()
        ),
    }
}

pub(super) fn spots_words(s: Spots, d: u64) -> String {
    let at = if s.first >= 0 && d > 0 {
        format!(
            "element {} (row {}, col {})",
            s.first,
            s.first as u64 / d,
            s.first as u64 % d
        )
    } else {
        format!("element {}", s.first)
    };
    format!("{} element(s), the first {at}", s.count)
}

pub(super) fn response_name(r: &Response) -> &'static str {
    match r {
        Response::Ready { .. } => "'ready'",
        Response::LoadFailed { .. } => "'load failed'",
        Response::Called(_) => "a result",
        Response::Crash(_) => "a crash report",
        Response::Done { .. } => "'done'",
    }
}

/// A worker's end, in words: the finding kind, the failure class, and the description.
pub(super) fn death(status: Option<ExitStatus>) -> (FindingKind, Fatal, String) {
    match status {
        Some(s) if s.signal().is_some() => {
            let signal = s.signal().unwrap_or(0);
            (
                FindingKind::Crashed,
                Fatal::Signal(signal),
                format!("died of {}", signal_name(signal)),
            )
        }
        Some(s) if s.code() == Some(CHANNEL_FAILED) => (
            FindingKind::Harness,
            Fatal::Harness,
            format!("the worker lost its channel (exit status {CHANNEL_FAILED}: did the kernel close descriptor {REQUEST_FD} or {RESPONSE_FD}?)"),
        ),
        Some(s) => {
            let code = s.code().unwrap_or(-1);
            (
                FindingKind::Exited,
                Fatal::Exit(code),
                format!("ended the process with exit status {code}"),
            )
        }
        None => (
            FindingKind::Harness,
            Fatal::Harness,
            "the worker vanished (its status could not be read)".into(),
        ),
    }
}
