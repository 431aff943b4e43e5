//! `#[wray::actor]`: an actor class.
//!
//! On the struct `Counter` it adds `CounterMethods` (a typed actor id, what
//! `ActorHandle<Counter>` dereferences to). On `impl Counter` it adds
//! `Counter::remote(..)` (create an actor), the `Actor` and `ActorClass`
//! impls (construct with `new`, dispatch calls by method name), and for each
//! `&self`/`&mut self` method `m` a `CounterMethods::m()` that returns a call
//! builder whose `.remote(args..)` submits the call.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, Ident, ImplItem, ImplItemFn, Item, ItemImpl, ItemStruct, Type};

use crate::options::{Declared, NAMES};
use crate::signature::{
    component_tokens, format_tokens, parse_wray_attr, result_ok_type, Params, Returns,
};

/// Expands `#[wray::actor] item` on a struct or its impl block.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut declared = Declared::default();
    let parser = syn::meta::parser(|meta| {
        if declared.parse(&meta)? {
            Ok(())
        } else {
            Err(meta.error(format!("wray: unknown option; expected {NAMES}")))
        }
    });
    syn::parse::Parser::parse2(parser, attr.clone())?;
    match syn::parse2::<Item>(item)? {
        Item::Struct(s) if attr.is_empty() => expand_struct(s),
        Item::Struct(s) => Err(syn::Error::new_spanned(
            s.ident,
            "wray: put an actor's options on its #[wray::actor] impl block",
        )),
        Item::Impl(i) => expand_impl(i, &declared),
        other => Err(syn::Error::new_spanned(
            other,
            "wray: #[wray::actor] goes on an actor's struct and on its impl block",
        )),
    }
}

/// `Counter` -> `CounterMethods`.
pub fn methods_ident(class: &Ident) -> Ident {
    format_ident!("{}Methods", class)
}

fn expand_struct(s: ItemStruct) -> syn::Result<TokenStream> {
    if !s.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &s.generics,
            "wray: actor classes cannot be generic",
        ));
    }
    let methods = methods_struct(&s.vis, &s.ident);
    Ok(quote! {
        #s

        #methods
    })
}

/// `{Class}Methods`: the typed actor id `ActorHandle<Class>` dereferences to.
pub fn methods_struct(vis: &syn::Visibility, class: &Ident) -> TokenStream {
    let methods = methods_ident(class);
    let doc = format!(
        "The remote methods of actor class `{class}`: what `ActorHandle<{class}>` dereferences to. \
         Each method returns a call builder; its `.remote(args..)` submits the call."
    );
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #vis struct #methods {
            actor: ::wray::ActorId,
        }

        impl ::wray::ActorMethods for #methods {
            fn from_id(id: ::wray::ActorId) -> Self {
                #methods { actor: id }
            }

            fn actor_id(&self) -> ::wray::ActorId {
                self.actor
            }
        }
    }
}

/// One remote method of the class.
pub struct Method {
    pub name: Ident,
    pub vis: syn::Visibility,
    pub docs: Vec<syn::Attribute>,
    pub params: Params,
    pub returns: Returns,
}

/// Reads (and strips) `#[wray(num_returns = N)]` from a method.
fn take_num_returns(f: &mut ImplItemFn) -> syn::Result<usize> {
    let mut num_returns = 1;
    let mut keep = Vec::new();
    for attr in f.attrs.drain(..) {
        if attr.path().is_ident("wray") {
            parse_wray_attr(&attr, &mut num_returns)?;
        } else {
            keep.push(attr);
        }
    }
    f.attrs = keep;
    Ok(num_returns)
}

fn expand_impl(mut imp: ItemImpl, declared: &Declared) -> syn::Result<TokenStream> {
    if imp.trait_.is_some() || !imp.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &imp.self_ty,
            "wray: #[wray::actor] goes on the class's own (non-generic) impl block",
        ));
    }
    let class = match &*imp.self_ty {
        Type::Path(p) => match p.path.segments.last() {
            Some(seg) => seg.ident.clone(),
            None => {
                return Err(syn::Error::new_spanned(
                    &imp.self_ty,
                    "wray: expected a type",
                ))
            }
        },
        other => return Err(syn::Error::new_spanned(other, "wray: expected a type name")),
    };
    let class_str = class.to_string();
    let self_ty = imp.self_ty.clone();

    let mut constructor = None;
    let mut methods = Vec::new();
    for item in &mut imp.items {
        let ImplItem::Fn(f) = item else { continue };
        let num_returns = take_num_returns(f)?;
        match f.sig.inputs.first() {
            Some(FnArg::Receiver(r)) => {
                if r.reference.is_none() {
                    return Err(syn::Error::new_spanned(
                        r,
                        "wray: actor methods take `&self` or `&mut self`",
                    ));
                }
                methods.push(Method {
                    name: f.sig.ident.clone(),
                    vis: f.vis.clone(),
                    docs: f
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("doc"))
                        .cloned()
                        .collect(),
                    params: Params::of(&f.sig)?,
                    returns: Returns::of(&f.sig.output, num_returns)?,
                });
            }
            _ if f.sig.ident == "new" => {
                let params = Params::of(&f.sig)?;
                let fallible = match &f.sig.output {
                    syn::ReturnType::Type(_, ty) => result_ok_type(ty).is_some(),
                    syn::ReturnType::Default => {
                        return Err(syn::Error::new_spanned(
                            &f.sig,
                            "wray: an actor's `new` returns `Self` (or `Result<Self, E>`)",
                        ))
                    }
                };
                constructor = Some((f.vis.clone(), params, fallible));
            }
            _ => {}
        }
    }
    let Some((new_vis, new_params, new_fallible)) = constructor else {
        return Err(syn::Error::new_spanned(
            &imp.self_ty,
            "wray: an actor class needs a constructor `fn new(..) -> Self` in its #[wray::actor] impl block",
        ));
    };

    let methods_struct = methods_ident(&class);
    let new_name = format!("{class}.new");
    let new_decode = new_params.decode_args(&new_name);
    let new_idents = new_params.idents();
    let construct_result = if new_fallible {
        quote! {
            match __out {
                ::core::result::Result::Ok(v) => ::core::result::Result::Ok(v),
                ::core::result::Result::Err(e) => ::core::result::Result::Err(
                    {
                            #[allow(unused_imports)]
                            use ::wray::__private::{ViaDisplay as _, ViaSource as _, ViaWrayError as _};
                            (&&&::wray::__private::ErrorOf(e)).application_error(#new_name)
                        },
                ),
            }
        }
    } else {
        quote! { ::core::result::Result::Ok(__out) }
    };

    let mut infos = Vec::new();
    let mut arms = Vec::new();
    for m in &methods {
        let name = &m.name;
        let name_str = name.to_string();
        let full = format!("{class}.{name}");
        let num_returns = m.returns.count();
        let param_schemas = m.params.schemas();
        let return_schemas = m.returns.schemas();
        infos.push(quote! {
            ::wray::__private::MethodInfo {
                name: #name_str,
                num_returns: #num_returns,
                params: #param_schemas,
                returns: #return_schemas,
            }
        });
        let decode = m.params.decode_args(&full);
        let idents = m.params.idents();
        let encode = m.returns.encode(&full);
        arms.push(quote! {
            #name_str => {
                #decode
                let __out = self.#name(#(#idents),*);
                #encode
            }
        });
    }

    let creators = creators(&new_vis, None, false, &class_str, &new_params);
    let callers = method_callers(&class, &methods, false);
    let declared = declared.to_tokens();
    let new_schemas = new_params.schemas();
    Ok(quote! {
        #imp

        impl #self_ty {
            #creators
        }

        impl ::wray::Actor for #self_ty {
            const CLASS: &'static str = #class_str;
            type Methods = #methods_struct;
        }

        // A compile error when `wray::export!` does not list the class.
        const _: () = ::wray::__private::exported::<#self_ty>();

        impl ::wray::__private::ActorClass for #self_ty {
            const METHODS: &'static [::wray::__private::MethodInfo] = &[#(#infos),*];
            const DECLARED: ::wray::__private::Declared = #declared;
            const PARAMS: &'static [::wray::__private::ParamSchema] = #new_schemas;

            fn construct(
                args: ::std::vec::Vec<::wray::__private::Arg>,
            ) -> ::core::result::Result<Self, ::wray::__private::TaskError> {
                #new_decode
                let __out = <#self_ty>::new(#(#new_idents),*);
                #construct_result
            }

            #[allow(unused_variables, clippy::let_unit_value, clippy::unit_arg)]
            fn dispatch(
                &mut self,
                method: &str,
                args: ::std::vec::Vec<::wray::__private::Arg>,
                __codec: ::wray::__private::Codec,
            ) -> ::core::result::Result<
                ::std::vec::Vec<::wray::__private::Payload>,
                ::wray::__private::TaskError,
            > {
                match method {
                    #(#arms)*
                    _ => ::core::result::Result::Err(
                        ::wray::__private::unknown_method(#class_str, method),
                    ),
                }
            }
        }

        #callers
    })
}

/// `Class::remote(args..)` and `Class::remote_with(options, args..)`:
/// create an actor of `class` of `component` (the caller's own when
/// `None`). Shared by `#[wray::actor]` and `wray::deployed!`.
pub fn creators(
    new_vis: &syn::Visibility,
    component: Option<&str>,
    json: bool,
    class_str: &str,
    new_params: &Params,
) -> TokenStream {
    let component = component_tokens(component);
    let format = format_tokens(json);
    let new_remote_params = new_params.remote_params();
    let new_encode_args = new_params.encode_args();
    quote! {
            /// Creates an actor of this class with per-actor options
            /// (resources held for its lifetime, limits of each call):
            /// `Class::remote_with(wray::Options::new().num_gpus(1.0), args..)`.
            #[allow(clippy::too_many_arguments)]
            #new_vis fn remote_with(__options: ::wray::Options, #new_remote_params) -> ::wray::ActorHandle<Self> {
                let __format = __options.format_or(#format);
                ::wray::__private::create_actor_with::<Self>(#component, #class_str, #new_encode_args, &__options, __format)
            }

            /// Creates an actor of this class, running `new` with these
            /// arguments as its first task, and returns its handle at once.
            /// Each argument may be a value, an `ObjectRef` or an
            /// `&ObjectRef` of the parameter's type.
            #[allow(clippy::too_many_arguments)]
            #new_vis fn remote(#new_remote_params) -> ::wray::ActorHandle<Self> {
                let __format = #format;
                ::wray::__private::create_actor::<Self>(#component, #class_str, #new_encode_args, __format)
            }
    }
}

/// One call builder per method of `class` (`.remote(args..)` submits the
/// call) and the accessors on `{Class}Methods` that return them.
pub fn method_callers(class: &Ident, methods: &[Method], json: bool) -> TokenStream {
    let methods_struct = methods_ident(class);
    let format = format_tokens(json);
    let mut builders = Vec::new();
    let mut accessors = Vec::new();
    for m in methods {
        let name = &m.name;
        let name_str = name.to_string();
        let full = format!("{class}.{name}");
        let num_returns = m.returns.count();
        let builder = format_ident!("__WrayCall_{}_{}", class, name);
        let remote_params = m.params.remote_params();
        let encode_args = m.params.encode_args();
        let ref_type = m.returns.ref_type();
        let unpack = m.returns.unpack_refs();
        let builder_doc = format!("A pending call of `{full}`; `.remote(args..)` submits it.");
        builders.push(quote! {
            #[doc = #builder_doc]
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            #[derive(Clone, Debug)]
            pub struct #builder {
                actor: ::wray::ActorId,
                options: ::core::option::Option<::wray::Options>,
            }

            impl #builder {
                /// This call with per-call options (Ray's
                /// `actor.method.options(..).remote(..)`): limits of this
                /// call, its codec. Resources are the actor's own.
                #[must_use]
                pub fn options(mut self, options: ::wray::Options) -> Self {
                    self.options = ::core::option::Option::Some(options);
                    self
                }

                /// Submits the call and returns references to its results at
                /// once. Each argument may be a value, an `ObjectRef` or an
                /// `&ObjectRef` of the parameter's type.
                #[allow(clippy::too_many_arguments)]
                pub fn remote(self, #remote_params) -> #ref_type {
                    let __format = match &self.options {
                        ::core::option::Option::Some(o) => o.format_or(#format),
                        ::core::option::Option::None => #format,
                    };
                    let __returns = ::wray::__private::call_actor(
                        self.actor,
                        #name_str,
                        #encode_args,
                        #num_returns,
                        self.options.as_ref(),
                        __format,
                    );
                    #unpack
                }
            }
        });
        let vis = &m.vis;
        let docs = &m.docs;
        accessors.push(quote! {
            #(#docs)*
            #vis fn #name(&self) -> #builder {
                #builder {
                    actor: ::wray::ActorMethods::actor_id(self),
                    options: ::core::option::Option::None,
                }
            }
        });
    }
    quote! {
        #(#builders)*

        impl #methods_struct {
            #(#accessors)*
        }
    }
}
