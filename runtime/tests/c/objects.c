/* Objects: reference counting, the deleter-flag protocol, opaque objects, version, allocator. */
#include "common.h"

static int deleter_calls[8];
static int num_deleter_calls;

static void recording_deleter(void* self, int flags) {
  (void)self;
  deleter_calls[num_deleter_calls++] = flags;
}

static int opaque_deleted;
static void opaque_deleter(void* handle) { opaque_deleted += *(int*)handle; }

static void print_calls(const char* what) {
  printf("%s: calls=%d [", what, num_deleter_calls);
  for (int i = 0; i < num_deleter_calls; ++i) printf("%s%d", i ? "," : "", deleter_calls[i]);
  printf("]\n");
  num_deleter_calls = 0;
}

int main(void) {
  TVMFFIVersion version;
  TVMFFIGetVersion(&version);
  printf("version %u.%u.%u\n", version.major, version.minor, version.patch);

  /* A foreign object with our own deleter: strong and weak both one -> one call with flags 3. */
  TVMFFIObject obj;
  memset(&obj, 0, sizeof(obj));
  obj.combined_ref_count = ((uint64_t)1 << 32) | 1;
  obj.type_index = kTVMFFIObject;
  obj.deleter = recording_deleter;
  report("incref", TVMFFIObjectIncRef(&obj));
  report("incref", TVMFFIObjectIncRef(&obj));
  printf("strong=%u weak=%u\n", strong_count(&obj), weak_count(&obj));
  report("decref", TVMFFIObjectDecRef(&obj));
  report("decref", TVMFFIObjectDecRef(&obj));
  print_calls("after two decrefs");
  report("decref", TVMFFIObjectDecRef(&obj));
  print_calls("last decref");
  printf("count after=%llu\n", (unsigned long long)obj.combined_ref_count);

  /* A weak reference outstanding: strong zero -> flags 1, weak stays; later weak zero -> 2. */
  obj.combined_ref_count = ((uint64_t)2 << 32) | 1;
  report("decref with weak", TVMFFIObjectDecRef(&obj));
  print_calls("strong reached zero");
  printf("strong=%u weak=%u\n", strong_count(&obj), weak_count(&obj));

  /* Strong 2, weak 1: first decref does nothing. */
  obj.combined_ref_count = ((uint64_t)1 << 32) | 2;
  report("decref", TVMFFIObjectDecRef(&obj));
  print_calls("strong 2 -> 1");
  report("decref", TVMFFIObjectDecRef(&obj));
  print_calls("strong 1 -> 0");

  /* No deleter at all is fine. */
  obj.deleter = NULL;
  obj.combined_ref_count = ((uint64_t)1 << 32) | 1;
  report("decref without deleter", TVMFFIObjectDecRef(&obj));
  printf("count after=%llu\n", (unsigned long long)obj.combined_ref_count);

  /* DecRef of NULL is a no-op. */
  report("decref NULL", TVMFFIObjectDecRef(NULL));

  /* Opaque objects. */
  static int value = 5;
  TVMFFIObjectHandle opaque = NULL;
  report("create opaque py", TVMFFIObjectCreateOpaque(&value, kTVMFFIOpaquePyObject, opaque_deleter, &opaque));
  printf("opaque type_index=%d strong=%u weak=%u handle_ok=%d\n", HDR(opaque)->type_index,
         strong_count(opaque), weak_count(opaque),
         CELL(opaque, TVMFFIOpaqueObjectCell)->handle == &value);
  TVMFFIObjectIncRef(opaque);
  TVMFFIObjectDecRef(opaque);
  printf("opaque deleted before last decref: %d\n", opaque_deleted);
  TVMFFIObjectDecRef(opaque);
  printf("opaque deleted after last decref: %d\n", opaque_deleted);
  TVMFFIObjectHandle opaque2 = NULL;
  report("create opaque wrong index", TVMFFIObjectCreateOpaque(&value, 200, opaque_deleter, &opaque2));
  printf("out untouched=%d\n", opaque2 == NULL);
  report("create opaque null deleter", TVMFFIObjectCreateOpaque(NULL, kTVMFFIOpaquePyObject, NULL, &opaque2));
  TVMFFIObjectDecRef(opaque2);

  /* The custom allocator registry. */
  TVMFFICustomAllocator* builtin = TVMFFIGetCustomAllocator();
  printf("builtin allocator non-null=%d allocate non-null=%d context=%p\n", builtin != NULL,
         builtin->allocate != NULL, builtin->context);
  void* body = builtin->allocate(40, 8, kTVMFFIObject, NULL);
  TVMFFIObjectAllocHeader* alloc_header = (TVMFFIObjectAllocHeader*)((char*)body - sizeof(TVMFFIObjectAllocHeader));
  printf("allocated aligned=%d delete_space set=%d\n", ((uintptr_t)body % 8) == 0,
         alloc_header->delete_space != NULL);
  memset(body, 0xab, 40);
  alloc_header->delete_space(body);
  TVMFFICustomAllocator mine = {builtin->allocate, (void*)0x1234};
  report("set allocator", TVMFFISetCustomAllocator(&mine));
  printf("current is mine=%d\n", TVMFFIGetCustomAllocator() == &mine);
  report("reset allocator", TVMFFISetCustomAllocator(NULL));
  printf("current is builtin again=%d\n", TVMFFIGetCustomAllocator() == builtin);
  return 0;
}
