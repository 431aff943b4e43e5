//! `wray describe app.wasm [--json]`: what a component exports, as its
//! `describe` reports it and the node reads it: the parts of the world it
//! exports, its SDK, and each remote function, actor class and method with
//! its parameters' and returns' JSON Schemas.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use wray_host::{Node, NodeConfig};

/// `wray describe`'s arguments.
#[derive(Args)]
pub struct DescribeArgs {
    /// The component (`.wasm`).
    component: PathBuf,
    /// Print the function-table record as JSON (schemas included whole).
    #[arg(long)]
    json: bool,
}

/// Loads the component on a one-CPU embedded node and prints its record.
///
/// # Errors
/// The node cannot start, or the file is not a wray component (the error
/// names what is missing).
pub fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    let config = NodeConfig {
        num_cpus: 1,
        ..NodeConfig::default()
    };
    let node = Node::start(config)?;
    let record = node
        .deploy_file_blocking(&args.component)
        .with_context(|| format!("describing {}", args.component.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
        return Ok(());
    }
    let sdk = if record.sdk.is_empty() {
        "unsaid"
    } else {
        &record.sdk
    };
    println!(
        "component {} ({} bytes, sdk {sdk})",
        record.name, record.size
    );
    println!("  hash {}", record.hash);
    println!("  main: {}", if record.has_main { "yes" } else { "no" });
    for f in &record.functions {
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.schema))
            .collect();
        let name = match &f.class {
            Some(class) if class != &f.name => format!("{class}.{}", f.name),
            _ => f.name.clone(),
        };
        let kind = match f.kind {
            wray_host::FunctionKind::Function => "function",
            wray_host::FunctionKind::ActorClass => "actor",
            wray_host::FunctionKind::ActorMethod => "method",
        };
        println!(
            "  {kind} {name}({}) -> [{}]",
            params.join(", "),
            f.returns.join(", ")
        );
    }
    Ok(())
}
