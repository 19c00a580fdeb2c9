//! The code's layout keeps its promises (ARCHITECTURE.md "Invariants"): no crate has files
//! that import each other in a circle, each command is a room only the dispatch enters, the
//! aggregator names no file, clock, thread, socket or process, and only the CLI's seam
//! (`engine.rs`) calls the engine's I/O. And the documentation's: every chapter of the book
//! (`docs/src/`) is listed in its `SUMMARY.md`, and every relative link of README.md, the book,
//! ARCHITECTURE.md and benches/README.md leads to a file that exists (and to a heading of it).
//!
//! The check reads every crate's sources as text: it resolves each `crate::`, `super::` and
//! `self::` path (in `use` trees and in code) to the file that defines the item, following
//! `pub use` re-exports, and looks for strongly connected files. A module file naming its own
//! descendants (`lib.rs` re-exporting, `mod.rs` declaring its children) is the tree itself and
//! does not count; everything else does, test modules included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One source token: what the path resolver needs of Rust's grammar.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Tokens of `source` with comments, strings and char literals left out.
fn tokenize(source: &str) -> Vec<Token> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if source[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if source[i..].starts_with("/*") {
            let mut depth = 0;
            while i < bytes.len() {
                if source[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if source[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && (source[i..].starts_with("r\"") || source[i..].starts_with("r#")) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while j < bytes.len() && bytes[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b'"' {
                let end = format!("\"{}", "#".repeat(hashes));
                i = match source[j + 1..].find(&end) {
                    Some(at) => j + 1 + at + end.len(),
                    None => bytes.len(),
                };
            } else {
                // r#ident
                i = j;
            }
        } else if c == b'"' || (c == b'b' && source[i..].starts_with("b\"")) {
            i += if c == b'b' { 2 } else { 1 };
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            let rest = &source[i + 1..];
            let close = if rest.starts_with('\\') {
                rest[2..].find('\'').map(|at| at + 2)
            } else {
                rest.char_indices()
                    .nth(1)
                    .filter(|&(_, ch)| ch == '\'')
                    .map(|(at, _)| at)
            };
            match close {
                Some(at) => i += at + 2,
                None => i += 1,
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push(Token::Ident(source[start..i].to_string()));
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
        } else if source[i..].starts_with("::") {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            if matches!(c, b'{' | b'}' | b',' | b';' | b'*' | b'#' | b'!') {
                tokens.push(Token::Punct(c as char));
            }
            i += source[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    tokens
}

/// A module path from the crate root: `["verify", "sweep"]`.
type ModPath = Vec<String>;

/// What one file says: the paths it names (relative to where they appear, already made
/// absolute) and the names it re-exports publicly.
#[derive(Default)]
struct FileFacts {
    /// Absolute paths this file names.
    names: Vec<ModPath>,
    /// `pub use` re-exports: the name visible here -> the absolute path it stands for.
    reexports: BTreeMap<String, ModPath>,
    /// Glob re-exports (`pub use x::*`): the absolute module paths.
    glob_reexports: Vec<ModPath>,
}

/// Turns a path as written into an absolute module path, from the module `here`. A path
/// starting with a plain name is relative to `here` when `here` has a child of that name
/// (`pub use data::BlockMaker;` in lib.rs) and another crate's otherwise.
fn absolute(
    here: &[String],
    written: &[String],
    is_module: &dyn Fn(&[String]) -> bool,
) -> Option<ModPath> {
    let mut out: Vec<String>;
    let mut rest = written;
    match written.first().map(String::as_str) {
        Some("crate") => {
            out = Vec::new();
            rest = &written[1..];
        }
        Some("self") => {
            out = here.to_vec();
            rest = &written[1..];
        }
        Some("super") => {
            out = here.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                out.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = here.to_vec();
            child.push(first.to_string());
            if !is_module(&child) {
                return None;
            }
            out = here.to_vec();
        }
        None => return None,
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// Reads a `use` tree starting at `tokens[i]` (after `use`), adding every leaf path (with
/// `prefix` before it) to `leaves`; returns the index after the tree.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: &[String],
    leaves: &mut Vec<(ModPath, Option<String>)>,
) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(i) {
            Some(Token::Ident(name)) if name == "as" => {
                // `path as alias`
                let alias = match tokens.get(i + 1) {
                    Some(Token::Ident(a)) => Some(a.clone()),
                    _ => None,
                };
                leaves.push((path.clone(), alias));
                return i + 2;
            }
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                i += 1;
            }
            Some(Token::PathSep) => i += 1,
            Some(Token::Punct('*')) => {
                path.push("*".to_string());
                leaves.push((path, None));
                return i + 1;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Punct('}')) => return i + 1,
                        Some(Token::Punct(',')) => i += 1,
                        None => return i,
                        _ => i = use_tree(tokens, i, &path, leaves),
                    }
                }
            }
            _ => {
                if path.len() > prefix.len() {
                    leaves.push((path, None));
                }
                return i;
            }
        }
    }
}

/// The path written from the name at `tokens[i]` on (`a::b::c`), and the index after it.
fn path_at(tokens: &[Token], i: usize) -> (ModPath, usize) {
    let mut path = Vec::new();
    if let Some(Token::Ident(first)) = tokens.get(i) {
        path.push(first.clone());
    }
    let mut j = i + 1;
    while tokens.get(j) == Some(&Token::PathSep) {
        match tokens.get(j + 1) {
            Some(Token::Ident(next)) => {
                path.push(next.clone());
                j += 2;
            }
            _ => break,
        }
    }
    (path, j)
}

/// Reads one file's facts. `module` is the file's module path; `is_module` says whether a
/// module path is one of the crate's modules.
fn read_facts(source: &str, module: &[String], is_module: &dyn Fn(&[String]) -> bool) -> FileFacts {
    let tokens = tokenize(source);
    let mut facts = FileFacts::default();
    // Inline modules (`mod tests { .. }`) open at a brace depth; paths inside them are
    // relative to them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let here: ModPath = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(m, _)| m.clone()))
            .collect();
        match &tokens[i] {
            Token::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|&(_, at)| at == depth) {
                    inline.pop();
                }
                i += 1;
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                    depth += 1;
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Token::Ident(word) if word == "use" => {
                // `pub use` / `pub(crate) use` re-exports: only plain `pub` is a re-export
                // other files can name through this module.
                let public = i >= 1 && tokens[i - 1] == Token::Ident("pub".to_string());
                let mut leaves = Vec::new();
                i = use_tree(&tokens, i + 1, &[], &mut leaves);
                for (written, alias) in leaves {
                    let Some(path) = absolute(&here, &written, is_module) else {
                        continue;
                    };
                    if public && inline.is_empty() {
                        if path.last().map(String::as_str) == Some("*") {
                            facts.glob_reexports.push(path[..path.len() - 1].to_vec());
                        } else if let Some(name) = alias.or_else(|| path.last().cloned()) {
                            facts.reexports.insert(name, path.clone());
                        }
                    }
                    facts.names.push(path);
                }
            }
            Token::Ident(word) if matches!(word.as_str(), "crate" | "super" | "self") => {
                // A path in code: `crate::a::b(..)`, `super::X`.
                let preceded_by_sep = i >= 1 && tokens[i - 1] == Token::PathSep;
                let (written, j) = path_at(&tokens, i);
                if !preceded_by_sep && written.len() > 1 {
                    if let Some(path) = absolute(&here, &written, is_module) {
                        facts.names.push(path);
                    }
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    facts
}

/// One crate's files by module path, and what each says.
struct CrateSources {
    files: BTreeMap<ModPath, PathBuf>,
    facts: BTreeMap<ModPath, FileFacts>,
}

fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && (stem == "lib" || stem == "main")) {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn read_crate(src: &Path) -> CrateSources {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    // Beside a lib.rs, main.rs is its own crate root (the binary), not a module of lib.rs; a
    // binary-only crate (xtask) has main.rs as its root.
    if src.join("lib.rs").exists() {
        paths.retain(|path| {
            !(path.file_name().is_some_and(|n| n == "main.rs") && path.parent() == Some(src))
        });
    }
    let files: BTreeMap<ModPath, PathBuf> = paths
        .into_iter()
        .map(|path| (module_of(src, &path), path))
        .collect();
    let is_module = |m: &[String]| files.keys().any(|k| k.starts_with(m));
    let facts = files
        .iter()
        .map(|(module, path)| {
            let source = std::fs::read_to_string(path).unwrap();
            (module.clone(), read_facts(&source, module, &is_module))
        })
        .collect();
    CrateSources { files, facts }
}

impl CrateSources {
    /// The file module that holds `path` (the longest file-module prefix).
    fn file_module(&self, path: &[String]) -> ModPath {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|prefix| self.files.contains_key(prefix))
            .unwrap_or_default()
    }

    /// The file that defines what `path` names, following re-exports.
    fn defining_file(&self, path: &[String], hops: usize) -> ModPath {
        let module = self.file_module(path);
        if hops > 16 || module.len() == path.len() {
            return module;
        }
        let name = &path[module.len()];
        if let Some(target) = self.facts[&module].reexports.get(name) {
            let mut next = target.clone();
            next.extend(path[module.len() + 1..].iter().cloned());
            if next != path {
                return self.defining_file(&next, hops + 1);
            }
        }
        module
    }

    /// File-to-file edges (`from` uses an item of `to`), ignoring a file naming its own
    /// descendants.
    fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for (from, facts) in &self.facts {
            for name in &facts.names {
                let targets: Vec<ModPath> = if name.last().map(String::as_str) == Some("*") {
                    vec![self.file_module(&name[..name.len() - 1])]
                } else {
                    vec![self.defining_file(name, 0)]
                };
                for to in targets {
                    if &to != from && !to.starts_with(from) {
                        edges.entry(from.clone()).or_default().insert(to);
                    }
                }
            }
        }
        edges
    }
}

/// Strongly connected sets of more than one file (Tarjan's algorithm).
fn circles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit(state: &mut State, node: &ModPath) {
        let n = state.index.len();
        state.index.insert(node.clone(), n);
        state.low.insert(node.clone(), n);
        state.stack.push(node.clone());
        state.on_stack.insert(node.clone());
        for next in state.edges.get(node).into_iter().flatten() {
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node.clone(), low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node.clone(), low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut set = Vec::new();
            loop {
                let top = state.stack.pop().unwrap();
                state.on_stack.remove(&top);
                let done = &top == node;
                set.push(top);
                if done {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                state.found.push(set);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: Vec<ModPath> = edges.keys().cloned().collect();
    for node in &nodes {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(workspace_root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn no_crate_has_files_that_import_each_other_in_a_circle() {
    let mut report = Vec::new();
    for src in crate_dirs() {
        let sources = read_crate(&src);
        let edges = sources.edges();
        for set in circles(&edges) {
            let names: Vec<String> = set
                .iter()
                .map(|m| {
                    sources.files[m]
                        .strip_prefix(&src)
                        .unwrap()
                        .display()
                        .to_string()
                })
                .collect();
            let links: Vec<String> = set
                .iter()
                .flat_map(|from| {
                    edges[from]
                        .iter()
                        .filter(|to| set.contains(to))
                        .map(move |to| format!("{} -> {}", from.join("::"), to.join("::")))
                })
                .collect();
            report.push(format!(
                "{}: {} ({})",
                src.parent().unwrap().file_name().unwrap().to_string_lossy(),
                names.join(", "),
                links.join("; ")
            ));
        }
    }
    assert!(
        report.is_empty(),
        "files import each other in a circle; move what both need to the file that owns it:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_checker_sees_a_circle_through_a_reexport_and_a_super_path() {
    // a.rs uses b's item through the crate root's re-export; b.rs uses a's through super.
    let mut files = BTreeMap::new();
    let mut facts = BTreeMap::new();
    let sources = [
        (
            vec![],
            "mod a; mod b; pub use b::Thing; pub use a::{Other as Renamed};",
        ),
        (vec!["a".to_string()], "use crate::Thing; fn f() {}"),
        (
            vec!["b".to_string()],
            "pub struct Thing; fn g() { let _ = super::Renamed; }",
        ),
        (
            vec!["c".to_string()],
            "mod tests { use super::*; } // crate::a::x in a comment",
        ),
    ];
    for (module, _) in &sources {
        files.insert(module.clone(), PathBuf::from(module.join("/")));
    }
    let is_module = |m: &[String]| files.keys().any(|k: &ModPath| k.starts_with(m));
    for (module, source) in &sources {
        facts.insert(module.clone(), read_facts(source, module, &is_module));
    }
    let sources = CrateSources { files, facts };
    let found = circles(&sources.edges());
    assert_eq!(
        found,
        vec![vec![vec!["a".to_string()], vec!["b".to_string()]]]
    );
}

/// The command-line crate keeps one room per command: `command/NAME` (a file or a folder) is
/// the only place a subcommand lives; nothing below uses a command's module, and no command
/// uses another's. Only the crate root's dispatch names them.
#[test]
fn each_command_is_one_room_that_only_the_dispatch_enters() {
    let src = workspace_root().join("crates/cli/src");
    let sources = read_crate(&src);
    let room =
        |m: &ModPath| (m.first().map(String::as_str) == Some("command")).then(|| m.get(1).cloned());
    let mut wrong = Vec::new();
    for (from, targets) in sources.edges() {
        for to in targets {
            let Some(to_room) = room(&to) else { continue };
            let allowed = match room(&from) {
                // The dispatch (lib.rs) and command/mod.rs name the rooms.
                None => from.is_empty(),
                Some(None) => true,
                Some(from_room) => from_room == to_room,
            };
            if !allowed && to_room.is_some() {
                wrong.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a module uses a command's room (move what it needs below crate::command):\n{}",
        wrong.join("\n")
    );
}

/// Every path a source names, as written: each leaf of a `use` tree (`use std::{fs, io};`
/// gives `std::fs` and `std::io`), and each path in code (`std::fs::read`, `Instant::now`,
/// `println` of `println!(..)` with a trailing `!`). Comments and strings are left out.
fn named_paths(source: &str) -> Vec<Vec<String>> {
    let tokens = tokenize(source);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(word) if word == "use" => {
                let mut leaves = Vec::new();
                i = use_tree(&tokens, i + 1, &[], &mut leaves);
                paths.extend(leaves.into_iter().map(|(path, _)| path));
            }
            Token::Ident(_) if i == 0 || tokens[i - 1] != Token::PathSep => {
                let (mut path, j) = path_at(&tokens, i);
                if tokens.get(j) == Some(&Token::Punct('!')) {
                    path.push("!".to_string());
                }
                paths.push(path);
                i = j;
            }
            _ => i += 1,
        }
    }
    paths
}

/// What the aggregator may not name: the ways to files, clocks, threads, the network, other
/// processes, the environment and the terminal. `SystemTime` itself is data a report
/// carries (a run's window); reading the clock (`SystemTime::now`, any `Instant`) is not.
const IMPURE: &[&[&str]] = &[
    &["std", "fs"],
    &["std", "thread"],
    &["std", "net"],
    &["std", "process"],
    &["std", "env"],
    &["std", "time", "Instant"],
    &["Instant"],
    &["SystemTime", "now"],
    &["std", "time", "SystemTime", "now"],
    &["println", "!"],
    &["eprintln", "!"],
    &["print", "!"],
    &["eprint", "!"],
    &["dbg", "!"],
];

/// The places in `source` (its paths, as `a::b`) that start with one of `forbidden`.
fn forbidden_paths(source: &str, forbidden: &[&[&str]]) -> Vec<String> {
    named_paths(source)
        .into_iter()
        .filter(|path| {
            forbidden
                .iter()
                .any(|f| path.len() >= f.len() && path.iter().zip(f.iter()).all(|(a, b)| a == b))
        })
        .map(|path| path.join("::"))
        .collect()
}

/// `FILE: path` for each path starting with one of `forbidden` in the files under `src`
/// (`crates/NAME/src`), but those `allowed` (by their path below `src`).
fn forbidden_in(src: &str, allowed: &dyn Fn(&Path) -> bool, forbidden: &[&[&str]]) -> Vec<String> {
    let src = workspace_root().join(src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        if allowed(relative) {
            continue;
        }
        let source = std::fs::read_to_string(file).unwrap();
        for path in forbidden_paths(&source, forbidden) {
            wrong.push(format!("{}: {path}", relative.display()));
        }
    }
    wrong
}

/// The aggregator is a pure function of engine results (ARCHITECTURE.md "The aggregator does
/// no I/O"): none of its files, test modules included, names a file, clock, thread, socket,
/// process, the environment or the terminal.
#[test]
fn the_aggregator_does_no_io_and_reads_no_clock() {
    let wrong = forbidden_in("crates/aggregate/src", &|_| false, IMPURE);
    assert!(
        wrong.is_empty(),
        "the aggregator must stay pure (no files, clocks, threads, network, processes, environment or printing); move the I/O to the caller:\n{}",
        wrong.join("\n")
    );
}

/// The engine calls every command's I/O goes through `engine::Engine` for (ARCHITECTURE.md
/// "Every command runs I/O through one seam"): only the seam (`engine.rs` and `engine/`)
/// names them.
const SEAM_ONLY: &[&[&str]] = &[
    &["hostmax_engine", "measure"],
    &["hostmax_engine", "discard"],
    &["hostmax_engine", "zero_out"],
    &["hostmax_engine", "read_pass"],
    &["hostmax_engine", "measure_issue_ceiling"],
    &["hostmax_engine", "probe_kernel_ring"],
    &["hostmax_engine", "check_io_uring"],
    &["hostmax_engine", "check_memory"],
    &["hostmax_engine", "bounded_sources"],
    &["hostmax_engine", "UringReads"],
    &["hostmax_engine", "*"],
];

#[test]
fn only_the_seam_calls_the_engines_io() {
    // The seam: engine.rs and its folder (the real engine's secure erase, the fake).
    let seam = |file: &Path| file == Path::new("engine.rs") || file.starts_with("engine");
    let wrong = forbidden_in("crates/cli/src", &seam, SEAM_ONLY);
    assert!(
        wrong.is_empty(),
        "call the engine through crate::engine::Engine (the one seam, which the fake engine stands in for), not directly:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_path_checker_sees_use_trees_code_paths_and_macros() {
    let source = r#"
        use std::{fs, time::{Duration, Instant}};
        use hostmax_engine::{measure as run_it, Workload};
        // std::thread::spawn in a comment
        fn f() { let _ = "std::net::TcpStream"; std::process::id(); println!("x"); }
        fn g(t: std::time::SystemTime) -> bool { t < SystemTime::now() }
    "#;
    assert_eq!(
        forbidden_paths(source, IMPURE),
        vec![
            "std::fs",
            "std::time::Instant",
            "std::process::id",
            "println::!",
            "SystemTime::now"
        ]
    );
    assert_eq!(
        forbidden_paths(source, SEAM_ONLY),
        vec!["hostmax_engine::measure"]
    );
}

/// The Markdown files whose relative links are checked, from the repository's root: README.md,
/// ARCHITECTURE.md, benches/README.md and every file of the book (`docs/src/`).
fn documentation_files() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "benches/README.md"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let mut book: Vec<PathBuf> = std::fs::read_dir(root.join("docs/src"))
        .expect("docs/src/ holds the book")
        .map(|e| PathBuf::from("docs/src").join(e.unwrap().file_name()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    book.sort();
    files.extend(book);
    files
}

/// The lines of a Markdown text outside fenced code blocks, with their numbers (from 1) and
/// inline code spans blanked out (or, with `keep_code`, only their backticks removed).
fn prose_lines(markdown: &str, keep_code: bool) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut prose = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            }
            if c == '`' {
                if !keep_code {
                    prose.push(' ');
                }
            } else {
                prose.push(if in_code && !keep_code { ' ' } else { c });
            }
        }
        lines.push((n + 1, prose));
    }
    lines
}

/// The targets of the inline links (`[text](target)`) of a Markdown line.
fn link_targets(line: &str) -> Vec<String> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            let end = rest.find(')')?;
            let target = rest[..end].trim();
            (!target.is_empty() && !target.contains(' ')).then(|| target.to_string())
        })
        .collect()
}

/// The anchors GitHub gives a Markdown file's headings: lowercased, punctuation dropped,
/// spaces as hyphens, a repeated one suffixed `-1`, `-2`, ...
fn heading_anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(markdown, true) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        anchors.insert(if *count == 0 {
            slug.clone()
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    anchors
}

#[test]
fn the_heading_anchors_are_githubs() {
    let anchors = heading_anchors(
        "# Verdicts: does it hold?\n## `hostmax curve`\n```sh\n# not a heading\n```\n## Tests\n### Tests\n#nope\n",
    );
    let expected: BTreeSet<String> = ["verdicts-does-it-hold", "hostmax-curve", "tests", "tests-1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(anchors, expected);
    assert_eq!(
        link_targets("see [`a`](docs/src/a.md#x) and [b](https://e.org) ([c](#y))"),
        vec!["docs/src/a.md#x", "https://e.org", "#y"]
    );
}

/// Every chapter file of the book is listed in `docs/src/SUMMARY.md` (mdBook builds only what
/// it lists) and opens with its title.
#[test]
fn every_chapter_of_the_book_is_in_its_summary() {
    let src = workspace_root().join("docs/src");
    assert!(workspace_root().join("docs/book.toml").is_file());
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = prose_lines(&summary, false)
        .iter()
        .flat_map(|(_, line)| link_targets(line))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".md") || name == "SUMMARY.md" {
            continue;
        }
        if !listed.contains(&name) {
            missing.push(name.clone());
        }
        let text = std::fs::read_to_string(src.join(&name)).unwrap();
        assert!(
            text.starts_with("# "),
            "docs/src/{name} does not open with its title (# ...)"
        );
    }
    assert!(
        missing.is_empty(),
        "chapters not listed in docs/src/SUMMARY.md: {missing:?}"
    );
    for chapter in &listed {
        assert!(
            src.join(chapter).is_file(),
            "docs/src/SUMMARY.md lists {chapter}, which does not exist"
        );
    }
}

/// Every relative link of the documentation leads to a file or folder that exists, and a
/// link to a heading (`file.md#anchor`, `#anchor`) to a heading of that file.
#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let root = workspace_root();
    let mut broken = Vec::new();
    for file in documentation_files() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        let dir = file.parent().unwrap_or(Path::new(""));
        for (line, prose) in prose_lines(&text, false) {
            for target in link_targets(&prose) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    dir.join(path)
                };
                let at = root.join(&linked);
                if !at.exists() {
                    broken.push(format!(
                        "{}:{line}: {target}: no {}",
                        file.display(),
                        linked.display()
                    ));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if at.extension().is_some_and(|e| e == "md") {
                    let linked_text = std::fs::read_to_string(&at).unwrap();
                    if !heading_anchors(&linked_text).contains(anchor) {
                        broken.push(format!(
                            "{}:{line}: {target}: {} has no heading #{anchor}",
                            file.display(),
                            linked.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}
