//! Downloaders, and running what they downloaded earlier in the command.

use super::classify::{basename, runs_code, runs_code_by_design};
use crate::gate::word::Word;
use crate::gate::Ctx;

pub(crate) fn is_downloader(base: &str) -> bool {
    matches!(
        base,
        "curl"
            | "wget"
            | "wget2"
            | "fetch"
            | "aria2c"
            | "http"
            | "https"
            | "xh"
            | "lwp-request"
            | "lwp-download"
            | "GET"
            | "lynx"
            | "w3m"
            | "links"
            | "elinks"
            | "nc"
            | "ncat"
            | "netcat"
            | "socat"
            | "tftp"
            | "ftp"
            | "gh"
            | "httpie"
            | "curlie"
    )
}

/// A downloader's output files are recorded; running one later in the
/// command (`curl -o x.sh URL && ./x.sh`, `wget URL; sh install.sh`) is
/// running downloaded code.
pub(super) fn downloaded_code(ctx: &mut Ctx, prog: &str, base: &str, args: &[Word]) {
    let norm = |t: &str| t.trim_start_matches("./").to_string();
    if is_downloader(base) {
        let mut i = 0;
        let mut named = false;
        while i < args.len() {
            let t = args[i].text.as_str();
            let out = match t {
                "-o" | "--output" | "-O" | "--output-document"
                    if !(base == "curl" && t == "-O") =>
                {
                    i += 1;
                    args.get(i).map(|w| w.text.clone())
                }
                _ => t
                    .strip_prefix("--output=")
                    .or_else(|| t.strip_prefix("--output-document="))
                    .or_else(|| {
                        t.strip_prefix("-o")
                            .filter(|v| !v.is_empty() && !t.starts_with("--"))
                    })
                    .map(str::to_string),
            };
            if let Some(o) = out {
                named = true;
                if o != "-" {
                    ctx.downloads.push(norm(&o));
                }
            }
            i += 1;
        }
        if !named {
            // `curl -O URL`, `wget URL`: the URL's last path component.
            for w in args.iter().filter(|w| w.text.contains("://")) {
                if let Some(name) = w
                    .text
                    .split(['?', '#'])
                    .next()
                    .and_then(|u| u.rsplit('/').next())
                {
                    if !name.is_empty() && !name.contains(':') {
                        ctx.downloads.push(name.to_string());
                    }
                }
            }
        }
        return;
    }
    if ctx.downloads.is_empty() {
        return;
    }
    let runs_file = ctx
        .downloads
        .iter()
        .any(|d| norm(prog) == *d || basename(prog) == d && prog.contains('/'));
    let feeds_file = (runs_code(base) || runs_code_by_design(base))
        && args
            .iter()
            .any(|a| ctx.downloads.iter().any(|d| norm(&a.text) == *d));
    if runs_file || feeds_file {
        ctx.danger(format!(
            "`{prog}` runs a file downloaded earlier in the command"
        ));
    }
}
