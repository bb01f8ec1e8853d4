//! `wasmop new`: scaffolds a plugin folder in the language asked for; `wasmop generate` writes a
//! custom kind's types again from the folder's crd.yaml.

use wasmop::config::{GenerateArgs, NewArgs};
use wasmop::scaffold::{self, PrimaryKind};

/// Makes the plugin folder `args` asks for and prints what to do next.
pub(crate) fn new_plugin(args: NewArgs) -> anyhow::Result<()> {
    let sdk = super::guest_sdk(args.sdk)?;
    let kind = PrimaryKind::parse(&args.kind)?;
    let exe = std::env::current_exe()?;
    let wasmop = scaffold::wasmop_command(&exe, std::env::var_os("PATH").as_deref());
    let created = scaffold::create(args.language, &args.name, &kind, &args.dir, &sdk, &wasmop)?;
    for file in &created.files {
        println!("created {}", file.display());
    }
    let folder = created.folder.display();
    let component = created.component.display();
    println!(
        "\nnext:\n  cd {folder}\n  {}\n  {wasmop} test {component} fixtures/",
        created.build
    );
    println!("  {wasmop} run --plugin {component}");
    if wasmop != "wasmop" {
        let host = scaffold::host_crate(&sdk);
        println!(
            "\n(the `wasmop` on your PATH, if any, is not this one: `cargo install --path {}` installs it)",
            host.display()
        );
    }
    Ok(())
}

/// Writes the types of the plugin folder `args` names from its crd.yaml again, printing each
/// file and whether it changed; with `--check`, fails when one would change.
pub(crate) fn generate_types(args: GenerateArgs) -> anyhow::Result<()> {
    let generated = scaffold::generate(&args.dir, args.check)?;
    let stale: Vec<String> = generated
        .iter()
        .filter(|g| g.changed)
        .map(|g| g.path.display().to_string())
        .collect();
    if args.check {
        anyhow::ensure!(
            stale.is_empty(),
            "not what crd.yaml generates (run `wasmop generate`): {}",
            stale.join(", ")
        );
        println!("{} types files match crd.yaml", generated.len());
        return Ok(());
    }
    for file in &generated {
        let done = if file.changed {
            "generated"
        } else {
            "unchanged"
        };
        println!("{done} {}", file.path.display());
    }
    Ok(())
}
