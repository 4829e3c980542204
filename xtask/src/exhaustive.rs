//! `cargo xtask lint`'s exhaustiveness rule (docs/STYLE: "no `_ =>` over our own enums in
//! verify and lower"): in [`DIRS`], no `match` over one of the project's own enums has a
//! catch-all arm, so that adding a variant makes the compiler list every site.
//!
//! The check is syntactic: `syn` cannot know a scrutinee's type, so a `match` counts as one
//! over our enums when one of its arms' patterns names one (a path with a segment that is the
//! name of an enum declared under `src/` or `runtime/src/`: `enum Name`, or the first name in a
//! `keyword_enum!` invocation). A catch-all arm is an unguarded `_`, a bare binding (`other =>`,
//! the same catch-all under a name: the lowering's internal errors for values the verifier
//! rules out list the variants they reject instead, `other @ (Val::Str(_) | ...) =>`), or a
//! tuple or reference of `_`s and bindings (`(_, part) =>`). A `match` whose arms name only foreign types
//! (`Option`'s `None`, `Ordering`, integers) is not checked. Where a catch-all over a foreign
//! type is mixed with our paths, the arm may opt out with a comment on the line above it that
//! starts with `// foreign:` and says why.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::workspace_root;

/// The directories whose matches must be exhaustive over our enums.
pub const DIRS: &[&str] = &["src/lower", "src/ir/verify"];

/// Where the project's enums are declared.
const ENUM_DIRS: &[&str] = &["src", "runtime/src"];

/// The opt-out comment, on the line above a catch-all arm.
const OPT_OUT: &str = "// foreign:";

/// Fails, listing them, when a `match` in [`DIRS`] over our enums has a catch-all arm.
pub fn check() -> Result<(), String> {
    let root = workspace_root();
    let enums = own_enums(&root)?;
    let mut found = Vec::new();
    let mut files = 0;
    for dir in DIRS {
        let mut sources = Vec::new();
        collect_rs(&root.join(dir), &mut sources)?;
        sources.sort();
        for file in sources {
            files += 1;
            let text = fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let rel = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            found.extend(catch_alls(&text, &enums, &rel)?);
        }
    }
    if found.is_empty() {
        eprintln!(
            "xtask: no catch-all arm over the project's {} enums in {} files of {}",
            enums.len(),
            files,
            DIRS.join(", ")
        );
        return Ok(());
    }
    Err(format!(
        "catch-all arms in a `match` over the project's own enums (list the variants, so a new \
         one is a compile error; over a foreign type, say so with `{OPT_OUT} why` on the line \
         above):\n{}",
        found.join("\n")
    ))
}

/// Every enum name declared in [`ENUM_DIRS`].
fn own_enums(root: &Path) -> Result<BTreeSet<String>, String> {
    let mut names = BTreeSet::new();
    for dir in ENUM_DIRS {
        let mut sources = Vec::new();
        collect_rs(&root.join(dir), &mut sources)?;
        for file in sources {
            let text = fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            names.extend(enum_names(&text));
        }
    }
    Ok(names)
}

/// The names after `enum` and the first name in each `keyword_enum! {` of `text`.
fn enum_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!'))
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        let starts_upper = pair[1].starts_with(|c: char| c.is_ascii_uppercase());
        if pair[0] == "enum" && starts_upper {
            names.push(pair[1].to_owned());
        }
    }
    for (at, _) in text.match_indices("keyword_enum! {") {
        let name = text[at..]
            .lines()
            .skip(1)
            .map(str::trim)
            .find(|l| !l.starts_with("///") && !l.starts_with("#["));
        if let Some(name) = name.and_then(|l| l.split([',', ' ', '{']).next()) {
            names.push(name.to_owned());
        }
    }
    names
}

/// `file:line: ...` for each catch-all arm of a match over `enums` in `text`.
fn catch_alls(text: &str, enums: &BTreeSet<String>, file: &str) -> Result<Vec<String>, String> {
    let ast = syn::parse_file(text).map_err(|e| format!("cannot parse {file}: {e}"))?;
    let mut v = Matches {
        enums,
        lines: text.lines().collect(),
        file,
        found: Vec::new(),
    };
    v.visit_file(&ast);
    Ok(v.found)
}

struct Matches<'a> {
    enums: &'a BTreeSet<String>,
    lines: Vec<&'a str>,
    file: &'a str,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for Matches<'_> {
    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        let ours = m.arms.iter().find_map(|arm| {
            let mut names = PathNames::default();
            names.visit_pat(&arm.pat);
            names.0.into_iter().find(|n| self.enums.contains(n))
        });
        if let Some(ours) = ours {
            for arm in m.arms.iter().filter(|a| a.guard.is_none()) {
                if !catch_all(&arm.pat) {
                    continue;
                }
                let line = arm.pat.span().start().line;
                let above = line
                    .checked_sub(2)
                    .and_then(|i| self.lines.get(i))
                    .map_or("", |l| l.trim());
                if !above.starts_with(OPT_OUT) {
                    self.found.push(format!(
                        "{}:{line}: a catch-all arm in a match over `{ours}`",
                        self.file
                    ));
                }
            }
        }
        syn::visit::visit_expr_match(self, m);
    }
}

/// Whether `pat` is a catch-all: `_`, a bare binding (`other =>`), or a tuple or reference of
/// `_`s and bindings.
fn catch_all(pat: &syn::Pat) -> bool {
    match pat {
        syn::Pat::Wild(_) => true,
        syn::Pat::Ident(_) => wild_or_binding(pat),
        syn::Pat::Tuple(t) => t.elems.iter().all(wild_or_binding),
        syn::Pat::Reference(r) => catch_all(&r.pat),
        syn::Pat::Paren(p) => catch_all(&p.pat),
        _ => false,
    }
}

/// `_`, a lowercase binding, or a tuple or reference of those.
fn wild_or_binding(pat: &syn::Pat) -> bool {
    match pat {
        syn::Pat::Ident(i) => {
            i.subpat.is_none()
                && i.ident
                    .to_string()
                    .starts_with(|c: char| c == '_' || c.is_ascii_lowercase())
        }
        other => catch_all(other),
    }
}

/// Every path segment named in a pattern.
#[derive(Default)]
struct PathNames(Vec<String>);

impl<'ast> Visit<'ast> for PathNames {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.0
            .extend(p.segments.iter().map(|s| s.ident.to_string()));
        syn::visit::visit_path(self, p);
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str) -> Vec<String> {
        let enums = enum_names("enum Kind { A, B, C }\nkeyword_enum! {\n    /// d\n    Word {\n");
        catch_alls(src, &enums.into_iter().collect(), "f.rs").unwrap()
    }

    #[test]
    fn finds_the_catch_alls_over_our_enums() {
        assert_eq!(
            check("fn f(k: Kind) { match k { Kind::A => {} _ => {} } }"),
            ["f.rs:1: a catch-all arm in a match over `Kind`"]
        );
        assert_eq!(
            check("fn f(k: Option<Word>) { match k {\n Some(Word::A) => {}\n _ => {} } }"),
            ["f.rs:3: a catch-all arm in a match over `Word`"]
        );
        assert_eq!(
            check("fn f(k: (Kind, u8)) { match k { (Kind::A, 1) => {} (_, _) => {} } }").len(),
            1
        );
        assert_eq!(
            check("fn f(k: Kind) { match k {\n Kind::A => {}\n other => g(other) } }"),
            ["f.rs:3: a catch-all arm in a match over `Kind`"]
        );
    }

    #[test]
    fn passes_exhaustive_foreign_guarded_and_opted_out_arms() {
        let ok = [
            "fn f(k: Kind) { match k { Kind::A | Kind::B => {} Kind::C => {} } }",
            "fn f(k: Kind) { match k { Kind::A => {} other @ (Kind::B | Kind::C) => g(other) } }",
            "fn f(k: Option<u8>) { match k { Some(1) => {} None => {} _ => {} } }",
            "fn f(k: Kind) { match k { Kind::A => {} x if g(x) => {} Kind::B | Kind::C => {} } }",
            "fn f(k: Result<Kind, E>) { match k {\n Ok(Kind::A) => {}\n \
             // foreign: every error of E alike\n _ => {} } }",
        ];
        for src in ok {
            assert_eq!(check(src), Vec::<String>::new(), "{src}");
        }
    }
}
