//! The bottom layer every other module may use to show what it found: tables in Markdown,
//! CSV, LaTeX and JSON ([`format`](mod@format)) and the progress bar of long runs ([`progress`]). It
//! imports nothing of the library above it.

pub mod format;
pub mod progress;
