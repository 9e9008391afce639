//! Formatting into a fixed buffer (no allocation): status lines as JSON and
//! messages for stderr.

pub struct Buf {
    data: [u8; 4096],
    len: usize,
}

impl Default for Buf {
    fn default() -> Buf {
        Buf::new()
    }
}

impl Buf {
    pub const fn new() -> Buf {
        Buf {
            data: [0; 4096],
            len: 0,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }

    pub fn push(&mut self, b: &[u8]) -> &mut Buf {
        let n = b.len().min(self.data.len() - self.len);
        self.data[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        self
    }

    pub fn str(&mut self, s: &str) -> &mut Buf {
        self.push(s.as_bytes())
    }

    pub fn num(&mut self, mut v: u64) -> &mut Buf {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..])
    }

    pub fn int(&mut self, v: i64) -> &mut Buf {
        if v < 0 {
            self.str("-");
        }
        self.num(v.unsigned_abs())
    }

    /// `b` as the inside of a JSON string (bytes that are not UTF-8 are
    /// replaced, so the line always parses).
    pub fn json_str(&mut self, b: &[u8]) -> &mut Buf {
        let hex = b"0123456789abcdef";
        let mut rest = b;
        while !rest.is_empty() {
            let (valid, bad) = match core::str::from_utf8(rest) {
                Ok(s) => (s, false),
                Err(e) => (
                    // SAFETY: from_utf8 says this prefix is valid.
                    unsafe { core::str::from_utf8_unchecked(&rest[..e.valid_up_to()]) },
                    true,
                ),
            };
            for &c in valid.as_bytes() {
                match c {
                    b'"' => self.str("\\\""),
                    b'\\' => self.str("\\\\"),
                    0..=0x1f => self
                        .str("\\u00")
                        .push(&[hex[(c >> 4) as usize], hex[(c & 15) as usize]]),
                    _ => self.push(&[c]),
                };
            }
            rest = &rest[valid.len()..];
            if bad {
                self.str("\u{fffd}");
                rest = &rest[1..];
            }
        }
        self
    }
}

/// The kernel's text for the errnos a launch meets, like strerror.
pub fn errno_text(e: i32) -> &'static str {
    match e {
        1 => "Operation not permitted",
        2 => "No such file or directory",
        7 => "Argument list too long",
        8 => "Exec format error",
        9 => "Bad file descriptor",
        12 => "Cannot allocate memory",
        13 => "Permission denied",
        14 => "Bad address",
        16 => "Device or resource busy",
        20 => "Not a directory",
        21 => "Is a directory",
        22 => "Invalid argument",
        24 => "Too many open files",
        26 => "Text file busy",
        32 => "Broken pipe",
        36 => "File name too long",
        38 => "Function not implemented",
        40 => "Too many levels of symbolic links",
        95 => "Operation not supported",
        _ => "Unknown error",
    }
}

/// `text (os error N)`, as Rust's io::Error prints it.
pub fn errno(b: &mut Buf, e: i32) -> &mut Buf {
    b.str(errno_text(e))
        .str(" (os error ")
        .int(i64::from(e))
        .str(")")
}
