//! Parameters and return shapes of remote functions and actor methods, and
//! the code that encodes, decodes and submits them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, PathArguments, ReturnType, Signature, Type};

/// The typed parameters of a function, without its receiver.
pub struct Params {
    /// One type per parameter, in order.
    pub types: Vec<Type>,
    /// Their names (`arg{i}` where the pattern is not a plain name).
    pub names: Vec<String>,
}

impl Params {
    /// Reads `sig`'s parameters, rejecting what cannot travel in a task.
    pub fn of(sig: &Signature) -> syn::Result<Self> {
        if !sig.generics.params.is_empty() {
            return Err(syn::Error::new(
                sig.generics.span(),
                "wray: remote functions and actor methods cannot be generic",
            ));
        }
        if let Some(a) = &sig.asyncness {
            return Err(syn::Error::new(
                a.span(),
                "wray: remote functions and actor methods cannot be async",
            ));
        }
        let mut types = Vec::new();
        let mut names = Vec::new();
        for input in &sig.inputs {
            if let FnArg::Typed(pat) = input {
                names.push(match &*pat.pat {
                    syn::Pat::Ident(p) => p.ident.to_string().trim_start_matches('_').to_string(),
                    _ => format!("arg{}", names.len()),
                });
                match &*pat.ty {
                    Type::Reference(r) => {
                        return Err(syn::Error::new(
                            r.span(),
                            "wray: task arguments are passed by value; take an owned type (e.g. `String`, `Vec<T>`)",
                        ))
                    }
                    Type::ImplTrait(t) => {
                        return Err(syn::Error::new(
                            t.span(),
                            "wray: task arguments need a concrete type",
                        ))
                    }
                    ty => types.push(ty.clone()),
                }
            }
        }
        Ok(Params { types, names })
    }

    /// `__arg0, __arg1, ..`
    pub fn idents(&self) -> Vec<Ident> {
        (0..self.types.len())
            .map(|i| format_ident!("__arg{}", i))
            .collect()
    }

    /// `__arg0: impl ::wray::IntoArg<T0>, ..`
    pub fn remote_params(&self) -> TokenStream {
        let idents = self.idents();
        let types = &self.types;
        quote! { #(#idents: impl ::wray::IntoArg<#types>),* }
    }

    /// `vec![::wray::IntoArg::<T0>::into_arg(__arg0, __format), ..]`: the
    /// arguments encoded in `__format` (a `::wray::Format` in scope).
    pub fn encode_args(&self) -> TokenStream {
        let idents = self.idents();
        let types = &self.types;
        quote! { ::std::vec![#(::wray::IntoArg::<#types>::into_arg(#idents, __format)),*] }
    }

    /// `&[ParamSchema { name, schema }, ..]`: what `describe` reports.
    pub fn schemas(&self) -> TokenStream {
        let names = &self.names;
        let types = &self.types;
        quote! {
            &[#(::wray::__private::ParamSchema {
                name: #names,
                schema: ::wray::__private::schema_of::<#types>,
            }),*]
        }
    }

    /// Reads every argument from `args` into `__arg0..` inside a task.
    pub fn decode_args(&self, function: &str) -> TokenStream {
        let idents = self.idents();
        let types = &self.types;
        let n = self.types.len();
        if n == 0 {
            return quote! {
                ::wray::__private::ArgReader::new(#function, args, 0)?;
            };
        }
        quote! {
            let mut __reader = ::wray::__private::ArgReader::new(#function, args, #n)?;
            #(let #idents: #types = __reader.arg()?;)*
        }
    }
}

/// What a function returns, seen as task results.
pub struct Returns {
    /// Whether the declared type is a `Result` (its `Err` fails the task).
    pub fallible: bool,
    /// The type of each return object.
    pub items: Vec<Type>,
    /// Whether the value is a `Vec<T>` spread over `items.len()` objects
    /// (`num_returns = N` on a function returning `Vec<T>`): the caller gets
    /// a `Vec<ObjectRef<T>>`, and a vector of another length fails the task.
    pub spread: bool,
}

impl Returns {
    /// Reads `output` as `num_returns` objects.
    pub fn of(output: &ReturnType, num_returns: usize) -> syn::Result<Self> {
        let declared: Type = match output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let (value, fallible) = match result_ok_type(&declared) {
            Some(ok) => (ok, true),
            None => (declared, false),
        };
        if num_returns == 1 {
            return Ok(Returns {
                fallible,
                items: vec![value],
                spread: false,
            });
        }
        match &value {
            Type::Tuple(t) if t.elems.len() == num_returns => Ok(Returns {
                fallible,
                items: t.elems.iter().cloned().collect(),
                spread: false,
            }),
            other => match vec_item_type(other) {
                Some(item) => Ok(Returns { fallible, items: vec![item; num_returns], spread: true }),
                None => Err(syn::Error::new(
                    other.span(),
                    format!("wray: num_returns = {num_returns} needs a tuple of {num_returns} elements or a `Vec<T>` of that length (or a Result of one)"),
                )),
            },
        }
    }

    /// The number of return objects, as the `u32` describe reports.
    pub fn count(&self) -> u32 {
        u32::try_from(self.items.len()).unwrap_or(u32::MAX)
    }

    /// `&[schema_of::<T0>, ..]`: each return object's schema.
    pub fn schemas(&self) -> TokenStream {
        let types = &self.items;
        quote! {
            &[#(::wray::__private::schema_of::<#types> as ::wray::__private::SchemaFn),*]
        }
    }

    /// `ObjectRef<T>`, a tuple of refs, or a `Vec` of them (spread).
    pub fn ref_type(&self) -> TokenStream {
        if self.spread {
            let item = &self.items[0];
            return quote! { ::std::vec::Vec<::wray::ObjectRef<#item>> };
        }
        let refs = self.items.iter().map(|t| quote! { ::wray::ObjectRef<#t> });
        if self.items.len() == 1 {
            quote! { #(#refs)* }
        } else {
            quote! { (#(#refs),*) }
        }
    }

    /// Typed refs out of `__returns` (a `::wray::__private::Returns`).
    pub fn unpack_refs(&self) -> TokenStream {
        if self.spread {
            let item = &self.items[0];
            let n = self.items.len();
            return quote! {
                (0..#n).map(|__i| __returns.nth::<#item>(__i)).collect::<::std::vec::Vec<_>>()
            };
        }
        let nth = (0..self.items.len()).map(|i| quote! { __returns.nth(#i) });
        if self.items.len() == 1 {
            quote! { #(#nth)* }
        } else {
            quote! { (#(#nth),*) }
        }
    }

    /// Turns `__out` (the function's return value) into the task's result,
    /// encoded in `__codec` (a `::wray::__private::Codec` in scope).
    pub fn encode(&self, function: &str) -> TokenStream {
        let unwrap = if self.fallible {
            quote! {
                let __out = match __out {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(e) => {
                        return ::core::result::Result::Err(
                            {
                            #[allow(unused_imports)]
                            use ::wray::__private::{ViaDisplay as _, ViaSource as _, ViaWrayError as _};
                            (&&&::wray::__private::ErrorOf(e)).application_error(#function)
                        },
                        )
                    }
                };
            }
        } else {
            quote! {}
        };
        let n = self.items.len();
        let encode = if self.spread {
            quote! {
                if __out.len() != #n {
                    return ::core::result::Result::Err(
                        ::wray::__private::return_count_error(#function, #n, __out.len()),
                    );
                }
                let mut __payloads = ::std::vec::Vec::with_capacity(#n);
                for (__i, __v) in __out.iter().enumerate() {
                    __payloads.push(::wray::__private::encode_return(#function, __i, __v, __codec)?);
                }
                ::core::result::Result::Ok(__payloads)
            }
        } else if n == 1 {
            quote! {
                ::core::result::Result::Ok(::std::vec![
                    ::wray::__private::encode_return(#function, 0, &__out, __codec)?
                ])
            }
        } else {
            let parts: Vec<Ident> = (0..self.items.len())
                .map(|i| format_ident!("__r{}", i))
                .collect();
            let index = 0..self.items.len();
            quote! {
                let (#(#parts),*) = __out;
                ::core::result::Result::Ok(::std::vec![
                    #(::wray::__private::encode_return(#function, #index, &#parts, __codec)?),*
                ])
            }
        };
        quote! { #unwrap #encode }
    }
}

/// `T` when `ty` is a path whose last segment is `Result<T, ..>`.
pub fn result_ok_type(ty: &Type) -> Option<Type> {
    first_type_argument(ty, "Result")
}

/// `T` when `ty` is a path whose last segment is `Vec<T>`.
fn vec_item_type(ty: &Type) -> Option<Type> {
    first_type_argument(ty, "Vec")
}

/// The first type argument of `ty` when it is a path whose last segment
/// is `name<..>`.
fn first_type_argument(ty: &Type, name: &str) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// Parses `num_returns = N` from the arguments of an attribute.
pub fn parse_num_returns(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<usize> {
    let lit: syn::LitInt = meta.value()?.parse()?;
    let n: usize = lit.base10_parse()?;
    if n == 0 {
        return Err(syn::Error::new(
            lit.span(),
            "wray: num_returns must be at least 1",
        ));
    }
    Ok(n)
}

/// `Some("component")` or `None`: the component a generated call names
/// (`None`: the caller's own).
pub fn component_tokens(component: Option<&str>) -> TokenStream {
    match component {
        Some(component) => quote! { ::core::option::Option::Some(#component) },
        None => quote! { ::core::option::Option::None },
    }
}

/// `::wray::Format::Json` or `::wray::Format::Rkyv`: the format a
/// generated call encodes its arguments in unless its options say.
pub fn format_tokens(json: bool) -> TokenStream {
    if json {
        quote! { ::wray::Format::Json }
    } else {
        quote! { ::wray::Format::Rkyv }
    }
}

/// Reads `#[wray(num_returns = N)]` into `num_returns`.
///
/// # Errors
/// Any other option inside `#[wray(..)]`, or a bad `N`.
pub fn parse_wray_attr(attr: &syn::Attribute, num_returns: &mut usize) -> syn::Result<()> {
    attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("num_returns") {
            *num_returns = parse_num_returns(&meta)?;
            Ok(())
        } else {
            Err(meta.error("wray: unknown option; expected `num_returns = N`"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn returns(ty: Type, n: usize) -> syn::Result<Returns> {
        Returns::of(&ReturnType::Type(Default::default(), Box::new(ty)), n)
    }

    #[test]
    fn a_vec_with_num_returns_is_spread_over_that_many_objects() {
        let r = returns(syn::parse_quote!(Vec<u64>), 3).expect("a Vec of 3");
        assert!(r.spread && !r.fallible);
        assert_eq!(r.count(), 3);
        assert!(r.items.iter().all(|t| quote!(#t).to_string() == "u64"));
        assert!(r.ref_type().to_string().contains("Vec"));

        let r = returns(syn::parse_quote!(Result<Vec<String>, String>), 2).expect("fallible");
        assert!(r.spread && r.fallible);
        assert_eq!(r.count(), 2);
    }

    #[test]
    fn one_return_keeps_a_vec_whole_and_other_shapes_are_refused() {
        let r = returns(syn::parse_quote!(Vec<u64>), 1).expect("one Vec");
        assert!(!r.spread);
        assert_eq!(r.count(), 1);
        let r = returns(syn::parse_quote!((u64, String)), 2).expect("a pair");
        assert!(!r.spread);
        assert!(returns(syn::parse_quote!(u64), 2).is_err());
        assert!(returns(syn::parse_quote!((u64, u64)), 3).is_err());
    }
}
