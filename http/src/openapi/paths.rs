//! One `#[utoipa::path]` per row of [`ROUTES`](crate::routes::ROUTES):
//! its parameters, request body and answers, in the API's own types
//! ([`wray_api`]). The functions are never called; their attributes are
//! the document. The errors every route shares (401, other 4xx, 503) and
//! the summaries (from the route table) are added by
//! [`super::document`]. A unit test checks that the document and the
//! route table name the same routes.

#![allow(dead_code)]

use wray_api::{
    Accepted, ActorInfo, ActorList, ClusterListQuery, ComponentInfo, ComponentList, DeployQuery,
    ErrorBody, ErrorList, Health, InvokeQuery, JobDeleted, JobFilter, JobInfo, JobList,
    JobLogsQuery, JobStopped, Killed, ListQuery, LocalQuery, LogsQuery, NewActor, NodeInfo,
    NodeLogs, ObjectList, ObjectQuery, PackageInfo, Resources, SubmitJob, TaskList, TaskLogs,
    TimelineQuery, Undeployed, VersionList,
};

#[utoipa::path(get, path = "/healthz", responses((status = 200, body = Health)))]
fn healthz() {}

#[utoipa::path(get, path = "/metrics", responses(
    (status = 200, description = "Prometheus text exposition format 0.0.4", body = String, content_type = "text/plain")
))]
fn metrics() {}

#[utoipa::path(get, path = "/v1/openapi.json", responses(
    (status = 200, description = "this OpenAPI 3.1 document", body = serde_json::Value)
))]
fn openapi() {}

#[utoipa::path(get, path = "/v1/components", params(ListQuery), responses(
    (status = 200, description = "a page of components; `Wray-View: node` when it is the node's own view (the control plane is unreachable)", body = ComponentList),
))]
fn list_components() {}

#[utoipa::path(post, path = "/v1/components", params(DeployQuery),
    request_body(content = [u8], description = "the component's bytes", content_type = "application/wasm"),
    responses(
        (status = 201, description = "deployed: its new version (`new: true`)", body = ComponentInfo),
        (status = 200, description = "the bytes are those of a kept version of the name (same content digest): that version is current now, with its own number; nothing new (`new: false`)", body = ComponentInfo),
        (status = 400, description = "`invalid_component` (not a wray component, a schema that does not compile), `bad_name`, `no_name`", body = ErrorBody),
        (status = 413, description = "`body_too_large`: past the node's `max_component`", body = ErrorBody),
    ))]
fn deploy() {}

#[utoipa::path(get, path = "/v1/components/{name}",
    params(("name" = String, Path, description = "the component's name (percent-encoded)")),
    responses(
        (status = 200, description = "its current version; `Wray-View: node` when it is the node's own view", body = ComponentInfo),
        (status = 404, description = "`unknown_component`", body = ErrorBody),
    ))]
fn get_component() {}

#[utoipa::path(delete, path = "/v1/components/{name}",
    params(("name" = String, Path, description = "the component's name (percent-encoded)")),
    responses(
        (status = 200, body = Undeployed),
        (status = 404, description = "`unknown_component`", body = ErrorBody),
    ))]
fn undeploy() {}

#[utoipa::path(get, path = "/v1/components/{name}/openapi.json",
    params(("name" = String, Path, description = "the component's name (percent-encoded)")),
    responses(
        (status = 200, description = "an OpenAPI 3.1 document of the component's functions: a path each, its request body the JSON Schemas of its parameters, its answer the schema of its result", body = serde_json::Value),
        (status = 404, description = "`unknown_component`", body = ErrorBody),
    ))]
fn component_openapi() {}

#[utoipa::path(post, path = "/v1/functions/{component}/{function}",
    params(
        ("component" = String, Path, description = "the component's name (percent-encoded): `name` for its current version, `name@N` for a kept version N"),
        ("function" = String, Path, description = "the function's name"),
        InvokeQuery,
    ),
    request_body(content = Vec<serde_json::Value>, description = "the JSON array of the arguments (an empty body is `[]`); each is passed as written", content_type = "application/json"),
    responses(
        (status = 200, description = "the result as JSON (several results: an array of them), or one raw result as `application/octet-stream`", content(
            (serde_json::Value = "application/json"),
            ([u8] = "application/octet-stream"),
        )),
        (status = 202, description = "with `async`: the ids of the results", body = Accepted),
        (status = 400, description = "`bad_json`, `wrong_argument_count`, or `task_failed` with kind `invalid-argument` (an argument does not match its schema)", body = ErrorBody),
        (status = 404, description = "`unknown_component`, `unknown_function`", body = ErrorBody),
        (status = 406, description = "`not_json`: the result is neither JSON nor one raw value", body = ErrorBody),
        (status = 409, description = "`task_failed`: cancelled", body = ErrorBody),
        (status = 413, description = "`body_too_large`", body = ErrorBody),
        (status = 422, description = "`task_failed`: infeasible (resources the node does not have)", body = ErrorBody),
        (status = 500, description = "`task_failed`: the guest failed (application error, panic, trap, out of memory)", body = ErrorBody),
        (status = 504, description = "`task_failed`: timeout", body = ErrorBody),
        (status = 507, description = "`result_too_large`: past the node's `max_response`; call with `async` and read the objects", body = ErrorBody),
    ))]
fn invoke() {}

#[utoipa::path(get, path = "/v1/objects/{id}",
    params(("id" = String, Path, description = "an object id (40 hex digits) from a 202, or a ref inside a value read"), ObjectQuery),
    responses(
        (status = 200, description = "the value, read once (refs inside it can then be read in turn)", content(
            (serde_json::Value = "application/json"),
            ([u8] = "application/octet-stream"),
        )),
        (status = 404, description = "`unknown_object`: no such object, or read already", body = ErrorBody),
        (status = 406, description = "`not_raw`, `not_json`: not what `Accept` asks (the object stays readable)", body = ErrorBody),
        (status = 504, description = "not ready within `timeout` (the object stays readable)", body = ErrorBody),
    ))]
fn get_object() {}

#[utoipa::path(get, path = "/v1/actors", params(ClusterListQuery, JobFilter), responses(
    (status = 200, description = "a page of the cluster's actors; `unreachable` names the nodes that did not answer in time", body = ActorList),
))]
fn list_actors() {}

#[utoipa::path(post, path = "/v1/actors", request_body = NewActor, responses(
    (status = 201, description = "created, in a job of its own", body = ActorInfo),
    (status = 404, description = "`unknown_component`, `unknown_class`", body = ErrorBody),
))]
fn create_actor() {}

#[utoipa::path(post, path = "/v1/actors/{id}/{method}",
    params(
        ("id" = String, Path, description = "the actor's id (32 hex digits)"),
        ("method" = String, Path, description = "the method's name"),
        ObjectQuery,
    ),
    request_body(content = Vec<serde_json::Value>, description = "the JSON array of the arguments (an empty body is `[]`)", content_type = "application/json"),
    responses(
        (status = 200, description = "the result", body = serde_json::Value),
        (status = 404, description = "`unknown_actor`, `unknown_method`", body = ErrorBody),
        (status = 504, description = "not answered within `timeout` (the method runs on)", body = ErrorBody),
        (status = 507, description = "`result_too_large`", body = ErrorBody),
    ))]
fn call_actor() {}

#[utoipa::path(delete, path = "/v1/actors/{id}",
    params(("id" = String, Path, description = "the actor's id")),
    responses((status = 200, body = Killed), (status = 404, description = "`unknown_actor`", body = ErrorBody)))]
fn kill_actor() {}

#[utoipa::path(get, path = "/v1/nodes", responses((status = 200, body = Vec<NodeInfo>)))]
fn nodes() {}

#[utoipa::path(get, path = "/v1/resources", responses((status = 200, body = Resources)))]
fn resources() {}

#[utoipa::path(get, path = "/v1/tasks", params(ClusterListQuery, JobFilter, LocalQuery), responses(
    (status = 200, description = "a page of the cluster's tasks; `unreachable` names the nodes that did not answer in time", body = TaskList),
))]
fn tasks() {}

#[utoipa::path(get, path = "/v1/objects", params(ClusterListQuery), responses(
    (status = 200, description = "a page of the objects of every node's store; `unreachable` as for tasks", body = ObjectList),
))]
fn objects() {}

#[utoipa::path(get, path = "/v1/errors", params(ClusterListQuery), responses(
    (status = 200, description = "a page of the cluster's errors; `unreachable` as for tasks", body = ErrorList),
))]
fn errors() {}

#[utoipa::path(get, path = "/v1/timeline", params(TimelineQuery), responses(
    (status = 200, description = "Chrome trace JSON: `ts` in microseconds since the Unix epoch, a process (`pid`) per node, a row (`tid`) per worker; `unreachable` names the nodes whose trace is missing", body = serde_json::Value),
    (status = 404, description = "`unknown_node`: `node` is not a live node", body = ErrorBody),
))]
fn timeline() {}

#[utoipa::path(get, path = "/v1/jobs", params(ClusterListQuery), responses(
    (status = 200, description = "a page of the cluster's jobs; `unreachable` as for tasks", body = JobList),
))]
fn list_jobs() {}

#[utoipa::path(post, path = "/v1/jobs", request_body = SubmitJob, responses(
    (status = 201, body = JobInfo),
    (status = 400, description = "`bad_json`, `no_main`, `bad_job_options`, `dir_not_allowed`, `dirs_not_in_cluster` (no other live node of the cluster allows the job's `dirs`: their ids named), `bad_id` (a malformed `working_dir.package`)", body = ErrorBody),
    (status = 404, description = "`unknown_component`, `unknown_package` (upload the working directory first: `POST /v1/packages`)", body = ErrorBody),
    (status = 413, description = "`args_too_long`", body = ErrorBody),
))]
fn submit_job() {}

#[utoipa::path(post, path = "/v1/packages",
    request_body(content = [u8], description = "a tar archive of regular files, directories and links that stay inside it (`wray job submit --working-dir` packs one); at most the node's `--max-working-dir-mib`", content_type = "application/x-tar"),
    responses(
        (status = 201, description = "kept now: its id, for a job's `working_dir.package`", body = PackageInfo),
        (status = 200, description = "kept already", body = PackageInfo),
        (status = 400, description = "`invalid_package`: an entry a package may not hold (an absolute path, `..`, a link out of it, a device, a hard link), named", body = ErrorBody),
        (status = 413, description = "`body_too_large`, `package_too_large`: past the node's `--max-working-dir-mib`, or what its cache can hold beside the packages running jobs use", body = ErrorBody),
    ))]
fn upload_package() {}

#[utoipa::path(get, path = "/v1/packages/{id}",
    params(("id" = String, Path, description = "the package's id, `sha256:` and 64 hex digits")),
    responses(
        (status = 200, body = PackageInfo),
        (status = 400, description = "`bad_id`", body = ErrorBody),
        (status = 404, description = "`unknown_package`", body = ErrorBody),
    ))]
fn get_package() {}

#[utoipa::path(get, path = "/v1/jobs/{id}",
    params(("id" = String, Path, description = "the job's id (16 hex digits)")),
    responses((status = 200, body = JobInfo), (status = 404, description = "`unknown_job`", body = ErrorBody)))]
fn get_job() {}

#[utoipa::path(delete, path = "/v1/jobs/{id}",
    params(("id" = String, Path, description = "the job's id")),
    responses(
        (status = 200, body = JobDeleted),
        (status = 404, description = "`unknown_job`", body = ErrorBody),
        (status = 409, description = "`job_running`", body = ErrorBody),
    ))]
fn delete_job() {}

#[utoipa::path(get, path = "/v1/jobs/{id}/logs",
    params(("id" = String, Path, description = "the job's id"), JobLogsQuery),
    responses(
        (status = 200, description = "what the job's guests wrote; `Wray-Log-Next`, `Wray-Log-Dropped` and `Wray-Job-Status` headers", body = String, content_type = "text/plain"),
        (status = 404, description = "`unknown_job`", body = ErrorBody),
    ))]
fn job_logs() {}

#[utoipa::path(post, path = "/v1/jobs/{id}/stop",
    params(("id" = String, Path, description = "the job's id")),
    responses((status = 200, body = JobStopped), (status = 404, description = "`unknown_job`", body = ErrorBody)))]
fn stop_job() {}

#[utoipa::path(get, path = "/v1/tasks/{id}/logs",
    params(("id" = String, Path, description = "the task's id (32 hex digits, as the `wray-task-id` header of a call names it)")),
    responses(
        (status = 200, body = TaskLogs),
        (status = 400, description = "`bad_id`", body = ErrorBody),
        (status = 404, description = "`unknown_task_logs`: no output of that task is kept; `no_task_logs`: the node keeps none (its guests write to its own stdout)", body = ErrorBody),
    ))]
fn task_logs() {}

#[utoipa::path(get, path = "/v1/components/{name}/versions",
    params(("name" = String, Path, description = "the component's name (percent-encoded)")),
    responses(
        (status = 200, description = "the kept versions, oldest first", body = VersionList),
        (status = 404, description = "`unknown_component`", body = ErrorBody),
    ))]
fn list_versions() {}

#[utoipa::path(post, path = "/v1/components/{name}/rollback",
    params(
        ("name" = String, Path, description = "the component's name (percent-encoded)"),
        ("version" = u64, Query, description = "the kept version to make current"),
    ),
    responses(
        (status = 200, description = "the version now current", body = ComponentInfo),
        (status = 400, description = "`no_version`, `bad_query`", body = ErrorBody),
        (status = 404, description = "`unknown_component`, `unknown_version` (naming the versions kept)", body = ErrorBody),
    ))]
fn rollback() {}

#[utoipa::path(get, path = "/v1/logs", params(LogsQuery), responses(
    (status = 200, body = NodeLogs),
    (status = 404, description = "`unknown_node`: `node` is not a live node", body = ErrorBody),
    (status = 504, description = "`node_unreachable`: the node did not answer in time", body = ErrorBody),
))]
fn logs() {}

/// The API's routes and types, as utoipa derives them.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        healthz,
        metrics,
        openapi,
        list_components,
        deploy,
        get_component,
        undeploy,
        component_openapi,
        invoke,
        get_object,
        list_actors,
        create_actor,
        call_actor,
        kill_actor,
        nodes,
        resources,
        tasks,
        objects,
        errors,
        timeline,
        list_jobs,
        submit_job,
        get_job,
        delete_job,
        job_logs,
        stop_job,
        rollback,
        list_versions,
        task_logs,
        logs,
        upload_package,
        get_package,
    ),
    components(schemas(ErrorBody))
)]
pub(super) struct Api;
