//! Printing that never panics, for every subcommand.
//!
//! std's `print!`/`println!`/`eprint!`/`eprintln!` panic when a write fails. Rust ignores
//! SIGPIPE, so once a reader closes the pipe early (`normoracle reproduce --list | head`)
//! every write fails with EPIPE, and each command died with "failed printing to stdout" and
//! exit 101. The macros below shadow std's: `cli/mod.rs` declares this module first with
//! `#[macro_use]`, which puts them in scope in every subcommand's module declared after it,
//! so a new subcommand gets them without doing anything.
//!
//! - stdout closed (EPIPE): not an error. The rest of the output is dropped, the command
//!   finishes and exits with its verdict's code (0 or 1), or 2 for its own errors. Every
//!   command prints its output once its verdict is known, so nothing long runs unread.
//! - any other failure to write stdout (a full disk): the output is incomplete, so one line
//!   on stderr and exit 2 (an io error).
//! - stderr that cannot be written: nothing left to tell, so the message is dropped.
//!
//! The bodies name only std paths: `fuzz/src/cli.rs` compiles this module tree under another
//! name, where no `crate::cli::...` path would resolve.

macro_rules! print {
    ($($arg:tt)*) => {
        match ::std::io::Write::write_fmt(&mut ::std::io::stdout(), ::std::format_args!($($arg)*)) {
            Ok(()) => {}
            Err(e) if e.kind() == ::std::io::ErrorKind::BrokenPipe => {}
            Err(e) => {
                eprintln!("normoracle: io error: cannot write to stdout: {e}");
                ::std::process::exit(2)
            }
        }
    };
}

macro_rules! println {
    () => {
        print!("\n")
    };
    ($($arg:tt)*) => {
        print!("{}\n", ::std::format_args!($($arg)*))
    };
}

macro_rules! eprint {
    ($($arg:tt)*) => {{
        let _ = ::std::io::Write::write_fmt(&mut ::std::io::stderr(), ::std::format_args!($($arg)*));
    }};
}

macro_rules! eprintln {
    () => {
        eprint!("\n")
    };
    ($($arg:tt)*) => {
        eprint!("{}\n", ::std::format_args!($($arg)*))
    };
}
