//! The Landlock ruleset of a launch: read where the policy allows reading,
//! write only in the write roots (and the sandbox's private /tmp).

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use serde::{Deserialize, Serialize};
use zot_policy::sandbox::ReadScope;

use crate::{LandlockMode, LaunchError, LaunchSpec};

/// Highest ABI whose filesystem rights we ask for (best effort beyond v1).
const TARGET_ABI: ABI = ABI::V6;

/// How much of the requested Landlock ruleset the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockLevel {
    Full,
    Partial,
    None,
}

/// Landlock outcome reported to the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockReport {
    pub level: LandlockLevel,
    /// Why it is not full (kernel status), if so.
    pub detail: Option<String>,
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

/// Build and enforce the ruleset for `spec`.
pub(crate) fn apply(spec: &LaunchSpec) -> Result<LandlockReport, LaunchError> {
    if spec.landlock == LandlockMode::Off {
        return Ok(LandlockReport {
            level: LandlockLevel::None,
            detail: Some("not requested".into()),
        });
    }
    let v1_level = match spec.landlock {
        LandlockMode::Required => CompatLevel::HardRequirement,
        _ => CompatLevel::BestEffort,
    };
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let dev = AccessFs::from_file(TARGET_ABI) | AccessFs::ReadDir;

    let ruleset = Ruleset::default()
        .set_compatibility(v1_level)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(LaunchError::Landlock)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(LaunchError::Landlock)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(LaunchError::Landlock)?
        .create()
        .map_err(LaunchError::Landlock)?;

    let mut reads: Vec<PathBuf> = match &spec.policy.read {
        ReadScope::FullDisk => vec![PathBuf::from("/")],
        ReadScope::Restricted { paths } => paths.clone(),
    };
    reads.extend(spec.landlock_read.iter().cloned());
    let mut ruleset = ruleset;
    for p in &reads {
        ruleset = add_path(ruleset, p, read, false)?;
    }
    for p in &spec.landlock_dev {
        ruleset = add_path(ruleset, p, dev, false)?;
    }
    for p in &spec.policy.write_roots {
        ruleset = add_path(ruleset, p, all, true)?;
    }
    for p in &spec.landlock_write {
        ruleset = add_path(ruleset, p, all, false)?;
    }
    let status = ruleset.restrict_self().map_err(LaunchError::Landlock)?;
    let detail = format!("{:?}", status.landlock);
    let report = match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockReport {
            level: LandlockLevel::Full,
            detail: None,
        },
        RulesetStatus::PartiallyEnforced => LandlockReport {
            level: LandlockLevel::Partial,
            detail: Some(detail),
        },
        RulesetStatus::NotEnforced => LandlockReport {
            level: LandlockLevel::None,
            detail: Some(detail),
        },
    };
    if spec.landlock == LandlockMode::Required && report.level == LandlockLevel::None {
        return Err(LaunchError::LandlockNotEnforced(
            report.detail.unwrap_or_default(),
        ));
    }
    Ok(report)
}
