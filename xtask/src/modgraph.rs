//! `cargo xtask modgraph DIR [--files]`: the graph of references between the modules of one
//! directory of a crate (`src/lower`), failing when it has a cycle.
//!
//! Every `.rs` file under `DIR` is parsed with `syn`; each path in it (`use` trees, and paths
//! in types, expressions and patterns) that starts with `crate::`, `self::`, `super::` or the
//! name of a child module is resolved against the module tree to the deepest module file it
//! reaches. A reference from one node to another is an edge. By default the nodes are the
//! directory's own `mod.rs` and its direct children (a sub-folder counts as one node, so
//! references inside it are ignored); `--files` makes every file a node. `mod x;`
//! declarations are not references. Paths inside macro invocations are not seen (their tokens
//! are not parsed), nor are names brought in by a glob `use` of a sibling and used bare.
//!
//! The graph is printed (`node -> target (first reference at file:line)`), then each cycle
//! (strongly connected component of more than one node); the task fails if there is one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// Directories whose files must not import each other in a cycle (checked by `cargo xtask
/// lint`): every file a node (`--files`).
pub const ACYCLIC: &[&str] = &[
    "src/aot",
    "src/backend",
    "src/gpu_binary",
    "src/ir",
    "src/jit",
    "src/lir",
    "src/lower",
];

/// Directories whose modules must not import each other in a cycle, a sub-folder counting as
/// one node (checked by `cargo xtask lint`; the files inside those sub-folders still do).
pub const ACYCLIC_MODULES: &[&str] = &["src", "src/aot", "src/backend", "src/ir"];

/// Fails, printing the graph, if the modules of `dir` (relative to the workspace) import each
/// other in a cycle, every file a node when `files`; prints one line otherwise.
pub fn check_acyclic(dir: &str, files: bool) -> Result<(), String> {
    let graph = Graph::build(&crate::workspace_root().join(dir), files)?;
    let cycles = graph.cycles();
    let flag = if files { " --files" } else { "" };
    if cycles.is_empty() {
        eprintln!(
            "xtask: no import cycles between the {} modules of {dir}{}",
            graph.nodes.len(),
            if files { " (files)" } else { "" }
        );
        return Ok(());
    }
    eprint!("{}", graph.render());
    for cycle in &cycles {
        eprintln!("cycle: {}", cycle.join(", "));
    }
    Err(format!(
        "import cycle(s) among the modules of {dir} (`cargo xtask modgraph {dir}{flag}`)"
    ))
}

/// Runs the task on `args` (`DIR [--files]`).
pub fn modgraph(args: &[String]) -> Result<(), String> {
    let mut dir = None;
    let mut files = false;
    for arg in args {
        match arg.as_str() {
            "--files" => files = true,
            other if dir.is_none() && !other.starts_with('-') => dir = Some(PathBuf::from(other)),
            other => return Err(format!("modgraph: unexpected argument `{other}`")),
        }
    }
    let dir = dir.ok_or("usage: cargo xtask modgraph DIR [--files]")?;
    let dir = if dir.is_absolute() {
        dir
    } else {
        crate::workspace_root().join(dir)
    };
    let graph = Graph::build(&dir, files)?;
    print!("{}", graph.render());
    let cycles = graph.cycles();
    if cycles.is_empty() {
        println!("no cycles ({} nodes)", graph.nodes.len());
        Ok(())
    } else {
        for cycle in &cycles {
            println!("cycle: {}", cycle.join(", "));
        }
        Err(format!(
            "{} cycle(s) among the modules of {}",
            cycles.len(),
            dir.display()
        ))
    }
}

/// A module path from the crate root (`["lower", "params"]`).
type ModPath = Vec<String>;

/// The module graph of a directory.
struct Graph {
    /// Node names (module paths relative to the directory's module; the root is `mod.rs`).
    nodes: BTreeSet<String>,
    /// `from -> to -> first reference (file:line)`.
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn build(dir: &Path, files: bool) -> Result<Graph, String> {
        let base = module_path_of_dir(dir)?;
        let mut sources = Vec::new();
        collect_rs(dir, &mut sources)?;
        sources.sort();
        // Module path of every file.
        let modules: Vec<(PathBuf, ModPath)> = sources
            .into_iter()
            .map(|file| {
                let rel = file.strip_prefix(dir).expect("under dir").to_path_buf();
                let mut path = base.clone();
                let comps: Vec<String> = rel
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                for (i, c) in comps.iter().enumerate() {
                    if i + 1 == comps.len() {
                        // `lib.rs` directly in a crate's src/ is the root, like a `mod.rs`.
                        if c != "mod.rs" && !(comps.len() == 1 && c == "lib.rs" && base.is_empty())
                        {
                            path.push(c.trim_end_matches(".rs").to_owned());
                        }
                    } else {
                        path.push(c.clone());
                    }
                }
                (file, path)
            })
            .collect();
        let known: BTreeSet<ModPath> = modules.iter().map(|(_, m)| m.clone()).collect();
        let node_of = |m: &ModPath| -> String {
            let rel = &m[base.len()..];
            let rel = if files { rel } else { &rel[..rel.len().min(1)] };
            if rel.is_empty() {
                "mod.rs".to_owned()
            } else {
                rel.join("::")
            }
        };
        let mut graph = Graph {
            nodes: modules.iter().map(|(_, m)| node_of(m)).collect(),
            edges: BTreeMap::new(),
        };
        for (file, module) in &modules {
            let text = fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let ast = syn::parse_file(&text)
                .map_err(|e| format!("cannot parse {}: {e}", file.display()))?;
            let mut refs = Refs {
                known: &known,
                module: module.clone(),
                found: Vec::new(),
            };
            refs.visit_file(&ast);
            let from = node_of(module);
            for (target, line) in refs.found {
                if !target.starts_with(&base) {
                    continue;
                }
                let to = node_of(&target);
                if to != from {
                    let rel = file.strip_prefix(dir).unwrap_or(file);
                    graph
                        .edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| format!("{}:{line}", rel.display()));
                }
            }
        }
        Ok(graph)
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            out.push_str(node);
            out.push('\n');
            for (to, at) in self.edges.get(node).into_iter().flatten() {
                out.push_str(&format!("  -> {to}  ({at})\n"));
            }
        }
        out
    }

    /// Strongly connected components with more than one node (Tarjan's algorithm).
    fn cycles(&self) -> Vec<Vec<String>> {
        struct State<'g> {
            graph: &'g Graph,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            on_stack: BTreeSet<&'g str>,
            out: Vec<Vec<String>>,
        }
        fn visit<'g>(s: &mut State<'g>, v: &'g str) {
            let i = s.index.len();
            s.index.insert(v, i);
            s.low.insert(v, i);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in s.graph.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w.as_str()]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w.as_str()) {
                    let low = s.low[v].min(s.index[w.as_str()]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.out.push(component);
                }
            }
        }
        let mut s = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for v in &self.nodes {
            if !s.index.contains_key(v.as_str()) {
                visit(&mut s, v);
            }
        }
        s.out.sort();
        s.out
    }
}

/// The module path of `dir` from the crate root: the components after the nearest `src`.
fn module_path_of_dir(dir: &Path) -> Result<ModPath, String> {
    let comps: Vec<String> = dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let src = comps
        .iter()
        .rposition(|c| c == "src")
        .ok_or_else(|| format!("{} is not under a crate's src/", dir.display()))?;
    let crate_root = src + 1 == comps.len() && dir.join("lib.rs").is_file();
    if !dir.join("mod.rs").is_file() && !crate_root {
        return Err(format!(
            "{} has no mod.rs (nor, as a crate's src/, lib.rs)",
            dir.display()
        ));
    }
    Ok(comps[src + 1..].to_vec())
}

/// The `.rs` files under `dir`, except unit-test modules (`tests.rs`, and files under a
/// `tests/` folder: they sit beside what they test and use the whole crate, so they are not
/// part of its layering) and sub-folders that are crate roots of their own (a `main.rs` beside
/// no `mod.rs`: a binary's tree, whose `crate::` is not the library's).
fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            let binary = path.join("main.rs").is_file() && !path.join("mod.rs").is_file();
            if binary || path.file_name().is_some_and(|n| n == "tests") {
                continue;
            }
            collect_rs(&path, out)?;
        } else if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Collects the module paths one file refers to.
struct Refs<'k> {
    known: &'k BTreeSet<ModPath>,
    /// The module being visited (inline `mod x { }` blocks push onto it).
    module: ModPath,
    /// Targets (deepest known module file) with the line of the reference.
    found: Vec<(ModPath, usize)>,
}

impl Refs<'_> {
    /// Resolves `segments` (written in `self.module`) and records the module it reaches.
    fn reference(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut at: ModPath;
        let mut rest = &segments[1..];
        match first.as_str() {
            "crate" => at = Vec::new(),
            "self" => at = self.module.clone(),
            "super" => {
                at = self.module.clone();
                at.pop();
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop();
                    rest = &rest[1..];
                }
            }
            child => {
                let mut path = self.module.clone();
                path.push(child.to_owned());
                if !self.known.contains(&path) {
                    return;
                }
                at = path;
            }
        }
        for seg in rest {
            let mut next = at.clone();
            next.push(seg.clone());
            if self.known.contains(&next) {
                at = next;
            } else {
                break;
            }
        }
        // Inline modules belong to their file: walk up to a module that is a file.
        while !at.is_empty() && !self.known.contains(&at) {
            at.pop();
        }
        self.found.push((at, line));
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, n.ident.to_string(), tree),
            syn::UseTree::Rename(r) => self.leaf(prefix, r.ident.to_string(), tree),
            syn::UseTree::Glob(_) => {
                let line = tree.span().start().line;
                self.reference(prefix, line);
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }

    fn leaf(&mut self, prefix: &mut Vec<String>, name: String, tree: &syn::UseTree) {
        prefix.push(name);
        let line = tree.span().start().line;
        self.reference(prefix, line);
        prefix.pop();
    }
}

impl<'ast> Visit<'ast> for Refs<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut prefix = Vec::new();
        self.use_tree(&mut prefix, &item.tree);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.module.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.module.pop();
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.reference(&segments, path.span().start().line);
        }
        syn::visit::visit_path(self, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = root.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = std::env::temp_dir()
            .join(format!("modgraph-{}-{name}", std::process::id()))
            .join("src")
            .join("m");
        let _ = fs::remove_dir_all(&root);
        write(&root, files);
        root
    }

    #[test]
    fn finds_a_cycle_through_use_super_and_paths() {
        let dir = tree(
            "cycle",
            &[
                ("mod.rs", "mod a; mod b;\n"),
                ("a.rs", "use super::b::{B, helpers::f};\n"),
                ("b/mod.rs", "mod helpers;\nfn g() { crate::m::a::run(); }\n"),
                ("b/helpers.rs", "pub fn f() {}\n"),
            ],
        );
        let graph = Graph::build(&dir, false).unwrap();
        assert_eq!(graph.cycles(), vec![vec!["a".to_owned(), "b".to_owned()]]);
        assert!(graph.render().contains("-> b  (a.rs:1)"));
        // File granularity: an edge reaches the deepest file (`b::helpers`); the cycle is
        // between `a` and `b/mod.rs`.
        let graph = Graph::build(&dir, true).unwrap();
        assert!(graph.edges["a"].contains_key("b::helpers"));
        assert!(!graph.edges.contains_key("b::helpers"));
        assert_eq!(graph.cycles(), vec![vec!["a".to_owned(), "b".to_owned()]]);
    }

    #[test]
    fn a_crate_root_is_its_lib_rs_and_tests_and_binaries_are_not_nodes() {
        let root = std::env::temp_dir()
            .join(format!("modgraph-{}-crate", std::process::id()))
            .join("src");
        let _ = fs::remove_dir_all(&root);
        write(
            &root,
            &[
                (
                    "lib.rs",
                    "mod a; mod b;
",
                ),
                (
                    "a.rs",
                    "use crate::b::B;
#[cfg(test)]
mod tests;
",
                ),
                (
                    "a/tests.rs",
                    "use crate::b::B;
",
                ),
                (
                    "b.rs",
                    "pub struct B;
#[cfg(test)]
mod tests;
",
                ),
                // A unit test of `b` that uses `a` would close a cycle: it is not a node.
                (
                    "b/tests.rs",
                    "use crate::a;
",
                ),
                (
                    "cli/main.rs",
                    "mod cmd;
",
                ),
                (
                    "cli/cmd.rs",
                    "use crate::x;
",
                ),
            ],
        );
        let graph = Graph::build(&root, true).unwrap();
        assert!(graph.cycles().is_empty(), "{}", graph.render());
        assert!(graph.nodes.contains("mod.rs"), "{:?}", graph.nodes);
        assert!(graph.edges["a"].contains_key("b"));
        assert!(
            !graph
                .nodes
                .iter()
                .any(|n| n.contains("tests") || n.contains("cli"))
        );
    }

    #[test]
    fn one_way_graph_has_no_cycle() {
        let dir = tree(
            "acyclic",
            &[
                ("mod.rs", "mod a; mod b;\nuse a::A;\nfn f() { b::g(); }\n"),
                (
                    "a.rs",
                    "use self::inner::X;\nmod inner { pub struct X; use super::super::b; }\n",
                ),
                ("b.rs", "pub fn g() {}\nmod tests { use super::*; }\n"),
            ],
        );
        let graph = Graph::build(&dir, false).unwrap();
        assert!(graph.cycles().is_empty(), "{}", graph.render());
        assert!(graph.edges["mod.rs"].contains_key("a"));
        assert!(graph.edges["mod.rs"].contains_key("b"));
        assert!(graph.edges["a"].contains_key("b"));
    }
}
