//! The component's exports: the tables `wray::export!` builds, and the
//! implementation of the WIT `app` interface over them.

use core::fmt::Display;
use core::marker::PhantomData;

use crate::actor::{self, ActorClass, ActorObject, MethodInfo};
use crate::bindings::app;
use crate::bindings::types as wit;
use crate::error::ErrorKind;
use crate::options::Declared;
use crate::panic;
use crate::runtime::task_error;

/// What `#[wray::remote]` generates for a function: its name, shape and entry
/// point.
#[doc(hidden)]
pub trait RemoteFunction {
    /// The function's name.
    const NAME: &'static str;
    /// Number of arguments.
    const NUM_ARGS: u32;
    /// Number of return objects.
    const NUM_RETURNS: u32;
    /// What its attribute declares (resources, limits).
    const DECLARED: Declared = Declared::NONE;

    /// Decodes `args`, runs the function and encodes its results.
    ///
    /// # Errors
    ///
    /// Bad arguments, or the function's own error.
    fn invoke(args: Vec<wit::Arg>) -> Result<Vec<wit::Payload>, wit::TaskError>;
}

/// Decodes a task's arguments, runs it and encodes its results.
type InvokeFn = fn(Vec<wit::Arg>) -> Result<Vec<wit::Payload>, wit::TaskError>;

/// Runs an actor class's constructor.
type CreateFn = fn(Vec<wit::Arg>) -> Result<Box<dyn ActorObject>, wit::TaskError>;

/// A remote function in a component's table.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct FunctionEntry {
    name: &'static str,
    num_args: u32,
    num_returns: u32,
    declared: Declared,
    invoke: InvokeFn,
}

impl FunctionEntry {
    /// The entry of remote function `F`.
    pub const fn of<F: RemoteFunction>() -> Self {
        FunctionEntry {
            name: F::NAME,
            num_args: F::NUM_ARGS,
            num_returns: F::NUM_RETURNS,
            declared: F::DECLARED,
            invoke: F::invoke,
        }
    }
}

/// An actor class in a component's table.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ActorEntry {
    class: &'static str,
    num_args: u32,
    declared: Declared,
    methods: &'static [MethodInfo],
    create: CreateFn,
}

impl ActorEntry {
    /// The entry of actor class `A`.
    pub const fn of<A: ActorClass>() -> Self {
        ActorEntry {
            class: A::CLASS,
            num_args: A::NUM_ARGS,
            declared: A::DECLARED,
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

/// The WIT `app` interface implemented over component `C`'s table; the type
/// `wray::export!` hands to wit-bindgen's export macro.
#[doc(hidden)]
pub struct Exports<C>(PhantomData<fn() -> C>);

/// A live actor of one of `C`'s classes: the WIT `actor-instance` resource.
#[doc(hidden)]
pub struct ActorInstance<C> {
    state: Box<dyn ActorObject>,
    _component: PhantomData<fn() -> C>,
}

impl<C: Component> app::Guest for Exports<C> {
    type ActorInstance = ActorInstance<C>;

    fn describe() -> wit::ComponentInfo {
        enter();
        let mut functions = Vec::new();
        for f in C::FUNCTIONS {
            functions.push(wit::FunctionInfo {
                kind: wit::FunctionKind::Function,
                name: f.name.to_string(),
                class: None,
                num_returns: f.num_returns,
                num_args: f.num_args,
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
                num_args: a.num_args,
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
                    num_args: m.num_args,
                    resources: Declared::NONE.resources_wit(),
                    limits: Declared::NONE.limits_wit(),
                    reuse: false,
                });
            }
        }
        wit::ComponentInfo {
            functions,
            has_main: C::MAIN.is_some(),
        }
    }

    fn invoke(name: String, args: Vec<wit::Arg>) -> Result<Vec<wit::Payload>, wit::TaskError> {
        enter();
        match C::FUNCTIONS.iter().find(|f| f.name == name) {
            Some(f) => (f.invoke)(args),
            None => Err(task_error(
                ErrorKind::NotFound,
                &name,
                format!("component has no remote function {name}"),
            )),
        }
    }

    fn init() -> Result<(), String> {
        enter();
        C::INIT.map_or(Ok(()), |f| f())
    }

    fn reinit() -> Result<(), String> {
        enter();
        C::REINIT.map_or(Ok(()), |f| f())
    }

    fn main(args: Vec<String>) -> Result<(), String> {
        enter();
        match C::MAIN {
            Some(main) => main(args),
            None => Err("component has no #[wray::main]".to_string()),
        }
    }
}

impl<C: Component> app::GuestActorInstance for ActorInstance<C> {
    fn create(class: String, args: Vec<wit::Arg>) -> Result<app::ActorInstance, wit::TaskError> {
        enter();
        match C::ACTORS.iter().find(|a| a.class == class) {
            Some(entry) => {
                let state = (entry.create)(args)?;
                Ok(app::ActorInstance::new(ActorInstance::<C> {
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
    ) -> Result<Vec<wit::Payload>, wit::TaskError> {
        enter();
        self.state.call(&method, args)
    }
}

/// What every export does first: install the panic hook, and drop the refs
/// kept alive for the value the previous export returned (the host has
/// sealed it by now).
fn enter() {
    panic::install_hook();
    crate::refs::flush_deferred();
}
