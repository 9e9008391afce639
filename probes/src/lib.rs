//! What this host can enforce: user namespaces, Landlock ABI, seccomp,
//! bubblewrap, /proc, WSL1, containers. Results are cached per process.
