// A Rust release binary with known allocations: each size from a function of its own, so its
// frame names the (demangled) Rust path.
use std::hint::black_box;

#[inline(never)]
fn make_rust_buffer_for_memtrack(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    v.push(1u8);
    black_box(v)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    for _ in 0..n {
        let v = make_rust_buffer_for_memtrack(black_box(12345));
        drop(black_box(v));
    }
}
