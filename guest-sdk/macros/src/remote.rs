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
use crate::signature::{parse_num_returns, Params, Returns};

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
    let remote_params = params.remote_params();
    let encode_args = params.encode_args();
    let decode_args = params.decode_args(&name_str);
    let ref_type = returns.ref_type();
    let unpack = returns.unpack_refs();
    let encode = returns.encode(&name_str);
    let num_args = params.count();
    let num_returns = returns.count();
    let declared = declared.to_tokens();
    let with_options = format_ident!("__WrayOptions_{}", name);

    Ok(quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;

        #(#other_attrs)*
        #[allow(clippy::too_many_arguments)]
        #body_sig #block

        impl #name {
            /// Submits a task running this function and returns references
            /// to its results at once. Each argument may be a value, an
            /// `ObjectRef` or an `&ObjectRef` of the parameter's type.
            #[allow(clippy::too_many_arguments, clippy::unused_self)]
            #vis fn remote(self, #remote_params) -> #ref_type {
                let __returns = ::wray::__private::submit(#name_str, #encode_args, #num_returns);
                #unpack
            }

            /// This function with per-call options (Ray's `.options(..)`):
            /// `f.options(wray::Options::new().num_gpus(1.0)).remote(..)`.
            #[allow(clippy::unused_self)]
            #vis fn options(self, options: ::wray::Options) -> #with_options {
                #with_options(options)
            }

            /// Calls the function's body in the running task (no new task).
            #[allow(clippy::too_many_arguments, clippy::unused_self)]
            #vis fn local(self, #(#idents: #types),*) #output {
                #body_name(#(#idents),*)
            }
        }

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #with_options(::wray::Options);

        impl #with_options {
            /// Submits a task with these options; as `remote` otherwise.
            #[allow(clippy::too_many_arguments)]
            #vis fn remote(self, #remote_params) -> #ref_type {
                let __returns = ::wray::__private::submit_with(#name_str, #encode_args, #num_returns, &self.0);
                #unpack
            }
        }

        impl ::wray::__private::RemoteFunction for #name {
            const NAME: &'static str = #name_str;
            const NUM_ARGS: u32 = #num_args;
            const NUM_RETURNS: u32 = #num_returns;
            const DECLARED: ::wray::__private::Declared = #declared;

            #[allow(clippy::let_unit_value, clippy::unit_arg)]
            fn invoke(
                args: ::std::vec::Vec<::wray::__private::Arg>,
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
