//! `wray::export!`: the component's table of exports.
//!
//! ```text
//! wray::export! { main: main, functions: [add, split], actors: [Counter] }
//! ```
//! with, optionally, `init: f` and `reinit: g`: hooks (`fn() -> Result<(),
//! String>`) for instances that reusable functions (`#[wray::remote(reuse)]`)
//! run on.
//! builds a `::wray::__private::Component` impl listing them and hands
//! `::wray::__private::Exports<that>` to the export macros of the WIT parts
//! the component has (`functions` and `metadata` for functions, `actors`
//! and `metadata` for actors, `driver` for `main`, `lifecycle` for hooks),
//! each emitting its exports and its component-type custom section: the
//! component exports nothing it lacks.
//!
//! Each listed item is marked `Exported` (a trait the SDK defines), and
//! `#[wray::remote]` and `#[wray::actor]` require the mark of what they
//! define: one left out of the list is a compile error naming it, not a
//! `not-found` at run time.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, Ident, Path, Token};

/// The parsed `key: value` list.
struct Spec {
    main: Option<Path>,
    init: Option<Path>,
    reinit: Option<Path>,
    functions: Vec<Path>,
    actors: Vec<Path>,
}

impl Parse for Spec {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut spec = Spec {
            main: None,
            init: None,
            reinit: None,
            functions: Vec::new(),
            actors: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![:]>()?;
            let key_str = key.to_string();
            if seen.contains(&key_str) {
                return Err(syn::Error::new(
                    key.span(),
                    format!("wray: `{key}` given twice"),
                ));
            }
            match key_str.as_str() {
                "main" => spec.main = Some(input.parse()?),
                "init" => spec.init = Some(input.parse()?),
                "reinit" => spec.reinit = Some(input.parse()?),
                "functions" => spec.functions = paths(input)?,
                "actors" => spec.actors = paths(input)?,
                _ => {
                    return Err(syn::Error::new(
                        key.span(),
                        "wray: expected `main`, `init`, `reinit`, `functions` or `actors`",
                    ))
                }
            }
            seen.push(key_str);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(spec)
    }
}

/// `[a, b, c]`
fn paths(input: ParseStream<'_>) -> syn::Result<Vec<Path>> {
    let content;
    bracketed!(content in input);
    let list = Punctuated::<Path, Token![,]>::parse_terminated(&content)?;
    Ok(list.into_iter().collect())
}

/// Expands `wray::export! { .. }`.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let spec: Spec = syn::parse2(input)?;
    let functions = &spec.functions;
    let actors = &spec.actors;
    let has_main = spec.main.is_some();
    let main = match spec.main {
        Some(mut path) => {
            let Some(last) = path.segments.last_mut() else {
                return Err(syn::Error::new_spanned(path, "wray: expected a function"));
            };
            last.ident = format_ident!("__wray_main_{}", last.ident);
            quote! { ::core::option::Option::Some(#path as ::wray::__private::MainFn) }
        }
        None => quote! { ::core::option::Option::None },
    };
    let hook = |p: &Option<Path>| match p {
        Some(p) => quote! { ::core::option::Option::Some(#p as ::wray::__private::HookFn) },
        None => quote! { ::core::option::Option::None },
    };
    let (init, reinit) = (hook(&spec.init), hook(&spec.reinit));
    if spec.functions.is_empty() && spec.actors.is_empty() && !has_main {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "wray: export! lists nothing: give `functions: [..]`, `actors: [..]` or `main: f`",
        ));
    }
    let has = |yes: bool, part: &str| {
        let mac = format_ident!("__export_{}", part);
        let module = format_ident!("part_{}", part);
        if yes {
            quote! { ::wray::__private::bindings::#module::#mac!(__WrayExports); }
        } else {
            quote! {}
        }
    };
    let metadata = has(!functions.is_empty() || !actors.is_empty(), "metadata");
    let functions_part = has(!functions.is_empty(), "functions");
    let actors_part = has(!actors.is_empty(), "actors");
    let driver = has(has_main, "driver");
    let lifecycle = has(spec.init.is_some() || spec.reinit.is_some(), "lifecycle");
    Ok(quote! {
        #(impl ::wray::__private::Exported for #functions {})*
        #(impl ::wray::__private::Exported for #actors {})*

        const _: () = {
            struct __WrayComponent;

            impl ::wray::__private::Component for __WrayComponent {
                const FUNCTIONS: &'static [::wray::__private::FunctionEntry] = &[
                    #(::wray::__private::FunctionEntry::of::<#functions>()),*
                ];
                const ACTORS: &'static [::wray::__private::ActorEntry] = &[
                    #(::wray::__private::ActorEntry::of::<#actors>()),*
                ];
                const MAIN: ::core::option::Option<::wray::__private::MainFn> = #main;
                const INIT: ::core::option::Option<::wray::__private::HookFn> = #init;
                const REINIT: ::core::option::Option<::wray::__private::HookFn> = #reinit;
            }

            type __WrayExports = ::wray::__private::Exports<__WrayComponent>;
            #metadata
            #functions_part
            #actors_part
            #driver
            #lifecycle
        };
    })
}
