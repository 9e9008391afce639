//! `zot agents [--json]`: list installed agents.

use serde_json::json;
use zot_agent::store;

#[derive(clap::Args)]
pub struct Args {
    /// Print the list as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let home = zot_agent::home::zot_home()?;
    let list = store::list(&home)?;
    let default = store::default_name(&home)?;
    if a.json {
        let v: Vec<_> = list
            .iter()
            .map(|r| {
                let mut o = serde_json::to_value(r).expect("record serializes");
                o["default"] = json!(default.as_deref() == Some(r.name.as_str()));
                o
            })
            .collect();
        super::inspect::emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        return Ok(0);
    }
    if list.is_empty() {
        super::inspect::emit("no agents installed (zot install REF|DIR|FILE)\n")?;
        return Ok(0);
    }
    let rows: Vec<[String; 5]> = list
        .iter()
        .map(|r| {
            let mark = if default.as_deref() == Some(r.name.as_str()) {
                "*"
            } else {
                " "
            };
            [
                format!("{mark} {}", r.name),
                r.display_version(),
                super::registry::short(r.manifest_digest.as_deref().unwrap_or(&r.digest)),
                humantime_secs(r.installed_at),
                r.source.clone(),
            ]
        })
        .collect();
    let head = ["  NAME", "VERSION", "DIGEST", "INSTALLED", "SOURCE"];
    let mut w = [0usize; 5];
    for row in std::iter::once(&head.map(String::from)).chain(rows.iter()) {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(head.map(String::from)).chain(rows) {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = w[i]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    super::inspect::emit(&out)?;
    Ok(0)
}

/// `YYYY-MM-DD HH:MM` UTC of a Unix time.
fn humantime_secs(t: u64) -> String {
    let days = (t / 86400) as i64;
    let (h, m) = ((t % 86400) / 3600, (t % 3600) / 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if mo <= 2 { 1 } else { 0 };
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}")
}
