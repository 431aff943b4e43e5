#[wray::remote]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[wray::remote]
fn forgotten(a: i64) -> i64 {
    a
}

wray::export! {
    functions: [add],
}

fn main() {}
