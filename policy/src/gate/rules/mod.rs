//! The danger list, the allowlist, and program-specific rules.

mod allowlist;
mod args;
mod assign;
mod awk;
mod classify;
mod command;
mod danger;
mod download;
mod git;
mod programs;
mod sed;
mod tar;

pub(crate) use super::paths::is_dangerous_path;
pub(crate) use allowlist::{check_listed, check_program_name, check_wrapper_listed};
pub(crate) use args::operands_of;
pub(crate) use assign::{check_assignment, is_var_name};
pub(crate) use classify::{basename, evaluates_names, reads_code, runs_code};
pub(crate) use command::check_command;
pub(crate) use danger::{danger_of, in_cwd, on_danger_list};
pub(crate) use download::is_downloader;
