//! The layers of `src/` hold: each module imports only its own layer and the layers below
//! it, and no two modules of a layer import each other in a circle (docs/architecture.md,
//! "The layers"). Every path a file names from the crate (`use crate::…`, `super::…`, a path
//! in code, a macro's tokens) counts, tests inside the file too. Pure filesystem: no server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use syn::visit::Visit;

/// The layers from the top down, each the crate's top-level modules it holds: `main.rs` and
/// `lib.rs` sit above them all.
const LAYERS: [&[&str]; 5] = [&["cli", "startup"], &["http"], &["domain"], &["infra"], &["values"]];

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|modules| modules.contains(&top))
}

/// A module's place in the circle check: the module of the root layer itself (`cli`), or the
/// module inside a layer's folder (`domain::live`, `http::state`).
fn unit(path: &[String]) -> Option<String> {
    let top = path.first()?;
    if LAYERS[0].contains(&top.as_str()) {
        return Some(top.clone());
    }
    layer_of(top)?;
    Some(format!("{top}::{}", path.get(1)?))
}

/// One file's module path inside the crate: `src/domain/live/socket/server.rs` is
/// `domain::live::socket::server`, a `mod.rs` its folder's.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut path: Vec<String> =
        relative.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    if path.last().is_some_and(|last| last == "mod" || last == "lib" || last == "main") {
        path.pop();
    }
    path
}

/// A crate path in a macro's tokens, as `to_string` spaces them (`crate :: infra :: db`).
static MACRO_PATH: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(\$?crate|super)((?:\s*::\s*\w+)+)").expect("a valid pattern"));

/// The crate paths one file names, each made absolute.
struct Named {
    /// The module the visitor stands in (the file's, then any inline `mod` inside it).
    here: Vec<String>,
    found: Vec<Vec<String>>,
}

impl Named {
    fn keep(&mut self, segments: Vec<String>) {
        let mut path = match segments.first().map(String::as_str) {
            Some("crate" | "$crate") => Vec::new(),
            Some("super") => self.here.clone(),
            _ => return,
        };
        let mut rest = segments.into_iter().peekable();
        if rest.peek().is_some_and(|first| first != "super") {
            rest.next();
        }
        for segment in rest {
            match segment.as_str() {
                "super" => {
                    path.pop();
                }
                "self" => {}
                _ => path.push(segment),
            }
        }
        self.found.push(path);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(syn::UseName { ident }) | syn::UseTree::Rename(syn::UseRename { ident, .. }) => {
                self.keep(prefix.iter().cloned().chain([ident.to_string()]).collect())
            }
            syn::UseTree::Glob(_) => self.keep(prefix.clone()),
            syn::UseTree::Group(group) => group.items.iter().for_each(|item| self.use_tree(prefix, item)),
        }
    }
}

impl<'ast> Visit<'ast> for Named {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.keep(path.segments.iter().map(|segment| segment.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let tokens = mac.tokens.to_string();
        for found in MACRO_PATH.captures_iter(&tokens) {
            let segments = std::iter::once(found[1].replace(' ', ""))
                .chain(found[2].split("::").map(str::trim).filter(|part| !part.is_empty()).map(str::to_owned))
                .collect();
            self.keep(segments);
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        self.here.push(module.ident.to_string());
        syn::visit::visit_item_mod(self, module);
        self.here.pop();
    }
}

fn rust_files(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap_or_else(|err| panic!("reading {}: {err}", folder.display())) {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// What breaks the layers of the crate in `src`: each a line naming the file and the path.
fn broken_layers(src: &Path) -> Vec<String> {
    let mut broken = Vec::new();
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let module = module_of(src, &file);
        let shown = file.strip_prefix(src.parent().unwrap_or(src)).unwrap_or(&file).display().to_string();
        let Some(top) = module.first() else { continue };
        let Some(layer) = layer_of(top) else {
            broken.push(format!("{shown}: `{top}` is in no layer: put it in one of {LAYERS:?}"));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("reading {shown}: {err}"));
        let syntax = syn::parse_file(&text).unwrap_or_else(|err| panic!("parsing {shown}: {err}"));
        let mut named = Named { here: module.clone(), found: Vec::new() };
        named.visit_file(&syntax);
        for path in named.found {
            let Some(first) = path.first() else { continue };
            match layer_of(first) {
                Some(above) if above < layer => broken.push(format!(
                    "{shown}: `{}` is in a layer above ({first}), which this one may not import",
                    path.join("::")
                )),
                None => {
                    broken.push(format!("{shown}: `{}` is the crate root's own, above every layer", path.join("::")))
                }
                _ => {}
            }
            if let (Some(from), Some(to)) = (unit(&module), unit(&path))
                && from != to
                && layer_of(first) == Some(layer)
            {
                arrows.entry(from).or_default().insert(to);
            }
        }
    }
    broken.extend(circles(&arrows).into_iter().map(|circle| format!("a circle of modules: {}", circle.join(" -> "))));
    broken
}

/// The circles of `arrows`: each strongly connected set of more than one module, sorted, with
/// the first module again at its end.
fn circles(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reaches = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut next = vec![from.clone()];
        while let Some(module) = next.pop() {
            for to in arrows.get(&module).into_iter().flatten() {
                if seen.insert(to.clone()) {
                    next.push(to.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = arrows.keys().map(|module| (module, reaches(module))).collect();
    let mut circles: BTreeSet<Vec<String>> = BTreeSet::new();
    for (module, its) in &reached {
        let mut circle: Vec<String> =
            its.iter().filter(|other| reached.get(other).is_some_and(|back| back.contains(*module))).cloned().collect();
        if circle.len() > 1 || (circle.len() == 1 && &circle[0] != *module) {
            circle.sort();
            circle.push(circle[0].clone());
            circles.insert(circle);
        }
    }
    circles.into_iter().collect()
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let broken = broken_layers(&src);
    assert!(broken.is_empty(), "the layers of src/ are broken:\n{}", broken.join("\n"));
}

/// The check finds an import of a layer above, a circle inside a layer and a module in no
/// layer, and leaves the rest alone.
#[test]
fn an_import_of_a_layer_above_and_a_circle_are_found() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let src = folder.path().join("src");
    let write = |path: &str, text: &str| {
        let file = src.join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("made");
        std::fs::write(file, text).expect("written");
    };
    write("lib.rs", "pub mod domain;\npub mod infra;\npub mod stray;\n");
    write("domain/mod.rs", "pub mod a;\npub mod b;\n");
    write("domain/a.rs", "use crate::domain::b::B;\nuse crate::infra::db;\npub struct A;\n");
    write("domain/b.rs", "pub struct B(super::a::A);\nmod tests { use super::*; }\n");
    write("infra/mod.rs", "pub mod db;\n");
    write(
        "infra/db.rs",
        "use crate::{domain::a::A, values::Phone};\nfn f() { tracing::info!(\"{}\", crate::http::x()); }\n",
    );
    write("stray.rs", "");
    let broken = broken_layers(&src);
    assert_eq!(broken.len(), 4, "{broken:#?}");
    assert!(broken[0].contains("src/infra/db.rs: `domain::a::A` is in a layer above"), "{broken:#?}");
    assert!(broken[1].contains("src/infra/db.rs: `http::x` is in a layer above"), "{broken:#?}");
    assert!(broken[2].contains("src/stray.rs: `stray` is in no layer"), "{broken:#?}");
    assert_eq!(broken[3], "a circle of modules: domain::a -> domain::b -> domain::a");
}
