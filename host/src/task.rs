//! Task specs: what the scheduler queues and a worker runs.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use wray_control_plane::{ObjectId, TaskId};

use crate::actor::Actor;
use crate::bindings::types;
use crate::cancel_token::CancelToken;
use crate::component::LoadedComponent;
use crate::limits::Limits;
use crate::registry::TaskEntry;
use crate::resources::Request;

/// What a task runs.
pub(crate) enum TaskKind {
    /// A remote function of the component.
    Function {
        /// Its name.
        name: String,
    },
    /// The constructor of an actor (the actor's first task).
    ActorCreate {
        /// The actor.
        actor: Arc<Actor>,
    },
    /// A method call on an actor.
    ActorCall {
        /// The actor.
        actor: Arc<Actor>,
        /// The method's name.
        method: String,
    },
}

/// One task: what to run, with which arguments, and where its results go.
pub(crate) struct TaskSpec {
    pub id: TaskId,
    pub kind: TaskKind,
    /// `name`, `Class.method` or `Class.new`: how errors and logs name it.
    pub label: String,
    pub component: Arc<LoadedComponent>,
    pub args: Vec<types::Arg>,
    /// The objects it returns, in order.
    pub returns: Vec<ObjectId>,
    /// What it holds until it finishes: its object arguments and the refs
    /// inside its value arguments (filled in by `Runtime::submit`).
    pub holds: Vec<ObjectId>,
    /// The resources it runs with (an actor's: for its lifetime).
    pub request: Request,
    /// Its limits.
    pub limits: Limits,
    /// The task that submitted it (`None`: a driver).
    pub parent: Option<TaskId>,
    /// Cancelled to stop it (`cancel`, `kill-actor`).
    pub cancel: CancelToken,
    /// Its entry in the task table (set at submission).
    pub entry: Option<Arc<TaskEntry>>,
}

impl TaskSpec {
    /// The object ids among the arguments (the task's dependencies).
    pub fn dependencies(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.args.iter().filter_map(|a| match a {
            types::Arg::Object(id) => Some((*id).into()),
            types::Arg::Value(_) => None,
        })
    }

    /// Every object the arguments name: object arguments and the refs
    /// inside value arguments.
    pub fn referenced(&self) -> Vec<ObjectId> {
        let mut ids = Vec::new();
        for arg in &self.args {
            match arg {
                types::Arg::Object(id) => ids.push((*id).into()),
                types::Arg::Value(p) => ids.extend(p.refs.iter().map(|r| ObjectId::from(*r))),
            }
        }
        ids
    }

    /// The actor the task belongs to, if any.
    pub fn actor(&self) -> Option<&Arc<Actor>> {
        match &self.kind {
            TaskKind::Function { .. } => None,
            TaskKind::ActorCreate { actor } | TaskKind::ActorCall { actor, .. } => Some(actor),
        }
    }
}

/// A submitted task waiting for its dependencies, then to run.
pub(crate) struct PendingTask {
    /// The spec; `None` once a worker took it.
    pub spec: Mutex<Option<TaskSpec>>,
    /// Dependencies not sealed yet, plus one while submission is under way.
    pub missing: AtomicUsize,
    /// Whether every dependency is sealed (actor queues check this).
    pub ready: AtomicBool,
}

impl PendingTask {
    pub fn new(spec: TaskSpec) -> Arc<Self> {
        Arc::new(Self {
            spec: Mutex::new(Some(spec)),
            missing: AtomicUsize::new(1),
            ready: AtomicBool::new(false),
        })
    }

    /// Takes the spec to run it (only the first caller gets it).
    pub fn take(&self) -> Option<TaskSpec> {
        self.spec.lock().take()
    }

    /// Counts one dependency sealed; true when none is missing any more.
    pub fn dependency_done(&self) -> bool {
        if self.missing.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ready.store(true, Ordering::Release);
            true
        } else {
            false
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}
