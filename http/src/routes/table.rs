//! Every route of the HTTP API, declared once (see [`routes!`](super)):
//! method, path pattern and summary; the [`Route`] it is matched to, with
//! its path parameters; and its OpenAPI parameters, request body and
//! answers, in the API's own types ([`wray_api`]). The errors every route
//! shares (401, other 4xx, 503) are added by `crate::openapi::document`.
//! Its handler is its arm in `dispatch`.

use std::borrow::Cow;

use wray_api::{
    Accepted, ActorInfo, ActorList, ClusterListQuery, ComponentInfo, ComponentList, DeployQuery,
    ErrorBody, ErrorList, Health, InvokeQuery, JobDeleted, JobFilter, JobInfo, JobList,
    JobLogsQuery, JobStopped, Killed, ListQuery, LocalQuery, LogsQuery, NewActor, NodeInfo,
    NodeLogs, ObjectList, ObjectQuery, PackageInfo, Resources, SubmitJob, TaskInfo, TaskList,
    TaskLogs, TimelineQuery, Undeployed, VersionList,
};

use super::{summary, RouteInfo};

routes! {
    /// Whether the node is up, and its control plane reachable (no token needed)
    get "/healthz" => Healthz {
        responses((status = 200, body = Health))
    },
    /// Prometheus text: tasks by state, requests by route and status, request latency, object
    /// store bytes
    get "/metrics" => Metrics {
        responses(
            (status = 200, description = "Prometheus text exposition format 0.0.4", body = String, content_type = "text/plain")
        )
    },
    /// This document: the routes and the API's types (each component's functions:
    /// /v1/components/{name}/openapi.json)
    get "/v1/openapi.json" => OpenApi {
        responses(
            (status = 200, description = "this OpenAPI 3.1 document", body = serde_json::Value)
        )
    },
    /// The deployed components, by name, a page at a time (`?limit=`, `?after=`)
    get "/v1/components" => ListComponents {
        params(ListQuery), responses(
            (status = 200, description = "a page of components; `Wray-View: node` when it is the node's own view (the control plane is unreachable)", body = ComponentList),
        )
    },
    /// Deploy a component (the body: its bytes; `?name=` names it)
    post "/v1/components" => Deploy {
        params(DeployQuery),
        request_body(content = [u8], description = "the component's bytes", content_type = "application/wasm"),
        responses(
            (status = 201, description = "deployed: its new version (`new: true`)", body = ComponentInfo),
            (status = 200, description = "the bytes are those of a kept version of the name (same content digest): that version is current now, with its own number; nothing new (`new: false`)", body = ComponentInfo),
            (status = 400, description = "`invalid_component` (not a wray component, a schema that does not compile), `bad_name`, `no_name`", body = ErrorBody),
            (status = 413, description = "`body_too_large`: past the node's `max_component`", body = ErrorBody),
        )
    },
    /// One deployed component: its functions, actor classes and their schemas
    get "/v1/components/{name}" => GetComponent(name) {
        params(("name" = String, Path, description = "the component's name (percent-encoded)")),
        responses(
            (status = 200, description = "its current version; `Wray-View: node` when it is the node's own view", body = ComponentInfo),
            (status = 404, description = "`unknown_component`", body = ErrorBody),
        )
    },
    /// Undeploy a component: calls already made, and its actors, finish on it
    delete "/v1/components/{name}" => Undeploy(name) {
        params(("name" = String, Path, description = "the component's name (percent-encoded)")),
        responses(
            (status = 200, body = Undeployed),
            (status = 404, description = "`unknown_component`", body = ErrorBody),
        )
    },
    /// An OpenAPI document of one component's functions: each one's path, with its parameters'
    /// and results' JSON Schemas
    get "/v1/components/{name}/openapi.json" => ComponentOpenApi(name) {
        params(("name" = String, Path, description = "the component's name (percent-encoded)")),
        responses(
            (status = 200, description = "an OpenAPI 3.1 document of the component's functions: a path each, its request body the JSON Schemas of its parameters, its answer the schema of its result", body = serde_json::Value),
            (status = 404, description = "`unknown_component`", body = ErrorBody),
        )
    },
    /// Call a function: the body is the JSON array of its arguments; `?timeout=` seconds,
    /// `?async=true` answers with object ids at once
    post "/v1/functions/{component}/{function}" => Invoke(component, function) {
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
        )
    },
    /// An object of an async call: JSON, or raw bytes with `Accept: application/octet-stream`;
    /// `?timeout=` seconds to wait
    get "/v1/objects/{id}" => GetObject(id) {
        params(("id" = String, Path, description = "an object id (40 hex digits) from a 202, or a ref inside a value read"), ObjectQuery),
        responses(
            (status = 200, description = "the value, read once (refs inside it can then be read in turn)", content(
                    (serde_json::Value = "application/json"),
                    ([u8] = "application/octet-stream"),
            )),
            (status = 404, description = "`unknown_object`: no such object, or read already", body = ErrorBody),
            (status = 406, description = "`not_raw`, `not_json`: not what `Accept` asks (the object stays readable)", body = ErrorBody),
            (status = 504, description = "not ready within `timeout` (the object stays readable)", body = ErrorBody),
        )
    },
    /// The cluster's actors (live, and recently dead), newest first, a page at a time
    /// (`?limit=`, `?after=`, `?order=`); `?job=` those of one job, `?node=` those living on
    /// one node
    get "/v1/actors" => ListActors {
        params(ClusterListQuery, JobFilter), responses(
            (status = 200, description = "a page of the cluster's actors; `unreachable` names the nodes that did not answer in time", body = ActorList),
        )
    },
    /// Create an actor: `{"component", "class", "args"}`
    post "/v1/actors" => CreateActor {
        request_body = NewActor, responses(
            (status = 201, description = "created, in a job of its own", body = ActorInfo),
            (status = 404, description = "`unknown_component`, `unknown_class`", body = ErrorBody),
        )
    },
    /// Call a method of an actor: the body is the JSON array of its arguments
    post "/v1/actors/{id}/{method}" => CallActor(id, method) {
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
        )
    },
    /// Kill an actor (of any job: an operator's kill)
    delete "/v1/actors/{id}" => KillActor(id) {
        params(("id" = String, Path, description = "the actor's id")),
        responses((status = 200, body = Killed), (status = 404, description = "`unknown_actor`", body = ErrorBody))
    },
    /// The cluster's nodes (live, and dead for a while) and their resources
    get "/v1/nodes" => Nodes {
        responses((status = 200, body = Vec<NodeInfo>))
    },
    /// The cluster's total and available resources (its live nodes')
    get "/v1/resources" => Resources {
        responses((status = 200, body = Resources))
    },
    /// The cluster's pending, running and recently finished tasks, newest first, a page at a
    /// time (`?limit=`, `?after=`, `?order=`); `?job=` those of one job, `?node=` those of one
    /// node
    get "/v1/tasks" => Tasks {
        params(ClusterListQuery, JobFilter, LocalQuery), responses(
            (status = 200, description = "a page of the cluster's tasks; `unreachable` names the nodes that did not answer in time", body = TaskList),
        )
    },
    /// One task of the cluster (Ray's `ray get tasks <id>`): its row as the node that ran it
    /// keeps it (state, times, worker, error), answered through any node
    get "/v1/tasks/{id}" => GetTask(id) {
        params(("id" = String, Path, description = "the task's id (32 hex digits, as the `wray-task-id` header of a call names it)")),
        responses(
            (status = 200, body = TaskInfo),
            (status = 400, description = "`bad_id`", body = ErrorBody),
            (status = 404, description = "`unknown_task`: no node keeps that task (never submitted, or forgotten: a node keeps its last 100,000 finished tasks)", body = ErrorBody),
        )
    },
    /// The objects in every node's store, newest first, a page at a time (`?limit=`, `?after=`,
    /// `?order=`); `?node=` those of one node
    get "/v1/objects" => Objects {
        params(ClusterListQuery), responses(
            (status = 200, description = "a page of the objects of every node's store; `unreachable` as for tasks", body = ObjectList),
        )
    },
    /// The cluster's errors of failed tasks, with their cause chains, newest first, a page at a
    /// time (`?limit=`, `?after=`, `?order=`); `?node=` those of one node
    get "/v1/errors" => Errors {
        params(ClusterListQuery), responses(
            (status = 200, description = "a page of the cluster's errors; `unreachable` as for tasks", body = ErrorList),
        )
    },
    /// The timeline of the cluster's tasks (Chrome trace JSON): a process per node, a row per
    /// worker; `?limit=` tasks of each node, `?node=` one node
    get "/v1/timeline" => Timeline {
        params(TimelineQuery), responses(
            (status = 200, description = "Chrome trace JSON: `ts` in microseconds since the Unix epoch, a process (`pid`) per node, a row (`tid`) per worker; `unreachable` names the nodes whose trace is missing", body = serde_json::Value),
            (status = 404, description = "`unknown_node`: `node` is not a live node", body = ErrorBody),
        )
    },
    /// The cluster's jobs, newest first, a page at a time (`?limit=`, `?after=`, `?order=`);
    /// `?node=` those of one node
    get "/v1/jobs" => ListJobs {
        params(ClusterListQuery), responses(
            (status = 200, description = "a page of the cluster's jobs; `unreachable` as for tasks", body = JobList),
        )
    },
    /// Submit a job: `{"component", "args"}` runs the component's `main(args)` in the
    /// background
    post "/v1/jobs" => SubmitJob {
        request_body = SubmitJob, responses(
            (status = 201, body = JobInfo),
            (status = 400, description = "`bad_json`, `no_main`, `bad_job_options`, `dir_not_allowed`, `dirs_not_in_cluster` (no other live node of the cluster allows the job's `dirs`: their ids named), `bad_id` (a malformed `working_dir.package`)", body = ErrorBody),
            (status = 404, description = "`unknown_component`, `unknown_package` (upload the working directory first: `POST /v1/packages`)", body = ErrorBody),
            (status = 413, description = "`args_too_long`", body = ErrorBody),
        )
    },
    /// One job: its status, and why it failed or stopped
    get "/v1/jobs/{id}" => GetJob(id) {
        params(("id" = String, Path, description = "the job's id (16 hex digits)")),
        responses((status = 200, body = JobInfo), (status = 404, description = "`unknown_job`", body = ErrorBody))
    },
    /// Forget a finished job and its log
    delete "/v1/jobs/{id}" => DeleteJob(id) {
        params(("id" = String, Path, description = "the job's id")),
        responses(
            (status = 200, body = JobDeleted),
            (status = 404, description = "`unknown_job`", body = ErrorBody),
            (status = 409, description = "`job_running`", body = ErrorBody),
        )
    },
    /// What the job's guests wrote (text); `?offset=` bytes to start from, `?follow=true`
    /// streams until the job ends
    get "/v1/jobs/{id}/logs" => JobLogs(id) {
        params(("id" = String, Path, description = "the job's id"), JobLogsQuery),
        responses(
            (status = 200, description = "what the job's guests wrote; `Wray-Log-Next`, `Wray-Log-Dropped` and `Wray-Job-Status` headers", body = String, content_type = "text/plain"),
            (status = 404, description = "`unknown_job`", body = ErrorBody),
        )
    },
    /// Stop a job: its driver, tasks and actors are cancelled
    post "/v1/jobs/{id}/stop" => StopJob(id) {
        params(("id" = String, Path, description = "the job's id")),
        responses((status = 200, body = JobStopped), (status = 404, description = "`unknown_job`", body = ErrorBody))
    },
    /// Make a kept version of a component current again: `?version=N`
    post "/v1/components/{name}/rollback" => Rollback(name) {
        params(
            ("name" = String, Path, description = "the component's name (percent-encoded)"),
            ("version" = u64, Query, description = "the kept version to make current"),
        ),
        responses(
            (status = 200, description = "the version now current", body = ComponentInfo),
            (status = 400, description = "`no_version`, `bad_query`", body = ErrorBody),
            (status = 404, description = "`unknown_component`, `unknown_version` (naming the versions kept)", body = ErrorBody),
        )
    },
    /// What a task outside a job with a log wrote to stdout and stderr (its first 64 KiB, and
    /// the bytes dropped past them), while the node keeps it
    get "/v1/tasks/{id}/logs" => TaskLogs(id) {
        params(("id" = String, Path, description = "the task's id (32 hex digits, as the `wray-task-id` header of a call names it)")),
        responses(
            (status = 200, body = TaskLogs),
            (status = 400, description = "`bad_id`", body = ErrorBody),
            (status = 404, description = "`unknown_task_logs`: no output of that task is kept; `no_task_logs`: the node keeps none (its guests write to its own stdout)", body = ErrorBody),
        )
    },
    /// The versions of a component the function table keeps, oldest first (roll back to one:
    /// `POST /v1/components/{name}/rollback?version=N`)
    get "/v1/components/{name}/versions" => Versions(name) {
        params(("name" = String, Path, description = "the component's name (percent-encoded)")),
        responses(
            (status = 200, description = "the kept versions, oldest first", body = VersionList),
            (status = 404, description = "`unknown_component`", body = ErrorBody),
        )
    },
    /// The end of a node's log (`?node=`, default this one; `?bytes=`), and the tasks whose
    /// output it keeps
    get "/v1/logs" => Logs {
        params(LogsQuery), responses(
            (status = 200, body = NodeLogs),
            (status = 404, description = "`unknown_node`: `node` is not a live node", body = ErrorBody),
            (status = 504, description = "`node_unreachable`: the node did not answer in time", body = ErrorBody),
        )
    },
    /// Keep a job's working directory: the body is a tar archive (`wray job submit
    /// --working-dir` packs it); answers its id for a job's `working_dir`
    post "/v1/packages" => UploadPackage {
        request_body(content = [u8], description = "a tar archive of regular files, directories and links that stay inside it (`wray job submit --working-dir` packs one); at most the node's `--max-working-dir-mib`", content_type = "application/x-tar"),
        responses(
            (status = 201, description = "kept now: its id, for a job's `working_dir.package`", body = PackageInfo),
            (status = 200, description = "kept already", body = PackageInfo),
            (status = 400, description = "`invalid_package`: an entry a package may not hold (an absolute path, `..`, a link out of it, a device, a hard link), named", body = ErrorBody),
            (status = 413, description = "`body_too_large`, `package_too_large`: past the node's `--max-working-dir-mib`, or what its cache can hold beside the packages running jobs use", body = ErrorBody),
        )
    },
    /// Whether the node keeps a package (`sha256:<hex>`), and its sizes
    get "/v1/packages/{id}" => GetPackage(id) {
        params(("id" = String, Path, description = "the package's id, `sha256:` and 64 hex digits")),
        responses(
            (status = 200, body = PackageInfo),
            (status = 400, description = "`bad_id`", body = ErrorBody),
            (status = 404, description = "`unknown_package`", body = ErrorBody),
        )
    },
}
