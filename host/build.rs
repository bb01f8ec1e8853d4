//! Links the binaries with packed relative relocations (RELR, glibc 2.36+): a position-independent
//! binary's relocation table shrinks from about a megabyte, read and kept resident at every start,
//! to a few kilobytes.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}
