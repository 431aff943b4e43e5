#[wray::actor]
pub struct Counter {
    n: i64,
}

#[wray::actor]
impl Counter {
    pub fn new(n: i64) -> Self {
        Counter { n }
    }

    pub fn get(&mut self) -> i64 {
        self.n
    }
}

#[wray::remote]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

wray::export! {
    functions: [add],
}

fn main() {}
