//! `keyword_enum!`: an enum of the IR whose words live with it (docs/STYLE: "a type's words
//! live with the type"): `ALL`, `KEYWORDS`, `keyword`, `from_keyword`, and, for the enums the
//! CUDA driver takes, `cuda_value` from cudarc's `driver::sys`.

/// Defines an enum whose words live with it: `ALL`, `KEYWORDS`, `keyword`, `from_keyword`;
/// with `, CudaEnum` after the name and `=> VALUE` after each word, also the driver's value of
/// each variant (`cuda_value`).
macro_rules! keyword_enum {
    (
        $(#[$doc:meta])*
        $name:ident, $cuda:ident {
            $($(#[$vdoc:meta])* $variant:ident = $word:literal => $value:ident,)+
        }
    ) => {
        keyword_enum! {
            $(#[$doc])*
            $name {
                $($(#[$vdoc])* $variant = $word,)+
            }
        }

        impl $name {
            /// The driver's enum value (from cudarc's `driver::sys`).
            pub fn cuda_value(self) -> u32 {
                use cudarc::driver::sys::$cuda as C;
                match self {
                    $($name::$variant => C::$value as u32,)+
                }
            }
        }
    };
    (
        $(#[$doc:meta])*
        $name:ident {
            $($(#[$vdoc:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every variant, in the order of its declaration (the driver's, where it has one).
            pub const ALL: [$name; [$($word),+].len()] = [$($name::$variant,)+];
            /// Their keywords, in [`Self::ALL`] order.
            pub const KEYWORDS: &'static [&'static str] = &[$($word,)+];

            /// The keyword of the text format.
            pub fn keyword(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The variant named by `keyword`.
            pub fn from_keyword(keyword: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|v| v.keyword() == keyword)
            }
        }
    };
}
