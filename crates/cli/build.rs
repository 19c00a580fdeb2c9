//! Finds the commit hostmax is built from, for `hostmax --version` and every report's
//! `hostmax_commit` (`src/provenance.rs` reads what this sets), in order:
//!
//! 1. `HOSTMAX_BUILD_COMMIT=SHA[-dirty]`: packagers building from a tarball;
//! 2. `.cargo_vcs_info.json`, which `cargo package` writes beside `Cargo.toml` (a crate from
//!    crates.io);
//! 3. `git rev-parse HEAD` in this crate's directory, dirty when
//!    `git status --porcelain --untracked-files=no` names anything.
//!
//! None of them: the commit is unknown (git missing or no repository is not an error). The
//! build reruns only when what it read may have changed: the variable, the file, and in a git
//! checkout the files a commit or checkout changes (`HEAD`, the branch's ref, `packed-refs`,
//! the index), and the work tree's tracked files that decide dirtiness (every tracked file of
//! a clean tree, since editing any makes it dirty; the changed ones of a dirty tree).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "build/commit.rs"]
mod commit;

use commit::Commit;

/// What a packager sets to name the commit a tarball was cut from.
const COMMIT_ENV: &str = "HOSTMAX_BUILD_COMMIT";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/commit.rs");
    println!("cargo:rerun-if-env-changed={COMMIT_ENV}");
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let commit = from_env()
        .or_else(|| from_cargo_vcs_info(&dir))
        .or_else(|| from_git(&dir));
    let recorded = commit.as_ref().map(Commit::recorded);
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    // Always set, empty when unknown, so a variable of the same name in the builder's own
    // environment is never taken for it.
    println!(
        "cargo:rustc-env=HOSTMAX_BUILT_FROM_COMMIT={}",
        recorded.as_deref().unwrap_or("")
    );
    println!(
        "cargo:rustc-env=HOSTMAX_VERSION_TEXT={}",
        commit::version_text(&version, recorded.as_deref())
    );
}

fn from_env() -> Option<Commit> {
    let text = env::var(COMMIT_ENV).ok().filter(|t| !t.trim().is_empty())?;
    match Commit::parse(&text) {
        Ok(commit) => Some(commit),
        Err(why) => panic!("{COMMIT_ENV}: {why}"),
    }
}

fn from_cargo_vcs_info(dir: &Path) -> Option<Commit> {
    let file = dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(&file).ok()?;
    println!("cargo:rerun-if-changed={}", file.display());
    commit::from_cargo_vcs_info(&text)
}

/// `git ARGS` run in `dir`: its stdout if it succeeded, `None` if it failed or git is missing.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        // Never prompt, never write the index (`status` refreshes it otherwise, and the
        // index is one of the files this build reruns on).
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn from_git(dir: &Path) -> Option<Commit> {
    // This crate must be part of the repository git finds: a crate unpacked inside some
    // other repository (a home directory kept in git) is not built from that one's commit.
    git(dir, &["ls-files", "--error-unmatch", "--", "Cargo.toml"])?;
    let sha = git(dir, &["rev-parse", "--verify", "HEAD"])?;
    let mut commit = Commit::parse(&sha).ok()?;
    let status = git(
        dir,
        &["status", "--porcelain", "-z", "--untracked-files=no"],
    );
    // A status that fails cannot show the tree clean.
    commit.dirty = status.as_ref().is_none_or(|s| !s.is_empty());
    watch_git(dir, status.as_deref());
    Some(commit)
}

/// Reruns the build when the commit or the tree's dirtiness may have changed; only files
/// that exist (cargo reruns every build for a path that does not).
fn watch_git(dir: &Path, status: Option<&str>) {
    let watch = |path: PathBuf| {
        if path.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    };
    // In a linked worktree, HEAD and the index are the worktree's own, refs the repository's.
    let Some(dirs) = git(dir, &["rev-parse", "--git-dir", "--git-common-dir"]) else {
        return;
    };
    let dirs: Vec<PathBuf> = dirs.lines().map(|d| dir.join(d)).collect();
    let [git_dir, common_dir] = dirs.as_slice() else {
        return;
    };
    watch(git_dir.join("HEAD"));
    watch(git_dir.join("index"));
    watch(common_dir.join("packed-refs"));
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        let branch = branch.trim();
        watch(git_dir.join(branch));
        if common_dir != git_dir {
            watch(common_dir.join(branch));
        }
    }
    let Some(top) = git(dir, &["rev-parse", "--show-toplevel"]) else {
        return;
    };
    let top = PathBuf::from(top.trim_end_matches('\n'));
    match status {
        Some("") => {
            if let Some(files) = git(&top, &["ls-files", "-z"]) {
                files
                    .split('\0')
                    .filter(|f| !f.is_empty())
                    .for_each(|f| watch(top.join(f)));
            }
        }
        Some(status) => commit::changed_paths(status)
            .into_iter()
            .for_each(|f| watch(top.join(f))),
        None => {}
    }
}
