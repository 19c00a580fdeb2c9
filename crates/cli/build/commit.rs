//! The commit hostmax is built from, as the build script (`build.rs`) finds it: the parsing
//! and wording it needs, without I/O, so the unit tests (`provenance.rs` includes this file
//! under `#[cfg(test)]`) check the same code the build runs.

/// A commit and whether the tree it was built from had uncommitted changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The commit's sha, lowercase hex (40 digits from git and `.cargo_vcs_info.json`; a
    /// packager's `HOSTMAX_BUILD_COMMIT` may be shorter).
    pub sha: String,
    /// The tracked files differed from the commit (untracked files do not count).
    pub dirty: bool,
}

/// What `HOSTMAX_BUILD_COMMIT` and every report's `hostmax_commit` append to the sha of a
/// dirty tree.
pub const DIRTY_SUFFIX: &str = "-dirty";

/// How many hex digits of the sha the version line shows.
pub const SHORT_SHA: usize = 12;

impl Commit {
    /// As reports record it (`hostmax_commit`): the sha, with [`DIRTY_SUFFIX`] appended when
    /// the tree was dirty.
    pub fn recorded(&self) -> String {
        if self.dirty {
            format!("{}{DIRTY_SUFFIX}", self.sha)
        } else {
            self.sha.clone()
        }
    }

    /// A commit as [`Commit::recorded`] writes it (`HOSTMAX_BUILD_COMMIT=SHA[-dirty]`): 7 to
    /// 40 hex digits, in either case. The error says what is wrong.
    pub fn parse(text: &str) -> Result<Commit, String> {
        let text = text.trim();
        let (sha, dirty) = match text.strip_suffix(DIRTY_SUFFIX) {
            Some(sha) => (sha, true),
            None => (text, false),
        };
        if !(7..=40).contains(&sha.len()) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "{text:?} is not a commit: give 7 to 40 hex digits of its sha, with {DIRTY_SUFFIX} appended if the tree had uncommitted changes"
            ));
        }
        Ok(Commit {
            sha: sha.to_ascii_lowercase(),
            dirty,
        })
    }
}

/// The commit `cargo package` recorded in `.cargo_vcs_info.json`
/// (`{"git": {"sha1": "...", "dirty": true}, "path_in_vcs": "..."}`; `dirty` is there only
/// when it is true), or `None` if the text has no valid `sha1`. A small reader of this one
/// file cargo writes, so the build needs no JSON library.
pub fn from_cargo_vcs_info(json: &str) -> Option<Commit> {
    let sha = string_after_key(json, "sha1")?;
    let mut commit = Commit::parse(sha).ok()?;
    if commit.sha.len() != 40 {
        return None;
    }
    commit.dirty = value_after_key(json, "dirty").is_some_and(|v| v.starts_with("true"));
    Some(commit)
}

/// The text after `"key"` and its colon, whitespace skipped.
fn value_after_key<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("\"{key}\"");
    let rest = &json[json.find(&quoted)? + quoted.len()..];
    rest.trim_start().strip_prefix(':').map(str::trim_start)
}

/// The string value of `"key"` (no escapes: a sha has none).
fn string_after_key<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let value = value_after_key(json, key)?.strip_prefix('"')?;
    Some(&value[..value.find('"')?])
}

/// The paths `git status --porcelain -z` names (relative to the repository's top): each
/// entry's path, and a rename's or copy's original path too.
pub fn changed_paths(porcelain_z: &str) -> Vec<&str> {
    let mut paths = Vec::new();
    let mut fields = porcelain_z.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let Some(path) = entry.get(3..) else { continue };
        paths.push(path);
        if matches!(entry.as_bytes()[0], b'R' | b'C') {
            paths.extend(fields.next());
        }
    }
    paths
}

/// What `hostmax --version` says after the name: `0.1.0 (commit 2ab5ef6c1d2e, dirty)`, or
/// `0.1.0 (commit unknown)`; `commit` as [`Commit::recorded`] writes it.
pub fn version_text(package_version: &str, commit: Option<&str>) -> String {
    match commit.map(|c| (c.strip_suffix(DIRTY_SUFFIX), c)) {
        None => format!("{package_version} (commit unknown)"),
        Some((Some(sha), _)) => {
            let short = &sha[..sha.len().min(SHORT_SHA)];
            format!("{package_version} (commit {short}, dirty)")
        }
        Some((None, sha)) => {
            let short = &sha[..sha.len().min(SHORT_SHA)];
            format!("{package_version} (commit {short})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "2ab5ef6c1d2e3f405162738495a6b7c8d9e0f1a2";

    #[test]
    fn cargo_vcs_info_gives_the_sha_and_dirtiness() {
        let clean = format!("{{\n  \"git\": {{\n    \"sha1\": \"{SHA}\"\n  }},\n  \"path_in_vcs\": \"crates/cli\"\n}}\n");
        assert_eq!(
            from_cargo_vcs_info(&clean),
            Some(Commit {
                sha: SHA.into(),
                dirty: false
            })
        );
        let dirty = format!(
            "{{\"git\":{{\"sha1\":\"{SHA}\",\"dirty\":true}},\"path_in_vcs\":\"crates/cli\"}}"
        );
        assert_eq!(
            from_cargo_vcs_info(&dirty).unwrap().recorded(),
            format!("{SHA}-dirty")
        );
        let not_dirty = format!("{{\"git\":{{\"sha1\":\"{SHA}\",\"dirty\":false}}}}");
        assert!(!from_cargo_vcs_info(&not_dirty).unwrap().dirty);
        for bad in [
            "{}".to_string(),
            "{\"git\":{\"sha1\":\"abc\"}}".to_string(),
            "{\"git\":{\"sha1\":\"".to_string(),
            format!("{{\"git\":{{\"sha1\":\"{}\"}}}}", "g".repeat(40)),
        ] {
            assert_eq!(from_cargo_vcs_info(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_packagers_commit_is_a_sha_with_an_optional_dirty_suffix() {
        assert_eq!(
            Commit::parse(&format!(" {} \n", SHA.to_uppercase())),
            Ok(Commit {
                sha: SHA.into(),
                dirty: false
            })
        );
        assert_eq!(
            Commit::parse("2ab5ef6-dirty").unwrap().recorded(),
            "2ab5ef6-dirty"
        );
        for bad in ["", "v0.1.0", "2ab5ef", "-dirty", &"a".repeat(41)] {
            assert!(Commit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_version_names_the_short_commit_and_a_dirty_tree() {
        assert_eq!(
            version_text("0.1.0", Some(&format!("{SHA}-dirty"))),
            "0.1.0 (commit 2ab5ef6c1d2e, dirty)"
        );
        assert_eq!(
            version_text("0.1.0", Some(SHA)),
            "0.1.0 (commit 2ab5ef6c1d2e)"
        );
        assert_eq!(
            version_text("0.1.0", Some("2ab5ef6")),
            "0.1.0 (commit 2ab5ef6)"
        );
        assert_eq!(version_text("0.1.0", None), "0.1.0 (commit unknown)");
    }

    #[test]
    fn porcelain_status_names_changed_paths_and_renames_sources() {
        let status = " M crates/cli/src/lib.rs\0R  new name.rs\0old name.rs\0D  gone.rs\0";
        assert_eq!(
            changed_paths(status),
            [
                "crates/cli/src/lib.rs",
                "new name.rs",
                "old name.rs",
                "gone.rs"
            ]
        );
        assert!(changed_paths("").is_empty());
    }
}
