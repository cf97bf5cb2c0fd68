#![no_main]
// The property and the input format: normoracle_cli::fuzzing (target "worker_protocol").
libfuzzer_sys::fuzz_target!(|data: &[u8]| normoracle_fuzz::check("worker_protocol", data));
