//! An incremental Server-Sent Events decoder (the WHATWG event-stream
//! rules): bytes in, events out, split anywhere.
//!
//! Lines end with CRLF, LF or CR (a CR at the end of one chunk and an LF at
//! the start of the next are one line end). Lines starting with `:` are
//! comments (keep-alives). `data:` lines accumulate, joined by `\n`; a
//! blank line dispatches the event; `event:` names it; `id:` and `retry:`
//! are ignored (zot never reconnects a stream). A UTF-8 BOM at the start is
//! skipped. Lines are decoded only once complete, so a multi-byte character
//! split across chunks is never broken; invalid UTF-8 becomes U+FFFD, as the
//! standard says. A line longer than the cap is an error, so memory stays
//! bounded whatever the server sends.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field (`None` when absent or empty).
    pub event: Option<String>,
    pub data: String,
}

/// The decoder state.
#[derive(Debug)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous chunk ended with CR: an LF first in the next one ends
    /// nothing.
    after_cr: bool,
    at_start: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    max_line: usize,
}

/// A line over the decoder's cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineTooLong(pub usize);

impl SseDecoder {
    /// A decoder refusing lines (and events) longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            event: None,
            data: String::new(),
            has_data: false,
            max_line,
        }
    }

    /// Feed bytes; complete events are pushed to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LineTooLong> {
        if bytes.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut self.after_cr) {
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.push_partial(bytes)?;
                    return Ok(());
                }
                Some(i) => {
                    self.push_partial(&bytes[..i])?;
                    let cr = bytes[i] == b'\r';
                    bytes = &bytes[i + 1..];
                    if cr {
                        match bytes.first() {
                            Some(b'\n') => bytes = &bytes[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    self.end_line(out)?;
                }
            }
        }
        Ok(())
    }

    /// Whether bytes of an unfinished line or event are pending.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data || self.event.is_some()
    }

    fn push_partial(&mut self, b: &[u8]) -> Result<(), LineTooLong> {
        if self.line.len() + b.len() > self.max_line {
            return Err(LineTooLong(self.max_line));
        }
        self.line.extend_from_slice(b);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), LineTooLong> {
        let mut line = std::mem::take(&mut self.line);
        if self.at_start {
            self.at_start = false;
            if line.starts_with("\u{feff}".as_bytes()) {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take().filter(|e| !e.is_empty()),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event = None;
            self.has_data = false;
            self.data.clear();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > self.max_line {
                    return Err(LineTooLong(self.max_line));
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out).unwrap();
        }
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(Into::into),
            data: data.into(),
        }
    }

    #[test]
    fn fields_comments_and_line_ends() {
        let s = b"\xef\xbb\xbf: keep-alive\r\nevent: ping\r\ndata: {}\r\n\r\ndata:a\ndata: b\n\n:x\rdata:  two spaces\r\rid: 7\nretry: 9\ndata\n\nevent: e\n\n";
        let want = vec![
            ev(Some("ping"), "{}"),
            ev(None, "a\nb"),
            ev(None, " two spaces"),
            ev(None, ""),
        ];
        assert_eq!(decode_chunks(&[s]), want);
        for i in 0..=s.len() {
            assert_eq!(decode_chunks(&[&s[..i], &s[i..]]), want, "split at {i}");
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(decode_chunks(&bytes), want);
    }

    #[test]
    fn a_lone_lf_after_a_crlf_split_is_a_blank_line() {
        // Found by the fuzzer: CR | LF | LF fed one byte at a time swallowed
        // the second LF (a blank line: the event's dispatch).
        let s = b"data: a\r\n\ndata: b\n\n";
        let want = vec![ev(None, "a"), ev(None, "b")];
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(decode_chunks(&bytes), want);
        assert_eq!(
            decode_chunks(&[b"data: a\r", b"", b"\n", b"\n"]),
            vec![ev(None, "a")]
        );
    }

    #[test]
    fn utf8_split_and_invalid() {
        let s = "data: h\u{e9}llo \u{1f389}\n\n".as_bytes();
        for i in 0..=s.len() {
            assert_eq!(
                decode_chunks(&[&s[..i], &s[i..]])[0].data,
                "h\u{e9}llo \u{1f389}"
            );
        }
        assert_eq!(decode_chunks(&[b"data: \xff\n\n"])[0].data, "\u{fffd}");
    }

    #[test]
    fn caps_lines_and_events() {
        let mut d = SseDecoder::new(8);
        let mut out = Vec::new();
        assert!(d.feed(b"data: 12345678", &mut out).is_err());
        let mut d = SseDecoder::new(10);
        d.feed(b"data: 1234\ndata: 5678\n", &mut out).unwrap();
        assert!(d.feed(b"data: 9abc\n", &mut out).is_err());
        let mut d = SseDecoder::new(8);
        d.feed(b"data: x", &mut out).unwrap();
        assert!(d.has_pending());
    }
}
