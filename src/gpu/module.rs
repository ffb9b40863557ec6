//! The registry of PTX modules: every `ptx/<stem>.cu` the crate launches kernels from.
//!
//! `build.rs` compiles each source to `$OUT_DIR/<stem>.ptx` (or copies the committed PTX);
//! the text is embedded in the library and every module is loaded once, when the
//! [`Context`](super::Context) is made, so a bad PTX fails at start and not mid-solve.
//! Adding a module is one line in the `modules!` list below.

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

            /// The PTX text embedded in the library (compiled by `build.rs`).
            pub fn ptx(self) -> &'static str {
                match self {
                    $(ModuleId::$variant => include_str!(concat!(env!("OUT_DIR"), "/", $stem, ".ptx")),)+
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
}
