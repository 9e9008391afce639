//! Risk-gate latency over the corpus, and a linearity check.
//!
//! Run: `cargo bench -p zot-policy --bench gate`
//! Prints p50 / p99 verdict latency (both modes) for corpus commands under
//! 1 KiB, the time per byte and bytes/s for inputs from 1 KiB to 1 MiB,
//! and the distinct-items cases (every finding different: the input that
//! made de-duplication quadratic) at 126 KB and 1 MiB, against the targets
//! (126 KB under 50 ms, anything under 1 MiB under 1 s).

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

fn main() {
    let allow: Vec<String> = [
        "git", "ls", "grep", "rg", "cat", "wc", "sed", "awk", "find", "xargs", "rm",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cmds = corpus();
    // Warm up (parser creation, caches).
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

    // Linearity: a realistic pipeline repeated up to 1 MiB.
    let unit = "git log --oneline -n 5 | grep -v 'wip' && rg -n \"fn main\" src ; ";
    let mut per_byte = Vec::new();
    println!("size        time        ns/byte");
    for kib in [1usize, 4, 16, 64, 256, 1024] {
        let target = kib * 1024;
        let mut s = String::with_capacity(target + unit.len());
        while s.len() + unit.len() <= target {
            s.push_str(unit);
        }
        let reps = (1024 / kib).clamp(1, 64);
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(evaluate(&s, GateMode::Allowlist, &allow));
        }
        let each = t.elapsed() / reps as u32;
        let nspb = each.as_nanos() as f64 / s.len() as f64;
        per_byte.push(nspb);
        println!(
            "{:>5} KiB  {:>9.2} ms  {:>8.1}",
            kib,
            each.as_secs_f64() * 1e3,
            nspb
        );
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

    // Distinct items: every `$vN` is its own finding with its own reason
    // (`rm -r` of a path that depends on expansion).
    let distinct = |target: usize, mode: GateMode| {
        let mut s = String::from("rm -rf");
        let mut n = 0;
        while s.len() < target {
            s.push_str(&format!(" $v{n}"));
            n += 1;
        }
        s.truncate(target);
        let t = Instant::now();
        let v = evaluate(&s, mode, &allow);
        (s.len(), t.elapsed(), v.reasons.len())
    };
    let mut worst = Duration::ZERO;
    for (label, size, limit) in [
        ("126 KB", 126_000usize, Duration::from_millis(50)),
        ("1 MiB", (1 << 20) - 16, Duration::from_secs(1)),
    ] {
        for mode in [GateMode::Ask, GateMode::Allowlist] {
            let (len, took, reasons) = distinct(size, mode);
            worst = worst.max(took);
            println!(
                "distinct items, {label} ({len} B, {mode:?}): {:.1} ms, {reasons} reasons, {:.1} MB/s   target < {} ms: {}",
                took.as_secs_f64() * 1e3,
                len as f64 / took.as_secs_f64() / 1e6,
                limit.as_millis(),
                ok(took < limit)
            );
        }
    }

    // A 1 MiB worst case of one huge word, and deep nesting.
    for (name, s) in [
        ("1 MiB single word", "a".repeat(1 << 20)),
        ("1 MiB of `$(`", "$(".repeat(1 << 19)),
        ("1 MiB of `(`", "(".repeat(1 << 20)),
        ("1 MiB quotes", "'a' \"b\" ".repeat((1 << 20) / 8)),
    ] {
        let t = Instant::now();
        let v = evaluate(&s, GateMode::Ask, &allow);
        let took = t.elapsed();
        worst = worst.max(took);
        println!(
            "{name}: {:.1} ms -> {}   target < 1000 ms: {}",
            took.as_secs_f64() * 1e3,
            v.decision.as_str(),
            ok(took < Duration::from_secs(1))
        );
    }
    println!(
        "slowest input under 1 MiB: {:.1} ms   target < 1000 ms: {}",
        worst.as_secs_f64() * 1e3,
        ok(worst < Duration::from_secs(1))
    );
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
