// alloc_rust_mimalloc [N]: a Rust program whose global allocator is mimalloc, called through
// extern "C" as mimalloc's crate does (sizes: tests/root/test_allocators.cpp, kRust*). Per round:
// one allocation of 12101 bytes, one zeroed of 12203, one of 12301 grown to 12407; all freed.
use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;

extern "C" {
    fn mi_malloc_aligned(size: usize, align: usize) -> *mut u8;
    fn mi_zalloc_aligned(size: usize, align: usize) -> *mut u8;
    fn mi_realloc_aligned(p: *mut u8, size: usize, align: usize) -> *mut u8;
    fn mi_free(p: *mut u8);
}

struct Mimalloc;

unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        mi_malloc_aligned(l.size(), l.align())
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        mi_zalloc_aligned(l.size(), l.align())
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        mi_realloc_aligned(p, size, l.align())
    }
    unsafe fn dealloc(&self, p: *mut u8, _l: Layout) {
        mi_free(p)
    }
}

#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().expect("a count")).unwrap_or(10);
    for _ in 0..n {
        let v: Vec<u8> = Vec::with_capacity(black_box(12101));
        black_box(&v);
        let z = vec![0u8; black_box(12203)];
        black_box(&z);
        let mut g: Vec<u8> = Vec::with_capacity(black_box(12301));
        black_box(&g);
        g.reserve_exact(black_box(12407));
        black_box(&g);
    }
}
