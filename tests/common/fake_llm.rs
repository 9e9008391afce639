//! Local fake model servers: an HTTP/1.1 server (keep-alive, chunked
//! streaming, cuts, hangs) whose replies a test scripts, and builders for
//! the two wire formats as the providers document them (OpenAI Chat
//! Completions chunks, Anthropic Messages events).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Lowercased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the whole request had arrived.
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == &name.to_ascii_lowercase())
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }

    /// The raw request (headers and body) as text, for "contains" checks.
    pub fn raw(&self) -> String {
        let mut s = format!("{} {}\n", self.method, self.path);
        for (k, v) in &self.headers {
            s.push_str(&format!("{k}: {v}\n"));
        }
        s.push_str(&String::from_utf8_lossy(&self.body));
        s
    }
}

/// One step of a reply body.
#[derive(Debug, Clone)]
pub enum Part {
    /// Written (as one chunk when the reply is chunked) and flushed.
    Bytes(Vec<u8>),
    Sleep(Duration),
    /// Close the connection here, without ending the body: a cut stream.
    Cut,
    /// Stop sending and keep the connection open until the client leaves.
    Hang,
    /// These bytes as `n` chunks (a huge body without holding it).
    Repeat(Vec<u8>, usize),
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub parts: Vec<Part>,
    /// Send nothing at all, not even headers, until the client leaves.
    pub silent: bool,
}

impl Reply {
    /// A 200 event stream with `body`, sent as one chunk.
    pub fn sse(body: Vec<u8>) -> Reply {
        Reply::sse_parts(vec![Part::Bytes(body)])
    }

    pub fn sse_parts(parts: Vec<Part>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            parts,
            silent: false,
        }
    }

    /// A 200 event stream sent `n` bytes per chunk, each flushed.
    pub fn sse_in_pieces(body: &[u8], n: usize) -> Reply {
        Reply::sse_parts(body.chunks(n).map(|c| Part::Bytes(c.to_vec())).collect())
    }

    pub fn json(status: u16, v: &Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            parts: vec![Part::Bytes(v.to_string().into_bytes())],
            silent: false,
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }

    /// Accept the request and never answer.
    pub fn silent() -> Reply {
        Reply {
            status: 200,
            headers: vec![],
            parts: vec![],
            silent: true,
        }
    }
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// A fake model server on 127.0.0.1 (threads are left running when it is
/// dropped; each test has its own).
pub struct FakeServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    requests: Arc<Mutex<Vec<Request>>>,
    /// When each reply's last byte was written, by request index.
    replied: Arc<Mutex<Vec<(usize, Instant)>>>,
}

impl FakeServer {
    /// Answer request N (0-based, over all connections) with `handler`.
    pub fn start(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> FakeServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replied = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (r, d) = (requests.clone(), replied.clone());
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(c) = conn else { continue };
                let (r, d, h) = (r.clone(), d.clone(), handler.clone());
                std::thread::spawn(move || serve_conn(c, &r, &d, &*h));
            }
        });
        FakeServer {
            base,
            requests,
            replied,
        }
    }

    /// Reply with `replies` in order (then 500s).
    pub fn script(replies: Vec<Reply>) -> FakeServer {
        FakeServer::start(move |_, i| {
            replies.get(i).cloned().unwrap_or_else(|| {
                Reply::json(
                    500,
                    &json!({"error": {"message": "script exhausted", "type": "test"}}),
                )
            })
        })
    }

    /// `base` + `/v1` (an OpenAI-style base URL).
    pub fn v1(&self) -> String {
        format!("{}/v1", self.base)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// When reply `i` was completely written.
    pub fn replied_at(&self, i: usize) -> Option<Instant> {
        self.replied
            .lock()
            .unwrap()
            .iter()
            .find(|(j, _)| *j == i)
            .map(|x| x.1)
    }
}

fn read_request(c: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let mut tmp = [0u8; 16384];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        match c.read(&mut tmp) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next()?.to_string();
    let mut it = first.split(' ');
    let method = it.next()?.to_string();
    let path = it.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let start = head_end + 4;
    while buf.len() < start + len {
        match c.read(&mut tmp) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let body = buf[start..start + len].to_vec();
    buf.drain(..start + len);
    Some(Request {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
    })
}

fn wait_for_close(c: &mut TcpStream) {
    let mut tmp = [0u8; 1024];
    while matches!(c.read(&mut tmp), Ok(n) if n > 0) {}
}

fn serve_conn(
    mut c: TcpStream,
    requests: &Mutex<Vec<Request>>,
    replied: &Mutex<Vec<(usize, Instant)>>,
    handler: &Handler,
) {
    let _ = c.set_nodelay(true);
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut c, &mut buf) {
        let index = {
            let mut r = requests.lock().unwrap();
            r.push(req.clone());
            r.len() - 1
        };
        let reply = handler(&req, index);
        if reply.silent {
            wait_for_close(&mut c);
            return;
        }
        let reason = match reply.status {
            200 => "OK",
            401 => "Unauthorized",
            404 => "Not Found",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            _ => "Status",
        };
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        if c.write_all(head.as_bytes()).is_err() {
            return;
        }
        for p in &reply.parts {
            match p {
                Part::Bytes(b) if b.is_empty() => {}
                Part::Bytes(b) => {
                    let mut chunk = format!("{:x}\r\n", b.len()).into_bytes();
                    chunk.extend_from_slice(b);
                    chunk.extend_from_slice(b"\r\n");
                    if c.write_all(&chunk).and_then(|_| c.flush()).is_err() {
                        return;
                    }
                }
                Part::Repeat(b, n) => {
                    let mut chunk = format!("{:x}\r\n", b.len()).into_bytes();
                    chunk.extend_from_slice(b);
                    chunk.extend_from_slice(b"\r\n");
                    for _ in 0..*n {
                        if c.write_all(&chunk).is_err() {
                            return;
                        }
                    }
                }
                Part::Sleep(d) => std::thread::sleep(*d),
                Part::Cut => {
                    let _ = c.shutdown(std::net::Shutdown::Both);
                    return;
                }
                Part::Hang => {
                    wait_for_close(&mut c);
                    return;
                }
            }
        }
        if c.write_all(b"0\r\n\r\n").and_then(|_| c.flush()).is_err() {
            return;
        }
        replied.lock().unwrap().push((index, Instant::now()));
    }
}

/// The peak resident set (`VmHWM`, KiB) of a running process. Exact for
/// the program it runs: exec starts a new address space, whose high-water
/// mark is its own (unlike `ru_maxrss`, which carries the parent's RSS
/// into a child spawned with vfork).
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    st.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Run `cmd` to completion; its output and its peak resident set (KiB,
/// [`vm_hwm_kib`] sampled every 2 ms until it exits).
pub fn run_measured(cmd: Command) -> (Output, u64) {
    run_measured_pid(cmd, |_| {})
}

/// [`run_measured`], telling `spawned` the child's pid first.
pub fn run_measured_pid(mut cmd: Command, spawned: impl FnOnce(u32)) -> (Output, u64) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    spawned(pid);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if let Some(k) = vm_hwm_kib(pid) {
                    peak.fetch_max(k, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let status = child.wait().unwrap();
    done.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let output = Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    };
    (output, peak.load(Ordering::SeqCst))
}

// ------------------------------------------------------------- OpenAI

/// Chat Completions stream pieces.
pub mod openai {
    use super::*;

    pub fn chunk(delta: Value, finish: Option<&str>) -> Value {
        json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
               "model": "test-model", "system_fingerprint": "fp_test",
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    }

    pub fn usage(prompt: u64, completion: u64) -> Value {
        json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
               "model": "test-model", "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion,
                         "prompt_tokens_details": {"cached_tokens": 0},
                         "completion_tokens_details": {"reasoning_tokens": 0}}})
    }

    /// `data: {chunk}` events, then `data: [DONE]`.
    pub fn sse(chunks: &[Value]) -> Vec<u8> {
        let mut s = String::new();
        for c in chunks {
            s.push_str(&format!("data: {c}\n\n"));
        }
        s.push_str("data: [DONE]\n\n");
        s.into_bytes()
    }

    /// A streamed text answer in `pieces`.
    pub fn text(pieces: &[&str]) -> Vec<u8> {
        let mut c = vec![chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        )];
        c.extend(pieces.iter().map(|p| chunk(json!({"content": p}), None)));
        c.push(chunk(json!({}), Some("stop")));
        c.push(usage(12, 7));
        sse(&c)
    }

    /// Streamed tool calls `(id, name, arguments JSON)`, each call's
    /// arguments split in 3-byte pieces, the calls interleaved.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Vec<u8> {
        let mut c = vec![chunk(json!({"role": "assistant", "content": null}), None)];
        for (i, (id, name, _)) in calls.iter().enumerate() {
            c.push(chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                                       "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
        }
        let args: Vec<Vec<char>> = calls
            .iter()
            .map(|(_, _, a)| a.to_string().chars().collect())
            .collect();
        let longest = args.iter().map(Vec::len).max().unwrap_or(0);
        let mut at = 0;
        while at < longest {
            for (i, a) in args.iter().enumerate() {
                if at < a.len() {
                    let piece: String = a[at..(at + 3).min(a.len())].iter().collect();
                    c.push(chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
            }
            at += 3;
        }
        c.push(chunk(json!({}), Some("tool_calls")));
        c.push(usage(30, 9));
        sse(&c)
    }
}

// ----------------------------------------------------------- Anthropic

/// Messages stream events.
pub mod anthropic {
    use super::*;

    pub fn sse(events: &[Value]) -> Vec<u8> {
        let mut s = String::new();
        for e in events {
            s.push_str(&format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap()
            ));
        }
        s.into_bytes()
    }

    pub fn start(input_tokens: u64) -> Value {
        json!({"type": "message_start", "message": {"id": "msg_test", "type": "message", "role": "assistant",
            "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}})
    }

    pub fn stop(reason: &str, output_tokens: u64) -> [Value; 2] {
        [
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
                   "usage": {"output_tokens": output_tokens}}),
            json!({"type": "message_stop"}),
        ]
    }

    pub fn text_block(index: usize, pieces: &[&str]) -> Vec<Value> {
        let mut v = vec![json!({"type": "content_block_start", "index": index,
                                "content_block": {"type": "text", "text": ""}})];
        for p in pieces {
            v.push(json!({"type": "content_block_delta", "index": index,
                          "delta": {"type": "text_delta", "text": p}}));
        }
        v.push(json!({"type": "content_block_stop", "index": index}));
        v
    }

    pub fn thinking_block(index: usize, thinking: &str, signature: &str) -> Vec<Value> {
        vec![
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "thinking_delta", "thinking": thinking}}),
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "signature_delta", "signature": signature}}),
            json!({"type": "content_block_stop", "index": index}),
        ]
    }

    /// A tool_use block whose input JSON arrives in 4-byte pieces.
    pub fn tool_block(index: usize, id: &str, name: &str, input: &Value) -> Vec<Value> {
        let mut v = vec![json!({"type": "content_block_start", "index": index,
                                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})];
        let s: Vec<char> = input.to_string().chars().collect();
        for piece in s.chunks(4) {
            v.push(json!({"type": "content_block_delta", "index": index,
                          "delta": {"type": "input_json_delta", "partial_json": piece.iter().collect::<String>()}}));
        }
        v.push(json!({"type": "content_block_stop", "index": index}));
        v
    }

    /// A complete text answer.
    pub fn text(pieces: &[&str]) -> Vec<u8> {
        let mut e = vec![start(15), json!({"type": "ping"})];
        e.extend(text_block(0, pieces));
        e.extend(stop("end_turn", 6));
        sse(&e)
    }
}
