#![no_main]
// The property and the input format: normoracle_cli::fuzzing (target "npy").
libfuzzer_sys::fuzz_target!(|data: &[u8]| normoracle_fuzz::check("npy", data));
