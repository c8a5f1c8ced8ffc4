//! Compiles bpf/candor.bpf.c with clang when clang is there. Without clang (or with
//! CANDOR_BPF=off) the crate builds its "disabled" implementation instead, whose
//! `Tracer::load` says why the BPF witness is unavailable; candor still builds.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(candor_bpf_disabled)");
    // candor.bpf.c and the parts it includes (bpf/*.bpf.h, candor_bpf.h).
    println!("cargo:rerun-if-changed=bpf");
    println!("cargo:rerun-if-env-changed=CANDOR_BPF");
    println!("cargo:rerun-if-env-changed=CLANG");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out.join("candor.bpf.o");
    match compile(&object) {
        Ok(()) => {}
        Err(why) => {
            println!("cargo:warning=candor-bpf: BPF witness disabled: {why}");
            println!("cargo:rustc-cfg=candor_bpf_disabled");
            println!("cargo:rustc-env=CANDOR_BPF_DISABLED_WHY={why}");
        }
    }
}

fn compile(object: &PathBuf) -> Result<(), String> {
    if env::var("CANDOR_BPF").map(|v| v == "off").unwrap_or(false) {
        return Err("built with CANDOR_BPF=off".into());
    }
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch != "x86_64" {
        // The programs map x86_64 syscall numbers.
        return Err(format!(
            "the BPF programs are written for x86_64, not {arch}"
        ));
    }
    compile_one("bpf/candor.bpf.c", object)
}

fn compile_one(source: &str, object: &PathBuf) -> Result<(), String> {
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let status = Command::new(&clang)
        .args([
            "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror", "-c",
        ])
        .arg(source)
        .arg("-o")
        .arg(object)
        .status()
        .map_err(|e| {
            format!("clang was not found at build time ({clang}: {e}); install clang and rebuild")
        })?;
    if !status.success() {
        return Err(format!("{clang} failed to compile {source} ({status})"));
    }
    Ok(())
}
