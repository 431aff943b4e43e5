//! The component's exports: the tables `wray::export!` builds, and the
//! implementation of the WIT parts (`metadata`, `functions`, `actors`,
//! `lifecycle`, `driver`) over them. `wray::export!` exports only the parts
//! a component has.

use core::fmt::Display;
use core::marker::PhantomData;

use crate::actor::{self, ActorClass, ActorObject, MethodInfo};
use crate::bindings::types as wit;
use crate::bindings::{actors, driver, functions, lifecycle, metadata};
use crate::error::ErrorKind;
use crate::options::Declared;
use crate::panic;
use crate::runtime::task_error;
use crate::schema::{params_wit, returns_wit, ParamSchema, SchemaFn};

/// The SDK, as `describe` names it.
const SDK: &str = concat!("wray-rust ", env!("CARGO_PKG_VERSION"));

/// The mark `wray::export!` puts on each function and actor class it
/// lists; `#[wray::remote]` and `#[wray::actor]` require it of what they
/// define, so one left out of the list does not compile.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not listed in `wray::export!`",
    label = "defined as a remote function or actor class, but not exported",
    note = "add it to `functions: [..]` or `actors: [..]` of `wray::export!`: a function or class left out would fail every call with not-found"
)]
pub trait Exported {}

/// Requires the [`Exported`] mark of `T` (called by no one: the generated
/// code names it so that the bound is checked).
#[doc(hidden)]
pub const fn exported<T: Exported>() {}

/// What `#[wray::remote]` generates for a function: its name, shape and entry
/// point.
#[doc(hidden)]
pub trait RemoteFunction {
    /// The function's name.
    const NAME: &'static str;
    /// Number of return objects.
    const NUM_RETURNS: u32;
    /// What its attribute declares (resources, limits).
    const DECLARED: Declared = Declared::NONE;
    /// Its parameters' names and schemas.
    const PARAMS: &'static [ParamSchema];
    /// Its return values' schemas.
    const RETURNS: &'static [SchemaFn];

    /// Decodes `args`, runs the function and encodes its results in
    /// `codec`.
    ///
    /// # Errors
    ///
    /// Bad arguments, or the function's own error.
    fn invoke(args: Vec<wit::Arg>, codec: wit::Codec) -> Result<Vec<wit::Payload>, wit::TaskError>;
}

/// Decodes a task's arguments, runs it and encodes its results.
type InvokeFn = fn(Vec<wit::Arg>, wit::Codec) -> Result<Vec<wit::Payload>, wit::TaskError>;

/// Runs an actor class's constructor.
type CreateFn = fn(Vec<wit::Arg>) -> Result<Box<dyn ActorObject>, wit::TaskError>;

/// A remote function in a component's table.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct FunctionEntry {
    name: &'static str,
    num_returns: u32,
    declared: Declared,
    params: &'static [ParamSchema],
    returns: &'static [SchemaFn],
    invoke: InvokeFn,
}

impl FunctionEntry {
    /// The entry of remote function `F`.
    pub const fn of<F: RemoteFunction>() -> Self {
        FunctionEntry {
            name: F::NAME,
            num_returns: F::NUM_RETURNS,
            declared: F::DECLARED,
            params: F::PARAMS,
            returns: F::RETURNS,
            invoke: F::invoke,
        }
    }
}

/// An actor class in a component's table.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ActorEntry {
    class: &'static str,
    declared: Declared,
    params: &'static [ParamSchema],
    methods: &'static [MethodInfo],
    create: CreateFn,
}

impl ActorEntry {
    /// The entry of actor class `A`.
    pub const fn of<A: ActorClass>() -> Self {
        ActorEntry {
            class: A::CLASS,
            declared: A::DECLARED,
            params: A::PARAMS,
            methods: A::METHODS,
            create: actor::create::<A>,
        }
    }
}

/// The driver entry point's shape after `#[wray::main]`.
#[doc(hidden)]
pub type MainFn = fn(Vec<String>) -> Result<(), String>;

/// A component's table of exports, built by `wray::export!`.
#[doc(hidden)]
pub trait Component: 'static {
    /// The remote functions.
    const FUNCTIONS: &'static [FunctionEntry];
    /// The actor classes.
    const ACTORS: &'static [ActorEntry];
    /// The `#[wray::main]` function, if any.
    const MAIN: Option<MainFn>;
    /// Runs once on each instance that reusable functions run on.
    const INIT: Option<HookFn> = None;
    /// Runs on a reused instance between two of its tasks.
    const REINIT: Option<HookFn> = None;
}

/// The shape of the `init` and `reinit` hooks named in `wray::export!`.
#[doc(hidden)]
pub type HookFn = fn() -> Result<(), String>;

/// What a `#[wray::main]` function may return: `()`, or `Result<(), E>` with
/// `E: Display`.
#[doc(hidden)]
pub trait IntoMainResult {
    /// The result `main` hands the host.
    ///
    /// # Errors
    ///
    /// The function's error, as text.
    fn into_main_result(self) -> Result<(), String>;
}

impl IntoMainResult for () {
    fn into_main_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Display> IntoMainResult for Result<(), E> {
    fn into_main_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// The WIT parts implemented over component `C`'s table; the type
/// `wray::export!` hands to the parts' export macros.
#[doc(hidden)]
pub struct Exports<C>(PhantomData<fn() -> C>);

/// A live actor of one of `C`'s classes: the WIT `actor-instance` resource.
#[doc(hidden)]
pub struct ActorInstance<C> {
    state: Box<dyn ActorObject>,
    _component: PhantomData<fn() -> C>,
}

/// The codec results go back in: what the caller asked for, rkyv when it
/// said nothing.
fn result_codec(asked: Option<wit::Codec>) -> wit::Codec {
    asked.unwrap_or(wit::Codec::Rkyv)
}

impl<C: Component> metadata::Guest for Exports<C> {
    fn describe() -> wit::ComponentInfo {
        enter();
        let mut functions = Vec::new();
        for f in C::FUNCTIONS {
            functions.push(wit::FunctionInfo {
                kind: wit::FunctionKind::Function,
                name: f.name.to_string(),
                class: None,
                num_returns: f.num_returns,
                params: params_wit(f.params),
                returns: returns_wit(f.returns),
                resources: f.declared.resources_wit(),
                limits: f.declared.limits_wit(),
                reuse: f.declared.reuse,
            });
        }
        for a in C::ACTORS {
            functions.push(wit::FunctionInfo {
                kind: wit::FunctionKind::ActorConstructor,
                name: a.class.to_string(),
                class: Some(a.class.to_string()),
                num_returns: 1,
                params: params_wit(a.params),
                returns: Vec::new(),
                resources: a.declared.resources_wit(),
                limits: a.declared.limits_wit(),
                reuse: false,
            });
            for m in a.methods {
                functions.push(wit::FunctionInfo {
                    kind: wit::FunctionKind::ActorMethod,
                    name: m.name.to_string(),
                    class: Some(a.class.to_string()),
                    num_returns: m.num_returns,
                    params: params_wit(m.params),
                    returns: returns_wit(m.returns),
                    resources: Declared::NONE.resources_wit(),
                    limits: Declared::NONE.limits_wit(),
                    reuse: false,
                });
            }
        }
        wit::ComponentInfo {
            functions,
            sdk: SDK.to_string(),
        }
    }
}

impl<C: Component> functions::Guest for Exports<C> {
    fn invoke(
        name: String,
        args: Vec<wit::Arg>,
        codec: Option<wit::Codec>,
    ) -> Result<Vec<wit::Payload>, wit::TaskError> {
        enter();
        match C::FUNCTIONS.iter().find(|f| f.name == name) {
            Some(f) => (f.invoke)(args, result_codec(codec)),
            None => Err(task_error(
                ErrorKind::NotFound,
                &name,
                format!("component has no remote function {name}"),
            )),
        }
    }
}

impl<C: Component> lifecycle::Guest for Exports<C> {
    fn init() -> Result<(), String> {
        enter();
        C::INIT.map_or(Ok(()), |f| f())
    }

    fn reinit() -> Result<(), String> {
        enter();
        C::REINIT.map_or(Ok(()), |f| f())
    }
}

impl<C: Component> driver::Guest for Exports<C> {
    fn main(args: Vec<String>) -> Result<(), String> {
        enter();
        match C::MAIN {
            Some(main) => main(args),
            None => Err("component has no #[wray::main]".to_string()),
        }
    }
}

impl<C: Component> actors::Guest for Exports<C> {
    type ActorInstance = ActorInstance<C>;
}

impl<C: Component> actors::GuestActorInstance for ActorInstance<C> {
    fn create(class: String, args: Vec<wit::Arg>) -> Result<actors::ActorInstance, wit::TaskError> {
        enter();
        match C::ACTORS.iter().find(|a| a.class == class) {
            Some(entry) => {
                let state = (entry.create)(args)?;
                Ok(actors::ActorInstance::new(ActorInstance::<C> {
                    state,
                    _component: PhantomData,
                }))
            }
            None => Err(task_error(
                ErrorKind::NotFound,
                &format!("{class}.new"),
                format!("component has no actor class {class}"),
            )),
        }
    }

    fn call(
        &self,
        method: String,
        args: Vec<wit::Arg>,
        codec: Option<wit::Codec>,
    ) -> Result<Vec<wit::Payload>, wit::TaskError> {
        enter();
        self.state.call(&method, args, result_codec(codec))
    }
}

/// What every export does first: install the panic hook, and drop the refs
/// kept alive for the value the previous export returned (the host has
/// sealed it by now).
fn enter() {
    panic::install_hook();
    crate::refs::flush_deferred();
}
