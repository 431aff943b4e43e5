//! The resource and limit options shared by `#[wray::remote(..)]` and
//! `#[wray::actor(..)]`: `num_cpus`, `num_gpus`, `memory`, `resources =
//! {"name": qty, ..}`, `max_memory`, `timeout_ms`, `fuel`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::{braced, LitStr, Token};

/// What an attribute declared.
#[derive(Default)]
pub struct Declared {
    num_cpus: Option<f64>,
    num_gpus: Option<f64>,
    memory: Option<u64>,
    resources: Vec<(String, f64)>,
    max_memory: Option<u64>,
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    reuse: bool,
}

/// The option names, for error messages.
pub const NAMES: &str =
    "num_cpus, num_gpus, memory, resources = {\"name\": qty}, max_memory, timeout_ms, fuel, reuse";

/// A number literal (integer or float) as `f64`.
fn number(input: syn::parse::ParseStream<'_>) -> syn::Result<f64> {
    let lit: syn::Lit = input.parse()?;
    match &lit {
        syn::Lit::Int(i) => i.base10_parse::<f64>(),
        syn::Lit::Float(f) => f.base10_parse::<f64>(),
        _ => Err(syn::Error::new_spanned(lit, "wray: expected a number")),
    }
}

/// A non-negative integer: a literal or a constant expression such as
/// `1 << 26` (evaluated where it is used).
fn integer(meta: &ParseNestedMeta<'_>) -> syn::Result<u64> {
    let expr: syn::Expr = meta.value()?.parse()?;
    eval(&expr).ok_or_else(|| {
        syn::Error::new_spanned(
            &expr,
            "wray: expected a non-negative integer (a literal, `a << b`, `a * b`)",
        )
    })
}

fn eval(expr: &syn::Expr) -> Option<u64> {
    match expr {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse().ok(),
            _ => None,
        },
        syn::Expr::Paren(p) => eval(&p.expr),
        syn::Expr::Binary(b) => {
            let (l, r) = (eval(&b.left)?, eval(&b.right)?);
            match b.op {
                syn::BinOp::Shl(_) => l.checked_shl(u32::try_from(r).ok()?),
                syn::BinOp::Mul(_) => l.checked_mul(r),
                syn::BinOp::Add(_) => l.checked_add(r),
                _ => None,
            }
        }
        _ => None,
    }
}

impl Declared {
    /// Takes `meta` if it is one of the options; false otherwise.
    pub fn parse(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
        let p = &meta.path;
        if p.is_ident("num_cpus") {
            self.num_cpus = Some(number(meta.value()?)?);
        } else if p.is_ident("num_gpus") {
            self.num_gpus = Some(number(meta.value()?)?);
        } else if p.is_ident("memory") {
            self.memory = Some(integer(meta)?);
        } else if p.is_ident("max_memory") {
            self.max_memory = Some(integer(meta)?);
        } else if p.is_ident("timeout_ms") {
            self.timeout_ms = Some(integer(meta)?);
        } else if p.is_ident("fuel") {
            self.fuel = Some(integer(meta)?);
        } else if p.is_ident("reuse") {
            self.reuse = true;
        } else if p.is_ident("resources") {
            let input = meta.value()?;
            let content;
            braced!(content in input);
            while !content.is_empty() {
                let name: LitStr = content.parse()?;
                content.parse::<Token![:]>()?;
                let qty = number(&content)?;
                self.resources.push((name.value(), qty));
                if content.is_empty() {
                    break;
                }
                content.parse::<Token![,]>()?;
            }
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// `::wray::__private::Declared { .. }`
    pub fn to_tokens(&self) -> TokenStream {
        fn opt<T: quote::ToTokens>(v: &Option<T>) -> TokenStream {
            match v {
                Some(v) => quote! { ::core::option::Option::Some(#v) },
                None => quote! { ::core::option::Option::None },
            }
        }
        let (cpus, gpus) = (opt(&self.num_cpus), opt(&self.num_gpus));
        let (memory, max_memory) = (opt(&self.memory), opt(&self.max_memory));
        let (timeout, fuel) = (opt(&self.timeout_ms), opt(&self.fuel));
        let reuse = self.reuse;
        let names = self.resources.iter().map(|(n, _)| n);
        let qtys = self.resources.iter().map(|(_, q)| q);
        quote! {
            ::wray::__private::Declared {
                num_cpus: #cpus,
                num_gpus: #gpus,
                memory: #memory,
                resources: &[#((#names, #qtys)),*],
                max_memory: #max_memory,
                timeout_ms: #timeout,
                fuel: #fuel,
                reuse: #reuse,
            }
        }
    }
}
