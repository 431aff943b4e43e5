//! `wray job submit` with options (`--dir` inside the node's
//! `--allow-dir`, `--working-dir`, `--env`, `--metadata`, `--num-gpus`,
//! `--timeout`), working-directory packages over HTTP, and
//! versioned calls and rollback (`wray call app@1/f`, `wray deploy
//! --rollback app@1`), against a `wray start` node in a process of its
//! own; a rollback on one node of an etcd reaches the other.

use std::path::Path;
use std::process::{Command, Output};

use crate::node::etcd_server;
use crate::support::{component, success_stdout, wray};

fn in_dir(tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = wray();
    cmd.env("TMPDIR", tmp).args(args);
    cmd
}

/// Stops the node started in `.0` when the test ends.
struct StopOnDrop(std::path::PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = in_dir(&self.0, &["stop", "--timeout", "10"]).output();
    }
}

/// The stderr of a run that must have failed.
fn failure_stderr(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_word_count_runs_as_a_job_over_an_allowed_directory_with_its_options() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tempfile::tempdir().unwrap();
    std::fs::write(corpus.path().join("words.txt"), "to be or not to be\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| in_dir(tmp.path(), args).output().unwrap();
    let allow = corpus.path().to_str().unwrap();
    success_stdout(&run(&[
        "start",
        "--port",
        "0",
        "--num-cpus",
        "2",
        "--allow-dir",
        allow,
    ]));
    let _stop = StopOnDrop(tmp.path().to_path_buf());

    let wordcount = component("wordcount");
    let data = format!("{allow}::/data");
    let said = success_stdout(&run(&[
        "job",
        "submit",
        wordcount.to_str().unwrap(),
        "--dir",
        &data,
        "--",
        "/data",
    ]));
    for line in [
        "2\tbe\n",
        "2\tto\n",
        "1\tnot\n",
        "total\t6\n",
        " SUCCEEDED in ",
    ] {
        assert!(said.contains(line), "`{line}` not in {said}");
    }

    // A directory outside the allowed one is refused at submit.
    let elsewhere = format!("{}::/data", outside.path().display());
    let err = failure_stderr(&run(&[
        "job",
        "submit",
        "wordcount",
        "--dir",
        &elsewhere,
        "--",
        "/data",
    ]));
    assert!(err.contains("the node answered 400"), "{err}");
    assert!(err.contains(&outside.path().display().to_string()), "{err}");
    assert!(err.contains(allow), "{err}");

    // Variables and metadata; the job's status and the list show the
    // metadata.
    let api = component("api");
    success_stdout(&run(&["deploy", api.to_str().unwrap()]));
    let said = success_stdout(&run(&[
        "job",
        "submit",
        "api",
        "--env",
        "NAME=wray",
        "--metadata",
        "team=jobs",
        "--dir",
        &data,
        "--",
        "job_env",
        "NAME",
        "/data/words.txt",
    ]));
    assert!(
        said.contains("driver NAME=wray; to be or not to be\n"),
        "{said}"
    );
    assert!(
        said.contains("task NAME=wray; to be or not to be\n"),
        "{said}"
    );
    assert!(said.contains("metadata: team=jobs"), "{said}");
    let listed = success_stdout(&run(&["job", "list"]));
    assert!(listed.contains("[team=jobs]"), "{listed}");

    // Resources the node lacks are refused; a time limit fails the job.
    let err = failure_stderr(&run(&[
        "job",
        "submit",
        "api",
        "--num-gpus",
        "8",
        "--",
        "x",
    ]));
    assert!(
        err.contains("the node answered 422") && err.contains("{GPU: 8}"),
        "{err}"
    );
    let out = run(&[
        "job",
        "submit",
        "api",
        "--timeout",
        "1",
        "--",
        "job_forever",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(" FAILED") && said.contains("timed out: the job ran past its timeout of 1 s"),
        "{said}"
    );
}

#[test]
fn a_working_dir_is_packed_uploaded_once_and_read_by_the_job_on_one_node() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(corpus.path().join("a/b")).unwrap();
    std::fs::write(corpus.path().join("a/b/words.txt"), "to be or not to be\n").unwrap();
    std::fs::write(corpus.path().join("more.txt"), "that is\n").unwrap();
    std::fs::write(corpus.path().join("big.log"), "left out\n").unwrap();
    std::fs::create_dir(corpus.path().join(".git")).unwrap();
    std::fs::write(corpus.path().join(".git/HEAD"), "left out too\n").unwrap();
    let node = crate::node_ops::StartedNode::start(tmp.path(), &[]);
    let dir = corpus.path().to_str().unwrap();
    let wordcount = component("wordcount");
    let submit = |extra: &[&str]| {
        let mut args = vec!["job", "submit"];
        args.extend_from_slice(extra);
        node.run(&args)
    };
    let out = submit(&[
        "--working-dir",
        dir,
        "--exclude",
        "*.log",
        wordcount.to_str().unwrap(),
        "--",
        ".",
    ]);
    let said = success_stdout(&out);
    assert!(
        said.contains("total\t8\n") && said.contains("2\tbe\n"),
        "{said}"
    );
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(
        told.contains("2 files") && told.contains("uploaded"),
        "{told}"
    );
    // Again, at a guest path of its own: the node has the package.
    let at = format!("{dir}::/work");
    let out = submit(&[
        "--working-dir",
        &at,
        "--exclude",
        "*.log",
        "wordcount",
        "--",
        "/work",
    ]);
    assert!(success_stdout(&out).contains("total\t8\n"));
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(told.contains("on the node already"), "{told}");

    // Past the client's bound: refused before anything is sent.
    std::fs::write(corpus.path().join("huge.bin"), vec![b'x'; 1 << 20]).unwrap();
    let err = failure_stderr(&submit(&[
        "--working-dir",
        dir,
        "--max-working-dir-mib",
        "1",
        "wordcount",
        "--",
        ".",
    ]));
    assert!(err.contains("--max-working-dir-mib"), "{err}");

    // A package that would write outside its directory, over HTTP.
    let mut archive = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..9].copy_from_slice(b"../escape");
    header.set_size(1);
    header.set_mode(0o644);
    header.set_cksum();
    archive.append(&header, &b"x"[..]).unwrap();
    let bytes = archive.into_inner().unwrap();
    let answer = node.request("POST", "/v1/packages").send_bytes(&bytes);
    let Err(ureq::Error::Status(400, answer)) = answer else {
        panic!("not a 400: {answer:?}");
    };
    let body = answer.into_string().unwrap();
    assert!(
        body.contains("invalid_package") && body.contains("../escape"),
        "{body}"
    );
    assert!(!tmp.path().join("wray/escape").exists());
    let zeros = format!("/v1/packages/sha256:{}", "0".repeat(64));
    let answer = node.request("GET", &zeros).call();
    assert!(
        matches!(answer, Err(ureq::Error::Status(404, _))),
        "{answer:?}"
    );
    // A job naming a package the node does not keep.
    let body = format!(
        r#"{{"component": "wordcount", "args": ["."], "working_dir": {{"package": "sha256:{}"}}}}"#,
        "0".repeat(64)
    );
    let answer = node
        .request("POST", "/v1/jobs")
        .set("Content-Type", "application/json")
        .send_string(&body);
    let Err(ureq::Error::Status(404, answer)) = answer else {
        panic!("not a 404: {answer:?}");
    };
    let body = answer.into_string().unwrap();
    assert!(
        body.contains("unknown_package") && body.contains("POST /v1/packages"),
        "{body}"
    );
}

/// Runs `args` in `tmp`'s node until its stdout holds `want` (or 60 s
/// pass); that stdout.
fn until_said(tmp: &Path, args: &[&str], want: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = in_dir(tmp, args).output().expect("wray runs");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && said.contains(want) {
            return said;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{args:?} never said {want}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_kept_version_is_called_by_number_and_rolled_back_on_every_node() {
    let etcd = etcd_server::EtcdServer::start();
    let url = etcd.endpoint();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let token = crate::support::token_file(a.path());
    let token = token.to_str().unwrap();
    for dir in [&a, &b] {
        success_stdout(
            &in_dir(dir.path(), &crate::support::start_on_etcd(&url, token))
                .output()
                .unwrap(),
        );
    }
    let _stop = (StopOnDrop(a.path().into()), StopOnDrop(b.path().into()));
    let on_a = |args: &[&str]| in_dir(a.path(), args).output().unwrap();
    let nested = component("nested");
    let mb = component("microbench");
    for (wasm, version) in [(&nested, 1), (&mb, 2)] {
        let said = success_stdout(&on_a(&["deploy", wasm.to_str().unwrap(), "--name", "app"]));
        assert!(
            said.starts_with(&format!("deployed app version {version} (")),
            "{said}"
        );
    }
    let sum = ["call", "app@1/sub_experiment", "--json", "[1, 2]"];
    assert_eq!(success_stdout(&on_a(&sum)).trim(), "3");
    let plain = ["call", "app/sub_experiment", "--json", "[1, 2]"];
    let err = failure_stderr(&on_a(&plain));
    assert!(err.contains("404"), "{err}");

    let said = success_stdout(&on_a(&["deploy", "--rollback", "app@1"]));
    assert!(said.starts_with("app is at version 1 again"), "{said}");
    assert_eq!(success_stdout(&on_a(&plain)).trim(), "3");
    // Node B follows the table: the name means version 1 there too.
    until_said(b.path(), &plain, "3");
    until_said(b.path(), &["functions"], "app version 1 (");

    let err = failure_stderr(&on_a(&["deploy", "--rollback", "app@7"]));
    assert!(
        err.contains("404") && err.contains("the versions kept are 1, 2"),
        "{err}"
    );
    let err = failure_stderr(&on_a(&["deploy", "--rollback", "app"]));
    assert!(err.contains("NAME@VERSION"), "{err}");
}
