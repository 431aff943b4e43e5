//! `#[wray::main]`: the driver entry point.
//!
//! Keeps the function as written and adds `__wray_main_{name}`, with the WIT
//! `main` signature, which `wray::export! { main: name }` names.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, ItemFn};

/// Expands `#[wray::main] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "wray: #[wray::main] takes no options",
        ));
    }
    let func: ItemFn = syn::parse2(item)?;
    let name = &func.sig.ident;
    let vis = &func.vis;
    let wrapper = format_ident!("__wray_main_{}", name);
    let call = match func.sig.inputs.len() {
        0 => quote! { { let _ = args; #name() } },
        1 if matches!(func.sig.inputs.first(), Some(FnArg::Typed(_))) => quote! { #name(args) },
        _ => {
            return Err(syn::Error::new_spanned(
                &func.sig.inputs,
                "wray: #[wray::main] takes `args: Vec<String>` or nothing",
            ))
        }
    };
    if !func.sig.generics.params.is_empty() || func.sig.asyncness.is_some() {
        return Err(syn::Error::new_spanned(
            &func.sig,
            "wray: #[wray::main] cannot be generic or async",
        ));
    }
    Ok(quote! {
        #func

        #[doc(hidden)]
        #vis fn #wrapper(
            args: ::std::vec::Vec<::std::string::String>,
        ) -> ::core::result::Result<(), ::std::string::String> {
            ::wray::__private::IntoMainResult::into_main_result(#call)
        }
    })
}
