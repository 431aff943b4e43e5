use super::*;

const MIB: u64 = 1 << 20;

fn record(name: &str, hash: &str, size: u64) -> Arc<ComponentRecord> {
    Arc::new(ComponentRecord {
        name: name.into(),
        hash: hash.into(),
        size,
        has_main: false,
        sdk: String::new(),
        functions: Vec::new(),
    })
}

fn version(record: &Arc<ComponentRecord>, compiled: u64) -> Version {
    Version::new(record.clone(), Arc::new(()), compiled)
}

fn limits() -> ComponentLimits {
    ComponentLimits {
        names: 3,
        versions: 2,
        bytes: 100 * MIB,
        compiled: 100 * MIB,
    }
}

/// Inserts a row of `name` for `hash`, its file `size` bytes and its code
/// `compiled`.
fn deploy(
    f: &mut Functions,
    name: &str,
    hash: &str,
    size: u64,
    compiled: u64,
) -> Result<Arc<ComponentRecord>, DeployLimit> {
    let r = record(name, hash, size);
    f.sweep();
    f.insert(r.clone(), version(&r, compiled))?;
    Ok(r)
}

#[test]
fn a_name_resolves_to_its_latest_deploy_and_old_hashes_stay() {
    let mut f = Functions::new(limits());
    deploy(&mut f, "math", "h1", 1, 1).unwrap();
    deploy(&mut f, "math", "h2", 1, 1).unwrap();
    let r = f.resolve(Callee::Named("math")).unwrap();
    assert_eq!((&*r.record.hash, &*r.hash), ("h2", "h2"));
    assert!(f.by_hash("h1").is_some(), "queued tasks of h1 still run");
    assert!(
        f.resolve(Callee::Named("h2")).is_none(),
        "a hash is not a name"
    );
    assert!(f.resolve(Callee::Named("other")).is_none());
    let own: Arc<str> = Arc::from("h1");
    assert_eq!(f.resolve(Callee::Hash(&own)).unwrap().record.name, "math");
}

#[test]
fn names_past_the_bound_are_refused_naming_it() {
    let mut f = Functions::new(limits());
    for name in ["a", "b", "c"] {
        deploy(&mut f, name, name, 1, 1).unwrap();
    }
    let err = deploy(&mut f, "d", "d", 1, 1).unwrap_err();
    assert_eq!((err.bound, err.limit), (DeployBound::Names, 3));
    assert!(err.to_string().contains("--max-components 3"), "{err}");
    // A name it has takes another version.
    deploy(&mut f, "a", "a2", 1, 1).unwrap();
    // An undeploy makes room.
    f.remove_named("b");
    deploy(&mut f, "d", "d", 1, 1).unwrap();
}

#[test]
fn old_versions_nothing_uses_are_dropped_and_in_use_ones_kept() {
    let mut f = Functions::new(limits());
    deploy(&mut f, "app", "v1", 10 * MIB, 20 * MIB).unwrap();
    deploy(&mut f, "app", "v2", 10 * MIB, 20 * MIB).unwrap();
    // v1 in use (a queued task): v3 drops v2's... no: the oldest unused.
    let pin = f.pin("v1").unwrap();
    deploy(&mut f, "app", "v3", 10 * MIB, 20 * MIB).unwrap();
    assert!(f.by_hash("v1").is_some(), "in use: kept");
    assert!(f.by_hash("v2").is_none(), "the oldest unused: forgotten");
    assert_eq!(f.usage().compiled_bytes, 40 * MIB);
    // Both versions kept are in use: one more is refused.
    let pin3 = f.pin("v3").unwrap();
    let err = deploy(&mut f, "app", "v4", 10 * MIB, 20 * MIB).unwrap_err();
    assert_eq!((err.bound, err.limit), (DeployBound::Versions, 2));
    assert!(err.to_string().contains("--max-versions 2"), "{err}");
    drop((pin, pin3));
    deploy(&mut f, "app", "v4", 10 * MIB, 20 * MIB).unwrap();
    assert!(f.by_hash("v1").is_none(), "given back once unused");
    assert_eq!(f.usage().versions, 2);
    assert_eq!(f.usage().compiled_bytes, 40 * MIB);
}

#[test]
fn bytes_and_compiled_code_past_their_budgets_are_refused() {
    let mut f = Functions::new(limits());
    deploy(&mut f, "a", "a", 60 * MIB, 10 * MIB).unwrap();
    let err = deploy(&mut f, "b", "b", 50 * MIB, 10 * MIB).unwrap_err();
    assert_eq!(err.bound, DeployBound::ComponentBytes);
    assert!(err.bound.is_bytes());
    assert!(
        err.to_string().contains("--max-component-mib 100 MiB"),
        "{err}"
    );
    let err = deploy(&mut f, "b", "b", MIB, 95 * MIB).unwrap_err();
    assert_eq!(err.bound, DeployBound::CompiledBytes);
    assert!(
        err.to_string().contains("--max-compiled-mib 100 MiB"),
        "{err}"
    );
    assert_eq!(f.usage().names, 1, "refusals change nothing");
    // A new version of `a` replacing one nothing uses fits where a second
    // name does not.
    let mut two = Functions::new(ComponentLimits {
        versions: 1,
        ..limits()
    });
    deploy(&mut two, "a", "a", 60 * MIB, 10 * MIB).unwrap();
    deploy(&mut two, "a", "a2", 60 * MIB, 10 * MIB).unwrap();
    assert_eq!(two.usage().versions, 1);
}

#[test]
fn an_undeployed_version_in_use_stays_until_it_is_not() {
    let mut f = Functions::new(limits());
    deploy(&mut f, "app", "v1", MIB, MIB).unwrap();
    let task = f.resolve(Callee::Named("app")).unwrap();
    let (_, forgotten) = f.remove_named("app");
    assert!(forgotten.is_empty());
    assert!(f.has_retired());
    assert!(f.by_hash("v1").is_some(), "a queued task still runs it");
    let copy = task.pin.clone();
    drop(task);
    assert!(f.sweep().is_empty(), "a copy of the use still holds it");
    drop(copy);
    assert_eq!(f.sweep().len(), 1);
    assert_eq!(
        f.usage(),
        ComponentUsage {
            max_names: 3,
            max_versions: 2,
            max_bytes: 100 * MIB,
            max_compiled_bytes: 100 * MIB,
            ..ComponentUsage::default()
        }
    );
}

#[test]
fn a_row_the_table_refused_is_taken_back() {
    let mut f = Functions::new(limits());
    deploy(&mut f, "app", "v1", MIB, MIB).unwrap();
    let refused = deploy(&mut f, "app", "v2", MIB, MIB).unwrap();
    assert_eq!(f.take_back(&refused).len(), 1);
    assert_eq!(f.current("app").unwrap().hash, "v1");
    let alone = deploy(&mut f, "new", "n1", MIB, MIB).unwrap();
    f.take_back(&alone);
    assert!(f.current("new").is_none());
    assert_eq!(f.usage().names, 1);
}

#[test]
fn a_version_named_by_a_call_is_known_by_hash_only_until_nothing_uses_it() {
    let mut f = Functions::new(ComponentLimits {
        compiled: 10,
        ..limits()
    });
    deploy(&mut f, "math", "h2", 1, 4).unwrap();
    let old = record("math", "h1", 1);
    let used = f.insert_version(version(&old, 4)).unwrap();
    assert_eq!(
        f.resolve(Callee::Named("math")).unwrap().hash.as_ref(),
        "h2"
    );
    let h1: Arc<str> = Arc::from("h1");
    assert_eq!(f.resolve(Callee::Hash(&h1)).unwrap().record.hash, "h1");
    assert_eq!(f.usage().compiled_bytes, 8);
    // Past the compiled-code budget: refused, naming it; nothing changed.
    let big = record("math", "h0", 1);
    let err = f.insert_version(version(&big, 4)).err().unwrap();
    assert_eq!(err.bound, DeployBound::CompiledBytes);
    assert!(f.by_hash("h0").is_none());
    // Used: kept through a sweep; then forgotten, its code given back.
    assert!(f.sweep().is_empty());
    drop(used);
    assert_eq!(f.sweep().len(), 1);
    assert!(f.by_hash("h1").is_none());
    assert_eq!(f.usage().compiled_bytes, 4);
}

#[test]
fn the_bytes_of_a_version_a_name_has_move_its_row_and_meet_no_bound() {
    let mut f = Functions::new(limits());
    deploy(&mut f, "app", "v1", MIB, MIB).unwrap();
    deploy(&mut f, "app", "v2", MIB, MIB).unwrap();
    // Both versions in use (an actor of each): a third is refused...
    let pins = (f.pin("v1").unwrap(), f.pin("v2").unwrap());
    let err = deploy(&mut f, "app", "v3", MIB, MIB).unwrap_err();
    assert_eq!(err.bound, DeployBound::Versions);
    // ...but the bytes of either, again and again, are no version more:
    // each makes its row the current one.
    let usage = f.usage();
    assert!(f.check(&record("app", "v1", MIB), MIB, MIB).is_ok());
    for _ in 0..5 {
        deploy(&mut f, "app", "v1", MIB, MIB).unwrap();
        assert_eq!(f.current("app").unwrap().hash, "v1");
        deploy(&mut f, "app", "v2", MIB, MIB).unwrap();
        assert_eq!(f.current("app").unwrap().hash, "v2");
    }
    assert_eq!(f.usage(), usage);
    // A move the function table then refused is put back as it was.
    let refused = deploy(&mut f, "app", "v1", MIB, MIB).unwrap();
    assert_eq!(f.current("app").unwrap().hash, "v1");
    assert!(f.take_back(&refused).is_empty());
    assert_eq!(f.current("app").unwrap().hash, "v2");
    assert_eq!(f.usage(), usage);
    let rows: Vec<&str> = f.by_name["app"].iter().map(|r| &*r.record.hash).collect();
    assert_eq!(rows, ["v1", "v2"]);
    drop(pins);
}
