//! `wasmop new`: scaffolds a plugin folder in the language asked for.

use wasmop::config::NewArgs;
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
