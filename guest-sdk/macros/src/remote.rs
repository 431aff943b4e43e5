//! `#[wray::remote]`: a remote function.
//!
//! ```text
//! #[wray::remote] fn add(a: i64, b: i64) -> i64 { a + b }
//! ```
//! becomes a unit struct `add` (so `add.remote(1, 2)` reads like Ray's
//! `add.remote(1, 2)`), the body renamed to `__wray_remote_add`, and an impl
//! of `::wray::__private::RemoteFunction` that decodes the arguments, runs
//! the body and encodes its results.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, ItemFn};

use crate::options::{Declared, NAMES};
use crate::signature::{component_tokens, format_tokens, parse_num_returns, Params, Returns};

/// Expands `#[wray::remote(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut num_returns = 1;
    let mut declared = Declared::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("num_returns") {
            num_returns = parse_num_returns(&meta)?;
            Ok(())
        } else if declared.parse(&meta)? {
            Ok(())
        } else {
            Err(meta.error(format!(
                "wray: unknown option; expected num_returns = N, {NAMES}"
            )))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;

    let func: ItemFn = syn::parse2(item)?;
    let params = Params::of(&func.sig)?;
    if let Some(syn::FnArg::Receiver(r)) = func.sig.inputs.first() {
        return Err(syn::Error::new_spanned(
            r,
            "wray: #[wray::remote] is for free functions; mark actor methods with #[wray::actor] on the impl block",
        ));
    }
    let returns = Returns::of(&func.sig.output, num_returns)?;

    let name = &func.sig.ident;
    let name_str = name.to_string();
    let vis = &func.vis;
    let body_name = format_ident!("__wray_remote_{}", name);
    let (docs, other_attrs): (Vec<&Attribute>, Vec<&Attribute>) =
        func.attrs.iter().partition(|a| a.path().is_ident("doc"));

    let mut body_sig = func.sig.clone();
    body_sig.ident = body_name.clone();
    let block = &func.block;

    let idents = params.idents();
    let types = &params.types;
    let output = &func.sig.output;
    let decode_args = params.decode_args(&name_str);
    let encode = returns.encode(&name_str);
    let num_returns = returns.count();
    let declared = declared.to_tokens();
    let param_schemas = params.schemas();
    let return_schemas = returns.schemas();

    let callers = callers(&Caller {
        vis,
        name,
        component: None,
        json: false,
        docs: &docs,
        params: &params,
        returns: &returns,
    });
    Ok(quote! {
        #callers

        #(#other_attrs)*
        #[allow(clippy::too_many_arguments)]
        #body_sig #block

        impl #name {
            /// Calls the function's body in the running task (no new task).
            #[allow(clippy::too_many_arguments, clippy::unused_self)]
            #vis fn local(self, #(#idents: #types),*) #output {
                #body_name(#(#idents),*)
            }
        }

        // A compile error when `wray::export!` does not list the function.
        const _: () = ::wray::__private::exported::<#name>();

        impl ::wray::__private::RemoteFunction for #name {
            const NAME: &'static str = #name_str;
            const NUM_RETURNS: u32 = #num_returns;
            const DECLARED: ::wray::__private::Declared = #declared;
            const PARAMS: &'static [::wray::__private::ParamSchema] = #param_schemas;
            const RETURNS: &'static [::wray::__private::SchemaFn] = #return_schemas;

            #[allow(clippy::let_unit_value, clippy::unit_arg)]
            fn invoke(
                args: ::std::vec::Vec<::wray::__private::Arg>,
                __codec: ::wray::__private::Codec,
            ) -> ::core::result::Result<
                ::std::vec::Vec<::wray::__private::Payload>,
                ::wray::__private::TaskError,
            > {
                #decode_args
                let __out = #body_name(#(#idents),*);
                #encode
            }
        }
    })
}

/// The caller's side of a remote function: what `.remote(..)` needs.
pub struct Caller<'a> {
    pub vis: &'a syn::Visibility,
    pub name: &'a syn::Ident,
    /// The deployed component it belongs to; `None`: the caller's own.
    pub component: Option<&'a str>,
    /// Whether calls encode their arguments in JSON (a component in
    /// another language) rather than rkyv, unless their options say.
    pub json: bool,
    pub docs: &'a [&'a Attribute],
    pub params: &'a Params,
    pub returns: &'a Returns,
}

/// The unit struct `name` with `.remote(args..)` and
/// `.options(o).remote(args..)`, submitting to `component` (the
/// caller's own when `None`). Shared by `#[wray::remote]` and
/// `wray::deployed!`.
pub fn callers(c: &Caller<'_>) -> TokenStream {
    let Caller {
        vis, name, docs, ..
    } = c;
    let name_str = name.to_string();
    let component = component_tokens(c.component);
    let format = format_tokens(c.json);
    let remote_params = c.params.remote_params();
    let encode_args = c.params.encode_args();
    let num_returns = c.returns.count();
    let ref_type = c.returns.ref_type();
    let unpack = c.returns.unpack_refs();
    let with_options = format_ident!("__WrayOptions_{}", name);
    quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;

        impl #name {
            /// Submits a task running this function and returns references
            /// to its results at once. Each argument may be a value, an
            /// `ObjectRef` or an `&ObjectRef` of the parameter's type.
            #[allow(clippy::too_many_arguments, clippy::unused_self)]
            #vis fn remote(self, #remote_params) -> #ref_type {
                let __format = #format;
                let __returns = ::wray::__private::submit(#component, #name_str, #encode_args, #num_returns, __format);
                #unpack
            }

            /// This function with per-call options (Ray's `.options(..)`):
            /// `f.options(wray::Options::new().num_gpus(1.0)).remote(..)`.
            #[allow(clippy::unused_self)]
            #vis fn options(self, options: ::wray::Options) -> #with_options {
                #with_options(options)
            }
        }

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #with_options(::wray::Options);

        impl #with_options {
            /// Submits a task with these options; as `remote` otherwise.
            #[allow(clippy::too_many_arguments)]
            #vis fn remote(self, #remote_params) -> #ref_type {
                let __format = self.0.format_or(#format);
                let __returns = ::wray::__private::submit_with(#component, #name_str, #encode_args, #num_returns, &self.0, __format);
                #unpack
            }
        }
    }
}
