//! The type registry: type keys, static and dynamic type indices, type information and the
//! reflection tables (fields, methods, metadata, type attributes).
//!
//! Entries are allocated once and never freed, so the `TVMFFITypeInfo` pointers handed to C
//! stay valid for the life of the process. One mutex guards every update.

use core::ptr::NonNull;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::abi::symbols::error_kind::{INTERNAL_ERROR, RUNTIME_ERROR};
use crate::abi::{
    TVMFFIAny, TVMFFIByteArray, TVMFFIFieldInfo, TVMFFIMethodInfo, TVMFFITypeAttrColumn,
    TVMFFITypeInfo, TVMFFITypeMetadata, field_flags, type_index as ti,
};
use crate::rust_api::{Any, AnyView, Error};

/// One registered type. `info` comes first so a `*const Entry` is a `*const TVMFFITypeInfo`.
#[repr(C)]
struct Entry {
    info: TVMFFITypeInfo,
    /// The type key followed by a NUL.
    key: Box<[u8]>,
    ancestors: Vec<*const TVMFFITypeInfo>,
    fields: Vec<TVMFFIFieldInfo>,
    methods: Vec<TVMFFIMethodInfo>,
    metadata: TVMFFITypeMetadata,
    /// Slots reserved for this type and its children.
    num_slots: i32,
    /// Slots handed out so far (the type itself counts as one).
    allocated_slots: i32,
    child_slots_can_overflow: bool,
}

/// One type-attribute column: `column.data` points into `values`.
struct AttrColumn {
    column: TVMFFITypeAttrColumn,
    values: Vec<Any>,
}

struct TypeTable {
    /// Indexed by type index; entries are leaked boxes.
    entries: Vec<Option<NonNull<Entry>>>,
    by_key: HashMap<Vec<u8>, i32>,
    /// Next index handed out past the static range.
    counter: i32,
    /// Values the reflection tables point into (copied strings are kept as `Box<[u8]>`).
    strings: Vec<Box<[u8]>>,
    values: Vec<Any>,
    columns: Vec<NonNull<AttrColumn>>,
    column_by_name: HashMap<Vec<u8>, usize>,
}

// SAFETY: the raw pointers in the table point into leaked, immutable-address allocations that
// are only mutated under the table's mutex.
unsafe impl Send for TypeTable {}

/// Keys of the POD type indices 0..=13, as the real runtime names them.
const POD_KEYS: [&str; 14] = [
    "None",
    "int",
    "bool",
    "float",
    "void*",
    "DataType",
    "Device",
    "DLTensor*",
    "const char*",
    "TVMFFIByteArray*",
    "ObjectRValueRef",
    "ffi.SmallStr",
    "ffi.SmallBytes",
    "ffi.Unchanged",
];

/// Static object types registered at start-up, in the real runtime's order.
const STATIC_OBJECT_KEYS: [(&str, i32); 14] = [
    ("ffi.String", ti::STR),
    ("ffi.BigInt", ti::BIG_INT),
    ("ffi.Bytes", ti::BYTES),
    ("ffi.Error", ti::ERROR),
    ("ffi.Function", ti::FUNCTION),
    ("ffi.Shape", ti::SHAPE),
    ("ffi.Tensor", ti::TENSOR),
    ("ffi.Array", ti::ARRAY),
    ("ffi.List", ti::LIST),
    ("ffi.Map", ti::MAP),
    ("ffi.Dict", ti::DICT),
    ("ffi.Module", ti::MODULE),
    ("ffi.OpaquePyObject", ti::OPAQUE_PY_OBJECT),
    ("ffi.VisitInterrupt", ti::VISIT_INTERRUPT),
];

/// The key of a type index fixed by the ABI (POD indices and static object types), without
/// consulting the registry: `None` for unassigned and dynamic indices.
pub fn static_type_key(index: i32) -> Option<&'static str> {
    if index == ti::OBJECT {
        return Some("ffi.Object");
    }
    if let Some(key) = usize::try_from(index).ok().and_then(|i| POD_KEYS.get(i)) {
        return Some(key);
    }
    STATIC_OBJECT_KEYS
        .iter()
        .find(|(_, i)| *i == index)
        .map(|(key, _)| *key)
}

/// `std::hash<std::string_view>` of libstdc++ on 64-bit targets (`_Hash_bytes` with its
/// default seed), which the real runtime stores as `type_key_hash`.
pub fn type_key_hash(bytes: &[u8]) -> u64 {
    const MUL: u64 = (0xc6a4a793_u64 << 32) + 0x5bd1e995;
    const SEED: u64 = 0xc70f6907;
    let shift_mix = |v: u64| v ^ (v >> 47);
    let len = bytes.len();
    let mut hash = SEED ^ (len as u64).wrapping_mul(MUL);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let data = shift_mix(word.wrapping_mul(MUL)).wrapping_mul(MUL);
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let data = rest
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) + u64::from(b));
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    hash = shift_mix(hash).wrapping_mul(MUL);
    shift_mix(hash)
}

/// Copies `bytes` with a trailing NUL.
fn nul_terminated(bytes: &[u8]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend_from_slice(bytes);
    v.push(0);
    v.into_boxed_slice()
}

fn internal(message: String) -> Error {
    Error::new(INTERNAL_ERROR, &message)
}

impl TypeTable {
    fn new() -> Self {
        let mut table = TypeTable {
            entries: (0..ti::DYN_OBJECT_BEGIN).map(|_| None).collect(),
            by_key: HashMap::new(),
            counter: ti::DYN_OBJECT_BEGIN,
            strings: Vec::new(),
            values: Vec::new(),
            columns: Vec::new(),
            column_by_name: HashMap::new(),
        };
        let builtin = |t: &mut TypeTable, key: &str, index, depth, parent| {
            t.get_or_alloc(key.as_bytes(), index, depth, 0, false, parent)
                .expect("static types register");
        };
        table
            .get_or_alloc(b"ffi.Object", ti::OBJECT, 0, 0, true, -1)
            .expect("ffi.Object registers");
        let object_metadata = TVMFFITypeMetadata {
            doc: TVMFFIByteArray {
                data: core::ptr::null(),
                size: 0,
            },
            creator: None,
            total_size: crate::abi::OBJECT_HEADER_SIZE as i32,
            structural_eq_hash_kind: 0,
        };
        table
            .register_metadata(ti::OBJECT, &object_metadata)
            .expect("ffi.Object metadata");
        for (index, key) in POD_KEYS.iter().enumerate() {
            builtin(&mut table, key, index as i32, 0, -1);
        }
        for (key, index) in STATIC_OBJECT_KEYS {
            builtin(&mut table, key, index, 1, ti::OBJECT);
        }
        table
    }

    fn entry(&mut self, index: i32) -> Result<&mut Entry, Error> {
        let found = usize::try_from(index)
            .ok()
            .and_then(|i| self.entries.get(i).copied().flatten())
            // SAFETY: entries are leaked boxes, only mutated while the table is held mutably.
            .map(|e| unsafe { &mut *e.as_ptr() });
        found.ok_or_else(|| {
            internal(format!(
                "Check failed: (entry != nullptr) is false: Cannot find type info for type_index={index}"
            ))
        })
    }

    fn get_or_alloc(
        &mut self,
        key: &[u8],
        static_index: i32,
        depth: i32,
        num_child_slots: i32,
        mut can_overflow: bool,
        parent_index: i32,
    ) -> Result<i32, Error> {
        if let Some(&index) = self.by_key.get(key) {
            return Ok(index);
        }
        if parent_index == -2 {
            return Ok(-2);
        }
        let key_text = String::from_utf8_lossy(key).into_owned();
        let parent: Option<NonNull<Entry>> = if parent_index < 0 {
            None
        } else {
            if parent_index as usize >= self.entries.len() {
                return Err(internal(format!(
                    "Check failed: parent_type_index < type_table_.size() ({parent_index} vs. {}) :  type_key={key_text}, static_index={static_index}",
                    self.entries.len()
                )));
            }
            self.entries[parent_index as usize]
        };
        let index = if static_index >= 0 {
            let slot = self.entries.get(static_index as usize).ok_or_else(|| {
                internal(format!("Check failed: static_type_index < type_table_.size() ({static_index} vs. {}) : ", self.entries.len()))
            })?;
            if let Some(existing) = slot {
                // SAFETY: entries are leaked boxes.
                let existing = unsafe { existing.as_ref() };
                return Err(internal(format!(
                    "Check failed: (type_table_[static_type_index] == nullptr) is false: Conflicting static index {static_index} between {} and {key_text}",
                    String::from_utf8_lossy(&existing.key[..existing.key.len() - 1])
                )));
            }
            static_index
        } else {
            let parent_ptr =
                parent.ok_or_else(|| internal("Check not null: parent ".to_owned()))?;
            // SAFETY: entries are leaked boxes owned by the table, which we hold mutably.
            let parent_entry = unsafe { &mut *parent_ptr.as_ptr() };
            let num_slots = num_child_slots + 1;
            if parent_entry.allocated_slots + num_slots <= parent_entry.num_slots {
                let index = parent_entry.info.type_index + parent_entry.allocated_slots;
                parent_entry.allocated_slots += num_slots;
                index
            } else {
                if !parent_entry.child_slots_can_overflow {
                    return Err(internal(format!(
                        "Check failed: (parent->child_slots_can_overflow) is false: Reach maximum number of sub-classes for {}",
                        String::from_utf8_lossy(&parent_entry.key[..parent_entry.key.len() - 1])
                    )));
                }
                let index = self.counter;
                self.counter += num_slots;
                while (self.entries.len() as i32) < self.counter {
                    self.entries.push(None);
                }
                index
            }
        };
        if let Some(p) = parent {
            // SAFETY: see above.
            if !unsafe { p.as_ref() }.child_slots_can_overflow {
                can_overflow = false;
            }
        }
        let key_box = nul_terminated(key);
        let mut ancestors: Vec<*const TVMFFITypeInfo> = Vec::new();
        if depth != 0 {
            let p = parent.ok_or_else(|| internal("Check not null: parent ".to_owned()))?;
            // SAFETY: see above.
            let p = unsafe { p.as_ref() };
            if depth != p.info.type_depth + 1 {
                return Err(internal(format!(
                    "Check failed: type_depth == parent->type_depth + 1 ({depth} vs. {}) : ",
                    p.info.type_depth + 1
                )));
            }
            ancestors.extend_from_slice(&p.ancestors);
            ancestors.push(&p.info);
        }
        let entry = Box::leak(Box::new(Entry {
            info: TVMFFITypeInfo {
                type_index: index,
                type_depth: depth,
                type_key: TVMFFIByteArray {
                    data: key_box.as_ptr().cast(),
                    size: key.len(),
                },
                type_ancestors: core::ptr::null(),
                type_key_hash: type_key_hash(key),
                num_fields: 0,
                num_methods: 0,
                fields: core::ptr::null(),
                methods: core::ptr::null(),
                metadata: core::ptr::null(),
            },
            key: key_box,
            ancestors,
            fields: Vec::new(),
            methods: Vec::new(),
            metadata: TVMFFITypeMetadata {
                doc: TVMFFIByteArray {
                    data: core::ptr::null(),
                    size: 0,
                },
                creator: None,
                total_size: 0,
                structural_eq_hash_kind: 0,
            },
            num_slots: num_child_slots + 1,
            allocated_slots: 1,
            child_slots_can_overflow: can_overflow,
        }));
        entry.info.type_ancestors = entry.ancestors.as_ptr();
        self.entries[index as usize] = Some(NonNull::from(entry));
        self.by_key.insert(key.to_vec(), index);
        Ok(index)
    }

    /// Keeps a copy of `bytes` alive for the table's lifetime; empty strings become NULL.
    fn copy_string(&mut self, array: &TVMFFIByteArray) -> TVMFFIByteArray {
        // SAFETY: the caller passes arrays from C that describe readable memory.
        let bytes = unsafe { crate::error::bytes_of(array) };
        if bytes.is_empty() {
            return TVMFFIByteArray {
                data: core::ptr::null(),
                size: 0,
            };
        }
        let copy = nul_terminated(bytes);
        let out = TVMFFIByteArray {
            data: copy.as_ptr().cast(),
            size: bytes.len(),
        };
        self.strings.push(copy);
        out
    }

    /// Keeps an owned copy of `view` alive and returns its raw value.
    fn copy_any(&mut self, view: &TVMFFIAny) -> Result<TVMFFIAny, Error> {
        // SAFETY: the caller passes a valid any view.
        let owned = Any::from_view(unsafe { AnyView::from_raw_ref(view) })?;
        let raw = *owned.as_raw();
        self.values.push(owned);
        Ok(raw)
    }

    fn register_field(&mut self, index: i32, info: &TVMFFIFieldInfo) -> Result<(), Error> {
        let entry = self.entry(index)? as *mut Entry;
        // SAFETY: entries are leaked boxes; we hold the table mutably.
        let entry = unsafe { &mut *entry };
        // SAFETY: arrays from C describe readable memory.
        let name = unsafe { crate::error::bytes_of(&info.name) };
        let key = &entry.key[..entry.key.len() - 1];
        for existing in &entry.fields {
            // SAFETY: stored names are our own copies.
            if unsafe { crate::error::bytes_of(&existing.name) } == name {
                return Err(internal(format!(
                    "Check failed: (std::string_view(existing.name.data, existing.name.size) != new_name) is false: Duplicate field name \"{}\" in type \"{}\"",
                    String::from_utf8_lossy(name),
                    String::from_utf8_lossy(key)
                )));
            }
        }
        for &ancestor in &entry.ancestors {
            // SAFETY: ancestors are leaked entries.
            let ancestor = unsafe { &*ancestor };
            for i in 0..ancestor.num_fields as usize {
                // SAFETY: `fields` has `num_fields` entries.
                let field = unsafe { &*ancestor.fields.add(i) };
                // SAFETY: stored names are our own copies.
                if unsafe { crate::error::bytes_of(&field.name) } == name {
                    eprintln!(
                        "[WARNING] Field \"{}\" in type \"{}\" duplicates an ancestor field in \"{}\". Child types should not re-register inherited fields.",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(key),
                        // SAFETY: the key is our own copy.
                        String::from_utf8_lossy(unsafe {
                            crate::error::bytes_of(&ancestor.type_key)
                        })
                    );
                }
            }
        }
        let mut field = *info;
        if info.flags & field_flags::SETTER_IS_FUNCTION_OBJ != 0 && !info.setter.is_null() {
            // SAFETY: the flag says the setter is a Function object; we keep a reference.
            unsafe { crate::object::inc_ref(info.setter.cast()) };
            self.values.push(Any::from_raw_owned(TVMFFIAny {
                type_index: ti::FUNCTION,
                small_str_len: 0,
                value: crate::abi::TVMFFIValue { v_ptr: info.setter },
            }));
        }
        field.name = self.copy_string(&info.name);
        field.doc = self.copy_string(&info.doc);
        field.metadata = self.copy_string(&info.metadata);
        field.default_value_or_factory = if info.flags & field_flags::HAS_DEFAULT != 0 {
            self.copy_any(&info.default_value_or_factory)?
        } else {
            TVMFFIAny::NONE
        };
        entry.fields.push(field);
        entry.info.fields = entry.fields.as_ptr();
        entry.info.num_fields = entry.fields.len() as i32;
        Ok(())
    }

    fn register_method(&mut self, index: i32, info: &TVMFFIMethodInfo) -> Result<(), Error> {
        let entry = self.entry(index)? as *mut Entry;
        let mut method = *info;
        method.name = self.copy_string(&info.name);
        method.doc = self.copy_string(&info.doc);
        method.metadata = self.copy_string(&info.metadata);
        method.method = self.copy_any(&info.method)?;
        // SAFETY: entries are leaked boxes; we hold the table mutably.
        let entry = unsafe { &mut *entry };
        entry.methods.push(method);
        entry.info.methods = entry.methods.as_ptr();
        entry.info.num_methods = entry.methods.len() as i32;
        Ok(())
    }

    fn register_metadata(
        &mut self,
        index: i32,
        metadata: &TVMFFITypeMetadata,
    ) -> Result<(), Error> {
        let entry = self.entry(index)? as *mut Entry;
        // SAFETY: entries are leaked boxes; we hold the table mutably.
        let entry = unsafe { &mut *entry };
        if !entry.info.metadata.is_null() {
            let message = format!(
                "Overriding {}, possible causes:\n\
                 - two ObjectDef<T>() calls for the same T \n\
                 - when we forget to assign _type_key to ObjectRef<Y> that inherits from T\n\
                 - another type with the same key is already registered\n\
                 Cross check the reflection registration.",
                String::from_utf8_lossy(&entry.key[..entry.key.len() - 1])
            );
            eprintln!("RuntimeError: {message}");
            return Err(Error::new(RUNTIME_ERROR, &message));
        }
        entry.metadata = *metadata;
        entry.metadata.doc = self.copy_string(&metadata.doc);
        entry.info.metadata = &entry.metadata;
        Ok(())
    }

    fn register_attr(&mut self, index: i32, name: &[u8], value: &TVMFFIAny) -> Result<(), Error> {
        let column_index = match self.column_by_name.get(name) {
            Some(&i) => i,
            None => {
                let column = Box::leak(Box::new(AttrColumn {
                    column: TVMFFITypeAttrColumn {
                        data: core::ptr::null(),
                        size: 0,
                        begin_index: 0,
                    },
                    values: Vec::new(),
                }));
                column.column.data = column.values.as_ptr().cast();
                self.columns.push(NonNull::from(column));
                self.column_by_name
                    .insert(name.to_vec(), self.columns.len() - 1);
                self.columns.len() - 1
            }
        };
        if index == ti::NONE {
            return Ok(());
        }
        let slot_index = usize::try_from(index)
            .map_err(|_| internal(format!("invalid type index {index} for a type attribute")))?;
        // SAFETY: the caller passes a valid any view.
        let owned = Any::from_view(unsafe { AnyView::from_raw_ref(value) })?;
        // SAFETY: columns are leaked boxes, only mutated while the table is held mutably.
        let column = unsafe { &mut *self.columns[column_index].as_ptr() };
        if slot_index >= column.values.len() {
            column.values.resize_with(slot_index + 1, Any::none);
        }
        column.column.data = column.values.as_ptr().cast();
        column.column.size = column.values.len() as i32;
        column.column.begin_index = 0;
        if column.values[slot_index].type_index() != ti::NONE {
            return Err(Error::new(
                RUNTIME_ERROR,
                &format!(
                    "TypeAttr `{}` is already registered for type index {index}. To update the stored value, register a mutable container (e.g., Dict/List) once and mutate it in place on subsequent calls.",
                    String::from_utf8_lossy(name)
                ),
            ));
        }
        column.values[slot_index] = owned;
        Ok(())
    }
}

fn table() -> MutexGuard<'static, TypeTable> {
    static TABLE: OnceLock<Mutex<TypeTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| Mutex::new(TypeTable::new()))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The type index of `key`.
pub fn type_key_to_index(key: &[u8]) -> Result<i32, Error> {
    table().by_key.get(key).copied().ok_or_else(|| {
        internal(format!(
            "Check failed: (it != type_key2index_.end()) is false: Cannot find type `{}`",
            String::from_utf8_lossy(key)
        ))
    })
}

/// `TVMFFITypeGetOrAllocIndex`: the index of `key`, registering it if needed (see the header).
pub fn get_or_alloc_index(
    key: &[u8],
    static_index: i32,
    depth: i32,
    num_child_slots: i32,
    child_slots_can_overflow: bool,
    parent_index: i32,
) -> Result<i32, Error> {
    table().get_or_alloc(
        key,
        static_index,
        depth,
        num_child_slots,
        child_slots_can_overflow,
        parent_index,
    )
}

/// The type info of `index` (valid for the life of the process).
pub fn type_info(index: i32) -> Result<&'static TVMFFITypeInfo, Error> {
    let mut table = table();
    let entry: *const Entry = table.entry(index)?;
    // SAFETY: entries are leaked and never freed.
    Ok(unsafe { &(*entry).info })
}

/// The type key of `index` (for messages), `"<unknown>"` when it is not registered.
pub fn type_key_of(index: i32) -> String {
    match type_info(index) {
        Ok(info) => {
            // SAFETY: the key is our own copy.
            let key = unsafe { crate::error::bytes_of(&info.type_key) };
            String::from_utf8_lossy(key).into_owned()
        }
        Err(_) => format!("<unknown type index {index}>"),
    }
}

/// Records a reflection field of `index`.
pub fn register_field(index: i32, info: &TVMFFIFieldInfo) -> Result<(), Error> {
    table().register_field(index, info)
}

/// Records a reflection method of `index`.
pub fn register_method(index: i32, info: &TVMFFIMethodInfo) -> Result<(), Error> {
    table().register_method(index, info)
}

/// Records the metadata of `index` (once).
pub fn register_metadata(index: i32, metadata: &TVMFFITypeMetadata) -> Result<(), Error> {
    table().register_metadata(index, metadata)
}

/// Records a type attribute (`index` 0 only makes sure the column exists).
pub fn register_attr(index: i32, name: &[u8], value: &TVMFFIAny) -> Result<(), Error> {
    table().register_attr(index, name, value)
}

/// The attribute column `name`, if registered (valid for the life of the process).
pub fn attr_column(name: &[u8]) -> Option<&'static TVMFFITypeAttrColumn> {
    let table = table();
    let index = *table.column_by_name.get(name)?;
    // SAFETY: columns are leaked boxes; this only takes the field's address.
    let column: *const TVMFFITypeAttrColumn =
        unsafe { &raw const (*table.columns[index].as_ptr()).column };
    // SAFETY: columns are leaked and never freed.
    Some(unsafe { &*column })
}
