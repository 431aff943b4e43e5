//! Finding the built components: the host's test helper, shared by path.

#[path = "../../../host/tests/common/components.rs"]
mod components;
pub use components::component;
