//! Records the git commit the binary was built from, for the provenance header of every
//! artifact (`normoracle reproduce`). Outside a git checkout it is "unknown".
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    println!(
        "cargo:rustc-env=NORMORACLE_GIT_COMMIT={commit}{}",
        if dirty { "-dirty" } else { "" }
    );
    // Where git keeps HEAD, the index and the branch's ref: in a linked worktree `.git` is a
    // file and they live elsewhere (a missing `.git/HEAD` would rerun this script, and rebuild
    // the crate, on every build).
    let git_path = |name: &str| {
        std::process::Command::new("git")
            .args(["rev-parse", "--git-path", name])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let branch = std::process::Command::new("git")
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let watched = ["HEAD", "index"]
        .into_iter()
        .map(String::from)
        .chain(branch)
        .filter_map(|name| git_path(&name))
        .filter(|path| std::path::Path::new(path).exists());
    for path in watched {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
