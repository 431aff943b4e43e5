wray::export! {}

fn main() {}
