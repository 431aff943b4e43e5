//! Actor handles in messages: where the actors whose handles travel in a
//! task's arguments or results live ([`refs`]), and the stubs a node
//! receiving them keeps ([`learn`]); see `actors`.

use std::sync::Arc;

use wray_control_plane::{NodeState, NodeView, ObjectId};

use crate::bounds::MAX_ACTOR_NAME;
use crate::id_map::IdSet;
use crate::proto::actor_handle_object;
use crate::protocol::{ActorRef, Shipped};
use crate::scheduler::actor::{Home, Restarts};
use crate::scheduler::adopt::Stub;
use crate::scheduler::Scheduler;

/// Where the actors whose handle objects are among `shipped` live: this
/// node for an actor here, its home for a stub. Dead actors are left out
/// (a call through the handle fails where it is made). With `hand_over`
/// (a task's results, going back to its owner), the stubs this node owns
/// (not detached) are handed to the receiver, which owns them from then
/// on: its kill or its job's end kills the actor, as this node's did.
/// Whether the actor lives on is counted apart from ownership: every node
/// holding a handle tells the actor's node ([`learn`]), and the actor
/// exits once none does (Ray's borrowers).
pub(crate) fn refs(sched: &Scheduler, shipped: &[Shipped], hand_over: bool) -> Vec<ActorRef> {
    shipped
        .iter()
        .filter(|s| actor_handle_object(s.id.task) == s.id)
        .filter_map(|s| sched.actors().get(&s.id.task))
        .filter(|a| a.dead().is_none())
        .map(|a| {
            let owner = hand_over && !a.detached && a.owned_here();
            if owner && a.home.is_some() {
                a.hand_over();
            }
            ActorRef {
                actor: a.id,
                node: a
                    .home
                    .as_ref()
                    .map_or_else(|| sched.node_id().to_owned(), Home::node),
                owner,
                class: a.class.clone(),
                component: a.component.to_string(),
                limits: a.limits,
                max_restarts: a.restarts.max_restarts,
                max_task_retries: a.restarts.max_task_retries,
            }
        })
        .collect()
}

/// Keeps a stub of each actor in `refs` (from a peer: checked) that lives
/// on another live node and whose handle object is among `received` (the
/// objects that came with it, held by the caller until this ends): this
/// node's calls through the handle go there, and that node counts this
/// one among the actor's holders before this ends. A handle of an actor
/// living here keeps it alive here as one made here does.
pub(crate) async fn learn(
    sched: &Arc<Scheduler>,
    view: &NodeView,
    refs: Vec<ActorRef>,
    received: &[ObjectId],
) {
    if refs.is_empty() {
        return;
    }
    let received: IdSet<ObjectId> = received.iter().copied().collect();
    // The actors' nodes are told at once, not one round trip after another.
    let mut follows = Vec::new();
    for r in refs.into_iter().take(received.len()) {
        if !received.contains(&actor_handle_object(r.actor)) {
            continue;
        }
        if r.node == sched.node_id() {
            if let Some(actor) = sched.actors().get(&r.actor) {
                sched.handle_returned(&actor);
            }
            continue;
        }
        let alive = view
            .get(&r.node)
            .is_some_and(|n| n.state == NodeState::Alive);
        if !alive || r.class.len() > MAX_ACTOR_NAME || r.component.len() > MAX_ACTOR_NAME {
            continue;
        }
        let component = Arc::from(r.component);
        let restarts = Restarts {
            max_restarts: r.max_restarts,
            max_task_retries: r.max_task_retries,
        };
        let stub = Stub {
            node: r.node,
            owner: r.owner,
            class: r.class,
            component,
            limits: r.limits,
            restarts,
        };
        follows.push(sched.follow_actor(r.actor, stub));
    }
    futures_util::future::join_all(follows).await;
}
