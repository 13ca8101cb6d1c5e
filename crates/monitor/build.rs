//! With the `kernel` feature: compiles the kernel module's BPF program
//! (`src/kernel/bpf/webscope.bpf.c`) with clang and generates its Rust skeleton
//! (libbpf-cargo), into OUT_DIR. Needs clang (Debian: `clang`); libbpf's own headers come with
//! the libbpf-sys crate. The program is CO-RE: it is built once, against the few kernel types
//! it declares itself (`kernel.h`), and relocated to the running kernel's BTF when it loads, so
//! the build machine's kernel does not matter. Without the feature it does nothing: a default
//! build needs no clang, libelf or zlib.

#[cfg(feature = "kernel")]
fn main() {
    const SOURCE: &str = "src/kernel/bpf/webscope.bpf.c";
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let skeleton = out.join("webscope.skel.rs");
    let result = libbpf_cargo::SkeletonBuilder::new()
        .source(SOURCE)
        .clang_args(["-Wall", "-Werror", "-Isrc/kernel/bpf"])
        .build_and_generate(&skeleton);
    if let Err(err) = result {
        panic!(
            "cannot build the monitor's BPF program {SOURCE}: {err:#}\n\
             it needs clang (apt-get install clang libelf-dev zlib1g-dev pkg-config)"
        );
    }
    println!("cargo:rerun-if-changed=src/kernel/bpf");
}

#[cfg(not(feature = "kernel"))]
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
