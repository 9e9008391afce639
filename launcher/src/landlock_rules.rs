//! The rights of a [`LandlockPlan`]'s rules: [`rights`] is what the tail
//! applies (see `tail::encode`) and what [`describe`] renders.

use landlock::{Access, AccessFs, BitFlags, ABI};
use serde::{Deserialize, Serialize};

use crate::plan::{LandlockAccess, LandlockCompat, LandlockPlan, Level};

/// Highest ABI whose filesystem rights we ask for (best effort beyond v1).
pub(crate) const TARGET_ABI: ABI = ABI::V6;

/// Landlock outcome reported to the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockReport {
    pub level: Level,
    /// Why it is not full (kernel status), if so.
    pub detail: Option<String>,
}

/// The rights of `access`.
pub fn rights(access: LandlockAccess) -> BitFlags<AccessFs> {
    match access {
        LandlockAccess::Read => AccessFs::from_read(TARGET_ABI),
        LandlockAccess::ListDir => BitFlags::from(AccessFs::ReadDir),
        LandlockAccess::Device => AccessFs::from_file(TARGET_ABI) | AccessFs::ReadDir,
        LandlockAccess::ReadWrite => AccessFs::from_all(TARGET_ABI),
    }
}

fn right_name(r: AccessFs) -> &'static str {
    match r {
        AccessFs::Execute => "execute",
        AccessFs::WriteFile => "write-file",
        AccessFs::ReadFile => "read-file",
        AccessFs::ReadDir => "read-dir",
        AccessFs::RemoveDir => "remove-dir",
        AccessFs::RemoveFile => "remove-file",
        AccessFs::MakeChar => "make-char",
        AccessFs::MakeDir => "make-dir",
        AccessFs::MakeReg => "make-reg",
        AccessFs::MakeSock => "make-sock",
        AccessFs::MakeFifo => "make-fifo",
        AccessFs::MakeBlock => "make-block",
        AccessFs::MakeSym => "make-sym",
        AccessFs::Refer => "refer",
        AccessFs::Truncate => "truncate",
        AccessFs::IoctlDev => "ioctl-dev",
        _ => "other",
    }
}

/// One line per rule of `plan` (`path: rights`), then one per scope, for
/// `zot debug sandbox --explain`.
pub fn describe(plan: &LandlockPlan) -> Vec<String> {
    if plan.compat == LandlockCompat::Off {
        return Vec::new();
    }
    let mut out: Vec<String> = plan
        .rules
        .iter()
        .map(|r| {
            let names: Vec<&str> = rights(r.access).iter().map(right_name).collect();
            format!("{}: {}", r.path.display(), names.join(", "))
        })
        .collect();
    out.extend(
        plan.scopes
            .iter()
            .map(|s| format!("scope: {}", s.describe())),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{LandlockRule, LandlockScope};

    #[test]
    fn describe_lists_every_rule_with_its_rights() {
        let plan = LandlockPlan {
            compat: LandlockCompat::BestEffort,
            rules: vec![
                LandlockRule {
                    path: "/".into(),
                    access: LandlockAccess::ListDir,
                    must_exist: false,
                },
                LandlockRule {
                    path: "/w".into(),
                    access: LandlockAccess::ReadWrite,
                    must_exist: true,
                },
            ],
            scopes: vec![LandlockScope::Signal],
        };
        let d = describe(&plan);
        assert_eq!(d.len(), 3);
        assert_eq!(d[0], "/: read-dir");
        assert!(
            d[1].starts_with("/w: ") && d[1].contains("write-file") && d[1].contains("make-dir")
        );
        assert!(d[2].contains("signals"));
    }
}
