#![no_main]
// Arbitrary command lines through the binary's parser and its read-only commands.
libfuzzer_sys::fuzz_target!(|data: &[u8]| normoracle_fuzz::cli::run(data));
