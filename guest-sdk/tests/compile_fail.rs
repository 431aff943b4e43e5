//! What must not compile: a remote function or actor class left out of
//! `wray::export!` (it would fail every call with not-found at run time),
//! and an export list with nothing in it.

#[test]
fn mistakes_in_the_export_list_do_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
