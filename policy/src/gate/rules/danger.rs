//! The danger list: what destroys data, stops the machine or changes the
//! network, in every mode.

use super::args::{long_flag, operands, short_flag};
use super::classify::basename;
use super::git::git_danger;
use crate::gate::paths::{self, is_dangerous_path};
use crate::gate::word::Word;
use crate::gate::Ctx;

/// The danger list alone, for `words` (program first).
pub(crate) fn danger_of(ctx: &mut Ctx, words: &[Word]) {
    if let Some((prog, args)) = words.split_first() {
        danger(ctx, basename(&prog.text), args, false);
    }
}

/// `t` as seen from the directory of the last absolute `cd`, when it is
/// relative.
pub(crate) fn in_cwd(ctx: &Ctx, t: &str) -> String {
    match &ctx.cwd {
        Some(dir) if !t.starts_with('/') && !t.starts_with('~') && !t.starts_with('$') => {
            format!("{}/{}", dir.trim_end_matches('/'), t)
        }
        _ => t.to_string(),
    }
}

/// Programs with an entry in the danger list (by their name).
pub(crate) fn on_danger_list(base: &str) -> bool {
    matches!(
        base,
        "rm" | "unlink"
            | "shred"
            | "chmod"
            | "chown"
            | "chgrp"
            | "chattr"
            | "setfacl"
            | "mkswap"
            | "wipefs"
            | "blkdiscard"
            | "sfdisk"
            | "fdisk"
            | "cfdisk"
            | "parted"
            | "sgdisk"
            | "gdisk"
            | "mformat"
            | "sg_format"
            | "sg_sanitize"
            | "flashrom"
            | "killall5"
            | "cryptsetup"
            | "nvme"
            | "hdparm"
            | "badblocks"
            | "zpool"
            | "zfs"
            | "lvremove"
            | "vgremove"
            | "pvremove"
            | "dmsetup"
            | "mdadm"
            | "dd"
            | "cp"
            | "mv"
            | "install"
            | "ln"
            | "tee"
            | "truncate"
            | "touch"
            | "git"
            | "shutdown"
            | "reboot"
            | "halt"
            | "poweroff"
            | "kexec"
            | "init"
            | "telinit"
            | "systemctl"
            | "loginctl"
            | "kill"
            | "pkill"
            | "killall"
            | "sysctl"
            | "rsync"
            | "ip"
            | "iptables"
            | "ip6tables"
            | "nft"
            | "ebtables"
            | "ufw"
            | "firewall-cmd"
            | "ifconfig"
            | "route"
            | "find"
            | "fallocate"
            | "ddrescue"
            | "curl"
            | "wget"
            | "tar"
    ) || base.starts_with("mkfs")
        || base.starts_with("mke2fs")
        || base.starts_with("newfs")
}

pub(super) fn danger(ctx: &mut Ctx, base: &str, args: &[Word], open: bool) {
    if base == "cd" {
        // `cd` alone goes home; `..`-only paths may climb to `/`.
        let target = operands(args).into_iter().next();
        let risky = match target {
            None => true,
            Some(w) => is_dangerous_path(w) || w.text.split('/').all(|p| p == ".." || p.is_empty()),
        };
        if risky {
            ctx.cd_danger = Some(target.map_or("~".to_string(), |w| w.text.clone()));
        }
        // Where relative paths now point (`cd /dev; ... > sda`).
        ctx.cwd = match target {
            Some(w) if w.is_static() && w.text.starts_with('/') => Some(w.text.clone()),
            Some(w) if w.is_static() && !w.text.starts_with('-') => ctx
                .cwd
                .take()
                .map(|c| format!("{}/{}", c.trim_end_matches('/'), w.text)),
            _ => None,
        };
    }
    if base == "hash"
        && args
            .iter()
            .any(|w| w.text.starts_with("-p") || w.text.starts_with('-') && w.text.contains('p'))
    {
        ctx.unknown("`hash -p` makes a command name run another program");
    }
    // `rm -rf {/,x}` is `rm -rf / x`: the checks below see one word.
    let checked = matches!(
        base,
        "rm" | "chmod"
            | "chown"
            | "chgrp"
            | "dd"
            | "cp"
            | "mv"
            | "tee"
            | "shred"
            | "install"
            | "truncate"
            | "ln"
            | "git"
            | "systemctl"
            | "rsync"
            | "kill"
    );
    if checked {
        if let Some(w) = args.iter().find(|w| w.multi && w.text.contains(['{', '}'])) {
            ctx.danger(format!(
                "brace expansion `{}` hides the real arguments of `{base}`",
                w.text
            ));
        }
    }
    let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match base {
        "rm" | "unlink" | "shred" => {
            if long_flag(args, "--no-preserve-root", 6) {
                ctx.danger(format!("`{base} --no-preserve-root`"));
            }
            let recursive =
                short_flag(args, 'r') || short_flag(args, 'R') || long_flag(args, "--recursive", 4);
            for w in operands(args) {
                if paths::is_dangerous_glob(w) {
                    ctx.danger(format!(
                        "`{base}` of `{}` wipes a system or home directory",
                        w.text
                    ));
                }
            }
            if recursive && base == "rm" {
                if let Some(dir) = ctx.cd_danger.clone() {
                    if let Some(w) = operands(args)
                        .into_iter()
                        .find(|w| !w.text.starts_with('/'))
                    {
                        ctx.danger(format!("`rm -r` of `{}` after `cd {dir}`", w.text));
                    }
                }
                for w in operands(args) {
                    if is_dangerous_path(w) {
                        ctx.danger(format!("`rm -r` of `{}`", w.text));
                    } else if w.dynamic {
                        ctx.danger(format!(
                            "`rm -r` of `{}`, a path that depends on expansion",
                            w.text
                        ));
                    }
                }
                if open {
                    ctx.danger("`rm -r` of paths read from stdin");
                }
            }
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
            if short_flag(args, 'R') || long_flag(args, "--recursive", 3) {
                if let Some(w) = operands(args).into_iter().find(|w| is_dangerous_path(w)) {
                    ctx.danger(format!("recursive `{base}` of `{}`", w.text));
                }
            }
        }
        "mkswap" | "wipefs" | "blkdiscard" | "sfdisk" | "fdisk" | "cfdisk" | "parted"
        | "sgdisk" | "gdisk" | "mformat" | "sg_format" | "sg_sanitize" | "flashrom"
        | "killall5" => ctx.danger(format!(
            "`{base}` rewrites disks, firmware or every process"
        )),
        _ if base.starts_with("mkfs")
            || base.starts_with("mke2fs")
            || base.starts_with("newfs")
            || matches!(
                base,
                "mkdosfs"
                    | "mkexfatfs"
                    | "mkntfs"
                    | "mkudffs"
                    | "mkreiserfs"
                    | "mke4fs"
                    | "mkhfs"
                    | "mkjfs"
                    | "mkxfs"
            ) =>
        {
            ctx.danger(format!("`{base}` formats a filesystem"))
        }
        "cryptsetup" => {
            if operands(args).iter().any(|w| {
                matches!(
                    w.text.to_ascii_lowercase().as_str(),
                    "luksformat"
                        | "erase"
                        | "lukserase"
                        | "reencrypt"
                        | "luksremovekey"
                        | "lukskillslot"
                )
            }) {
                ctx.danger("`cryptsetup` destroys an encrypted volume's keys");
            }
        }
        "nvme" => {
            if operands(args)
                .first()
                .is_some_and(|w| matches!(w.text.as_str(), "format" | "sanitize" | "delete-ns"))
            {
                ctx.danger("`nvme` erases a disk");
            }
        }
        "hdparm" => {
            if args.iter().any(|w| {
                w.text.starts_with("--security-erase")
                    || w.text.starts_with("--trim-sector")
                    || w.text.starts_with("--write-sector")
                    || w.text.starts_with("--make-bad-sector")
                    || w.text == "--dco-restore"
            }) {
                ctx.danger("`hdparm` erases or damages a disk");
            }
        }
        "badblocks" if short_flag(args, 'w') => ctx.danger("`badblocks -w` overwrites a disk"),
        "zpool" | "zfs" | "lvremove" | "vgremove" | "pvremove" | "dmsetup" | "mdadm" => {
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "destroy" | "labelclear" | "remove" | "wipe_table" | "--zero-superblock"
                )
            }) || matches!(base, "lvremove" | "vgremove" | "pvremove")
            {
                ctx.danger(format!("`{base}` destroys storage"));
            }
        }
        "dd" => {
            for w in args {
                if let Some(target) = w.text.strip_prefix("of=") {
                    if let Some(why) = paths::write_target_danger(&in_cwd(ctx, target)) {
                        ctx.danger(format!("`dd` {why}"));
                    } else if w.dynamic {
                        ctx.danger(format!("`dd` output `{target}` depends on expansion"));
                    }
                }
            }
        }
        "cp" | "mv" | "install" | "ln" | "tee" | "truncate" | "touch" => {
            let ops = operands(args);
            // tee, truncate, touch write every operand; the others their
            // last one, or the directory of `-t`.
            let mut targets: Vec<&str> = match base {
                "tee" | "truncate" | "touch" => ops.iter().map(|w| w.text.as_str()).collect(),
                _ if ops.len() >= 2 => vec![ops[ops.len() - 1].text.as_str()],
                _ => vec![],
            };
            for (i, w) in args.iter().enumerate() {
                if w.text == "-t" || w.text == "--target-directory" {
                    if let Some(v) = args.get(i + 1) {
                        targets.push(&v.text);
                    }
                } else if let Some(v) = w.text.strip_prefix("--target-directory=") {
                    targets.push(v);
                }
            }
            for t in targets {
                let probe = in_cwd(ctx, t);
                // The target may be a directory: judge a file in it too.
                let inside = format!("{}/x", probe.trim_end_matches('/'));
                let why = paths::write_target_danger(&probe).or_else(|| {
                    (base != "tee" && base != "truncate" && base != "touch")
                        .then(|| paths::write_target_danger(&inside))
                        .flatten()
                });
                if let Some(why) = why {
                    ctx.danger(format!("`{base}` {why}"));
                }
            }
            if base == "mv" {
                if let Some(w) = ops.iter().rev().skip(1).find(|w| is_dangerous_path(w)) {
                    ctx.danger(format!(
                        "`mv` of `{}` moves a system or home directory",
                        w.text
                    ));
                }
            }
        }
        "git" => git_danger(ctx, args),
        "shutdown" | "reboot" | "halt" | "poweroff" | "kexec" => {
            ctx.danger(format!("`{base}` stops the machine"))
        }
        "init" | "telinit" => {
            if operands(args)
                .first()
                .is_some_and(|w| matches!(w.text.as_str(), "0" | "1" | "6" | "s" | "S" | "q"))
            {
                ctx.danger(format!("`{base}` changes the runlevel (stops the machine)"));
            }
        }
        "systemctl" | "loginctl" => {
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "hybrid-sleep"
                        | "suspend-then-hibernate"
                        | "soft-reboot"
                        | "rescue"
                        | "emergency"
                        | "isolate"
                        | "default"
                        | "kill-session"
                        | "kill-user"
                        | "terminate-session"
                        | "terminate-user"
                )
            }) {
                ctx.danger(format!("`{base}` stops the machine or the user's sessions"));
            }
        }
        "kill" | "pkill" | "killall" => {
            // `kill -9 -1`, `kill -- -1`: every process; `kill 1`: init.
            let mut rest = args;
            if let Some(first) = rest.first() {
                let t = first.text.as_str();
                if t == "-s" || t == "-n" || t == "--signal" {
                    rest = rest.get(2..).unwrap_or(&[]);
                } else if t.starts_with('-') && t != "--" && t != "-1" {
                    rest = &rest[1..];
                } else if t == "-1" && rest.len() > 1 {
                    rest = &rest[1..]; // `-1` is SIGHUP when a pid follows
                }
            }
            if base == "kill" && rest.iter().any(|w| matches!(w.text.as_str(), "-1" | "1")) {
                ctx.danger("`kill` of every process (`-1`) or of init (`1`)");
            }
            if base != "kill"
                && args
                    .iter()
                    .any(|w| matches!(w.text.as_str(), "init" | "systemd" | "." | "-1"))
            {
                ctx.danger(format!("`{base}` of init or of every process"));
            }
        }
        "ip" => {
            if let Some(why) = ip_change(args) {
                ctx.danger(why);
            }
        }
        "iptables" | "ip6tables" | "iptables-nft" | "iptables-legacy" | "ip6tables-nft"
        | "ebtables" | "arptables" | "iptables-restore" | "ip6tables-restore" | "nft" | "ufw"
        | "firewall-cmd" => {
            let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            let first_op = words
                .iter()
                .find(|w| !w.starts_with('-'))
                .copied()
                .unwrap_or("");
            let reads = match base {
                "nft" => {
                    matches!(first_op, "list" | "monitor" | "describe")
                        || words
                            .iter()
                            .all(|w| matches!(*w, "-v" | "--version" | "-h" | "--help"))
                }
                "ufw" => {
                    matches!(first_op, "status" | "show" | "version" | "app")
                        && !words.contains(&"update")
                }
                "firewall-cmd" => {
                    words.iter().all(|w| {
                        [
                            "--get",
                            "--query",
                            "--list",
                            "--state",
                            "--version",
                            "--help",
                            "--zone",
                            "--permanent",
                            "-h",
                            "-V",
                        ]
                        .iter()
                        .any(|p| w.starts_with(p))
                            || !w.starts_with('-')
                    }) && !words.is_empty()
                }
                _ if base.ends_with("-restore") => false,
                _ => {
                    let changes = words.iter().any(|w| {
                        let long = matches!(
                            *w,
                            "--append"
                                | "--delete"
                                | "--insert"
                                | "--replace"
                                | "--flush"
                                | "--zero"
                                | "--new-chain"
                                | "--new"
                                | "--delete-chain"
                                | "--policy"
                                | "--rename-chain"
                        );
                        let short = w.len() >= 2
                            && w.starts_with('-')
                            && !w.starts_with("--")
                            && w[1..].contains(['A', 'D', 'I', 'R', 'F', 'Z', 'N', 'X', 'P', 'E']);
                        long || short
                    });
                    let lists = words.iter().any(|w| {
                        matches!(
                            *w,
                            "--list" | "--list-rules" | "--version" | "-V" | "--help" | "-h"
                        ) || (w.starts_with('-')
                            && !w.starts_with("--")
                            && w[1..].contains(['L', 'S']))
                    });
                    lists && !changes
                }
            };
            if !reads {
                ctx.danger(format!("`{base}` changes the firewall"));
            }
        }
        "ifdown" | "ifup" | "ifconfig" if base != "ifconfig" || args.len() >= 2 => {
            ctx.danger("`ifconfig` changes a network interface")
        }
        "route"
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "add" | "del" | "delete" | "flush" | "change"
                )
            }) =>
        {
            ctx.danger("`route` changes the routing table")
        }
        "nmcli"
            if args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "down" | "delete" | "modify" | "off" | "disconnect" | "reload"
                )
            }) =>
        {
            ctx.danger("`nmcli` changes the network configuration")
        }
        "tc" if args.iter().any(|w| {
            matches!(
                w.text.as_str(),
                "add" | "del" | "delete" | "change" | "replace"
            )
        }) =>
        {
            ctx.danger("`tc` changes network traffic control")
        }
        "sysctl" => {
            if short_flag(args, 'w')
                || short_flag(args, 'p')
                || operands(args).iter().any(|w| w.text.contains('='))
            {
                ctx.danger("`sysctl` changes kernel settings");
            }
        }
        "rsync" => {
            let deletes = args.iter().any(|w| w.text.starts_with("--del"));
            if let Some(dest) = operands(args).last() {
                if deletes && is_dangerous_path(dest) {
                    ctx.danger(format!("`rsync --delete` into `{}`", dest.text));
                }
                if let Some(why) = paths::write_target_danger(&dest.text) {
                    ctx.danger(format!("`rsync` {why}"));
                }
            }
        }
        _ if family == "su" || base == "runuser" => {}
        _ => {}
    }
}

/// `ip OBJECT VERB ...` that changes interfaces, addresses, routes,
/// rules or neighbours (iproute2 matches both by prefix).
fn ip_change(args: &[Word]) -> Option<String> {
    let mut words = args.iter().map(|w| w.text.as_str()).peekable();
    // Global options (`-4`, `-6`, `-n NS`, `-j`, `-d`, `-s`, ...).
    while let Some(w) = words.peek() {
        if !w.starts_with('-') {
            break;
        }
        let takes = matches!(
            *w,
            "-n" | "-netns" | "-f" | "-family" | "-l" | "-loops" | "-rc" | "-rcvbuf"
        );
        words.next();
        if takes {
            words.next();
        }
    }
    let object = words.next()?;
    let objects = [
        "link",
        "address",
        "addr",
        "route",
        "rule",
        "neighbour",
        "neighbor",
        "tunnel",
        "tuntap",
        "maddress",
        "mroute",
        "nexthop",
        "xfrm",
        "netconf",
        "vrf",
        "mptcp",
        "ioam",
        "token",
        "l2tp",
        "fou",
        "macsec",
        "tcp_metrics",
        "netns",
        "ntable",
        "sr",
        "stats",
        "monitor",
        "neigh",
        "r",
        "ro",
        "rou",
        "a",
        "ad",
        "l",
        "li",
        "lin",
        "n",
        "ne",
        "nei",
        "ru",
        "tu",
    ];
    if !objects.iter().any(|o| o.starts_with(object)) {
        return None;
    }
    let verb = words.next().unwrap_or("");
    if verb.is_empty() || verb.starts_with('-') {
        return None;
    }
    let is_link = "link".starts_with(object);
    let reads = [
        "show", "list", "lst", "get", "help", "ls", "monitor", "save", "showdump", "identify",
        "pids",
    ];
    if verb != "s" && reads.iter().any(|r| r.starts_with(verb)) {
        return None;
    }
    if verb == "s" && !is_link {
        return None; // `ip a s` is `addr show`; `ip l s` is `link set`.
    }
    let changes = [
        "add", "delete", "del", "set", "change", "chg", "replace", "flush", "append", "prepend",
        "restore", "attach", "detach", "exec",
    ];
    if changes.iter().any(|c| c.starts_with(verb)) {
        return Some(format!(
            "`ip {object} {verb}` changes the network configuration"
        ));
    }
    None
}
