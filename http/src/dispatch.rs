//! The routes' dispatch ([`dispatch`]): one arm per route, answering it
//! on this node (the token check, the in-flight bound and relaying to
//! other nodes are the callers': `handlers`, `relay`).

use bytes::Bytes;
use hyper::{Request, StatusCode};
use wray_host::Node;

use crate::body::{body_response, json, read_body, Answer};
use crate::error::ApiError;
use crate::query::Query;
use crate::routes::Route;
use crate::state::State;
use wray_api::ErrorCode;

/// Answers `req`, matched to `r`, here (relaying is the caller's:
/// `relay`).
pub(crate) async fn dispatch<B>(state: &State, r: Route<'_>, req: Request<B>) -> Answer
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let query = Query::parse(req.uri().query().unwrap_or(""), &r)?;
    let node = &state.node;
    let limit = state.config.max_body;
    let timeout = state.config.body_timeout;
    match r {
        Route::Healthz => {
            let (backend, health) = node.control_plane_health().await;
            json(
                StatusCode::OK,
                &wray_api::Health {
                    status: if health.is_ok() { "ok" } else { "degraded" }.to_string(),
                    node_id: node.id().to_string(),
                    control_plane: wray_api::ControlPlaneHealth {
                        backend,
                        reachable: health.is_ok(),
                        error: health.err().map(|e| e.to_string()),
                    },
                },
            )
        }
        Route::Metrics => {
            let store = node.object_store_stats();
            let mut text = state.metrics.render(
                &node.instantiation_histogram(),
                &node.task_counts(),
                &state.jobs.counts(),
                state
                    .config
                    .max_inflight
                    .saturating_sub(state.inflight.available_permits()),
                state.kept.len(),
                u64::try_from(store.bytes).unwrap_or(u64::MAX),
            );
            crate::metrics::write_bounds(
                &mut text,
                &crate::metrics::Bounds {
                    components: node.component_usage(),
                    compiles: node.compile_stats(),
                    guest_memory: node.guest_memory(),
                    inline_bytes: store.inline_bytes,
                    spilled: store.spilled,
                    arena: (store.arena_resident_bytes, store.arena_punched_bytes),
                    actors: node.actor_counts(),
                },
            );
            crate::metrics::write_cluster(&mut text, &node.cluster_stats());
            Ok(body_response(
                StatusCode::OK,
                "text/plain; version=0.0.4",
                Bytes::from(text),
            ))
        }
        Route::OpenApi => json(StatusCode::OK, &crate::openapi::document()),
        Route::ListComponents => crate::listings::components(state, &query).await,
        Route::Deploy => crate::listings::deploy(state, query, req).await,
        Route::GetComponent(name) => crate::listings::component(state, &name).await,
        Route::Undeploy(name) => crate::listings::undeploy(state, &name).await,
        Route::ComponentOpenApi(name) => crate::listings::component_openapi(state, &name),
        Route::Invoke(component, function) => {
            let body = read_body(req, limit, timeout).await?;
            crate::calls::invoke(state, &component, &function, &query, &body).await
        }
        Route::GetObject(id) => crate::calls::get_object(state, &id, &query, req.headers()).await,
        Route::ListActors => {
            // Its actors that another node named, by name.
            node.learn_actor_names().await;
            json(
                StatusCode::OK,
                &crate::listings::actors(state, &query, &listing_window(&query)?),
            )
        }
        Route::CreateActor => {
            let body = read_body(req, limit, timeout).await?;
            crate::calls::create_actor(state, &body).await
        }
        Route::CallActor(id, method) => {
            let body = read_body(req, limit, timeout).await?;
            crate::calls::call_actor(state, &id, &method, &query, &body).await
        }
        Route::KillActor(id) => crate::calls::kill_actor(state, &id),
        Route::Nodes => json(StatusCode::OK, &node.nodes()),
        Route::Resources => json(StatusCode::OK, &crate::gather::resources(state)),
        Route::Tasks => json(
            StatusCode::OK,
            &crate::listings::tasks(state, &query, &listing_window(&query)?),
        ),
        Route::Objects => json(
            StatusCode::OK,
            &crate::listings::objects(state, &query, &listing_window(&query)?),
        ),
        Route::Errors => json(
            StatusCode::OK,
            &crate::listings::errors(state, &query, &listing_window(&query)?),
        ),
        Route::Timeline => {
            if let Some(other) = query.node.as_deref().filter(|n| *n != node.id()) {
                return Err(crate::rows::unknown_node(other));
            }
            json(StatusCode::OK, &node.timeline(query.limit))
        }
        Route::Logs => crate::node_logs::local(state, &query).await,
        Route::ListJobs => json(
            StatusCode::OK,
            &crate::listings::jobs(state, &query, &listing_window(&query)?),
        ),
        Route::SubmitJob => {
            let body = read_body(req, limit, timeout).await?;
            let info = crate::jobs::submit(&state.jobs, node.clone(), &body).await?;
            json(StatusCode::CREATED, &info)
        }
        Route::GetJob(id) => {
            let info = state.jobs.info(crate::jobs::parse_job(&id)?);
            json(StatusCode::OK, &info.map_err(crate::jobs::job_error)?)
        }
        Route::DeleteJob(id) => {
            state
                .jobs
                .delete(crate::jobs::parse_job(&id)?)
                .map_err(crate::jobs::job_error)?;
            json(
                StatusCode::OK,
                &wray_api::JobDeleted {
                    deleted: id.into_owned(),
                },
            )
        }
        Route::StopJob(id) => {
            let stopped = state.jobs.stop(crate::jobs::parse_job(&id)?);
            json(
                StatusCode::OK,
                &wray_api::JobStopped {
                    stopped: stopped.map_err(crate::jobs::job_error)?,
                },
            )
        }
        Route::JobLogs(id) => crate::jobs::logs(&state.jobs, &id, query.offset, query.follow),
        Route::GetTask(id) => json(StatusCode::OK, &crate::listings::task(state, &id)?),
        Route::TaskLogs(id) => task_logs(node, &id),
        Route::Versions(name) => json(StatusCode::OK, &crate::versions::kept(node, &name).await?),
        Route::UploadPackage => {
            // Bounded by what the node keeps of one package.
            let limit = usize::try_from(node.config().max_working_dir_bytes).unwrap_or(usize::MAX);
            let body = read_body(req, limit, timeout).await?;
            crate::packages::upload(node, body).await
        }
        Route::GetPackage(id) => crate::packages::get(node, &id),
        Route::Rollback(name) => json(
            StatusCode::OK,
            &crate::wire::version(&crate::versions::rollback(node, &name, query.version).await?),
        ),
    }
}

/// The page a listing's `query` asks for.
///
/// # Errors
/// 400 `bad_query` for a cursor that is not one.
fn listing_window(query: &Query) -> Result<crate::rows::Window, ApiError> {
    crate::rows::window(query.order, query.after.as_deref(), query.limit)
}

/// `GET /v1/tasks/{id}/logs`: what the task wrote, as the node keeps it
/// ([`wray_host::task_output`]).
fn task_logs(node: &Node, id: &str) -> Answer {
    let task: wray_host::TaskId = crate::error::parse_id(id)?;
    let wray_host::Stdio::Capture(outputs) = &node.config().stdio else {
        return Err(ApiError::not_found(
            ErrorCode::NoTaskLogs,
            "this node keeps no task output: its guests write to its own stdout and stderr",
        ));
    };
    let output = outputs.get(task).ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::UnknownTaskLogs,
            format!(
                "no output of task {task} is kept: it wrote nothing, it ran in a job with a log \
                 of its own (GET /v1/jobs/{{id}}/logs), or its output was dropped for newer \
                 tasks' (the node keeps the last {} tasks' and {} MiB)",
                wray_host::bounds::MAX_TASK_OUTPUTS,
                wray_host::bounds::MAX_TASK_OUTPUTS_BYTES >> 20
            ),
        )
    })?;
    json(StatusCode::OK, &output)
}
