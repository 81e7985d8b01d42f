#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| polyphony::fuzzing::scenario(data));
