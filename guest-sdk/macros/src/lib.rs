//! Procedural macros of the wray guest SDK. Use them through the `wray`
//! crate (`#[wray::remote]`, `#[wray::actor]`, `#[wray::main]`,
//! `#[wray::value]`, `wray::export!`), whose documentation describes what
//! they generate; the code they emit names only `::wray::...` paths.
//!
//! - `remote.rs`: a remote function becomes a unit struct with `.remote(..)`
//!   and `.local(..)` plus a `RemoteFunction` impl (name, shape, `invoke`).
//! - `actor.rs`: on a struct, the `{Class}Methods` struct; on the `impl`
//!   block, construction, dispatch by method name, `Class::remote(..)` and one
//!   call builder per method.
//! - `main_fn.rs`: a `#[wray::main]` function gets a wrapper with the WIT
//!   `main` signature.
//! - `deployed.rs`: `wray::deployed!`, typed declarations of another
//!   deployed component's functions and actor classes (qualified calls).
//! - `export.rs`: the component's table and wit-bindgen's export macro.
//! - `value.rs`: rkyv derives pointed at `::wray::rkyv`.
//! - `signature.rs`: parameters and return shapes shared by the above.

use proc_macro::TokenStream;

mod actor;
mod deployed;
mod export;
mod main_fn;
mod options;
mod remote;
mod signature;
mod value;

/// Makes a function remote: `f.remote(args..)` submits a task and returns
/// `ObjectRef`s at once, `f.local(args..)` calls the body in place.
/// Options: `#[wray::remote(num_returns = N)]` for a function returning an
/// `N`-tuple (or `Result` of one).
#[proc_macro_attribute]
pub fn remote(attr: TokenStream, item: TokenStream) -> TokenStream {
    remote::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Marks an actor class: put it on the struct and on its `impl` block (the
/// constructor is the associated fn `new`; every `&self` / `&mut self` method
/// is a remote method; `#[wray(num_returns = N)]` on a method sets its number
/// of return objects).
#[proc_macro_attribute]
pub fn actor(attr: TokenStream, item: TokenStream) -> TokenStream {
    actor::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Marks the driver entry point: `fn main(args: Vec<String>)` (or no
/// arguments) returning `()` or `Result<(), E: Display>`.
#[proc_macro_attribute]
pub fn main(attr: TokenStream, item: TokenStream) -> TokenStream {
    main_fn::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives rkyv's `Archive`, `Serialize` and `Deserialize` through the
/// `wray::rkyv` re-export, so a type can be a task's argument or result
/// without a direct rkyv dependency.
#[proc_macro_attribute]
pub fn value(attr: TokenStream, item: TokenStream) -> TokenStream {
    value::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares another deployed component's remote functions and actor
/// classes, typed, to call them by qualified name:
/// `wray::deployed! { pub mod other = "other" { pub fn f(x: i64) -> i64; pub actor A { fn new(); fn m(&self) -> i64; } } }`
/// gives `other::f.remote(1)` and `other::A::remote()` (see the `wray`
/// crate's docs).
#[proc_macro]
pub fn deployed(input: TokenStream) -> TokenStream {
    deployed::expand(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Exports the component: `wray::export! { main: f, functions: [..], actors: [..] }`
/// (every key optional, once per component).
#[proc_macro]
pub fn export(input: TokenStream) -> TokenStream {
    export::expand(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
