//! The `wasmtime serve` yardstick of `bench/http`.
//!
//! `wasmtime serve` (wasmtime-cli 48) takes 10 to 30 minutes to build here, so this is
//! the part of it that serves a request, on the same library code: wasmtime-wasi-http
//! 48.0.8's [`ProxyHandler`], which `src/commands/serve.rs` of wasmtime 48 drives.
//! What it keeps of `wasmtime serve -S cli COMPONENT`:
//!
//! - the engine: `Config::new()`, the component model, and the pooling allocator with
//!   `PoolingAllocationConfig::default()` when the 42-bit address-space probe of
//!   `use_pooling_allocator_by_default` passes (as it does on x86-64 Linux);
//! - the linker: all of WASI p2 (`-S cli`) and `wasi:http`, async;
//! - per instance: a new `Store` with a `WasiCtx` (env `INSTANCE_ID`, stdout and stderr
//!   to this process's), a `WasiHttpCtx`, a `ResourceTable` and `StoreLimits`;
//! - instance reuse as `--max-instance-reuse-count N` (default 1: a fresh instance per
//!   request), one request at a time per instance (p2), and an idle instance dropped
//!   after `--idle-instance-timeout` (1 s);
//! - the server: hyper HTTP/1.1 with keep-alive, `TCP_NODELAY`, a listen backlog of
//!   100, at most 1000 connections and 1000 requests in flight (semaphores), a tokio
//!   multi-threaded runtime.
//!
//! Left out (nothing on the request path of a trivial guest): the compile cache,
//! epoch interruption (no `--wasm timeout`), profiling, the debugger, header
//! rewriting, graceful shutdown (SIGTERM ends it), wasi-nn/config/keyvalue, and the
//! default outgoing-request client (outgoing requests are refused).
//!
//! ```text
//! wray-http-yardstick COMPONENT [--addr 127.0.0.1:8080] [--max-instance-reuse-count N]
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full};
use hyper::server::conn::http1;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, GuestTaskId, Linker, ResourceTable};
use wasmtime::error::Context as _;
use wasmtime::{bail, Config, Engine, Result, Store, StoreContextMut, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::handler::{
    HandlerState, Instance, ProxyHandler, ProxyPre, ShouldAccept, WorkerExpiration, WorkerState,
    WorkerStatus,
};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{
    Result as HttpResult, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

/// `wasmtime serve`'s defaults for a p2 component.
const DEFAULT_MAX_INSTANCE_REUSE_COUNT: usize = 1;
const MAX_CONCURRENT_CONNECTIONS: usize = 1000;
const MAX_CONCURRENT_REQUESTS: usize = 1000;
const IDLE_INSTANCE_TIMEOUT: Duration = Duration::from_secs(1);

struct Options {
    component: std::path::PathBuf,
    addr: SocketAddr,
    max_instance_reuse_count: usize,
}

fn parse_args() -> Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut component = None;
    let mut addr: SocketAddr = "127.0.0.1:8080".parse()?;
    let mut reuse = DEFAULT_MAX_INSTANCE_REUSE_COUNT;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().context("--addr needs a value")?.parse()?,
            "--max-instance-reuse-count" => {
                reuse = args
                    .next()
                    .context("--max-instance-reuse-count needs a value")?
                    .parse()?;
                if reuse == 0 {
                    bail!("--max-instance-reuse-count must be at least 1");
                }
            }
            "-h" | "--help" => {
                println!(
                    "wray-http-yardstick COMPONENT [--addr 127.0.0.1:8080] [--max-instance-reuse-count N]"
                );
                std::process::exit(0);
            }
            _ if component.is_none() && !arg.starts_with('-') => component = Some(arg.into()),
            _ => bail!("unexpected argument `{arg}` (see --help)"),
        }
    }
    Ok(Options {
        component: component.context("give the wasi:http component to serve")?,
        addr,
        max_instance_reuse_count: reuse,
    })
}

/// The hooks of `wasmtime serve` but for outgoing requests, which are refused (the
/// trivial guest makes none).
struct Hooks;

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: Box<dyn Future<Output = HttpResult<()>> + Send>,
    ) -> Box<
        dyn Future<
                Output = HttpResult<(
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = HttpResult<()>> + Send>,
                )>,
            > + Send,
    > {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}

struct Host {
    table: ResourceTable,
    ctx: WasiCtx,
    http: WasiHttpCtx,
    hooks: Hooks,
    limits: StoreLimits,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for Host {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

fn new_store(engine: &Engine, instance_id: u64) -> Store<Host> {
    let mut builder = WasiCtxBuilder::new();
    builder.env("INSTANCE_ID", instance_id.to_string());
    builder.inherit_stdout().inherit_stderr();
    let mut store = Store::new(
        engine,
        Host {
            table: ResourceTable::new(),
            ctx: builder.build(),
            http: WasiHttpCtx::new(),
            hooks: Hooks,
            limits: StoreLimits::default(),
        },
    );
    store.limiter(|host| &mut host.limits);
    store
}

/// As `wasmtime serve`'s `HostWorkerExpiration`: an idle instance goes after the idle
/// timeout; requests have no time limit (no `--wasm timeout`).
struct Expiration {
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl WorkerExpiration for Expiration {
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        status: WorkerStatus,
        start: Instant,
    ) -> Poll<()> {
        let timeout = match status {
            WorkerStatus::Idle => IDLE_INSTANCE_TIMEOUT,
            WorkerStatus::Requests | WorkerStatus::PostReturn => Duration::MAX,
        };
        match start.checked_add(timeout) {
            Some(deadline) => {
                let deadline = deadline.into();
                if deadline != self.sleep.deadline() {
                    self.sleep.as_mut().reset(deadline);
                }
                self.sleep.as_mut().poll(cx)
            }
            None => Poll::Pending,
        }
    }
}

/// As `wasmtime serve`'s `HostWorkerState` for a p2 component.
struct Worker {
    max_instance_reuse_count: usize,
}

impl WorkerState for Worker {
    type StoreData = Host;
    type RequestData = u64;

    fn should_accept_request(&self, concurrent_count: usize, total_count: usize) -> ShouldAccept {
        if total_count >= self.max_instance_reuse_count {
            ShouldAccept::Never
        } else if concurrent_count >= 1 {
            ShouldAccept::No
        } else {
            ShouldAccept::Yes
        }
    }

    fn on_request_start(
        &self,
        _store: StoreContextMut<'_, Host>,
        _request_id: u64,
        _task: GuestTaskId,
    ) -> Pin<Box<dyn Future<Output = ()> + 'static + Send + Sync>> {
        Box::pin(std::future::pending())
    }

    fn drop(&self, store: Store<Host>, result: Result<()>) {
        if let Err(error) = result {
            eprintln!("worker failed: {error:?}");
        }
        drop(store);
    }
}

struct Server {
    engine: Engine,
    pre: ProxyPre<Host>,
    max_instance_reuse_count: usize,
    next_instance_id: AtomicU64,
    next_request_id: AtomicU64,
    sem_requests: Semaphore,
}

impl HandlerState for Server {
    type StoreData = Host;
    type WorkerExpiration = Expiration;
    type WorkerState = Worker;

    async fn instantiate(&self) -> Result<Instance<Host, Expiration, Worker>> {
        let id = self.next_instance_id.fetch_add(1, Ordering::Relaxed);
        let mut store = new_store(&self.engine, id);
        let proxy = self.pre.instantiate_async(&mut store).await?;
        Ok(Instance {
            store,
            proxy,
            view: WasiHttpView::http,
            expiration: Expiration {
                sleep: Box::pin(tokio::time::sleep(Duration::MAX)),
            },
            state: Worker {
                max_instance_reuse_count: self.max_instance_reuse_count,
            },
        })
    }
}

/// `use_pooling_allocator_by_default` of `wasmtime serve`: pooling when 42 bits of
/// address space can be reserved.
fn pooling_fits() -> bool {
    use wasmtime::{Memory, MemoryType};
    const BITS_TO_TEST: u32 = 42;
    let mut config = Config::new();
    config.wasm_memory64(true);
    config.memory_reservation(1 << BITS_TO_TEST);
    let Ok(engine) = Engine::new(&config) else {
        return false;
    };
    let mut store = Store::new(&engine, ());
    let ty = MemoryType::new64(0, Some(1 << (BITS_TO_TEST - 16)));
    Memory::new(&mut store, ty).is_ok()
}

async fn handle(
    handler: &ProxyHandler<Server>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<WasiBody>> {
    let _permit = handler.state().sem_requests.acquire().await?;
    let id = handler
        .state()
        .next_request_id
        .fetch_add(1, Ordering::Relaxed);
    let req = req.map(|body| body.map_err(Into::into).boxed_unsync());
    handler.handle(id, req).await
}

async fn serve_client(stream: tokio::net::TcpStream, handler: ProxyHandler<Server>) {
    let service = hyper::service::service_fn(move |req| {
        let handler = handler.clone();
        async move {
            match handle(&handler, req).await {
                Ok(response) => Ok::<_, Infallible>(response),
                Err(e) => {
                    eprintln!("error: {e:?}");
                    Ok(hyper::Response::builder()
                        .status(500)
                        .body(
                            Full::new(bytes::Bytes::from_static(b"500 Internal Server Error"))
                                .map_err(|_| unreachable!())
                                .boxed_unsync(),
                        )
                        .expect("a static response"))
                }
            }
        }
    });
    if let Err(e) = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await
    {
        eprintln!("error: {e:?}");
    }
}

async fn serve(options: Options) -> Result<()> {
    let mut config = Config::new();
    let pooling = pooling_fits();
    if pooling {
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(
            wasmtime::PoolingAllocationConfig::default(),
        ));
    }
    config.wasm_component_model(true);
    let engine = Engine::new(&config)?;
    let mut linker = Linker::<Host>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    let component = Component::from_file(&engine, &options.component)
        .with_context(|| format!("cannot load {}", options.component.display()))?;
    let pre = linker.instantiate_pre(&component)?;
    let pre = ProxyPre::P2(wasmtime_wasi_http::p2::bindings::ProxyPre::new(pre)?);

    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(options.addr)?;
    let listener = socket.listen(100)?;
    eprintln!(
        "Serving HTTP on http://{}/ (pooling allocator: {pooling}, max instance reuse count: {})",
        listener.local_addr()?,
        options.max_instance_reuse_count
    );

    let handler = ProxyHandler::new(Server {
        engine,
        pre,
        max_instance_reuse_count: options.max_instance_reuse_count,
        next_instance_id: AtomicU64::new(0),
        next_request_id: AtomicU64::new(0),
        sem_requests: Semaphore::new(MAX_CONCURRENT_REQUESTS),
    });
    let connections = Arc::new(Semaphore::new(MAX_CONCURRENT_CONNECTIONS));
    loop {
        let permit = connections.clone().acquire_owned().await?;
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let handler = handler.clone();
        tokio::spawn(async move {
            serve_client(stream, handler).await;
            drop(permit);
        });
    }
}

fn main() -> Result<()> {
    let options = parse_args()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .enable_io()
        .build()?
        .block_on(serve(options))
}
