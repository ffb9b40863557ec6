//! The registry of PTX modules: every `ptx/<stem>.cu` the crate launches kernels from.
//!
//! `build.rs` compiles each source to `$OUT_DIR/<stem>.ptx` (for `compute_70`) and
//! `$OUT_DIR/<stem>.sm80.ptx` (for `compute_80`), or copies the committed PTX; both texts
//! are embedded in the library, and every module is loaded once, when the
//! [`Context`](crate::gpu::runtime::context::Context) is made, from the variant for the device
//! ([`ModuleId::ptx_for`]), so a bad PTX fails at start and not mid-solve. Adding a module
//! is one line in the `modules!` list below.

/// Declares [`ModuleId`] with one variant per PTX module, its file stem and its PTX text.
macro_rules! modules {
    ($($(#[$doc:meta])* $variant:ident => $stem:literal,)+) => {
        /// A PTX module of spgpu: one `ptx/<stem>.cu` source.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ModuleId {
            $($(#[$doc])* $variant,)+
        }

        impl ModuleId {
            /// Every module, in load order (the index of a module in this list is its slot
            /// in the context).
            pub const ALL: &'static [ModuleId] = &[$(ModuleId::$variant),+];

            /// The file stem of the module's source and PTX, for example `"spmv"`.
            pub fn stem(self) -> &'static str {
                match self {
                    $(ModuleId::$variant => $stem,)+
                }
            }

            /// The portable PTX text embedded in the library (compiled by `build.rs` for
            /// `compute_70`: every GPU from Volta on).
            pub fn ptx(self) -> &'static str {
                match self {
                    // a static, so that the text is in the binary once however often this
                    // is inlined (a literal can be copied into each codegen unit)
                    $(ModuleId::$variant => {
                        static PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/", $stem, ".ptx"));
                        PTX
                    })+
                }
            }

            /// The PTX text for GPUs from Ampere on (compiled for `compute_80`: it may use
            /// instructions older GPUs lack; `build.rs` makes it a copy of [`ptx`](Self::ptx)
            /// when its nvcc cannot target `compute_80`).
            pub fn ptx_sm80(self) -> &'static str {
                match self {
                    $(ModuleId::$variant => {
                        static PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/", $stem, ".sm80.ptx"));
                        PTX
                    })+
                }
            }

            /// The PTX text a device of compute capability `(major, minor)` loads:
            /// [`ptx_sm80`](Self::ptx_sm80) from 8.0 on, else [`ptx`](Self::ptx).
            ///
            /// ```
            /// use spgpu::gpu::ModuleId;
            /// assert_eq!(ModuleId::Spmv.ptx_for((9, 0)), ModuleId::Spmv.ptx_sm80());
            /// assert_eq!(ModuleId::Spmv.ptx_for((7, 5)), ModuleId::Spmv.ptx());
            /// ```
            pub fn ptx_for(self, compute_capability: (u32, u32)) -> &'static str {
                if compute_capability.0 >= 8 {
                    self.ptx_sm80()
                } else {
                    self.ptx()
                }
            }

            /// The position of the module in [`ModuleId::ALL`].
            pub(crate) fn index(self) -> usize {
                Self::ALL.iter().position(|&m| m == self).expect("every ModuleId is in ALL")
            }
        }
    };
}

modules! {
    /// SpMV kernels (`ptx/spmv.cu`): CSR scalar and vector, ELL, and the vector fill.
    Spmv => "spmv",
    /// Conjugate-gradient vector kernels (`ptx/cg.cu`): fused updates and deterministic reductions.
    Cg => "cg",
    /// Algebraic-multigrid kernels (`ptx/amg.cu`): the V-cycle's vector updates and the setup.
    Amg => "amg",
}
