#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| jarvis_fuzz::sse_openai(data));
