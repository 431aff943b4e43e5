//! The commands that talk to a running node over its HTTP API:
//! `wray deploy`, `wray functions`, `wray undeploy` and `wray call` (and,
//! in `job_cmds`, `wray job`; in `logs_cmd`, `wray logs`). Every command
//! that reaches a node selects it the same way ([`NodeArg`]): `--node
//! DIR|ID` (a node directory under `<tmp>/wray`, or the process id or
//! node id of a `wray start`), `--address URL` (with `WRAY_TOKEN`, and
//! `--cacert` or `WRAY_CACERT` for https: `client_tls`), or by default
//! the latest `wray start`'s (`<tmp>/wray/node_latest`: `node.json`,
//! `token` and, over https, `cert.pem`).
//! Bodies are the API's own types (`wray_api`); names in paths and
//! queries are percent-encoded (`wray_api::encode`), so `--name 'x#y'`
//! deploys `x#y`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use serde::de::DeserializeOwned;
use wray_api::encode;

use crate::node_dir::{self, latest, running_node};

/// Which node a command talks to.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeArg {
    /// The node's URL (default: that of `--node`, else of the latest `wray
    /// start`); its token from `WRAY_TOKEN`, else from `--node`'s
    /// directory.
    #[arg(long, value_name = "URL")]
    address: Option<String>,
    /// A node on this machine: its directory, or the process id or node id
    /// of a `wray start` (default: the latest).
    #[arg(long = "node", value_name = "DIR|ID")]
    node_dir: Option<String>,
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
    /// The node at `url` (`cacert`: the certificate to trust over https).
    pub(crate) fn at(url: String, cacert: Option<PathBuf>) -> Self {
        Self {
            address: Some(url),
            node_dir: None,
            cacert,
        }
    }

    /// The node of directory `dir`.
    pub(crate) fn for_dir(dir: &std::path::Path) -> Self {
        Self {
            node_dir: Some(dir.display().to_string()),
            ..Self::default()
        }
    }

    /// Whether the node is named by `--address` alone (no directory on
    /// this machine given).
    pub(crate) fn address_only(&self) -> Option<&str> {
        self.address.as_deref().filter(|_| self.node_dir.is_none())
    }

    /// The node directory on this machine: `--node`'s, else the one whose
    /// node serves `--address`, else the latest.
    ///
    /// # Errors
    /// `--node` names nothing, or no node here serves `--address`.
    pub(crate) fn local_dir(&self) -> anyhow::Result<PathBuf> {
        match (&self.node_dir, &self.address) {
            (Some(selector), _) => node_dir::resolve(selector),
            (None, Some(url)) => node_dir::find_by_url(url).with_context(|| {
                format!(
                    "no node on this machine serves {url} (under {}): give --node DIR|ID",
                    node_dir::root().display()
                )
            }),
            (None, None) => Ok(latest()),
        }
    }

    /// The client of the node this names.
    ///
    /// # Errors
    /// No node runs there (no `node.json`, or its process is dead), or its
    /// token or certificate cannot be read.
    pub(crate) fn client(&self) -> anyhow::Result<Client> {
        let (url, token, cacert) = match (&self.address, &self.node_dir) {
            (Some(url), None) => (
                url.trim_end_matches('/').to_string(),
                std::env::var("WRAY_TOKEN").ok(),
                self.cacert
                    .clone()
                    .or_else(|| std::env::var_os("WRAY_CACERT").map(PathBuf::from)),
            ),
            (address, _) => {
                let dir = self.local_dir()?;
                let node = running_node(&dir)?;
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
                let url = address
                    .as_deref()
                    .map_or(node.url, |a| a.trim_end_matches('/').to_string());
                (url, token, self.cacert.clone().or(node.cacert))
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
    /// A request of `method` to `path` (from `/`), with the token and
    /// `X-Wray-Request` (which a node without a token asks of a request
    /// that changes state: a web page cannot send it unasked).
    pub(crate) fn request(&self, method: &str, path: &str) -> ureq::Request {
        let r = self
            .agent
            .request(method, &format!("{}{path}", self.url))
            .set("X-Wray-Request", "1");
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

    /// The body of a success as the API type `T`, or an error naming what
    /// the node said.
    pub(crate) fn typed<T: DeserializeOwned>(
        &self,
        result: Result<ureq::Response, ureq::Error>,
    ) -> anyhow::Result<T> {
        let body = self.answer(result)?;
        serde_json::from_str(&body).with_context(|| {
            format!(
                "the node's answer is not a {} (a node of another version?)",
                std::any::type_name::<T>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("value")
            )
        })
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
                let message = serde_json::from_str::<wray_api::ErrorBody>(&body)
                    .map(|e| e.error.message)
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
    print_exports(&mut std::io::stdout().lock(), &version.record)?;
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

/// Deploys `bytes` as `name` and prints a line saying so (a new version,
/// or the kept version with these bytes made current); the node's answer
/// (the version now current).
///
/// # Errors
/// The node cannot be reached, or it refused.
pub(crate) fn upload(
    client: &Client,
    name: &str,
    bytes: &[u8],
) -> anyhow::Result<wray_api::ComponentInfo> {
    let query = wray_api::DeployQuery {
        name: name.to_string(),
    };
    let version: wray_api::ComponentInfo = client.typed(
        client
            .request("POST", &format!("/v1/components{}", query.to_query()))
            .set("Content-Type", "application/wasm")
            .send_bytes(bytes),
    )?;
    let record = &version.record;
    let number = version.version.map_or("?".to_string(), |v| v.to_string());
    if version.new == Some(false) {
        println!(
            "deployed {} version {number} again: the same bytes as that kept version, \
             current now; no new version ({} bytes, sha256 {})",
            record.name, record.size, record.hash
        );
    } else {
        println!(
            "deployed {} version {number} ({} bytes, sha256 {})",
            record.name, record.size, record.hash
        );
    }
    Ok(version)
}

/// One line per export of a component record.
fn print_exports(out: &mut impl Write, record: &wray_api::ComponentRecord) -> std::io::Result<()> {
    use wray_api::ExportKind;
    for f in &record.functions {
        let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        let (kind, name) = match (f.kind, &f.class) {
            (ExportKind::ActorMethod, Some(class)) => ("  method", format!("{class}.{}", f.name)),
            (ExportKind::ActorMethod, None) => ("  method", f.name.clone()),
            (ExportKind::ActorClass, _) => ("actor", f.name.clone()),
            (ExportKind::Function, _) => ("function", f.name.clone()),
        };
        writeln!(out, "  {kind} {name}({})", params.join(", "))?;
    }
    if record.has_main {
        writeln!(out, "  main")?;
    }
    Ok(())
}

/// `wray functions`: the deployed components and their exports, read a
/// page at a time. Output cut short (`| head`) ends it quietly.
///
/// # Errors
/// The node cannot be reached.
pub fn functions(node: NodeArg) -> anyhow::Result<ExitCode> {
    let client = node.client()?;
    match print_functions(&client) {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(ExitCode::SUCCESS)
        }
        other => other,
    }
}

fn print_functions(client: &Client) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let mut query = wray_api::ListQuery {
        limit: Some(wray_api::MAX_LIMIT),
        after: None,
    };
    let mut count = 0usize;
    let mut node_view = false;
    let mut errors = Vec::new();
    loop {
        let page: wray_api::ComponentList = client.typed(
            client
                .request("GET", &format!("/v1/components{}", query.to_query()))
                .call(),
        )?;
        node_view |= page.view == wray_api::View::Node;
        for version in &page.components {
            let record = &version.record;
            writeln!(
                out,
                "{} version {} ({} bytes)",
                record.name,
                version.version.map_or("?".to_string(), |v| v.to_string()),
                record.size
            )?;
            print_exports(&mut out, record)?;
        }
        count = count.saturating_add(page.components.len());
        errors.extend(page.errors);
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    writeln!(out, "{count} components")?;
    // After the table: what the function table holds but could not read.
    for e in &errors {
        writeln!(out, "error: `{}` left out ({}): {}", e.name, e.key, e.error)?;
    }
    if node_view {
        eprintln!(
            "[wray: the control plane is unreachable: this is the node's own view, which may lag deploys made elsewhere]"
        );
    }
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
            .request("DELETE", &format!("/v1/components/{}", encode(&args.name)))
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
    /// Also print the call's task id to stderr (`task ID`): what the
    /// guest wrote is `wray logs ID`.
    #[arg(long)]
    task_id: bool,
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
    let query = wray_api::InvokeQuery {
        timeout: args.timeout,
        asynchronous: None,
    };
    let path = format!(
        "/v1/functions/{}/{}{}",
        encode(component),
        encode(function),
        query.to_query()
    );
    // The arguments and the result pass as text: numbers stay exact.
    let response = client.response(
        client
            .request("POST", &path)
            .set("Content-Type", "application/json")
            .send_string(&args.json),
    )?;
    if args.task_id {
        if let Some(task) = response.header(wray_api::TASK_ID_HEADER) {
            eprintln!("task {task}");
        }
    }
    let body = response.into_string()?;
    println!("{body}");
    Ok(ExitCode::SUCCESS)
}

/// What `client`'s node says of its control plane in `/healthz`: its
/// backend and whether it answers; `None` when it does not answer.
pub(crate) fn control_plane_line(client: &Client) -> Option<String> {
    let health: wray_api::Health = client
        .agent
        .get(&format!("{}/healthz", client.url))
        .timeout(std::time::Duration::from_secs(10))
        .call()
        .ok()?
        .into_json()
        .ok()?;
    let cp = &health.control_plane;
    Some(if cp.reachable {
        format!("{}: reachable", cp.backend)
    } else {
        format!(
            "{}: UNREACHABLE ({}); the node runs what it has, deploys fail",
            cp.backend,
            cp.error.as_deref().unwrap_or("?")
        )
    })
}
