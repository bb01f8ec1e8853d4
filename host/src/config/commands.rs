//! The options of the subcommands other than `run`, one struct each.

use std::path::PathBuf;

use super::namespace;

/// How registries are reached (`wasmop run`, `push` and `pull`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RegistryArgs {
    /// Registries (HOST[:PORT]) spoken to over plain HTTP rather than HTTPS.
    #[arg(long, env = "WASMOP_REGISTRY_PLAIN_HTTP", value_delimiter = ',')]
    pub registry_plain_http: Vec<String>,
    /// A PEM file of CA certificates trusted for registries, besides the system's.
    #[arg(long, env = "WASMOP_REGISTRY_CA_FILE")]
    pub registry_ca_file: Option<PathBuf>,
}

/// The credentials `wasmop push` and `pull` give the registry: anonymous without `--username`;
/// the password from stdin or `WASMOP_REGISTRY_PASSWORD`, never from an argument.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CredentialArgs {
    /// The registry user.
    #[arg(long, env = "WASMOP_REGISTRY_USERNAME")]
    pub username: Option<String>,
    /// Read the password from stdin (else from WASMOP_REGISTRY_PASSWORD).
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
}

/// Options of `wasmop push`.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The plugin component.
    pub plugin: PathBuf,
    /// Where to push it: REGISTRY/REPOSITORY[:TAG].
    pub reference: String,
    /// Add the component compiled ahead of time for this build's engine, which hosts of the
    /// same build use instead of compiling — only once a key they trust has signed the artifact
    /// (`wasmop sign`).
    #[arg(long)]
    pub precompile: bool,
    /// What compiles the precompiled component: the `--compiler` of the hosts that will use it.
    #[arg(long, value_enum, default_value = "winch", requires = "precompile")]
    pub compiler: Compiler,
    /// How the registry is reached.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Who pushes.
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Options of `wasmop pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// What to pull: REGISTRY/REPOSITORY[:TAG]@sha256:<digest>.
    pub reference: String,
    /// The file to write the component to.
    #[arg(short, long)]
    pub output: PathBuf,
    /// A public key (PEM) the component must be signed by, as `cosign verify --key` checks;
    /// repeat for any of several.
    #[arg(long = "key")]
    pub keys: Vec<PathBuf>,
    /// How the registry is reached.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Who pulls.
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Options of `wasmop sign`.
#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// What to sign: REGISTRY/REPOSITORY[:TAG]@sha256:<digest>, as `wasmop push` printed it.
    pub reference: String,
    /// The ECDSA P-256 private key, PKCS#8 PEM (`openssl genpkey -algorithm EC -pkeyopt
    /// ec_paramgen_curve:P-256`; `cosign import-key-pair` takes the same file).
    #[arg(long)]
    pub key: PathBuf,
    /// How the registry is reached.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Who pushes the signature.
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Which of wasmtime's compilers turns plugins into machine code (`--compiler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Compiler {
    /// The baseline compiler: a large plugin in a tenth of Cranelift's time and memory.
    Winch,
    /// wasmtime's default, optimising compiler: its most-fuzzed backend.
    Cranelift,
}

/// Options of `wasmop compile-worker`, the child process a plugin is compiled in.
#[derive(Debug, clap::Args)]
pub struct CompileWorkerArgs {
    /// The most memory the compile may allocate, in bytes.
    #[arg(long)]
    pub memory_limit: Option<u64>,
    /// What compiles it: the host's `--compiler`.
    #[arg(long, value_enum, default_value = "winch")]
    pub compiler: Compiler,
}

/// Options of `wasmop rbac`.
#[derive(Debug, clap::Args)]
pub struct RbacArgs {
    /// The plugin component.
    pub plugin: PathBuf,
    /// The namespace of the plugin's ServiceAccount (the host's `--plugin-identity-namespace`).
    #[arg(long, default_value = "wasmop-system", value_parser = namespace)]
    pub namespace: String,
    /// The operator's ServiceAccount, allowed to impersonate the plugin's.
    #[arg(long, default_value = "wasmop")]
    pub operator: String,
    /// The operator ServiceAccount's namespace; `--namespace` when absent.
    #[arg(long, value_parser = namespace)]
    pub operator_namespace: Option<String>,
    /// A cluster to look up the kinds' resource names in; guessed from the kind names without one.
    #[arg(long, env = "WASMOP_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The plugin is a tenant's, installed by a `ClusterWasmReconciler` (or by a namespaced
    /// `WasmReconciler`, with `--namespace` its own namespace): its account is
    /// `wasmop-reconciler-<name>`, never an operator plugin's `wasmop-plugin-<name>`.
    #[arg(long)]
    pub wasm_reconciler: bool,
}

/// Options of `wasmop build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The plugin directories ('.' is the working directory); none: every plugin of the
    /// checkout, into its target/components/ (what `make guests` and CI build).
    pub dirs: Vec<PathBuf>,
    /// Only plugins of this language (a folder made by `wasmop new` holding several needs it).
    #[arg(long, value_enum)]
    pub language: Option<crate::build::Language>,
    /// Write the component to FILE (one plugin directory that builds one component); by default
    /// a plugin given by path is written to the working directory.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The guest SDKs (a wasmop checkout's `guest-sdk`), whose toolchains build the plugins; the
    /// checkout this binary was built from by default.
    #[arg(long, env = "WASMOP_GUEST_SDK")]
    pub sdk: Option<PathBuf>,
}

/// Options of `wasmop new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The plugin's language.
    #[arg(value_enum)]
    pub language: crate::scaffold::Language,
    /// The plugin's name (a DNS label); its folder is created under `--dir`.
    pub name: String,
    /// The kind it reconciles: GROUP/VERSION/KIND, or VERSION/KIND for the core group.
    #[arg(long, default_value = "v1/ConfigMap")]
    pub kind: String,
    /// Where to create the plugin's folder.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// The guest SDKs (a wasmop checkout's `guest-sdk`); the checkout this binary was built from
    /// by default.
    #[arg(long, env = "WASMOP_GUEST_SDK")]
    pub sdk: Option<PathBuf>,
}

/// Options of `wasmop generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The plugin folder (made by `wasmop new` with a custom kind) whose `crd.yaml` the types
    /// are generated from.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Write nothing; fail when a types file is not what crd.yaml generates (for CI).
    #[arg(long)]
    pub check: bool,
}

/// Options of `wasmop test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The plugin component.
    pub plugin: PathBuf,
    /// Fixture files, or directories whose `.yaml`, `.yml` and `.json` files are fixtures.
    #[arg(required_unless_present = "replay")]
    pub fixtures: Vec<PathBuf>,
    /// Replay the reconciles `wasmop run --record DIR` recorded of this plugin (by its name).
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Rewrite each failing fixture's expectations to what the plugin did (review the change).
    #[arg(long)]
    pub accept: bool,
    /// How results are printed: lines to read, or one JSON object per fixture and a summary last
    /// (for test runners: each SDK's test helpers read it).
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
}

/// How `wasmop test` prints its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// `ok`/`FAIL` lines with each difference indented under its fixture.
    Text,
    /// JSON Lines: `{"file", "name", "passed", "differences"}` per fixture, then
    /// `{"plugin", "fixtures", "failed"}`.
    Json,
}

/// Options of `wasmop migrate`.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The kubeconfig to use; in-cluster configuration or the default kubeconfig when absent.
    #[arg(long, env = "WASMOP_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

/// Options of `wasmop plugins`.
#[derive(Debug, clap::Args)]
pub struct PluginsArgs {
    /// The running host's health-probe (or metrics) address.
    #[arg(long, env = "WASMOP_ADDRESS", default_value = "127.0.0.1:8081")]
    pub address: String,
    /// Print the statuses as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}
