//! The Landlock ruleset of a [`LandlockPlan`]: every filesystem right is
//! handled, the rules grant some back beneath their paths. [`describe`]
//! renders the same rules with the rights each one grants.

use std::path::Path;

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use serde::{Deserialize, Serialize};

use crate::plan::{LandlockAccess, LandlockCompat, LandlockPlan, LandlockScope, Level};
use crate::LaunchError;

/// Highest ABI whose filesystem rights we ask for (best effort beyond v1).
const TARGET_ABI: ABI = ABI::V6;

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

fn scope(s: LandlockScope) -> Scope {
    match s {
        LandlockScope::AbstractUnixSocket => Scope::AbstractUnixSocket,
        LandlockScope::Signal => Scope::Signal,
    }
}

fn add_path(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    must_exist: bool,
) -> Result<landlock::RulesetCreated, LaunchError> {
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        Err(_) if !must_exist => return Ok(ruleset),
        Err(e) => {
            return Err(LaunchError::LandlockOpen {
                path: path.to_path_buf(),
                source: e,
            });
        }
    };
    // Files only take file rights.
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(TARGET_ABI)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| LaunchError::LandlockPath {
            path: path.to_path_buf(),
            source: e,
        })
}

/// Build and enforce the ruleset of `plan` on the calling thread.
pub(crate) fn apply(plan: &LandlockPlan) -> Result<LandlockReport, LaunchError> {
    if plan.compat == LandlockCompat::Off {
        return Ok(LandlockReport {
            level: Level::None,
            detail: Some("not requested".into()),
        });
    }
    let v1_level = match plan.compat {
        LandlockCompat::Required => CompatLevel::HardRequirement,
        _ => CompatLevel::BestEffort,
    };
    let mut scopes: BitFlags<Scope> = BitFlags::empty();
    for s in &plan.scopes {
        scopes |= scope(*s);
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(v1_level)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(LaunchError::Landlock)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(LaunchError::Landlock)?
        .scope(scopes)
        .map_err(LaunchError::Landlock)?
        .create()
        .map_err(LaunchError::Landlock)?;
    for rule in &plan.rules {
        ruleset = add_path(ruleset, &rule.path, rights(rule.access), rule.must_exist)?;
    }
    let status = ruleset.restrict_self().map_err(LaunchError::Landlock)?;
    let detail = format!("{:?}", status.landlock);
    let report = match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockReport {
            level: Level::Full,
            detail: None,
        },
        RulesetStatus::PartiallyEnforced => LandlockReport {
            level: Level::Partial,
            detail: Some(detail),
        },
        RulesetStatus::NotEnforced => LandlockReport {
            level: Level::None,
            detail: Some(detail),
        },
    };
    if plan.compat == LandlockCompat::Required && report.level == Level::None {
        return Err(LaunchError::LandlockNotEnforced(
            report.detail.unwrap_or_default(),
        ));
    }
    Ok(report)
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
    use crate::plan::LandlockRule;

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
