//! The scheduler's door to the actor directory (named actors, Ray's
//! `get_actor`): a named actor dying for good frees its name, one restarted
//! on another node moves it there. The node implements it over the control
//! plane's directory (`node::names`).

use wray_control_plane::ActorId;

/// Keeps the actor directory in step with the actors' lives.
pub trait ActorNames: Send + Sync {
    /// Actor `actor`, named `name`, died for good: its name is free.
    fn released(&self, name: &str, actor: ActorId);

    /// Actor `actor`, named `name`, lives on node `node` now (restarted).
    fn moved(&self, name: &str, actor: ActorId, node: &str);
}
