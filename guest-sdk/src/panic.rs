//! The panic hook: hands a panic's message to the host before the guest
//! aborts, so the host can turn the abort's trap into a `panic` error.

use std::panic::PanicHookInfo;
use std::sync::Once;

use crate::bindings::runtime;

/// Installs the hook, once per instance; called at every export's entry.
pub(crate) fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(report)));
}

fn report(info: &PanicHookInfo<'_>) {
    runtime::panicked(&message(info));
}

/// `panicked at {file}:{line}:{col}: {message}`, like Rust's own hook.
fn message(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "Box<dyn Any>"
    };
    match info.location() {
        Some(at) => format!(
            "panicked at {}:{}:{}: {text}",
            at.file(),
            at.line(),
            at.column()
        ),
        None => format!("panicked: {text}"),
    }
}
