//! Fuzz the Anthropic Messages response parser: `cargo +nightly fuzz run sse_anthropic`.
//!
//! The first input byte chooses how the rest is split into chunks (as the
//! network would). Properties: no input panics; the result (the turn or
//! the error) and the streamed deltas are the same whole and split; a
//! streamed text adds up to the turn's text; every tool call has an id
//! and a name; memory stays within the parser's cap (libFuzzer's RSS
//! limit).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zot_agent::providers::stream::{feed_all, StreamParser};
use zot_agent::providers::anthropic::AnthropicStream;

fn make() -> Box<dyn StreamParser> {
    Box::new(AnthropicStream::new())
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let whole = feed_all(make().as_mut(), &[body]);
    // Chunk sizes cycle through 1..=seed%16+1 bytes.
    let step = usize::from(seed % 16) + 1;
    let mut chunks: Vec<&[u8]> = Vec::new();
    let (mut at, mut n) = (0, 1);
    while at < body.len() {
        let end = (at + n).min(body.len());
        chunks.push(&body[at..end]);
        at = end;
        n = n % step + 1;
    }
    let split = feed_all(make().as_mut(), &chunks);
    assert_eq!(whole, split, "the split changed the result");
    if let (text, _, Ok(turn)) = &whole {
        if !text.is_empty() {
            assert_eq!(text, &turn.text, "streamed text differs from the turn's");
        }
        for c in &turn.tool_calls {
            assert!(!c.name.is_empty() && !c.id.is_empty());
        }
    }
});
