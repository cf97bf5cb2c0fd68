//! Progress bars on stderr for long runs (hidden when stderr is not a terminal, or when
//! the caller asks for none).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` steps counted in `unit`, with a message slot (`set_message`) for the step
/// in progress; hidden unless `show` (and, like every bar on stderr, when stderr is not a
/// terminal). The one bar every long command draws.
pub fn bar(len: u64, unit: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let template =
        format!("{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}} (eta {{eta}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}
