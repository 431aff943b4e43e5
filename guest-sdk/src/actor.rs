//! Actors: [`ActorHandle`] on the caller's side, and the state machine the
//! generated code runs inside the actor's instance.

use core::cell::{Cell, RefCell};
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::Deref;

use rkyv::rancor::Fallible;
use rkyv::{Archive, Deserialize, Place, Serialize};

use crate::bindings::types as wit;
use crate::error::ErrorKind;
use crate::ids::{ActorId, ArchivedTaskId, ObjectId, TaskId, TaskIdResolver};
use crate::object_ref::ObjectRef;
use crate::runtime::task_error;

/// An actor class: a type marked `#[wray::actor]` (on both its struct and its
/// `impl` block). Implemented by the macro.
pub trait Actor: 'static {
    /// The class name (the type's name), as the component exports it.
    const CLASS: &'static str;
    /// The macro-generated `{Class}Methods` struct: one method per remote
    /// method of the class, each returning a call builder whose
    /// `.remote(args..)` submits the call.
    type Methods: ActorMethods;
}

/// The methods struct of an actor class: a typed actor id. Implemented by
/// `#[wray::actor]` on the class's struct.
pub trait ActorMethods: Copy + 'static {
    /// Names the actor `id`.
    fn from_id(id: ActorId) -> Self;
    /// The actor's id.
    fn actor_id(&self) -> ActorId;
}

/// A handle to a live actor of class `A`, returned by `A::remote(args..)`.
///
/// Dereferences to `A::Methods`, so `handle.method().remote(args..)` submits
/// a call. Calls on one actor run one at a time, in submission order. A
/// handle is a value: clone it, or pass it to another task (it travels as
/// its actor id).
///
/// Handles are counted, as in Ray: once the last one is dropped, in every
/// task and value that had one, the actor exits after the calls already
/// submitted to it, and later calls (through a copied `A::Methods`) fail
/// with [`ActorDied`](ErrorKind::ActorDied). An actor created with
/// [`Options::detached`](crate::Options::detached) lives until it is
/// killed, past its job's end. Behind the count is the actor's handle object,
/// which every handle holds like an [`ObjectRef`](crate::ObjectRef).
pub struct ActorHandle<A: Actor> {
    methods: A::Methods,
    /// A hold on the actor's handle object.
    _hold: ObjectRef<()>,
}

/// The object standing for actor `id`'s handles: the first return object
/// of its creation task (the host's `actor_handle_object`).
pub(crate) fn handle_object(id: ActorId) -> ObjectId {
    ObjectId { task: id, index: 1 }
}

impl<A: Actor> ActorHandle<A> {
    /// Names the existing actor `id`; the class is not checked until a call
    /// reaches the actor. It keeps the actor alive only if this task holds
    /// a handle to it already (got as an argument, a value, or by creating
    /// it).
    pub fn from_id(id: ActorId) -> Self {
        ActorHandle {
            methods: A::Methods::from_id(id),
            _hold: ObjectRef::from_id(handle_object(id)),
        }
    }

    /// A handle to the running actor (Ray's
    /// `ray.get_runtime_context().current_actor`), to pass to tasks and
    /// other actors so that they call it back: inside a constructor or a
    /// method of an actor of class `A`, its handle; `None` in a remote
    /// function's task, in a driver, and in an actor of another class.
    ///
    /// The handle is weak, as Ray's is: made by the actor itself, it does
    /// not keep the actor alive (an actor holding a handle to itself would
    /// never exit); the handles its creator and others hold do. Passed in a
    /// value to a task, it is held by that task like any handle.
    ///
    /// A call through it from inside one of the actor's own methods must
    /// not be waited for there: calls on one actor run one at a time, so
    /// the method would wait for a call queued behind itself.
    pub fn current() -> Option<Self> {
        if running_class() != Some(A::CLASS) {
            return None;
        }
        crate::runtime::current_actor_id().map(Self::from_id)
    }

    /// The actor's id (the id of the task that created it).
    pub fn id(&self) -> ActorId {
        self.methods.actor_id()
    }
}

impl<A: Actor> Deref for ActorHandle<A> {
    type Target = A::Methods;

    fn deref(&self) -> &A::Methods {
        &self.methods
    }
}

impl<A: Actor> Clone for ActorHandle<A> {
    fn clone(&self) -> Self {
        ActorHandle {
            methods: self.methods,
            _hold: self._hold.clone(),
        }
    }
}

impl<A: Actor> PartialEq for ActorHandle<A> {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl<A: Actor> Eq for ActorHandle<A> {}

impl<A: Actor> Hash for ActorHandle<A> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id().hash(state);
    }
}

impl<A: Actor> fmt::Debug for ActorHandle<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ActorHandle<{}>({})",
            core::any::type_name::<A>(),
            self.id()
        )
    }
}

// An `ActorHandle<A>` is archived as its actor id; the value holding it
// holds its handle object (a ref of the payload).

impl<A: Actor> Archive for ActorHandle<A> {
    type Archived = ArchivedTaskId;
    type Resolver = TaskIdResolver;

    fn resolve(&self, resolver: Self::Resolver, out: Place<Self::Archived>) {
        self.id().resolve(resolver, out);
    }
}

impl<A: Actor, S> Serialize<S> for ActorHandle<A>
where
    S: Fallible + ?Sized,
    TaskId: Serialize<S>,
{
    fn serialize(&self, serializer: &mut S) -> Result<Self::Resolver, S::Error> {
        crate::refs::note_serialized(handle_object(self.id()));
        self.id().serialize(serializer)
    }
}

impl<A: Actor, D> Deserialize<ActorHandle<A>, D> for ArchivedTaskId
where
    D: Fallible + ?Sized,
    ArchivedTaskId: Deserialize<TaskId, D>,
{
    fn deserialize(&self, deserializer: &mut D) -> Result<ActorHandle<A>, D::Error> {
        let id: TaskId = Deserialize::<TaskId, D>::deserialize(self, deserializer)?;
        Ok(ActorHandle::from_id(id))
    }
}

/// One remote method of an actor class, as listed by `describe`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct MethodInfo {
    /// The method's name.
    pub name: &'static str,
    /// Number of return objects.
    pub num_returns: u32,
    /// Its parameters' names and schemas.
    pub params: &'static [crate::schema::ParamSchema],
    /// Its return values' schemas.
    pub returns: &'static [crate::schema::SchemaFn],
}

/// What `#[wray::actor]` on an `impl` block generates: construction and
/// dispatch by name.
#[doc(hidden)]
pub trait ActorClass: Actor + Sized {
    /// The remote methods.
    const METHODS: &'static [MethodInfo];
    /// What its attribute declares (resources held for the actor's
    /// lifetime, limits of each call).
    const DECLARED: crate::options::Declared = crate::options::Declared::NONE;
    /// The constructor's parameters' names and schemas.
    const PARAMS: &'static [crate::schema::ParamSchema];

    /// Runs the constructor.
    ///
    /// # Errors
    ///
    /// Bad arguments, or the constructor's own error.
    fn construct(args: Vec<wit::Arg>) -> Result<Self, wit::TaskError>;

    /// Runs `method`.
    ///
    /// # Errors
    ///
    /// Unknown method (`not-found`), bad arguments, or the method's own error.
    fn dispatch(
        &mut self,
        method: &str,
        args: Vec<wit::Arg>,
        codec: wit::Codec,
    ) -> Result<Vec<wit::Payload>, wit::TaskError>;
}

/// A live actor's state, whatever its class.
#[doc(hidden)]
pub trait ActorObject {
    /// Runs `method` on the state, its results in `codec`.
    ///
    /// # Errors
    ///
    /// As [`ActorClass::dispatch`].
    fn call(
        &self,
        method: &str,
        args: Vec<wit::Arg>,
        codec: wit::Codec,
    ) -> Result<Vec<wit::Payload>, wit::TaskError>;
}

/// The state of an actor of class `A`, borrowed mutably for each call.
struct ActorCell<A>(RefCell<A>);

impl<A: ActorClass> ActorObject for ActorCell<A> {
    fn call(
        &self,
        method: &str,
        args: Vec<wit::Arg>,
        codec: wit::Codec,
    ) -> Result<Vec<wit::Payload>, wit::TaskError> {
        match self.0.try_borrow_mut() {
            Ok(mut state) => state.dispatch(method, args, codec),
            // The host never overlaps calls; say so rather than panic if it did.
            Err(_) => Err(task_error(
                ErrorKind::System,
                &format!("{}.{method}", A::CLASS),
                "actor called while another call is running",
            )),
        }
    }
}

thread_local! {
    /// The class of the actor this instance holds (set before its
    /// constructor runs): an instance holds at most one actor.
    static RUNNING_CLASS: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// The class of the actor this instance holds, if it holds one.
fn running_class() -> Option<&'static str> {
    RUNNING_CLASS.with(Cell::get)
}

/// Runs `A`'s constructor and boxes the new state.
pub(crate) fn create<A: ActorClass>(
    args: Vec<wit::Arg>,
) -> Result<Box<dyn ActorObject>, wit::TaskError> {
    RUNNING_CLASS.with(|c| c.set(Some(A::CLASS)));
    Ok(Box::new(ActorCell(RefCell::new(A::construct(args)?))))
}
