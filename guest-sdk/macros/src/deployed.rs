//! `wray::deployed!`: typed declarations of another deployed component's
//! remote functions and actor classes, called by their qualified name
//! (`component/function`).
//!
//! ```text
//! wray::deployed! {
//!     /// The `nested` example, deployed beside this component.
//!     pub mod nested = "nested" {
//!         pub fn sub_experiment(i: i64, j: i64) -> i64;
//!         #[wray(num_returns = 2)]
//!         pub fn split(v: Vec<i64>) -> (Vec<i64>, Vec<i64>);
//!         pub actor Counter {
//!             pub fn new(start: i64);
//!             pub fn add(&mut self, k: i64) -> i64;
//!         }
//!     }
//! }
//! ```
//! With `= "name" as json` the calls encode their arguments in JSON and ask
//! for JSON results: how a Rust guest calls a component written in another
//! language (rkyv, the default, is faster between Rust guests).
//!
//! It becomes `mod nested` holding, for each `fn`, the unit struct a
//! `#[wray::remote]` caller gets (`nested::sub_experiment.remote(1, 2)`),
//! and for each `actor`, a class type with `remote`/`remote_with` and its
//! `{Class}Methods` call builders, all submitting to the component named by
//! the string (the host's `submit-to` and `create-actor-of`). Nothing is
//! checked against the other component at build time: a missing function
//! or a wrong argument count is an error object at `get`, as for any call.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{braced, Attribute, Ident, LitStr, Signature, Token, Visibility};

use crate::actor::{creators, method_callers, methods_ident, methods_struct, Method};
use crate::remote::{callers, Caller};
use crate::signature::{parse_wray_attr, Params, Returns};

/// The whole input: one or more component modules.
struct Input(Vec<Component>);

/// `#[attrs] vis mod name = "component" { items }`.
struct Component {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    component: LitStr,
    /// `as json`: calls travel in JSON.
    json: bool,
    items: Vec<Declaration>,
}

enum Declaration {
    /// `#[attrs] vis fn f(..) -> T;`
    Function {
        attrs: Vec<Attribute>,
        vis: Visibility,
        sig: Box<Signature>,
    },
    /// `#[attrs] vis actor Class { fn new(..); fn m(&mut self, ..) -> T; }`
    Actor {
        attrs: Vec<Attribute>,
        vis: Visibility,
        class: Ident,
        members: Vec<(Vec<Attribute>, Visibility, Signature)>,
    },
}

/// A signature ended by `;`.
fn signature(input: ParseStream<'_>) -> syn::Result<Signature> {
    let sig: Signature = input.parse()?;
    if input.peek(syn::token::Brace) {
        return Err(input.error(
            "wray: a deployed component's functions are declared, not defined: end with `;`",
        ));
    }
    input.parse::<Token![;]>()?;
    Ok(sig)
}

impl Parse for Component {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        input.parse::<Token![mod]>()?;
        let name = input.parse()?;
        input.parse::<Token![=]>()?;
        let component = input.parse()?;
        let mut json = false;
        if input.peek(Token![as]) {
            input.parse::<Token![as]>()?;
            let format: Ident = input.parse()?;
            json = match format.to_string().as_str() {
                "json" => true,
                "rkyv" => false,
                _ => {
                    return Err(syn::Error::new_spanned(
                        format,
                        "wray: expected `as json` or `as rkyv`",
                    ))
                }
            };
        }
        let body;
        braced!(body in input);
        let mut items = Vec::new();
        while !body.is_empty() {
            let attrs = body.call(Attribute::parse_outer)?;
            let vis = body.parse()?;
            if body.peek(Token![fn]) {
                let sig = Box::new(signature(&body)?);
                items.push(Declaration::Function { attrs, vis, sig });
                continue;
            }
            let keyword: Ident = body.parse()?;
            if keyword != "actor" {
                return Err(syn::Error::new_spanned(
                    keyword,
                    "wray: expected `fn name(..) -> T;` or `actor Class { .. }`",
                ));
            }
            let class = body.parse()?;
            let members_body;
            braced!(members_body in body);
            let mut members = Vec::new();
            while !members_body.is_empty() {
                let attrs = members_body.call(Attribute::parse_outer)?;
                let vis = members_body.parse()?;
                members.push((attrs, vis, signature(&members_body)?));
            }
            items.push(Declaration::Actor {
                attrs,
                vis,
                class,
                members,
            });
        }
        Ok(Component {
            attrs,
            vis,
            name,
            component,
            json,
            items,
        })
    }
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut components = Vec::new();
        while !input.is_empty() {
            components.push(input.parse()?);
        }
        Ok(Input(components))
    }
}

/// Splits `attrs` into doc comments and `#[wray(num_returns = N)]`'s N
/// (1 when absent); any other attribute is refused.
fn read_attrs(attrs: &[Attribute]) -> syn::Result<(Vec<&Attribute>, usize)> {
    let mut docs = Vec::new();
    let mut num_returns = 1;
    for attr in attrs {
        if attr.path().is_ident("doc") {
            docs.push(attr);
        } else if attr.path().is_ident("wray") {
            parse_wray_attr(attr, &mut num_returns)?;
        } else {
            return Err(syn::Error::new_spanned(
                attr,
                "wray: a declaration takes doc comments and #[wray(num_returns = N)] only",
            ));
        }
    }
    Ok((docs, num_returns))
}

/// Expands `wray::deployed! { .. }`.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let Input(components) = syn::parse2(input)?;
    let mut out = TokenStream::new();
    for c in components {
        let component = c.component.value();
        if component.is_empty() || component.contains('/') {
            return Err(syn::Error::new_spanned(
                &c.component,
                "wray: a component name is not empty and has no `/`",
            ));
        }
        let mut items = Vec::new();
        for item in &c.items {
            items.push(match item {
                Declaration::Function { attrs, vis, sig } => {
                    function(&component, c.json, attrs, vis, sig)?
                }
                Declaration::Actor {
                    attrs,
                    vis,
                    class,
                    members,
                } => actor(&component, c.json, attrs, vis, class, members)?,
            });
        }
        let Component {
            attrs, vis, name, ..
        } = &c;
        out.extend(quote! {
            #(#attrs)*
            #vis mod #name {
                // The declarations' types are the caller's own.
                #[allow(unused_imports)]
                use super::*;

                #(#items)*
            }
        });
    }
    Ok(out)
}

fn function(
    component: &str,
    json: bool,
    attrs: &[Attribute],
    vis: &Visibility,
    sig: &Signature,
) -> syn::Result<TokenStream> {
    let (docs, num_returns) = read_attrs(attrs)?;
    if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first() {
        return Err(syn::Error::new_spanned(
            r,
            "wray: a remote function takes no `self`; declare methods inside `actor Class { .. }`",
        ));
    }
    Ok(callers(&Caller {
        vis,
        name: &sig.ident,
        component: Some(component),
        json,
        docs: &docs,
        params: &Params::of(sig)?,
        returns: &Returns::of(&sig.output, num_returns)?,
    }))
}

fn actor(
    component: &str,
    json: bool,
    attrs: &[Attribute],
    vis: &Visibility,
    class: &Ident,
    members: &[(Vec<Attribute>, Visibility, Signature)],
) -> syn::Result<TokenStream> {
    let (docs, _) = read_attrs(attrs)?;
    let mut constructor = None;
    let mut methods = Vec::new();
    for (attrs, member_vis, sig) in members {
        let (member_docs, num_returns) = read_attrs(attrs)?;
        match sig.inputs.first() {
            Some(syn::FnArg::Receiver(_)) => methods.push(Method {
                name: sig.ident.clone(),
                vis: member_vis.clone(),
                docs: member_docs.into_iter().cloned().collect(),
                params: Params::of(sig)?,
                returns: Returns::of(&sig.output, num_returns)?,
            }),
            _ if sig.ident == "new" => constructor = Some((member_vis, Params::of(sig)?)),
            _ => return Err(syn::Error::new_spanned(
                &sig.ident,
                "wray: an actor declares `fn new(..);` and methods taking `&self` or `&mut self`",
            )),
        }
    }
    let Some((new_vis, new_params)) = constructor else {
        return Err(syn::Error::new_spanned(
            class,
            "wray: declare the actor's constructor, `fn new(..);`",
        ));
    };
    let class_str = class.to_string();
    let methods_type = methods_struct(vis, class);
    let methods_ident = methods_ident(class);
    let creators = creators(new_vis, Some(component), json, &class_str, &new_params);
    let callers = method_callers(class, &methods, json);
    let doc = format!("Actor class `{class_str}` of the deployed component `{component}`.");
    Ok(quote! {
        #(#docs)*
        #[doc = #doc]
        #[derive(Debug)]
        #vis enum #class {}

        impl #class {
            #creators
        }

        impl ::wray::Actor for #class {
            const CLASS: &'static str = #class_str;
            type Methods = #methods_ident;
        }

        #methods_type

        #callers
    })
}
