//! Risk-gate latency over the corpus, and a linearity check.
//!
//! Run: `cargo bench -p zot-policy --bench gate`
//! Prints p50 / p99 verdict latency (both modes) for corpus commands under
//! 1 KiB, the time per byte and bytes/s for inputs from 1 KiB to 1 MiB,
//! and the distinct-items cases (every finding different: the input that
//! made de-duplication quadratic) at 126 KB and 1 MiB, and pathological
//! 1 MiB inputs, against the targets (126 KB under 50 ms, anything under
//! 1 MiB under 1 s). Large inputs print the median (and fastest) of a few
//! runs and the median time on a CPU (the machine may be shared: wall time
//! far above CPU time means other processes had the cores), and next to
//! them the time tree-sitter-bash alone takes to parse the input and free
//! the tree, the floor under the gate.
//!
//! Arguments select cases by name (`corpus`, `linear`, `distinct`,
//! `distinct 126kb`, `distinct 1mib allowlist`, `word`, `subst`, `parens`,
//! `quotes`, `commands`, `stages`), for profiling one at a time, e.g. under
//! `valgrind --tool=callgrind --toggle-collect='*gate*evaluate*'`.

use std::time::{Duration, Instant};

use zot_policy::gate::{evaluate, GateMode};

fn corpus() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/gate_corpus.toml"
    ))
    .expect("read the corpus");
    let value: toml::Table = text.parse().expect("corpus parses");
    value["case"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c.get("cmd").and_then(|v| v.as_str()).map(str::to_string))
        .filter(|c| c.len() < 1024)
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

/// Cases named on the command line (substrings) run alone, e.g. for a
/// profiler: `gate quotes`, `gate "distinct 126kb"`; none named: all run.
struct Select(Vec<String>);

impl Select {
    fn from_args() -> Self {
        Select(
            std::env::args()
                .skip(1)
                .filter(|a| !a.starts_with('-'))
                .collect(),
        )
    }

    fn wants(&self, name: &str) -> bool {
        self.0.is_empty()
            || self
                .0
                .iter()
                .any(|f| name.contains(f.to_lowercase().as_str()))
    }
}

/// Time this thread has spent on a CPU (Linux: `/proc/thread-self/schedstat`),
/// so a run slowed by other processes on a shared machine can be told from
/// one that did more work.
fn cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Timings of `runs` runs of one case.
struct Timing {
    /// Median wall-clock time.
    median: Duration,
    fastest: Duration,
    /// Median time on a CPU, when the platform tells it.
    cpu: Option<Duration>,
}

impl Timing {
    fn show(&self) -> String {
        let cpu = match self.cpu {
            Some(c) => format!(", cpu {:.1} ms", ms(c)),
            None => String::new(),
        };
        format!(
            "{:.1} ms (fastest {:.1}{cpu})",
            ms(self.median),
            ms(self.fastest)
        )
    }
}

/// Runs `f` `runs` times (`ZOT_BENCH_RUNS` overrides `runs`, e.g. 1 under
/// a profiler); returns the timings and the last result.
fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (Timing, T) {
    let runs = std::env::var("ZOT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(runs);
    let mut wall = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let c = cpu_time();
        let t = Instant::now();
        let v = std::hint::black_box(f());
        wall.push(t.elapsed());
        if let (Some(before), Some(after)) = (c, cpu_time()) {
            cpu.push(after.saturating_sub(before));
        }
        last = Some(v);
    }
    wall.sort();
    cpu.sort();
    let timing = Timing {
        median: wall[wall.len() / 2],
        fastest: wall[0],
        cpu: (cpu.len() == runs).then(|| cpu[cpu.len() / 2]),
    };
    (timing, last.expect("runs > 0"))
}

/// The floor under the gate: tree-sitter-bash parsing `src` and freeing
/// the tree, nothing else.
fn parser_alone(src: &str, runs: usize) -> Timing {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .expect("load tree-sitter-bash");
    timed(runs, || drop(parser.parse(src, None))).0
}

fn main() {
    let select = Select::from_args();
    let allow: Vec<String> = [
        "git", "ls", "grep", "rg", "cat", "wc", "sed", "awk", "find", "xargs", "rm",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Parser creation and language loading happen once per thread; do it
    // before any timing.
    evaluate("true", GateMode::Ask, &allow);

    if select.wants("corpus") {
        let cmds = corpus();
        for c in &cmds {
            evaluate(c, GateMode::Allowlist, &allow);
        }
        let rounds = 50;
        let mut samples = Vec::with_capacity(cmds.len() * rounds * 2);
        for _ in 0..rounds {
            for c in &cmds {
                for mode in [GateMode::Ask, GateMode::Allowlist] {
                    let t = Instant::now();
                    let v = evaluate(c, mode, &allow);
                    samples.push(t.elapsed());
                    std::hint::black_box(v);
                }
            }
        }
        samples.sort();
        let p50 = percentile(&samples, 0.50);
        let p99 = percentile(&samples, 0.99);
        let max = *samples.last().unwrap();
        println!(
            "corpus: {} commands under 1 KiB, {} verdicts",
            cmds.len(),
            samples.len()
        );
        println!(
            "p50 {:.1} us   p99 {:.1} us   max {:.1} us",
            us(p50),
            us(p99),
            us(max)
        );
        println!(
            "targets: p50 < 20 us: {}   p99 < 200 us: {}",
            ok(p50 < Duration::from_micros(20)),
            ok(p99 < Duration::from_micros(200))
        );
    }

    // Linearity: a realistic pipeline repeated up to 1 MiB.
    if select.wants("linear") {
        let unit = "git log --oneline -n 5 | grep -v 'wip' && rg -n \"fn main\" src ; ";
        let mut per_byte = Vec::new();
        println!("size        time        ns/byte   (median of runs)");
        for kib in [1usize, 4, 16, 64, 256, 1024] {
            let target = kib * 1024;
            let mut s = String::with_capacity(target + unit.len());
            while s.len() + unit.len() <= target {
                s.push_str(unit);
            }
            let runs = (1024 / kib).clamp(3, 64);
            let (t, _) = timed(runs, || evaluate(&s, GateMode::Allowlist, &allow));
            let nspb = t.median.as_nanos() as f64 / s.len() as f64;
            per_byte.push(nspb);
            println!("{:>5} KiB  {:>9.2} ms  {:>8.1}", kib, ms(t.median), nspb);
            if kib == 1024 {
                println!(
                    "1 MiB pipeline: {}; parser alone {}",
                    t.show(),
                    parser_alone(&s, 3).show()
                );
            }
        }
        let (lo, hi) = per_byte
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        println!(
            "linearity: ns/byte varies {:.2}x from 1 KiB to 1 MiB (linear if close to 1): {}",
            hi / lo,
            ok(hi / lo < 3.0)
        );
        println!(
            "throughput at 1 MiB: {:.1} MB/s",
            1e3 / per_byte.last().copied().unwrap_or(f64::MAX)
        );
    }

    // Distinct items: every `$vN` is its own finding with its own reason
    // (`rm -r` of a path that depends on expansion).
    let distinct = |target: usize| {
        let mut s = String::from("rm -rf");
        let mut n = 0;
        while s.len() < target {
            s.push_str(&format!(" $v{n}"));
            n += 1;
        }
        s.truncate(target);
        s
    };
    let mut worst: Option<Duration> = None;
    for (label, size, limit, runs) in [
        ("126 KB", 126_000usize, Duration::from_millis(50), 5),
        ("1 MiB", (1 << 20) - 16, Duration::from_secs(1), 3),
    ] {
        let s = distinct(size);
        let mut floor = None;
        for mode in [GateMode::Ask, GateMode::Allowlist] {
            let name = format!("distinct {} {mode:?}", label.replace(' ', "")).to_lowercase();
            if !select.wants(&name) {
                continue;
            }
            let (t, v) = timed(runs, || evaluate(&s, mode, &allow));
            worst = worst.max(Some(t.median));
            println!(
                "distinct items, {label} ({} B, {mode:?}): {}, {} reasons, {:.1} MB/s   target < {} ms: {}",
                s.len(),
                t.show(),
                v.reasons.len(),
                s.len() as f64 / t.median.as_secs_f64() / 1e6,
                limit.as_millis(),
                ok(t.median < limit)
            );
            floor.get_or_insert_with(|| parser_alone(&s, runs));
        }
        if let Some(floor) = floor {
            println!("distinct items, {label}: parser alone {}", floor.show());
        }
    }

    // 1 MiB worst cases: one huge word, deep nesting, many short words.
    // Also inputs on which tree-sitter-bash itself is slow: many short
    // commands (`a;a;...`: two nodes per byte), and a long pipeline that
    // ends in a syntax error (its error recovery takes time and memory
    // that grow with the square of the stages).
    type Make = fn() -> String;
    let cases: [(&str, &str, Make); 6] = [
        ("word", "1 MiB single word", || "a".repeat(1 << 20)),
        ("subst", "1 MiB of `$(`", || "$(".repeat(1 << 19)),
        ("parens", "1 MiB of `(`", || "(".repeat(1 << 20)),
        ("quotes", "1 MiB quotes", || {
            "'a' \"b\" ".repeat((1 << 20) / 8)
        }),
        ("commands", "1 MiB of `a;`", || {
            "a;".repeat((1 << 20) / 2 - 1)
        }),
        ("stages", "8,000 stages ending in `|` (16 KB)", || {
            "a|".repeat(8_000)
        }),
    ];
    for (key, name, make) in cases {
        if !select.wants(key) {
            continue;
        }
        let s = make();
        let (t, v) = timed(3, || evaluate(&s, GateMode::Ask, &allow));
        worst = worst.max(Some(t.median));
        println!(
            "{name}: {} -> {}; parser alone {}   target < 1000 ms: {}",
            t.show(),
            v.decision.as_str(),
            parser_alone(&s, 3).show(),
            ok(t.median < Duration::from_secs(1))
        );
    }
    if let Some(worst) = worst {
        println!(
            "slowest large input: {:.1} ms   target < 1000 ms: {}",
            ms(worst),
            ok(worst < Duration::from_secs(1))
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ok(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "MISSED"
    }
}
