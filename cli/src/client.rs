//! The commands that talk to a running node over its HTTP API:
//! `wray deploy`, `wray functions`, `wray undeploy` and `wray call` (and,
//! in `job_cmds`, `wray job`). They find the node in
//! `<tmp>/wray/node_latest` (`node.json`, `token` and, over https,
//! `cert.pem`), or at `--address` with `WRAY_TOKEN` (and `--cacert` or
//! `WRAY_CACERT` for https: `client_tls`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;

use crate::node_cmds::{latest, read_node_file};

/// Where the node is.
#[derive(Args)]
pub struct NodeArg {
    /// The node's URL (default: the latest `wray start`'s); its token from
    /// `WRAY_TOKEN`.
    #[arg(long, value_name = "URL")]
    address: Option<String>,
    /// With `--address` at https: trust this certificate (PEM) instead of
    /// the public roots (default: `WRAY_CACERT`).
    #[arg(long, value_name = "FILE", requires = "address")]
    cacert: Option<PathBuf>,
}

/// A node's URL and token.
pub(crate) struct Client {
    pub(crate) url: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl NodeArg {
    /// The client of the node this names.
    ///
    /// # Errors
    /// No node runs (no `node.json`), or its token or certificate cannot be
    /// read.
    pub(crate) fn client(&self) -> anyhow::Result<Client> {
        let (url, token, cacert) = match &self.address {
            Some(url) => (
                url.trim_end_matches('/').to_string(),
                std::env::var("WRAY_TOKEN").ok(),
                self.cacert
                    .clone()
                    .or_else(|| std::env::var_os("WRAY_CACERT").map(PathBuf::from)),
            ),
            None => {
                let dir = latest();
                let node = read_node_file(&dir)?;
                let token = if node.auth {
                    let path = dir.join("token");
                    Some(
                        std::fs::read_to_string(&path)
                            .with_context(|| format!("reading the token {}", path.display()))?
                            .trim()
                            .to_string(),
                    )
                } else {
                    None
                };
                (node.url, token, node.cacert)
            }
        };
        Ok(Client {
            url,
            token,
            agent: crate::client_tls::agent_builder(cacert.as_deref())?.build(),
        })
    }
}

impl Client {
    /// A request of `method` to `path` (from `/`), with the token.
    pub(crate) fn request(&self, method: &str, path: &str) -> ureq::Request {
        let r = self.agent.request(method, &format!("{}{path}", self.url));
        match &self.token {
            Some(t) => r.set("Authorization", &format!("Bearer {t}")),
            None => r,
        }
    }

    /// The body of a success, or an error naming what the node said.
    pub(crate) fn answer(
        &self,
        result: Result<ureq::Response, ureq::Error>,
    ) -> anyhow::Result<String> {
        Ok(self.response(result)?.into_string()?)
    }

    /// A success's response, or an error naming what the node said.
    pub(crate) fn response(
        &self,
        result: Result<ureq::Response, ureq::Error>,
    ) -> anyhow::Result<ureq::Response> {
        match result {
            Ok(r) => Ok(r),
            Err(ureq::Error::Status(code, r)) => {
                let body = r.into_string().unwrap_or_default();
                let message = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                    .unwrap_or(body);
                bail!("the node answered {code}: {message}")
            }
            Err(e) => bail!("cannot reach the node at {}: {e}", self.url),
        }
    }
}

/// Arguments of `wray deploy`.
#[derive(Args)]
pub struct DeployArgs {
    /// The component (`.wasm`).
    #[arg(required_unless_present = "rollback")]
    component: Option<PathBuf>,
    /// The name to deploy it under (default: the file stem).
    #[arg(long, conflicts_with = "rollback")]
    name: Option<String>,
    /// Instead of deploying, make kept version VERSION of component NAME
    /// current again (`--rollback app@3`): calls by its name run that
    /// version from now on, on every node following the function table.
    #[arg(long, value_name = "NAME@VERSION", conflicts_with = "component")]
    rollback: Option<String>,
    #[command(flatten)]
    node: NodeArg,
}

/// `wray deploy`: uploads a component; prints its name, version, digest
/// and exports. With `--rollback`, makes a kept version current again.
///
/// # Errors
/// The file cannot be read, the node cannot be reached, or it refused.
pub fn deploy(args: DeployArgs) -> anyhow::Result<ExitCode> {
    if let Some(spec) = &args.rollback {
        return rollback(&args.node.client()?, spec);
    }
    let Some(component) = &args.component else {
        bail!("give a component (.wasm) to deploy, or --rollback NAME@VERSION");
    };
    let bytes =
        std::fs::read(component).with_context(|| format!("reading {}", component.display()))?;
    let name = match args.name {
        Some(n) => n,
        None => component
            .file_stem()
            .and_then(|s| s.to_str())
            .context("the file has no name to deploy it under: give --name")?
            .to_string(),
    };
    let client = args.node.client()?;
    let version = upload(&client, &name, &bytes)?;
    print_exports(&version["record"]);
    Ok(ExitCode::SUCCESS)
}

/// `wray deploy --rollback NAME@VERSION`: makes that kept version current
/// again and says so.
///
/// # Errors
/// `spec` is not `NAME@VERSION`; the node cannot be reached, or refused
/// (a version it does not keep: the message names those it keeps).
fn rollback(client: &Client, spec: &str) -> anyhow::Result<ExitCode> {
    let (name, version) = match wray_host::split_version(spec)? {
        (name, Some(version)) => (name, version),
        (_, None) => bail!("--rollback {spec}: name the version, as NAME@VERSION (`app@3`)"),
    };
    let body = client.answer(
        client
            .request(
                "POST",
                &format!("/v1/components/{name}/rollback?version={version}"),
            )
            .send_string(""),
    )?;
    let current: wray_host::ComponentVersion =
        serde_json::from_str(&body).context("reading the node's answer")?;
    println!(
        "{name} is at version {} again (sha256 {})",
        current.version, current.record.hash
    );
    Ok(ExitCode::SUCCESS)
}

/// Deploys `bytes` as `name` and prints a line saying so; the node's
/// answer (the component's version).
///
/// # Errors
/// The node cannot be reached, or it refused.
pub(crate) fn upload(
    client: &Client,
    name: &str,
    bytes: &[u8],
) -> anyhow::Result<serde_json::Value> {
    let body = client.answer(
        client
            .request("POST", &format!("/v1/components?name={name}"))
            .set("Content-Type", "application/wasm")
            .send_bytes(bytes),
    )?;
    let version: serde_json::Value = serde_json::from_str(&body)?;
    let record = &version["record"];
    println!(
        "deployed {} version {} ({} bytes, sha256 {})",
        record["name"].as_str().unwrap_or(name),
        version["version"],
        record["size"],
        record["hash"].as_str().unwrap_or("?")
    );
    Ok(version)
}

/// One line per export of a component record.
fn print_exports(record: &serde_json::Value) {
    for f in record["functions"].as_array().into_iter().flatten() {
        let params: Vec<&str> = f["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        let name = match (f["kind"].as_str(), f["class"].as_str()) {
            (Some("ActorMethod"), Some(class)) => {
                format!("{class}.{}", f["name"].as_str().unwrap_or("?"))
            }
            _ => f["name"].as_str().unwrap_or("?").to_string(),
        };
        let kind = match f["kind"].as_str() {
            Some("Function") => "function",
            Some("ActorClass") => "actor",
            Some("ActorMethod") => "  method",
            _ => "?",
        };
        println!("  {kind} {name}({})", params.join(", "));
    }
    if record["has_main"] == true {
        println!("  main");
    }
}

/// `wray functions`: the deployed components and their exports.
///
/// # Errors
/// The node cannot be reached.
pub fn functions(node: NodeArg) -> anyhow::Result<ExitCode> {
    let client = node.client()?;
    let body = client.answer(client.request("GET", "/v1/components").call())?;
    let list: Vec<serde_json::Value> = serde_json::from_str(&body)?;
    for version in &list {
        let record = &version["record"];
        println!(
            "{} version {} ({} bytes)",
            record["name"].as_str().unwrap_or("?"),
            version["version"],
            record["size"]
        );
        print_exports(record);
    }
    println!("{} components", list.len());
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `wray undeploy`.
#[derive(Args)]
pub struct UndeployArgs {
    /// The component's name.
    name: String,
    #[command(flatten)]
    node: NodeArg,
}

/// `wray undeploy`.
///
/// # Errors
/// The node cannot be reached, or has no such component.
pub fn undeploy(args: UndeployArgs) -> anyhow::Result<ExitCode> {
    let client = args.node.client()?;
    client.answer(
        client
            .request("DELETE", &format!("/v1/components/{}", args.name))
            .call(),
    )?;
    println!("undeployed {}", args.name);
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `wray call`.
#[derive(Args)]
pub struct CallArgs {
    /// `component/function` (`app@3/add` calls kept version 3).
    target: String,
    /// The arguments, as a JSON array.
    #[arg(long, default_value = "[]")]
    json: String,
    /// Seconds to wait for the result.
    #[arg(long)]
    timeout: Option<f64>,
    #[command(flatten)]
    node: NodeArg,
}

/// `wray call`: calls a function and prints its JSON result.
///
/// # Errors
/// A malformed target, the node cannot be reached, or the call failed.
pub fn call(args: CallArgs) -> anyhow::Result<ExitCode> {
    let Some((component, function)) = args.target.split_once('/') else {
        bail!("`{}`: name the function as component/function", args.target);
    };
    let client = args.node.client()?;
    let mut path = format!("/v1/functions/{component}/{function}");
    if let Some(t) = args.timeout {
        path.push_str(&format!("?timeout={t}"));
    }
    let body = client.answer(
        client
            .request("POST", &path)
            .set("Content-Type", "application/json")
            .send_string(&args.json),
    )?;
    println!("{body}");
    Ok(ExitCode::SUCCESS)
}

/// What the running node (`wray start`'s latest) says of its control plane
/// in `/healthz`: its backend and whether it answers; `None` when no node
/// runs or it does not answer.
pub fn control_plane_line() -> Option<String> {
    let node = read_node_file(&latest()).ok()?;
    let agent = crate::client_tls::agent_builder(node.cacert.as_deref())
        .ok()?
        .timeout(std::time::Duration::from_secs(10))
        .build();
    let health: serde_json::Value = agent
        .get(&format!("{}/healthz", node.url))
        .call()
        .ok()?
        .into_json()
        .ok()?;
    let cp = &health["control_plane"];
    let backend = cp["backend"].as_str().unwrap_or("?");
    Some(if cp["reachable"] == true {
        format!("{backend}: reachable")
    } else {
        format!(
            "{backend}: UNREACHABLE ({}); the node runs what it has, deploys fail",
            cp["error"].as_str().unwrap_or("?")
        )
    })
}
