//! `zot models [--json]`: the providers and models zot knows (catalog and
//! config file), which are available here, and why the others are not.

use zot_agent::models::Report;

#[derive(clap::Args)]
pub struct Args {
    /// Print the report as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let report = zot_agent::models_report()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(0);
    }
    print!("{}", render(&report));
    Ok(0)
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn render(r: &Report) -> String {
    let mut out = String::new();
    match (&r.config, r.config_exists) {
        (Some(p), true) => out.push_str(&format!("config: {}\n\n", p.display())),
        (Some(p), false) => out.push_str(&format!(
            "config: {} (not present: defaults)\n\n",
            p.display()
        )),
        (None, _) => out.push_str("config: none (no ZOT_HOME, XDG_CONFIG_HOME or HOME)\n\n"),
    }
    let mut rows = vec![vec![
        "PROVIDER".into(),
        "API".into(),
        "BASE URL".into(),
        "KEY".into(),
        "STATUS".into(),
    ]];
    for p in &r.providers {
        rows.push(vec![
            p.name.clone(),
            p.api.into(),
            p.base_url.clone().unwrap_or_else(|| "-".into()),
            p.api_key_env
                .clone()
                .unwrap_or_else(|| "none needed".into()),
            match &p.reason {
                None => "available".into(),
                Some(why) => format!("unavailable: {why}"),
            },
        ]);
    }
    out.push_str(&table(&rows));
    out.push('\n');
    let mut rows = vec![vec![
        "MODEL".into(),
        "PROVIDER".into(),
        "CONTEXT".into(),
        "REASONING".into(),
        "VISION".into(),
        "STATUS".into(),
    ]];
    for m in &r.models {
        let mut status = match &m.reason {
            None => "available".to_string(),
            Some(why) => format!("unavailable: {why}"),
        };
        if m.default {
            status.push_str(" (default)");
        }
        rows.push(vec![
            m.model.id.clone(),
            m.model.provider.clone(),
            m.model.context_window.map_or("?".into(), |c| c.to_string()),
            yes_no(m.model.reasoning).into(),
            yes_no(m.model.vision).into(),
            status,
        ]);
    }
    out.push_str(&table(&rows));
    out
}
