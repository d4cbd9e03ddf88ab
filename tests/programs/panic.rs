// SPDX-License-Identifier: MIT
// Panics deep in nested calls, caught by catch_unwind, with more calls
// after each catch, for a few rounds.  The unwinder
// (_Unwind_RaiseException) jumps into the landing pads of the frames it
// leaves: level2's drops its guard and goes on unwinding
// (_Unwind_Resume); round catches.
use std::panic;
use std::ptr;

struct Guard(u64);

impl Drop for Guard {
    #[inline(never)]
    fn drop(&mut self) {
        let v = unsafe { ptr::read_volatile(&self.0) };
        unsafe { ptr::write_volatile(&mut self.0, v + 1) };
    }
}

#[inline(never)]
fn leaf(n: u64) -> u64 {
    let v = unsafe { ptr::read_volatile(&n) };
    if v % 2 == 1 {
        panic!("leaf {}", v);
    }
    v * 2
}

#[inline(never)]
fn level3(n: u64) -> u64 {
    leaf(n + 1) + 1
}

#[inline(never)]
fn level2(n: u64) -> u64 {
    let g = Guard(n);
    let v = level3(n + 1) + 1;
    v + unsafe { ptr::read_volatile(&g.0) }
}

#[inline(never)]
fn level1(n: u64) -> u64 {
    level2(n + 1) + 1
}

#[inline(never)]
fn after(n: u64) -> u64 {
    let v = unsafe { ptr::read_volatile(&n) };
    v + 7
}

#[inline(never)]
fn round(n: u64) -> u64 {
    let r = panic::catch_unwind(|| level1(n));
    let v = match r {
        Ok(v) => v,
        Err(_) => 0,
    };
    after(v)
}

fn main() {
    // A quiet hook: the default one prints a message per panic.
    panic::set_hook(Box::new(|_| {}));
    let mut sum = 0;
    for i in 0..5 {
        sum += round(i);
    }
    println!("{}", sum);
}
