//! The two machines the drivers run for: aarch64 (cross compiler, real aarch64
//! `libtvm_ffi.so`, `qemu-aarch64`) and, as the reference, x86-64 (the host compiler, the real
//! x86-64 `libtvm_ffi.so`, run natively). Both libraries come from the `apache-tvm-ffi`
//! manylinux wheels, fetched once with pip into the target directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The peer runtime version whose libraries the drivers link.
const TVM_FFI: &str = "apache-tvm-ffi==0.1.15.post2";
/// The cross toolchain's sysroot (Debian's `libc6-arm64-cross`), for qemu's loader.
const SYSROOT: &str = "/usr/aarch64-linux-gnu";
/// The directory of the drivers' C sources (`ffi_driver.h`, `examples.c`).
pub const C_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/aarch64");

/// A machine the libraries and the driver are built for.
pub struct Arch {
    /// Short name, for messages and directories.
    pub name: &'static str,
    /// The target triple safecall builds for.
    pub triple: &'static str,
    /// The C compiler (and linker) for the driver and the libraries.
    pub cc: &'static str,
    /// The Debian package of the compiler.
    cc_package: &'static str,
    /// The emulator that runs its programs here, if any.
    pub qemu: Option<&'static str>,
    /// pip `--platform` tags of its wheel, best first.
    pub platforms: &'static [&'static str],
}

/// aarch64 Linux, under `qemu-aarch64`.
pub const AARCH64: Arch = Arch {
    name: "aarch64",
    triple: "aarch64-unknown-linux-gnu",
    cc: "aarch64-linux-gnu-gcc",
    cc_package: "gcc-aarch64-linux-gnu",
    qemu: Some("qemu-aarch64"),
    // 0.1.15.post2 exists for aarch64 only as a manylinux_2_28 wheel.
    platforms: &[
        "manylinux_2_28_aarch64",
        "manylinux_2_27_aarch64",
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
    ],
};

/// x86-64 Linux, run natively (the reference run; only on an x86-64 host).
pub const X86_64: Arch = Arch {
    name: "x86_64",
    triple: "x86_64-unknown-linux-gnu",
    cc: "cc",
    cc_package: "gcc",
    qemu: None,
    platforms: &[
        "manylinux_2_28_x86_64",
        "manylinux_2_24_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    ],
};

use crate::common::skip;

/// Skips (records why and returns false) outside CI; fails under CI.
pub fn require(ok: bool, why: &str) -> bool {
    if !ok {
        skip::skip(&format!("aarch64: {why}"));
    }
    ok
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

pub use crate::common::command::run;

/// The working directory of a test, under the target directory.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A machine whose tools are here and whose library could be fetched: its `libtvm_ffi.so`
/// include and library directories.
pub struct Ready {
    pub arch: &'static Arch,
    include: PathBuf,
    lib: PathBuf,
}

impl Arch {
    /// Checks the compiler and the emulator and fetches the library (skipping with a printed
    /// reason outside CI when something is missing).
    pub fn ready(&'static self) -> Option<Ready> {
        if !require(
            runs(self.cc, "--version"),
            &format!(
                "`{}` is not installed (Debian: {})",
                self.cc, self.cc_package
            ),
        ) {
            return None;
        }
        if let Some(qemu) = self.qemu
            && !require(
                runs(qemu, "-version"),
                &format!("`{qemu}` is not installed (Debian: qemu-user)"),
            )
        {
            return None;
        }
        let (include, lib) = self.tvm_ffi()?;
        Some(Ready {
            arch: self,
            include,
            lib,
        })
    }

    /// The `libtvm_ffi.so` and headers of this machine's wheel, fetched once and kept in the
    /// target directory: (include dir, lib dir).
    fn tvm_ffi(&self) -> Option<(PathBuf, PathBuf)> {
        // The tests of this binary run on parallel threads: one fetch at a time, so that none
        // reads a half-extracted wheel.
        static FETCH: Mutex<()> = Mutex::new(());
        let _one_at_a_time = FETCH.lock().unwrap_or_else(PoisonError::into_inner);
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-tvm-ffi", self.name));
        let (include, lib) = (root.join("tvm_ffi/include"), root.join("tvm_ffi/lib"));
        if lib.join("libtvm_ffi.so").exists() && include.join("tvm/ffi/c_api.h").exists() {
            return Some((include, lib));
        }
        let python = std::env::var("SAFECALL_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        if !require(
            Command::new(&python)
                .args(["-m", "pip", "--version"])
                .output()
                .is_ok_and(|o| o.status.success()),
            &format!(
                "`{python} -m pip` is not available to fetch the {} {TVM_FFI} wheel",
                self.name
            ),
        ) {
            return None;
        }
        let wheels = root.join("wheel");
        let mut download = Command::new(&python);
        download
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .args(["--python-version", "3.12", "-d"])
            .arg(&wheels);
        for platform in self.platforms {
            download.args(["--platform", platform]);
        }
        run(download.arg(TVM_FFI));
        // A wheel is a zip file: extract the library and the headers with Python's zipfile.
        run(Command::new(&python).args([
            "-c",
            "import sys, zipfile, glob\n\
             wheel = glob.glob(sys.argv[1] + '/apache_tvm_ffi-*.whl')[0]\n\
             z = zipfile.ZipFile(wheel)\n\
             z.extractall(sys.argv[2], [n for n in z.namelist()\n\
                 if n.startswith('tvm_ffi/include/') or n == 'tvm_ffi/lib/libtvm_ffi.so'])\n",
            &wheels.to_string_lossy(),
            &root.to_string_lossy(),
        ]));
        assert!(
            lib.join("libtvm_ffi.so").exists(),
            "the {} wheel has no libtvm_ffi.so",
            self.name
        );
        Some((include, lib))
    }

    /// Options building for this machine with `backend`.
    pub fn options(&self, backend: safecall::Backend) -> safecall::Options {
        let target = safecall::target::Target::parse(self.triple).expect("a supported target");
        let mut options = safecall::Options::for_target(target);
        options.backend = backend;
        options
    }
}

impl Ready {
    /// Compiles the C driver `source` (which includes `ffi_driver.h`) into `out`, linked to
    /// this machine's `libtvm_ffi.so`; `-rdynamic` lets the libraries it loads resolve
    /// functions it defines.
    pub fn compile_driver(&self, source: &Path, out: &Path) {
        run(Command::new(self.arch.cc)
            .arg(source)
            .args(["-O0", "-Wall", "-rdynamic", "-I", C_DIR, "-I"])
            .arg(&self.include)
            .arg(format!("-L{}", self.lib.display()))
            .arg(format!("-Wl,-rpath,{}", self.lib.display()))
            .args(["-ltvm_ffi", "-ldl", "-o"])
            .arg(out));
    }

    /// Runs a driver (under the emulator when there is one) with extra environment
    /// variables; returns its stdout.
    pub fn run_driver(&self, driver: &Path, args: &[&Path], env: &[(&str, &str)]) -> String {
        let mut cmd = match self.arch.qemu {
            Some(qemu) => {
                let mut cmd = Command::new(qemu);
                cmd.args(["-L", SYSROOT]).arg(driver);
                cmd
            }
            None => Command::new(driver),
        };
        run(cmd.args(args).envs(env.iter().copied()))
    }
}

/// The machines to run: aarch64, and x86-64 as the reference when this host is one.
pub fn machines() -> Option<Vec<Ready>> {
    let aarch64 = AARCH64.ready()?;
    let mut all = vec![aarch64];
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        all.push(X86_64.ready()?);
    }
    Some(all)
}
