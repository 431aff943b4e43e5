//! `#[wray::value]`: rkyv's, serde's and schemars' derives, through
//! `::wray::rkyv`, `::wray::serde` and `::wray::schemars`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Item;

/// Expands `#[wray::value] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "wray: #[wray::value] takes no options",
        ));
    }
    let item: Item = syn::parse2(item)?;
    match &item {
        Item::Struct(_) | Item::Enum(_) => Ok(quote! {
            #[derive(
                ::wray::rkyv::Archive,
                ::wray::rkyv::Serialize,
                ::wray::rkyv::Deserialize,
                ::wray::serde::Serialize,
                ::wray::serde::Deserialize,
                ::wray::schemars::JsonSchema
            )]
            #[rkyv(crate = ::wray::rkyv)]
            #[serde(crate = "::wray::serde")]
            #[schemars(crate = "::wray::schemars")]
            #item
        }),
        other => Err(syn::Error::new_spanned(
            other,
            "wray: #[wray::value] goes on a struct or an enum",
        )),
    }
}
