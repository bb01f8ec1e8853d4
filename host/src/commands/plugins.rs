//! `wasmop plugins`: the plugin sources of a running operator and their statuses, as a table.

use anyhow::Context;

use wasmop::config::PluginsArgs;

/// Prints the plugins of the host at `args.address`.
pub(crate) async fn list_plugins(args: PluginsArgs) -> anyhow::Result<()> {
    let (status, body) = wasmop::http::fetch(&args.address, "/plugins").await?;
    anyhow::ensure!(
        status.is_success(),
        "wasmop at {} answered {status}: {body}",
        args.address
    );
    if args.json {
        println!("{body}");
        return Ok(());
    }
    let statuses: Vec<wasmop::plugins::PluginStatus> =
        serde_json::from_str(&body).context("reading the plugin statuses")?;
    print!("{}", wasmop::plugins::table(&statuses));
    Ok(())
}
