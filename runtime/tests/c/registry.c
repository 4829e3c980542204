/* The type registry: static keys, dynamic indices, type info and reflection registration. */
#include "common.h"

static const char* kKeys[] = {
    "None", "int", "bool", "float", "void*", "DataType", "Device", "DLTensor*", "const char*",
    "TVMFFIByteArray*", "ObjectRValueRef", "ffi.SmallStr", "ffi.SmallBytes", "ffi.Unchanged",
    "ffi.Object", "ffi.String", "ffi.Bytes", "ffi.Error", "ffi.Function", "ffi.Shape", "ffi.Tensor",
    "ffi.Array", "ffi.Map", "ffi.Module", "ffi.OpaquePyObject", "ffi.List", "ffi.Dict",
    "ffi.BigInt", "ffi.VisitInterrupt",
};

/* Prints type info; `origin` is subtracted from indices so dynamic ones print the same
 * in both runtimes (the real one registers other dynamic types at startup). */
static void print_info_rel(int32_t index, int32_t origin) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(index);
  printf("info[%d]: index=%d depth=%d key=", index - origin, info->type_index - origin,
         info->type_depth);
  print_bytes(info->type_key.data, info->type_key.size);
  printf(" key_nul=%d hash=%llu ancestors=[", info->type_key.data[info->type_key.size] == 0,
         (unsigned long long)info->type_key_hash);
  for (int i = 0; i < info->type_depth; ++i) {
    printf("%s%d", i ? "," : "", info->type_ancestors[i]->type_index);
  }
  printf("]");
  /* ffi.Module, ffi.BigInt and ffi.VisitInterrupt carry reflection data of C++ classes. */
  if (index == kTVMFFIModule || index == kTVMFFIBigInt || index == kTVMFFIVisitInterrupt) {
    printf(" same_ptr=%d\n", info == TVMFFIGetTypeInfo(index));
    return;
  }
  printf(" fields=%d methods=%d metadata=%d", info->num_fields, info->num_methods,
         info->metadata != NULL);
  if (info->metadata != NULL) {
    printf(" total_size=%d seq_hash_kind=%d creator=%d doc=", info->metadata->total_size,
           info->metadata->structural_eq_hash_kind, info->metadata->creator != NULL);
    print_bytes(info->metadata->doc.data ? info->metadata->doc.data : "", info->metadata->doc.size);
  }
  printf(" same_ptr=%d\n", info == TVMFFIGetTypeInfo(index));
}

static void print_info(int32_t index) { print_info_rel(index, 0); }

static int getter(void* field, TVMFFIAny* result) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = *(int64_t*)field;
  return 0;
}

static int creator(TVMFFIObjectHandle* result) {
  *result = NULL;
  return 0;
}

int main(void) {
  for (size_t i = 0; i < sizeof(kKeys) / sizeof(kKeys[0]); ++i) {
    TVMFFIByteArray key = ba(kKeys[i]);
    int32_t index = -100;
    int ret = TVMFFITypeKeyToIndex(&key, &index);
    printf("key %s -> %d index=%d\n", kKeys[i], ret, index);
    if (ret != 0) print_raised("key");
    else print_info(index);
  }
  TVMFFIByteArray missing = ba("safecall.NoSuchType");
  int32_t index = -100;
  report("missing key", TVMFFITypeKeyToIndex(&missing, &index));
  printf("index untouched=%d\n", index == -100);
  printf("query missing -> %d\n", TVMFFITypeGetOrAllocIndex(&missing, -1, 1, 0, 1, -2));
  TVMFFIByteArray string_key = ba("ffi.String");
  printf("query ffi.String -> %d\n", TVMFFITypeGetOrAllocIndex(&string_key, -1, 1, 0, 1, -2));
  printf("alloc existing ffi.String -> %d\n", TVMFFITypeGetOrAllocIndex(&string_key, -1, 1, 0, 1, 64));

  /* Dynamic types: a base with 3 reserved child slots and children. */
  TVMFFIByteArray base_key = ba("safecall.test.Base");
  int32_t base = TVMFFITypeGetOrAllocIndex(&base_key, -1, 1, 3, 1, kTVMFFIObject);
  printf("base dynamic=%d again same=%d query same=%d\n", base >= kTVMFFIDynObjectBegin,
         TVMFFITypeGetOrAllocIndex(&base_key, -1, 1, 3, 1, kTVMFFIObject) == base,
         TVMFFITypeGetOrAllocIndex(&base_key, -1, 1, 3, 1, -2) == base);
  const char* child_keys[] = {"safecall.test.A", "safecall.test.B", "safecall.test.C",
                              "safecall.test.D", "safecall.test.E"};
  int32_t child_slots[] = {0, 1, 0, 0, 0};
  int32_t children[5];
  for (int i = 0; i < 5; ++i) {
    TVMFFIByteArray key = ba(child_keys[i]);
    children[i] = TVMFFITypeGetOrAllocIndex(&key, -1, 2, child_slots[i], 1, base);
    printf("child %s: offset from base=%d\n", child_keys[i],
           children[i] - base <= 4 ? children[i] - base : -1);
  }
  printf("children beyond the reserved slots are after the base: %d %d\n", children[3] > base + 3,
         children[4] > children[3]);
  TVMFFIByteArray grandchild_key = ba("safecall.test.B.X");
  int32_t grandchild = TVMFFITypeGetOrAllocIndex(&grandchild_key, -1, 3, 0, 1, children[1]);
  printf("grandchild in B's reserved slot=%d\n", grandchild == children[1] + 1);
  int32_t looked_up = -1;
  report("key to index of dynamic", TVMFFITypeKeyToIndex(&grandchild_key, &looked_up));
  printf("matches=%d\n", looked_up == grandchild);
  const TVMFFITypeInfo* gi = TVMFFIGetTypeInfo(grandchild);
  printf("grandchild depth=%d ancestors are Object,Base,B=%d key=", gi->type_depth,
         gi->type_ancestors[0]->type_index == kTVMFFIObject &&
             gi->type_ancestors[1]->type_index == base &&
             gi->type_ancestors[2]->type_index == children[1]);
  print_bytes(gi->type_key.data, gi->type_key.size);
  printf(" hash=%llu fields=%d methods=%d metadata=%d\n", (unsigned long long)gi->type_key_hash,
         gi->num_fields, gi->num_methods, gi->metadata != NULL);
  TVMFFIByteArray sealed_key = ba("safecall.test.Sealed");
  int32_t sealed = TVMFFITypeGetOrAllocIndex(&sealed_key, -1, 1, 2, 0, kTVMFFIObject);
  TVMFFIByteArray s1 = ba("safecall.test.Sealed.One");
  TVMFFIByteArray s2 = ba("safecall.test.Sealed.Two");
  int32_t one = TVMFFITypeGetOrAllocIndex(&s1, -1, 2, 0, 0, sealed);
  int32_t two = TVMFFITypeGetOrAllocIndex(&s2, -1, 2, 0, 0, sealed);
  printf("sealed children at +1,+2: %d %d\n", one - sealed, two - sealed);

  /* Reflection: fields, methods, metadata, attributes are stored (copied) and served back. */
  char name_buf[32];
  strcpy(name_buf, "count");
  TVMFFIFieldInfo field;
  memset(&field, 0, sizeof(field));
  field.name = ba(name_buf);
  field.doc = ba("how many");
  field.metadata = ba("{}");
  field.flags = kTVMFFIFieldFlagBitMaskWritable | kTVMFFIFieldFlagBitMaskHasDefault;
  field.size = 8;
  field.alignment = 8;
  field.offset = 24;
  field.getter = getter;
  field.setter = NULL;
  field.default_value_or_factory.type_index = kTVMFFIInt;
  field.default_value_or_factory.v_int64 = 7;
  field.field_static_type_index = kTVMFFIInt;
  report("register field", TVMFFITypeRegisterField(base, &field));
  strcpy(name_buf, "XXXXX");
  /* A setter that is a Function object is retained by the registry. */
  TVMFFIObjectHandle setter_fn = NULL;
  TVMFFIFunctionCreate(NULL, NULL, NULL, &setter_fn);
  TVMFFIFieldInfo field3 = field;
  field3.name = ba("with_function_setter");
  field3.flags = kTVMFFIFieldFlagBitSetterIsFunctionObj;
  field3.setter = setter_fn;
  report("register field with function setter", TVMFFITypeRegisterField(children[0], &field3));
  printf("setter refcount=%u\n", strong_count(setter_fn));
  TVMFFIObjectDecRef(setter_fn);
  report("register field on unknown type", TVMFFITypeRegisterField(100, &field3));
  report("register method on unknown type", TVMFFITypeRegisterMethod(-1, NULL));
  TVMFFIFieldInfo field2 = field;
  field2.name = ba("flag");
  field2.doc = ba("");
  field2.metadata = ba("");
  field2.flags = 0;
  field2.default_value_or_factory.type_index = kTVMFFIFloat;
  field2.default_value_or_factory.v_float64 = 1.5;
  field2.field_static_type_index = kTVMFFIBool;
  report("register second field", TVMFFITypeRegisterField(base, &field2));
  report("register duplicate field", TVMFFITypeRegisterField(base, &field2));
  const TVMFFITypeInfo* bi = TVMFFIGetTypeInfo(base);
  printf("fields=%d\n", bi->num_fields);
  for (int i = 0; i < bi->num_fields; ++i) {
    const TVMFFIFieldInfo* f = &bi->fields[i];
    printf("field %d name=", i);
    print_bytes(f->name.data, f->name.size);
    printf(" doc=");
    print_bytes(f->doc.data ? f->doc.data : "", f->doc.size);
    printf(" doc_null=%d metadata=", f->doc.data == NULL);
    print_bytes(f->metadata.data ? f->metadata.data : "", f->metadata.size);
    printf(" flags=%lld size=%lld align=%lld offset=%lld getter=%d static_type=%d",
           (long long)f->flags, (long long)f->size, (long long)f->alignment, (long long)f->offset,
           f->getter == getter, f->field_static_type_index);
    print_any(" default", &f->default_value_or_factory);
  }
  TVMFFIObjectHandle fn = NULL;
  TVMFFIFunctionCreate(NULL, NULL, NULL, &fn);
  TVMFFIMethodInfo method;
  memset(&method, 0, sizeof(method));
  method.name = ba("do_it");
  method.doc = ba("does it");
  method.metadata = ba("{\"m\":1}");
  method.flags = kTVMFFIFieldFlagBitMaskIsStaticMethod;
  method.method.type_index = kTVMFFIFunction;
  method.method.v_obj = fn;
  report("register method", TVMFFITypeRegisterMethod(base, &method));
  printf("function refcount after method registration=%u\n", strong_count(fn));
  report("register same method again", TVMFFITypeRegisterMethod(base, &method));
  bi = TVMFFIGetTypeInfo(base);
  printf("methods=%d\n", bi->num_methods);
  for (int i = 0; i < bi->num_methods; ++i) {
    const TVMFFIMethodInfo* mi = &bi->methods[i];
    printf("method %d name=", i);
    print_bytes(mi->name.data, mi->name.size);
    printf(" doc=");
    print_bytes(mi->doc.data, mi->doc.size);
    printf(" metadata=");
    print_bytes(mi->metadata.data, mi->metadata.size);
    printf(" flags=%lld is_fn=%d", (long long)mi->flags, mi->method.v_obj == fn);
    print_any("", &mi->method);
  }
  TVMFFITypeMetadata meta;
  memset(&meta, 0, sizeof(meta));
  meta.doc = ba("The base type.");
  meta.creator = creator;
  meta.total_size = 48;
  meta.structural_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  report("register metadata", TVMFFITypeRegisterMetadata(base, &meta));
  report("register metadata again", TVMFFITypeRegisterMetadata(base, &meta));
  print_info_rel(base, base);
  print_info(kTVMFFIObject);

  TVMFFIByteArray attr = ba("safecall.test.attr");
  printf("missing column null=%d\n", TVMFFIGetTypeAttrColumn(&attr) == NULL);
  TVMFFIAny value;
  memset(&value, 0, sizeof(value));
  report("ensure column", TVMFFITypeRegisterAttr(kTVMFFINone, &attr, &value));
  const TVMFFITypeAttrColumn* column = TVMFFIGetTypeAttrColumn(&attr);
  printf("column exists=%d size=%d begin=%d\n", column != NULL, column->size, column->begin_index);
  value.type_index = kTVMFFIInt;
  value.v_int64 = 11;
  report("attr for base", TVMFFITypeRegisterAttr(base, &attr, &value));
  value.v_int64 = 12;
  report("attr for String", TVMFFITypeRegisterAttr(kTVMFFIStr, &attr, &value));
  report("attr again for String", TVMFFITypeRegisterAttr(kTVMFFIStr, &attr, &value));
  TVMFFIAny str_value;
  TVMFFIByteArray long_text = ba("an attribute string object");
  TVMFFIStringFromByteArray(&long_text, &str_value);
  report("attr string for Function", TVMFFITypeRegisterAttr(kTVMFFIFunction, &attr, &str_value));
  printf("string refcount after attr registration=%u\n", strong_count(str_value.v_obj));
  release_any(&str_value);
  column = TVMFFIGetTypeAttrColumn(&attr);
  printf("column size is base+1=%d begin=%d same_as_before=%d\n", column->size == base + 1,
         column->begin_index,
         column == TVMFFIGetTypeAttrColumn(&attr));
  print_any("column[base]", &column->data[base - column->begin_index]);
  print_any("column[String]", &column->data[kTVMFFIStr - column->begin_index]);
  print_any("column[Function]", &column->data[kTVMFFIFunction - column->begin_index]);
  print_any("column[Bytes]", &column->data[kTVMFFIBytes - column->begin_index]);
  print_any("column[0]", &column->data[0]);
  TVMFFIByteArray attr2 = ba("safecall.test.attr2");
  value.v_int64 = 5;
  report("attr2 for Object", TVMFFITypeRegisterAttr(kTVMFFIObject, &attr2, &value));
  const TVMFFITypeAttrColumn* column2 = TVMFFIGetTypeAttrColumn(&attr2);
  printf("column2 size=%d begin=%d\n", column2->size, column2->begin_index);
  print_any("column2[Object]", &column2->data[kTVMFFIObject]);
  TVMFFIObjectDecRef(fn);

  /* The array constructor that generated code calls to return several values. */
  TVMFFIByteArray array_name = ba("ffi.Array");
  TVMFFIObjectHandle array_fn = NULL;
  report("get ffi.Array", TVMFFIFunctionGetGlobal(&array_name, &array_fn));
  TVMFFIAny items[2], array;
  items[0].type_index = kTVMFFIInt;
  items[0].zero_padding = 0;
  items[0].v_int64 = 7;
  TVMFFIByteArray item_text = ba("a string object long enough");
  TVMFFIStringFromByteArray(&item_text, &items[1]);
  array.type_index = kTVMFFINone;
  array.zero_padding = 0;
  array.v_int64 = 0;
  report("call ffi.Array", TVMFFIFunctionCall(array_fn, items, 2, &array));
  printf("array type index=%d string refcount=%u\n", array.type_index,
         strong_count(items[1].v_obj));
  {
    const TVMFFISeqCell* cell = (const TVMFFISeqCell*)((const char*)array.v_obj + sizeof(TVMFFIObject));
    printf("array size=%lld\n", (long long)cell->size);
    print_any("array[0]", (const TVMFFIAny*)cell->data);
    print_any("array[1]", (const TVMFFIAny*)cell->data + 1);
  }
  release_any(&array);
  printf("string refcount after the array=%u\n", strong_count(items[1].v_obj));
  release_any(&items[1]);
  TVMFFIObjectDecRef(array_fn);
  return 0;
}
