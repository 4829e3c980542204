/* Module lookups from generated-code's point of view: a system library whose
 * `__tvm_ffi__library_ctx` the loader fills with the module handle, then
 * TVMFFIEnvModLookupFromImports with that handle (its imports, then global functions). */
#include "common.h"

static void* library_ctx = NULL;

static int twice(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "twice takes one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 * 2;
  return 0;
}

static int call_int(TVMFFIObjectHandle f, int64_t x, TVMFFIAny* out) {
  TVMFFIAny arg;
  memset(&arg, 0, sizeof(arg));
  arg.type_index = kTVMFFIInt;
  arg.v_int64 = x;
  memset(out, 0, sizeof(*out));
  return TVMFFIFunctionCall(f, &arg, 1, out);
}

static void lookup(const char* name) {
  TVMFFIObjectHandle f = (TVMFFIObjectHandle)0x1;
  int ret = TVMFFIEnvModLookupFromImports(library_ctx, name, &f);
  printf("lookup %s -> %d\n", name, ret);
  if (ret != 0) {
    print_raised(name);
    return;
  }
  printf("  function type_index=%d\n", f == NULL ? -1 : HDR(f)->type_index);
  TVMFFIAny out;
  int r = call_int(f, 21, &out);
  printf("  call(21) -> %d type_index=%d value=%lld\n", r, out.type_index,
         (long long)out.v_int64);
  if (r != 0) print_raised("call");
  /* The module owns the looked-up function: a second lookup gives the same one. */
  TVMFFIObjectHandle again = NULL;
  report("  lookup again", TVMFFIEnvModLookupFromImports(library_ctx, name, &again));
  printf("  same function=%d\n", again == f);
}

int main(void) {
  report("register library ctx", TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi__library_ctx", &library_ctx));
  report("register twice", TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_diffmod.twice", (void*)twice));

  TVMFFIObjectHandle global_twice = NULL;
  report("create global", TVMFFIFunctionCreate(NULL, twice, NULL, &global_twice));
  TVMFFIByteArray gname = ba("safecall_conformance.global_twice");
  report("set global", TVMFFIFunctionSetGlobal(&gname, global_twice, 0));
  TVMFFIObjectDecRef(global_twice);

  TVMFFIByteArray sl = ba("ffi.SystemLib");
  TVMFFIObjectHandle system_lib = NULL;
  report("get ffi.SystemLib", TVMFFIFunctionGetGlobal(&sl, &system_lib));
  if (system_lib == NULL) return 1;
  TVMFFIAny prefix;
  memset(&prefix, 0, sizeof(prefix));
  prefix.type_index = kTVMFFIRawStr;
  prefix.v_c_str = "diffmod.";
  TVMFFIAny module;
  memset(&module, 0, sizeof(module));
  report("ffi.SystemLib(\"diffmod.\")", TVMFFIFunctionCall(system_lib, &prefix, 1, &module));
  printf("module type_index=%d\n", module.type_index);
  /* The real runtime stores its own module object there (not the one returned). */
  printf("library ctx set=%d\n", library_ctx != NULL);

  lookup("safecall_conformance.global_twice");
  lookup("safecall_conformance.missing");

  if (module.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(module.v_obj);
  TVMFFIObjectDecRef(system_lib);
  return 0;
}
