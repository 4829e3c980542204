/* Functions: creation, calls, errors through calls, the global registry, init-once handles. */
#include <pthread.h>

#include "common.h"

static int deleted_self;
static void self_deleter(void* self) { deleted_self += *(int*)self; }

static void* seen_handle;

/* Returns the sum of its int arguments; raises on a non-int argument. */
static int sum_ints(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  seen_handle = handle;
  int64_t total = 0;
  for (int i = 0; i < num_args; ++i) {
    if (args[i].type_index != kTVMFFIInt) {
      TVMFFIErrorSetRaisedFromCStr("TypeError", "sum_ints expects ints");
      return -1;
    }
    total += args[i].v_int64;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = total;
  return 0;
}

/* Returns a string made by the runtime. */
static int make_string(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  TVMFFIByteArray text = ba("returned through a function call");
  return TVMFFIStringFromByteArray(&text, result);
}

/* Returns -1 with no error set (a broken callee). */
static int broken(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  return -1;
}

/* Calls the function passed as its first argument with the rest of the arguments. */
static int call_first(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  return TVMFFIFunctionCall(args[0].v_obj, (TVMFFIAny*)(args + 1), num_args - 1, result);
}

static TVMFFIObjectHandle create(void* self, TVMFFISafeCallType f, void (*deleter)(void*)) {
  TVMFFIObjectHandle out = NULL;
  int ret = TVMFFIFunctionCreate(self, f, deleter, &out);
  if (ret != 0) print_raised("create");
  return out;
}

static void call_ints(const char* what, TVMFFIObjectHandle f, int n, ...) {
  TVMFFIAny args[8];
  __builtin_va_list ap;
  __builtin_va_start(ap, n);
  for (int i = 0; i < n; ++i) {
    args[i].type_index = kTVMFFIInt;
    args[i].zero_padding = 0;
    args[i].v_int64 = __builtin_va_arg(ap, int);
  }
  __builtin_va_end(ap);
  TVMFFIAny result;
  memset(&result, 0, sizeof(result));
  int ret = TVMFFIFunctionCall(f, args, n, &result);
  printf("%s -> %d\n", what, ret);
  if (ret == 0) print_any(what, &result);
  else print_raised(what);
  release_any(&result);
}

static int init_calls;
static int fail_init_calls;
static int deinit_calls;
static void* handles[8];
static pthread_mutex_t counter_mutex = PTHREAD_MUTEX_INITIALIZER;

static int slow_init(void** result) {
  pthread_mutex_lock(&counter_mutex);
  init_calls++;
  pthread_mutex_unlock(&counter_mutex);
  for (volatile int i = 0; i < 1000000; ++i) {
  }
  *result = (void*)0x1234;
  return 0;
}

static int failing_init(void** result) {
  (void)result;
  fail_init_calls++;
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", "init failed");
  return -2;
}

static int null_init(void** result) {
  *result = NULL;
  return 0;
}

static int count_deinit(void* handle) {
  deinit_calls++;
  return handle == (void*)0x1234 ? 0 : 7;
}

static void* shared_handle;
static void* race(void* arg) {
  int idx = (int)(intptr_t)arg;
  int ret = TVMFFIHandleInitOnce(&shared_handle, slow_init);
  handles[idx] = ret == 0 ? shared_handle : NULL;
  return NULL;
}

int main(void) {
  static int self_value = 3;
  TVMFFIObjectHandle f = create(&self_value, sum_ints, self_deleter);
  printf("function type_index=%d strong=%u weak=%u safe_call_set=%d cpp_call_null=%d\n",
         HDR(f)->type_index, strong_count(f), weak_count(f),
         CELL(f, TVMFFIFunctionCell)->safe_call != NULL,
         CELL(f, TVMFFIFunctionCell)->cpp_call == NULL);
  call_ints("sum()", f, 0);
  printf("handle is self=%d\n", seen_handle == &self_value);
  call_ints("sum(1,2,3)", f, 3, 1, 2, 3);
  TVMFFIAny bad = {kTVMFFIFloat, {0}, {0}};
  TVMFFIAny result;
  memset(&result, 0, sizeof(result));
  int ret = TVMFFIFunctionCall(f, &bad, 1, &result);
  printf("sum(float) -> %d result_type=%d\n", ret, result.type_index);
  print_raised("sum(float)");

  /* The cell's safe_call is called with the function object as handle. */
  memset(&result, 0, sizeof(result));
  TVMFFIAny one = {kTVMFFIInt, {0}, {1}};
  ret = CELL(f, TVMFFIFunctionCell)->safe_call(f, &one, 1, &result);
  printf("direct cell call -> %d value=%lld handle is self=%d\n", ret, (long long)result.v_int64,
         seen_handle == &self_value);

  /* Without self and deleter the safe call itself is stored and receives the object. */
  TVMFFIObjectHandle bare = create(NULL, sum_ints, NULL);
  call_ints("bare(5)", bare, 1, 5);
  printf("bare handle is function object=%d cell is sum_ints=%d\n", seen_handle == bare,
         CELL(bare, TVMFFIFunctionCell)->safe_call == sum_ints);
  TVMFFIObjectDecRef(bare);
  /* Self without deleter and deleter without self. */
  TVMFFIObjectHandle self_only = create(&self_value, sum_ints, NULL);
  call_ints("self_only(1)", self_only, 1, 1);
  printf("self_only handle is self=%d\n", seen_handle == &self_value);
  TVMFFIObjectDecRef(self_only);

  TVMFFIObjectHandle strf = create(NULL, make_string, NULL);
  call_ints("make_string()", strf, 0);

  TVMFFIObjectHandle brokenf = create(NULL, broken, NULL);
  call_ints("broken()", brokenf, 0);

  /* Calls through calls; an error raised deep inside comes out unchanged. */
  TVMFFIObjectHandle outer = create(NULL, call_first, NULL);
  TVMFFIAny nested[3];
  nested[0].type_index = kTVMFFIFunction;
  nested[0].zero_padding = 0;
  nested[0].v_obj = f;
  nested[1].type_index = kTVMFFIInt;
  nested[1].zero_padding = 0;
  nested[1].v_int64 = 40;
  nested[2].type_index = kTVMFFIInt;
  nested[2].zero_padding = 0;
  nested[2].v_int64 = 2;
  memset(&result, 0, sizeof(result));
  printf("nested -> %d\n", TVMFFIFunctionCall(outer, nested, 3, &result));
  print_any("nested", &result);
  nested[2].type_index = kTVMFFINone;
  printf("nested error -> %d\n", TVMFFIFunctionCall(outer, nested, 3, &result));
  print_raised("nested error");

  /* The global registry. */
  TVMFFIByteArray name = ba("safecall.test.sum");
  TVMFFIObjectHandle got = (void*)1;
  report("get missing", TVMFFIFunctionGetGlobal(&name, &got));
  printf("missing is null=%d\n", got == NULL);
  report("set", TVMFFIFunctionSetGlobal(&name, f, 0));
  printf("refcount after set=%u\n", strong_count(f));
  report("get", TVMFFIFunctionGetGlobal(&name, &got));
  printf("got same=%d refcount=%u\n", got == f, strong_count(f));
  call_ints("global sum(10,20)", got, 2, 10, 20);
  TVMFFIObjectDecRef(got);
  report("set again without override", TVMFFIFunctionSetGlobal(&name, strf, 0));
  report("get after failed set", TVMFFIFunctionGetGlobal(&name, &got));
  printf("still sum=%d\n", got == f);
  TVMFFIObjectDecRef(got);
  report("set again with override", TVMFFIFunctionSetGlobal(&name, strf, 1));
  report("get after override", TVMFFIFunctionGetGlobal(&name, &got));
  printf("now make_string=%d refcount of sum=%u\n", got == strf, strong_count(f));
  TVMFFIObjectDecRef(got);
  TVMFFIByteArray empty_name = ba("");
  report("set empty name", TVMFFIFunctionSetGlobal(&empty_name, f, 0));
  report("get empty name", TVMFFIFunctionGetGlobal(&empty_name, &got));
  printf("empty name is sum=%d\n", got == f);
  TVMFFIObjectDecRef(got);
  TVMFFIByteArray nul_name = {"safecall.test\0nul", 17};
  report("set name with NUL", TVMFFIFunctionSetGlobal(&nul_name, f, 0));
  TVMFFIByteArray prefix_name = ba("safecall.test");
  report("get name prefix", TVMFFIFunctionGetGlobal(&prefix_name, &got));
  printf("prefix finds nothing=%d\n", got == NULL);
  report("get name with NUL", TVMFFIFunctionGetGlobal(&nul_name, &got));
  printf("NUL name finds sum=%d\n", got == f);
  TVMFFIObjectDecRef(got);

  TVMFFIMethodInfo info;
  memset(&info, 0, sizeof(info));
  info.name = ba("safecall.test.method");
  info.doc = ba("adds ints");
  info.metadata = ba("{\"x\": 1}");
  info.flags = 0;
  info.method.type_index = kTVMFFIFunction;
  info.method.v_obj = f;
  report("set from method info", TVMFFIFunctionSetGlobalFromMethodInfo(&info, 0));
  report("get method", TVMFFIFunctionGetGlobal(&info.name, &got));
  printf("method is sum=%d\n", got == f);
  TVMFFIObjectDecRef(got);
  report("set from method info again", TVMFFIFunctionSetGlobalFromMethodInfo(&info, 0));
  report("set from method info override", TVMFFIFunctionSetGlobalFromMethodInfo(&info, 1));
  info.name = ba("safecall.test.not_a_function");
  info.method.type_index = kTVMFFIInt;
  info.method.v_int64 = 3;
  report("set from method info with int", TVMFFIFunctionSetGlobalFromMethodInfo(&info, 0));
  report("get after failed method info", TVMFFIFunctionGetGlobal(&info.name, &got));
  printf("not registered=%d\n", got == NULL);
  info.method.type_index = kTVMFFIStr;
  TVMFFIAny s;
  TVMFFIByteArray long_text = ba("not a function either");
  TVMFFIStringFromByteArray(&long_text, &s);
  info.method.v_obj = s.v_obj;
  report("set from method info with str", TVMFFIFunctionSetGlobalFromMethodInfo(&info, 0));
  release_any(&s);

  /* A None method registers nothing callable. */
  info.name = ba("safecall.test.none_method");
  memset(&info.method, 0, sizeof(info.method));
  report("set from method info with None", TVMFFIFunctionSetGlobalFromMethodInfo(&info, 0));
  got = (void*)1;
  report("get None method", TVMFFIFunctionGetGlobal(&info.name, &got));
  printf("None method gives null=%d\n", got == NULL);

  /* Arguments and results pass through calls unchanged. */
  TVMFFIObjectHandle echo = create(NULL, call_first, NULL);
  (void)echo;
  TVMFFIObjectDecRef(echo);

  /* The deleter runs once, when the last reference goes (the registry keeps one). */
  TVMFFIObjectHandle temp = create(&self_value, sum_ints, self_deleter);
  TVMFFIObjectIncRef(temp);
  TVMFFIObjectDecRef(temp);
  printf("deleted before last decref=%d\n", deleted_self);
  TVMFFIObjectDecRef(temp);
  printf("deleted after last decref=%d\n", deleted_self);

  TVMFFIObjectDecRef(outer);
  TVMFFIObjectDecRef(brokenf);
  TVMFFIObjectDecRef(strf);
  TVMFFIObjectDecRef(f);

  /* Init once. */
  pthread_t threads[8];
  for (int i = 0; i < 8; ++i) pthread_create(&threads[i], NULL, race, (void*)(intptr_t)i);
  for (int i = 0; i < 8; ++i) pthread_join(threads[i], NULL);
  int all_same = 1;
  for (int i = 0; i < 8; ++i) all_same &= handles[i] == (void*)0x1234;
  printf("init calls=%d all threads see the handle=%d\n", init_calls, all_same);
  report("init again", TVMFFIHandleInitOnce(&shared_handle, slow_init));
  printf("init calls=%d\n", init_calls);
  void* failing = NULL;
  report("failing init", TVMFFIHandleInitOnce(&failing, failing_init));
  printf("handle still empty=%d\n", failing == NULL);
  report("failing init again", TVMFFIHandleInitOnce(&failing, failing_init));
  printf("failing init calls=%d\n", fail_init_calls);
  void* nulled = NULL;
  report("null init", TVMFFIHandleInitOnce(&nulled, null_init));
  report("deinit", TVMFFIHandleDeinitOnce(&shared_handle, count_deinit));
  printf("handle cleared=%d deinit calls=%d\n", shared_handle == NULL, deinit_calls);
  report("deinit again", TVMFFIHandleDeinitOnce(&shared_handle, count_deinit));
  printf("deinit calls=%d\n", deinit_calls);
  void* other = (void*)0x99;
  report("deinit returning 7", TVMFFIHandleDeinitOnce(&other, count_deinit));
  printf("cleared=%d\n", other == NULL);
  return 0;
}
