//! Printing that a closed stdout or stderr cannot stop. `run … | head -3` closes the pipe after
//! three lines; `println!` then panics ("failed printing to stdout: Broken pipe", exit code
//! 101) in the middle of the run's ending, before its reports are written. Every line this
//! binary prints goes through `outln!` or `errln!` instead: a write that fails is dropped,
//! the run finishes its rows and reports, and the exit code stays the run's.

use std::fmt;
use std::io::Write;

/// Writes one line to stdout; a closed or failing stdout drops it (see the module's words).
pub fn out(args: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stdout().lock(), "{args}");
}

/// Writes `args` to stdout without a newline; a closed or failing stdout drops it.
pub fn out_raw(args: fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_fmt(args).and_then(|()| o.flush());
}

/// Writes one line to stderr; a closed or failing stderr drops it.
pub fn err(args: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// `println!` that a closed stdout cannot turn into a panic.
macro_rules! outln {
    () => {
        $crate::say::out(format_args!(""))
    };
    ($($t:tt)*) => {
        $crate::say::out(format_args!($($t)*))
    };
}

/// `print!` that a closed stdout cannot turn into a panic.
macro_rules! out {
    ($($t:tt)*) => {
        $crate::say::out_raw(format_args!($($t)*))
    };
}

/// `eprintln!` that a closed stderr cannot turn into a panic.
macro_rules! errln {
    () => {
        $crate::say::err(format_args!(""))
    };
    ($($t:tt)*) => {
        $crate::say::err(format_args!($($t)*))
    };
}
