//! The command line's refusals, before anything is built: each names its problem and writes
//! nothing.

use super::*;

/// A checkout holding a Rust crate, a Python plugin, a TypeScript plugin, a Go plugin and a Go
/// test guest, and a `wasmop new` folder holding two languages.
fn checkout() -> (tempfile::TempDir, Checkout) {
    let root = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("plugins/webapp/python/webapp/__init__.py", "");
    write("plugins/webapp/js/src/index.ts", "");
    write("plugins/webapp/go/go.mod", "module webapp\n");
    write("plugins/Cargo.toml", "[workspace]\n");
    write("tests/guests/Cargo.toml", "[workspace]\n");
    write("tests/guests/reach/go/go.mod", "module reach\n");
    write("mine/rust/Cargo.toml", "[package]\nname = \"mine\"\n");
    write("mine/go/go.mod", "module mine\n");
    write("mine/fixtures/a.yaml", "");
    write("bad name/go/go.mod", "module x\n");
    let checkout = Checkout {
        root: root.path().to_owned(),
    };
    (root, checkout)
}

fn request(dirs: &[&Path], language: Option<Language>) -> Request {
    Request {
        dirs: dirs.iter().map(|dir| dir.to_path_buf()).collect(),
        language,
        output: None,
    }
}

fn languages(plan: &[(Language, Vec<Plugin>)]) -> Vec<(Language, Vec<&str>)> {
    plan.iter()
        .map(|(language, plugins)| {
            let names = plugins.iter().map(|p| p.name.as_str()).collect();
            (*language, names)
        })
        .collect()
}

#[test]
fn the_checkout_builds_every_language_or_the_one_asked_for() {
    let (_root, checkout) = checkout();
    let all = plan(&checkout, &request(&[], None)).unwrap();
    assert_eq!(
        languages(&all),
        [
            (Language::Rust, vec!["plugins", "guests"]),
            (Language::Python, vec!["webapp"]),
            (Language::Js, vec!["webapp"]),
            (Language::Go, vec!["webapp", "reach"]),
        ]
    );
    let go = plan(&checkout, &request(&[], Some(Language::Go))).unwrap();
    assert_eq!(languages(&go), [(Language::Go, vec!["webapp", "reach"])]);
}

#[test]
fn a_language_folder_is_named_after_its_plugin_and_a_new_folder_stands_for_it() {
    let (root, checkout) = checkout();
    let python = root.path().join("plugins/webapp/python");
    let planned = plan(&checkout, &request(&[&python], None)).unwrap();
    assert_eq!(languages(&planned), [(Language::Python, vec!["webapp"])]);
    let mine = root.path().join("mine");
    let refused = plan(&checkout, &request(&[&mine], None)).unwrap_err();
    assert!(matches!(refused, BuildError::Several(_)), "{refused}");
    let go = plan(&checkout, &request(&[&mine], Some(Language::Go))).unwrap();
    assert_eq!(go[0].1[0].dir, mine.join("go"));
    assert_eq!(languages(&go), [(Language::Go, vec!["mine"])]);
}

#[test]
fn missing_and_empty_directories_are_refused_by_path() {
    let (root, checkout) = checkout();
    let missing = root.path().join("nowhere");
    let refused = plan(&checkout, &request(&[&missing], None)).unwrap_err();
    assert!(
        matches!(&refused, BuildError::NoDir(dir) if *dir == missing),
        "{refused}"
    );
    let fixtures = root.path().join("mine/fixtures");
    let refused = plan(&checkout, &request(&[&fixtures], None)).unwrap_err();
    assert!(matches!(&refused, BuildError::NoPlugin { dir, .. } if *dir == fixtures));
    let bad = root.path().join("bad name/go");
    let refused = plan(&checkout, &request(&[&bad], None)).unwrap_err();
    assert!(matches!(refused, BuildError::Unnamed(_)), "{refused}");
    let python = root.path().join("plugins/webapp/python");
    let refused = plan(&checkout, &request(&[&python], Some(Language::Go))).unwrap_err();
    assert!(
        refused.to_string().contains("holds no plugin in go"),
        "{refused}"
    );
}

#[test]
fn output_names_one_component_and_no_directory() {
    let (root, checkout) = checkout();
    let one = plan(&checkout, &request(&[&root.path().join("mine/go")], None)).unwrap();
    let file = root.path().join("out.wasm");
    check_output(&file, &one).unwrap();
    let refused = check_output(root.path(), &one).unwrap_err();
    assert!(matches!(refused, BuildError::OutputIsDir(_)), "{refused}");
    let all = plan(&checkout, &request(&[], None)).unwrap();
    let refused = check_output(&file, &all).unwrap_err();
    assert!(matches!(refused, BuildError::OutputNeedsOne), "{refused}");
    let mut asked = request(&[], None);
    asked.output = Some(file.clone());
    assert!(matches!(
        build(&checkout, &asked),
        Err(BuildError::OutputNeedsOne)
    ));
    assert!(!file.exists(), "a refusal writes nothing");
}

#[test]
fn only_a_valid_component_without_wasi_http_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let built = Built {
        file: dir.path().join("core.wasm"),
        name: "x.wasm".into(),
        took: std::time::Duration::ZERO,
    };
    std::fs::write(&built.file, b"\0asm\x01\0\0\0").unwrap();
    let destination = dir.path().join("out/x.wasm");
    let refused = component::install(Language::Go, &built, &destination).unwrap_err();
    assert!(
        refused.to_string().contains("not a WebAssembly component"),
        "{refused}"
    );
    assert!(!destination.exists());
    let webapp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/components/webapp.wasm");
    std::fs::copy(webapp, &built.file).expect("the guests are built (make guests)");
    component::install(Language::Rust, &built, &destination).unwrap();
    assert!(destination.is_file());
}
