//! Resolving the object's relocations: which symbols need a GOT entry, a stub or a dynamic
//! symbol (before layout), then the relocated bytes and the dynamic relocations (after).

use cranelift_object::object::elf;
use cranelift_object::object::write::elf::Rel;

use super::input::{Input, Place};
use super::out::Out;
use super::relocs::{self, Field, Value};

/// What the object's relocations ask of the library, known before addresses are.
#[derive(Debug, Default)]
pub(super) struct Tables {
    /// Symbols with a GOT entry, in GOT order.
    pub(super) got: Vec<usize>,
    /// Imported functions called directly: each gets a stub, in stub order.
    pub(super) stubs: Vec<usize>,
    /// Symbols in `.dynsym` after the null symbol: imports the library uses, then exports
    /// in the order of their `.gnu.hash` buckets.
    pub(super) dynsyms: Vec<usize>,
    /// How many of `dynsyms` are imports.
    pub(super) imports: usize,
    /// How many dynamic relocations the library has.
    pub(super) dynamic_relocs: usize,
}

impl Tables {
    /// The `.dynsym` index of an object symbol.
    fn dynsym(&self, symbol: usize) -> u32 {
        let i = self.dynsyms.iter().position(|&s| s == symbol);
        i.map_or(0, |i| i as u32 + 1)
    }
}

/// Where the output sections, the stubs and the GOT live in the loaded library.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Addresses {
    /// Per output section, indexed like [`Out::ALL`].
    pub(super) out: [u64; 6],
    /// The first import stub.
    pub(super) stubs: u64,
    /// The GOT.
    pub(super) got: u64,
}

/// Plans the GOT, the stubs and the dynamic symbols; refuses references the library cannot
/// hold without text relocations or copy relocations.
pub(super) fn tables(input: &Input) -> Result<Tables, String> {
    let mut t = Tables::default();
    let mut imports = Vec::new();
    let push = |list: &mut Vec<usize>, s: usize| {
        if !list.contains(&s) {
            list.push(s);
        }
    };
    for r in &input.relocs {
        let symbol = &input.symbols[r.symbol];
        let named = || {
            if symbol.name.is_empty() {
                "a section symbol".to_owned()
            } else {
                format!("`{}`", symbol.name)
            }
        };
        if let Place::Unplaced(why) = symbol.place {
            return Err(format!(
                "{}: a relocation against {} ({why}) cannot be linked",
                r.what,
                named()
            ));
        }
        let import = symbol.place == Place::Import;
        match r.kind.value {
            Value::GotPcRelative | Value::GotLow12 | Value::GotPage => push(&mut t.got, r.symbol),
            Value::Call if import => {
                push(&mut t.stubs, r.symbol);
                push(&mut t.got, r.symbol);
            }
            Value::Absolute => {
                if !r.out.writable() || r.kind.field != Field::Word64 {
                    return Err(format!(
                        "{}: an absolute address of {} in read-only {} would need a text \
                         relocation",
                        r.what,
                        named(),
                        section_name(r.out)
                    ));
                }
                t.dynamic_relocs += 1;
                if import {
                    push(&mut imports, r.symbol);
                }
            }
            Value::Call | Value::PcRelative | Value::Low12 | Value::Page if import => {
                return Err(format!(
                    "{}: a pc-relative reference to the undefined symbol {} (only calls and \
                     loads through the GOT may reach symbols resolved at load time)",
                    r.what,
                    named()
                ));
            }
            Value::Call | Value::PcRelative | Value::Low12 | Value::Page => {}
        }
    }
    for &s in &t.got {
        if input.symbols[s].place == Place::Import {
            push(&mut imports, s);
        }
    }
    t.dynamic_relocs += t.got.len();
    t.imports = imports.len();
    t.dynsyms = imports;
    let mut exports: Vec<usize> = (0..input.symbols.len())
        .filter(|&i| input.symbols[i].exported)
        .collect();
    let buckets = gnu_hash_buckets(exports.len());
    exports.sort_by_key(|&i| elf::gnu_hash(input.symbols[i].name.as_bytes()) % buckets);
    t.dynsyms.extend(exports);
    Ok(t)
}

/// The number of `.gnu.hash` buckets for `exports` hashed symbols.
pub(super) fn gnu_hash_buckets(exports: usize) -> u32 {
    (exports as u32).max(1)
}

/// The name of an output section.
pub(super) fn section_name(out: Out) -> &'static str {
    match out {
        Out::Rodata => ".rodata",
        Out::EhFrame => ".eh_frame",
        Out::Text => ".text",
        Out::InitArray => ".init_array",
        Out::Data => ".data",
        Out::Bss => ".bss",
    }
}

/// The relocated library contents.
pub(super) struct Resolved {
    /// Output sections' bytes, indexed like [`Out::ALL`].
    pub(super) contents: [Vec<u8>; 6],
    /// The stubs' code.
    pub(super) stubs: Vec<u8>,
    /// The GOT's initial contents.
    pub(super) got: Vec<u8>,
    /// The dynamic relocations, `RELATIVE` ones first.
    pub(super) dynamic: Vec<Rel>,
}

/// The address of a symbol defined in the library.
fn local(input: &Input, at: &Addresses, symbol: usize) -> Option<u64> {
    match input.symbols[symbol].place {
        Place::Local(out, offset) => Some(at.out[out as usize] + offset),
        Place::Import | Place::Unplaced(_) => None,
    }
}

/// Applies the relocations with the library's addresses.
pub(super) fn apply(mut input: Input, t: &Tables, at: &Addresses) -> Result<Resolved, String> {
    let (absolute, glob_dat, relative) = relocs::dynamic_types(input.arch);
    let mut contents: [Vec<u8>; 6] = Default::default();
    for (i, c) in input.contents.iter_mut().enumerate() {
        contents[i] = std::mem::take(&mut c.bytes);
    }
    let mut dynamic = Vec::new();
    let mut symbolic = Vec::new();
    let got_entry = |s: usize| {
        let i = t
            .got
            .iter()
            .position(|&g| g == s)
            .expect("planned GOT entry");
        at.got + 8 * i as u64
    };
    for r in &input.relocs {
        let place = at.out[r.out as usize] + r.offset;
        let target = match r.kind.value {
            Value::GotPcRelative | Value::GotLow12 | Value::GotPage => got_entry(r.symbol),
            Value::Call => match t.stubs.iter().position(|&s| s == r.symbol) {
                Some(i) => at.stubs + relocs::STUB_SIZE * i as u64,
                None => local(&input, at, r.symbol).expect("checked in tables"),
            },
            Value::Absolute => match local(&input, at, r.symbol) {
                Some(address) => {
                    dynamic.push(Rel {
                        r_offset: place,
                        r_sym: 0,
                        r_type: relative,
                        r_addend: address.wrapping_add_signed(r.addend) as i64,
                    });
                    address
                }
                None => {
                    symbolic.push(Rel {
                        r_offset: place,
                        r_sym: t.dynsym(r.symbol),
                        r_type: absolute,
                        r_addend: r.addend,
                    });
                    continue;
                }
            },
            Value::PcRelative | Value::Low12 | Value::Page => {
                local(&input, at, r.symbol).expect("checked in tables")
            }
        };
        let value = relocs::compute(r.kind.value, target, r.addend, place);
        let bytes = &mut contents[r.out as usize][r.offset as usize..];
        relocs::patch(r.kind.field, value, bytes).map_err(|e| {
            let name = &input.symbols[r.symbol].name;
            format!("{}: relocation against `{name}`: {e}", r.what)
        })?;
    }
    let mut got = Vec::with_capacity(8 * t.got.len());
    for (i, &s) in t.got.iter().enumerate() {
        let r_offset = at.got + 8 * i as u64;
        match local(&input, at, s) {
            Some(address) => {
                got.extend_from_slice(&address.to_le_bytes());
                dynamic.push(Rel {
                    r_offset,
                    r_sym: 0,
                    r_type: relative,
                    r_addend: address as i64,
                });
            }
            None => {
                got.extend_from_slice(&0u64.to_le_bytes());
                symbolic.push(Rel {
                    r_offset,
                    r_sym: t.dynsym(s),
                    r_type: glob_dat,
                    r_addend: 0,
                });
            }
        }
    }
    let mut stubs = Vec::with_capacity(relocs::STUB_SIZE as usize * t.stubs.len());
    for (i, &s) in t.stubs.iter().enumerate() {
        let stub = at.stubs + relocs::STUB_SIZE * i as u64;
        stubs.extend_from_slice(&relocs::stub(input.arch, stub, got_entry(s))?);
    }
    dynamic.extend(symbolic);
    debug_assert_eq!(dynamic.len(), t.dynamic_relocs);
    Ok(Resolved {
        contents,
        stubs,
        got,
        dynamic,
    })
}
