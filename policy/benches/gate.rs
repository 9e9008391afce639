//! Risk-gate latency over the corpus, a linearity check, and the
//! pathological inputs.
//!
//! Run: `cargo bench -p zot-policy --bench gate`
//! Prints p50 / p99 verdict latency (both modes) for corpus commands under
//! 1 KiB; the time per byte and bytes/s for ordinary commands from 1 KiB
//! to 512 KiB; the distinct-items cases (every finding different: the
//! input that made de-duplication quadratic) at 126 KB and 1 MiB; and a
//! sweep of pathological shapes (`sweep`), each from 1 KiB to 1 MiB in a
//! child process of its own, with its time, its peak resident memory and
//! its verdict, against the targets (126 KB under 50 ms, anything under
//! 1 MiB under 1 s and 512 MiB). Large inputs print the median (and
//! fastest) of a few runs and the median time on a CPU (the machine may be
//! shared: wall time far above CPU time means other processes had the
//! cores), and next to them the time tree-sitter-bash alone takes to parse
//! the input and free the tree (`ZOT_BENCH_FLOOR=1` in the sweep).
//!
//! Arguments select cases by name (`corpus`, `linear`, `distinct`,
//! `distinct 126kb`, `distinct 1mib allowlist`, `sweep` for every shape,
//! or a shape's key: `word`, `subst`, `parens`, `quotes`, `commands`,
//! `stages`, `heredocs`, `many-redirects`, ...), for profiling one at a
//! time, e.g. under
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
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child(&spec);
    }
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

    // Linearity: realistic commands repeated up to 512 KiB. (Larger
    // inputs, and any with more than MAX_PIPES `|`, are over the parse
    // bounds: the sweep below shows those. So the unit has no `|`.)
    if select.wants("linear") {
        let unit = "git log --oneline -n 5 && grep -v 'wip' f && rg -n \"fn main\" src ; ";
        let mut per_byte = Vec::new();
        println!("size        time        ns/byte   (median of runs)  verdict");
        for kib in [1usize, 4, 16, 64, 256, 512] {
            let target = kib * 1024;
            let mut s = String::with_capacity(target + unit.len());
            while s.len() + unit.len() <= target {
                s.push_str(unit);
            }
            let runs = (1024 / kib).clamp(3, 64);
            let (t, v) = timed(runs, || evaluate(&s, GateMode::Allowlist, &allow));
            let nspb = t.median.as_nanos() as f64 / s.len() as f64;
            per_byte.push(nspb);
            println!(
                "{:>5} KiB  {:>9.2} ms  {:>8.1}   {} {}",
                kib,
                ms(t.median),
                nspb,
                v.decision.as_str(),
                v.reasons.first().map_or("", String::as_str)
            );
            if kib == 512 {
                println!(
                    "512 KiB of commands: {}; parser alone {}",
                    t.show(),
                    parser_alone(&s, 3).show()
                );
            }
        }
        let (lo, hi) = per_byte
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        println!(
            "linearity: ns/byte varies {:.2}x from 1 KiB to 512 KiB (linear if close to 1): {}",
            hi / lo,
            ok(hi / lo < 3.0)
        );
        println!(
            "throughput at 512 KiB: {:.1} MB/s",
            1e3 / per_byte.last().copied().unwrap_or(f64::MAX)
        );
    }

    // 1 MiB pipelines: one long pipeline (refused before parsing), the same
    // bars quoted (text: parsed and allowed), and a 1 MiB script of short
    // pipelines (each counted on its own).
    if select.wants("pipeline") {
        let mib = 1 << 20;
        let cases = [
            ("1 MiB pipeline `a|a|...|a`", fill("", "a|", "a", mib)),
            ("1 MiB of `|` in quotes", fill("echo '", "|", "'", mib)),
            (
                "1 MiB script of short pipelines",
                fill("", "git log --oneline | grep fix | wc -l\n", "", mib),
            ),
        ];
        for (label, src) in cases {
            for mode in [GateMode::Ask, GateMode::Allowlist] {
                let (t, v) = timed(3, || evaluate(&src, mode, &allow));
                println!(
                    "{label} ({mode:?}): {} -> {} {}   target < 1 s: {}",
                    t.show(),
                    v.decision.as_str(),
                    v.reasons.first().map_or("", |r| &r[..r.len().min(90)]),
                    ok(t.median < Duration::from_secs(1))
                );
            }
        }
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

    // Pathological shapes, each at sizes from 1 KiB to 1 MiB (doubling),
    // each size in a process of its own (see `sweep`).
    if let Some(slowest) = sweep(&select) {
        worst = worst.max(Some(slowest));
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

/// One pathological input shape: a name to select it by, what it is, and
/// the input of (about) `n` bytes.
struct Shape {
    key: &'static str,
    what: &'static str,
    make: fn(usize) -> String,
}

/// `unit` repeated to about `n` bytes, between `head` and `tail`.
fn fill(head: &str, unit: &str, tail: &str, n: usize) -> String {
    let k = n.saturating_sub(head.len() + tail.len()) / unit.len();
    let mut s = String::with_capacity(n);
    s.push_str(head);
    for _ in 0..k.max(1) {
        s.push_str(unit);
    }
    s.push_str(tail);
    s
}

/// The shapes found by exploring tree-sitter-bash and the gate with size
/// sweeps: the first ones are the old large cases, then every shape on
/// which time or memory grew faster than the input (most of them syntax
/// errors that send tree-sitter's error recovery over the whole input),
/// then linear shapes that are dense or deep, then ordinary text.
const SHAPES: &[Shape] = &[
    Shape { key: "word", what: "one word", make: |n| "a".repeat(n) },
    Shape { key: "subst", what: "`$(` nested", make: |n| fill("", "$(", "", n) },
    Shape { key: "parens", what: "`(` nested", make: |n| fill("", "(", "", n) },
    Shape { key: "quotes", what: "short quoted words", make: |n| fill("", "'a' \"b\" ", "", n) },
    Shape { key: "commands", what: "`a;a;...`", make: |n| fill("", "a;", "", n) },
    Shape { key: "stages", what: "pipeline ending in `|`", make: |n| fill("", "a|", "", n) },
    Shape { key: "stages-amp", what: "`a|&a|&...`", make: |n| fill("", "a|&", "", n) },
    Shape { key: "stages-paren", what: "pipeline then `)`", make: |n| fill("", "a|", "a )", n) },
    Shape { key: "stages-group", what: "`{ a|a|...a` (unclosed)", make: |n| fill("{ ", "a|", "a", n) },
    Shape { key: "stages-ok", what: "well-formed pipeline", make: |n| fill("", "a|", "a", n) },
    Shape { key: "stages-short", what: "`a|a|a|a|;` repeated", make: |n| fill("", "a|a|a|a|;", "", n) },
    Shape { key: "stages-nl", what: "`a<newline>|` repeated", make: |n| fill("", "a\n|", "", n) },
    Shape { key: "bars", what: "`|||...`", make: |n| fill("", "|", "", n) },
    Shape { key: "quoted-bars", what: "`echo '|||...'`", make: |n| fill("echo '", "|", "'", n) },
    Shape { key: "short-pipelines", what: "`git log | grep x | wc -l` lines", make: |n| fill("", "git log | grep x | wc -l\n", "", n) },
    Shape { key: "or-list", what: "`a||a||...||`", make: |n| fill("", "a||", "", n) },
    Shape { key: "close-parens", what: "`)))...`", make: |n| fill("", ")", "", n) },
    Shape { key: "case-open", what: "`case x in a;a;...`", make: |n| fill("case x in ", "a;", "", n) },
    Shape { key: "old-arith", what: "`$[$[...`", make: |n| fill("", "$[", "", n) },
    Shape { key: "array-open", what: "`a=(a=(...`", make: |n| fill("", "a=(", "", n) },
    Shape { key: "func-open", what: "`f() f() ...`", make: |n| fill("", "f() ", "", n) },
    Shape { key: "expansion-open", what: "`${${...` (unclosed)", make: |n| fill("", "${", "", n) },
    Shape { key: "herestring-open", what: "`<<<<<<...`", make: |n| fill("", "<<<", "", n) },
    Shape { key: "noclobber", what: "`>|>|...`", make: |n| fill("", ">|", "", n) },
    Shape { key: "test-parens", what: "`[[ ( [[ ( ...`", make: |n| fill("", "[[ (", "", n) },
    Shape { key: "regex-parens", what: "`[[ a =~ ( ...`", make: |n| fill("", "[[ a =~ (", "", n) },
    Shape { key: "declare-open", what: "`declare a=( ...`", make: |n| fill("", "declare a=( ", "", n) },
    Shape { key: "closing-braces", what: "`}}}...`", make: |n| fill("", "}", "", n) },
    Shape { key: "braces", what: "`{ { { ...`", make: |n| fill("", "{ ", "", n) },
    Shape { key: "arith-nest", what: "`$(( ( ( ...`", make: |n| fill("$((", "(", "1", n) },
    Shape { key: "arith-long", what: "`$((1+1+...))`", make: |n| fill("$((", "1+", "1))", n) },
    Shape { key: "expansions", what: "`$a$a...`", make: |n| fill("", "$a", "", n) },
    Shape { key: "dq-expansions", what: "`\"$a$a...\"`", make: |n| fill("\"", "$a", "\"", n) },
    Shape { key: "dq-open", what: "`\"a;a;...` (unclosed)", make: |n| fill("\"", "a;", "", n) },
    Shape { key: "subst-open", what: "`$(a;a;...` (unclosed)", make: |n| fill("$(", "a;", "", n) },
    Shape { key: "backticks", what: "backticks", make: |n| fill("", "`", "", n) },
    Shape { key: "assignments", what: "`a=b a=b ...`", make: |n| fill("", "a=b ", "", n) },
    Shape { key: "subscripts", what: "`a[1]=1 ...`", make: |n| fill("", "a[1]=1 ", "", n) },
    Shape { key: "array", what: "`a=(1 1 ...)`", make: |n| fill("a=(", "1 ", ")", n) },
    Shape { key: "case-items", what: "`case` with many items", make: |n| fill("case x in ", "a) b;; ", "esac", n) },
    Shape { key: "case-patterns", what: "`case x in a|a|...)`", make: |n| fill("case x in ", "a|", "a) b;; esac", n) },
    Shape { key: "heredocs", what: "many here-documents", make: |n| fill("", "cat <<E\nx\nE\n", "", n) },
    Shape { key: "heredoc-body", what: "one here-document, `$a` on each line", make: |n| fill("cat <<E\n", "x $a\n", "E\n", n) },
    Shape { key: "heredoc-starts", what: "`a <<E a <<E ...`", make: |n| fill("", "a <<E ", "\n", n) },
    Shape { key: "redirects", what: "`a>b a>b ...`", make: |n| fill("", "a>b ", "", n) },
    Shape { key: "negations", what: "`! ! ! ... a`", make: |n| fill("", "! ", "a", n) },
    Shape { key: "if-open", what: "`if a; then if a; then ...`", make: |n| fill("", "if a; then ", "", n) },
    Shape { key: "functions", what: "`f(){ a; }; ...`", make: |n| fill("", "f(){ a; }; ", "", n) },
    Shape { key: "comments", what: "`a #c` lines", make: |n| fill("", "a #c\n", "", n) },
    Shape { key: "wrappers", what: "`nice nice ... a`", make: |n| fill("", "nice ", "a", n) },
    Shape { key: "timeouts", what: "`timeout 1 timeout 1 ... a`", make: |n| fill("", "timeout 1 ", "a", n) },
    Shape { key: "env-chain", what: "`env X=1 env X=1 ... a`", make: |n| fill("", "env X=1 ", "a", n) },
    Shape { key: "xargs-chain", what: "`xargs xargs ... a`", make: |n| fill("", "xargs ", "a", n) },
    Shape { key: "find-execs", what: "`find . -exec a {} ; ...`", make: |n| fill("find .", " -exec a {} ;", "", n) },
    Shape { key: "options", what: "`git -c a=b -c a=b ... status`", make: |n| fill("git", " -c a=b", " status", n) },
    Shape { key: "sed-scripts", what: "`sed -e p -e p ...`", make: |n| fill("sed", " -e p", " f", n) },
    Shape { key: "long-option", what: "`git --aaa...`", make: |n| fill("git --", "a", "", n) },
    Shape { key: "long-path", what: "`rm -r a/../a/../...`", make: |n| fill("rm -r ", "a/../", "", n) },
    Shape { key: "dot-path", what: "`cat /././...`", make: |n| fill("cat ", "/.", "/x", n) },
    Shape { key: "concat", what: "`'a''a''a'...` (one word)", make: |n| fill("", "'a'", "", n) },
    Shape { key: "ansi-c", what: "`$'\\x41\\x41...'`", make: |n| fill("echo $'", "\\x41", "'", n) },
    Shape { key: "brace-words", what: "`{a,b}{a,b}...`", make: |n| fill("echo ", "{a,b}", "", n) },
    Shape { key: "many-redirects", what: "`a >b >b ...`", make: |n| fill("a", " >b", "", n) },
    Shape { key: "long-test", what: "`[[ a == a && ... ]]`", make: |n| fill("[[ a == a", " && a == a", " ]]", n) },
    Shape { key: "arith-cmd", what: "`(( a = a + a + ... ))`", make: |n| fill("(( a = a", " + a", " ))", n) },
    Shape { key: "expansion-nest", what: "`${a:-${a:-...}}` (closed)", make: |n| {
        let k = n.saturating_sub(6) / 7;
        format!("echo {}a{}", "${a:-".repeat(k), "}".repeat(k))
    } },
    Shape { key: "subst-nest", what: "`$(a $(a ...))` (closed)", make: |n| {
        let k = n.saturating_sub(5) / 5;
        format!("echo {}{}", "$(a ".repeat(k), ")".repeat(k))
    } },
    Shape { key: "subshell-nest", what: "`( ( ... a ) )` (closed)", make: |n| {
        let k = n.saturating_sub(1) / 4;
        format!("{}a{}", "( ".repeat(k), " )".repeat(k))
    } },
    Shape { key: "proc-substs", what: "`a <(a) <(a) ...`", make: |n| fill("a", " <(a)", "", n) },
    Shape { key: "background", what: "`a & a & ...`", make: |n| fill("", "a & ", "a", n) },
    Shape { key: "code-text", what: "`'$(x)' ... $((1))` (evaluator)", make: |n| fill("echo $((1))", " '$(x)'", "", n) },
    Shape { key: "func-calls", what: "`f0(){ f1; }; f1(){ f2; }; ...`", make: |n| {
        let mut s = String::new();
        let mut i = 0;
        while s.len() < n {
            s.push_str(&format!("f{i}(){{ f{}; }}; ", i + 1));
            i += 1;
        }
        s.truncate(s[..n.min(s.len())].rfind("; ").map_or(n, |e| e + 2));
        s
    } },
    Shape { key: "sh-c", what: "`sh -c 'a;a;...'` (parsed twice)", make: |n| fill("sh -c '", "a;", "'", n) },
    Shape { key: "distinct", what: "`rm -rf $v0 $v1 ...`", make: |n| {
        let mut s = String::from("rm -rf");
        let mut i = 0;
        while s.len() < n {
            s.push_str(&format!(" $v{i}"));
            i += 1;
        }
        s.truncate(n);
        s
    } },
    Shape { key: "script", what: "the corpus's commands, one a line", make: |n| {
        let lines = corpus().join("\n");
        let mut s = String::with_capacity(n + lines.len());
        while s.len() < n {
            s.push_str(&lines);
            s.push('\n');
        }
        s.truncate(s[..n].rfind('\n').unwrap_or(n));
        s
    } },
];

/// What a child process measures.
#[derive(Clone, Copy)]
enum Probe {
    /// `evaluate()` in ask mode.
    Gate,
    /// tree-sitter-bash alone, with no bounds (what the gate did before it
    /// had them); only run when `ZOT_BENCH_FLOOR=1`.
    Parser,
}

/// What a child process reports.
struct Outcome {
    median: Duration,
    cpu: Option<Duration>,
    /// Peak resident memory of the whole process (`VmHWM`), KiB.
    peak_kib: u64,
    verdict: String,
}

/// Peak resident set of this process so far (`VmHWM` in
/// `/proc/self/status`), KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    resident(&status, "VmHWM:")
}

fn resident(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

const CHILD_ENV: &str = "ZOT_BENCH_CHILD";

/// In a child process (`ZOT_BENCH_CHILD=shape:bytes:probe`): measure one
/// input and print the result on one line.
fn child(spec: &str) -> ! {
    let mut parts = spec.splitn(3, ':');
    let key = parts.next().unwrap_or("");
    let n: usize = parts.next().and_then(|v| v.parse().ok()).expect("size");
    let probe = match parts.next() {
        Some("parser") => Probe::Parser,
        _ => Probe::Gate,
    };
    let shape = SHAPES.iter().find(|s| s.key == key).expect("shape");
    let src = (shape.make)(n);
    let allow: Vec<String> = [
        "a", "cat", "echo", "git", "sed", "rm", "find", "xargs", "env", "nice", "timeout", "sh",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let runs = if n <= 64 << 10 { 5 } else { 3 };
    let (timing, verdict) = match probe {
        Probe::Gate => {
            evaluate("true", GateMode::Ask, &allow);
            let (t, v) = timed(runs, || evaluate(&src, GateMode::Ask, &allow));
            // Allowlist mode once: its decision, and its time if slower.
            let (t2, v2) = timed(1, || evaluate(&src, GateMode::Allowlist, &allow));
            let t = if t2.median > t.median { t2 } else { t };
            let why = v
                .reasons
                .iter()
                .find(|r| r.contains("too complex"))
                .or(v.reasons.first())
                .cloned()
                .unwrap_or_default();
            // Short: the parent reads the line only once the child is done.
            let why: String = why.chars().take(150).collect();
            (
                t,
                format!("{} / {}: {why}", v.decision.as_str(), v2.decision.as_str()),
            )
        }
        Probe::Parser => {
            let t = parser_alone(&src, runs);
            (t, String::new())
        }
    };
    println!(
        "{CHILD_ENV} {} {} {} {}",
        timing.median.as_nanos(),
        timing.cpu.map_or(0, |c| c.as_nanos()),
        peak_rss_kib().unwrap_or(0),
        verdict.replace('\n', " ")
    );
    std::process::exit(0)
}

/// Runs one input in a child process, killed past `limit` of wall time or
/// `max_kib` of resident memory (so that a parse without bounds cannot
/// take the machine's memory).
fn in_child(key: &str, n: usize, probe: Probe, limit: Duration, max_kib: u64) -> Result<Outcome, String> {
    use std::process::{Command, Stdio};
    let probe_name = match probe {
        Probe::Gate => "gate",
        Probe::Parser => "parser",
    };
    let mut child = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .env(CHILD_ENV, format!("{key}:{n}:{probe_name}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_seen = 0;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        let rss = std::fs::read_to_string(&status_path)
            .ok()
            .and_then(|s| resident(&s, "VmRSS:"))
            .unwrap_or(0);
        peak_seen = peak_seen.max(rss);
        let over = if rss > max_kib {
            Some(format!("killed at {} MiB", rss >> 10))
        } else if start.elapsed() > limit {
            Some(format!("killed after {} s ({} MiB)", limit.as_secs(), peak_seen >> 10))
        } else {
            None
        };
        if let Some(why) = over {
            let _ = child.kill();
            let _ = child.wait();
            return Err(why);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut out = String::new();
    use std::io::Read;
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut out);
    }
    if !status.success() {
        return Err(format!("failed: {status}"));
    }
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(CHILD_ENV))
        .ok_or("no result")?;
    let mut f = line.trim_start().splitn(4, ' ');
    let mut num = || f.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let median = Duration::from_nanos(num());
    let cpu = Some(num()).filter(|&c| c > 0).map(Duration::from_nanos);
    let peak_kib = num();
    Ok(Outcome {
        median,
        cpu,
        peak_kib,
        verdict: f.next().unwrap_or("").to_string(),
    })
}

/// Every shape at 1 KiB, 2 KiB, ... 1 MiB, each size in a child process:
/// the gate's median time per size (ms), the largest growth from one size
/// to the next (about 2 when time is linear), the gate's peak memory and
/// its verdict at 1 MiB. With `ZOT_BENCH_FLOOR=1`, also tree-sitter-bash
/// alone without bounds (what the gate did before it had them), killed
/// past 10 s or 3 GiB. Returns the slowest time seen.
fn sweep(select: &Select) -> Option<Duration> {
    let shapes: Vec<&Shape> = SHAPES
        .iter()
        .filter(|s| select.wants(s.key) || select.0.iter().any(|a| a == "sweep"))
        .collect();
    if shapes.is_empty() {
        return None;
    }
    let floor = std::env::var("ZOT_BENCH_FLOOR").is_ok_and(|v| v == "1");
    let sizes: Vec<usize> = (0..=10).map(|k| 1024usize << k).collect();
    println!(
        "sweep: the gate's time per size in ms (median of 3-5 runs in ask mode, or the allowlist-mode run if slower; each size in its own process;\n* = waited for a CPU more than it ran; the line below: CPU time), growth from one size to the next, peak RSS, verdict at 1 MiB (ask mode / allowlist mode)\n{:<16} {}  growth  peak RSS  verdict",
        "shape",
        sizes
            .iter()
            .map(|n| format!("{:>6}", size_name(*n)))
            .collect::<String>()
    );
    let mut slowest = Duration::ZERO;
    let mut worst_rss = (0u64, "");
    for shape in shapes {
        let mut probes = vec![(Probe::Gate, "")];
        if floor {
            probes.push((Probe::Parser, "  ts alone"));
        }
        for (probe, label) in probes {
            let mut cells = String::new();
            let mut cpu_cells = String::new();
            let mut times: Vec<Option<Duration>> = Vec::new();
            let mut peak = 0u64;
            let mut verdict = String::new();
            let mut stopped = None;
            for &n in &sizes {
                if stopped.is_some() {
                    cells.push_str(&format!("{:>6}", "-"));
                    cpu_cells.push_str(&format!("{:>6}", "-"));
                    times.push(None);
                    continue;
                }
                match in_child(shape.key, n, probe, Duration::from_secs(10), 3 << 20) {
                    Ok(o) => {
                        cells.push_str(&format!("{:>6}", short_ms(o.median)));
                        cpu_cells.push_str(&format!(
                            "{:>6}",
                            o.cpu.map_or("?".to_string(), short_ms)
                        ));
                        times.push(Some(o.median));
                        peak = peak.max(o.peak_kib);
                        if matches!(probe, Probe::Gate) {
                            slowest = slowest.max(o.median);
                            if o.cpu.is_some_and(|c| c * 3 < o.median) {
                                cells.push('*');
                            }
                        }
                        if n == *sizes.last().unwrap() {
                            verdict = o.verdict;
                        }
                    }
                    Err(why) => {
                        cells.push_str(&format!("{:>6}", "X"));
                        cpu_cells.push_str(&format!("{:>6}", "X"));
                        times.push(None);
                        stopped = Some(format!("at {}: {why}", size_name(n)));
                    }
                }
            }
            // Growth from one size to the next, where the time is large
            // enough to be measured.
            let growth = times
                .windows(2)
                .filter_map(|w| match (w[0], w[1]) {
                    (Some(a), Some(b)) if a >= Duration::from_millis(2) => {
                        Some(b.as_secs_f64() / a.as_secs_f64())
                    }
                    _ => None,
                })
                .fold(0f64, f64::max);
            if matches!(probe, Probe::Gate) && peak > worst_rss.0 {
                worst_rss = (peak, shape.key);
            }
            let name = if label.is_empty() { shape.key } else { label };
            let tail = stopped.unwrap_or(verdict);
            let tail: String = tail.chars().take(110).collect();
            println!(
                "{name:<16} {cells}  {growth:>5.1}x {:>5} MiB  {tail}",
                peak >> 10
            );
            println!("{:<16} {cpu_cells}  (CPU time, ms)", "");
        }
        println!("{:<16} ({})", "", shape.what);
    }
    println!(
        "sweep: slowest {:.1} ms   target < 1000 ms: {}   largest peak RSS {} MiB ({})   target < 512 MiB: {}",
        ms(slowest),
        ok(slowest < Duration::from_secs(1)),
        worst_rss.0 >> 10,
        worst_rss.1,
        ok(worst_rss.0 < 512 << 10)
    );
    Some(slowest)
}

fn size_name(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}M", n >> 20)
    } else {
        format!("{}K", n >> 10)
    }
}

/// Milliseconds in at most 5 characters.
fn short_ms(d: Duration) -> String {
    let m = ms(d);
    if m < 10.0 {
        format!("{m:.2}")
    } else if m < 100.0 {
        format!("{m:.1}")
    } else {
        format!("{m:.0}")
    }
}
