#![no_main]
// The property and the input format: normoracle_cli::fuzzing (target "kernel_reference_f64_bf16").
libfuzzer_sys::fuzz_target!(|data: &[u8]| normoracle_fuzz::check(
    "kernel_reference_f64_bf16",
    data
));
